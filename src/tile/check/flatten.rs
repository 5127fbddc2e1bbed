//! Values with parts, taken apart: a tuple or a block pointer is a compile-time shape (its
//! *skeleton*: tuple lengths, block shapes and orders, any dtypes, strings or constexprs in
//! it) around runtime *leaves* (variables and numbers). A runtime loop carries a name's leaves
//! in variables (`carry.rs`) and a runtime `if` merges them leaf by leaf (here), as Triton
//! carries the runtime values inside tuples and block pointers; a skeleton that differs between
//! iterations or branches is an error, never a silent choice of one side.

use super::emit::Ck;
use super::value::{show_shape, BlockPtr, Val};
use crate::tile::ir::Stmt;

/// One runtime part of a value.
#[derive(Debug, Clone)]
pub(super) struct Leaf {
    pub val: Val,
    /// How messages name it after the name: "" for the value itself, `[1]`, `.offsets[0]`.
    pub path: String,
    /// A block pointer's base, shape or stride: a loop carries it only when it changes it (a
    /// variable would hide what is known of a constant, such as a stride of 1).
    pub steady: bool,
}

/// The leaves of `v`, in a fixed order.
pub(super) fn leaves(v: &Val) -> Vec<Leaf> {
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

fn walk(v: &Val, path: String, out: &mut Vec<Leaf>) {
    let leaf = |val: &Val, path: String, steady: bool| Leaf {
        val: val.clone(),
        path,
        steady,
    };
    match v {
        Val::Var(_) | Val::Int(_) | Val::Float(_) | Val::Bool(_) => out.push(leaf(v, path, false)),
        Val::Tuple(items) => {
            for (i, x) in items.iter().enumerate() {
                walk(x, format!("{path}[{i}]"), out);
            }
        }
        Val::BlockPtr(b) => {
            out.push(leaf(&b.base, format!("{path}'s base"), true));
            for (what, list, steady) in [
                ("shape", &b.shape, true),
                ("strides", &b.strides, true),
                ("offsets", &b.offsets, false),
            ] {
                for (d, x) in list.iter().enumerate() {
                    out.push(leaf(x, format!("{path}'s {what}[{d}]"), steady));
                }
            }
        }
        _ => {}
    }
}

/// `v` with its leaves replaced, in order, by those of `new`.
pub(super) fn with_leaves(v: &Val, new: &mut impl Iterator<Item = Val>) -> Val {
    let mut next = |old: &Val| new.next().unwrap_or_else(|| old.clone());
    match v {
        Val::Var(_) | Val::Int(_) | Val::Float(_) | Val::Bool(_) => next(v),
        Val::Tuple(items) => Val::Tuple(items.iter().map(|x| with_leaves(x, new)).collect()),
        Val::BlockPtr(b) => {
            let base = next(&b.base);
            let mut list = |l: &[Val]| l.iter().map(&mut next).collect::<Vec<Val>>();
            let (shape, strides, offsets) = (list(&b.shape), list(&b.strides), list(&b.offsets));
            Val::BlockPtr(Box::new(BlockPtr {
                base,
                shape,
                strides,
                offsets,
                block: b.block.clone(),
                order: b.order.clone(),
            }))
        }
        other => other.clone(),
    }
}

/// What of `v` is fixed at compile time: `v` with every leaf replaced by a placeholder.
pub(super) fn skeleton(v: &Val) -> Val {
    with_leaves(v, &mut std::iter::repeat(Val::Builtin("<runtime part>")))
}

/// Whether `v` has parts (a tuple or a block pointer).
pub(super) fn has_parts(v: &Val) -> bool {
    matches!(v, Val::Tuple(_) | Val::BlockPtr(_))
}

/// Why two values cannot be one carried or merged value: the first compile-time part in which
/// they differ, as "is X ... and Y ..." (None when their skeletons agree).
pub(super) fn mismatch(a: &Val, b: &Val) -> Option<String> {
    match (a, b) {
        (Val::Tuple(x), Val::Tuple(y)) if x.len() == y.len() => {
            x.iter().zip(y).find_map(|(p, q)| mismatch(p, q))
        }
        (Val::Tuple(x), Val::Tuple(y)) => Some(format!(
            "is a tuple of {} and a tuple of {}",
            x.len(),
            y.len()
        )),
        (Val::BlockPtr(x), Val::BlockPtr(y)) if x.block != y.block => Some(format!(
            "is a block pointer of block {} and one of block {}",
            show_shape(&x.block),
            show_shape(&y.block)
        )),
        (Val::BlockPtr(x), Val::BlockPtr(y)) if x.order != y.order => Some(format!(
            "is a block pointer of order {:?} and one of order {:?}",
            x.order, y.order
        )),
        (Val::BlockPtr(_), Val::BlockPtr(_)) => None,
        _ if skeleton(a) == skeleton(b) => None,
        _ => Some(format!("is {} and {}", a.describe(), b.describe())),
    }
}

impl Ck<'_> {
    /// One value for name `name` that two branches of an `if` set differently (`sides`), a
    /// tuple or block pointer merged leaf by leaf; other values as [`Ck::merge`] merges them.
    pub(super) fn merge_parts(
        &mut self,
        name: &str,
        sides: &[(usize, &Val)],
        blocks: &mut [Vec<Stmt>; 2],
        line: u32,
    ) -> Val {
        let [(_, a), (_, b)] = sides else {
            return self.merge(name, sides, blocks, line);
        };
        if !has_parts(a) && !has_parts(b) {
            return self.merge(name, sides, blocks, line);
        }
        if let Some(why) = mismatch(a, b) {
            let span = self.here();
            let msg = format!(
                "`{name}` {why} after the two branches of the `if` at line {line}; a tuple or \
                 block pointer keeps its compile-time parts (lengths, block shape, order) \
                 across branches"
            );
            return self.error(span, msg);
        }
        let (la, lb) = (leaves(a), leaves(b));
        let mut merged = Vec::new();
        for (x, y) in la.iter().zip(&lb) {
            if x.val == y.val {
                merged.push(x.val.clone());
                continue;
            }
            let part = format!("{name}{}", x.path);
            let pair = [(sides[0].0, &x.val), (sides[1].0, &y.val)];
            merged.push(self.merge(&part, &pair, blocks, line));
        }
        with_leaves(a, &mut merged.into_iter())
    }
}
