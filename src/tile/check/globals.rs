//! A kernel reading a module-level name: `NAME = tl.constexpr(3)` at the top of the file.
//!
//! Triton's rule (its code generator's global lookup): a kernel may read a global that is a
//! `tl.constexpr`, a dtype, a module or a function (`@triton.jit` or one of `triton.language`);
//! any other global (`X = 3`) is a `NameError`, unless it is read in a parameter's default
//! value. Triton 3.2 to 3.4 also accept a global annotated `X: tl.constexpr = 3`; kwb does too.
//! The global's value is evaluated when a kernel first reads it, with no local names in scope.

use super::emit::Ck;
use super::value::Val;
use crate::tile::ast::{ExprKind, GlobalDef};
use crate::tile::parse::is_constexpr_annotation;
use crate::tile::span::Span;

/// `tl.constexpr(value)` (or `constexpr(...)`) as written.
fn is_constexpr_call(e: &crate::tile::ast::Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, .. } if is_constexpr_annotation(func))
}

impl Ck<'_> {
    /// The value of module-level `name` (binding `idx` of file `unit`), read at `span`.
    pub(super) fn module_global(&mut self, name: &str, unit: usize, idx: usize, span: Span) -> Val {
        if let Some(v) = self.global_cache.get(&(unit, idx)) {
            return v.clone();
        }
        let u = &self.units[unit];
        let Some(g) = u.module.globals.get(idx) else {
            return Val::Poison;
        };
        let mut line = u.lines.loc(&u.source, g.span.start).line.to_string();
        if unit != self.unit {
            line = format!("{}:{line}", u.path.display());
        }
        let v = match &g.def {
            GlobalDef::Opaque => self.error(
                span,
                format!(
                    "`{name}` is a module-level name bound at line {line} by a statement kwb does not evaluate (host code, a block, a tuple or augmented assignment); write `{name} = tl.constexpr(...)` at the top level, or pass it to the kernel as a `tl.constexpr` parameter"
                ),
            ),
            GlobalDef::Assign {
                value,
                constexpr_ann,
            } => {
                if self.evaluating_globals.contains(&(unit, idx)) {
                    return self.error(
                        span,
                        format!("the module-level value of `{name}` refers to itself"),
                    );
                }
                self.evaluating_globals.push((unit, idx));
                let saved_env = std::mem::take(&mut self.env);
                let saved_gone = std::mem::take(&mut self.gone);
                let before = self.findings.len();
                let prev = self.enter_unit(unit);
                let v = self.eval(value);
                let shown = self.text(value.span).to_string();
                self.enter_unit(prev);
                let errors: Vec<_> = self.findings.drain(before..).collect();
                self.env = saved_env;
                self.gone = saved_gone;
                self.evaluating_globals.pop();
                let allowed = *constexpr_ann
                    || is_constexpr_call(value)
                    || self.in_default
                    || matches!(
                        v,
                        Val::DType(_)
                            | Val::PtrType(_)
                            | Val::Module(_)
                            | Val::Unit(_)
                            | Val::Builtin(_)
                            | Val::Jit(..)
                            | Val::ConstexprMarker
                            | Val::Poison
                    );
                match v {
                    _ if !errors.is_empty() => {
                        let first = errors[0].message.clone();
                        self.error(
                            span,
                            format!("a kernel cannot read the module-level value of `{name}` (line {line}): {first}"),
                        )
                    }
                    Val::Var(_) => self.error(
                        span,
                        format!("the module-level value of `{name}` (line {line}) is not known at compile time"),
                    ),
                    _ if !allowed => {
                        self.error(
                            span,
                            format!(
                                "a kernel cannot read the module-level global `{name}` (line {line}): as in Triton, only globals made with `tl.constexpr(...)` can be read inside a `@triton.jit` function; write `{name} = tl.constexpr({shown})`"
                            ),
                        )
                    }
                    v => v,
                }
            }
        };
        if !self.in_default {
            self.global_cache.insert((unit, idx), v.clone());
        }
        v
    }

    /// `tl.constexpr(value)` in a kernel: the compile-time value itself.
    pub(super) fn constexpr_call(&mut self, a: super::expr::Args) -> Val {
        let span = a.span;
        let Some(s) = self.bind("constexpr", a, &["value"], 1) else {
            return Val::Poison;
        };
        match Self::val(&s, 0) {
            Val::Var(_) => self.error(
                span,
                "`tl.constexpr(...)` of a runtime value: its value must be known at compile time",
            ),
            v => v,
        }
    }
}
