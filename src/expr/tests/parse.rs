//! Lexer and parser: precedence, number literals, spans, error messages and recovery.

use super::{errs, p, sexpr};
use crate::expr::{parse, render_error, ExprKind, Span};

fn tree(src: &str) -> String {
    sexpr(&p(src))
}

#[test]
fn precedence_and_associativity() {
    let cases = [
        ("1 + 2 * 3", "(+ 1 (* 2 3))"),
        ("1 * 2 + 3", "(+ (* 1 2) 3)"),
        ("1 - 2 - 3", "(- (- 1 2) 3)"),
        ("8 / 4 / 2", "(/ (/ 8 4) 2)"),
        ("N // 2 % 3", "(% (// N 2) 3)"),
        ("2 ** 3 ** 2", "(** 2 (** 3 2))"),
        ("-2 ** 2", "(- (** 2 2))"),
        ("2 ** -1", "(** 2 (- 1))"),
        ("-x * y", "(* (- x) y)"),
        ("- -x", "(- (- x))"),
        ("!a && b", "(&& (! a) b)"),
        ("a || b && c", "(|| a (&& b c))"),
        ("a && b || c", "(|| (&& a b) c)"),
        ("a < b + 1 && c >= 2", "(&& (< a (+ b 1)) (>= c 2))"),
        ("(x == y) != true", "(!= (== x y) true)"),
        ("(N + 255) / 256", "(/ (+ N 255) 256)"),
        ("3 * N * 4", "(* (* 3 N) 4)"),
        ("(1 + 2) * 3", "(* (+ 1 2) 3)"),
        ("2 * x ** 2", "(* 2 (** x 2))"),
    ];
    for (src, want) in cases {
        assert_eq!(tree(src), want, "in `{src}`");
    }
}

#[test]
fn chained_comparisons_are_rejected_but_parenthesised_ones_are_fine() {
    let e = errs("a < b < c");
    assert_eq!(e.len(), 1);
    assert!(
        e[0].message.contains("cannot be chained"),
        "{}",
        e[0].message
    );
    assert_eq!(e[0].span, Span::new(6, 7));
    assert_eq!(tree("(a < b) < c"), "(< (< a b) c)");
    assert_eq!(tree("a == b"), "(== a b)");
    assert!(errs("x == y != true")[0]
        .message
        .contains("cannot be chained"));
}

#[test]
fn calls_with_positional_and_keyword_arguments() {
    assert_eq!(
        tree("f(a, b, axis=-1, keepdims=true)"),
        "(call f a b axis=(- 1) keepdims=true)"
    );
    assert_eq!(tree("cdiv(N, 256)"), "(call cdiv N 256)");
    assert_eq!(tree("g()"), "(call g)");
    assert_eq!(tree("f(x,)"), "(call f x)");
    assert_eq!(
        tree("exp(x - max(x, axis=-1, keepdims=true))"),
        "(call exp (- x (call max x axis=(- 1) keepdims=true)))"
    );
    let ExprKind::Call(c) = p("sum(x, axis=1)").kind else {
        panic!("not a call")
    };
    assert_eq!(c.func.span, Span::new(0, 3));
    assert_eq!(c.kwargs[0].name.span, Span::new(7, 11));
    assert_eq!(c.kwargs[0].value.span, Span::new(12, 13));
    assert!(c.kwarg("axis").is_some() && c.kwarg("keepdims").is_none());
}

#[test]
fn numbers_and_size_suffixes() {
    let int = |src: &str| match p(src).kind {
        ExprKind::Int(v) => v,
        k => panic!("`{src}` is {k:?}, not an int"),
    };
    let float = |src: &str| match p(src).kind {
        ExprKind::Float(v) => v,
        k => panic!("`{src}` is {k:?}, not a float"),
    };
    assert_eq!(int("1Mi"), 1_048_576);
    assert_eq!(int("16Mi"), 16 << 20);
    assert_eq!(int("256Mi"), 256 << 20);
    assert_eq!(int("2Gi"), 2 << 30);
    assert_eq!(int("1Ti"), 1 << 40);
    assert_eq!(int("1.5Ki"), 1536);
    assert_eq!(int("0.25Ki"), 256);
    assert_eq!(int("4K"), 4000);
    assert_eq!(
        int("1.1K"),
        1100,
        "exact decimal arithmetic, not 1100.0000000000002"
    );
    assert_eq!(int("3M"), 3_000_000);
    assert_eq!(int("2G"), 2_000_000_000);
    assert_eq!(int("1e3K"), 1_000_000);
    assert_eq!(int("1_000_000"), 1_000_000);
    assert_eq!(int("9223372036854775807"), i64::MAX);
    assert_eq!(float("0.5"), 0.5);
    assert_eq!(float(".5"), 0.5);
    assert_eq!(float("1e-3"), 1e-3);
    assert_eq!(float("2.5E6"), 2.5e6);
    assert_eq!(float("1e3"), 1000.0);
    assert_eq!(tree("-1"), "(- 1)");
    assert_eq!(tree("true"), "true");
}

#[test]
fn bad_numbers_are_reported_with_their_span() {
    let cases: [(&str, &str, Span); 7] = [
        ("1.3Ki", "is not a whole number", Span::new(0, 5)),
        (
            "N + 2N",
            "unknown suffix `N` on number `2N`",
            Span::new(4, 6),
        ),
        ("8Mb", "unknown suffix `Mb`", Span::new(0, 3)),
        ("99999999999999999999", "is too large", Span::new(0, 20)),
        ("16Ti * 1Mi", "", Span::new(0, 0)),
        ("1e", "expected digits after the exponent", Span::new(0, 2)),
        ("9Ti * 1Gi * 1Gi", "", Span::new(0, 0)),
    ];
    for (src, want, span) in cases {
        if want.is_empty() {
            // Large but valid literals: only the arithmetic could overflow, not the lexer.
            assert!(parse(src).is_ok(), "`{src}`");
            continue;
        }
        let e = errs(src);
        assert_eq!(e.len(), 1, "`{src}`: {e:?}");
        assert!(e[0].message.contains(want), "`{src}`: {}", e[0].message);
        assert_eq!(e[0].span, span, "`{src}`");
    }
    assert!(errs("1.3Ki")[0].message.contains("1331.2"));
    assert!(errs("0x10")[0].message.contains("hexadecimal"));
    assert_eq!(errs("((").len(), 1, "one error at the end, not one per `(`");
    assert!(errs("10000000Ti")[0].message.contains("too large"));
}

#[test]
fn spans_cover_the_source_of_each_node() {
    let e = p("N + 1");
    assert_eq!(e.span, Span::new(0, 5));
    let e = p("(N + 1) * 2");
    let ExprKind::Binary { lhs, rhs, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(
        lhs.span,
        Span::new(0, 7),
        "parentheses belong to the operand"
    );
    assert_eq!(rhs.span, Span::new(10, 11));
    assert_eq!(p("  cdiv(N, 256) ").span, Span::new(2, 14));
    assert_eq!(p("-x").span, Span::new(0, 2));
}

/// The one error `src` gives: its message and span.
fn one_error(src: &str) -> (String, Span) {
    let e = errs(src);
    assert_eq!(e.len(), 1, "`{src}` should give one error: {e:?}");
    (e[0].message.clone(), e[0].span)
}

#[test]
fn error_messages_and_spans() {
    let cases: &[(&str, &str, Span)] = &[
        (
            "N + * 2",
            "expected an expression after `+`, found `*`",
            Span::new(4, 5),
        ),
        (
            "cdiv(N,",
            "expected an argument or `)` after `,` in the call to `cdiv`, found end of input",
            Span::new(7, 7),
        ),
        (
            "cdiv(N",
            "expected `,` or `)` after an argument of `cdiv`, found end of input",
            Span::new(6, 6),
        ),
        ("3 $ 4", "unexpected character `$`", Span::new(2, 3)),
        (
            "",
            "expected an expression, found end of input",
            Span::new(0, 0),
        ),
        (
            "   ",
            "expected an expression, found end of input",
            Span::new(3, 3),
        ),
        (
            "(N + 1",
            "expected `)` to close this `(`, found end of input",
            Span::new(6, 6),
        ),
        ("N + 1)", "unmatched `)`", Span::new(5, 6)),
        ("N ) + 1", "unmatched `)`", Span::new(2, 3)),
        (
            "3 4",
            "expected an operator or end of input, found `4`",
            Span::new(2, 3),
        ),
        (
            "2 ^ 3",
            "unexpected character `^`; use `**` for powers",
            Span::new(2, 3),
        ),
        ("a & b", "did you mean `&&`?", Span::new(2, 3)),
        (
            "N = 3",
            "unexpected `=`: use `==` to compare",
            Span::new(2, 3),
        ),
        (
            "N +",
            "expected an expression after `+`, found end of input",
            Span::new(3, 3),
        ),
        (
            "f(axis=1, x)",
            "positional argument after keyword argument `axis`",
            Span::new(10, 11),
        ),
        (
            "sum(x, axis=1, axis=2)",
            "keyword argument `axis` is given twice",
            Span::new(15, 19),
        ),
        (
            "f(x y)",
            "expected `,` or `)` after an argument of `f`, found `y`",
            Span::new(4, 5),
        ),
        (
            "f(, x)",
            "expected an argument or `)`, found `,`",
            Span::new(2, 3),
        ),
        (
            "(* 2)",
            "expected an expression after `(`, found `*`",
            Span::new(1, 2),
        ),
        ("x é 2", "unexpected character `é`", Span::new(2, 4)),
        ("a, b", "unexpected `,`", Span::new(1, 2)),
    ];
    for (src, want, span) in cases {
        let (msg, got) = one_error(src);
        assert!(msg.contains(want), "`{src}`: got {msg:?}, want {want:?}");
        assert_eq!(got, *span, "`{src}`: {msg}");
    }
}

#[test]
fn recovery_reports_every_error() {
    let e = errs("N + * 2 - / 3");
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0].span, Span::new(4, 5));
    assert_eq!(e[1].span, Span::new(10, 11));
    assert!(e[1].message.contains("after `-`, found `/`"));

    let e = errs("cdiv(N, * 2) + 1.3Ki + $");
    let msgs: Vec<&str> = e.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(e.len(), 3, "{msgs:?}");
    assert!(msgs[0].contains("after `,`, found `*`"));
    assert!(msgs[1].contains("not a whole number"));
    assert!(msgs[2].contains("unexpected character `$`"));

    // Errors inside a call and after it.
    let e = errs("max(x +, axis=) * ");
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e.windows(2).all(|w| w[0].span.start <= w[1].span.start));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let src = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    let e = errs(&src);
    assert!(
        e[0].message.contains("nests too deeply"),
        "{}",
        e[0].message
    );
    let src = format!("{}x", "-".repeat(5000));
    assert!(errs(&src)[0].message.contains("nests too deeply"));
    // A long flat chain is fine up to the depth limit, and refused beyond it.
    assert!(parse(&vec!["1"; 150].join(" + ")).is_ok());
    assert!(errs(&vec!["1"; 300].join(" + "))[0]
        .message
        .contains("nests too deeply"));
    assert!(errs(&"1+".repeat(30_000))[0].message.contains("too long"));
}

#[test]
fn render_error_underlines_the_span() {
    let src = "N + * 2";
    let e = &errs(src)[0];
    assert_eq!(
        render_error(src, e),
        "error: expected an expression after `+`, found `*`\n  | N + * 2\n  |     ^"
    );
    let src = "cdiv(N,";
    assert_eq!(
        render_error(src, &errs(src)[0]).lines().last().unwrap(),
        "  |        ^"
    );
    let src = "1.3Ki * N";
    assert!(render_error(src, &errs(src)[0]).ends_with("\n  | 1.3Ki * N\n  | ^^^^^"));
    // Multi-line sources show the line holding the error.
    let src = "a +\n  b $";
    let r = render_error(src, &errs(src)[0]);
    assert!(r.ends_with("line 2:\n  |   b $\n  |     ^"), "{r}");
}

#[test]
fn display_prints_source_that_parses_back_to_the_same_tree() {
    for src in [
        "1 + 2 * 3",
        "(1 + 2) * 3",
        "1 - (2 - 3)",
        "2 ** 3 ** 2",
        "(2 ** 3) ** 2",
        "-2 ** 2",
        "(-2) ** 2",
        "2 ** -x",
        "-(a + b)",
        "!(a && b) || c",
        "(a < b) == (c < d)",
        "softmax(x, axis=-1)",
        "where(x > 0, x, 0.1 * x)",
        "cdiv(N, 256) * 1Mi",
        "1e-3 + 2.5E6",
    ] {
        let e = p(src);
        let printed = e.to_string();
        assert_eq!(
            sexpr(&p(&printed)),
            sexpr(&e),
            "`{src}` printed as `{printed}`"
        );
    }
    assert_eq!(p("(N+255)/256").to_string(), "(N + 255) / 256");
    assert_eq!(p("((a))*(b*c)").to_string(), "a * (b * c)");
}
