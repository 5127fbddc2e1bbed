//! Python's own built-ins inside a kernel: `int()`, `float()`, `bool()` of compile-time
//! values, and `min()`/`max()`.

use super::emit::Ck;
use super::expr::{Arg, Args};
use super::fold;
use super::value::{display_builtin, Val};
use crate::tile::ast::BinaryOp;

impl Ck<'_> {
    pub(super) fn py_convert(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind(name, a, &["x"], 0) else {
            return Val::Poison;
        };
        let x = Self::val(&s, 0);
        let bad = |ck: &mut Self, x: &Val| {
            let msg = format!(
                "`{}()` of {} is not known at compile time; use `.to(...)` on runtime values",
                display_builtin(name),
                ck.show(x)
            );
            ck.error(span, msg)
        };
        match (name, &x) {
            ("py.float", Val::Str(t)) => {
                let t = t.trim().to_ascii_lowercase();
                let t = t.strip_prefix('+').unwrap_or(&t);
                match t {
                    "inf" | "infinity" => Val::Float(f64::INFINITY),
                    "-inf" | "-infinity" => Val::Float(f64::NEG_INFINITY),
                    "nan" | "-nan" => Val::Float(f64::NAN),
                    other => match other.parse::<f64>() {
                        Ok(v) => Val::Float(v),
                        Err(_) => self.error(span, format!("`float()` cannot read {t:?}")),
                    },
                }
            }
            ("py.float", Val::None) => Val::Float(0.0),
            ("py.float", v) if v.is_number() => {
                match fold::binary(BinaryOp::Mul, v, &Val::Float(1.0)) {
                    Ok(v) => v,
                    Err(e) => self.error(span, e),
                }
            }
            ("py.int", Val::None) => Val::Int(0),
            ("py.int", Val::Int(i)) => Val::Int(*i),
            ("py.int", Val::Bool(b)) => Val::Int(i64::from(*b)),
            ("py.int", Val::Float(f)) if f.is_finite() && f.abs() < 9.2e18 => {
                Val::Int(f.trunc() as i64)
            }
            ("py.int", Val::Str(t)) => match t.trim().parse::<i64>() {
                Ok(v) => Val::Int(v),
                Err(_) => self.error(span, format!("`int()` cannot read {t:?}")),
            },
            ("py.bool", v) => match v.truthy() {
                Some(b) => Val::Bool(b),
                None => bad(self, v),
            },
            (_, v) => bad(self, v),
        }
    }

    pub(super) fn py_minmax(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let mut items: Vec<Val> = a.pos.into_iter().map(|x| x.val).collect();
        if items.len() == 1 {
            if let Some(Val::Tuple(t)) = items.pop() {
                items = t;
            }
        }
        if items.contains(&Val::Poison) {
            return Val::Poison;
        }
        let tl_name = if name == "py.min" {
            "minimum"
        } else {
            "maximum"
        };
        if items.len() >= 2 && !items.iter().all(Val::is_number) {
            // As in Triton, `min`/`max` of runtime values is `tl.minimum`/`tl.maximum` (the
            // matmul tutorial's `min(num_pid_m - first_pid_m, GROUP_SIZE_M)`), pairwise.
            let mut acc = items.remove(0);
            for v in items {
                let pos = vec![Arg { val: acc, span }, Arg { val: v, span }];
                acc = self.builtin(
                    tl_name,
                    Args {
                        pos,
                        kw: Vec::new(),
                        span,
                    },
                );
            }
            return acc;
        }
        if items.is_empty() || !items.iter().all(Val::is_number) {
            return self.error(
                span,
                format!(
                    "`{b}` needs two or more values, or compile-time numbers; to reduce a tile, \
                     use `tl.{b}(x, axis=...)`",
                    b = display_builtin(name),
                ),
            );
        }
        let mut best = items[0].clone();
        for v in &items[1..] {
            let less = fold::compare(crate::tile::ast::CmpOp::Lt, v, &best).unwrap_or(false);
            let greater = fold::compare(crate::tile::ast::CmpOp::Gt, v, &best).unwrap_or(false);
            if (name == "py.min" && less) || (name == "py.max" && greater) {
                best = v.clone();
            }
        }
        best
    }
}
