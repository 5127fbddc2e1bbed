//! Compares what ptxas said in its `-v` log with what it wrote into the CUBIN. The two should
//! always agree; a disagreement means one of kwb's readers has drifted from the toolchain
//! (new log wording, new `.nv.info` layout, a reserved shared-memory rule we got wrong), and
//! kwb would rather say so than show a wrong occupancy figure.

use super::cubin::CubinKernel;
use super::ptxas_log::PtxasKernel;
use serde::Serialize;
use std::collections::HashSet;
use std::fmt;

/// One fact on which the log and the CUBIN disagree. For `field == "presence"` the values are
/// 1 where the kernel was found and 0 where it was not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub kernel: String,
    pub field: &'static str,
    pub log_value: u32,
    pub cubin_value: u32,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field == "presence" {
            let (found, missing) = match self.log_value {
                0 => ("CUBIN", "ptxas log"),
                _ => ("ptxas log", "CUBIN"),
            };
            return write!(
                f,
                "kernel `{}` is in the {found} but not in the {missing}",
                self.kernel
            );
        }
        write!(
            f,
            "kernel `{}`: {} is {} in the ptxas log but {} in the CUBIN",
            self.kernel, self.field, self.log_value, self.cubin_value
        )
    }
}

/// Checks registers, barriers, static shared memory and stack frame of every kernel present in
/// both, and reports kernels present in only one. Log order first, then CUBIN-only kernels.
pub fn cross_check(log: &[PtxasKernel], cubin: &[CubinKernel]) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for entry in log {
        if !seen.insert(entry.name.as_str()) {
            continue;
        }
        let Some(bin) = cubin.iter().find(|c| c.name == entry.name) else {
            out.push(presence(&entry.name, 1, 0));
            continue;
        };
        // A log may cover several targets; prefer the entry built for the CUBIN's SM.
        let same_name: Vec<&PtxasKernel> = log.iter().filter(|k| k.name == entry.name).collect();
        let for_sm = same_name
            .iter()
            .find(|k| bin.sm.is_some() && sm_of(k) == bin.sm);
        let entry = for_sm.or(same_name.last()).copied().unwrap_or(entry);
        let pairs = [
            ("registers", entry.registers, bin.registers),
            ("barriers", entry.barriers, bin.barriers),
            ("static_shared", entry.shared_bytes, bin.static_shared),
            ("stack_frame", entry.stack_frame, bin.frame_size),
        ];
        for (field, log_value, cubin_value) in pairs {
            if log_value != cubin_value {
                out.push(Mismatch {
                    kernel: entry.name.clone(),
                    field,
                    log_value,
                    cubin_value,
                });
            }
        }
    }
    for bin in cubin {
        // `seen` already holds every name in the log.
        if seen.insert(bin.name.as_str()) {
            out.push(presence(&bin.name, 0, 1));
        }
    }
    out
}

/// `sm_90a` -> 90.
fn sm_of(kernel: &PtxasKernel) -> Option<u32> {
    let digits = kernel.arch.as_deref()?.strip_prefix("sm_")?;
    digits
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

fn presence(kernel: &str, log_value: u32, cubin_value: u32) -> Mismatch {
    Mismatch {
        kernel: kernel.to_string(),
        field: "presence",
        log_value,
        cubin_value,
    }
}

#[cfg(test)]
mod tests {
    use super::super::cubin::read_cubin;
    use super::super::ptxas_log::parse_ptxas_log;
    use super::*;

    const PAIRS: [(&str, &[u8]); 5] = [
        (
            include_str!("../../tests/fixtures/compiler-output/smem_sm_90.log"),
            include_bytes!("../../tests/fixtures/compiler-output/smem_sm_90.cubin"),
        ),
        (
            include_str!("../../tests/fixtures/compiler-output/smem_sm_80.log"),
            include_bytes!("../../tests/fixtures/compiler-output/smem_sm_80.cubin"),
        ),
        (
            include_str!("../../tests/fixtures/compiler-output/stack_sm_90.log"),
            include_bytes!("../../tests/fixtures/compiler-output/stack_sm_90.cubin"),
        ),
        (
            include_str!("../../tests/fixtures/compiler-output/tile_sm_100.log"),
            include_bytes!("../../tests/fixtures/compiler-output/tile_sm_100.cubin"),
        ),
        (
            include_str!("../../tests/fixtures/compiler-output/rdc_sm_90.log"),
            include_bytes!("../../tests/fixtures/compiler-output/rdc_sm_90.cubin"),
        ),
    ];

    #[test]
    fn matching_fixture_pairs_agree() {
        for (log, bin) in PAIRS {
            let (log, bin) = (parse_ptxas_log(log), read_cubin(bin).unwrap());
            assert!(!log.is_empty() && log.len() == bin.len());
            assert_eq!(cross_check(&log, &bin), [], "{log:#?}\n{bin:#?}");
        }
    }

    #[test]
    fn reports_differences_and_presence() {
        let mut log = parse_ptxas_log(PAIRS[0].0);
        let bin = read_cubin(PAIRS[0].1).unwrap();
        log.retain(|k| k.name != "add_f32");
        let tile = log.iter_mut().find(|k| k.name == "tile_sum").unwrap();
        tile.shared_bytes = 2080; // what the raw section size would give on sm_90
        log.push(PtxasKernel {
            name: "ghost".into(),
            ..PtxasKernel::default()
        });
        let found = cross_check(&log, &bin);
        let shared = Mismatch {
            kernel: "tile_sum".into(),
            field: "static_shared",
            log_value: 2080,
            cubin_value: 1056,
        };
        assert_eq!(
            found,
            [shared, presence("ghost", 1, 0), presence("add_f32", 0, 1)]
        );
        assert_eq!(
            found[0].to_string(),
            "kernel `tile_sum`: static_shared is 2080 in the ptxas log but 1056 in the CUBIN"
        );
        assert_eq!(
            found[1].to_string(),
            "kernel `ghost` is in the ptxas log but not in the CUBIN"
        );
        assert_eq!(
            found[2].to_string(),
            "kernel `add_f32` is in the CUBIN but not in the ptxas log"
        );
    }

    #[test]
    fn picks_the_log_entry_for_the_cubin_arch() {
        let bin = read_cubin(PAIRS[1].1).unwrap(); // sm_80
        let mut log = parse_ptxas_log(PAIRS[0].0); // sm_90 values first
        log.extend(parse_ptxas_log(PAIRS[1].0));
        assert_eq!(cross_check(&log, &bin), []);
        assert_eq!(cross_check(&[], &[]), []);
    }
}
