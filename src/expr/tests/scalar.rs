//! Scalar evaluation: arithmetic rules, checked overflow, built-ins, caller functions, errors.

use super::p;
use crate::expr::{eval_scalar, free_variables, Scalar, ScalarEnv, Span};
use std::collections::HashMap;

/// Variables from a map, plus `bytes(buffer)` over two buffers and `twice(x)` on values.
struct Env {
    vars: HashMap<String, Scalar>,
}

impl Env {
    fn new(vars: &[(&str, Scalar)]) -> Self {
        Env {
            vars: vars.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }
}

impl ScalarEnv for Env {
    fn var(&self, name: &str) -> Option<Scalar> {
        self.vars.get(name).copied()
    }

    fn var_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.vars.keys().cloned().collect();
        names.sort();
        names
    }

    fn call(&self, name: &str, args: &[Scalar]) -> Option<Result<Scalar, String>> {
        (name == "twice").then(|| match args {
            [Scalar::Int(v)] => Ok(Scalar::Int(2 * v)),
            _ => Err("twice expects one int".to_string()),
        })
    }

    fn call_ident(&self, name: &str, ident: &str) -> Option<Result<Scalar, String>> {
        (name == "bytes").then(|| match ident {
            "a" => Ok(Scalar::Int(400)),
            "c" => Ok(Scalar::Int(800)),
            _ => Err(format!("no buffer named `{ident}`; buffers: a, c")),
        })
    }
}

fn env() -> Env {
    Env::new(&[("N", Scalar::Int(1024)), ("M", Scalar::Int(3))])
}

fn ev(src: &str) -> Scalar {
    eval_scalar(&p(src), &env()).unwrap_or_else(|e| panic!("`{src}`: {e}"))
}

fn ev_err(src: &str) -> (String, Span) {
    match eval_scalar(&p(src), &env()) {
        Ok(v) => panic!("`{src}` gave {v}, expected an error"),
        Err(e) => (e.message, e.span),
    }
}

use Scalar::{Bool, Float, Int};

#[test]
fn workspace_size_expressions() {
    assert_eq!(ev("N"), Int(1024));
    assert_eq!(ev("256Mi"), Int(268_435_456));
    assert_eq!(ev("cdiv(N, 256)"), Int(4));
    assert_eq!(ev("3 * N * 4"), Int(12288));
    assert_eq!(ev("M * N"), Int(3072));
    assert_eq!(ev("min(N, 1024)"), Int(1024));
    assert_eq!(ev("(N + 256) / 256"), Int(5));
    assert_eq!(ev("(N + 255) // 256"), Int(4));
    assert_eq!(ev("bytes(a) + bytes(c)"), Int(1200));
    assert_eq!(ev("0.5"), Float(0.5));
    assert_eq!(ev("1e-3"), Float(1e-3));
    assert_eq!(ev("-1"), Int(-1));
    assert_eq!(ev("twice(N)"), Int(2048));
}

#[test]
fn division_semantics() {
    assert_eq!(ev("8 / 2"), Int(4));
    assert_eq!(ev("7 / 2"), Float(3.5));
    assert_eq!(ev("(N + 255) / 256"), Float(1279.0 / 256.0));
    assert_eq!(ev("-8 / 2"), Int(-4));
    assert_eq!(ev("7.0 / 2"), Float(3.5));
    assert_eq!(ev("7 // 2"), Int(3));
    assert_eq!(ev("-7 // 2"), Int(-4));
    assert_eq!(ev("7 // -2"), Int(-4));
    assert_eq!(ev("7.5 // 2"), Float(3.0));
    assert_eq!(ev("7 % 3"), Int(1));
    assert_eq!(ev("-7 % 3"), Int(2), "Euclidean: never negative");
    assert_eq!(ev("7 % -3"), Int(1));
    assert_eq!(ev("-7.5 % 2"), Float(0.5));
    for src in [
        "N / 0",
        "N // 0",
        "N % 0",
        "1.5 / 0",
        "1 / 0.0",
        "cdiv(N, 0)",
    ] {
        let (msg, span) = ev_err(src);
        assert!(msg.starts_with("division by zero in `"), "`{src}`: {msg}");
        assert_eq!(
            span.end as usize,
            src.len() - usize::from(src.ends_with(')'))
        );
    }
}

#[test]
fn integer_overflow_is_checked() {
    let big = Env::new(&[("N", Int(3_000_000))]);
    let e = eval_scalar(&p("N * N * N"), &big).unwrap_err();
    assert_eq!(e.message, "integer overflow in `N * N * N`");
    assert_eq!(e.span, Span::new(0, 9));
    assert_eq!(
        eval_scalar(&p("N * N"), &big).unwrap(),
        Int(9_000_000_000_000)
    );

    let (msg, span) = ev_err("1 + (9223372036854775807 + 1)");
    assert_eq!(msg, "integer overflow in `9223372036854775807 + 1`");
    assert_eq!(span, Span::new(4, 29));
    assert!(ev_err("2 ** 63").0.contains("overflow"));
    assert_eq!(ev("2 ** 62"), Int(1 << 62));
    assert!(ev_err("-9223372036854775807 - 2").0.contains("overflow"));
    assert!(ev_err("8Ti * 8Ti * 8Ti").0.contains("overflow"));
    assert!(ev_err("abs(-9223372036854775807 - 1)")
        .0
        .contains("overflow"));
    assert!(ev_err("pow(10, 19)").0.contains("overflow"));
    assert!(ev_err("1e308 * 10").0.contains("not a finite number"));
    assert_eq!(ev("1 ** 100000000000"), Int(1));
    assert_eq!(ev("(-1) ** 100000000001"), Int(-1));
}

#[test]
fn powers() {
    assert_eq!(ev("2 ** 10"), Int(1024));
    assert_eq!(ev("2 ** 3 ** 2"), Int(512));
    assert_eq!(ev("-2 ** 2"), Int(-4));
    assert_eq!(ev("(-2) ** 2"), Int(4));
    assert_eq!(ev("2 ** -1"), Float(0.5));
    assert_eq!(ev("4 ** 0.5"), Float(2.0));
}

#[test]
fn builtins() {
    assert_eq!(ev("cdiv(7, 2)"), Int(4));
    assert_eq!(ev("next_pow2(1000)"), Int(1024));
    assert_eq!(ev("next_pow2(1024)"), Int(1024));
    assert_eq!(ev("next_pow2(0)"), Int(1));
    assert_eq!(ev("next_pow2(3)"), Int(4));
    assert_eq!(ev("cdiv(8, 2)"), Int(4));
    assert_eq!(ev("cdiv(-7, 2)"), Int(-3));
    assert_eq!(ev("cdiv(7, -2)"), Int(-3));
    assert_eq!(ev("min(3, 1, 2)"), Int(1));
    assert_eq!(ev("max(3)"), Int(3));
    assert_eq!(ev("max(1, 2.5)"), Float(2.5));
    assert_eq!(ev("min(4, 2.5)"), Float(2.5));
    assert_eq!(ev("abs(-3)"), Int(3));
    assert_eq!(ev("abs(-2.5)"), Float(2.5));
    assert_eq!(ev("ceil(2.1)"), Int(3));
    assert_eq!(ev("floor(-2.1)"), Int(-3));
    assert_eq!(ev("round(2.5)"), Int(3));
    assert_eq!(ev("round(N)"), Int(1024));
    assert_eq!(ev("sqrt(16)"), Float(4.0));
    assert_eq!(ev("log2(N)"), Float(10.0));
    assert_eq!(ev("pow(2, 10)"), Int(1024));
    assert_eq!(ev("pow(2.0, 3)"), Float(8.0));
    assert_eq!(ev("int(3.9)"), Int(3));
    assert_eq!(ev("int(-3.9)"), Int(-3));
    assert_eq!(ev("int(true)"), Int(1));
    assert_eq!(ev("float(3)"), Float(3.0));
    assert_eq!(ev("int(log2(N))"), Int(10));
}

#[test]
fn builtin_errors_point_at_the_call_or_argument() {
    let (msg, span) = ev_err("cdiv(N)");
    assert_eq!(msg, "cdiv expects 2 arguments, got 1");
    assert_eq!(span, Span::new(0, 7));
    assert_eq!(ev_err("abs(1, 2)").0, "abs expects 1 argument, got 2");
    assert_eq!(ev_err("min()").0, "min expects at least 1 argument, got 0");
    let (msg, span) = ev_err("cdiv(N, 2.5)");
    assert!(
        msg.starts_with("cdiv expects integers, but `2.5` is a float"),
        "{msg}"
    );
    assert_eq!(span, Span::new(8, 11));
    assert!(ev_err("sqrt(-1)").0.contains("negative"));
    assert!(ev_err("log2(0)").0.contains("not positive"));
    assert!(ev_err("int(1e300)").0.contains("does not fit"));
    let (msg, span) = ev_err("min(N, axis=1)");
    assert_eq!(msg, "`min` takes no keyword arguments");
    assert_eq!(span, Span::new(7, 11));
}

#[test]
fn names_and_functions() {
    let e = eval_scalar(&p("N * M"), &Env::new(&[("N", Int(1))])).unwrap_err();
    let (msg, span) = (e.message, e.span);
    assert_eq!(msg, "unknown variable `M`; known: N");
    assert_eq!(span, Span::new(4, 5));
    assert_eq!(
        eval_scalar(&p("K"), &()).unwrap_err().message,
        "unknown variable `K`"
    );
    let (msg, span) = ev_err("bytes(q)");
    assert_eq!(msg, "no buffer named `q`; buffers: a, c");
    assert_eq!(span, Span::new(0, 8));
    let (msg, span) = ev_err("nope(N)");
    assert!(msg.starts_with("unknown function `nope`; built-in functions are: abs, cdiv"));
    assert_eq!(span, Span::new(0, 4));
    assert_eq!(ev_err("twice(1.5)").0, "twice expects one int");
    assert!(ev_err("twice(N, axis=0)").0.contains("keyword arguments"));
    // Built-in names are reserved: `min(N)` never reaches call_ident.
    assert_eq!(ev("min(N)"), Int(1024));

    let vars: HashMap<String, Scalar> = [("N".to_string(), Int(5))].into();
    assert_eq!(eval_scalar(&p("N + 1"), &vars).unwrap(), Int(6));
}

#[test]
fn comparisons_and_logic() {
    assert_eq!(ev("N > 0 && M < 5"), Bool(true));
    assert_eq!(ev("1 == 1.0"), Bool(true));
    assert_eq!(ev("N != 1024 || M >= 3"), Bool(true));
    assert_eq!(ev("!(N > 0)"), Bool(false));
    assert_eq!(ev("true == false"), Bool(false));
    // Short-circuit: the division by zero is never evaluated.
    assert_eq!(ev("true || 1 / 0 > 0"), Bool(true));
    assert_eq!(ev("false && 1 / 0 > 0"), Bool(false));
    assert!(ev_err("N && true")
        .0
        .contains("`&&` expects bools, but `N` is an int"));
    assert!(ev_err("true + 1")
        .0
        .contains("`+` expects numbers, but `true` is a bool"));
    assert!(ev_err("!N").0.contains("`!` expects a bool"));
    assert!(ev_err("-true").0.contains("`-` expects a number"));
    assert!(ev_err("true < 1").0.contains("bool"));
}

#[test]
fn free_variables_in_order_of_appearance() {
    assert_eq!(
        free_variables(&p("cdiv(N, B) + N * bytes(a) + max(1, x=M)")),
        ["N", "B", "a", "M"]
    );
    assert!(free_variables(&p("1 + cdiv(2, 3)")).is_empty());
}

#[test]
fn scalar_conversions() {
    assert_eq!(Int(5).as_u64(), Some(5));
    assert_eq!(Int(-1).as_u64(), None);
    assert_eq!(Float(256.0).as_u64(), Some(256));
    assert_eq!(Float(1.5).as_u64(), None);
    assert_eq!(Float(-0.0).as_u64(), Some(0));
    assert_eq!(Float(1e20).as_u64(), None);
    assert_eq!(Bool(true).as_u64(), None);
    assert_eq!(Int(3).as_f64(), Some(3.0));
    assert_eq!(Bool(true).as_f64(), None);
    assert_eq!(Float(-4.0).as_i64(), Some(-4));
    assert_eq!(Float(f64::NAN).as_i64(), None);
    assert_eq!(Int(7).to_string(), "7");
    assert_eq!(Float(7.0).to_string(), "7.0");
}
