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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::ir::VarId;

    fn bp(block: Vec<u32>, order: Vec<u32>, offsets: Vec<Val>) -> Val {
        Val::BlockPtr(Box::new(BlockPtr {
            base: Val::Var(VarId(0)),
            shape: vec![Val::Var(VarId(1)), Val::Int(64)],
            strides: vec![Val::Var(VarId(2)), Val::Int(1)],
            offsets,
            block,
            order,
        }))
    }

    #[test]
    fn block_pointer_leaves_are_its_runtime_parts_and_only_offsets_always_travel() {
        let p = bp(
            vec![16, 32],
            vec![1, 0],
            vec![Val::Var(VarId(3)), Val::Int(0)],
        );
        let l = leaves(&p);
        assert_eq!(l.len(), 7);
        let steady: Vec<bool> = l.iter().map(|x| x.steady).collect();
        assert_eq!(steady, [true, true, true, true, true, false, false]);
        assert_eq!(l[6].path, "'s offsets[1]");
        // Replacing the leaves in order gives the same skeleton with the new parts.
        let vars = (10..17).map(|i| Val::Var(VarId(i)));
        let q = with_leaves(&p, &mut vars.into_iter());
        assert_eq!(skeleton(&p), skeleton(&q));
        let Val::BlockPtr(b) = q else { panic!() };
        assert_eq!(b.offsets[1], Val::Var(VarId(16)));
        assert_eq!(b.block, vec![16, 32]);
    }

    #[test]
    fn tuples_take_apart_item_by_item_and_keep_compile_time_items() {
        let t = Val::Tuple(vec![Val::Var(VarId(0)), Val::Str("a".into()), Val::Int(2)]);
        let l = leaves(&t);
        let paths: Vec<&str> = l.iter().map(|x| x.path.as_str()).collect();
        assert_eq!(paths, ["[0]", "[2]"]);
        let u = Val::Tuple(vec![Val::Var(VarId(5)), Val::Str("a".into()), Val::Int(3)]);
        assert_eq!(skeleton(&t), skeleton(&u));
        let v = Val::Tuple(vec![Val::Var(VarId(5)), Val::Str("b".into()), Val::Int(3)]);
        assert_ne!(skeleton(&t), skeleton(&v));
        // A number and `None` differ at compile time (one is a runtime part).
        assert_ne!(skeleton(&Val::Int(3)), skeleton(&Val::None));
    }

    #[test]
    fn mismatches_name_the_first_compile_time_difference() {
        let off = || vec![Val::Int(0), Val::Int(0)];
        let a = bp(vec![16, 32], vec![1, 0], off());
        let b = bp(vec![16, 64], vec![1, 0], off());
        let c = bp(vec![16, 32], vec![0, 1], off());
        let m = |x: &Val, y: &Val| mismatch(x, y).unwrap_or_default();
        assert_eq!(
            m(&a, &b),
            "is a block pointer of block [16, 32] and one of block [16, 64]"
        );
        assert_eq!(
            m(&a, &c),
            "is a block pointer of order [1, 0] and one of order [0, 1]"
        );
        assert_eq!(
            mismatch(&a, &bp(vec![16, 32], vec![1, 0], vec![Val::Int(5); 2])),
            None
        );
        let t2 = Val::Tuple(vec![Val::Int(1); 2]);
        let t3 = Val::Tuple(vec![Val::Int(1); 3]);
        assert_eq!(m(&t2, &t3), "is a tuple of 2 and a tuple of 3");
    }
}
