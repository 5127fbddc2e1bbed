//! Programmatic dependent launch (`tl.extra.cuda.gdc_wait` / `gdc_launch_dependents`, as
//! Triton's tutorial 11 writes it) and Triton's 8-bit float dtypes known by name
//! (`ptr.dtype.element_ty == tl.float8e5`), which kernels compare with but kwb does not
//! compute in.

use super::{buf, errors, interp, EmuBuf};
use kwb::tile::{ConstValue, DType};

const GDC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
    if USE_GDC:
        tl.extra.cuda.gdc_wait()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if USE_GDC:
        tl.extra.cuda.gdc_launch_dependents()
    if y_ptr.dtype.element_ty == tl.float8e5:
        x = x * 100.0
    if x_ptr.dtype.element_ty != tl.float8e4nv:
        x = x + 1.0
    tl.store(y_ptr + offs, x, mask=offs < n)
"#;

#[test]
fn dependent_launch_and_fp8_comparisons_give_tritons_values() {
    // A grid launched on its own waits for nothing: the kernel is an add of one. Neither
    // pointer points to fp8, so both comparisons fold (the first to False, the second True).
    // Triton 3.9.0's interpreter (`TRITON_INTERPRET=1`) gives these values with USE_GDC=False;
    // it cannot run `gdc_wait` itself.
    let x: Vec<f64> = (0..16).map(|i| f64::from(i) * 0.25 - 1.0).collect();
    for gdc in [true, false] {
        let args = [
            buf(DType::F32, &x),
            buf(DType::F32, &[0.0; 16]),
            super::A::Int(13),
        ];
        let cx = [("BLOCK", super::int(16)), ("USE_GDC", super::flag(gdc))];
        let out = interp(GDC, &cx, 1, &args).unwrap();
        let want: Vec<f64> = (0..16)
            .map(|i| if i < 13 { x[i] + 1.0 } else { 0.0 })
            .collect();
        assert_eq!(out[1], want, "USE_GDC={gdc}");
    }
}

#[test]
fn dependent_launch_agrees_with_the_emulator_and_reaches_the_cuda() {
    let bufs = [
        EmuBuf("x", "f32", 256, false, "{uniform: [-4, 4]}"),
        EmuBuf("y", "f32", 256, true, ""),
    ];
    super::emulator_case(
        GDC,
        "BLOCK: 256, USE_GDC: true",
        4,
        &bufs,
        "x, y, 256",
        (0.0, 0.0),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.py");
    std::fs::write(&path, GDC).unwrap();
    let request = kwb::tile::KernelRequest {
        name: "k".into(),
        args: vec![
            kwb::tile::ArgKind::Pointer(DType::F32),
            kwb::tile::ArgKind::Pointer(DType::F32),
            kwb::tile::ArgKind::Int {
                fits_i32: true,
                divisibility: 1,
                non_negative: true,
                one: false,
            },
        ],
        constexprs: vec![
            ("BLOCK".into(), ConstValue::Int(256)),
            ("USE_GDC".into(), ConstValue::Bool(true)),
        ],
        num_warps: 4,
        sums: Default::default(),
    };
    let c = kwb::tile::compile(&path, GDC, &[request]);
    assert_eq!(
        c.kernels.len(),
        1,
        "{}",
        kwb::diag::render_all(&c.diagnostics)
    );
    let cuda = kwb::tile::cuda::write(&[(*c.kernels[0]).clone()]);
    let wait = cuda
        .find("griddepcontrol.wait;")
        .expect("the wait reaches the CUDA");
    let release =
        (cuda.find("griddepcontrol.launch_dependents;")).expect("the release reaches the CUDA");
    assert!(wait < release, "in the kernel's order");
}

#[test]
fn computing_in_fp8_is_an_error_at_its_line() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(y_ptr + tl.arange(0, 4), x.to(tl.float8e5))
"#;
    let e = errors(src, &[]);
    assert!(e.contains("k.py:8:"), "{e}");
    assert!(
        e.contains("`tl.float8e5` (kwb does not compute in 8-bit floats)"),
        "{e}"
    );
    let wrong = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr):
    tl.extra.cuda.gdc_wait(1)
"#;
    let e = errors(wrong, &[]);
    assert!(e.contains("k.py:7:"), "{e}");
    assert!(e.contains("gdc_wait"), "{e}");
}

/// On a GPU (H100/H200), `griddepcontrol.wait` and `launch_dependents` run in a kernel launched
/// on its own, and the kernel gives the interpreter's values bit for bit.
#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn dependent_launch_on_a_gpu_gives_the_interpreters_values() {
    let bufs = [
        EmuBuf("x", "f32", 4096, false, "{uniform: [-4, 4]}"),
        EmuBuf("y", "f32", 4096, true, ""),
    ];
    crate::gpu_check(GDC, "BLOCK: 4096, USE_GDC: true", 4, &bufs, "x, y, 4096");
}
