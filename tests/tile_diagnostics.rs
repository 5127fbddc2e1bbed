//! The tile language's front end, end to end: golden diagnostics for every kind of error
//! (`tests/tile/err_*.tile` → `err_*.diag`, `KWB_BLESS=1` rewrites them) and the shipped tile
//! kernels checking cleanly for the requests their workspaces make.
//!
//! Each fixture's first line says the request it is checked with:
//! `# request: NAME ARG... [CONST=VALUE...]`, where an ARG is `f32*` (a pointer to a buffer of
//! that dtype), `i32`/`i64` (an integer that fits in 32 bits or not) or `f32` (a float).

use kwb::diag;
use kwb::tile::ir::{Elem, Scalar, StmtKind};
use kwb::tile::{check, signatures, ArgKind, ConstValue, DType, KernelRequest};
use std::path::{Path, PathBuf};

fn parse_request(header: &str) -> KernelRequest {
    let spec = header
        .strip_prefix("# request:")
        .unwrap_or_else(|| panic!("a fixture starts with `# request: ...`, found {header:?}"));
    let mut words = spec.split_whitespace();
    let name = words.next().expect("a kernel name").to_string();
    let mut args = Vec::new();
    let mut constexprs = Vec::new();
    for w in words {
        if let Some((k, v)) = w.split_once('=') {
            let v = if let Ok(i) = v.parse::<i64>() {
                ConstValue::Int(i)
            } else if let Ok(f) = v.parse::<f64>() {
                ConstValue::Float(f)
            } else {
                ConstValue::Bool(v == "True")
            };
            constexprs.push((k.to_string(), v));
        } else if let Some(d) = w.strip_suffix('*') {
            args.push(ArgKind::Pointer(DType::parse(d).expect("a dtype")));
        } else {
            args.push(match w {
                "i32" => ArgKind::Int {
                    fits_i32: true,
                    divisibility: 1,
                    non_negative: true,
                    one: false,
                },
                "i64" => ArgKind::Int {
                    fits_i32: false,
                    divisibility: 1,
                    non_negative: true,
                    one: false,
                },
                "f32" => ArgKind::Float,
                other => panic!("unknown argument kind {other}"),
            });
        }
    }
    KernelRequest {
        name,
        args,
        constexprs,
        num_warps: 4,
        sums: Default::default(),
    }
}

/// The diagnostics of one fixture, rendered as the CLI shows them (with snippets).
fn render(path: &Path) -> String {
    let source = std::fs::read_to_string(path).unwrap();
    let req = parse_request(source.lines().next().unwrap_or(""));
    let (_, diags) = check::check(path, &source, &[req]);
    diags.iter().map(|d| diag::with_snippet(d) + "\n").collect()
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("tests/tile")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "tile")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("err_"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn diagnostics_match_their_goldens() {
    let bless = std::env::var_os("KWB_BLESS").is_some();
    let mut failures = Vec::new();
    let files = fixtures();
    assert!(
        files.len() >= 10,
        "expected the error fixtures, found {files:?}"
    );
    for f in files {
        let got = render(&f);
        assert!(
            got.contains("error: "),
            "{} gave no error:\n{got}",
            f.display()
        );
        let golden = f.with_extension("diag");
        if bless {
            std::fs::write(&golden, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_default();
        if want != got {
            failures.push(format!("--- {}\n{got}", golden.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "diagnostics differ (KWB_BLESS=1 rewrites):\n{}",
        failures.join("\n")
    );
}

fn ptr(d: DType) -> ArgKind {
    ArgKind::Pointer(d)
}

fn int() -> ArgKind {
    ArgKind::Int {
        fits_i32: true,
        divisibility: 16,
        non_negative: true,
        one: false,
    }
}

fn request(name: &str, args: Vec<ArgKind>, cx: &str, v: i64, warps: u32) -> KernelRequest {
    KernelRequest {
        name: name.into(),
        args,
        constexprs: vec![(cx.into(), ConstValue::Int(v))],
        num_warps: warps,
        sums: Default::default(),
    }
}

fn check_clean(file: &str, req: KernelRequest) -> kwb::tile::ir::Kernel {
    let path = Path::new(file);
    let source = std::fs::read_to_string(path).unwrap();
    let (mut kernels, diags) = check::check(path, &source, std::slice::from_ref(&req));
    assert!(diags.is_empty(), "{file}: {}", diag::render_all(&diags));
    assert_eq!(kernels.len(), 1);
    let k = kernels.remove(0);
    assert_eq!(k.name, req.name);
    assert_eq!(k.params.len(), req.args.len());
    assert_eq!(k.num_warps, req.num_warps);
    k
}

#[test]
fn shipped_kernels_check_cleanly() {
    let k = check_clean(
        "kernels/elementwise-add/v8.tile",
        request(
            "add_kernel",
            vec![ptr(DType::F16), ptr(DType::F16), ptr(DType::F16), int()],
            "BLOCK",
            4096,
            4,
        ),
    );
    assert!(matches!(
        k.body.last().map(|s| &s.kind),
        Some(StmtKind::Store { .. })
    ));
    assert_eq!(k.ty(k.params[0].var).elem, Elem::Ptr(Scalar::F16));
    check_clean(
        "kernels/gelu/v4.tile",
        request(
            "gelu_kernel",
            vec![ptr(DType::F32), ptr(DType::F32), int()],
            "BLOCK",
            2048,
            4,
        ),
    );
    for block in [1024, 4096, 32768] {
        let args = vec![ptr(DType::F32), ptr(DType::F32), int(), int()];
        check_clean(
            "kernels/softmax/v5.tile",
            request("softmax_row", args.clone(), "BLOCK", block, 8),
        );
        let k = check_clean(
            "kernels/softmax/v6.tile",
            request("softmax_persistent", args, "BLOCK", block, 8),
        );
        assert!(k
            .body
            .iter()
            .any(|s| matches!(s.kind, StmtKind::For { .. })));
        let args = vec![ptr(DType::F32), ptr(DType::F32), int(), int(), int()];
        check_clean(
            "kernels/softmax/fused_softmax.py",
            request("fused_softmax", args, "BLOCK_SIZE", block, 8),
        );
    }
    // The odd size (`emulate: true`): N = 1000 is not divisible by 16, BLOCK = 1024.
    let odd = ArgKind::Int {
        fits_i32: true,
        divisibility: 1,
        non_negative: true,
        one: false,
    };
    check_clean(
        "kernels/softmax/v5.tile",
        request(
            "softmax_row",
            vec![ptr(DType::F32), ptr(DType::F32), odd.clone(), odd],
            "BLOCK",
            1024,
            4,
        ),
    );
}

#[test]
fn signatures_list_kernels_and_skip_host_code() {
    let path = Path::new("kernels/softmax/fused_softmax.py");
    let sigs = signatures(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(sigs.len(), 1);
    assert_eq!(sigs[0].name, "fused_softmax");
    assert_eq!(sigs[0].line, 10);
    let names: Vec<(&str, bool)> = sigs[0]
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.constexpr))
        .collect();
    assert_eq!(names.last(), Some(&("BLOCK_SIZE", true)));
    assert_eq!(names.len(), 6);
    // A syntax error is reported, with its position.
    let Err(bad) = signatures(Path::new("x.tile"), "@triton.jit\ndef k(a b):\n    pass\n") else {
        panic!("a syntax error must fail");
    };
    assert_eq!((bad[0].line, bad[0].column), (Some(2), Some(9)));
}

#[test]
fn signatures_mark_helpers_that_other_kernels_call() {
    let src = [
        "import triton",
        "import triton.language as tl",
        "",
        "@triton.jit",
        "def scale(x, factor):",
        "    return x * factor",
        "",
        "@triton.jit",
        "def rescale(x):",
        "    return x",
        "",
        "@triton.jit",
        "def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
        "    offs = tl.arange(0, BLOCK)",
        "    tl.store(y_ptr + offs, scale (tl.load(x_ptr + offs), 2.0))",
        "",
    ]
    .join("\n");
    let sigs = signatures(Path::new("helper.tile"), &src).unwrap();
    let called: Vec<(&str, bool)> = sigs.iter().map(|s| (s.name.as_str(), s.called)).collect();
    // `scale (` counts as a call; `rescale` is never called (and `scale` inside its name is not).
    assert_eq!(
        called,
        vec![("scale", true), ("rescale", false), ("scale_kernel", false)]
    );
}
