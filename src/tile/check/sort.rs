//! `tl.sort(x, dim=None, descending=False)` (also `x.sort(...)`): the values of each line
//! along the last dimension, sorted, in a tile of the input's type. As in Triton, only the last
//! dimension can be sorted (`dim` is `None` or that dimension's index; Triton refuses `-1`, and
//! so does kwb), and `descending` is a compile-time bool. A line of one element is the input
//! itself. The IR op, [`Op::Sort`], is defined as Triton's bitonic network, so NaN and `-0.0`
//! come out where Triton puts them.

use super::emit::Ck;
use super::expr::Args;
use super::value::Val;
use crate::tile::ir::{Elem, Op};

impl Ck<'_> {
    /// `tl.sort` and the `.sort` method.
    pub fn sort_call(&mut self, a: Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("sort", a, &["x", "dim", "descending"], 1) else {
            return Val::Poison;
        };
        let input_span = Self::span_of(&s, 0, span);
        let Some(x) = self.tile_arg(&Self::val(&s, 0), input_span, "tl.sort") else {
            return Val::Poison;
        };
        let ty = self.ty(x).clone();
        let Elem::Scalar(d) = ty.elem else {
            return self.error(input_span, "`tl.sort` cannot sort pointers");
        };
        if !ty.is_tile() {
            let msg = format!("`tl.sort` needs a tile, found a scalar {}", d.triton_name());
            return self.error(input_span, msg);
        }
        let rank = ty.shape.len();
        let last = rank - 1;
        let dim_span = Self::span_of(&s, 1, span);
        match Self::val(&s, 1) {
            Val::None => {}
            v => {
                let Some(dim) = self.const_int(&v, dim_span, "`dim`") else {
                    return Val::Poison;
                };
                if dim != last as i64 {
                    let msg = format!(
                        "`tl.sort` sorts along the last dimension only: `dim` must be None or {last} for this tile of {rank} dimension(s), found {dim}{}",
                        if dim < 0 {
                            " (Triton refuses negative dimensions here)"
                        } else {
                            ""
                        }
                    );
                    return self.error(dim_span, msg);
                }
            }
        }
        let descending = match Self::val(&s, 2) {
            Val::None => false,
            v => match v.truthy() {
                Some(b) => b,
                None => {
                    let msg = format!(
                        "`descending` must be a compile-time bool, found {}",
                        self.show(&v)
                    );
                    return self.error(Self::span_of(&s, 2, span), msg);
                }
            },
        };
        let n = ty.shape[last];
        if !n.is_power_of_two() {
            let msg = format!(
                "`tl.sort` needs a power-of-two length along the sorted dimension, found {n}"
            );
            return self.error(input_span, msg);
        }
        if n == 1 {
            return Val::Var(x);
        }
        Val::Var(self.emit(ty, Op::Sort { src: x, descending }))
    }
}
