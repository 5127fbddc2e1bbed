//! Array evaluation: broadcasting, reductions, softmax, special functions, matmul, errors.

use super::p;
use crate::expr::array::special::erf;
use crate::expr::{eval_array, ArrayEnv, ArrayValue, Span, Tensor};
use std::collections::HashMap;

fn t(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(shape.to_vec(), data.to_vec()).unwrap()
}

/// x: [[1, 2, 3], [4, 5, 6]]; v: [10, 20, 30]; c: [[1], [2]]; m: [[-1, 2, -3], [4, -5, 6]];
/// w: 3x2; alpha: 0.5 (a scalar).
struct Env(HashMap<String, Tensor>);

impl ArrayEnv for Env {
    fn var(&self, name: &str) -> Option<ArrayValue<'_>> {
        if name == "alpha" {
            return Some(ArrayValue::Scalar(0.5));
        }
        self.0.var(name)
    }

    fn var_names(&self) -> Vec<String> {
        let mut names = self.0.var_names();
        names.push("alpha".into());
        names
    }
}

fn env() -> Env {
    let mut m = HashMap::new();
    m.insert("x".into(), t(&[2, 3], &[1., 2., 3., 4., 5., 6.]));
    m.insert("v".into(), t(&[3], &[10., 20., 30.]));
    m.insert("c".into(), t(&[2, 1], &[1., 2.]));
    m.insert("m".into(), t(&[2, 3], &[-1., 2., -3., 4., -5., 6.]));
    m.insert("w".into(), t(&[3, 2], &[1., 2., 3., 4., 5., 6.]));
    m.insert("u".into(), t(&[2], &[1., 2.]));
    Env(m)
}

fn ev(src: &str) -> Tensor {
    eval_array(&p(src), &env()).unwrap_or_else(|e| panic!("`{src}`: {e}"))
}

fn ev_err(src: &str) -> (String, Span) {
    match eval_array(&p(src), &env()) {
        Ok(v) => panic!("`{src}` gave {v:?}, expected an error"),
        Err(e) => (e.message, e.span),
    }
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn broadcasting_binary_operators() {
    assert_eq!(ev("x + v"), t(&[2, 3], &[11., 22., 33., 14., 25., 36.]));
    assert_eq!(ev("v - x").data, [9., 18., 27., 6., 15., 24.]);
    assert_eq!(ev("x * c"), t(&[2, 3], &[1., 2., 3., 8., 10., 12.]));
    assert_eq!(ev("c * v"), t(&[2, 3], &[10., 20., 30., 20., 40., 60.]));
    assert_eq!(ev("x * 2 + 1").data, [3., 5., 7., 9., 11., 13.]);
    assert_eq!(ev("alpha * x").data, [0.5, 1., 1.5, 2., 2.5, 3.]);
    assert_eq!(ev("x ** 2").data, [1., 4., 9., 16., 25., 36.]);
    assert_eq!(ev("x % 4").data, [1., 2., 3., 0., 1., 2.]);
    assert_eq!(ev("-x % 4").data, [3., 2., 1., 0., 3., 2.]);
    assert_eq!(ev("x // 4").data, [0., 0., 0., 1., 1., 1.]);
    assert_eq!(ev("x / 2").data, [0.5, 1., 1.5, 2., 2.5, 3.]);
    assert_eq!(ev("-x").data, [-1., -2., -3., -4., -5., -6.]);
    assert_eq!(ev("x > 3").data, [0., 0., 0., 1., 1., 1.]);
    assert_eq!(ev("x == v / 10").data, [1., 1., 1., 0., 0., 0.]);
    assert_eq!(ev("x > 1 && x < 5").data, [0., 1., 1., 1., 0., 0.]);
    assert_eq!(ev("!(x > 3) || x == 6").data, [1., 1., 1., 0., 0., 1.]);
    assert_eq!(ev("1 / 0").data, [f64::INFINITY], "IEEE, not an error");
    assert_eq!(ev("3 + 4"), Tensor::scalar(7.0));
    // Env arrays are borrowed, not consumed or changed.
    assert_eq!(ev("x").data, [1., 2., 3., 4., 5., 6.]);
}

#[test]
fn shape_errors_name_both_shapes_and_the_node() {
    let (msg, span) = ev_err("1 + (x + u)");
    assert_eq!(msg, "cannot broadcast shapes [2, 3] and [2] in `x + u`");
    assert_eq!(span, Span::new(4, 11));
    let (msg, _) = ev_err("where(x > 0, u, x)");
    assert!(msg.contains("[2, 3], [2] and [2, 3]"), "{msg}");
    let (msg, span) = ev_err("matmul(x, x)");
    assert!(msg.contains("[2, 3] and [2, 3] do not fit"), "{msg}");
    assert_eq!(span, Span::new(0, 12));
    let (msg, span) = ev_err("sum(x, axis=2)");
    assert_eq!(
        msg,
        "axis 2 is out of range for shape [2, 3] (valid: -2 to 1)"
    );
    assert_eq!(span, Span::new(12, 13));
    assert!(ev_err("sum(x, axis=-3)").0.contains("out of range"));
    assert!(ev_err("sum(x, axis=0.5)").0.contains("whole number"));
    let (msg, span) = ev_err("sum(x, axes=0)");
    assert_eq!(
        msg,
        "sum got an unexpected keyword argument `axes`; it accepts: axis, keepdims"
    );
    assert_eq!(span, Span::new(7, 11));
    assert_eq!(
        ev_err("exp(x, y)").0,
        "exp expects 1 positional argument, got 2"
    );
    assert!(ev_err("where(x, x)")
        .0
        .contains("expects 3 positional arguments"));
    let (msg, span) = ev_err("y + 1");
    assert_eq!(msg, "unknown array `y`; known: c, m, u, v, w, x, alpha");
    assert_eq!(span, Span::new(0, 1));
    let (msg, span) = ev_err("2 * frob(x)");
    assert!(msg.starts_with("unknown function `frob`; array expressions can use: abs,"));
    assert_eq!(span, Span::new(4, 8));
}

#[test]
fn reductions_with_axes_and_keepdims() {
    assert_eq!(ev("sum(x, axis=1)"), t(&[2], &[6., 15.]));
    assert_eq!(ev("sum(x, axis=-1)"), t(&[2], &[6., 15.]));
    assert_eq!(ev("sum(x, axis=0)"), t(&[3], &[5., 7., 9.]));
    assert_eq!(
        ev("sum(x, axis=-2, keepdims=true)"),
        t(&[1, 3], &[5., 7., 9.])
    );
    assert_eq!(ev("sum(x, axis=-1, keepdims=true)"), t(&[2, 1], &[6., 15.]));
    assert_eq!(ev("sum(x)"), Tensor::scalar(21.0));
    assert_eq!(ev("sum(x, keepdims=true)"), t(&[1, 1], &[21.]));
    assert_eq!(ev("mean(x, axis=0)"), t(&[3], &[2.5, 3.5, 4.5]));
    assert_eq!(ev("mean(x)"), Tensor::scalar(3.5));
    assert_eq!(ev("max(m, axis=-1)"), t(&[2], &[2., 6.]));
    assert_eq!(ev("max(m, axis=0)"), t(&[3], &[4., 2., 6.]));
    assert_eq!(ev("min(m, axis=1, keepdims=true)"), t(&[2, 1], &[-3., -5.]));
    assert_eq!(ev("min(m, axis=0)"), t(&[3], &[-1., -5., -3.]));
    assert_eq!(ev("max(m)"), Tensor::scalar(6.0));
    assert_eq!(ev("min(m)"), Tensor::scalar(-5.0));
    assert_eq!(
        ev("x - max(x, axis=-1, keepdims=true)").data,
        [-2., -1., 0., -2., -1., 0.]
    );
    // Elementwise forms take two arguments.
    assert_eq!(ev("max(m, 0)").data, [0., 2., 0., 4., 0., 6.]);
    assert_eq!(ev("min(x, v / 5)").data, [1., 2., 3., 2., 4., 6.]);
    assert!(
        ev("max(m, 0 / 0)").data.iter().all(|v| v.is_nan()),
        "NaN wins"
    );
}

#[test]
fn reductions_over_a_middle_axis_match_a_plain_loop() {
    let shape = [3usize, 37, 5];
    let a = Tensor::from_fn(shape.to_vec(), |i| ((i * 7919) % 101) as f64 - 50.0);
    let env: HashMap<String, Tensor> = [("a".to_string(), a.clone())].into();
    for (src, want_max) in [("sum(a, axis=1)", false), ("max(a, axis=-2)", true)] {
        let got = eval_array(&p(src), &env).unwrap();
        assert_eq!(got.shape, [3, 5]);
        for o in 0..3 {
            for j in 0..5 {
                let col = (0..37).map(|k| a.get(&[o, k, j]).unwrap());
                let want = if want_max {
                    col.fold(f64::NEG_INFINITY, f64::max)
                } else {
                    col.sum()
                };
                assert_eq!(got.get(&[o, j]), Some(want), "{src} at [{o}, {j}]");
            }
        }
    }
}

#[test]
fn long_sums_are_accurate() {
    // 0.1 summed a million times: naive summation drifts by ~1e-6; pairwise stays near 1e-10.
    let n = 1 << 20;
    let env: HashMap<String, Tensor> = [("a".to_string(), Tensor::full(vec![n], 0.1))].into();
    let s = eval_array(&p("sum(a)"), &env).unwrap().item().unwrap();
    assert!((s - 0.1 * n as f64).abs() < 1e-8, "{s}");
    let env: HashMap<String, Tensor> = [("a".to_string(), Tensor::full(vec![n, 2], 0.1))].into();
    let s = eval_array(&p("sum(a, axis=0)"), &env).unwrap();
    assert!(
        s.data.iter().all(|v| (v - 0.1 * n as f64).abs() < 1e-8),
        "{s:?}"
    );
}

#[test]
fn softmax_is_normalised_and_stable() {
    let s = ev("softmax(x, axis=-1)");
    assert_eq!(s.shape, [2, 3]);
    for row in s.data.chunks(3) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    }
    // Rows differ by a constant shift, so their softmaxes are equal.
    close(&s.data[..3], &s.data[3..], 1e-15);
    close(
        &s.data[..3],
        &[0.09003057317038046, 0.24472847105479767, 0.6652409557748219],
        1e-15,
    );
    assert_eq!(ev("softmax(x)"), s, "axis defaults to -1");
    let s0 = ev("softmax(x, axis=0)");
    for j in 0..3 {
        assert!((s0.data[j] + s0.data[j + 3] - 1.0).abs() < 1e-15);
    }
    // Huge inputs would overflow exp without the max shift.
    let big = ev("softmax(x * 1000)");
    assert!(big.data.iter().all(|v| v.is_finite()));
    assert!((big.data[2] - 1.0).abs() < 1e-15);
    assert!(ev_err("softmax(2)").0.contains("needs an array"));
    let ls = ev("log_softmax(x, axis=1)");
    close(&ls.data, &ev("log(softmax(x, axis=1))").data, 1e-14);
    close(
        &ev("log_softmax(x, axis=0)").data,
        &ev("log(softmax(x, axis=0))").data,
        1e-14,
    );
    close(
        &ev("exp(x - max(x, axis=-1, keepdims=true)) / sum(exp(x - max(x, axis=-1, keepdims=true)), axis=-1, keepdims=true)").data,
        &s.data,
        1e-15,
    );
}

#[test]
fn elementwise_functions() {
    assert_eq!(ev("relu(m)").data, [0., 2., 0., 4., 0., 6.]);
    assert_eq!(ev("abs(m)").data, [1., 2., 3., 4., 5., 6.]);
    close(&ev("exp(0)").data, &[1.0], 0.0);
    close(&ev("sigmoid(0)").data, &[0.5], 0.0);
    assert_eq!(ev("sigmoid(-1000)").data, [0.0]);
    assert_eq!(ev("sigmoid(1000)").data, [1.0]);
    close(&ev("gelu_tanh(1.0)").data, &[0.8411919906082768], 1e-15);
    close(&ev("gelu_erf(1.0)").data, &[0.8413447460685429], 1e-15);
    close(
        &ev("gelu_tanh(-3.0)").data,
        &[-0.0036373920817729943],
        1e-12,
    );
    close(&ev("silu(1)").data, &[0.7310585786300049], 1e-15);
    close(
        &ev("sqrt(4) + rsqrt(4) + log2(8) + log(1)").data,
        &[5.5],
        1e-15,
    );
    close(
        &ev("tanh(0.5) + sin(0) + cos(0)").data,
        &[1.46211715726001],
        1e-14,
    );
    close(&ev("pow(x, 0.5)").data[..1], &[1.0], 0.0);
    assert_eq!(ev("floor(-1.5) + ceil(1.2) + round(2.5)").data, [3.0]);
}

#[test]
// The reference values are written with all the digits they were computed to.
#[allow(clippy::excessive_precision)]
fn erf_is_accurate() {
    assert!((erf(0.5) - 0.5204998778130465).abs() < 1e-14);
    assert!((erf(-3.0) - -0.9999779095030014).abs() < 1e-14);
    // Reference values from 30-digit arithmetic; the bound is relative.
    let table = [
        (1e-10, 1.1283791670955125739e-10),
        (0.001, 0.0011283787909692363799),
        (0.1, 0.1124629160182848922),
        (0.5, 0.52049987781304653768),
        (0.75, 0.7111556336535151316),
        (1.0, 0.84270079294971486934),
        (1.5, 0.96610514647531072707),
        (1.999, 0.99530155665137051003),
        (2.0, 0.99532226501895273416),
        (2.5, 0.99959304798255504106),
        (3.0, 0.99997790950300141456),
        (3.5, 0.99999925690162765859),
        (4.2, 0.99999999714450582041),
        (5.0, 0.99999999999846254021),
        (5.9, 0.9999999999999999281),
        (-0.3, -0.32862675945912742764),
        (-3.0, -0.99997790950300141456),
    ];
    for (x, want) in table {
        let got = erf(x);
        assert!(
            ((got - want) / want).abs() < 1.5e-15,
            "erf({x}) = {got}, want {want}"
        );
    }
    assert_eq!(erf(0.0), 0.0);
    assert_eq!(erf(7.0), 1.0);
    assert_eq!(erf(-40.0), -1.0);
    assert_eq!(erf(f64::INFINITY), 1.0);
    assert!(erf(f64::NAN).is_nan());
    assert_eq!(ev("erf(0.5)").data, [erf(0.5)]);
    // Odd and monotone across the branch points.
    let mut prev = -1.0;
    for i in -800..=800 {
        let x = i as f64 * 0.01;
        assert_eq!(erf(-x), -erf(x));
        assert!(erf(x) >= prev, "not monotone at {x}");
        prev = erf(x);
    }
}

#[test]
fn where_selects_with_broadcasting() {
    assert_eq!(
        ev("where(m > 0, m, 0.1 * m)").data,
        [-0.1, 2., -0.30000000000000004, 4., -0.5, 6.]
    );
    assert_eq!(
        ev("where(c > 1, v, 0)"),
        t(&[2, 3], &[0., 0., 0., 10., 20., 30.])
    );
    assert_eq!(ev("where(1, x, 0)").data, [1., 2., 3., 4., 5., 6.]);
    assert_eq!(ev("where(0, 1, v)").data, [10., 20., 30.]);
}

#[test]
fn matmul_of_vectors_and_matrices() {
    assert_eq!(ev("matmul(x, w)"), t(&[2, 2], &[22., 28., 49., 64.]));
    assert_eq!(ev("matmul(w, x)").shape, [3, 3]);
    assert_eq!(ev("matmul(w, x)").data[..3], [9., 12., 15.]);
    assert_eq!(ev("matmul(v, w)"), t(&[2], &[220., 280.]));
    assert_eq!(ev("matmul(x, v)"), t(&[2], &[140., 320.]));
    assert_eq!(ev("matmul(v, v)"), Tensor::scalar(1400.));
    assert!(ev_err("matmul(x, 2)").0.contains("1-D or 2-D"));
}

#[test]
fn tensor_constructors() {
    assert!(Tensor::new(vec![2, 2], vec![1.0; 3]).is_err());
    assert!(Tensor::new(vec![usize::MAX, 3], vec![]).is_err());
    let z = Tensor::zeros(vec![2, 0, 3]);
    assert_eq!((z.numel(), z.ndim()), (0, 3));
    assert_eq!(Tensor::vector(vec![1., 2.]).get(&[1]), Some(2.0));
    assert_eq!(Tensor::scalar(3.0).item(), Some(3.0));
    assert_eq!(t(&[2, 3], &[0.; 6]).get(&[2, 0]), None);
    // Empty arrays flow through without special cases.
    let env: HashMap<String, Tensor> = [("z".to_string(), z)].into();
    assert_eq!(
        eval_array(&p("sum(z + 1, axis=1)"), &env).unwrap().shape,
        [2, 3]
    );
    assert!(eval_array(&p("max(z, axis=1)"), &env).is_err());
}

#[test]
fn transpose_swaps_the_axes_of_a_2d_array() {
    let r = ev("transpose(x)");
    assert_eq!(r.shape, vec![3, 2]);
    assert_eq!(r.data, vec![1., 4., 2., 5., 3., 6.]);
    assert_eq!(ev("transpose(transpose(w))").data, env().0["w"].data);
}
