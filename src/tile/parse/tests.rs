//! Parser tests: precedence, statements, recovery, and `.py` modules.

use super::{parse, parse_ok, FileKind};
use crate::tile::ast::{BinaryOp, ExprKind, StmtKind, UnaryOp};

/// The expression of the first statement of the first kernel, printed with parentheses.
fn shape(src_expr: &str) -> String {
    let src = format!("@triton.jit\ndef k():\n    {src_expr}\n");
    let m = parse_ok(&src);
    match &m.funcs[0].body[0].kind {
        StmtKind::Expr(e) => show(e),
        other => panic!("{other:?}"),
    }
}

fn show(e: &crate::tile::ast::Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", show(lhs), op.symbol(), show(rhs))
        }
        ExprKind::Unary { op, operand } => {
            let o = match op {
                UnaryOp::Neg => "-",
                UnaryOp::Pos => "+",
                UnaryOp::Invert => "~",
                UnaryOp::Not => "not ",
            };
            format!("({o}{})", show(operand))
        }
        ExprKind::Logic { op, lhs, rhs } => format!("({} {:?} {})", show(lhs), op, show(rhs)),
        ExprKind::Compare { first, rest } => {
            let mut s = format!("({}", show(first));
            for (op, e) in rest {
                s.push_str(&format!(" {op:?} {}", show(e)));
            }
            s + ")"
        }
        ExprKind::IfExp {
            cond,
            then,
            otherwise,
        } => {
            format!(
                "({} if {} else {})",
                show(then),
                show(cond),
                show(otherwise)
            )
        }
        ExprKind::Attr { value, attr } => format!("{}.{}", show(value), attr.name),
        ExprKind::Call { func, args, kwargs } => {
            let mut parts: Vec<String> = args.iter().map(show).collect();
            parts.extend(
                kwargs
                    .iter()
                    .map(|k| format!("{}={}", k.name.name, show(&k.value))),
            );
            format!("{}({})", show(func), parts.join(", "))
        }
        other => format!("{other:?}"),
    }
}

#[test]
fn python_precedence() {
    assert_eq!(shape("a + b * c"), "(a + (b * c))");
    assert_eq!(shape("a - b - c"), "((a - b) - c)");
    assert_eq!(shape("-a ** 2"), "(-(a ** 2))");
    assert_eq!(shape("a ** -b"), "(a ** (-b))");
    assert_eq!(shape("a & b | c ^ d"), "((a & b) | (c ^ d))");
    assert_eq!(shape("a << 1 + b"), "(a << (1 + b))");
    assert_eq!(
        shape("a < b and not c or d"),
        "(((a Lt b) And (not c)) Or d)"
    );
    assert_eq!(shape("x if c else y + 1"), "(x if c else (y + 1))");
    assert_eq!(shape("a // b % c"), "((a // b) % c)");
    assert_eq!(
        shape("tl.load(p + o, mask=m, other=0.0)"),
        "tl.load((p + o), mask=m, other=0.0)"
    );
    assert_eq!(shape("x.to(tl.float32).T"), "x.to(tl.float32).T");
}

#[test]
fn statements_and_params() {
    let src = "import triton.language as tl\nfrom triton.language import load as ld, store\n\n@triton.jit\ndef k(a_ptr, n: int, B: tl.constexpr = 128, c=3):\n    x, y = 1, 2\n    x += 1\n    if x:\n        pass\n    elif y:\n        y = 2\n    else:\n        return\n    for i in range(4):\n        y = y * 2\n    while y < 3:\n        y = y + 1\n    assert x, \"msg\"\n";
    let m = parse_ok(src);
    assert_eq!(m.imports.len(), 2);
    assert_eq!(m.imports[0].alias.as_deref(), Some("tl"));
    assert_eq!(
        m.imports[1].names[0],
        ("load".to_string(), Some("ld".to_string()))
    );
    let f = &m.funcs[0];
    assert_eq!(f.params.len(), 4);
    assert!(f.params[2].constexpr && f.params[2].default.is_some());
    assert!(!f.params[1].constexpr);
    assert_eq!(f.body.len(), 6);
    assert!(matches!(
        &f.body[1].kind,
        StmtKind::AugAssign {
            op: BinaryOp::Add,
            ..
        }
    ));
    match &f.body[2].kind {
        StmtKind::If { otherwise, .. } => assert!(matches!(otherwise[0].kind, StmtKind::If { .. })),
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_recover_to_the_next_statement() {
    let src = "@triton.jit\ndef k(x):\n    a = 1 +\n    b = lambda q: q\n    with x:\n        pass\n    c = [i for i in x]\n    d = 1\n";
    let (m, errors) = parse(src, FileKind::Tile);
    assert_eq!(m.funcs.len(), 1);
    assert!(m.funcs[0].has_errors);
    let msgs: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert!(msgs.iter().any(|m| m.contains("`lambda`")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("`with`")), "{msgs:?}");
    assert!(
        msgs.iter().any(|m| m.contains("list comprehensions")),
        "{msgs:?}"
    );
}

#[test]
fn py_modules_keep_only_jit_functions() {
    let src = "import triton\nimport triton.language as tl\nclass A:\n    x = {1: 2}\n\n@triton.jit\ndef k(\n    a,\n    B: tl.constexpr,\n):\n    pass\n\ndef host(x):\n    return [i for i in x] $\n\nif __name__ == \"__main__\":\n    print(f\"{1}\")\n";
    let (m, errors) = parse(src, FileKind::Python);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(m.funcs.len(), 1);
    assert_eq!(m.funcs[0].params.len(), 2);
    // The same text as a .tile file: the host code is an error.
    let (_, errors) = parse(src, FileKind::Tile);
    assert!(!errors.is_empty());
}

#[test]
fn chains_past_the_limit_are_errors_and_up_to_it_parse() {
    let limit = super::MAX_CHAIN;
    for (sep, atom) in [(" or ", "a"), (" and ", "a"), (" + ", "a"), ("", "a.b")] {
        let long = |n: usize| {
            if sep.is_empty() {
                // A postfix chain: `a.b.b.b…`.
                format!("a{}", ".b".repeat(n))
            } else {
                vec![atom; n + 1].join(sep)
            }
        };
        let ok = format!("@triton.jit\ndef k():\n    x = {}\n", long(limit - 1));
        let (_, errors) = parse(&ok, FileKind::Tile);
        assert!(errors.is_empty(), "{sep:?} at {}: {errors:?}", limit - 1);
        let bad = format!("@triton.jit\ndef k():\n    x = {}\n", long(limit + 1));
        let (_, errors) = parse(&bad, FileKind::Tile);
        assert!(
            errors.iter().any(|e| e.message.contains("too long")),
            "{sep:?} at {}: {errors:?}",
            limit + 1
        );
    }
}
