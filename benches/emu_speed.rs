//! The emulator's speed, as a benchmark rather than a timed test (CI machines are noisy):
//!
//!     cargo bench --bench emu_speed
//!
//! runs elementwise-add v1 at N = 1Mi and softmax v3 at 4096x1024 through the emulator on this
//! machine's cores and prints wall time and lane-instructions per second for each.

#[path = "../tests/support/mod.rs"]
mod support;

use kwb::emu::{run, InitState, Launch, Memory, Module, Options};
use std::time::Instant;

fn ptx(ws: &str, version: &str) -> String {
    let ws = kwb::workspace::load(&support::repo().join(ws)).unwrap();
    let v = ws.versions.iter().find(|v| v.name == version).unwrap();
    let c = support::compiler("sm_90").compile_version(Some(&ws), v);
    assert!(c.ok);
    c.ptx.to_string()
}

fn bench(
    name: &str,
    ptx: &str,
    entry: &str,
    grid: u32,
    block: u32,
    bufs: &[usize],
    scalars: &[u64],
) {
    let module = Module::parse(ptx).unwrap();
    let mut mem = Memory::new();
    let mut params: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, &bytes)| {
            let init = if i + 1 == bufs.len() {
                InitState::Uninitialized
            } else {
                InitState::Initialized
            };
            let data: Vec<u8> = (0..bytes)
                .map(|k| ((k * 7 + i) % 61) as u8 & 0x3f)
                .collect();
            mem.alloc(&format!("b{i}"), &data, init)
        })
        .collect();
    params.extend_from_slice(scalars);
    let params = kwb::emu::ParamValue::words(&params);
    let launch = Launch {
        entry,
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared: 0,
        params: &params,
    };
    let start = Instant::now();
    let report = run(&module, &launch, &mut mem, &Options::default()).unwrap();
    let s = start.elapsed().as_secs_f64();
    println!(
        "emu speed: {name}: {s:.2} s, {:.1}M lane-instructions, {:.1}M lane-instructions/s on {} threads, {} findings",
        report.instructions as f64 / 1e6,
        report.instructions as f64 / s / 1e6,
        rayon::current_num_threads(),
        report.findings.len()
    );
}

fn main() {
    let n = 1usize << 20;
    bench(
        "elementwise-add v1 @ 1Mi",
        &ptx("workspaces/elementwise-add.yaml", "v1"),
        "add_f32",
        (n / 256) as u32,
        256,
        &[4 * n, 4 * n, 4 * n],
        &[n as u64],
    );
    let (m, k) = (4096usize, 1024usize);
    bench(
        "softmax v3 @ 4096x1024",
        &ptx("workspaces/softmax.yaml", "v3"),
        "softmax_warp",
        m as u32,
        256,
        &[4 * m * k, 4 * m * k],
        &[m as u64, k as u64],
    );
}
