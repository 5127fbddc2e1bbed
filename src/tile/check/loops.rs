//! Loops: `tl.static_range` unrolls at compile time; `range`/`tl.range` and `while` become
//! structured IR loops. A name the body assigns that already held a value is *carried* around
//! the loop in one variable whose type may not change.

use super::emit::Ck;
use super::value::{default_dtype, Val};
use crate::tile::ast::{Expr, ExprKind, Stmt, StmtKind};
use crate::tile::ir::{self, Op, Scalar, Type, VarId};
use crate::tile::span::Span;
use std::collections::{BTreeSet, HashMap};

/// The most iterations a `tl.static_range` loop may unroll to.
const MAX_UNROLL: i64 = 4096;

/// The most values a kernel may have once unrolled and inlined.
const MAX_VARS: usize = 1 << 20;

impl Ck<'_> {
    /// The names a loop body assigns (its targets, nested blocks included).
    fn assigned(body: &[Stmt], out: &mut BTreeSet<String>) {
        fn targets(e: &Expr, out: &mut BTreeSet<String>) {
            match &e.kind {
                ExprKind::Name(n) => {
                    out.insert(n.clone());
                }
                ExprKind::Tuple(items) | ExprKind::List(items) => {
                    items.iter().for_each(|i| targets(i, out))
                }
                _ => {}
            }
        }
        for s in body {
            match &s.kind {
                StmtKind::Assign { targets: ts, .. } => ts.iter().for_each(|t| targets(t, out)),
                StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => {
                    targets(target, out)
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    Self::assigned(then, out);
                    Self::assigned(otherwise, out);
                }
                StmtKind::For { target, body, .. } => {
                    targets(target, out);
                    Self::assigned(body, out);
                }
                StmtKind::While { body, .. } => Self::assigned(body, out),
                _ => {}
            }
        }
    }

    /// Before a runtime loop: each name the body assigns that already holds a number gets one
    /// variable that carries it around the loop.
    fn carry_in(
        &mut self,
        body: &[Stmt],
        exclude: Option<&str>,
    ) -> (Vec<(String, VarId)>, BTreeSet<String>) {
        let mut names = BTreeSet::new();
        Self::assigned(body, &mut names);
        let mut carried = Vec::new();
        for n in &names {
            if Some(n.as_str()) == exclude {
                continue;
            }
            let Some(v) = self.env.get(n).cloned() else {
                continue;
            };
            let ty = match &v {
                Val::Var(x) => self.ty(*x).clone(),
                v if v.is_number() => Type::scalar(default_dtype(v).unwrap_or(Scalar::I32)),
                _ => continue,
            };
            let c = self.new_var(ty.clone(), Some(n.clone()));
            if let Some(x) = self.coerce_to(&v, &ty) {
                self.push(ir::StmtKind::Assign {
                    dst: c,
                    op: Op::Copy(x),
                });
            }
            self.env.insert(n.clone(), Val::Var(c));
            carried.push((n.clone(), c));
        }
        (carried, names)
    }

    /// At the end of a loop body: each carried name's new value goes back into its variable.
    fn carry_out(&mut self, carried: &[(String, VarId)]) {
        if self.stop {
            return;
        }
        for (n, c) in carried {
            let Some(v) = self.env.get(n).cloned() else {
                continue;
            };
            if v == Val::Var(*c) || v == Val::Poison {
                continue;
            }
            let ty = self.ty(*c).clone();
            match self.coerce_to(&v, &ty) {
                Some(x) => self.push(ir::StmtKind::Assign {
                    dst: *c,
                    op: Op::Copy(x),
                }),
                None => {
                    let span = self.here();
                    let msg = format!(
                        "`{n}` is carried around the loop as {} but the body assigns it {}; a loop-carried variable keeps its type (convert with `.to(...)`)",
                        super::emit::a_type(&ty),
                        self.show(&v)
                    );
                    self.error(span, msg);
                }
            }
        }
    }

    /// After a runtime loop: carried names hold their variables; names first assigned inside
    /// the loop are not usable after it.
    fn after_loop(
        &mut self,
        before: HashMap<String, Val>,
        carried: &[(String, VarId)],
        names: &BTreeSet<String>,
        line: u32,
    ) {
        self.env = before;
        for (n, c) in carried {
            self.env.insert(n.clone(), Val::Var(*c));
        }
        for n in names {
            if !self.env.contains_key(n) {
                self.gone.insert(
                    n.clone(),
                    format!("`{n}` is assigned only inside the loop at line {line}; assign it before the loop to use it after"),
                );
            }
        }
    }

    pub(super) fn for_stmt(&mut self, target: &Expr, iter: &Expr, body: &[Stmt], span: Span) {
        let ExprKind::Name(var_name) = &target.kind else {
            self.error(target.span, "a `for` loop's target must be a single name");
            return;
        };
        let ExprKind::Call { func, args, kwargs } = &iter.kind else {
            self.error(iter.span, "a `for` loop must iterate over `range(...)`, `tl.range(...)` or `tl.static_range(...)`");
            return;
        };
        let f = self.eval(func);
        let kind = match f {
            Val::Builtin(b @ ("py.range" | "range" | "static_range")) => b,
            Val::Poison => return,
            _ => {
                self.error(iter.span, "a `for` loop must iterate over `range(...)`, `tl.range(...)` or `tl.static_range(...)`");
                return;
            }
        };
        let a = self.eval_args(args, kwargs, iter.span);
        let params: &[&str] = if kind == "range" {
            &[
                "arg1",
                "arg2",
                "step",
                "num_stages",
                "loop_unroll_factor",
                "disallow_acc_multi_buffer",
                "flatten",
                "warp_specialize",
            ]
        } else {
            &["arg1", "arg2", "step"]
        };
        let Some(s) = self.bind(kind, a, params, 1) else {
            return;
        };
        let mut bounds: Vec<(Val, Span)> = (0..3)
            .filter(|i| s[*i].is_some())
            .map(|i| (Self::val(&s, i), Self::span_of(&s, i, iter.span)))
            .collect();
        if bounds.len() == 1 {
            bounds.insert(0, (Val::Int(0), iter.span));
        }
        if bounds.len() == 2 {
            bounds.push((Val::Int(1), iter.span));
        }
        if kind == "static_range" {
            self.static_for(var_name, &bounds, body, iter.span);
            return;
        }
        let mut stages = None;
        if kind == "range" && s[3].is_some() {
            let sp = Self::span_of(&s, 3, iter.span);
            match self.const_int(&Self::val(&s, 3), sp, "`num_stages`") {
                Some(n) if (1..=8).contains(&n) => stages = Some(n as u32),
                Some(n) => {
                    self.error(sp, format!("`num_stages` must be from 1 to 8, got {n}"));
                }
                None => {}
            }
        }
        self.range_for(var_name, &bounds, body, span, stages);
    }

    fn static_for(&mut self, name: &str, bounds: &[(Val, Span)], body: &[Stmt], span: Span) {
        let mut v = [0i64; 3];
        for (i, (b, sp)) in bounds.iter().enumerate().take(3) {
            let Some(x) = self.const_int(b, *sp, "a `tl.static_range` bound") else {
                return;
            };
            v[i] = x;
        }
        let [start, end, step] = v;
        if step == 0 {
            self.error(span, "`tl.static_range` step must not be zero");
            return;
        }
        let count = if step > 0 {
            (i128::from(end) - i128::from(start) + i128::from(step) - 1) / i128::from(step)
        } else {
            (i128::from(start) - i128::from(end) - i128::from(step) - 1) / -i128::from(step)
        };
        if count > i128::from(MAX_UNROLL) {
            self.error(span, format!("`tl.static_range` would unroll {count} iterations; at most {MAX_UNROLL} are allowed"));
            return;
        }
        if count <= 0 && self.unit == 0 {
            self.reached.folded(body);
        }
        for k in 0..count.max(0) as i64 {
            if self.stop {
                break;
            }
            if self.vars.len() > MAX_VARS {
                self.error(span, format!("unrolling this `tl.static_range` makes the kernel too large (over {MAX_VARS} values)"));
                break;
            }
            let i = start.wrapping_add(k.wrapping_mul(step));
            self.gone.remove(name);
            self.env.insert(name.to_string(), Val::Int(i));
            self.stmts(body);
        }
    }

    fn range_for(
        &mut self,
        name: &str,
        bounds: &[(Val, Span)],
        body: &[Stmt],
        span: Span,
        num_stages: Option<u32>,
    ) {
        // The loop's integer dtype: the runtime bounds' promoted dtype, else int32 (int64 when
        // a constant needs it).
        let mut dtype: Option<Scalar> = None;
        let mut wide = false;
        let mut ok = true;
        for (b, sp) in bounds {
            match b {
                Val::Int(i) => wide |= i32::try_from(*i).is_err(),
                Val::Bool(_) => {}
                Val::Var(x)
                    if !self.ty(*x).is_tile()
                        && self.scalar_of(*x).is_some_and(|s| !s.is_float()) =>
                {
                    let s = self.scalar_of(*x).unwrap_or(Scalar::I32);
                    dtype = Some(match dtype {
                        None => s,
                        Some(d) => super::value::promote_strong(d, s),
                    });
                }
                Val::Poison => ok = false,
                other => {
                    let msg = format!(
                        "a `range` bound must be an integer scalar, found {}",
                        self.show(other)
                    );
                    self.error(*sp, msg);
                    ok = false;
                }
            }
        }
        if let Some((Val::Int(0), sp)) = bounds.get(2) {
            self.error(*sp, "a `range` step must not be zero");
            ok = false;
        }
        let mut dtype = dtype.unwrap_or(Scalar::I32);
        if dtype == Scalar::I1 {
            dtype = Scalar::I32;
        }
        if wide && dtype.size() < 8 {
            dtype = Scalar::I64;
        }
        let mut vars = Vec::new();
        for (b, _) in bounds {
            if let Some(x) = self.operand_as(b, dtype, &[]) {
                vars.push(x);
            }
        }
        let loc = self.loc;
        let before = self.env.clone();
        let (carried, names) = self.carry_in(body, Some(name));
        let var = self.new_var(Type::scalar(dtype), Some(name.to_string()));
        self.gone.remove(name);
        self.env.insert(name.to_string(), Val::Var(var));
        self.depth += 1;
        self.blocks.push(Vec::new());
        self.stmts(body);
        self.carry_out(&carried);
        self.stop = false;
        let body_ir = self.blocks.pop().unwrap_or_default();
        self.depth -= 1;
        self.after_loop(before, &carried, &names, loc.line);
        if let (true, [start, end, step]) = (ok, vars.as_slice()) {
            self.loc = loc;
            self.push(ir::StmtKind::For {
                var,
                start: *start,
                end: *end,
                step: *step,
                body: body_ir,
                num_stages,
            });
        }
        let _ = span;
    }

    pub(super) fn while_stmt(&mut self, cond: &Expr, body: &[Stmt]) {
        let loc = self.loc;
        let before = self.env.clone();
        let (carried, names) = self.carry_in(body, None);
        self.blocks.push(Vec::new());
        let c = self.eval(cond);
        let cv = match c {
            Val::Var(x) if self.ty(x).is_tile() => {
                self.error(
                    cond.span,
                    "`while` on a tile: a loop condition must be a scalar",
                );
                None
            }
            Val::Var(x) if self.scalar_of(x).is_some() => Some(self.as_bool(x)),
            Val::Poison => None,
            v if v.truthy().is_some() && !matches!(v, Val::Tuple(_) | Val::Str(_)) => {
                self.as_dtype(&Val::Bool(v.truthy() == Some(true)), Scalar::I1)
            }
            other => {
                let msg = format!(
                    "a `while` condition must be a boolean, found {}",
                    self.show(&other)
                );
                self.error(cond.span, msg);
                None
            }
        };
        let cond_ir = self.blocks.pop().unwrap_or_default();
        self.depth += 1;
        self.blocks.push(Vec::new());
        self.stmts(body);
        self.carry_out(&carried);
        self.stop = false;
        let body_ir = self.blocks.pop().unwrap_or_default();
        self.depth -= 1;
        self.after_loop(before, &carried, &names, loc.line);
        if let Some(cond) = cv {
            self.loc = loc;
            self.push(ir::StmtKind::While {
                cond_body: cond_ir,
                cond,
                body: body_ir,
            });
        }
    }
}
