//! On a GPU: kwb's PTX emulator and the GPU agree on every shipped CUDA kernel, at a GPU size
//! and at the CPU size, on the same seeded inputs. Kernels whose PTX is exact (integer, fp
//! add/mul/fma with the same rounding: the elementwise adds) must match bit for bit (tolerance
//! zero); kernels with approximate instructions (`ex2.approx` in softmax's exp, `ex2.approx` and
//! `rcp.approx` inside libdevice's `tanhf` in GELU), which the emulator computes exactly, must
//! match within a bound derived from their documented error. Ignored without
//! `--include-ignored` (it needs a GPU).

mod support;

use kwb::compile::CompiledVersion;
use kwb::run::cpu::CpuCode;
use support::differential::{cpu_vs_gpu, shipped, Case};

fn emulated(c: &CompiledVersion) -> CpuCode {
    CpuCode::Ptx(std::sync::Arc::new(
        kwb::emu::Module::parse(&c.ptx).expect("the emulator reads the shipped PTX"),
    ))
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn emulator_and_gpu_agree_on_every_shipped_kernel() {
    let Some(gpu) =
        kwb::run::gpu::open::gpu_or_skip("emulator_and_gpu_agree_on_every_shipped_kernel")
    else {
        return;
    };
    support::provision_nvrtc();
    let arch = gpu.arch().unwrap().expect("a known arch");
    let dir = tempfile::tempdir().unwrap();
    // (workspace, CUDA versions, sizes, tolerance): None = bit-exact.
    let exact = Some((0.0, 0.0));
    // ex2.approx (2^-22 relative) and rcp.approx (2^-23): a few ulp of f32 in the result.
    let approx = Some((2e-6, 1e-9));
    // GELU computes 0.5·x·(1 + tanh(u)): where tanh(u) is near -1 the sum cancels, so tanhf's
    // absolute error (a few ulp of 1.0: ex2.approx's 2 ulp, rcp.approx's 1, one rounding, so
    // at most 4·2^-24 ≈ 2.4e-7) passes through unscaled and is multiplied by 0.5·|x| (|x| < 6
    // for these normal draws): an absolute bound of 3 · 2.4e-7 ≈ 7.2e-7, with room, 1.5e-6.
    let gelu_approx = Some((2e-6, 1.5e-6));
    type Row<'a> = (&'a str, &'a [&'a str], [&'a str; 2], Option<(f64, f64)>);
    let cases: [Row; 3] = [
        (
            "elementwise-add.yaml",
            &["v1", "v2", "v3", "v4", "v5", "v6", "v7"],
            ["1Mi", "odd"],
            exact,
        ),
        (
            "gelu.yaml",
            &["v1", "v2", "v3"],
            ["1Mi", "odd"],
            gelu_approx,
        ),
        (
            "softmax.yaml",
            &["v1", "v2", "v3", "v4", "v7"],
            ["4096x1024", "odd"],
            approx,
        ),
    ];
    let (mut n, mut bit_exact, mut within) = (0, 0, 0);
    let mut failures = Vec::new();
    for (ws, versions, sizes, tolerance) in cases {
        let yaml = shipped(ws);
        for v in versions {
            for size in sizes {
                n += 1;
                let case = Case {
                    yaml: &yaml,
                    version: v,
                    size,
                    seed: 40 + n,
                    code: emulated,
                    tolerance,
                };
                match cpu_vs_gpu(dir.path(), arch, &case) {
                    Ok(()) if tolerance == exact => bit_exact += 1,
                    Ok(()) => within += 1,
                    Err(e) => failures.push(format!("{ws} {v} @ {size}: {e}")),
                }
            }
        }
    }
    println!(
        "emu-vs-gpu: {n} kernel runs, {} match ({bit_exact} bit-exact, {within} within approx bounds)",
        bit_exact + within
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
