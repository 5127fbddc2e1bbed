//! Checker tests: the IR for small kernels, specialisation, promotion, folding and errors.

use super::check;
use crate::tile::ir::{self, BinOp, Elem, Op, Scalar, StmtKind};
use crate::tile::{ArgKind, ConstValue, DType, KernelRequest};
use std::path::Path;

fn req(name: &str, args: Vec<ArgKind>, cx: &[(&str, i64)]) -> KernelRequest {
    KernelRequest {
        name: name.into(),
        args,
        constexprs: cx
            .iter()
            .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
            .collect(),
        num_warps: 4,
        sums: Default::default(),
    }
}

fn ptr(d: DType) -> ArgKind {
    ArgKind::Pointer(d)
}

fn int() -> ArgKind {
    ArgKind::Int {
        fits_i32: true,
        divisibility: 1,
        non_negative: true,
        one: false,
    }
}

/// Checks `body` as the kernel `k(x_ptr, y_ptr, n, B: tl.constexpr)` with fp32/fp16 pointers.
fn kernel(src: &str, r: KernelRequest) -> Result<ir::Kernel, Vec<String>> {
    let (mut ks, diags) = check(Path::new("t.tile"), src, &[r]);
    let errors: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.to_string())
        .collect();
    if errors.is_empty() {
        Ok(ks.remove(0))
    } else {
        Err(errors)
    }
}

fn body(lines: &str) -> String {
    let mut s = String::from("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, B: tl.constexpr):\n");
    for l in lines.lines() {
        s.push_str("    ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn std_req(dx: DType, dy: DType) -> KernelRequest {
    req("k", vec![ptr(dx), ptr(dy), int()], &[("B", 128)])
}

fn ok(lines: &str) -> ir::Kernel {
    match kernel(&body(lines), std_req(DType::F32, DType::F32)) {
        Ok(k) => k,
        Err(e) => panic!("{e:#?}"),
    }
}

fn errs(lines: &str) -> Vec<String> {
    match kernel(&body(lines), std_req(DType::F32, DType::F32)) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e,
    }
}

/// Every assignment's op and destination type, flattened.
fn assigns(stmts: &[ir::Stmt], k: &ir::Kernel, out: &mut Vec<(Op, ir::Type)>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { dst, op } => out.push((op.clone(), k.ty(*dst).clone())),
            StmtKind::If {
                then, otherwise, ..
            } => {
                assigns(then, k, out);
                assigns(otherwise, k, out);
            }
            StmtKind::For { body, .. } => assigns(body, k, out),
            StmtKind::While {
                cond_body, body, ..
            } => {
                assigns(cond_body, k, out);
                assigns(body, k, out);
            }
            _ => {}
        }
    }
}

fn all_assigns(k: &ir::Kernel) -> Vec<(Op, ir::Type)> {
    let mut v = Vec::new();
    assigns(&k.body, k, &mut v);
    v
}

#[test]
fn an_elementwise_kernel_checks() {
    let k = ok("pid = tl.program_id(0)\noffs = pid * B + tl.arange(0, B)\nm = offs < n\nx = tl.load(x_ptr + offs, mask=m, other=0.0)\ntl.store(y_ptr + offs, x * 2, mask=m)");
    assert_eq!(k.params.len(), 3);
    assert_eq!(k.params[0].divisibility, 16);
    assert_eq!(k.ty(k.params[0].var).elem, Elem::Ptr(Scalar::F32));
    assert!(matches!(
        k.body.last().map(|s| &s.kind),
        Some(StmtKind::Store { mask: Some(_), .. })
    ));
    assert_eq!(k.body.last().map(|s| s.loc.line), Some(10));
}

#[test]
fn literals_are_weak_and_fp16_stays_fp16() {
    let src = body("offs = tl.arange(0, B)\nx = tl.load(x_ptr + offs)\ny = x * 0.5 + 1\ntl.store(y_ptr + offs, y)");
    let k = kernel(&src, std_req(DType::F16, DType::F16)).unwrap();
    let a = all_assigns(&k);
    let mul = a
        .iter()
        .find(|(op, _)| matches!(op, Op::Binary { op: BinOp::Mul, .. }))
        .unwrap();
    assert_eq!(mul.1.elem, Elem::Scalar(Scalar::F16));
    assert_eq!(mul.1.shape, vec![128]);
    // A float literal with an int tile gives fp32; int / int gives fp32.
    let k =
        ok("offs = tl.arange(0, B)\ny = offs * 0.5\nz = offs / 2\ntl.store(y_ptr + offs, y + z)");
    let a = all_assigns(&k);
    let mul = a
        .iter()
        .find(|(op, _)| matches!(op, Op::Binary { op: BinOp::Mul, .. }))
        .unwrap();
    assert_eq!(mul.1.elem, Elem::Scalar(Scalar::F32));
    let div = a
        .iter()
        .find(|(op, _)| matches!(op, Op::Binary { op: BinOp::Div, .. }))
        .unwrap();
    assert_eq!(div.1.elem, Elem::Scalar(Scalar::F32));
}

#[test]
fn fp16_with_bf16_computes_in_fp32() {
    let src = "import triton.language as tl\n@triton.jit\ndef k(a_ptr, b_ptr, c_ptr, B: tl.constexpr):\n    o = tl.arange(0, B)\n    c = tl.load(a_ptr + o) + tl.load(b_ptr + o)\n    tl.store(c_ptr + o, c)\n";
    let r = req(
        "k",
        vec![ptr(DType::F16), ptr(DType::BF16), ptr(DType::F16)],
        &[("B", 64)],
    );
    let k = kernel(src, r).unwrap();
    let a = all_assigns(&k);
    let add = a
        .iter()
        .find(|(op, _)| matches!(op, Op::Binary { op: BinOp::Add, .. }))
        .unwrap();
    assert_eq!(add.1.elem, Elem::Scalar(Scalar::F32));
    // The store casts back to the pointee.
    assert!(a
        .iter()
        .any(|(op, t)| matches!(op, Op::Cast(_)) && t.elem == Elem::Scalar(Scalar::F16)));
}

#[test]
fn constexprs_fold_and_decide_ifs() {
    // `C: tl.constexpr`: a plain `C = ...` would be a runtime scalar, as in Triton.
    let k = ok("C: tl.constexpr = (B * 3 - 1) // 2 % 7\nif C == 3:\n    tl.store(y_ptr, 1.0)\nelse:\n    tl.store(y_ptr, 2.0)\nfor i in tl.static_range(3):\n    tl.store(y_ptr + i, 0.0)\nD = tl.cdiv(n, 16)\nE = max(B, 256) + min(1, 2)");
    // (128*3-1)//2 = 191, 191 % 7 = 2: the else branch only, and three unrolled stores.
    let stores = k
        .body
        .iter()
        .filter(|s| matches!(s.kind, StmtKind::Store { .. }))
        .count();
    assert_eq!(stores, 4);
    assert!(!k.body.iter().any(|s| matches!(s.kind, StmtKind::If { .. })));
    let a = all_assigns(&k);
    assert!(a
        .iter()
        .any(|(op, _)| matches!(op, Op::Const(ir::Const::Float(f)) if *f == 2.0)));
    assert!(!a
        .iter()
        .any(|(op, _)| matches!(op, Op::Const(ir::Const::Float(f)) if *f == 1.0)));
    // cdiv of a runtime scalar: integer division, truncating as Triton's.
    assert!(a
        .iter()
        .any(|(op, _)| matches!(op, Op::Binary { op: BinOp::Div, .. })));
}

#[test]
fn runtime_control_flow() {
    let k = ok("acc = tl.zeros([B], tl.float32)\nfor i in range(0, n, 2):\n    acc += tl.load(x_ptr + i * B + tl.arange(0, B))\nif n > 4:\n    s = 1.0\nelse:\n    s = 2.0\nj = 0\nwhile j < n:\n    j += 1\ntl.store(y_ptr + tl.arange(0, B), acc * s)");
    assert!(k
        .body
        .iter()
        .any(|s| matches!(s.kind, StmtKind::For { .. })));
    assert!(k.body.iter().any(|s| matches!(s.kind, StmtKind::If { .. })));
    assert!(k
        .body
        .iter()
        .any(|s| matches!(s.kind, StmtKind::While { .. })));
}

#[test]
fn errors_name_what_is_wrong() {
    let e = errs("x = tl.arrange(0, B)");
    assert!(
        e[0].contains("unknown name `tl.arrange`; did you mean `tl.arange`?"),
        "{e:?}"
    );
    let e = errs("x = tl.arange(0, 100)");
    assert!(e[0].contains("not a power of two"), "{e:?}");
    let e = errs("a = tl.arange(0, 64)\nb = tl.arange(0, 128)\nc = a + b");
    assert!(e[0].contains("cannot broadcast [64] with [128]"), "{e:?}");
    let e = errs("x = tl.load(x_ptr + tl.arange(0, B))\nif x > 0:\n    pass");
    assert!(e[0].contains("`if` on a tile"), "{e:?}");
    let e = errs("if n > 0:\n    t = 1\ntl.store(y_ptr, t)");
    assert!(e[0].contains("only one branch"), "{e:?}");
    let e = errs("acc = 0\nfor i in range(n):\n    acc = acc + 0.5");
    assert!(e[0].contains("carried around the loop"), "{e:?}");
    let e = errs("x = offz + 1\ny = x * 2\nz = tl.exp(y)");
    assert_eq!(e.len(), 1, "poison stops cascades: {e:?}");
    assert!(e[0].contains("did you mean") || e[0].contains("unknown name `offz`"));
    let e = errs("x = tl.dot(1, 2)\ny = unknown_thing");
    assert_eq!(e.len(), 2, "{e:?}");
}

#[test]
fn binding_errors_name_kernel_and_parameter() {
    let src = body("pass");
    let e = kernel(&src, req("k", vec![ptr(DType::F32)], &[("B", 1)])).unwrap_err();
    assert!(
        e[0].contains(
            "kernel `k` takes 3 launch argument(s) (x_ptr, y_ptr, n), but the workspace passes 1"
        ),
        "{e:?}"
    );
    let e = kernel(
        &src,
        req("k", vec![ptr(DType::F32), ptr(DType::F32), int()], &[]),
    )
    .unwrap_err();
    assert!(
        e[0].contains("needs a value for its constexpr `B`"),
        "{e:?}"
    );
    let e = kernel(
        &src,
        req(
            "k",
            vec![ptr(DType::F32), ptr(DType::F32), int()],
            &[("B", 1), ("BLOK", 2)],
        ),
    )
    .unwrap_err();
    assert!(e[0].contains("no constexpr parameter `BLOK`"), "{e:?}");
    let e = kernel(&src, req("kk", vec![], &[])).unwrap_err();
    assert!(e[0].contains("did you mean `k`?"), "{e:?}");
}

#[test]
fn helpers_are_inlined() {
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef twice(x, F: tl.constexpr = 2):\n    return x * F\n\n@triton.jit\ndef k(y_ptr, B: tl.constexpr):\n    o = tl.arange(0, B)\n    tl.store(y_ptr + o, twice(o.to(tl.float32)))\n\n@triton.jit\ndef r(y_ptr):\n    r(y_ptr)\n";
    let k = kernel(src, req("k", vec![ptr(DType::F32)], &[("B", 32)])).unwrap();
    assert!(all_assigns(&k)
        .iter()
        .any(|(op, _)| matches!(op, Op::Binary { op: BinOp::Mul, .. })));
    let e = kernel(src, req("r", vec![ptr(DType::F32)], &[])).unwrap_err();
    assert!(e[0].contains("recursion"), "{e:?}");
}

#[test]
fn cumsum_is_a_scan_with_an_add_in_the_promoted_dtype() {
    let k = ok("x = tl.load(x_ptr + tl.arange(0, B))\ny = tl.cumsum(x.to(tl.int8), 0, reverse=True)\ntl.store(y_ptr + tl.arange(0, B), y)");
    let scans: Vec<_> = all_assigns(&k)
        .into_iter()
        .filter_map(|(op, ty)| match op {
            Op::Scan {
                srcs,
                reverse,
                combine,
                ..
            } => Some((srcs, reverse, combine, ty)),
            _ => None,
        })
        .collect();
    let [(srcs, reverse, combine, ty)] = scans.as_slice() else {
        panic!("one scan expected: {scans:?}");
    };
    assert!(*reverse);
    assert_eq!(ty.elem, Elem::Scalar(Scalar::I32));
    assert_eq!(k.ty(srcs[0]).elem, Elem::Scalar(Scalar::I32));
    assert!(matches!(
        combine.body.as_slice(),
        [ir::Stmt {
            kind: StmtKind::Assign {
                op: Op::Binary { op: BinOp::Add, .. },
                ..
            },
            ..
        }]
    ));
}

#[test]
fn a_reduction_of_a_tuple_is_one_op_per_component() {
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef pick(a, i, b, j):\n    return tl.maximum(a, b), tl.minimum(i, j)\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, B: tl.constexpr):\n    x = tl.load(x_ptr + tl.arange(0, B))\n    v, i = tl.reduce((x, tl.arange(0, B)), 0, pick)\n    tl.store(y_ptr, v + i)\n";
    let k = kernel(src, std_req(DType::F32, DType::F32)).unwrap();
    let parts: Vec<u32> = all_assigns(&k)
        .into_iter()
        .filter_map(|(op, _)| match op {
            Op::ReduceWith {
                srcs,
                part,
                combine,
                ..
            } => {
                assert_eq!((srcs.len(), combine.results.len()), (2, 2));
                Some(part)
            }
            _ => None,
        })
        .collect();
    assert_eq!(parts, [0, 1]);
}

#[test]
fn philox_is_inlined_with_two_high_products_a_round() {
    let k = ok("o = tl.arange(0, B)\nr = tl.randint(7, o, n_rounds=3)\ntl.store(y_ptr + o, r.to(tl.float32))");
    let mulhi = all_assigns(&k)
        .iter()
        .filter(|(op, _)| {
            matches!(
                op,
                Op::Binary {
                    op: BinOp::MulHi,
                    ..
                }
            )
        })
        .count();
    assert_eq!(mulhi, 6);
}
