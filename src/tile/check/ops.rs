//! Operators: arithmetic, comparisons, logic and pointer arithmetic, each folded when both
//! sides are compile-time numbers and otherwise lowered to IR with the operands promoted to
//! one dtype and broadcast to one shape.

use super::emit::Ck;
use super::fold;
use super::value::{promote, show_type, Val};
use crate::tile::ast::{BinaryOp, CmpOp, UnaryOp};
use crate::tile::ir::{BinOp, Elem, Op, Scalar, Type, UnOp, VarId};
use crate::tile::span::Span;

impl Ck<'_> {
    /// `l op r`.
    pub fn binary(&mut self, op: BinaryOp, l: Val, r: Val, span: Span) -> Val {
        if l == Val::Poison || r == Val::Poison {
            return Val::Poison;
        }
        if op == BinaryOp::MatMul && !(l.is_number() && r.is_number()) {
            let opts = super::dot::DotOptions {
                acc: None,
                out_dtype: None,
                precision: crate::tile::ir::DotPrecision::Ieee,
            };
            return self.dot((l, span), (r, span), opts, span);
        }
        if matches!(l, Val::BlockPtr(_)) || matches!(r, Val::BlockPtr(_)) {
            let msg = format!(
                "`{}` on a block pointer: it is not a tile of pointers, so it takes no \
                 arithmetic; move it with `tl.advance(p, offsets)`",
                op.symbol()
            );
            return self.error(span, msg);
        }
        if l.is_number() && r.is_number() {
            return match fold::binary(op, &l, &r) {
                Ok(v) => v,
                Err(e) => self.error(span, e),
            };
        }
        if let Some(v) = self.pointer_arith(op, &l, &r, span) {
            return v;
        }
        let (Some(a), Some(b)) = (self.operand(&l), self.operand(&r)) else {
            let msg = format!(
                "`{}` cannot combine {} and {}",
                op.symbol(),
                self.show(&l),
                self.show(&r)
            );
            return self.error(span, msg);
        };
        let mut dtype = promote(a, b);
        let sym = op.symbol();
        let bin = match op {
            BinaryOp::Add => BinOp::Add,
            BinaryOp::Sub => BinOp::Sub,
            BinaryOp::Mul => BinOp::Mul,
            // `/` computes in fp32 for ints and for fp16/bf16 alike, and so does a float `%`:
            // Triton promotes them (fp16 has no native division in PTX), and its result is
            // fp32, so `h / h * h` multiplies in fp32 too.
            BinaryOp::Div => {
                if !dtype.is_float() || matches!(dtype, Scalar::F16 | Scalar::BF16) {
                    dtype = Scalar::F32;
                }
                BinOp::Div
            }
            BinaryOp::Mod if matches!(dtype, Scalar::F16 | Scalar::BF16) => {
                dtype = Scalar::F32;
                BinOp::Rem
            }
            BinaryOp::FloorDiv | BinaryOp::Mod if dtype.is_float() && op == BinaryOp::FloorDiv => {
                return self.error(
                    span,
                    "`//` needs integer operands; for floats write `tl.floor(a / b)`",
                )
            }
            // On runtime integers, tiles and scalars alike, Triton's `//` truncates toward zero
            // and its `%` takes the dividend's sign (C's rounding: Triton 3.6 on an H100 gives
            // -7 // 2 = -3 and -7 % 2 = -1 for kernel arguments too). Only compile-time numbers
            // fold with Python's rounding (`fold.rs`), as Triton's frontend folds them.
            BinaryOp::FloorDiv => BinOp::Div,
            BinaryOp::Mod => BinOp::Rem,
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor | BinaryOp::Shl | BinaryOp::Shr
                if dtype.is_float() =>
            {
                let msg = format!(
                    "`{sym}` needs integer or boolean operands, found {} and {}",
                    self.show(&l),
                    self.show(&r)
                );
                return self.error(span, msg);
            }
            BinaryOp::BitAnd => BinOp::BitAnd,
            BinaryOp::BitOr => BinOp::BitOr,
            BinaryOp::BitXor => BinOp::BitXor,
            BinaryOp::Shl => BinOp::Shl,
            BinaryOp::Shr => BinOp::Shr,
            BinaryOp::Pow => {
                return self.error(
                    span,
                    "`**` on runtime values is not supported; multiply, or use `tl.exp2(y * tl.log2(x))`",
                )
            }
            BinaryOp::MatMul => return self.error(span, "`@` (matrix multiply) needs tiles"),
        };
        // `x * 1`, `1 * x`, `x + 0`, `0 + x` and `x - 0` on integers are `x`, as Triton's axis
        // analysis sees through them: a stride specialised to 1 (an argument equal to 1) then
        // keeps a row contiguous, so its loads can be vectors.
        if !dtype.is_float() && dtype != Scalar::I1 {
            let identity = match (bin, &l, &r) {
                (BinOp::Mul, x, Val::Int(1)) | (BinOp::Mul, Val::Int(1), x) => Some(x),
                (BinOp::Add, x, Val::Int(0))
                | (BinOp::Add, Val::Int(0), x)
                | (BinOp::Sub, x, Val::Int(0)) => Some(x),
                _ => None,
            };
            if let Some(x @ Val::Var(v)) = identity {
                if self.scalar_of(*v) == Some(dtype) {
                    return x.clone();
                }
            }
        }
        self.emit_binary(bin, &l, &r, dtype, dtype, span)
    }

    /// Promotes, broadcasts and emits `lhs op rhs` computed in `dtype`, giving `result`.
    pub fn emit_binary(
        &mut self,
        op: BinOp,
        l: &Val,
        r: &Val,
        dtype: Scalar,
        result: Scalar,
        span: Span,
    ) -> Val {
        let (ls, rs) = (self.shape_of(l), self.shape_of(r));
        let Some(shape) = self.broadcast_shapes(&ls, &rs, span) else {
            return Val::Poison;
        };
        let (Some(a), Some(b)) = (
            self.operand_as(l, dtype, &shape),
            self.operand_as(r, dtype, &shape),
        ) else {
            return self.error(span, "this operation needs numbers");
        };
        let ty = Type {
            elem: Elem::Scalar(result),
            shape,
        };
        Val::Var(self.emit(ty, Op::Binary { op, lhs: a, rhs: b }))
    }

    /// `ptr + int`, `int + ptr`, `ptr - int`; `None` when neither side is a pointer.
    fn pointer_arith(&mut self, op: BinaryOp, l: &Val, r: &Val, span: Span) -> Option<Val> {
        let is_ptr =
            |ck: &Self, v: &Val| matches!(v, Val::Var(x) if matches!(ck.ty(*x).elem, Elem::Ptr(_)));
        let (ptr, off) = match (is_ptr(self, l), is_ptr(self, r)) {
            (false, false) => return None,
            (true, false) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => (l, r),
            (false, true) if op == BinaryOp::Add => (r, l),
            _ => {
                let msg = format!(
                    "`{}` cannot combine {} and {}; pointers take `+` and `-` of an integer offset",
                    op.symbol(),
                    self.show(l),
                    self.show(r)
                );
                return Some(self.error(span, msg));
            }
        };
        let Val::Var(p) = ptr else { return None };
        let off_dtype = match self.operand(off) {
            Some(o) if !o.dtype.is_float() && (!o.weak || o.dtype != Scalar::I1) => {
                if o.weak {
                    if o.fits_i32 {
                        Scalar::I32
                    } else {
                        Scalar::I64
                    }
                } else if o.dtype == Scalar::I1 {
                    Scalar::I32
                } else {
                    o.dtype
                }
            }
            _ => {
                let msg = format!(
                    "a pointer offset must be an integer, found {}",
                    self.show(off)
                );
                return Some(self.error(span, msg));
            }
        };
        let off = if op == BinaryOp::Sub {
            match self.unary(UnaryOp::Neg, off.clone(), span) {
                Val::Poison => return Some(Val::Poison),
                v => v,
            }
        } else {
            off.clone()
        };
        let pshape = self.ty(*p).shape.clone();
        let oshape = self.shape_of(&off);
        let shape = self.broadcast_shapes(&pshape, &oshape, span)?;
        let offset = self.operand_as(&off, off_dtype, &shape)?;
        let ptr = self.bcast(*p, &shape);
        let elem = self.ty(*p).elem;
        Some(Val::Var(
            self.emit(Type { elem, shape }, Op::PtrAdd { ptr, offset }),
        ))
    }

    /// `l op r` for a comparison.
    pub fn compare(&mut self, op: CmpOp, l: Val, r: Val, span: Span) -> Val {
        if l == Val::Poison || r == Val::Poison {
            return Val::Poison;
        }
        if matches!(op, CmpOp::Is | CmpOp::IsNot) {
            // A runtime value is never `None` (Triton folds `x_ptr is not None` the same way).
            let runtime_vs_none = matches!(
                (&l, &r),
                (Val::Var(_), Val::None) | (Val::None, Val::Var(_))
            );
            if runtime_vs_none {
                return Val::Bool(op == CmpOp::IsNot);
            }
            if matches!(l, Val::Var(_)) || matches!(r, Val::Var(_)) {
                return self.error(
                    span,
                    "`is` compares compile-time values (such as `None`) only",
                );
            }
            let same = l == r;
            return Val::Bool(if op == CmpOp::Is { same } else { !same });
        }
        if l.is_number() && r.is_number() {
            return match fold::compare(op, &l, &r) {
                Ok(b) => Val::Bool(b),
                Err(e) => self.error(span, e),
            };
        }
        if !l.is_number() && !matches!(l, Val::Var(_))
            || !r.is_number() && !matches!(r, Val::Var(_))
        {
            if matches!(op, CmpOp::Eq | CmpOp::Ne)
                && !matches!(l, Val::Var(_))
                && !matches!(r, Val::Var(_))
            {
                let same = l == r;
                return Val::Bool(if op == CmpOp::Eq { same } else { !same });
            }
            let msg = format!("cannot compare {} with {}", self.show(&l), self.show(&r));
            return self.error(span, msg);
        }
        let (Some(a), Some(b)) = (self.operand(&l), self.operand(&r)) else {
            let msg = format!("cannot compare {} with {}", self.show(&l), self.show(&r));
            return self.error(span, msg);
        };
        let dtype = promote(a, b);
        let bin = match op {
            CmpOp::Eq => BinOp::Eq,
            CmpOp::Ne => BinOp::Ne,
            CmpOp::Lt => BinOp::Lt,
            CmpOp::Le => BinOp::Le,
            CmpOp::Gt => BinOp::Gt,
            _ => BinOp::Ge,
        };
        self.emit_binary(bin, &l, &r, dtype, Scalar::I1, span)
    }

    /// `op v`.
    pub fn unary(&mut self, op: UnaryOp, v: Val, span: Span) -> Val {
        if v == Val::Poison {
            return Val::Poison;
        }
        if v.is_number() || (op == UnaryOp::Not && !matches!(v, Val::Var(_))) {
            return match fold::unary(op, &v) {
                Ok(v) => v,
                Err(e) => self.error(span, e),
            };
        }
        let Val::Var(x) = v else {
            let msg = format!("this operator needs a number, found {}", v.describe());
            return self.error(span, msg);
        };
        let Some(s) = self.scalar_of(x) else {
            let msg = format!("this operator cannot take {}", show_type(self.ty(x)));
            return self.error(span, msg);
        };
        let ty = self.ty(x).clone();
        match op {
            UnaryOp::Pos => Val::Var(x),
            UnaryOp::Neg => Val::Var(self.emit(
                ty,
                Op::Unary {
                    op: UnOp::Neg,
                    src: x,
                },
            )),
            UnaryOp::Invert if s.is_float() => {
                let msg = format!(
                    "`~` needs an integer or boolean, found {}",
                    super::emit::a_type(&ty)
                );
                self.error(span, msg)
            }
            UnaryOp::Invert => Val::Var(self.emit(
                ty,
                Op::Unary {
                    op: UnOp::Not,
                    src: x,
                },
            )),
            UnaryOp::Not => {
                let b = self.as_bool(x);
                let ty = self.ty(b).clone();
                Val::Var(self.emit(
                    ty,
                    Op::Unary {
                        op: UnOp::Not,
                        src: b,
                    },
                ))
            }
        }
    }

    /// A runtime value as I1 (`!= 0`).
    pub fn as_bool(&mut self, x: VarId) -> VarId {
        self.cast(x, Scalar::I1)
    }

    /// `a and b` / `a or b`: Python's on compile-time values, elementwise logic otherwise.
    pub fn logic(&mut self, and: bool, l: Val, r: Val, span: Span) -> Val {
        if l == Val::Poison || r == Val::Poison {
            return Val::Poison;
        }
        let (Some(lb), Some(rb)) = (self.bool_operand(&l), self.bool_operand(&r)) else {
            let msg = format!(
                "`{}` needs numbers or booleans, found {} and {}",
                if and { "and" } else { "or" },
                self.show(&l),
                self.show(&r)
            );
            return self.error(span, msg);
        };
        let op = if and { BinOp::BitAnd } else { BinOp::BitOr };
        self.emit_binary(op, &lb, &rb, Scalar::I1, Scalar::I1, span)
    }

    fn bool_operand(&mut self, v: &Val) -> Option<Val> {
        match v {
            Val::Var(x) if self.scalar_of(*x).is_some() => Some(Val::Var(self.as_bool(*x))),
            _ => v.truthy().map(Val::Bool),
        }
    }
}
