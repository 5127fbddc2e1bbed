//! Reads ptxas' `-v` resource report out of NVRTC's program log, so kwb can show registers,
//! barriers, shared memory, stack and spills per kernel and cross-check them against the
//! CUBIN. The wording drifts between CUDA versions (NVRTC 13.0 prefixes the stack line with
//! `ptxas         .`, older ones indent it; `cmem[N]` and `smem` items come and go), so the
//! parser reads comma-separated "`<number> <unit>`" items and ignores whatever it does not
//! know. It never panics, whatever the input.

use serde::Serialize;
use std::collections::HashMap;

/// One entry function as ptxas reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PtxasKernel {
    pub name: String,
    /// Target as ptxas named it, e.g. `sm_90`.
    pub arch: Option<String>,
    pub registers: u32,
    pub barriers: u32,
    /// Static shared memory ("N bytes smem").
    pub shared_bytes: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Constant banks used: (bank, bytes).
    pub cmem: Vec<(u32, u32)>,
}

/// Stack-frame line values: (frame, spill stores, spill loads).
type Frame = (u32, u32, u32);

/// Which function the next stack-frame line belongs to.
enum Target {
    None,
    Kernel(usize),
    /// A function not (yet) announced as an entry, e.g. a device function.
    Other(String),
}

/// Parses every kernel ptxas reported, in log order. Unknown lines are ignored.
pub fn parse_ptxas_log(log: &str) -> Vec<PtxasKernel> {
    let mut kernels: Vec<PtxasKernel> = Vec::new();
    let mut current: Option<usize> = None;
    let mut target = Target::None;
    let mut pending: HashMap<String, Frame> = HashMap::new();
    for line in log.lines() {
        let body = strip_ptxas_prefix(line);
        if let Some(rest) = body.strip_prefix("Compiling entry function") {
            let mut quoted = rest.split('\'').skip(1).step_by(2);
            let Some(name) = quoted.next().filter(|n| !n.is_empty()) else {
                continue;
            };
            let mut kernel = PtxasKernel {
                name: name.to_string(),
                arch: quoted.next().map(str::to_string),
                ..PtxasKernel::default()
            };
            if let Some(frame) = pending.remove(name) {
                set_frame(&mut kernel, frame);
            }
            current = Some(kernels.len());
            kernels.push(kernel);
        } else if let Some(rest) = body.strip_prefix("Function properties for") {
            let name = rest.trim().trim_matches('\'');
            target = match kernels.iter().rposition(|k| k.name == name) {
                Some(i) => Target::Kernel(i),
                None => Target::Other(name.to_string()),
            };
        } else if body.contains("bytes stack frame") {
            let mut frame = (0, 0, 0);
            for (n, unit) in items(body) {
                match unit {
                    "bytes stack frame" => frame.0 = n,
                    "bytes spill stores" => frame.1 = n,
                    "bytes spill loads" => frame.2 = n,
                    _ => {}
                }
            }
            match std::mem::replace(&mut target, Target::None) {
                Target::Kernel(i) => set_frame(&mut kernels[i], frame),
                Target::Other(name) => drop(pending.insert(name, frame)),
                Target::None => {}
            }
        } else if body.starts_with("Used ") {
            let Some(kernel) = current.and_then(|i| kernels.get_mut(i)) else {
                continue;
            };
            for (n, unit) in items(body) {
                if unit.starts_with("register") {
                    kernel.registers = n;
                } else if unit.starts_with("barrier") {
                    kernel.barriers = n;
                } else if unit == "bytes smem" {
                    kernel.shared_bytes = n;
                } else if let Some(bank) = unit.strip_prefix("bytes cmem[") {
                    if let Some(bank) = bank.strip_suffix(']').and_then(|b| b.parse().ok()) {
                        kernel.cmem.push((bank, n));
                    }
                }
            }
        }
    }
    kernels
}

fn set_frame(kernel: &mut PtxasKernel, (frame, stores, loads): Frame) {
    kernel.stack_frame = frame;
    kernel.spill_stores = stores;
    kernel.spill_loads = loads;
}

/// `ptxas info    : X` and `ptxas         .     X` give `X`; other lines are just trimmed.
fn strip_ptxas_prefix(line: &str) -> &str {
    let line = line.trim();
    let Some(rest) = line.strip_prefix("ptxas") else {
        return line;
    };
    let rest = rest.trim_start();
    let rest = rest
        .strip_prefix("info")
        .map_or(rest, |r| r.trim_start().trim_start_matches(':'));
    rest.trim_start().trim_start_matches('.').trim_start()
}

/// Splits `Used 12 registers, used 1 barriers, 128 bytes smem` into (12, "registers"), ...
fn items(body: &str) -> impl Iterator<Item = (u32, &str)> {
    body.split(',').filter_map(|item| {
        let item = item.trim();
        let item = item
            .strip_prefix("Used ")
            .or_else(|| item.strip_prefix("used "))
            .unwrap_or(item);
        let (number, unit) = item.split_once(' ')?;
        let n: u64 = number.parse().ok()?;
        Some((u32::try_from(n).unwrap_or(u32::MAX), unit.trim()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SM90: &str = include_str!("../../tests/fixtures/compiler-output/smem_sm_90.log");
    const SM80: &str = include_str!("../../tests/fixtures/compiler-output/smem_sm_80.log");
    const STACK: &str = include_str!("../../tests/fixtures/compiler-output/stack_sm_90.log");

    fn find<'a>(ks: &'a [PtxasKernel], name: &str) -> &'a PtxasKernel {
        ks.iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("no kernel {name}"))
    }

    #[test]
    fn parses_nvrtc13_sm90_log() {
        let ks = parse_ptxas_log(SM90);
        let names: Vec<_> = ks.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "_Z5scaleIfLi32EEvPT_S0_",
                "add_f32",
                "named_bar",
                "tile_sum"
            ]
        );
        let tile = find(&ks, "tile_sum");
        assert_eq!(tile.arch.as_deref(), Some("sm_90"));
        assert_eq!(
            (tile.registers, tile.barriers, tile.shared_bytes),
            (13, 1, 1056)
        );
        assert!(tile.cmem.is_empty(), "NVRTC 13 prints no cmem for sm_90");
        let named = find(&ks, "named_bar");
        assert_eq!(
            (named.registers, named.barriers, named.shared_bytes),
            (14, 3, 512)
        );
        assert_eq!(find(&ks, "add_f32").shared_bytes, 0);
    }

    #[test]
    fn parses_cmem_on_sm80() {
        let ks = parse_ptxas_log(SM80);
        assert_eq!(find(&ks, "add_f32").cmem, [(0, 380)]);
        let tile = find(&ks, "tile_sum");
        assert_eq!(
            (tile.registers, tile.shared_bytes, tile.cmem.clone()),
            (11, 1056, vec![(0, 368)])
        );
    }

    #[test]
    fn parses_stack_and_spills() {
        let ks = parse_ptxas_log(STACK);
        let spiller = find(&ks, "spiller");
        assert_eq!((spiller.registers, spiller.stack_frame), (24, 64));
        assert_eq!((spiller.spill_stores, spiller.spill_loads), (136, 160));
        let stacky = find(&ks, "stacky");
        assert_eq!(
            (stacky.stack_frame, stacky.spill_stores, stacky.registers),
            (96, 0, 12)
        );
    }

    #[test]
    fn older_wording_and_device_functions() {
        let log = "ptxas info    : Function properties for helper\n    \
            8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
            ptxas info    : Function properties for k\n    \
            16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n\
            ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0], 8 bytes cmem[2]\n\
            ptxas info    : Function properties for helper\n    \
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Compiling entry function 'helper' for 'sm_80'\n\
            ptxas info    : Used 99999999999 registers\n";
        let ks = parse_ptxas_log(log);
        assert_eq!(ks.len(), 2);
        assert_eq!(
            (ks[0].stack_frame, ks[0].spill_stores, ks[0].spill_loads),
            (16, 4, 8)
        );
        assert_eq!(ks[0].cmem, [(0, 380), (2, 8)]);
        // `helper`'s earlier properties are applied once it turns out to be an entry.
        assert_eq!((ks[1].stack_frame, ks[1].registers), (0, u32::MAX));
        assert_eq!(ks[1].arch.as_deref(), Some("sm_80"));
    }

    #[test]
    fn garbage_never_panics() {
        for junk in [
            "",
            "ptxas",
            "ptxas info",
            "Used",
            "Used , , ,",
            "Compiling entry function '",
            "Function properties for",
            "bytes stack frame",
            "ptxas info : Used 3 registers",
            "\u{1F600} Used 1 registers, 9 bytes cmem[",
            "ptxas \u{e9}info : Compiling entry function",
        ] {
            let _ = parse_ptxas_log(junk);
        }
        assert!(parse_ptxas_log("ptxas info    : Used 4 registers").is_empty());
    }
}
