//! Expressions: names (with scopes and "did you mean" suggestions), attributes (`tl.load`,
//! `x.to`, `x.T`, `tl.math.tanh`), subscripts (`x[:, None]`, `t[0]`), operators, conditional
//! expressions and calls (built-ins, methods and inlined `@triton.jit` helpers).

use super::emit::Ck;
use super::names;
use super::units::Binding;
use super::value::{show_type, Val};
use crate::tile::ast::{BoolOp, Expr, ExprKind, Index};
use crate::tile::ir::{Elem, Op, Type};
use crate::tile::span::Span;

/// An evaluated call argument.
pub(super) struct Arg {
    pub val: Val,
    pub span: Span,
}

/// A call's evaluated arguments.
pub(super) struct Args {
    pub pos: Vec<Arg>,
    pub kw: Vec<(String, Arg)>,
    /// The whole call.
    pub span: Span,
}

impl Ck<'_> {
    pub fn eval(&mut self, e: &Expr) -> Val {
        match &e.kind {
            ExprKind::Name(n) => self.lookup(n, e.span),
            ExprKind::Int(v) => Val::Int(*v),
            ExprKind::Float(v) => Val::Float(*v),
            ExprKind::Str(s) => Val::Str(s.clone()),
            ExprKind::Bool(b) => Val::Bool(*b),
            ExprKind::None => Val::None,
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                Val::Tuple(items.iter().map(|i| self.eval(i)).collect())
            }
            ExprKind::Attr { value, attr } => {
                let base = self.eval(value);
                self.attribute(base, value, &attr.name, e.span)
            }
            ExprKind::Subscript { value, index } => {
                let base = self.eval(value);
                self.subscript(base, index, e.span)
            }
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand);
                self.unary(*op, v, e.span)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.eval(lhs);
                let r = self.eval(rhs);
                self.binary(*op, l, r, e.span)
            }
            ExprKind::Logic { op, lhs, rhs } => {
                let l = self.eval(lhs);
                // Python's short circuit on a compile-time left side.
                match (l.truthy(), op) {
                    (Some(false), BoolOp::And) | (Some(true), BoolOp::Or) => l,
                    (Some(_), _) => self.eval(rhs),
                    (None, _) => {
                        let r = self.eval(rhs);
                        self.logic(*op == BoolOp::And, l, r, e.span)
                    }
                }
            }
            ExprKind::Compare { first, rest } => {
                // `a < b < c` is `(a < b) and (b < c)`, as in Python.
                let mut left = self.eval(first);
                let mut acc: Option<Val> = None;
                for (op, rhs) in rest {
                    let right = self.eval(rhs);
                    let c = self.compare(*op, left, right.clone(), e.span);
                    acc = Some(match acc {
                        None => c,
                        Some(prev) => match prev.truthy() {
                            Some(false) => prev,
                            Some(true) => c,
                            None => self.logic(true, prev, c, e.span),
                        },
                    });
                    left = right;
                }
                acc.unwrap_or(Val::Poison)
            }
            ExprKind::IfExp {
                cond,
                then,
                otherwise,
            } => self.if_exp(cond, then, otherwise, e.span),
            ExprKind::Call { func, args, kwargs } => {
                let f = self.eval(func);
                let a = self.eval_args(args, kwargs, e.span);
                self.call(f, func, a)
            }
        }
    }

    /// A call's arguments, evaluated left to right: the positional ones, then the keywords.
    pub(super) fn eval_args(
        &mut self,
        args: &[Expr],
        kwargs: &[crate::tile::ast::Keyword],
        span: Span,
    ) -> Args {
        let mut a = Args {
            pos: Vec::new(),
            kw: Vec::new(),
            span,
        };
        for x in args {
            let val = self.eval(x);
            a.pos.push(Arg { val, span: x.span });
        }
        for k in kwargs {
            let val = self.eval(&k.value);
            let arg = Arg {
                val,
                span: k.value.span,
            };
            a.kw.push((k.name.name.clone(), arg));
        }
        a
    }

    fn if_exp(&mut self, cond: &Expr, then: &Expr, otherwise: &Expr, span: Span) -> Val {
        let c = self.eval(cond);
        match c.truthy() {
            Some(true) => return self.eval(then),
            Some(false) => return self.eval(otherwise),
            None => {}
        }
        let a = self.eval(then);
        let b = self.eval(otherwise);
        let Val::Var(cv) = c else { return Val::Poison };
        if self.ty(cv).is_tile() {
            return self.error(
                cond.span,
                "a conditional expression on a tile: use `tl.where(cond, a, b)`",
            );
        }
        self.select(Val::Var(cv), a, b, span)
    }

    /// A name, from the kernel's scope, then the file's, then Python's built-ins.
    pub fn lookup(&mut self, name: &str, span: Span) -> Val {
        if let Some(v) = self.env.get(name) {
            return v.clone();
        }
        if let Some(why) = self.gone.get(name) {
            let msg = why.clone();
            return self.error(span, msg);
        }
        match self.tables[self.unit].get(name).cloned() {
            Some(Binding::Global(u, i)) => return self.module_global(name, u, i, span),
            Some(Binding::Foreign(at, why)) => {
                let line = self.lines.loc(self.src, span.start).line;
                return self.error(at, format!("{why} (used at line {line})"));
            }
            Some(Binding::Value(v)) => return v,
            None => {}
        }
        if let Some(b) = names::python_builtin(name) {
            return b;
        }
        let mut known: Vec<&str> = self.env.keys().map(String::as_str).collect();
        known.extend(self.tables[self.unit].keys().map(String::as_str));
        known.extend(names::PYTHON_BUILTINS.iter().map(|(n, _)| *n));
        let msg = match names::suggest(name, known) {
            Some(s) => format!("unknown name `{name}`; did you mean `{s}`?"),
            None => format!("unknown name `{name}`"),
        };
        self.error(span, msg)
    }

    /// `base.attr`.
    fn attribute(&mut self, base: Val, base_expr: &Expr, attr: &str, span: Span) -> Val {
        match base {
            Val::Poison => Val::Poison,
            Val::Module(m) => match names::module_attr(&m, attr) {
                Some(v) => v,
                None => {
                    let written = self.text(base_expr.span).to_string();
                    let msg = if m == "math" {
                        format!(
                            "`{written}.{attr}`: only the constants of Python's `math` \
                             (pi, e, tau, inf, nan) can be used inside a kernel"
                        )
                    } else if !names::is_kernel_module(&m) {
                        format!("the module `{written}` cannot be used inside a kernel")
                    } else {
                        match names::suggest(attr, names::module_names(&m)) {
                            Some(s) => format!(
                                "unknown name `{written}.{attr}`; did you mean `{written}.{s}`?"
                            ),
                            None => format!("unknown name `{written}.{attr}`"),
                        }
                    };
                    self.error(span, msg)
                }
            },
            Val::Unit(w) => match self.tables[w].get(attr).cloned() {
                Some(Binding::Value(v)) => v,
                Some(Binding::Global(u, i)) => self.module_global(attr, u, i, span),
                Some(Binding::Foreign(_, why)) => self.error(span, why),
                None => {
                    let path = self.units[w].path.display().to_string();
                    let msg = format!("the module {path} has no top-level `{attr}` kwb can read");
                    self.error(span, msg)
                }
            },
            Val::Desc(d) => match attr {
                "load" => Val::DescMethod(d, "load"),
                "store" => Val::DescMethod(d, "store"),
                _ => {
                    let msg = format!(
                        "a tensor descriptor has no attribute `{attr}`; it has `load` and `store`"
                    );
                    self.error(span, msg)
                }
            },
            Val::BlockPtr(_) if attr == "advance" => Val::Bound(Box::new(base), "advance"),
            // Triton's is `pointer_type(block_type(elem, block))`; its `.element_ty` is used
            // as the element dtype (`x.to(p.dtype.element_ty)`), which this gives.
            Val::BlockPtr(b) if matches!(attr, "dtype" | "type") => {
                match self.block_ptr_pointee(&b) {
                    Some(s) => Val::PtrType(s),
                    None => Val::Poison,
                }
            }
            Val::BlockPtr(_) => {
                let msg = format!(
                    "a block pointer has no attribute `{attr}` (it has `.dtype` and `.advance`); \
                     read it with `tl.load`"
                );
                self.error(span, msg)
            }
            Val::Var(x) => match attr {
                "T" => self.permute(x, None, span),
                "dtype" => match self.ty(x).elem {
                    Elem::Scalar(s) => Val::DType(s),
                    Elem::Ptr(s) => Val::PtrType(s),
                },
                // A scalar's type is its dtype; a tile's (a block type) is not supported.
                "type" if !self.ty(x).is_tile() => match self.ty(x).elem {
                    Elem::Scalar(s) => Val::DType(s),
                    Elem::Ptr(s) => Val::PtrType(s),
                },
                "type" => Val::BlockType(self.ty(x).elem, self.ty(x).shape.clone()),
                "shape" => Val::Tuple(
                    self.ty(x)
                        .shape
                        .iter()
                        .map(|&d| Val::Int(i64::from(d)))
                        .collect(),
                ),
                _ => match names::method(attr) {
                    Some(m) => Val::Method(x, m),
                    None => {
                        let msg = match names::suggest(attr, names::METHODS.iter().map(|(n, _)| *n))
                        {
                            Some(s) => format!(
                                "{} has no attribute `{attr}`; did you mean `{s}`?",
                                super::emit::a_type(self.ty(x))
                            ),
                            None => format!(
                                "{} has no attribute `{attr}`",
                                super::emit::a_type(self.ty(x))
                            ),
                        };
                        self.error(span, msg)
                    }
                },
            },
            Val::PtrType(s) if attr == "element_ty" => Val::DType(s),
            ref dt @ (Val::DType(_) | Val::Fp8(_) | Val::PtrType(_) | Val::BlockType(..)) => {
                match super::dtype_attr::attr(dt, attr) {
                    Some(v) => v,
                    None => {
                        let msg = format!("{} has no attribute `{attr}`", dt.describe());
                        self.error(span, msg)
                    }
                }
            }
            // A constexpr's `.value` is the value itself (`n.value` where `n: tl.constexpr`).
            ref c @ (Val::Int(_) | Val::Float(_) | Val::Bool(_) | Val::Str(_) | Val::None)
                if attr == "value" =>
            {
                c.clone()
            }
            other => {
                let msg = format!("{} has no attribute `{attr}`", other.describe());
                self.error(span, msg)
            }
        }
    }

    /// `base[...]`: a tuple element, or `:`/`None` to keep or insert tile dimensions.
    fn subscript(&mut self, base: Val, index: &[Index], span: Span) -> Val {
        if base == Val::Poison {
            return Val::Poison;
        }
        if let Val::Tuple(items) = &base {
            let [Index::Expr(i)] = index else {
                return self.error(span, "a tuple takes one integer index");
            };
            let iv = self.eval(i);
            let Val::Int(k) = iv else {
                if iv == Val::Poison {
                    return iv;
                }
                return self.error(i.span, "a tuple index must be a compile-time integer");
            };
            let n = items.len() as i64;
            let at = if k < 0 { k.wrapping_add(n) } else { k };
            return match usize::try_from(at).ok().and_then(|a| items.get(a)) {
                Some(v) => v.clone(),
                None => self.error(
                    i.span,
                    format!("tuple index {k} is out of range for a tuple of {n} elements"),
                ),
            };
        }
        let Val::Var(x) = base else {
            let msg = format!("{} cannot be subscripted", base.describe());
            return self.error(span, msg);
        };
        let ty = self.ty(x).clone();
        let keeps = index.iter().filter(|i| matches!(i, Index::Full(_))).count();
        if keeps > ty.shape.len() {
            let msg = format!(
                "too many `:` for a {}: it has {} dimension(s)",
                show_type(&ty),
                ty.shape.len()
            );
            return self.error(span, msg);
        }
        let mut cur = x;
        let mut axis = 0u32;
        for i in index {
            match i {
                Index::Full(_) => axis += 1,
                Index::Expr(e) => {
                    let v = self.eval(e);
                    match v {
                        Val::None => {
                            let mut shape = self.ty(cur).shape.clone();
                            shape.insert(axis as usize, 1);
                            cur = self.emit(
                                Type {
                                    elem: ty.elem,
                                    shape,
                                },
                                Op::ExpandDims { src: cur, axis },
                            );
                            axis += 1;
                        }
                        Val::Poison => return Val::Poison,
                        _ => {
                            return self.error(
                                e.span,
                                "a tile can only be indexed with `:` and `None` (picking elements is not supported; use `tl.where` and a reduction)",
                            )
                        }
                    }
                }
            }
        }
        Val::Var(cur)
    }

    /// Calls `f` (written as `func`) with evaluated arguments.
    fn call(&mut self, f: Val, func: &Expr, mut a: Args) -> Val {
        match f {
            Val::Poison => Val::Poison,
            Val::Builtin(name) => self.builtin(name, a),
            Val::Method(x, name) => {
                a.pos.insert(
                    0,
                    Arg {
                        val: Val::Var(x),
                        span: func.span,
                    },
                );
                self.builtin(name, a)
            }
            Val::Jit(u, idx) => {
                let prev = self.enter_unit(u);
                let v = self.inline_call(idx, a);
                self.enter_unit(prev);
                v
            }
            Val::ConstexprMarker => self.constexpr_call(a),
            Val::Bound(recv, name) if super::dtype_attr::PREDICATES.contains(&name) => {
                if !a.pos.is_empty() || !a.kw.is_empty() {
                    let msg = format!("`{}` takes no arguments", self.text(func.span));
                    return self.error(func.span, msg);
                }
                match super::dtype_attr::predicate(&recv, name) {
                    Some(b) => Val::Bool(b),
                    None => Val::Poison,
                }
            }
            Val::Bound(recv, name) => {
                a.pos.insert(
                    0,
                    Arg {
                        val: *recv,
                        span: func.span,
                    },
                );
                self.builtin(name, a)
            }
            Val::DescMethod(d, "load") => self.desc_load(d, a),
            Val::DescMethod(d, _) => self.desc_store(d, a),
            other => {
                let msg = format!(
                    "`{}` is {}, which cannot be called",
                    self.text(func.span),
                    other.describe()
                );
                self.error(func.span, msg)
            }
        }
    }
}
