//! Full float sums add in Triton's order (`ir::sums`): the CUDA kwb writes, run by the PTX
//! emulator, gives the interpreter's model bit for bit, for both orders (`triton: "3.6"` and
//! `"3.9"`), fp32/fp16/bf16, a plain sum and a sum of products (contracted into fused
//! multiply-adds), across tile sizes, warp counts and a tile smaller than the program.

mod support;

use support::differential::{cpu_vs_emulator, Case};

/// `row_sum(x_ptr, w_ptr, y_ptr, N, BLOCK, PRODUCT)`: each program sums a row, of `x` or of
/// `x * w` (shared with `tests/gpu_sums.rs`).
const KERNEL: &str = include_str!("fixtures/sums/row_sum.py");

fn bit_exact(dtype: &str, triton: &str, n: u32, block: u32, warps: u32, product: bool) {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sums.py");
    std::fs::write(&file, KERNEL).unwrap();
    let yaml = format!(
        "name: sums\nsizes:\n  - {{name: s, R: 8, N: {n}}}\nbuffers:\n  x: {{dtype: {dtype}, shape: [R, N]}}\n  w: {{dtype: {dtype}, shape: [N]}}\n  y: {{dtype: {dtype}, shape: [R], output: true}}\nversions:\n  k:\n    file: {}\n    entry: row_sum\n    triton: \"{triton}\"\n    constexprs: {{BLOCK: {block}, PRODUCT: {}}}\n    num_warps: {warps}\n    grid: R\n    args: [x, w, y, N]\n",
        file.display(),
        if product { "True" } else { "False" }
    );
    let case = Case {
        yaml: &yaml,
        version: "k",
        size: "s",
        seed: 5,
        code: |c| kwb::run::cpu::CpuCode::Tile(c.tile_kernels.clone()),
        tolerance: Some((0.0, 0.0)),
    };
    if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
        panic!("{dtype} triton {triton} N={n} BLOCK={block} warps={warps} product={product}: {e}");
    }
}

#[test]
fn sixteen_bit_sums_match_bit_for_bit() {
    for dtype in ["bf16", "f16"] {
        for triton in ["3.6", "3.9"] {
            for product in [false, true] {
                bit_exact(dtype, triton, 1000, 1024, 4, product);
                bit_exact(dtype, triton, 4000, 4096, 8, product);
            }
        }
    }
}

#[test]
fn fp32_sums_match_bit_for_bit() {
    for triton in ["3.6", "3.9"] {
        for product in [false, true] {
            bit_exact("f32", triton, 3000, 4096, 4, product);
            bit_exact("f32", triton, 100, 128, 2, product);
        }
    }
}

#[test]
fn small_tiles_count_each_element_once() {
    // 64 elements over 128 threads: half the threads hold copies.
    for triton in ["3.6", "3.9"] {
        bit_exact("bf16", triton, 50, 64, 4, true);
        bit_exact("f32", triton, 64, 64, 4, false);
    }
}

#[test]
fn an_unknown_triton_release_is_an_error_at_its_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sums.py"), KERNEL).unwrap();
    let path = dir.path().join("w.yaml");
    std::fs::write(
        &path,
        "name: sums\nsizes:\n  - {name: s, N: 8}\nbuffers:\n  x: {dtype: f32, shape: [N]}\nversions:\n  k:\n    file: sums.py\n    entry: row_sum\n    triton: \"2.1\"\n    grid: 1\n    args: [x, x, x, N]\n",
    )
    .unwrap();
    let e = kwb::workspace::load(&path).unwrap_err().to_string();
    assert!(
        e.contains("versions.k.triton") && e.contains("`2.1` is not a Triton release"),
        "{e}"
    );
}
