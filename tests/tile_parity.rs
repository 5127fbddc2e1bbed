//! Triton parity: kernels written for Triton compile unchanged. Each feature is checked twice:
//! the tile interpreter gives the values Triton would, and the CUDA kwb generates compiles with
//! NVRTC and agrees with the interpreter when the PTX emulator runs it (no GPU needed).
//! Module-level constexpr globals, string and dtype constexprs, imported helpers, pointer
//! dtypes, `None` arguments and libdevice math.

mod support;

use kwb::tile::{ArgKind, ConstValue, DType, InterpArg, InterpBuffer, KernelRequest};
use support::differential::{cpu_vs_emulator, Case};

/// Runs kernel `k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, ...)` of `file` (written with `src`
/// into a temporary folder, beside `others`) in the interpreter over `x`; the `y` it stores,
/// or the rendered diagnostics.
fn interp(
    file: &str,
    src: &str,
    others: &[(&str, &str)],
    constexprs: &[(&str, ConstValue)],
    x: &[f32],
) -> Result<Vec<f32>, String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in others.iter().chain([(file, src)].iter()) {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let path = dir.path().join(file);
    let mut cx: Vec<(String, ConstValue)> = vec![("BLOCK".into(), ConstValue::Int(64))];
    cx.extend(constexprs.iter().map(|(n, v)| (n.to_string(), v.clone())));
    let request = KernelRequest {
        name: "k".into(),
        args: vec![
            ArgKind::Pointer(DType::F32),
            ArgKind::Pointer(DType::F32),
            ArgKind::Int {
                fits_i32: true,
                divisibility: 1,
                non_negative: true,
                one: false,
            },
        ],
        constexprs: cx,
        num_warps: 1,
        sums: Default::default(),
    };
    let c = kwb::tile::compile(&path, src, &[request]);
    if c.kernels.len() != 1 {
        return Err(kwb::diag::render_all(&c.diagnostics));
    }
    let buf = |name: &str, xs: &[f32]| InterpBuffer {
        name: name.into(),
        dtype: DType::F32,
        bytes: xs.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let mut bufs = vec![buf("x", x), buf("y", &vec![0.0; x.len()])];
    let n = x.len() as i64;
    let args = [
        InterpArg::Buffer(0),
        InterpArg::Buffer(1),
        InterpArg::Int(n),
    ];
    let grid = [(n as u64).div_ceil(64) as u32, 1, 1];
    kwb::tile::interp::run(&c.kernels[0], grid, &args, &mut bufs).map_err(|e| e.to_string())?;
    Ok(bufs[1]
        .bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// The diagnostics of compiling `src` (a `.py` module) for `k(x_ptr, y_ptr, n)`.
fn errors(src: &str, constexprs: &[(&str, ConstValue)]) -> String {
    match interp("k.py", src, &[], constexprs, &[1.0]) {
        Ok(_) => String::new(),
        Err(e) => e,
    }
}

/// The interpreter and the PTX emulator (running the CUDA kwb generated for sm_90) agree on
/// kernel `k` of `file` (beside `others`), launched as `k(x, y, N)` with `constexprs` (YAML
/// flow-mapping entries, `BLOCK` included) over N = 1000 random floats.
fn emulator_agrees(file: &str, src: &str, others: &[(&str, &str)], constexprs: &str) {
    emulator_agrees_with(file, src, others, constexprs, "f32", (1e-5, 1e-6));
}

fn emulator_agrees_with(
    file: &str,
    src: &str,
    others: &[(&str, &str)],
    constexprs: &str,
    dtype: &str,
    tolerance: (f64, f64),
) {
    emulator_case(file, src, others, constexprs, dtype, tolerance, "x, y, N");
}

/// [`emulator_agrees_with`], launched as `k(args)`.
fn emulator_case(
    file: &str,
    src: &str,
    others: &[(&str, &str)],
    constexprs: &str,
    dtype: &str,
    tolerance: (f64, f64),
    args: &str,
) {
    support::provision_nvrtc();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in others.iter().chain([(file, src)].iter()) {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let yaml = format!(
        "name: parity\nsizes:\n  - {{name: s, N: 1000}}\nbuffers:\n  x: {{dtype: {dtype}, shape: [N]}}\n  y: {{dtype: {dtype}, shape: [N], output: true}}\nreference:\n  expr:\n    y: x\nversions:\n  k:\n    file: {}\n    entry: k\n    constexprs: {{{constexprs}}}\n    num_warps: 2\n    grid: cdiv(N, BLOCK)\n    args: [{args}]\n",
        dir.path().join(file).display()
    );
    let case = Case {
        yaml: &yaml,
        version: "k",
        size: "s",
        seed: 11,
        code: |c| kwb::run::cpu::CpuCode::Tile(c.tile_kernels.clone()),
        tolerance: Some(tolerance),
    };
    if let Err(e) = cpu_vs_emulator(dir.path(), arch, &case) {
        panic!("{e}");
    }
}

fn xs() -> Vec<f32> {
    (0..100).map(|i| i as f32 * 0.25 - 10.0).collect()
}

// ---- 1. Module-level constexpr globals ----

const GLOBALS: &str = r#"
import triton
import triton.language as tl

_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(1)
SCALE = tl.constexpr(3)
OFFSET: tl.constexpr = 0.5
TWICE = tl.constexpr(SCALE * 2)
HOST_ONLY = 7  # not read by the kernel: no error
F16 = tl.float16

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr = _CASTING_MODE_LLAMA):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, tl.constexpr(64))
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if MODE == _CASTING_MODE_LLAMA:
        y = x * SCALE + OFFSET + TWICE
    else:
        y = x
    y = y.to(F16).to(tl.float32)
    tl.store(y_ptr + offs, y, mask=m)
"#;

#[test]
fn module_constexpr_globals_are_read_by_kernels() {
    let x = xs();
    let y = interp("k.py", GLOBALS, &[], &[], &x).unwrap();
    for (a, b) in x.iter().zip(&y) {
        let want = f32::from(half::f16::from_f32(a * 3.0 + 0.5 + 6.0));
        assert_eq!(*b, want, "x = {a}");
    }
    // Another mode: the `else` branch.
    let y = interp("k.py", GLOBALS, &[], &[("MODE", ConstValue::Int(0))], &x).unwrap();
    assert_eq!(y[3], x[3]);
}

#[test]
fn module_constexpr_globals_agree_with_the_emulator() {
    emulator_agrees("k.py", GLOBALS, &[], "BLOCK: 64");
}

#[test]
fn plain_module_globals_are_errors_where_a_kernel_reads_them() {
    let src = "import triton\nimport triton.language as tl\nN_ROWS = 3\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    tl.store(y_ptr, N_ROWS)\n";
    let e = errors(src, &[]);
    assert!(
        e.contains(
            "k.py:7:21: error: a kernel cannot read the module-level global `N_ROWS` (line 3)"
        ),
        "{e}"
    );
    // As in Triton, a parameter's default may read any global.
    let src = "import triton\nimport triton.language as tl\nN_ROWS = 3\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, R: tl.constexpr = N_ROWS):\n    tl.store(y_ptr, R * 1.0)\n";
    assert_eq!(interp("k.py", src, &[], &[], &[0.0]).unwrap(), vec![3.0]);
}

#[test]
fn globals_kwb_cannot_evaluate_are_errors_not_guesses() {
    // Reassigned inside a top-level `if`: which value the kernel sees depends on host code.
    let src = "import triton\nimport triton.language as tl\nimport torch\nS = tl.constexpr(2)\nif torch.cuda.is_available():\n    S = tl.constexpr(4)\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    tl.store(y_ptr, S * 1.0)\n";
    let e = errors(src, &[]);
    assert!(e.contains("k.py:10:21: error: `S` is a module-level name bound at line 6 by a statement kwb does not evaluate"), "{e}");
    // Host code after the kernel that binds a name the kernel does not read is no error.
    let src = "import triton\nimport triton.language as tl\nS = tl.constexpr(2)\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    tl.store(y_ptr, S * 1.0)\n\nx = [i for i in range(3)]\nk[(1,)](x, x, 3, BLOCK=64)\n";
    assert_eq!(interp("k.py", src, &[], &[], &[0.0]).unwrap(), vec![2.0]);
}

// ---- 2. String and dtype constexprs ----

const ACTIVATIONS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, ACTIVATION: tl.constexpr = "", X_dtype: tl.constexpr = tl.float32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(X_dtype)
    if ACTIVATION == "leaky_relu":
        x = leaky_relu(x)
    elif ACTIVATION != "":
        x = x * 2
    tl.static_assert(X_dtype == tl.float32 or X_dtype == tl.bfloat16 or X_dtype == tl.float16)
    tl.store(y_ptr + offs, x.to(tl.float32), mask=m)
"#;

#[test]
fn string_and_dtype_constexprs_specialise_the_kernel() {
    let x = xs();
    let str_ = |s: &str| ConstValue::Str(s.into());
    let bf16 = ConstValue::DType(kwb::tile::ir::Scalar::BF16);
    let y = interp(
        "k.py",
        ACTIVATIONS,
        &[],
        &[("ACTIVATION", str_("leaky_relu"))],
        &x,
    )
    .unwrap();
    for (a, b) in x.iter().zip(&y) {
        let want = if *a >= 0.0 { *a } else { 0.01 * a };
        assert_eq!(*b, want, "x = {a}");
    }
    let y = interp(
        "k.py",
        ACTIVATIONS,
        &[],
        &[("ACTIVATION", str_("double"))],
        &x,
    )
    .unwrap();
    assert_eq!(y[1], x[1] * 2.0);
    let y = interp(
        "k.py",
        ACTIVATIONS,
        &[],
        &[("X_dtype", bf16), ("ACTIVATION", str_(""))],
        &[1.0 / 3.0],
    )
    .unwrap();
    assert_eq!(y[0], half::bf16::from_f32(1.0 / 3.0).to_f32());
    // A string where the default is a dtype is an error at the parameter.
    let e = errors(ACTIVATIONS, &[("X_dtype", str_("bf16"))]);
    assert!(e.contains("constexpr `X_dtype` of kernel `k` takes a dtype (its default is `tl.float32`), but the workspace gives a string, `\"bf16\"`"), "{e}");
    // Comparing a string with a runtime value is an error, not `False`.
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    if \"a\" == n:\n        tl.store(y_ptr, 1.0)\n";
    assert!(
        errors(src, &[]).contains("cannot compare"),
        "{}",
        errors(src, &[])
    );
}

#[test]
fn string_and_dtype_constexprs_from_the_workspace_agree_with_the_emulator() {
    // No defaults: the values must come from the workspace.
    let src = ACTIVATIONS
        .replace(
            "ACTIVATION: tl.constexpr = \"\"",
            "ACTIVATION: tl.constexpr",
        )
        .replace(
            "X_dtype: tl.constexpr = tl.float32",
            "X_dtype: tl.constexpr",
        );
    emulator_agrees(
        "k.py",
        &src,
        &[],
        "BLOCK: 128, ACTIVATION: \"'leaky_relu'\", X_dtype: tl.bfloat16",
    );
    emulator_agrees(
        "k.py",
        &src,
        &[],
        "BLOCK: 128, ACTIVATION: '\"x2\"', X_dtype: tl.float16",
    );
}

#[test]
fn a_sweep_may_list_dtype_and_string_constexprs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.py"), ACTIVATIONS).unwrap();
    let yaml = format!(
        "name: sweep\nsizes:\n  - {{name: s, N: 16}}\nbuffers:\n  x: {{dtype: f32, shape: [N]}}\n  y: {{dtype: f32, shape: [N], output: true}}\nreference:\n  expr:\n    y: x\nversions:\n  k:\n    file: {}\n    entry: k\n    constexprs: {{BLOCK: 16, X_dtype: tl.float32, ACTIVATION: \"''\"}}\n    sweep: {{X_dtype: [tl.float16, tl.bfloat16], ACTIVATION: [\"'leaky_relu'\", \"''\"]}}\n    grid: cdiv(N, BLOCK)\n    args: [x, y, N]\n",
        dir.path().join("k.py").display()
    );
    let path = dir.path().join("w.yaml");
    std::fs::write(&path, yaml).unwrap();
    let ws = kwb::workspace::load(&path).map_err(|e| kwb::diag::render_all(&e.diagnostics));
    let ws = ws.unwrap();
    assert_eq!(ws.versions.len(), 4);
    use kwb::workspace::Constexpr;
    let v = &ws.versions[0];
    assert!(v
        .constexprs
        .contains(&("X_dtype".into(), Constexpr::DType("float16".into()))));
    assert!(v
        .constexprs
        .contains(&("ACTIVATION".into(), Constexpr::Str("leaky_relu".into()))));
}

// ---- 3. Imports: libdevice forms, and helpers of other files ----

const LIBDEVICE_IMPORTS: &str = r#"
import triton
import triton.language as tl
from triton.language.extra.libdevice import tanh
from triton.language.extra import libdevice
from triton.language.math import rsqrt as fast_rsqrt
from triton.language.extra.cuda import libdevice as cuda_ld
from .utils import unused_helper  # never read by a kernel: no error

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    a = tl.abs(x) + 1.0
    y = tanh(x) + libdevice.tanh(x) + tl.extra.cuda.libdevice.rsqrt(a) + fast_rsqrt(a) + cuda_ld.exp(x * 0.1)
    tl.store(y_ptr + offs, y, mask=m)
"#;

#[test]
fn libdevice_imports_resolve() {
    let x = xs();
    let y = interp("k.py", LIBDEVICE_IMPORTS, &[], &[], &x).unwrap();
    for (a, b) in x.iter().zip(&y) {
        let a = f64::from(*a);
        let r = 1.0 / (a.abs() + 1.0).sqrt();
        let want = 2.0 * a.tanh() + 2.0 * r + (a * 0.1).exp();
        assert!(
            (f64::from(*b) - want).abs() < 1e-5 * want.abs().max(1.0),
            "x = {a}: {b} vs {want}"
        );
    }
    emulator_agrees_with(
        "k.py",
        LIBDEVICE_IMPORTS,
        &[],
        "BLOCK: 128",
        "f32",
        (1e-4, 1e-5),
    );
}

const UTILS: &str = r#"
import triton
import triton.language as tl
from triton.language.extra import libdevice

SCALE = tl.constexpr(2.0)

@triton.jit
def _inner(x):
    return x * SCALE

@triton.jit
def helper(x, OFF: tl.constexpr):
    return _inner(x) + OFF + libdevice.tanh(x)
"#;

const LOCAL: &str = r#"
import triton
from ..utils import _inner as twice

@triton.jit
def act(x):
    return twice(x) - 1.0
"#;

const CROSS_FILE: &str = r#"
import triton
import triton.language as tl
from ..utils import helper
from pkg.consts import OFFSET
from .local import act

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, helper(x, OFFSET) + act(x), mask=m)
"#;

fn cross_file_others() -> Vec<(&'static str, &'static str)> {
    vec![
        ("pkg/__init__.py", ""),
        ("pkg/utils.py", UTILS),
        (
            "pkg/consts.py",
            "import triton.language as tl\nOFFSET = tl.constexpr(0.5)\n",
        ),
        ("pkg/ops/__init__.py", ""),
        ("pkg/ops/local.py", LOCAL),
    ]
}

#[test]
fn helpers_and_globals_of_other_files_are_inlined() {
    let x = xs();
    let y = interp("pkg/ops/k.py", CROSS_FILE, &cross_file_others(), &[], &x).unwrap();
    for (a, b) in x.iter().zip(&y) {
        let a = f64::from(*a);
        let want = a * 2.0 + 0.5 + a.tanh() + a * 2.0 - 1.0;
        assert!(
            (f64::from(*b) - want).abs() < 1e-5 * want.abs().max(1.0),
            "x = {a}: {b} vs {want}"
        );
    }
    emulator_agrees_with(
        "pkg/ops/k.py",
        CROSS_FILE,
        &cross_file_others(),
        "BLOCK: 64",
        "f32",
        (1e-4, 1e-5),
    );
}

#[test]
fn errors_in_another_file_are_reported_there() {
    let bad_utils = UTILS.replace("return x * SCALE", "return x * undefined_name");
    let mut others = cross_file_others();
    others[1].1 = Box::leak(bad_utils.into_boxed_str());
    let e = interp("pkg/ops/k.py", CROSS_FILE, &others, &[], &[1.0]).unwrap_err();
    assert!(
        e.contains("pkg/utils.py:10:16: error: unknown name `undefined_name`"),
        "{e}"
    );
    let bad_utils = UTILS.replace("return x * SCALE", "return x *");
    others[1].1 = Box::leak(bad_utils.into_boxed_str());
    let e = interp("pkg/ops/k.py", CROSS_FILE, &others, &[], &[1.0]).unwrap_err();
    assert!(e.contains("pkg/utils.py:10:"), "{e}");
}

#[test]
fn imports_kwb_cannot_follow_are_errors_at_the_import_when_used() {
    let src = "import triton\nimport triton.language as tl\nfrom .utils import helper\nfrom pkg.mod import other\nfrom triton.language.extra.libdevice import no_such_fn\nfrom .k import missing\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    tl.store(y_ptr, helper(1.0))\n    tl.store(y_ptr, no_such_fn(1.0))\n    tl.store(y_ptr, missing(1.0))\n";
    let e = errors(src, &[]);
    assert!(e.contains("k.py:3:1: error: `helper` is imported from `.utils`, but kwb cannot find the module `.utils` (looked beside"), "{e}");
    assert!(e.contains("(used at line 10)"), "{e}");
    assert!(
        e.contains(
            "k.py:5:1: error: kwb does not know `triton.language.extra.libdevice.no_such_fn`"
        ),
        "{e}"
    );
    assert!(
        e.contains(
            "k.py:6:1: error: `missing` is imported from `.k`, which imports this file back"
        ),
        "{e}"
    );
    assert!(!e.contains("k.py:4:"), "{e}");
}

#[test]
fn imported_files_are_dependencies_of_the_version() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in cross_file_others()
        .iter()
        .chain([("pkg/ops/k.py", CROSS_FILE)].iter())
    {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let file = dir.path().join("pkg/ops/k.py");
    let c = kwb::tile::compile(&file, CROSS_FILE, &[]);
    let mut names: Vec<String> = c
        .imports
        .iter()
        .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["pkg/consts.py", "pkg/ops/local.py", "pkg/utils.py"]);
}

// ---- 4. Pointer dtypes ----

const POINTER_DTYPES: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(x_ptr.dtype == tl.pointer_type(y_ptr.dtype.element_ty))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    p = x_ptr.to(tl.pointer_type(x_ptr.dtype.element_ty))
    x = tl.load(p + offs, mask=m).to(tl.float32)
    acc = tl.zeros((BLOCK,), dtype=x_ptr.type.element_ty)
    if y_ptr.dtype.element_ty == tl.float16:
        acc += 1
    y = (x * 3.0 + acc).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, y, mask=m)
"#;

#[test]
fn pointer_dtypes_read_and_compare() {
    let x = xs();
    let y = interp("k.py", POINTER_DTYPES, &[], &[], &x).unwrap();
    assert_eq!(y[5], x[5] * 3.0);
    emulator_agrees("k.py", POINTER_DTYPES, &[], "BLOCK: 64");
    emulator_agrees_with(
        "k.py",
        POINTER_DTYPES,
        &[],
        "BLOCK: 64",
        "f16",
        (1e-3, 1e-3),
    );
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    p = x_ptr.to(tl.pointer_type(tl.float16))\n    tl.store(p, 1.0)\n";
    let e = errors(src, &[]);
    let tile_type = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    p = x_ptr + tl.arange(0, BLOCK)\n    tl.store(p, tl.zeros((BLOCK,), dtype=p.type.element_ty))\n";
    let t = errors(tile_type, &[]);
    assert!(
        // A tile's `.type` is a block type; its `element_ty` is the pointer type, as in Triton.
        t.contains(
            "expected a dtype such as `tl.float32`, found the dtype `tl.pointer_type(tl.float32)`"
        ),
        "{t}"
    );
    assert!(e.contains("k.py:5:18: error: casting a pointer<float32> to `tl.pointer_type(tl.float16)` reinterprets memory as another dtype, which kwb does not support"), "{e}");
}

// ---- 5. `None` for an optional pointer ----

const OPTIONAL_BIAS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, b_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs, mask=m) * 10.0
    if b_ptr is None:
        x = x - 1.0
    tl.store(y_ptr + offs, x, mask=m)
"#;

#[test]
fn none_for_an_optional_pointer_folds_is_none() {
    let int = ArgKind::Int {
        fits_i32: true,
        divisibility: 1,
        non_negative: true,
        one: false,
    };
    let f32p = ArgKind::Pointer(DType::F32);
    let run = |last: ArgKind, bias: bool| {
        let request = KernelRequest {
            name: "k".into(),
            args: vec![f32p.clone(), f32p.clone(), int.clone(), last],
            constexprs: vec![("BLOCK".into(), ConstValue::Int(64))],
            num_warps: 1,
            sums: Default::default(),
        };
        let c = kwb::tile::compile(std::path::Path::new("k.py"), OPTIONAL_BIAS, &[request]);
        assert_eq!(
            c.kernels.len(),
            1,
            "{}",
            kwb::diag::render_all(&c.diagnostics)
        );
        // The `None` parameter is not launched.
        assert_eq!(c.kernels[0].params.len(), if bias { 4 } else { 3 });
        let buf = |name: &str, v: f32| InterpBuffer {
            name: name.into(),
            dtype: DType::F32,
            bytes: [v; 4].iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        let mut bufs = vec![buf("x", 2.0), buf("y", 0.0), buf("b", 1.0)];
        let mut args = vec![
            InterpArg::Buffer(0),
            InterpArg::Buffer(1),
            InterpArg::Int(4),
        ];
        if bias {
            args.push(InterpArg::Buffer(2));
        }
        kwb::tile::interp::run(&c.kernels[0], [1, 1, 1], &args, &mut bufs).unwrap();
        f32::from_le_bytes(bufs[1].bytes[..4].try_into().unwrap())
    };
    assert_eq!(run(ArgKind::None, false), 1.0);
    assert_eq!(run(f32p.clone(), true), 12.0);
}

#[test]
fn none_arguments_from_the_workspace_agree_with_the_emulator() {
    emulator_case(
        "k.py",
        OPTIONAL_BIAS,
        &[],
        "BLOCK: 64",
        "f32",
        (1e-5, 1e-6),
        "x, y, N, None",
    );
    emulator_case(
        "k.py",
        OPTIONAL_BIAS,
        &[],
        "BLOCK: 64",
        "f32",
        (1e-5, 1e-6),
        "x, y, N, x",
    );
}

// ---- 6. libdevice math ----

const LIBDEVICE: &str = r#"
import triton
import triton.language as tl
from triton.language.extra import libdevice

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, FN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    u = x * 0.0625  # most of [-1, 1] for the inverse functions
    if FN == "tan":
        y = libdevice.tan(u)
    elif FN == "asin":
        y = libdevice.asin(u)
    elif FN == "acos":
        y = libdevice.acos(u)
    elif FN == "atan":
        y = libdevice.atan(x)
    elif FN == "sinh":
        y = libdevice.sinh(u)
    elif FN == "cosh":
        y = libdevice.cosh(u)
    elif FN == "asinh":
        y = libdevice.asinh(x)
    elif FN == "acosh":
        y = libdevice.acosh(tl.abs(x) + 1.0)
    elif FN == "atanh":
        y = libdevice.atanh(u)
    elif FN == "erfc":
        y = libdevice.erfc(u * 4)
    elif FN == "erfinv":
        y = libdevice.erfinv(u)
    elif FN == "log1p":
        y = libdevice.log1p(tl.abs(u))
    elif FN == "expm1":
        y = libdevice.expm1(u)
    elif FN == "log10":
        y = libdevice.log10(tl.abs(x) + 0.5)
    elif FN == "cbrt":
        y = libdevice.cbrt(x)
    elif FN == "rint":
        y = libdevice.rint(x * 2) + libdevice.nearbyint(x * 0.5)
    elif FN == "round":
        y = libdevice.round(x * 2)
    elif FN == "trunc":
        y = libdevice.trunc(x * 1.5)
    elif FN == "rcp_rn":
        y = libdevice.rcp_rn(x + 0.5)
    elif FN == "pow":
        y = libdevice.pow(tl.abs(x) + 0.5, u)
    elif FN == "atan2":
        y = libdevice.atan2(x, u + 0.25)
    elif FN == "copysign":
        y = libdevice.copysign(u, x - 1.0)
    elif FN == "hypot":
        y = libdevice.hypot(x, u)
    elif FN == "fmod":
        y = libdevice.fmod(x, 1.5)
    elif FN == "isnan":
        z = libdevice.sqrt(x)
        y = tl.where(libdevice.isnan(z), 1.0, 0.0)
    else:
        tl.static_assert(FN == "isinf")
        y = tl.where(libdevice.isinf(1.0 / (x - x)), 1.0, 0.0)
    tl.store(y_ptr + offs, y, mask=m)
"#;

/// Each function's value in f64 (the interpreter computes in f64 and rounds to float32).
fn libdevice_reference(f: &str, x: f64) -> f64 {
    let x = f64::from(x as f32);
    let u = x * 0.0625;
    match f {
        "tan" => u.tan(),
        "asin" => u.asin(),
        "acos" => u.acos(),
        "atan" => x.atan(),
        "sinh" => u.sinh(),
        "cosh" => u.cosh(),
        "asinh" => x.asinh(),
        "acosh" => (x.abs() + 1.0).acosh(),
        "atanh" => u.atanh(),
        "erfc" => 1.0 - erf_ref(u * 4.0),
        "erfinv" => f64::NAN, // checked through erf below
        "log1p" => u.abs().ln_1p(),
        "expm1" => u.exp_m1(),
        "log10" => (x.abs() + 0.5).log10(),
        "cbrt" => x.cbrt(),
        "rint" => (x * 2.0).round_ties_even() + (x * 0.5).round_ties_even(),
        "round" => (x * 2.0).round(),
        "trunc" => (x * 1.5).trunc(),
        "rcp_rn" => 1.0 / (x + 0.5),
        "pow" => (x.abs() + 0.5).powf(u),
        "atan2" => x.atan2(u + 0.25),
        "copysign" => u.copysign(x - 1.0),
        "hypot" => x.hypot(u),
        "fmod" => x % 1.5,
        "isnan" => f64::from(u8::from(x < 0.0)),
        _ => 1.0,
    }
}

/// erf by its series (enough for |x| <= 4 to 1e-12), for the reference only.
fn erf_ref(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..200 {
        term *= -x * x / f64::from(n);
        sum += term / f64::from(2 * n + 1);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

const LIBDEVICE_FNS: &[&str] = &[
    "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "erfinv",
    "log1p", "expm1", "log10", "cbrt", "rint", "round", "trunc", "rcp_rn", "pow", "atan2",
    "copysign", "hypot", "fmod", "isnan", "isinf",
];

#[test]
fn libdevice_functions_in_the_interpreter() {
    // Quarter steps make ties for rint/round (x * 2 = k + 0.5).
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.25 - 8.0 + 0.0).collect();
    for f in LIBDEVICE_FNS {
        let y = interp(
            "k.py",
            LIBDEVICE,
            &[],
            &[("FN", ConstValue::Str(f.to_string()))],
            &x,
        )
        .unwrap_or_else(|e| panic!("{f}: {e}"));
        for (a, b) in x.iter().zip(&y) {
            let b = f64::from(*b);
            if *f == "erfinv" {
                let u = f64::from(*a) * 0.0625;
                assert!((erf_ref(b) - u).abs() < 1e-6, "erfinv({u}) = {b}");
                continue;
            }
            let want = libdevice_reference(f, f64::from(*a));
            let close = b == want
                || (b - want).abs() <= 1e-6 * want.abs().max(1e-3)
                || (b.is_nan() && want.is_nan());
            assert!(close, "{f}({a}): {b}, want {want}");
        }
    }
}

#[test]
fn libdevice_functions_agree_with_the_emulator() {
    let mut failures = Vec::new();
    // `tanf`'s reduction of large arguments keeps an array in local memory, which the PTX
    // emulator does not model (it cannot read `__local_depot`): tan is checked on a GPU only.
    for f in LIBDEVICE_FNS.iter().filter(|f| **f != "tan") {
        let r = std::panic::catch_unwind(|| {
            emulator_agrees_with(
                "k.py",
                LIBDEVICE,
                &[],
                &format!("BLOCK: 128, FN: \"'{f}'\""),
                "f32",
                (1e-5, 1e-6),
            )
        });
        if r.is_err() {
            failures.push(*f);
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn libdevice_refuses_dtypes_triton_has_no_version_of() {
    let src = "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    x = tl.load(x_ptr).to(tl.float16)\n    tl.store(y_ptr, libdevice.asin(x))\n    tl.store(y_ptr, libdevice.pow(tl.program_id(0), 2))\n";
    let e = errors(src, &[]);
    assert!(e.contains("k.py:7:36: error: `libdevice.asin` takes float32 or float64 (Triton's libdevice has no float16 version); convert first, e.g. `x.to(tl.float32)`"), "{e}");
    assert!(e.contains("k.py:8:21: error: `libdevice.pow` takes float32 or float64 (Triton's libdevice has no int32 version)"), "{e}");
}

#[test]
fn modules_of_other_files_are_read_through_their_attributes() {
    let src = r#"
import triton
import triton.language as tl
from .. import utils
import pkg.consts as C

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, utils.helper(x, C.OFFSET) + utils.SCALE, mask=m)
"#;
    let x = xs();
    let y = interp("pkg/ops/k.py", src, &cross_file_others(), &[], &x).unwrap();
    for (a, b) in x.iter().zip(&y) {
        let a = f64::from(*a);
        let want = a * 2.0 + 0.5 + a.tanh() + 2.0;
        assert!(
            (f64::from(*b) - want).abs() < 1e-5 * want.abs().max(1.0),
            "x = {a}: {b} vs {want}"
        );
    }
    let bad = src.replace("utils.SCALE", "utils.NOPE");
    let e = interp("pkg/ops/k.py", &bad, &cross_file_others(), &[], &x).unwrap_err();
    assert!(e.contains("has no top-level `NOPE` kwb can read"), "{e}");
}

#[test]
fn a_global_kwb_could_not_lex_is_never_read() {
    let src = "import triton\nimport triton.language as tl\nS = tl.constexpr(3 $ 4)\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    tl.store(y_ptr, S * 1.0)\n";
    let e = errors(src, &[]);
    assert!(
        e.contains(
            "`S` is a module-level name bound at line 3 by a statement kwb does not evaluate"
        ),
        "{e}"
    );
}
