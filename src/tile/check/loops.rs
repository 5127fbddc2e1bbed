//! Loops: `tl.static_range` unrolls at compile time; `range`/`tl.range` and `while` become
//! structured IR loops. A name the body assigns that already held a value is *carried* around
//! the loop (`carry.rs`): its runtime parts each in one variable whose type may not change.

use super::carry::{Carried, Extra, Snapshot};
use super::emit::Ck;
use super::value::Val;
use crate::tile::ast::{Expr, ExprKind, Stmt};
use crate::tile::ir::{self, Scalar, Type, VarId};
use crate::tile::span::Span;

/// The most iterations a `tl.static_range` loop may unroll to.
const MAX_UNROLL: i64 = 4096;

/// The most values a kernel may have once unrolled and inlined.
const MAX_VARS: usize = 1 << 20;

impl Ck<'_> {
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
        let snap = self.snapshot();
        let mut extra = Extra::new();
        let (var, carried, names, body_ir) = loop {
            let (carried, names) = self.carry_in(body, Some(name), &extra);
            let var = self.new_var(Type::scalar(dtype), Some(name.to_string()));
            self.gone.remove(name);
            self.env.insert(name.to_string(), Val::Var(var));
            let (missed, body_ir) = self.loop_body(body, &carried);
            if self.again(&snap, &mut extra, missed) {
                continue;
            }
            break (var, carried, names, body_ir);
        };
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

    /// Checks a runtime loop's body one level deeper: the carried values it failed to carry
    /// (for [`Self::again`]) and its IR.
    fn loop_body(&mut self, body: &[Stmt], carried: &[Carried]) -> (Extra, Vec<ir::Stmt>) {
        self.depth += 1;
        self.blocks.push(Vec::new());
        self.stmts(body);
        let missed = self.carry_out(carried);
        self.stop = false;
        let body_ir = self.blocks.pop().unwrap_or_default();
        self.depth -= 1;
        (missed, body_ir)
    }

    pub(super) fn while_stmt(&mut self, cond: &Expr, body: &[Stmt]) {
        let loc = self.loc;
        let before = self.env.clone();
        let snap = self.snapshot();
        let mut extra = Extra::new();
        let (carried, names, cond_ir, cv, body_ir) = loop {
            let (carried, names) = self.carry_in(body, None, &extra);
            self.blocks.push(Vec::new());
            let cv = self.while_cond(cond);
            let cond_ir = self.blocks.pop().unwrap_or_default();
            let (missed, body_ir) = self.loop_body(body, &carried);
            if self.again(&snap, &mut extra, missed) {
                continue;
            }
            break (carried, names, cond_ir, cv, body_ir);
        };
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

    /// A `while` loop's condition, as a scalar boolean variable.
    fn while_cond(&mut self, cond: &Expr) -> Option<VarId> {
        let c = self.eval(cond);
        match c {
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
        }
    }

    /// Whether to check a loop's body again, from `snap`, because it changed parts that
    /// were not carried (`missed`): they are added to `extra`. A part is added once, so the
    /// body is checked at most once more for each.
    fn again(&mut self, snap: &Snapshot, extra: &mut Extra, missed: Extra) -> bool {
        let new: Vec<_> = missed.into_iter().filter(|m| !extra.contains(m)).collect();
        if new.is_empty() {
            return false;
        }
        extra.extend(new);
        self.restore(snap);
        true
    }
}
