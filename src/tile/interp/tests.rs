//! What needs the interpreter's insides: the step limit (the real one, 2^32, would take minutes
//! to reach) and the validation of malformed IR. The semantics are tested from outside, in
//! `tests/tile_interp.rs`.

use super::*;
use crate::tile::ir::{BinOp, Const, Kernel, Op, Scalar, Stmt, StmtKind, Type, Var, VarId};
use crate::tile::span::Loc;

fn stmt(line: u32, kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        loc: Loc { line, col: 1 },
    }
}

fn assign(line: u32, dst: u32, op: Op) -> Stmt {
    stmt(
        line,
        StmtKind::Assign {
            dst: VarId(dst),
            op,
        },
    )
}

fn kernel(vars: Vec<Type>, body: Vec<Stmt>) -> Kernel {
    Kernel {
        name: "k".into(),
        file: "k.tile".into(),
        params: Vec::new(),
        vars: vars.into_iter().map(|ty| Var { ty, name: None }).collect(),
        body,
        num_warps: 4,
        sums: Default::default(),
        loc: Loc { line: 1, col: 1 },
        descriptors: Vec::new(),
        desc_loads: Vec::new(),
        block_misses: Vec::new(),
    }
}

#[test]
fn a_loop_that_never_ends_is_an_error() {
    let i32s = Type::scalar(Scalar::I32);
    let k = kernel(
        vec![i32s.clone(), i32s, Type::scalar(Scalar::I1)],
        vec![
            assign(2, 0, Op::Const(Const::Int(0))),
            assign(3, 1, Op::Const(Const::Int(1))),
            stmt(
                4,
                StmtKind::While {
                    cond_body: vec![assign(4, 2, Op::Const(Const::Bool(true)))],
                    cond: VarId(2),
                    body: vec![assign(
                        5,
                        0,
                        Op::Binary {
                            op: BinOp::Add,
                            lhs: VarId(0),
                            rhs: VarId(1),
                        },
                    )],
                },
            ),
        ],
    );
    let e = run_limited(&k, [1, 1, 1], &[], &mut [], 10_000, None).unwrap_err();
    assert_eq!(e.kind(), "interpreter");
    assert!(e.message.contains("did not finish"), "{}", e.message);
}

#[test]
fn malformed_ir_is_an_error_not_a_panic() {
    let tile = |n| Type {
        elem: ir::Elem::Scalar(Scalar::F32),
        shape: vec![n],
    };
    // An add of an 8-tile and a 4-tile.
    let k = kernel(
        vec![tile(8), tile(4), tile(8)],
        vec![assign(
            7,
            2,
            Op::Binary {
                op: BinOp::Add,
                lhs: VarId(0),
                rhs: VarId(1),
            },
        )],
    );
    let e = run(&k, [1, 1, 1], &[], &mut []).unwrap_err();
    assert_eq!((e.kind(), e.line), ("interpreter", Some(7)));
    // A variable that does not exist.
    let k = kernel(vec![tile(8)], vec![assign(3, 0, Op::Copy(VarId(9)))]);
    assert!(run(&k, [1, 1, 1], &[], &mut []).is_err());
    // Too few arguments.
    let mut k = kernel(vec![Type::scalar(Scalar::I32)], Vec::new());
    k.params.push(ir::Param {
        name: "n".into(),
        var: VarId(0),
        divisibility: 1,
        non_negative: true,
    });
    let e = run(&k, [1, 1, 1], &[], &mut []).unwrap_err();
    assert!(
        e.message.contains("takes 1 launch arguments"),
        "{}",
        e.message
    );
}
