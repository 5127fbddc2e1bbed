//! What a runtime loop carries. Each name the body assigns that already holds a value gets
//! its runtime parts (`flatten.rs`: a number or variable, or the leaves of a tuple or block
//! pointer) carried in variables whose types may not change; its compile-time parts must stay
//! the same. A block pointer's base, shape and strides are carried only when the body changes
//! them: the body is checked once with them fixed, and again with them carried when it turns
//! out to change them (the first attempt's IR and findings are dropped).

use super::emit::Ck;
use super::flatten::{leaves, mismatch, skeleton, with_leaves};
use super::value::{default_dtype, Val};
use crate::tile::ast::Stmt;
use crate::tile::ir::{self, Op, Scalar, Type, VarId};
use std::collections::{BTreeSet, HashMap};

/// A name carried around a loop.
pub(super) struct Carried {
    pub name: String,
    /// What the name holds in the body: its value before the loop with the carried leaves
    /// replaced by their variables.
    pub held: Val,
    /// The carried leaves: the index in `leaves(held)` and the variable.
    pub vars: Vec<(usize, VarId)>,
}

/// Leaves (a name, an index in its leaves) that are also to be carried.
pub(super) type Extra = BTreeSet<(String, usize)>;

/// The checker's state before a loop, to check its body again.
pub(super) struct Snapshot {
    vars: usize,
    findings: usize,
    descriptors: usize,
    desc_loads: usize,
    prelude: usize,
    block: usize,
    env: HashMap<String, Val>,
    gone: HashMap<String, String>,
    globals: HashMap<(usize, usize), Val>,
    loc: crate::tile::span::Loc,
}

impl Ck<'_> {
    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            vars: self.vars.len(),
            findings: self.findings.len(),
            descriptors: self.descriptors.len(),
            desc_loads: self.desc_loads.len(),
            prelude: self.prelude.len(),
            block: self.blocks.last().map_or(0, Vec::len),
            env: self.env.clone(),
            gone: self.gone.clone(),
            globals: self.global_cache.clone(),
            loc: self.loc,
        }
    }

    /// Back to `s`: what was checked since is forgotten.
    pub(super) fn restore(&mut self, s: &Snapshot) {
        self.vars.truncate(s.vars);
        self.findings.truncate(s.findings);
        self.descriptors.truncate(s.descriptors);
        self.desc_loads.truncate(s.desc_loads);
        self.prelude.truncate(s.prelude);
        if let Some(b) = self.blocks.last_mut() {
            b.truncate(s.block);
        }
        self.env = s.env.clone();
        self.gone = s.gone.clone();
        self.global_cache = s.globals.clone();
        self.loc = s.loc;
        self.stop = false;
    }

    /// The names a loop body assigns (its targets, nested blocks included).
    pub(super) fn assigned(body: &[Stmt], out: &mut BTreeSet<String>) {
        use crate::tile::ast::{Expr, ExprKind, StmtKind};
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

    /// Before a runtime loop: each name the body assigns that already holds a value gets a
    /// variable for each of its runtime parts (a block pointer's base, shape and strides only
    /// when `extra` names them).
    pub(super) fn carry_in(
        &mut self,
        body: &[Stmt],
        exclude: Option<&str>,
        extra: &Extra,
    ) -> (Vec<Carried>, BTreeSet<String>) {
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
            if v == Val::Poison {
                continue;
            }
            let mut vars = Vec::new();
            let mut parts = Vec::new();
            for (i, leaf) in leaves(&v).into_iter().enumerate() {
                let ty = match &leaf.val {
                    Val::Var(x) => Some(self.ty(*x).clone()),
                    x if x.is_number() => {
                        Some(Type::scalar(default_dtype(x).unwrap_or(Scalar::I32)))
                    }
                    _ => None,
                };
                let wanted = !leaf.steady || extra.contains(&(n.clone(), i));
                let Some(ty) = ty.filter(|_| wanted) else {
                    parts.push(leaf.val);
                    continue;
                };
                let c = self.new_var(ty.clone(), Some(n.clone()));
                if let Some(x) = self.coerce_to(&leaf.val, &ty) {
                    self.push(ir::StmtKind::Assign {
                        dst: c,
                        op: Op::Copy(x),
                    });
                }
                vars.push((i, c));
                parts.push(Val::Var(c));
            }
            let held = with_leaves(&v, &mut parts.into_iter());
            self.env.insert(n.clone(), held.clone());
            carried.push(Carried {
                name: n.clone(),
                held,
                vars,
            });
        }
        (carried, names)
    }

    /// At the end of a loop body: each carried part's new value goes back into its variable.
    /// Returns the parts the body changed that were not carried (to check it again carrying
    /// them).
    pub(super) fn carry_out(&mut self, carried: &[Carried]) -> Extra {
        let mut missed = Extra::new();
        if self.stop {
            return missed;
        }
        for c in carried {
            let n = &c.name;
            let Some(v) = self.env.get(n).cloned() else {
                continue;
            };
            if v == c.held || v == Val::Poison {
                continue;
            }
            if let (Val::Desc(a), Val::Desc(b)) = (&v, &c.held) {
                // A descriptor made again from the same parts is the same descriptor.
                if self.descriptors.get(*a) == self.descriptors.get(*b) {
                    continue;
                }
            }
            if skeleton(&v) != skeleton(&c.held) {
                let why = mismatch(&c.held, &v).unwrap_or_else(|| "changes".to_string());
                let span = self.here();
                let msg = format!(
                    "`{n}` {why} (before the loop and at the end of its body); a value carried \
                     around a loop keeps its compile-time parts (tuple lengths, block shape and \
                     order, constexprs)"
                );
                self.error(span, msg);
                continue;
            }
            let old = leaves(&c.held);
            for (i, leaf) in leaves(&v).into_iter().enumerate() {
                let Some(&(_, var)) = c.vars.iter().find(|(j, _)| *j == i) else {
                    if old.get(i).is_some_and(|o| o.val != leaf.val) {
                        missed.insert((n.clone(), i));
                    }
                    continue;
                };
                if leaf.val == Val::Var(var) || leaf.val == Val::Poison {
                    continue;
                }
                let ty = self.ty(var).clone();
                match self.coerce_to(&leaf.val, &ty) {
                    Some(x) => self.push(ir::StmtKind::Assign {
                        dst: var,
                        op: Op::Copy(x),
                    }),
                    None => {
                        let span = self.here();
                        let msg = format!(
                            "`{n}{}` is carried around the loop as {} but the body assigns it {}; a loop-carried variable keeps its type (convert with `.to(...)`)",
                            leaf.path,
                            super::emit::a_type(&ty),
                            self.show(&leaf.val)
                        );
                        self.error(span, msg);
                    }
                }
            }
        }
        missed
    }

    /// After a runtime loop: carried names hold their variables; names first assigned inside
    /// the loop are not usable after it.
    pub(super) fn after_loop(
        &mut self,
        before: HashMap<String, Val>,
        carried: &[Carried],
        names: &BTreeSet<String>,
        line: u32,
    ) {
        self.env = before;
        for c in carried {
            self.env.insert(c.name.clone(), c.held.clone());
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
}
