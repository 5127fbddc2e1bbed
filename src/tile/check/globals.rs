//! A kernel reading a module-level name: `NAME = tl.constexpr(3)` at the top of the file.
//!
//! Triton's rule (its code generator's global lookup): a kernel may read a global that is a
//! `tl.constexpr`, a dtype, a module or a function (`@triton.jit` or one of `triton.language`);
//! any other global (`X = 3`) is a `NameError`, unless it is read in a parameter's default
//! value. Triton 3.2 to 3.4 also accept a global annotated `X: tl.constexpr = 3`; kwb does too.
//! The global's value is evaluated when a kernel first reads it, with no local names in scope.

use super::emit::Ck;
use super::value::Val;
use crate::tile::ast::{ExprKind, GlobalDef, Module};
use crate::tile::parse::is_constexpr_annotation;
use crate::tile::span::Span;
use std::collections::HashMap;

/// The module's top-level assignments that are a name's last binding (after any import or
/// `def` of the same name), by name: the index into `module.globals`.
pub(super) fn last_bindings(module: &Module) -> HashMap<String, usize> {
    let mut out: HashMap<String, usize> = HashMap::new();
    for (i, g) in module.globals.iter().enumerate() {
        let later_def = module
            .funcs
            .iter()
            .any(|f| f.name.name == g.name.name && f.def_span.start > g.span.start);
        let later_import = module.imports.iter().any(|imp| {
            imp.span.start > g.span.start
                && if imp.from {
                    imp.names
                        .iter()
                        .any(|(n, a)| a.as_deref().unwrap_or(n) == g.name.name)
                } else {
                    imp.alias
                        .as_deref()
                        .or(imp.module.first().map(String::as_str))
                        == Some(g.name.name.as_str())
                }
        });
        if later_def || later_import {
            out.remove(&g.name.name);
        } else {
            out.insert(g.name.name.clone(), i);
        }
    }
    out
}

/// `tl.constexpr(value)` (or `constexpr(...)`) as written.
fn is_constexpr_call(e: &crate::tile::ast::Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, .. } if is_constexpr_annotation(func))
}

impl Ck<'_> {
    /// The value of module-level `name` (its binding `idx`), read at `span`.
    pub(super) fn module_global(&mut self, name: &str, idx: usize, span: Span) -> Val {
        if let Some(v) = self.global_cache.get(name) {
            return v.clone();
        }
        let module = self.module;
        let Some(g) = module.globals.get(idx) else {
            return Val::Poison;
        };
        let line = self.lines.loc(self.src, g.span.start).line;
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
                if self.evaluating_globals.iter().any(|n| n == name) {
                    return self.error(
                        span,
                        format!("the module-level value of `{name}` refers to itself"),
                    );
                }
                self.evaluating_globals.push(name.to_string());
                let saved_env = std::mem::take(&mut self.env);
                let saved_gone = std::mem::take(&mut self.gone);
                let before = self.findings.len();
                let v = self.eval(value);
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
                            | Val::Builtin(_)
                            | Val::Jit(_)
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
                        let shown = self.text(value.span).to_string();
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
            self.global_cache.insert(name.to_string(), v.clone());
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
