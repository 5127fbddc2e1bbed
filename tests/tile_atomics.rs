//! `tl.atomic_add` of fp16, bf16 and fp32 tiles: on sm_90 kwb adds 16 bytes per instruction
//! (vector `atom.global.add`, as Triton does) where the pointer runs are contiguous and
//! aligned. The PTX emulator runs that code and must agree with the interpreter bit for bit:
//! a scatter-add whose rows repeat (equal increments, so the order of the atomics cannot
//! change the sums), and one that keeps the old values (rows distinct).

mod support;

use support::differential::{cpu_vs_emulator, Case};

const KERNEL: &str = r#"import triton
import triton.language as tl


@triton.jit
def scatter_add(g_ptr, w_ptr, idx_ptr, old_ptr, n, D, BM: tl.constexpr, BN: tl.constexpr,
                KEEP: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    rmask = rows < n
    m = rmask[:, None] & (cols < D)[None, :]
    which = tl.load(idx_ptr + rows, mask=rmask, other=0)
    g = tl.load(g_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
    old = tl.atomic_add(w_ptr + which[:, None] * D + cols[None, :], g, mask=m)
    if KEEP:
        tl.store(old_ptr + rows[:, None] * D + cols[None, :], old, mask=m)
"#;

/// The PTX of the case, after checking both engines agree on it.
fn agree(dtype: &str, keep: bool, d: u32) -> String {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scatter.py");
    std::fs::write(&file, KERNEL).unwrap();
    // Distinct rows when the old values are kept; 7 rows shared by 40 otherwise.
    let (rows, idx) = if keep {
        (48, "init: arange")
    } else {
        (7, "init: {uniform: [0, 7]}")
    };
    let yaml = format!(
        "name: atomics\nsizes:\n  - {{name: s, n: 40, D: {d}}}\nbuffers:\n  g: {{dtype: {dtype}, shape: [n, D], init: {{constant: 0.25}}}}\n  w: {{dtype: {dtype}, shape: [{rows}, D], init: arange, output: true}}\n  idx: {{dtype: i64, shape: [n], {idx}}}\n  old: {{dtype: {dtype}, shape: [n, D], init: {{constant: 0}}, output: true}}\nversions:\n  k:\n    file: {}\n    entry: scatter_add\n    constexprs: {{BM: 16, BN: 64, KEEP: {}}}\n    num_warps: 4\n    grid: [\"cdiv(n, 16)\", \"cdiv(D, 64)\"]\n    args: [g, w, idx, old, n, D]\n",
        file.display(),
        if keep { "True" } else { "False" }
    );
    let case = Case {
        yaml: &yaml,
        version: "k",
        size: "s",
        seed: 3,
        code: |c| kwb::run::cpu::CpuCode::Tile(c.tile_kernels.clone()),
        tolerance: Some((0.0, 0.0)),
    };
    if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
        panic!("{dtype} keep={keep} D={d}: {e}");
    }
    let (_, c) = support::differential::planned(dir.path(), arch, &case).unwrap();
    c.ptx.to_string()
}

#[test]
fn vector_atomics_agree_with_the_interpreter() {
    for (dtype, op) in [
        ("bf16", "atom.global.gpu.acq_rel.add.noftz.v8.bf16"),
        ("f16", "atom.global.gpu.acq_rel.add.noftz.v8.f16"),
        ("f32", "atom.global.gpu.acq_rel.add.v4.f32"),
    ] {
        for keep in [false, true] {
            let ptx = agree(dtype, keep, 96);
            assert!(ptx.contains(op), "{dtype}: no `{op}` in the PTX");
        }
    }
}

#[test]
fn scalar_atomics_agree_with_the_interpreter() {
    // An odd row length: no run is aligned, so each element is its own atomic.
    for dtype in ["bf16", "f16", "f32"] {
        for keep in [false, true] {
            let ptx = agree(dtype, keep, 95);
            assert!(!ptx.contains(".v8.") && !ptx.contains(".v4.f32"), "{dtype}");
        }
    }
}
