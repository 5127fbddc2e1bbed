//! Built-in functions: argument binding (positional and keyword, with Triton's parameter
//! names), then one arm per built-in, and `tl.assume` and the assertions. Memory access lives
//! in `memory.rs`, shape changes and reductions in `shape.rs`, elementwise math and conversions
//! in `elementwise.rs`, Python's own built-ins in `python.rs`.

use super::emit::Ck;
use super::expr::{Arg, Args};
use super::names;
use super::value::{display_builtin, Val};
use crate::tile::ast::BinaryOp;
use crate::tile::ir::{Elem, GridDependency, Op, Scalar, StmtKind, Type, UnOp};
use crate::tile::span::Span;

/// The largest tile Triton allows (elements).
pub(super) const MAX_NUMEL: u64 = 1 << 20;

const UNARY_MATH: &[(&str, UnOp)] = &[
    ("exp", UnOp::Exp),
    ("exp2", UnOp::Exp2),
    ("log", UnOp::Log),
    ("log2", UnOp::Log2),
    ("sqrt", UnOp::Sqrt),
    ("rsqrt", UnOp::Rsqrt),
    ("abs", UnOp::Abs),
    ("sigmoid", UnOp::Sigmoid),
    ("erf", UnOp::Erf),
    ("sin", UnOp::Sin),
    ("cos", UnOp::Cos),
    ("tanh", UnOp::Tanh),
    ("floor", UnOp::Floor),
    ("ceil", UnOp::Ceil),
];

/// Bound arguments: one slot per parameter.
pub(super) type Slots = Vec<Option<Arg>>;

impl Ck<'_> {
    /// Binds `a` to `params` (the first `required` must be given). `None` after an error, or
    /// when an argument is already poisoned.
    pub fn bind(&mut self, name: &str, a: Args, params: &[&str], required: usize) -> Option<Slots> {
        let shown = display_builtin(name);
        let mut slots: Slots = params.iter().map(|_| None).collect();
        let mut ok = true;
        if a.pos.len() > params.len() {
            let msg = format!(
                "`{shown}` takes at most {} argument(s), but {} were given",
                params.len(),
                a.pos.len()
            );
            self.error(a.span, msg);
            return None;
        }
        let mut poisoned = false;
        for (i, arg) in a.pos.into_iter().enumerate() {
            poisoned |= arg.val == Val::Poison;
            slots[i] = Some(arg);
        }
        for (k, arg) in a.kw {
            poisoned |= arg.val == Val::Poison;
            match params.iter().position(|p| *p == k) {
                Some(i) if slots[i].is_some() => {
                    self.error(arg.span, format!("`{shown}` got `{k}` twice"));
                    ok = false;
                }
                Some(i) => slots[i] = Some(arg),
                None => {
                    let msg = match names::suggest(&k, params.iter().copied()) {
                        Some(s) => format!("`{shown}` has no parameter `{k}`; did you mean `{s}`?"),
                        None => format!(
                            "`{shown}` has no parameter `{k}` (its parameters: {})",
                            params.join(", ")
                        ),
                    };
                    self.error(arg.span, msg);
                    ok = false;
                }
            }
        }
        for (i, p) in params.iter().enumerate().take(required) {
            if slots[i].is_none() {
                self.error(a.span, format!("`{shown}` needs its `{p}` argument"));
                ok = false;
            }
        }
        (ok && !poisoned).then_some(slots)
    }

    /// A slot's value, or `Val::None` when not given.
    pub fn val(slots: &Slots, i: usize) -> Val {
        slots
            .get(i)
            .and_then(|s| s.as_ref())
            .map_or(Val::None, |a| a.val.clone())
    }

    pub fn span_of(slots: &Slots, i: usize, default: Span) -> Span {
        slots
            .get(i)
            .and_then(|s| s.as_ref())
            .map_or(default, |a| a.span)
    }

    /// A compile-time integer argument.
    pub fn const_int(&mut self, v: &Val, span: Span, what: &str) -> Option<i64> {
        match v {
            Val::Int(i) => Some(*i),
            Val::Bool(b) => Some(i64::from(*b)),
            Val::Poison => None,
            other => {
                // A runtime scalar here is most often a number assigned to a plain name,
                // which Triton (and kwb) make a runtime value.
                let is_param = |ck: &Self, x: crate::tile::ir::VarId| {
                    let name = ck.vars[x.0 as usize].name.as_deref();
                    ck.units[0].module.funcs[ck.kernel]
                        .params
                        .iter()
                        .any(|p| Some(p.name.name.as_str()) == name)
                };
                let hint = match other {
                    Val::Var(x) if !self.ty(*x).is_tile() && !is_param(self, *x) => "; a number assigned to a plain name is a runtime value, as in Triton: annotate it to keep it compile-time (`n: tl.constexpr = ...`)",
                    _ => "",
                };
                let msg = format!(
                    "{what} must be a compile-time integer, found {}{hint}",
                    self.show(other)
                );
                self.error(span, msg);
                None
            }
        }
    }

    pub fn builtin(&mut self, name: &'static str, a: Args) -> Val {
        let span = a.span;
        if let Some((_, op)) = UNARY_MATH.iter().find(|(n, _)| *n == name) {
            let Some(s) = self.bind(name, a, &["x"], 1) else {
                return Val::Poison;
            };
            return self.math1(*op, Self::val(&s, 0), Self::span_of(&s, 0, span));
        }
        if name.starts_with("ld.") {
            return match self.libdevice(name, a) {
                Some(v) => v,
                None => Val::Poison,
            };
        }
        match name {
            "program_id" | "num_programs" => {
                let Some(s) = self.bind(name, a, &["axis"], 1) else {
                    return Val::Poison;
                };
                let sp = Self::span_of(&s, 0, span);
                let Some(axis) = self.const_int(&Self::val(&s, 0), sp, "the axis") else {
                    return Val::Poison;
                };
                let Ok(axis) = u8::try_from(axis).map_err(|_| ()).and_then(|a| {
                    if a < 3 {
                        Ok(a)
                    } else {
                        Err(())
                    }
                }) else {
                    return self.error(sp, format!("the axis must be 0, 1 or 2, found {axis}"));
                };
                let op = if name == "program_id" {
                    Op::ProgramId(axis)
                } else {
                    Op::NumPrograms(axis)
                };
                Val::Var(self.emit(Type::scalar(Scalar::I32), op))
            }
            "arange" => self.arange(a),
            "zeros" | "full" | "zeros_like" => self.full(name, a),
            "load" => self.load(a),
            "make_tensor_descriptor" => self.make_tensor_descriptor(a),
            "make_block_ptr" => self.make_block_ptr(a),
            "advance" => self.advance(a),
            "store" => self.store(a),
            "atomic_add" | "atomic_max" | "atomic_min" | "atomic_xchg" | "atomic_cas" => {
                self.atomic(name, a)
            }
            "where" => {
                let Some(s) = self.bind(name, a, &["condition", "x", "y"], 3) else {
                    return Val::Poison;
                };
                self.select(Self::val(&s, 0), Self::val(&s, 1), Self::val(&s, 2), span)
            }
            "maximum" | "minimum" => self.min_max_call(name, a),
            "fma" => self.fma(a),
            "cdiv" => {
                let Some(s) = self.bind(name, a, &["x", "div"], 2) else {
                    return Val::Poison;
                };
                let (x, d) = (Self::val(&s, 0), Self::val(&s, 1));
                let t = self.binary(BinaryOp::Add, x, d.clone(), span);
                let t = self.binary(BinaryOp::Sub, t, Val::Int(1), span);
                self.binary(BinaryOp::FloorDiv, t, d, span)
            }
            "logical_and" | "logical_or" => {
                // Triton's tensor methods: both sides bools (it bitcasts any other dtype to
                // int1, which fails for every dtype wider than one bit).
                let Some(s) = self.bind(name, a, &["input", "other"], 2) else {
                    return Val::Poison;
                };
                for i in [0, 1] {
                    let v = Self::val(&s, i);
                    let ok = match &v {
                        Val::Bool(_) => true,
                        Val::Var(x) => self.scalar_of(*x) == Some(Scalar::I1),
                        _ => false,
                    };
                    if !ok {
                        let msg = format!(
                            "`.{name}` needs bools (int1) on both sides, found {}; Triton cannot bitcast it to int1 (compare it with 0, or `.to(tl.int1)`)",
                            self.show(&v)
                        );
                        return self.error(Self::span_of(&s, i, span), msg);
                    }
                }
                let op = if name == "logical_and" {
                    BinaryOp::BitAnd
                } else {
                    BinaryOp::BitOr
                };
                let (x, y) = (Self::val(&s, 0), Self::val(&s, 1));
                self.binary(op, x, y, span)
            }
            "fdiv" => {
                // Triton's `x / y` of floats: both must be floats; kwb has neither of the
                // other roundings.
                let Some(s) = self.bind(name, a, &["x", "y", "ieee_rounding", "approx"], 2) else {
                    return Val::Poison;
                };
                for i in [2, 3] {
                    if Self::val(&s, i).truthy() == Some(true) {
                        let what = if i == 2 { "ieee_rounding" } else { "approx" };
                        let msg = format!("`tl.fdiv(..., {what}=True)` is not supported; `x / y` is Triton's default division");
                        return self.error(Self::span_of(&s, i, span), msg);
                    }
                }
                for i in [0, 1] {
                    let float = match Self::val(&s, i) {
                        Val::Float(_) => true,
                        Val::Var(v) => self.scalar_of(v).is_some_and(Scalar::is_float),
                        _ => false,
                    };
                    if !float {
                        let msg = format!(
                            "both operands of `tl.fdiv` must be floats, found {}",
                            self.show(&Self::val(&s, i))
                        );
                        return self.error(Self::span_of(&s, i, span), msg);
                    }
                }
                let (x, y) = (Self::val(&s, 0), Self::val(&s, 1));
                self.binary(BinaryOp::Div, x, y, span)
            }
            "next_power_of_2" => {
                let Some(s) = self.bind(name, a, &["n"], 1) else {
                    return Val::Poison;
                };
                let sp = Self::span_of(&s, 0, span);
                let Some(n) = self.const_int(&Self::val(&s, 0), sp, "`n`") else {
                    return Val::Poison;
                };
                if n <= 1 {
                    return Val::Int(1);
                }
                match (n as u64)
                    .checked_next_power_of_two()
                    .and_then(|p| i64::try_from(p).ok())
                {
                    Some(p) => Val::Int(p),
                    None => self.error(sp, "integer overflow in a constant expression"),
                }
            }
            "sum" | "max" | "min" | "argmax" | "argmin" => self.reduce(name, a),
            "cumsum" | "cumprod" | "associative_scan" | "reduce" => self.scan_call(name, a),
            "sort" => self.sort_call(a),
            "join" | "split" | "interleave" | "flip" | "ravel" => self.rearrange(name, a),
            "clamp" => self.clamp(a),
            "swizzle2d" => self.swizzle2d(a),
            "philox"
            | "philox_impl"
            | "randint"
            | "randint4x"
            | "rand"
            | "rand4x"
            | "randn"
            | "randn4x"
            | "uint_to_uniform_float"
            | "pair_uniform_to_normal" => self.random(name, a),
            "umulhi" => {
                let Some(s) = self.bind(name, a, &["x", "y"], 2) else {
                    return Val::Poison;
                };
                self.umulhi_vals(Self::val(&s, 0), Self::val(&s, 1), span)
            }
            "reshape" | "view" | "broadcast_to" | "trans" | "permute" | "expand_dims"
            | "broadcast" => self.reshape_like(name, a),
            "multiple_of" | "max_contiguous" => self.hint(name, a),
            "assume" => {
                if let Some(s) = self.bind(name, a, &["cond"], 1) {
                    self.assume(Self::val(&s, 0), Self::span_of(&s, 0, span));
                }
                Val::None
            }
            "debug_barrier" => {
                if self.bind(name, a, &[], 0).is_some() {
                    self.push(StmtKind::Barrier);
                }
                Val::None
            }
            "gdc_wait" | "gdc_launch_dependents" => {
                if self.bind(name, a, &[], 0).is_some() {
                    self.push(StmtKind::GridDependency(if name == "gdc_wait" {
                        GridDependency::Wait
                    } else {
                        GridDependency::LaunchDependents
                    }));
                }
                Val::None
            }
            "cast" => {
                let Some(s) = self.bind(
                    name,
                    a,
                    &["input", "dtype", "fp_downcast_rounding", "bitcast"],
                    2,
                ) else {
                    return Val::Poison;
                };
                if Self::val(&s, 3).truthy() == Some(true) {
                    return self.error(
                        Self::span_of(&s, 3, span),
                        "`bitcast=True` is not supported",
                    );
                }
                if let Val::PtrType(d) = Self::val(&s, 1) {
                    return self.pointer_cast(Self::val(&s, 0), d, Self::span_of(&s, 1, span));
                }
                let Val::DType(d) = Self::val(&s, 1) else {
                    let msg = format!(
                        "`.to` needs a dtype such as `tl.float32`, found {}",
                        self.show(&Self::val(&s, 1))
                    );
                    return self.error(Self::span_of(&s, 1, span), msg);
                };
                self.convert(Self::val(&s, 0), d, Self::span_of(&s, 0, span))
            }
            "pointer_type" => {
                let Some(s) = self.bind(name, a, &["element_ty", "address_space", "const"], 1)
                else {
                    return Val::Poison;
                };
                if !matches!(Self::val(&s, 1), Val::None | Val::Int(1)) {
                    return self.error(
                        Self::span_of(&s, 1, span),
                        "only global pointers (`address_space=1`) are supported",
                    );
                }
                match Self::val(&s, 0) {
                    Val::DType(d) => Val::PtrType(d),
                    other => {
                        let msg = format!(
                            "`tl.pointer_type` needs a dtype such as `tl.float16`, found {}",
                            self.show(&other)
                        );
                        self.error(Self::span_of(&s, 0, span), msg)
                    }
                }
            }
            "static_assert" | "device_assert" => {
                let Some(s) = self.bind(name, a, &["cond", "msg", "mask"], 1) else {
                    return Val::None;
                };
                let msg = match Self::val(&s, 1) {
                    Val::Str(m) => m,
                    _ => String::new(),
                };
                let cond_span = Self::span_of(&s, 0, span);
                self.assertion(&Self::val(&s, 0), &msg, cond_span, name == "static_assert");
                Val::None
            }
            "static_print" => Val::None,
            "device_print" | "py.print" => {
                self.warning(
                    span,
                    format!("`{}` is ignored by kwb", display_builtin(name)),
                );
                Val::None
            }
            "dot" => self.dot_call(a),
            "range" | "static_range" | "py.range" => self.error(
                span,
                format!(
                    "`{}` may only be the iterable of a `for` loop",
                    display_builtin(name)
                ),
            ),
            "py.float" | "py.int" | "py.bool" => self.py_convert(name, a),
            "py.min" | "py.max" => self.py_minmax(name, a),
            "py.len" => {
                let Some(s) = self.bind(name, a, &["obj"], 1) else {
                    return Val::Poison;
                };
                match Self::val(&s, 0) {
                    Val::Tuple(t) => Val::Int(t.len() as i64),
                    other => {
                        let msg = format!("`len` needs a tuple, found {}", self.show(&other));
                        self.error(span, msg)
                    }
                }
            }
            _ => self.error(
                span,
                format!(
                    "`{}` cannot be called inside a kernel",
                    display_builtin(name)
                ),
            ),
        }
    }

    /// An assertion: checked when its condition is known at compile time, else ignored.
    /// `tl.assume(cond)`: a runtime scalar condition becomes an [`StmtKind::Assume`]; a
    /// compile-time one must hold.
    fn assume(&mut self, cond: Val, span: Span) {
        match cond {
            Val::Poison => {}
            Val::Var(c) if !self.ty(c).is_tile() && self.ty(c).elem == Elem::Scalar(Scalar::I1) => {
                self.push(StmtKind::Assume { cond: c })
            }
            Val::Var(_) => {
                let msg = format!(
                    "`tl.assume` needs a scalar condition (a comparison of scalars), found {}",
                    self.show(&cond)
                );
                self.error(span, msg);
            }
            other => match other.truthy() {
                Some(true) => {}
                Some(false) => {
                    let msg = format!("`tl.assume({})` is false", self.text(span).trim());
                    self.error(span, msg);
                }
                None => {
                    let msg = format!("`tl.assume` needs a condition, found {}", other.describe());
                    self.error(span, msg);
                }
            },
        }
    }

    pub fn assertion(&mut self, cond: &Val, msg: &str, span: Span, must_be_const: bool) {
        let what = if msg.is_empty() {
            String::new()
        } else {
            format!(": {msg}")
        };
        match cond.truthy() {
            Some(true) => {}
            Some(false) => {
                self.error(
                    span,
                    format!("assertion `{}` failed{what}", self.text(span).trim()),
                );
            }
            None if *cond == Val::Poison => {}
            None if must_be_const => {
                self.error(
                    span,
                    "`tl.static_assert` needs a condition known at compile time",
                );
            }
            None => self.warning(
                span,
                "this assertion depends on runtime values; kwb does not check it and ignores it",
            ),
        }
    }
}
