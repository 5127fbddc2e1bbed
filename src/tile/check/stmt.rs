//! Statements and `if`. A constexpr `if` is decided here and only its taken branch is
//! checked; `tl.static_range` loops unroll. Runtime `if`, `for` and `while` become structured
//! IR: a name assigned in a loop is *carried* in one variable whose type may not change, and a
//! name assigned in both branches of an `if` is merged into one variable after it.

use super::emit::Ck;
use super::value::{default_dtype, promote, show_type, Operand, Val};
use crate::tile::ast::{Expr, ExprKind, Stmt, StmtKind};
use crate::tile::ir::{self, Op, Scalar, Type};
use crate::tile::span::Span;
use std::collections::{BTreeSet, HashMap};

impl Ck<'_> {
    pub fn stmts(&mut self, body: &[Stmt]) {
        for (i, s) in body.iter().enumerate() {
            if self.stop {
                // After a `return`: never run, as in Python.
                if self.unit == 0 {
                    self.reached.folded(&body[i..]);
                }
                break;
            }
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        // Another file's code keeps the line of its call in the kernel's file.
        if self.unit == 0 {
            self.loc = self.lines.loc(self.src, s.span.start);
            self.reached.checked(s);
        }
        match &s.kind {
            StmtKind::Expr(e) => {
                self.eval(e);
            }
            StmtKind::Pass => {}
            StmtKind::Assign { targets, value } => {
                let v = self.eval(value);
                let v = self.as_tensor(v);
                for t in targets {
                    self.assign(t, v.clone());
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                let cur = self.eval(target);
                let rhs = self.eval(value);
                let v = self.binary(*op, cur, rhs, s.span);
                let v = self.as_tensor(v);
                self.assign(target, v);
            }
            StmtKind::AnnAssign { target, value, ann } => {
                if let Some(value) = value {
                    let v = self.eval(value);
                    let constexpr = crate::tile::parse::is_constexpr_annotation(ann);
                    let v = if constexpr { v } else { self.as_tensor(v) };
                    self.assign(target, v);
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(cond, then, otherwise),
            StmtKind::For { target, iter, body } => self.for_stmt(target, iter, body, s.span),
            StmtKind::While { cond, body } => self.while_stmt(cond, body),
            StmtKind::Return(value) => self.return_stmt(value.as_ref(), s.span),
            StmtKind::Assert { cond, msg } => {
                let c = self.eval(cond);
                let m = match msg.as_ref().map(|m| self.eval(m)) {
                    Some(Val::Str(m)) => m,
                    _ => String::new(),
                };
                self.assertion(&c, &m, cond.span, false);
            }
        }
    }

    /// A number assigned to a name, as compiled Triton assigns it: a runtime scalar (int32,
    /// int64 or fp32, or int1), not a compile-time number, unless annotated `tl.constexpr`.
    /// So `t = -1` then `t % 7` divides as tensors do (-1, not Python's 6), and `c = 2.0` then
    /// `x_f16 * c` is fp32, as in Triton.
    fn as_tensor(&mut self, v: Val) -> Val {
        match v {
            Val::Int(_) | Val::Float(_) | Val::Bool(_) => {
                let Some(s) = default_dtype(&v) else { return v };
                let s = match (&v, s) {
                    (Val::Int(i), Scalar::I32) if i32::try_from(*i).is_err() => Scalar::I64,
                    _ => s,
                };
                self.operand_as(&v, s, &[]).map_or(Val::Poison, Val::Var)
            }
            Val::Tuple(items) => Val::Tuple(items.into_iter().map(|x| self.as_tensor(x)).collect()),
            other => other,
        }
    }

    /// Binds a target (a name, or a tuple of names) to a value.
    pub fn assign(&mut self, target: &Expr, v: Val) {
        match &target.kind {
            ExprKind::Name(n) => {
                if let Val::Var(x) = v {
                    self.name_var(x, n);
                }
                self.gone.remove(n);
                self.env.insert(n.clone(), v);
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => match v {
                Val::Tuple(vals) if vals.len() == items.len() => {
                    for (t, v) in items.iter().zip(vals) {
                        self.assign(t, v);
                    }
                }
                Val::Poison => {
                    for t in items {
                        self.assign(t, Val::Poison);
                    }
                }
                other => {
                    let msg = format!(
                        "cannot unpack {} into {} names",
                        match &other {
                            Val::Tuple(t) => format!("a tuple of {}", t.len()),
                            o => self.show(o),
                        },
                        items.len()
                    );
                    self.error(target.span, msg);
                    for t in items {
                        self.assign(t, Val::Poison);
                    }
                }
            },
            _ => {
                self.error(target.span, "cannot assign to this expression");
            }
        }
    }

    fn if_stmt(&mut self, cond: &Expr, then: &[Stmt], otherwise: &[Stmt]) {
        let c = self.eval(cond);
        if let Some(t) = c.truthy() {
            if !matches!(c, Val::Var(_)) {
                let (taken, untaken) = if t {
                    (then, otherwise)
                } else {
                    (otherwise, then)
                };
                if self.unit == 0 {
                    self.reached.folded(untaken);
                }
                self.stmts(taken);
                return;
            }
        }
        let cv = match c {
            Val::Var(x) if self.ty(x).is_tile() => {
                let msg = format!(
                    "`if` on a tile ({}): a condition must be a scalar; use `tl.where(cond, a, b)` to choose elementwise",
                    show_type(self.ty(x))
                );
                self.error(cond.span, msg);
                None
            }
            Val::Var(x) if self.scalar_of(x).is_some() => Some(self.as_bool(x)),
            Val::Poison => None,
            other => {
                let msg = format!(
                    "an `if` condition must be a boolean, found {}",
                    self.show(&other)
                );
                self.error(cond.span, msg);
                None
            }
        };
        let loc = self.loc;
        let before = self.env.clone();
        let gone_before = self.gone.clone();
        self.depth += 1;
        let (then_ir, then_env, then_stop) = self.branch(then);
        self.env = before.clone();
        self.gone = gone_before.clone();
        let (else_ir, else_env, else_stop) = self.branch(otherwise);
        self.depth -= 1;
        self.env = before.clone();
        self.gone = gone_before;
        let mut blocks = [then_ir, else_ir];
        let line = loc.line;
        let keys: BTreeSet<String> = then_env.keys().chain(else_env.keys()).cloned().collect();
        for k in keys {
            let (t, e) = (then_env.get(&k), else_env.get(&k));
            if t == before.get(&k) && e == before.get(&k) {
                continue;
            }
            let sides: Vec<(usize, &Val)> = [(0, t, then_stop), (1, e, else_stop)]
                .into_iter()
                .filter(|(_, _, stop)| !stop)
                .filter_map(|(i, v, _)| v.map(|v| (i, v)))
                .collect();
            let live = [then_stop, else_stop].iter().filter(|s| !**s).count();
            if sides.len() < live {
                self.env.remove(&k);
                self.gone.insert(
                    k.clone(),
                    format!("`{k}` is assigned in only one branch of the `if` at line {line}; assign it before the `if` or in both branches"),
                );
                continue;
            }
            match sides.as_slice() {
                [] => {}
                [(_, v)] => {
                    let v = (*v).clone();
                    self.env.insert(k, v);
                }
                [(_, a), (_, b)] if a == b => {
                    let v = (*a).clone();
                    self.env.insert(k, v);
                }
                _ => {
                    let merged = self.merge_parts(&k, &sides, &mut blocks, line);
                    self.env.insert(k, merged);
                }
            }
        }
        let [then_ir, else_ir] = blocks;
        if then_stop && else_stop {
            self.stop = true;
        }
        if let Some(cond) = cv {
            self.loc = loc;
            self.push(ir::StmtKind::If {
                cond,
                then: then_ir,
                otherwise: else_ir,
            });
        }
    }

    /// Checks one branch in its own block; returns its IR, its names and whether it returned.
    fn branch(&mut self, body: &[Stmt]) -> (Vec<ir::Stmt>, HashMap<String, Val>, bool) {
        self.blocks.push(Vec::new());
        self.stmts(body);
        let stop = std::mem::replace(&mut self.stop, false);
        let ir = self.blocks.pop().unwrap_or_default();
        (ir, std::mem::take(&mut self.env), stop)
    }

    /// One variable for a name that two branches set differently: each branch copies its value
    /// into it at its end.
    pub(super) fn merge(
        &mut self,
        name: &str,
        sides: &[(usize, &Val)],
        blocks: &mut [Vec<ir::Stmt>; 2],
        line: u32,
    ) -> Val {
        if sides.iter().any(|(_, v)| **v == Val::Poison) {
            return Val::Poison;
        }
        let ty = match self.common_type(sides.iter().map(|(_, v)| *v)) {
            Ok(t) => t,
            Err(msg) => {
                let span = self.here();
                self.error(span, format!("`{name}` {msg} after the two branches of the `if` at line {line}; convert one side with `.to(...)` so both agree"));
                return Val::Poison;
            }
        };
        let m = self.new_var(ty.clone(), Some(name.to_string()));
        for (i, v) in sides {
            let block = std::mem::take(&mut blocks[*i]);
            self.blocks.push(block);
            if let Some(x) = self.coerce_to(v, &ty) {
                self.push(ir::StmtKind::Assign {
                    dst: m,
                    op: Op::Copy(x),
                });
            }
            blocks[*i] = self.blocks.pop().unwrap_or_default();
        }
        Val::Var(m)
    }

    /// The one type several values of a name can share, or why they cannot.
    fn common_type<'v>(&self, vals: impl Iterator<Item = &'v Val>) -> Result<Type, String> {
        let vals: Vec<&Val> = vals.collect();
        let runtime: Vec<&Type> = vals
            .iter()
            .filter_map(|v| match v {
                Val::Var(x) => Some(self.ty(*x)),
                _ => None,
            })
            .collect();
        if let Some(first) = runtime.first() {
            if let Some(other) = runtime.iter().find(|t| *t != first) {
                return Err(format!(
                    "is {} and {}",
                    super::emit::a_type(first),
                    super::emit::a_type(other)
                ));
            }
            if vals
                .iter()
                .all(|v| matches!(v, Val::Var(_)) || v.is_number())
            {
                return Ok((*first).clone());
            }
        } else if vals.iter().all(|v| v.is_number()) {
            let mut d: Option<Operand> = None;
            for v in &vals {
                let s = default_dtype(v).unwrap_or(Scalar::I32);
                let o = Operand {
                    dtype: s,
                    weak: false,
                    fits_i32: true,
                };
                d = Some(match d {
                    None => o,
                    Some(p) => Operand {
                        dtype: promote(p, o),
                        ..o
                    },
                });
            }
            return Ok(Type::scalar(d.map_or(Scalar::I32, |o| o.dtype)));
        }
        Err("holds values that are not numbers of one type".to_string())
    }

    /// A span at the current statement (for findings about a statement as a whole).
    pub(super) fn here(&self) -> Span {
        let line = self.loc.line.saturating_sub(1) as usize;
        let offset = self
            .src
            .split_inclusive('\n')
            .take(line)
            .map(str::len)
            .sum::<usize>()
            + self.loc.col.saturating_sub(1) as usize;
        Span::new(offset, offset)
    }

    fn return_stmt(&mut self, value: Option<&Expr>, span: Span) {
        let v = value.map(|e| self.eval(e)).unwrap_or(Val::None);
        let depth = self.depth;
        match self.frames.last_mut() {
            None => {
                if !matches!(v, Val::None | Val::Poison) {
                    self.error(
                        span,
                        "a kernel cannot return a value; store results with `tl.store`",
                    );
                }
                self.push(ir::StmtKind::Return);
            }
            Some(f) if f.depth == depth => f.ret = Some(v),
            Some(_) => {
                self.error(span, "a `return` inside a runtime `if` or loop of a called `@triton.jit` function is not supported; return at the end of the function");
            }
        }
        self.stop = true;
    }
}
