//! Triton's random numbers (`triton/language/random.py`), built from IR operations as Triton
//! builds them from its own: the Philox 4×32 generator (`tl.philox`, `tl.philox_impl`),
//! `tl.randint`/`tl.randint4x` (its outputs, `uint32`, with the offset as the counter's low
//! and high words and the seed as the key), `tl.rand`/`tl.rand4x` (`uint_to_uniform_float`)
//! and `tl.randn`/`tl.randn4x` (Box-Muller, `pair_uniform_to_normal`). The integer and
//! uniform results are the same bits on every backend; the normal ones go through `log`,
//! `sqrt`, `sin` and `cos`, which the generated code computes approximately, as Triton's does.
//! Only 32-bit counters are supported (Triton's 64-bit Philox is an error at the call).
//! `tl.umulhi`, Philox's high product, lives here too.

use super::emit::Ck;
use super::expr::Args;
use super::value::{promote, Val};
use crate::tile::ast::{BinaryOp, CmpOp, UnaryOp};
use crate::tile::ir::{BinOp, Const, Op, Scalar, Type, UnOp};
use crate::tile::span::Span;

const KEY_A: u32 = 0x9E37_79B9;
const KEY_B: u32 = 0xBB67_AE85;
const ROUND_A: u32 = 0xD251_1F53;
const ROUND_B: u32 = 0xCD9E_8D57;
/// Triton's default `n_rounds`.
const ROUNDS: i64 = 10;

impl Ck<'_> {
    /// The random-number built-ins.
    pub fn random(&mut self, name: &str, a: Args) -> Val {
        let span = a.span;
        let params: &[&str] = match name {
            "philox" => &["seed", "c0", "c1", "c2", "c3", "n_rounds"],
            "philox_impl" => &["c0", "c1", "c2", "c3", "k0", "k1", "n_rounds"],
            "uint_to_uniform_float" => &["x"],
            "pair_uniform_to_normal" => &["u1", "u2"],
            "umulhi" => &["x", "y"],
            _ => &["seed", "offset", "n_rounds"],
        };
        let required = match name {
            "philox" => 5,
            "philox_impl" => 6,
            "uint_to_uniform_float" => 1,
            _ => 2,
        };
        let Some(s) = self.bind(name, a, params, required) else {
            return Val::Poison;
        };
        let rounds_at = params.iter().position(|p| *p == "n_rounds");
        let rounds = match rounds_at.map(|i| (Self::val(&s, i), Self::span_of(&s, i, span))) {
            None | Some((Val::None, _)) => ROUNDS,
            Some((v, sp)) => match self.const_int(&v, sp, "`n_rounds`") {
                Some(n) if (0..=64).contains(&n) => n,
                Some(n) => {
                    return self.error(sp, format!("`n_rounds` must be from 0 to 64, found {n}"))
                }
                None => return Val::Poison,
            },
        };
        let arg = |i: usize| Self::val(&s, i);
        let at = |i: usize| Self::span_of(&s, i, span);
        let r = match name {
            "umulhi" => return self.umulhi_vals(arg(0), arg(1), span),
            "philox" => {
                let c = [arg(1), arg(2), arg(3), arg(4)];
                let spans = [at(1), at(2), at(3), at(4)];
                self.philox(arg(0), at(0), c, spans, rounds)
            }
            "philox_impl" => {
                let words: Option<Vec<Val>> = (0..6).map(|i| self.counter(arg(i), at(i))).collect();
                match words.and_then(|w| <[Val; 6]>::try_from(w).ok()) {
                    Some([c0, c1, c2, c3, k0, k1]) => {
                        self.philox_rounds([c0, c1, c2, c3], [k0, k1], rounds, span)
                    }
                    None => None,
                }
            }
            "uint_to_uniform_float" => return self.uniform(arg(0), at(0)),
            "pair_uniform_to_normal" => {
                let (n1, n2) = self.normal_pair(arg(0), arg(1), span);
                return Val::Tuple(vec![n1, n2]);
            }
            _ => self.randint4x(arg(0), at(0), arg(1), at(1), rounds),
        };
        let Some([i1, i2, i3, i4]) = r else {
            return Val::Poison;
        };
        match name {
            "randint" => i1,
            "rand" => self.uniform(i1, span),
            "randn" => {
                let (u1, u2) = (self.uniform(i1, span), self.uniform(i2, span));
                self.normal_pair(u1, u2, span).0
            }
            "rand4x" => Val::Tuple([i1, i2, i3, i4].map(|i| self.uniform(i, span)).to_vec()),
            "randn4x" => {
                let u = [i1, i2, i3, i4].map(|i| self.uniform(i, span));
                let [u1, u2, u3, u4] = u;
                let (n1, n2) = self.normal_pair(u1, u2, span);
                let (n3, n4) = self.normal_pair(u3, u4, span);
                Val::Tuple(vec![n1, n2, n3, n4])
            }
            _ => Val::Tuple(vec![i1, i2, i3, i4]),
        }
    }

    fn u32_const(&mut self, v: u32) -> Val {
        let c = Op::Const(Const::Int(i64::from(v)));
        Val::Var(self.emit(Type::scalar(Scalar::U32), c))
    }

    /// A 32-bit integer counter word as `uint32` (Triton bitcasts it); numbers become int32
    /// first, as `tl.to_tensor` makes them.
    fn counter(&mut self, v: Val, span: Span) -> Option<Val> {
        let x = match v {
            Val::Poison => return None,
            Val::Int(i) if i32::try_from(i).is_ok() => self.as_dtype(&v, Scalar::I32)?,
            Val::Var(x) => x,
            other => {
                let msg = format!(
                    "a Philox counter must be a 32-bit integer, found {}",
                    self.show(&other)
                );
                self.error(span, msg);
                return None;
            }
        };
        match self.scalar_of(x) {
            Some(Scalar::I32 | Scalar::U32) => Some(Val::Var(self.cast(x, Scalar::U32))),
            _ => {
                let msg = format!(
                    "a Philox counter must be a 32-bit integer, found {} (64-bit counters are not supported)",
                    self.show(&Val::Var(x))
                );
                self.error(span, msg);
                None
            }
        }
    }

    /// `tl.philox(seed, c0, c1, c2, c3, n_rounds)`: the seed's low and high words are the key.
    fn philox(
        &mut self,
        seed: Val,
        sspan: Span,
        c: [Val; 4],
        spans: [Span; 4],
        rounds: i64,
    ) -> Option<[Val; 4]> {
        let (lo, hi) = match seed {
            Val::Poison => return None,
            // Triton's seed is `tl.to_tensor(seed).to(tl.uint64)`: sign-extended.
            Val::Int(i) => {
                let u = i as u64;
                (self.u32_const(u as u32), self.u32_const((u >> 32) as u32))
            }
            Val::Var(x)
                if self
                    .scalar_of(x)
                    .is_some_and(|d| !d.is_float() && d != Scalar::I1) =>
            {
                let wide = self.cast(x, Scalar::U64);
                let lo = Val::Var(self.cast(wide, Scalar::U32));
                let shift = self.emit(Type::scalar(Scalar::U64), Op::Const(Const::Int(32)));
                let wide_ty = self.ty(wide).clone();
                let top = self.emit(
                    wide_ty,
                    Op::Binary {
                        op: BinOp::Shr,
                        lhs: wide,
                        rhs: shift,
                    },
                );
                (lo, Val::Var(self.cast(top, Scalar::U32)))
            }
            other => {
                let msg = format!("the seed must be an integer, found {}", self.show(&other));
                self.error(sspan, msg);
                return None;
            }
        };
        let mut words = Vec::new();
        for (v, sp) in c.into_iter().zip(spans) {
            words.push(self.counter(v, sp)?);
        }
        let [c0, c1, c2, c3] = <[Val; 4]>::try_from(words).ok()?;
        self.philox_rounds([c0, c1, c2, c3], [lo, hi], rounds, sspan)
    }

    /// `randint4x`: the offset's low word and (for a 64-bit offset) high word are the counter.
    fn randint4x(
        &mut self,
        seed: Val,
        sspan: Span,
        offset: Val,
        ospan: Span,
        rounds: i64,
    ) -> Option<[Val; 4]> {
        let x = match offset {
            Val::Poison => return None,
            Val::Int(_) => self.as_dtype(&offset, Scalar::I32)?,
            Val::Var(x) if self.scalar_of(x).is_some_and(|d| !d.is_float()) => x,
            other => {
                let msg = format!("the offsets must be integers, found {}", self.show(&other));
                self.error(ospan, msg);
                return None;
            }
        };
        let lo = self.cast(x, Scalar::U32);
        let zero = self.binary(BinaryOp::Mul, Val::Var(lo), Val::Int(0), ospan);
        let hi = if self.scalar_of(x).is_some_and(|d| d.size() > 4) {
            let top = self.binary(BinaryOp::Shr, Val::Var(x), Val::Int(32), ospan);
            self.convert(top, Scalar::U32, ospan)
        } else {
            zero.clone()
        };
        self.philox(
            seed,
            sspan,
            [Val::Var(lo), hi, zero.clone(), zero],
            [ospan; 4],
            rounds,
        )
    }

    /// `philox_impl` on `uint32` words.
    fn philox_rounds(
        &mut self,
        c: [Val; 4],
        k: [Val; 2],
        rounds: i64,
        span: Span,
    ) -> Option<[Val; 4]> {
        let [mut c0, mut c1, mut c2, mut c3] = c;
        let [mut k0, mut k1] = k;
        for _ in 0..rounds {
            let (a, b) = (self.u32_const(ROUND_A), self.u32_const(ROUND_B));
            let (old0, old2) = (c0.clone(), c2.clone());
            let h = self.umulhi_vals(b.clone(), old2.clone(), span);
            let h = self.binary(BinaryOp::BitXor, h, c1, span);
            c0 = self.binary(BinaryOp::BitXor, h, k0.clone(), span);
            let h = self.umulhi_vals(a.clone(), old0.clone(), span);
            let h = self.binary(BinaryOp::BitXor, h, c3, span);
            c2 = self.binary(BinaryOp::BitXor, h, k1.clone(), span);
            c1 = self.binary(BinaryOp::Mul, b, old2, span);
            c3 = self.binary(BinaryOp::Mul, a, old0, span);
            let ka = self.u32_const(KEY_A);
            k0 = self.binary(BinaryOp::Add, k0, ka, span);
            let kb = self.u32_const(KEY_B);
            k1 = self.binary(BinaryOp::Add, k1, kb, span);
        }
        let out = [c0, c1, c2, c3];
        (!out.contains(&Val::Poison)).then_some(out)
    }

    /// `tl.umulhi(x, y)`: both promoted to one 32- or 64-bit integer dtype.
    pub(super) fn umulhi_vals(&mut self, x: Val, y: Val, span: Span) -> Val {
        match (self.operand(&x), self.operand(&y)) {
            (Some(p), Some(q)) => {
                let d = promote(p, q);
                if d.is_float() || d.size() < 4 {
                    let msg = format!(
                        "`tl.umulhi` needs 32- or 64-bit integers, found {}",
                        d.triton_name()
                    );
                    return self.error(span, msg);
                }
                self.emit_binary(BinOp::MulHi, &x, &y, d, d, span)
            }
            _ => self.error(span, "`tl.umulhi` needs integers"),
        }
    }

    /// `uint_to_uniform_float`: a 32- or 64-bit integer to a `float32` in [0, 1).
    fn uniform(&mut self, x: Val, span: Span) -> Val {
        let d = match &x {
            Val::Var(v) => self.scalar_of(*v),
            Val::Poison => return Val::Poison,
            _ => None,
        };
        let (bits, scale) = match d {
            Some(Scalar::I32 | Scalar::U32) => (Scalar::I32, 4.656_612_734_2e-10),
            Some(Scalar::I64 | Scalar::U64) => (Scalar::I64, 1.084_202_043_238_533_7e-19),
            _ => {
                let msg = format!(
                    "`uint_to_uniform_float` needs a 32- or 64-bit integer, found {}",
                    self.show(&x)
                );
                return self.error(span, msg);
            }
        };
        let x = self.convert(x, bits, span);
        let neg = self.compare(CmpOp::Lt, x.clone(), Val::Int(0), span);
        let inv = self.unary(UnaryOp::Invert, x.clone(), span);
        let x = self.select(neg, inv, x, span);
        self.binary(BinaryOp::Mul, x, Val::Float(scale), span)
    }

    /// `pair_uniform_to_normal`: the Box-Muller transform of two uniforms.
    fn normal_pair(&mut self, u1: Val, u2: Val, span: Span) -> (Val, Val) {
        let u1 = match (self.operand(&Val::Float(1.0e-7)), self.operand(&u1)) {
            (Some(p), Some(q)) => {
                let d = promote(p, q);
                self.emit_binary(BinOp::Max, &Val::Float(1.0e-7), &u1, d, d, span)
            }
            _ => self.error(span, "`pair_uniform_to_normal` needs numbers"),
        };
        // Triton writes 6.283185307179586: the same f64.
        let th = self.binary(BinaryOp::Mul, Val::Float(std::f64::consts::TAU), u2, span);
        let l = self.math1(UnOp::Log, u1, span);
        let l = self.binary(BinaryOp::Mul, Val::Float(-2.0), l, span);
        let r = self.math1(UnOp::Sqrt, l, span);
        let c = self.math1(UnOp::Cos, th.clone(), span);
        let s = self.math1(UnOp::Sin, th, span);
        (
            self.binary(BinaryOp::Mul, r.clone(), c, span),
            self.binary(BinaryOp::Mul, r, s, span),
        )
    }
}
