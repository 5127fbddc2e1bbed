//! Writes what the proofs found into the kernel: each block's descriptor and descriptor load,
//! and the statements that compute its offsets (right before the load, in the loop's body;
//! constant extents and strides at the kernel's start).

use super::affine::Lin;
use super::{Found, Size};
use crate::tile::ir::{self, Const, Elem, Kernel, Op, Scalar, Stmt, StmtKind, Type, Var, VarId};
use crate::tile::span::Loc;

/// Adds the descriptors and their loads, and the statements that compute their offsets.
pub(super) fn apply(k: &mut Kernel, mut found: Vec<Found>) {
    found.sort_by_key(|f| std::cmp::Reverse((f.li, f.j)));
    let mut consts: Vec<Stmt> = Vec::new();
    for f in found {
        let Some(loc) = loop_body(k, f.li).and_then(|b| b.get(f.j)).map(|s| s.loc) else {
            continue;
        };
        let mut stmts = Vec::new();
        let offsets = f.offsets.map(|l| emit_lin(k, &l, &mut stmts, &loc));
        let mut var_of = |s: Size| match s {
            Size::Var(v) => v,
            Size::Const(c) => {
                let loc = k.loc;
                new_const(k, c, &mut consts, &loc)
            }
        };
        let shape = f.shape.map(&mut var_of).to_vec();
        let strides = vec![var_of(f.stride), var_of(Size::Const(1))];
        k.descriptors.push(ir::Descriptor {
            base: f.base,
            shape,
            strides,
            block: f.block.to_vec(),
        });
        k.desc_loads.push(ir::DescLoad {
            dst: f.dst,
            desc: k.descriptors.len() - 1,
            offsets: offsets.to_vec(),
        });
        if let Some(body) = loop_body_mut(k, f.li) {
            let at = f.j.min(body.len());
            body.splice(at..at, stmts);
        }
    }
    k.body.splice(0..0, consts);
}

fn loop_body(k: &Kernel, li: usize) -> Option<&Vec<Stmt>> {
    match &k.body.get(li)?.kind {
        StmtKind::For { body, .. } => Some(body),
        _ => None,
    }
}

fn loop_body_mut(k: &mut Kernel, li: usize) -> Option<&mut Vec<Stmt>> {
    match &mut k.body.get_mut(li)?.kind {
        StmtKind::For { body, .. } => Some(body),
        _ => None,
    }
}

fn new_var(k: &mut Kernel, s: Scalar) -> VarId {
    k.vars.push(Var {
        ty: Type::scalar(s),
        name: None,
    });
    VarId(k.vars.len() as u32 - 1)
}

fn assign(dst: VarId, op: Op, loc: &Loc) -> Stmt {
    Stmt {
        kind: StmtKind::Assign { dst, op },
        loc: *loc,
    }
}

/// A new I32 constant, assigned at the kernel's start.
fn new_const(k: &mut Kernel, c: i64, out: &mut Vec<Stmt>, loc: &Loc) -> VarId {
    let v = new_var(k, Scalar::I32);
    out.push(assign(v, Op::Const(Const::Int(c)), loc));
    v
}

/// Statements computing `l`, appended to `out`; the variable that holds it (I32, or I64 when
/// an atom or a coefficient needs it).
fn emit_lin(k: &mut Kernel, l: &Lin, out: &mut Vec<Stmt>, loc: &Loc) -> VarId {
    let wide_atom = l
        .terms
        .keys()
        .any(|&a| k.ty(a).elem != Elem::Scalar(Scalar::I32));
    let wide_const = std::iter::once(l.c)
        .chain(l.terms.values().copied())
        .any(|c| i32::try_from(c).is_err());
    let t = if wide_atom || wide_const {
        Scalar::I64
    } else {
        Scalar::I32
    };
    let konst = |k: &mut Kernel, out: &mut Vec<Stmt>, c: i64| {
        let v = new_var(k, t);
        out.push(assign(v, Op::Const(Const::Int(c)), loc));
        v
    };
    let mut acc = konst(k, out, l.c);
    for (&a, &coef) in &l.terms {
        let mut x = a;
        if k.ty(a).elem != Elem::Scalar(t) {
            x = new_var(k, t);
            out.push(assign(x, Op::Cast(a), loc));
        }
        let c = konst(k, out, coef);
        let m = new_var(k, t);
        out.push(assign(
            m,
            Op::Binary {
                op: ir::BinOp::Mul,
                lhs: x,
                rhs: c,
            },
            loc,
        ));
        let sum = new_var(k, t);
        out.push(assign(
            sum,
            Op::Binary {
                op: ir::BinOp::Add,
                lhs: acc,
                rhs: m,
            },
            loc,
        ));
        acc = sum;
    }
    acc
}
