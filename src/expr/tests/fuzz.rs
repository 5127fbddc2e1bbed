//! Random inputs: whatever the text, parsing and evaluating never panic, errors point inside
//! the source, and what parses prints back to an equivalent expression.

use super::sexpr;
use crate::expr::{eval_array, eval_scalar, parse, render_error, render_errors, Scalar, Tensor};
use std::collections::HashMap;

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "N",
    "M",
    "x",
    "y",
    "0",
    "1",
    "2",
    "2.5",
    "1e-3",
    "1Mi",
    "1.3Ki",
    "9223372036854775807",
    "true",
    "false",
    "(",
    "(",
    ")",
    ")",
    ",",
    "+",
    "-",
    "*",
    "**",
    "/",
    "//",
    "%",
    "<",
    "<=",
    ">",
    "==",
    "!=",
    "&&",
    "||",
    "!",
    "=",
    "axis",
    "axis=-1",
    "keepdims=true",
    "cdiv(",
    "min(",
    "max(",
    "sum(",
    "softmax(",
    "where(",
    "matmul(",
    "bytes(",
    "exp(",
    "int(",
    "$",
    "&",
    "é",
    " ",
    "1e",
    ".",
    "_",
    "2N",
    "^",
];

fn check(src: &str, scalar_env: &HashMap<String, Scalar>, array_env: &HashMap<String, Tensor>) {
    match parse(src) {
        Ok(e) => {
            let printed = e.to_string();
            let again = parse(&printed)
                .unwrap_or_else(|errs| panic!("`{src}` printed as `{printed}`: {errs:?}"));
            assert_eq!(sexpr(&again), sexpr(&e), "`{src}` printed as `{printed}`");
            for r in [
                eval_scalar(&e, scalar_env).err(),
                eval_array(&e, array_env).err(),
            ]
            .into_iter()
            .flatten()
            {
                assert!(r.span.end as usize <= src.len(), "`{src}`: {r:?}");
                render_error(src, &r);
            }
        }
        Err(errs) => {
            assert!(!errs.is_empty());
            for e in &errs {
                assert!(e.span.start <= e.span.end, "`{src}`: {e:?}");
                assert!(e.span.end as usize <= src.len(), "`{src}`: {e:?}");
                assert!(
                    src.is_char_boundary(e.span.start as usize),
                    "`{src}`: {e:?}"
                );
                assert!(src.is_char_boundary(e.span.end as usize), "`{src}`: {e:?}");
                assert!(!e.message.is_empty());
            }
            render_errors(src, &errs);
        }
    }
}

#[test]
fn random_token_strings_never_panic() {
    let scalar_env: HashMap<String, Scalar> = [
        ("N".to_string(), Scalar::Int(1 << 20)),
        ("M".to_string(), Scalar::Float(0.5)),
        ("x".to_string(), Scalar::Bool(true)),
    ]
    .into();
    let array_env: HashMap<String, Tensor> = [
        (
            "x".to_string(),
            Tensor::from_fn(vec![2, 3], |i| i as f64 - 2.0),
        ),
        ("y".to_string(), Tensor::from_fn(vec![3], |i| i as f64)),
        ("N".to_string(), Tensor::scalar(4.0)),
    ]
    .into();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for _ in 0..2000 {
        let len = 1 + rng.below(12);
        let src: String = (0..len)
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect::<Vec<_>>()
            .join(if rng.below(2) == 0 { "" } else { " " });
        parsed += usize::from(parse(&src).is_ok());
        check(&src, &scalar_env, &array_env);
    }
    // The generator should reach the evaluators, not only the error paths.
    assert!(parsed > 50, "only {parsed} of 2000 random strings parsed");

    // Raw characters, including multi-byte ones.
    let chars = [
        'a', '1', '.', '(', ')', '*', '-', 'é', '€', '\n', '\t', 'K', 'i', '=', ',',
    ];
    for _ in 0..500 {
        let len = rng.below(10);
        let src: String = (0..len).map(|_| chars[rng.below(chars.len())]).collect();
        check(&src, &scalar_env, &array_env);
    }
}
