//! The GPU a report was measured on, and the peaks kwb derives from it: the bandwidth peak
//! that `% of peak` is taken against, and the compute ceilings (the FP32 and the dense fp16
//! tensor-core peaks) that the Compute panel and the Roofline tab draw.

use serde::{Deserialize, Serialize};

/// The GPU the report was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    /// e.g. `sm_90`.
    pub arch: String,
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
    pub sm_clock_khz: u32,
    pub memory_clock_khz: u32,
    /// From the memory clock and bus width, in GB/s (10⁹ bytes per second).
    pub theoretical_bandwidth_gbps: f64,
    /// A device-to-device copy measured at start-up, in GB/s.
    pub measured_copy_gbps: Option<f64>,
    /// The best of kwb's own streaming kernels (128-bit loads and stores, several in flight
    /// per thread), measured at start-up, in GB/s. Absent from reports of older kwb.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_kernel_gbps: Option<f64>,
    /// As the CUDA driver reports it, e.g. 13000 for 13.0.
    pub driver_version: i32,
    /// How many GPUs the worker's machine shows (`--devices all` opens each). Absent from
    /// reports of older kwb.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visible_gpus: Option<u32>,
}

impl DeviceInfo {
    /// The bandwidth peak that `% of peak` is taken against, with a label saying how it was
    /// obtained: the best of the measured copy and kwb's stream kernel, else the theoretical
    /// figure.
    pub fn peak(&self) -> (Option<f64>, &'static str) {
        let measured = |v: Option<f64>| v.filter(|g| g.is_finite() && *g > 0.0);
        match (
            measured(self.measured_copy_gbps),
            measured(self.stream_kernel_gbps),
        ) {
            (Some(c), Some(k)) if k > c => (Some(k), "kwb stream kernel peak"),
            (Some(c), _) => (Some(c), "measured copy peak"),
            (None, Some(k)) => (Some(k), "kwb stream kernel peak"),
            (None, None) if self.theoretical_bandwidth_gbps > 0.0 => {
                (Some(self.theoretical_bandwidth_gbps), "theoretical peak")
            }
            (None, None) => (None, "no peak"),
        }
    }

    /// A device with every figure 1 (bandwidths, clocks, counts) and no measured peak: for
    /// tests that need a GPU to be present but not its numbers.
    #[cfg(test)]
    pub(crate) fn stand_in(arch: &str) -> DeviceInfo {
        DeviceInfo {
            name: "Some GPU".into(),
            arch: arch.into(),
            sm_count: 1,
            l2_bytes: 1,
            memory_bytes: 1,
            sm_clock_khz: 1,
            memory_clock_khz: 1,
            theoretical_bandwidth_gbps: 1.0,
            measured_copy_gbps: None,
            stream_kernel_gbps: None,
            driver_version: 13000,
            visible_gpus: None,
        }
    }

    /// The dense fp16 tensor-core peak (fp32 accumulation), in TFLOP/s: SMs × the SM clock the
    /// device reports × the FLOPs one SM's tensor cores do per clock on this architecture
    /// (1024 on sm_70/sm_75, 2048 on sm_80, 4096 on sm_90, from NVIDIA's published peaks
    /// and clocks). `None` for architectures not in that list.
    pub fn tensor_peak_tflops(&self) -> Option<f64> {
        let per_clock = match self.arch.as_str() {
            "sm_70" | "sm_72" | "sm_75" => 1024.0,
            "sm_80" => 2048.0,
            "sm_90" | "sm_90a" => 4096.0,
            _ => return None,
        };
        let tflops =
            f64::from(self.sm_count) * f64::from(self.sm_clock_khz) * 1e3 * per_clock / 1e12;
        (tflops > 0.0).then_some(tflops)
    }

    /// The FP32 (CUDA-core, non-tensor) peak, in TFLOP/s: SMs × the SM clock the device
    /// reports × the FP32 lanes of one SM × 2, as one fused multiply-add counts two FLOPs. The
    /// lanes are the "32-bit floating-point add, multiply, multiply-add" results per clock per
    /// multiprocessor of the CUDA C++ Programming Guide's arithmetic-instruction throughput
    /// table: 64 on sm_70, sm_72, sm_75 and sm_80, 128 on sm_86, sm_89 and sm_90. With the
    /// boost clocks this gives NVIDIA's published FP32 peaks: 15.7 TFLOP/s for a V100 SXM2
    /// (80 SMs at 1530 MHz), 19.5 for an A100 (108 at 1410 MHz), 66.9 for an H100 SXM (132 at
    /// 1980 MHz). `None` for architectures not in that list.
    pub fn fp32_peak_tflops(&self) -> Option<f64> {
        let lanes = match self.arch.as_str() {
            "sm_70" | "sm_72" | "sm_75" | "sm_80" => 64.0,
            "sm_86" | "sm_89" | "sm_90" | "sm_90a" => 128.0,
            _ => return None,
        };
        let tflops =
            f64::from(self.sm_count) * f64::from(self.sm_clock_khz) * 1e3 * lanes * 2.0 / 1e12;
        (tflops > 0.0).then_some(tflops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(arch: &str, sm_count: u32, mhz: u32) -> DeviceInfo {
        DeviceInfo {
            sm_count,
            sm_clock_khz: mhz * 1000,
            ..DeviceInfo::stand_in(arch)
        }
    }

    #[test]
    fn the_fp32_peak_is_sms_times_clock_times_lanes_times_two() {
        let peak = |d: DeviceInfo| d.fp32_peak_tflops().unwrap();
        // NVIDIA's published FP32 peaks, from the boost clocks.
        assert!((peak(device("sm_90", 132, 1980)) - 66.9).abs() < 0.05);
        assert!((peak(device("sm_80", 108, 1410)) - 19.5).abs() < 0.05);
        assert!((peak(device("sm_70", 80, 1530)) - 15.7).abs() < 0.05);
        assert!((peak(device("sm_90a", 132, 1980)) - 66.9).abs() < 0.05);
        assert_eq!(device("sm_120", 132, 1980).fp32_peak_tflops(), None);
        assert_eq!(device("sm_90", 0, 1980).fp32_peak_tflops(), None);
        // Below the tensor cores' peak on every architecture that has both.
        let h100 = device("sm_90", 132, 1980);
        assert!(h100.fp32_peak_tflops() < h100.tensor_peak_tflops());
    }
}
