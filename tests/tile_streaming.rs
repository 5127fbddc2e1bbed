//! A streaming kernel (elementwise, one layout) whose threads hold more than 128 elements each
//! is written as an element loop (`cuda/streaming.rs`): it compiles in little time, keeps no
//! register arrays in local memory, and agrees with the interpreter (PTX emulator), masked
//! tail included.

mod support;

use support::differential::{cpu_vs_emulator, planned, Case};

const KERNEL: &str = r#"import triton
import triton.language as tl


@triton.jit
def scale_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=-1.0)
    y = tl.where(x > 0, x * 3.0 + 1.0, x * 0.5)
    tl.store(y_ptr + offs, y, mask=m)
"#;

#[test]
fn huge_streaming_tiles_run_as_an_element_loop() {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream.py");
    std::fs::write(&file, KERNEL).unwrap();
    let yaml = format!(
        "name: stream\nsizes:\n  - {{name: s, n: 70000}}\nbuffers:\n  x: {{dtype: f32, shape: [n]}}\n  y: {{dtype: f32, shape: [n], output: true}}\nversions:\n  k:\n    file: {}\n    entry: scale_shift\n    constexprs: {{BLOCK: 32768}}\n    num_warps: 4\n    enable_fp_fusion: false\n    grid: cdiv(n, 32768)\n    args: [x, y, n]\n",
        file.display()
    );
    let case = Case {
        yaml: &yaml,
        version: "k",
        size: "s",
        seed: 9,
        code: |c| kwb::run::cpu::CpuCode::Tile(c.tile_kernels.clone()),
        tolerance: Some((0.0, 0.0)),
    };
    let start = std::time::Instant::now();
    let (_, c) = planned(dir.path(), arch, &case).unwrap();
    println!("compiled in {:.1} s", start.elapsed().as_secs_f64());
    assert!(
        c.generated
            .as_deref()
            .is_some_and(|g| g.contains("256 elements per thread: one at a time")),
        "not an element loop"
    );
    if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
        panic!("{e}");
    }
}
