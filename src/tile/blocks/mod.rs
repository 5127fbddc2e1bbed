//! Pointer loads proven to be blocks of a tensor, so that a backend may copy them as it copies
//! a tensor descriptor's `.load` (with the tensor-memory accelerator).
//!
//! Triton's matmul tutorial reads its tiles through pointer tiles, not descriptors:
//!
//! ```text
//! offs_am = (pid_m * BM + arange(BM)) % M;   a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
//! for k in range(0, cdiv(K, BK)):
//!     a = load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0);   a_ptrs += BK
//! ```
//!
//! Triton copies such loads with `cp.async`, thread by thread. This pass proves that each is
//! the block `[pid_m * BM, k * BK]` of the row-major `M x K` tensor at `a_ptr` with row stride
//! `K`, zeros outside, and records it as a descriptor load ([`ir::DescLoad`]); the load itself
//! stays as it is, so the interpreter and every other backend run it unchanged. The proof:
//!
//! - the pointer tile's form (`affine.rs`) is `base + (s0 + i) * S + (s1 + j)`, each index
//!   maybe wrapped (`% E`), with `base` a pointer parameter, `S` a non-negative parameter or a
//!   positive constant, and a loop-carried pointer tile advanced by a whole number of rows or
//!   columns each iteration of a loop counting 0, 1, 2, ...;
//! - `other` is zero or absent;
//! - each index is bounded once: by a mask conjunct `s' + j < X` (the tensor's extent is then
//!   `X + s1 - s'`, which must be a parameter or constant, the same every iteration) or by its
//!   wrap `% E` (extent `E`), and no other conjunct is in the mask;
//! - the starts `s0`, `s1` are never negative (program ids, counting loops, and parameters the
//!   launch knows are not: [`crate::tile::ArgKind::Int`]'s `non_negative`), so the copy's zeros
//!   past the low edges never differ from the load;
//! - a wrapped index reads other rows where the copy reads zeros: `unstored.rs` proves those
//!   rows are never stored.
//!
//! The block's offsets become new statements right before the load (the writer computes them
//! in the loop's address slice, with the rest of the load's operands).

mod affine;
mod emit;
mod masks;
mod places;
#[cfg(test)]
mod tests;
mod unstored;

use super::ir::{BlockMiss, Const, Elem, Kernel, Op, Stmt, StmtKind, VarId};
use affine::{Dim, Form, Forms, Lin};
use places::{At, Places};
use unstored::Wrapped;

/// A descriptor's extent or stride: a parameter, or a constant.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Size {
    Var(VarId),
    Const(i64),
}

/// One load proven a block.
#[derive(Debug, Clone)]
struct Found {
    /// The loop's index in the kernel body, the load's in the loop body.
    li: usize,
    j: usize,
    dst: VarId,
    base: VarId,
    shape: [Size; 2],
    stride: Size,
    block: [u32; 2],
    offsets: [Lin; 2],
}

/// Records the kernel's pointer loads that are blocks of a tensor as descriptor loads, and
/// why each other 2-D load of a loop is not.
pub fn annotate(k: &mut Kernel) {
    let (found, misses) = {
        let p = Places::new(k);
        let (mut found, mut misses) = (Vec::new(), Vec::new());
        for (li, s) in k.body.iter().enumerate() {
            if let StmtKind::For { body, .. } = &s.kind {
                let assumed = p.assumed_non_negative(li);
                for (j, t) in body.iter().enumerate() {
                    match block_load(&p, &assumed, li, j, t) {
                        Some(Ok(f)) => found.push(f),
                        Some(Err(m)) => misses.push(m),
                        None => {}
                    }
                }
            }
        }
        (found, misses)
    };
    k.block_misses.extend(misses);
    emit::apply(k, found);
}

/// Why a load is not a block, by the step of the proof that fails.
mod why {
    pub const OTHER: &str = "`other` is not zero (TMA reads zeros outside the tensor)";
    pub const LOOP: &str = "the loop does not count 0, 1, 2, ...";
    pub const FORM: &str = "the pointers are not `base + rows * stride + columns` with each index \
                            an `arange` plus a scalar (maybe `% n`), advanced by whole rows or columns";
    pub const BASE: &str = "the base is not a pointer argument of the loaded type";
    pub const STRIDE: &str = "the columns are not contiguous, or the row stride is not an integer \
                              argument the launch knows is not negative, nor a positive constant";
    pub const MASK: &str = "a mask conjunct is not an index bound (`index < bound`)";
    pub const NEGATIVE: &str = "a block's first row or column may be negative \
                                (`tl.assume(pid_m >= 0)` says it is not)";
    pub const BOUND: &str = "an index has no mask bound and no `%` wrap, or more than one";
    pub const EXTENT: &str =
        "an extent is not an integer argument or constant that stays the same \
                              every iteration";
    pub const STORED: &str = "rows or columns wrapped by `%` may be stored (each store of what is \
                              computed from them needs the mask `offs < n` along that axis)";
}

/// The block load statement `t` (statement `j` of the loop at `li`) reads: `None` for a
/// statement that is not a 2-D load TMA could copy, else the block or why it is not one.
fn block_load(
    p: &Places,
    assumed: &[Lin],
    li: usize,
    j: usize,
    t: &Stmt,
) -> Option<Result<Found, BlockMiss>> {
    let k = p.k;
    let StmtKind::Assign {
        dst,
        op: Op::Load { ptr, mask, other },
    } = &t.kind
    else {
        return None;
    };
    let ty = k.ty(*dst);
    let Elem::Scalar(elem) = ty.elem else {
        return None;
    };
    let [b0, b1] = <[u32; 2]>::try_from(ty.shape.as_slice()).ok()?;
    let box_ok = |b: u32| (1..=256).contains(&b) && b.is_power_of_two();
    if k.desc_load(*dst).is_some() || !box_ok(b0) || !box_ok(b1) || b1 * elem.size() < 16 {
        return None;
    }
    let proof = (|| {
        need(p.is_zero(*other), why::OTHER)?;
        need(counts_from_zero(p, li), why::LOOP)?;
        let mut f = Forms::new(k, |v| p.scope_at(v, li, j));
        for (v, form) in carried(p, li, j) {
            f.know(v, form);
        }
        let Some(Form::Ptr { base, off }) = f.form(*ptr) else {
            return Err(why::FORM);
        };
        let base_param = p.is_param(base) && matches!(k.ty(base).elem, Elem::Ptr(e) if e == elem);
        need(base_param, why::BASE)?;
        let [mut d0, mut d1] = by_axis(&off.dims).ok_or(why::FORM)?;
        need(d1.mul == Lin::konst(1), why::STRIDE)?;
        // The scalar part goes to the column start (stride 1), else to whole rows.
        if off.scalar != Lin::konst(0) {
            let moved = if d1.wrap.is_none() {
                d1.start.add(&off.scalar).map(|s| d1.start = s)
            } else if d0.wrap.is_none() {
                (off.scalar.ratio(&d0.mul))
                    .and_then(|q| d0.start.add(&Lin::konst(q)))
                    .map(|s| d0.start = s)
            } else {
                None
            };
            moved.ok_or(why::FORM)?;
        }
        let stride = size(p, &d0.mul, true).ok_or(why::STRIDE)?;
        let bounds = match mask {
            Some(m) => {
                let b = masks::conjuncts(p, &mut f, *m, 0);
                need(b.len() == masks::conjunct_count(p, *m, 0), why::MASK)?;
                b
            }
            None => Vec::new(),
        };
        need(bounds.iter().all(|b| b.axis <= 1), why::FORM)?;
        let mut shape = [Size::Const(0); 2];
        let mut wraps = Vec::new();
        for (a, d) in [(0, &d0), (1, &d1)] {
            let on_axis: Vec<_> = bounds.iter().filter(|b| b.axis == a).collect();
            need(p.non_negative(&d.start, assumed), why::NEGATIVE)?;
            let extent = match (d.wrap, on_axis.as_slice()) {
                (Some(e), []) => {
                    wraps.push(Wrapped {
                        axis: a,
                        start: d.start.clone(),
                        extent: e,
                    });
                    Some(Lin::atom(e))
                }
                (None, [b]) => b.limit.add(&d.start).and_then(|l| l.sub(&b.start)),
                _ => return Err(why::BOUND),
            };
            shape[a] = extent.and_then(|e| size(p, &e, false)).ok_or(why::EXTENT)?;
        }
        need(
            wraps.iter().all(|w| unstored::unstored(p, *dst, w)),
            why::STORED,
        )?;
        Ok(Found {
            li,
            j,
            dst: *dst,
            base,
            shape,
            stride,
            block: [b0, b1],
            offsets: [d0.start, d1.start],
        })
    })();
    Some(proof.map_err(|reason| BlockMiss { dst: *dst, reason }))
}

/// `Ok` when `ok`, else the reason.
fn need(ok: bool, reason: &'static str) -> Result<(), &'static str> {
    if ok {
        Ok(())
    } else {
        Err(reason)
    }
}

/// The two dimensions of a 2-D form, by axis.
fn by_axis(dims: &[Dim]) -> Option<[Dim; 2]> {
    let find = |a: usize| dims.iter().find(|d| d.axis == a).cloned();
    (dims.len() == 2).then_some(())?;
    Some([find(0)?, find(1)?])
}

/// An extent or stride the launch can encode: a non-negative integer parameter or a constant
/// (positive for a stride).
fn size(p: &Places, l: &Lin, stride: bool) -> Option<Size> {
    if let Some(c) = l.as_const() {
        let ok = if stride { c > 0 } else { c >= 0 };
        return (ok && i32::try_from(c).is_ok()).then_some(Size::Const(c));
    }
    let v = l.as_atom()?;
    (p.is_param(v) && p.non_negative(l, &[])).then_some(Size::Var(v))
}

/// Whether the loop at `li` counts 0, 1, 2, ...: its iteration index is its variable.
fn counts_from_zero(p: &Places, li: usize) -> bool {
    let Some(Stmt {
        kind: StmtKind::For { start, step, .. },
        ..
    }) = p.k.body.get(li)
    else {
        return false;
    };
    let is = |v: VarId, want: i64| matches!(p.single(v), Some((At::Top(i), Op::Const(Const::Int(c)))) if i < li && *c == want);
    is(*start, 0) && is(*step, 1)
}

/// The loop-carried pointer tiles at statement `j` of the loop at `li`, by their form there:
/// assigned once before the loop and once after `j` in its body, each iteration advancing by
/// a loop-invariant number of whole rows or columns (`a_ptrs += BLOCK_K`).
fn carried(p: &Places, li: usize, j: usize) -> Vec<(VarId, Form)> {
    let Some(kv) = p.loop_var_of(li) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut before = Forms::new(p.k, |v| p.scope_at(v, li, 0));
    let mut body = Forms::new(p.k, |v| p.scope_at(v, li, usize::MAX));
    let mut vars: Vec<VarId> = (0..p.k.vars.len() as u32).map(VarId).collect();
    vars.retain(|&v| matches!(p.k.ty(v).elem, Elem::Ptr(_)) && p.k.ty(v).is_tile());
    for v in vars {
        let (init, update) = match p.assigns(v) {
            [(At::Top(i), Some(init)), (At::Loop(l, u), Some(update))]
                if *i < li && *l == li && *u > j =>
            {
                (*init, *update)
            }
            _ => continue,
        };
        let Some(Form::Ptr { base, off }) = (match init {
            Op::Copy(x) => before.form(*x),
            _ => None,
        }) else {
            continue;
        };
        // The update: `v = v + d`, or `v = w` with `w = v + d`.
        let step = match update {
            Op::PtrAdd { ptr, offset } if *ptr == v => Some(*offset),
            Op::Copy(w) => match p.single(*w) {
                Some((At::Loop(l, _), Op::PtrAdd { ptr, offset })) if l == li && *ptr == v => {
                    Some(*offset)
                }
                _ => None,
            },
            _ => None,
        };
        let Some(delta) = step.and_then(|d| body.lin(d)) else {
            continue;
        };
        let invariant = delta
            .terms
            .keys()
            .all(|a| p.is_param(*a) || matches!(p.single(*a), Some((At::Top(i), _)) if i < li));
        if !invariant {
            continue;
        }
        let mut off = off;
        let moved = off.dims.iter_mut().find_map(|d| {
            let q = delta.ratio(&d.mul)?;
            d.wrap.is_none().then_some(())?;
            d.start = d.start.add(&Lin::atom(kv).scale(q)?)?;
            Some(())
        });
        if moved.is_some() || delta == Lin::konst(0) {
            out.push((v, Form::Ptr { base, off }));
        }
    }
    out
}
