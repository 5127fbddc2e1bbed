//! Global memory: pointer arithmetic, masked loads and stores, and atomics, on the launch's
//! buffers. A pointer remembers its buffer and a byte offset; arithmetic may take it anywhere,
//! but a masked-on lane that touches memory outside its buffer stops the launch with an
//! out-of-bounds fault naming the lane, the buffer and the offset. Masked-off lanes never
//! touch memory.

use super::elementwise::{fmax, fmin};
use super::exec::{Ctx, Env};
use super::value::{convert_float, float_to_int, int_to_float, read_float, read_int, round, wrap};
use super::value::{write_float, write_int, Data, Ptr};
use super::Fault;
use crate::tile::ir::{AtomicOp, Elem, Scalar, Type, VarId};
use crate::tile::InterpBuffer;

/// Element `i` of an operand that is the tile's length or a scalar.
#[inline]
fn lane<T: Copy + Default>(v: &[T], i: usize) -> T {
    if v.len() == 1 {
        v[0]
    } else {
        v.get(i).copied().unwrap_or_default()
    }
}

fn on(mask: Option<&[i64]>, i: usize) -> bool {
    mask.is_none_or(|m| lane(m, i) != 0)
}

fn mask_of<'a>(env: &Env<'a>, mask: Option<VarId>) -> Result<Option<&'a [i64]>, Fault> {
    mask.map(|m| env.ints(m)).transpose()
}

pub(super) fn ptr_add(env: &Env, ptr: VarId, offset: VarId, out: &mut Data) -> Result<(), Fault> {
    let size = i64::from(env.scalar(ptr).size());
    let (p, off) = (env.ptrs(ptr)?, env.ints(offset)?);
    let Data::Ptr(o) = out else {
        return Err(Fault::interp("pointer arithmetic into a number"));
    };
    super::elementwise::map2(o, p, off, |p, k| Ptr {
        buf: p.buf,
        byte: p.byte.wrapping_add(k.wrapping_mul(size)),
    });
    Ok(())
}

/// Where one access of `size` bytes through `p` lands, or None when outside its buffer.
#[inline]
fn locate(buffers: &[InterpBuffer], p: Ptr, size: usize) -> Option<(usize, usize)> {
    let b = buffers.get(p.buf as usize)?;
    let at = usize::try_from(p.byte).ok()?;
    (at.checked_add(size)? <= b.bytes.len()).then_some((p.buf as usize, at))
}

/// The out-of-bounds fault of lane `i` of the access `what` through variable `ptr`.
fn out_of_bounds(ctx: &Ctx, env: &Env, what: &str, ptr: VarId, i: usize, p: Ptr) -> Fault {
    let size = i64::from(env.scalar(ptr).size().max(1));
    let (name, len) = match ctx.buffers.get(p.buf as usize) {
        Some(b) => (b.name.as_str(), b.bytes.len() as i64 / size),
        None => ("?", 0),
    };
    let at = if p.byte % size == 0 {
        format!("element {}", p.byte / size)
    } else {
        format!("byte {}", p.byte)
    };
    let [x, y, z] = ctx.pid;
    let shape = &env.ty(ptr).shape;
    let mut lane = String::new();
    if !shape.is_empty() {
        lane = format!(", lane {i}");
        if shape.len() >= 2 {
            let mut rest = i;
            let mut idx = vec![0usize; shape.len()];
            for (d, &n) in shape.iter().enumerate().rev() {
                idx[d] = rest % n.max(1) as usize;
                rest /= n.max(1) as usize;
            }
            let idx: Vec<String> = idx.iter().map(ToString::to_string).collect();
            lane.push_str(&format!(" (index [{}])", idx.join(", ")));
        }
    }
    Fault::out_of_bounds(format!(
        "{what} `{name}` out of bounds at {at} ({name} has {len} elements): program ({x}, {y}, {z}){lane}"
    ))
}

fn dtype(ty: &Type) -> Scalar {
    match ty.elem {
        Elem::Scalar(s) | Elem::Ptr(s) => s,
    }
}

pub(super) fn load(
    ctx: &mut Ctx,
    env: &Env,
    ptr: VarId,
    mask: Option<VarId>,
    other: Option<VarId>,
    ty: &Type,
    out: &mut Data,
) -> Result<u64, Fault> {
    let (s, ds) = (env.scalar(ptr), dtype(ty));
    let size = s.size() as usize;
    let ptrs = env.ptrs(ptr)?;
    let mask = mask_of(env, mask)?;
    let bufs: &[InterpBuffer] = ctx.buffers;
    let fetch = |i: usize| -> Result<&[u8], Fault> {
        let p = lane(ptrs, i);
        match locate(bufs, p, size) {
            Some((b, at)) => Ok(&bufs[b].bytes[at..at + size]),
            None => Err(out_of_bounds(ctx, env, "load from", ptr, i, p)),
        }
    };
    match out {
        Data::Float(o) => {
            let other = other.map(|v| env.floats(v)).transpose()?;
            for (i, v) in o.iter_mut().enumerate() {
                *v = if !on(mask, i) {
                    other.map_or(0.0, |x| lane(x, i))
                } else if s.is_float() {
                    convert_float(ds, read_float(s, fetch(i)?))
                } else {
                    int_to_float(s, ds, read_int(s, fetch(i)?))
                };
            }
        }
        Data::Int(o) => {
            let other = other.map(|v| env.ints(v)).transpose()?;
            for (i, v) in o.iter_mut().enumerate() {
                *v = if !on(mask, i) {
                    other.map_or(0, |x| lane(x, i))
                } else if s.is_float() {
                    float_to_int(ds, read_float(s, fetch(i)?))
                } else {
                    wrap(ds, read_int(s, fetch(i)?))
                };
            }
        }
        Data::Ptr(_) => return Err(Fault::interp("a load of pointers")),
    }
    Ok(ty.numel())
}

pub(super) fn store(
    ctx: &mut Ctx,
    env: &Env,
    ptr: VarId,
    value: VarId,
    mask: Option<VarId>,
) -> Result<u64, Fault> {
    let s = env.scalar(ptr);
    let size = s.size() as usize;
    let ptrs = env.ptrs(ptr)?;
    let mask = mask_of(env, mask)?;
    let value = env.get(value)?;
    for (i, &p) in ptrs.iter().enumerate() {
        if !on(mask, i) {
            continue;
        }
        let Some((b, at)) = locate(ctx.buffers, p, size) else {
            return Err(out_of_bounds(ctx, env, "store to", ptr, i, p));
        };
        let dst = &mut ctx.buffers[b].bytes[at..at + size];
        match value {
            Data::Float(v) => write_float(s, lane(v, i), dst),
            Data::Int(v) => write_int(s, lane(v, i), dst),
            Data::Ptr(_) => return Err(Fault::interp("a store of pointers")),
        }
    }
    Ok(ptrs.len() as u64)
}

pub(super) fn atomic(
    ctx: &mut Ctx,
    env: &Env,
    op: AtomicOp,
    ptr: VarId,
    (value, cmp): (VarId, Option<VarId>),
    mask: Option<VarId>,
    out: &mut Data,
) -> Result<u64, Fault> {
    let s = env.scalar(ptr);
    let size = s.size() as usize;
    let ptrs = env.ptrs(ptr)?;
    let mask = mask_of(env, mask)?;
    let what = match op {
        AtomicOp::Add => "atomic add on",
        AtomicOp::Max => "atomic max on",
        AtomicOp::Min => "atomic min on",
        AtomicOp::Xchg => "atomic exchange on",
        AtomicOp::Cas => "atomic compare-and-swap on",
    };
    let value = env.get(value)?;
    let cmp = cmp.map(|c| env.get(c)).transpose()?;
    let u64s = s == Scalar::U64;
    for (i, &p) in ptrs.iter().enumerate() {
        if !on(mask, i) {
            match out {
                Data::Float(o) => o.get_mut(i).into_iter().for_each(|v| *v = 0.0),
                Data::Int(o) => o.get_mut(i).into_iter().for_each(|v| *v = 0),
                Data::Ptr(_) => {}
            }
            continue;
        }
        let Some((b, at)) = locate(ctx.buffers, p, size) else {
            return Err(out_of_bounds(ctx, env, what, ptr, i, p));
        };
        let cell = &mut ctx.buffers[b].bytes[at..at + size];
        match (value, &mut *out) {
            (Data::Float(v), Data::Float(o)) if s.is_float() => {
                let old = read_float(s, cell);
                let x = lane(v, i);
                // A compare-and-swap compares bits, as the hardware does (-0.0 is not 0.0).
                let bits = |v: f64| match s {
                    Scalar::F64 => v.to_bits(),
                    _ => u64::from((v as f32).to_bits()),
                };
                let new = match (op, cmp) {
                    (AtomicOp::Add, _) => round(s, old + x),
                    (AtomicOp::Max, _) => fmax(old, x),
                    (AtomicOp::Min, _) => fmin(old, x),
                    (AtomicOp::Xchg, _) => x,
                    (AtomicOp::Cas, Some(Data::Float(c))) if bits(old) == bits(lane(c, i)) => x,
                    (AtomicOp::Cas, _) => old,
                };
                write_float(s, new, cell);
                if let Some(slot) = o.get_mut(i) {
                    *slot = old;
                }
            }
            (Data::Int(v), Data::Int(o)) if !s.is_float() => {
                let old = read_int(s, cell);
                let x = lane(v, i);
                let key = |v: i64| {
                    if u64s {
                        (v as u64 ^ (1 << 63)) as i64
                    } else {
                        v
                    }
                };
                let new = match (op, cmp) {
                    (AtomicOp::Add, _) => wrap(s, old.wrapping_add(x)),
                    (AtomicOp::Max, _) if key(x) > key(old) => x,
                    (AtomicOp::Min, _) if key(x) < key(old) => x,
                    (AtomicOp::Xchg, _) => x,
                    (AtomicOp::Cas, Some(Data::Int(c))) if lane(c, i) == old => x,
                    _ => old,
                };
                write_int(s, new, cell);
                if let Some(slot) = o.get_mut(i) {
                    *slot = old;
                }
            }
            _ => {
                return Err(Fault::interp(
                    "an atomic whose value does not match its pointer",
                ))
            }
        }
    }
    Ok(ptrs.len() as u64)
}
