//! The tile interpreter's semantics, on IR built by hand (three-address, so a small builder
//! makes it quick): masked loads with `other`, integer wrap and both kinds of division, casts,
//! reductions with NaNs and ties, 2-D broadcasts and permutes, loops, atomics, and the
//! out-of-bounds errors with everything they must name. The shipped kernels, from source, are
//! at the end.

use kwb::tile::interp::{self, InterpError, InterpStats};
use kwb::tile::ir::{
    AtomicOp, BinOp, Const, Elem, Kernel, Op, Param, ReduceOp, Scalar, Stmt, StmtKind, Type, UnOp,
    Var, VarId,
};
use kwb::tile::span::Loc;
use kwb::tile::{DType, InterpArg, InterpBuffer};

/// Builds a kernel statement by statement; `begin`/`end` collect a nested body.
struct B {
    vars: Vec<Var>,
    params: Vec<Param>,
    blocks: Vec<Vec<Stmt>>,
    line: u32,
}

fn ty(s: Scalar, shape: &[u32]) -> Type {
    Type {
        elem: Elem::Scalar(s),
        shape: shape.to_vec(),
    }
}

fn ptr(s: Scalar, shape: &[u32]) -> Type {
    Type {
        elem: Elem::Ptr(s),
        shape: shape.to_vec(),
    }
}

use Scalar::{F16, F32, I1, I32};

impl B {
    fn new() -> B {
        B {
            vars: Vec::new(),
            params: Vec::new(),
            blocks: vec![Vec::new()],
            line: 1,
        }
    }

    fn var(&mut self, t: Type) -> VarId {
        self.vars.push(Var { ty: t, name: None });
        VarId(self.vars.len() as u32 - 1)
    }

    fn param(&mut self, name: &str, t: Type) -> VarId {
        let v = self.var(t);
        self.params.push(Param {
            name: name.into(),
            var: v,
            divisibility: 1,
            non_negative: true,
        });
        v
    }

    fn ty(&self, v: VarId) -> Type {
        self.vars[v.0 as usize].ty.clone()
    }

    fn push(&mut self, kind: StmtKind) {
        let loc = Loc {
            line: self.line,
            col: 5,
        };
        self.blocks.last_mut().unwrap().push(Stmt { kind, loc });
    }

    /// `dst = op` into a new variable of type `t`.
    fn let_(&mut self, t: Type, op: Op) -> VarId {
        let dst = self.var(t);
        self.set(dst, op);
        dst
    }

    fn set(&mut self, dst: VarId, op: Op) {
        self.push(StmtKind::Assign { dst, op });
    }

    fn int(&mut self, x: i64) -> VarId {
        self.let_(ty(I32, &[]), Op::Const(Const::Int(x)))
    }

    fn float(&mut self, s: Scalar, x: f64) -> VarId {
        self.let_(ty(s, &[]), Op::Const(Const::Float(x)))
    }

    fn bin(&mut self, op: BinOp, lhs: VarId, rhs: VarId) -> VarId {
        let mut t = self.ty(lhs);
        if matches!(
            op,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        ) {
            t.elem = Elem::Scalar(I1);
        }
        self.let_(t, Op::Binary { op, lhs, rhs })
    }

    fn splat(&mut self, v: VarId, shape: &[u32]) -> VarId {
        let mut t = self.ty(v);
        t.shape = shape.to_vec();
        self.let_(t, Op::Splat(v))
    }

    fn arange(&mut self, n: i64) -> VarId {
        self.let_(ty(I32, &[n as u32]), Op::Arange { start: 0, end: n })
    }

    fn ptr_add(&mut self, p: VarId, off: VarId) -> VarId {
        let mut t = self.ty(p);
        t.shape = self.ty(off).shape;
        let p = if t.shape.is_empty() || self.ty(p).shape == t.shape {
            p
        } else {
            self.splat(p, &t.shape.clone())
        };
        self.let_(
            t,
            Op::PtrAdd {
                ptr: p,
                offset: off,
            },
        )
    }

    fn load(&mut self, p: VarId, mask: Option<VarId>, other: Option<VarId>) -> VarId {
        let t = self.ty(p);
        let Elem::Ptr(s) = t.elem else { panic!() };
        self.let_(
            ty(s, &t.shape),
            Op::Load {
                ptr: p,
                mask,
                other,
            },
        )
    }

    fn store(&mut self, p: VarId, value: VarId, mask: Option<VarId>) {
        self.push(StmtKind::Store {
            ptr: p,
            value,
            mask,
        });
    }

    /// Stores scalar `v` at element `i` of the buffer `out` points to.
    fn store_at(&mut self, out: VarId, i: i64, v: VarId) {
        let k = self.int(i);
        let p = self.ptr_add(out, k);
        self.store(p, v, None);
    }

    fn begin(&mut self) {
        self.blocks.push(Vec::new());
    }

    fn end(&mut self) -> Vec<Stmt> {
        self.blocks.pop().unwrap()
    }

    fn finish(mut self) -> Kernel {
        Kernel {
            name: "k".into(),
            file: "kernels/test.tile".into(),
            params: self.params,
            vars: self.vars,
            body: self.blocks.pop().unwrap(),
            num_warps: 4,
            sums: Default::default(),
            loc: Loc { line: 1, col: 1 },
            descriptors: Vec::new(),
            desc_loads: Vec::new(),
            block_misses: Vec::new(),
        }
    }
}

fn f32_buf(name: &str, xs: &[f32]) -> InterpBuffer {
    InterpBuffer {
        name: name.into(),
        dtype: DType::F32,
        bytes: xs.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn i32_buf(name: &str, xs: &[i32]) -> InterpBuffer {
    InterpBuffer {
        name: name.into(),
        dtype: DType::I32,
        bytes: xs.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn f32s(b: &InterpBuffer) -> Vec<f32> {
    b.bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn i32s(b: &InterpBuffer) -> Vec<i32> {
    b.bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn run(
    k: &Kernel,
    grid: [u32; 3],
    args: &[InterpArg],
    bufs: &mut [InterpBuffer],
) -> Result<InterpStats, InterpError> {
    interp::run(k, grid, args, bufs)
}

/// `offs = pid * BLOCK + arange(BLOCK); mask = offs < n`.
fn block_offsets(b: &mut B, block: i64, n: VarId) -> (VarId, VarId) {
    let pid = b.let_(ty(I32, &[]), Op::ProgramId(0));
    let bs = b.int(block);
    let base = b.bin(BinOp::Mul, pid, bs);
    let base = b.splat(base, &[block as u32]);
    let ar = b.arange(block);
    let offs = b.bin(BinOp::Add, base, ar);
    let nt = b.splat(n, &[block as u32]);
    let mask = b.bin(BinOp::Lt, offs, nt);
    (offs, mask)
}

#[test]
fn masked_add_with_other_and_a_tail() {
    // c[i] = x[i] + y[i] for i < n; d gets the loaded x, -1 where masked off (all 16 lanes).
    let mut b = B::new();
    let (x, y, c, d) = (
        b.param("x", ptr(F32, &[])),
        b.param("y", ptr(F32, &[])),
        b.param("c", ptr(F32, &[])),
        b.param("d", ptr(F32, &[])),
    );
    let n = b.param("n", ty(I32, &[]));
    let (offs, mask) = block_offsets(&mut b, 8, n);
    let px = b.ptr_add(x, offs);
    let py = b.ptr_add(y, offs);
    let minus1 = b.float(F32, -1.0);
    let a = b.load(px, Some(mask), Some(minus1));
    let bb = b.load(py, Some(mask), None);
    let sum = b.bin(BinOp::Add, a, bb);
    let pc = b.ptr_add(c, offs);
    b.store(pc, sum, Some(mask));
    let pd = b.ptr_add(d, offs);
    b.store(pd, a, None);
    let k = b.finish();
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..10).map(|i| 0.5 * i as f32).collect();
    let mut bufs = vec![
        f32_buf("x", &xs),
        f32_buf("y", &ys),
        f32_buf("c", &[9.0; 10]),
        f32_buf("d", &[9.0; 16]),
    ];
    let args = [0, 1, 2, 3].map(InterpArg::Buffer);
    let mut args: Vec<_> = args.into_iter().collect();
    args.push(InterpArg::Int(10));
    let stats = run(&k, [2, 1, 1], &args, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    assert!(stats.ops > 0);
    let c = f32s(&bufs[2]);
    assert_eq!(c, (0..10).map(|i| 1.5 * i as f32).collect::<Vec<_>>());
    let d = f32s(&bufs[3]);
    assert_eq!(&d[..10], &xs[..]);
    assert_eq!(&d[10..], &[-1.0; 6]);
}

#[test]
fn integers_wrap_and_divide_as_c() {
    let mut b = B::new();
    let out = b.param("out", ptr(I32, &[]));
    let max = b.int(i64::from(i32::MAX));
    let one = b.int(1);
    let wrapped = b.bin(BinOp::Add, max, one);
    b.store_at(out, 0, wrapped);
    let (m7, two, m2) = (b.int(-7), b.int(2), b.int(-2));
    let results = [
        b.bin(BinOp::Div, m7, two), // -3
        b.bin(BinOp::Rem, m7, two), // -1
        b.bin(BinOp::Rem, two, m7), // 2 (the dividend's sign)
        b.bin(BinOp::Div, m7, m2),  // 3
        b.bin(BinOp::Rem, m7, m2),  // -1
        b.bin(BinOp::Div, two, m2), // -1
    ];
    for (i, r) in results.into_iter().enumerate() {
        b.store_at(out, 1 + i as i64, r);
    }
    let (three, big) = (b.int(3), b.int(0x4000_0001));
    let shl = b.bin(BinOp::Shl, big, three); // wraps to 8
    let shr = b.bin(BinOp::Shr, m7, one); // arithmetic: -4
    let mul = b.bin(BinOp::Mul, big, big); // wraps
    let zero = b.int(0);
    let by0 = b.bin(BinOp::Div, three, zero);
    let min = b.int(i64::from(i32::MIN));
    let m1 = b.int(-1);
    let ovf = b.bin(BinOp::Div, min, m1); // wraps to MIN, as the GPU
    let neg = b.let_(
        ty(I32, &[]),
        Op::Unary {
            op: UnOp::Neg,
            src: min,
        },
    );
    let not = b.let_(
        ty(I32, &[]),
        Op::Unary {
            op: UnOp::Not,
            src: zero,
        },
    );
    for (i, r) in [shl, shr, mul, by0, ovf, neg, not].into_iter().enumerate() {
        b.store_at(out, 7 + i as i64, r);
    }
    let k = b.finish();
    let mut bufs = vec![i32_buf("out", &[0; 14])];
    run(&k, [1, 1, 1], &[InterpArg::Buffer(0)], &mut bufs).unwrap();
    let big = 0x4000_0001i32;
    assert_eq!(
        i32s(&bufs[0]),
        vec![
            i32::MIN,
            -3,
            -1,
            2,
            3,
            -1,
            -1,
            8,
            -4,
            big.wrapping_mul(big),
            -1,
            i32::MIN,
            i32::MIN,
            -1
        ]
    );
}

#[test]
fn casts_follow_c() {
    let mut b = B::new();
    let out = b.param("out", ptr(I32, &[]));
    let half = b.param("h", ptr(F16, &[]));
    let fl = b.param("f", ptr(F32, &[]));
    let vals = [-2.7, 2.7, 0.25, 0.0, 3e9, f64::NAN];
    for (i, &v) in vals.iter().enumerate() {
        let x = b.float(F32, v);
        let t = b.let_(ty(I32, &[]), Op::Cast(x));
        b.store_at(out, i as i64, t);
        let flag = b.let_(ty(I1, &[]), Op::Cast(x));
        let flag = b.let_(ty(I32, &[]), Op::Cast(flag));
        b.store_at(out, 6 + i as i64, flag);
    }
    // 1/3 rounded to f16, and 2049 (not representable in f16: rounds to even, 2048).
    let third = b.float(F32, 1.0 / 3.0);
    let h = b.let_(ty(F16, &[]), Op::Cast(third));
    b.store_at(half, 0, h);
    let n = b.int(2049);
    let h2 = b.let_(ty(F16, &[]), Op::Cast(n));
    b.store_at(half, 1, h2);
    // f16 arithmetic rounds to f16: 2048 + 1 = 2048.
    let one = b.float(F16, 1.0);
    let s = b.bin(BinOp::Add, h2, one);
    let back = b.let_(ty(F32, &[]), Op::Cast(s));
    b.store_at(fl, 0, back);
    let k = b.finish();
    let mut bufs = vec![
        i32_buf("out", &[0; 12]),
        InterpBuffer {
            name: "h".into(),
            dtype: DType::F16,
            bytes: vec![0; 4],
        },
        f32_buf("f", &[0.0]),
    ];
    let args = [0, 1, 2].map(InterpArg::Buffer);
    run(&k, [1, 1, 1], &args, &mut bufs).unwrap();
    // Out-of-range and NaN conversions saturate (NaN to 0), as the GPU's cvt.rzi does.
    assert_eq!(
        i32s(&bufs[0]),
        vec![-2, 2, 0, 0, i32::MAX, 0, 1, 1, 1, 0, 1, 1]
    );
    let h: Vec<f32> = bufs[1]
        .bytes
        .chunks(2)
        .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    assert_eq!(h, vec![half::f16::from_f64(1.0 / 3.0).to_f32(), 2048.0]);
    assert_eq!(f32s(&bufs[2]), vec![2048.0]);
}

/// Reduces an 8-tile loaded from `x` with each op; stores the results as f32 (indices cast).
fn reductions_of(xs: &[f32]) -> Vec<f32> {
    let mut b = B::new();
    let x = b.param("x", ptr(F32, &[]));
    let out = b.param("out", ptr(F32, &[]));
    let ar = b.arange(8);
    let px = b.ptr_add(x, ar);
    let t = b.load(px, None, None);
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
    ];
    for (i, op) in ops.into_iter().enumerate() {
        let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
        let r = b.let_(
            ty(if arg { I32 } else { F32 }, &[]),
            Op::Reduce {
                op,
                src: t,
                axis: Some(0),
            },
        );
        let r = if arg {
            b.let_(ty(F32, &[]), Op::Cast(r))
        } else {
            r
        };
        b.store_at(out, i as i64, r);
    }
    let k = b.finish();
    let mut bufs = vec![f32_buf("x", xs), f32_buf("out", &[0.0; 5])];
    run(
        &k,
        [1, 1, 1],
        &[InterpArg::Buffer(0), InterpArg::Buffer(1)],
        &mut bufs,
    )
    .unwrap();
    f32s(&bufs[1])
}

#[test]
fn reductions_ignore_nan_and_break_ties_low() {
    let nan = f32::NAN;
    let r = reductions_of(&[1.0, 5.0, nan, 5.0, -2.0, 0.5, -2.0, 3.0]);
    assert!(r[0].is_nan(), "a NaN makes the sum NaN");
    assert_eq!(&r[1..], &[5.0, -2.0, 1.0, 4.0]);
    let r = reductions_of(&[nan, 2.0, 2.0, 1.0, 0.5, 0.25, 4.0, 4.0]);
    assert_eq!(&r[1..], &[4.0, 0.25, 6.0, 5.0], "a NaN first loses too");
    let r = reductions_of(&[3.0, 2.0, 2.0, 1.0, 0.5, 0.25, 4.0, 4.0]);
    assert_eq!(r, vec![16.75, 4.0, 0.25, 6.0, 5.0]);
}

#[test]
fn two_d_broadcast_expand_permute_reshape() {
    // y[i, j] = col[i] * 10 + row[j], a 4 x 8 tile; z = its transpose (8 x 4) stored flat;
    // w = the row-wise sums.
    let mut b = B::new();
    let y = b.param("y", ptr(F32, &[]));
    let z = b.param("z", ptr(F32, &[]));
    let w = b.param("w", ptr(F32, &[]));
    let i = b.arange(4);
    let j = b.arange(8);
    let fi = b.let_(ty(F32, &[4]), Op::Cast(i));
    let ten = b.float(F32, 10.0);
    let ten = b.splat(ten, &[4]);
    let col = b.bin(BinOp::Mul, fi, ten);
    let row = b.let_(ty(F32, &[8]), Op::Cast(j));
    let col2 = b.let_(ty(F32, &[4, 1]), Op::ExpandDims { src: col, axis: 1 });
    let row2 = b.let_(ty(F32, &[1, 8]), Op::ExpandDims { src: row, axis: 0 });
    let colb = b.let_(ty(F32, &[4, 8]), Op::Broadcast(col2));
    let rowb = b.let_(ty(F32, &[4, 8]), Op::Broadcast(row2));
    let grid = b.bin(BinOp::Add, colb, rowb);
    let flat = b.let_(ty(F32, &[32]), Op::Reshape(grid));
    let k32 = b.arange(32);
    let py = b.ptr_add(y, k32);
    b.store(py, flat, None);
    let t = b.let_(
        ty(F32, &[8, 4]),
        Op::Permute {
            src: grid,
            perm: vec![1, 0],
        },
    );
    let tflat = b.let_(ty(F32, &[32]), Op::Reshape(t));
    let pz = b.ptr_add(z, k32);
    b.store(pz, tflat, None);
    let sums = b.let_(
        ty(F32, &[4]),
        Op::Reduce {
            op: ReduceOp::Sum,
            src: grid,
            axis: Some(1),
        },
    );
    let pw = b.ptr_add(w, i);
    b.store(pw, sums, None);
    let k = b.finish();
    let mut bufs = vec![
        f32_buf("y", &[0.0; 32]),
        f32_buf("z", &[0.0; 32]),
        f32_buf("w", &[0.0; 4]),
    ];
    run(&k, [1, 1, 1], &[0, 1, 2].map(InterpArg::Buffer), &mut bufs).unwrap();
    let at = |i: usize, j: usize| (i * 10 + j) as f32;
    let want_y: Vec<f32> = (0..32).map(|k| at(k / 8, k % 8)).collect();
    let want_z: Vec<f32> = (0..32).map(|k| at(k % 4, k / 4)).collect();
    assert_eq!(f32s(&bufs[0]), want_y);
    assert_eq!(f32s(&bufs[1]), want_z);
    assert_eq!(
        f32s(&bufs[2]),
        (0..4).map(|i| (80 * i + 28) as f32).collect::<Vec<_>>()
    );
}

#[test]
fn loops_carry_tiles_and_follow_python_ranges() {
    // acc = zeros(8); for r in range(0, 4): acc = acc + x[r*8 : r*8+8]; also the sum of
    // range(10, 0, -3) = 10 + 7 + 4 + 1, and a while loop counting to 5.
    let mut b = B::new();
    let x = b.param("x", ptr(F32, &[]));
    let out = b.param("out", ptr(F32, &[]));
    let cnt = b.param("cnt", ptr(I32, &[]));
    let zero = b.float(F32, 0.0);
    let acc = b.splat(zero, &[8]);
    let (s0, s1, s8) = (b.int(0), b.int(4), b.int(8));
    let one = b.int(1);
    let r = b.var(ty(I32, &[]));
    b.begin();
    let base = b.bin(BinOp::Mul, r, s8);
    let base = b.splat(base, &[8]);
    let ar = b.arange(8);
    let offs = b.bin(BinOp::Add, base, ar);
    let p = b.ptr_add(x, offs);
    let v = b.load(p, None, None);
    b.set(
        acc,
        Op::Binary {
            op: BinOp::Add,
            lhs: acc,
            rhs: v,
        },
    );
    let body = b.end();
    b.push(StmtKind::For {
        var: r,
        start: s0,
        end: s1,
        step: one,
        body,
        num_stages: None,
    });
    let ar = b.arange(8);
    let po = b.ptr_add(out, ar);
    b.store(po, acc, None);
    // Negative step.
    let total = b.int(0);
    let (ten, m3) = (b.int(10), b.int(-3));
    let q = b.var(ty(I32, &[]));
    b.begin();
    b.set(
        total,
        Op::Binary {
            op: BinOp::Add,
            lhs: total,
            rhs: q,
        },
    );
    let body = b.end();
    b.push(StmtKind::For {
        var: q,
        start: ten,
        end: s0,
        step: m3,
        body,
        num_stages: None,
    });
    b.store_at(cnt, 0, total);
    // While.
    let i = b.int(0);
    let five = b.int(5);
    let c = b.var(ty(I1, &[]));
    b.begin();
    b.set(
        c,
        Op::Binary {
            op: BinOp::Lt,
            lhs: i,
            rhs: five,
        },
    );
    let cond_body = b.end();
    b.begin();
    b.set(
        i,
        Op::Binary {
            op: BinOp::Add,
            lhs: i,
            rhs: one,
        },
    );
    let body = b.end();
    b.push(StmtKind::While {
        cond_body,
        cond: c,
        body,
    });
    b.store_at(cnt, 1, i);
    let k = b.finish();
    let xs: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let mut bufs = vec![
        f32_buf("x", &xs),
        f32_buf("out", &[0.0; 8]),
        i32_buf("cnt", &[0, 0]),
    ];
    run(&k, [1, 1, 1], &[0, 1, 2].map(InterpArg::Buffer), &mut bufs).unwrap();
    let want: Vec<f32> = (0..8).map(|j| (4 * j + 48) as f32).collect();
    assert_eq!(f32s(&bufs[1]), want);
    assert_eq!(i32s(&bufs[2]), vec![22, 5]);
}

#[test]
fn return_ends_only_the_program() {
    // if pid == 1: return; out[pid] = 7
    let mut b = B::new();
    let out = b.param("out", ptr(I32, &[]));
    let pid = b.let_(ty(I32, &[]), Op::ProgramId(0));
    let one = b.int(1);
    let c = b.bin(BinOp::Eq, pid, one);
    b.begin();
    b.push(StmtKind::Return);
    let then = b.end();
    b.push(StmtKind::If {
        cond: c,
        then,
        otherwise: Vec::new(),
    });
    let seven = b.int(7);
    let p = b.ptr_add(out, pid);
    b.store(p, seven, None);
    let k = b.finish();
    let mut bufs = vec![i32_buf("out", &[0; 3])];
    run(&k, [3, 1, 1], &[InterpArg::Buffer(0)], &mut bufs).unwrap();
    assert_eq!(i32s(&bufs[0]), vec![7, 0, 7]);
}

#[test]
fn atomics_return_old_values_and_skip_masked_lanes() {
    // Every program adds 1 from each of its 8 lanes to counter[0] (lanes 6 and 7 masked off),
    // and atomically maxes its program id into counter[1]; program 0 stores the old values
    // its add saw.
    let mut b = B::new();
    let counter = b.param("counter", ptr(F32, &[]));
    let olds = b.param("olds", ptr(F32, &[]));
    let ar = b.arange(8);
    let six = b.int(6);
    let six = b.splat(six, &[8]);
    let mask = b.bin(BinOp::Lt, ar, six);
    let zero = b.int(0);
    let zeros = b.splat(zero, &[8]);
    let p = b.ptr_add(counter, zeros);
    let one = b.float(F32, 1.0);
    let ones = b.splat(one, &[8]);
    let old = b.let_(
        ty(F32, &[8]),
        Op::Atomic {
            op: AtomicOp::Add,
            ptr: p,
            value: ones,
            mask: Some(mask),
            cmp: None,
        },
    );
    let pid = b.let_(ty(I32, &[]), Op::ProgramId(0));
    let fpid = b.let_(ty(F32, &[]), Op::Cast(pid));
    let k1 = b.int(1);
    let p1 = b.ptr_add(counter, k1);
    b.let_(
        ty(F32, &[]),
        Op::Atomic {
            op: AtomicOp::Max,
            ptr: p1,
            value: fpid,
            mask: None,
            cmp: None,
        },
    );
    let is0 = b.bin(BinOp::Eq, pid, zero);
    b.begin();
    let po = b.ptr_add(olds, ar);
    b.store(po, old, None);
    let then = b.end();
    b.push(StmtKind::If {
        cond: is0,
        then,
        otherwise: Vec::new(),
    });
    let k = b.finish();
    let mut bufs = vec![f32_buf("counter", &[0.0, -1.0]), f32_buf("olds", &[9.0; 8])];
    run(&k, [4, 1, 1], &[0, 1].map(InterpArg::Buffer), &mut bufs).unwrap();
    assert_eq!(f32s(&bufs[0]), vec![24.0, 3.0]);
    assert_eq!(f32s(&bufs[1]), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0]);
}

#[test]
fn a_store_past_the_end_names_program_lane_buffer_and_line() {
    // No mask: the second program's lanes 2..8 write past the 10 elements of c.
    let mut b = B::new();
    let c = b.param("c", ptr(F32, &[]));
    let n = b.param("n", ty(I32, &[]));
    let (offs, _mask) = block_offsets(&mut b, 8, n);
    let one = b.float(F32, 1.0);
    let ones = b.splat(one, &[8]);
    let p = b.ptr_add(c, offs);
    b.line = 17;
    b.store(p, ones, None);
    let k = b.finish();
    let mut bufs = vec![f32_buf("c", &[0.0; 10])];
    let e = run(
        &k,
        [2, 1, 1],
        &[InterpArg::Buffer(0), InterpArg::Int(10)],
        &mut bufs,
    )
    .unwrap_err();
    assert_eq!(e.kind(), "out-of-bounds");
    assert_eq!(e.program, [1, 0, 0]);
    assert_eq!(
        e.message,
        "store to `c` out of bounds at element 10 (c has 10 elements): program (1, 0, 0), lane 2"
    );
    assert_eq!(e.line, Some(17));
    assert_eq!(e.file.as_deref(), Some("kernels/test.tile"));
    // The first program's stores happened; the faulting one stopped at its first bad lane.
    assert_eq!(f32s(&bufs[0])[..8], [1.0; 8]);
}

#[test]
fn a_load_before_the_start_is_out_of_bounds_but_masked_lanes_are_not() {
    // x - 1 + arange(8) (a 2 x 4 tile): lane 0 reads element -1 unless masked off.
    let build = |masked: bool| {
        let mut b = B::new();
        let x = b.param("x", ptr(F32, &[]));
        let out = b.param("out", ptr(F32, &[]));
        let ar = b.arange(8);
        let m1 = b.int(-1);
        let m1s = b.splat(m1, &[8]);
        let offs = b.bin(BinOp::Add, ar, m1s);
        let offs2 = b.let_(ty(I32, &[2, 4]), Op::Reshape(offs));
        let zero = b.int(0);
        let zs = b.splat(zero, &[2, 4]);
        let mask = b.bin(BinOp::Ge, offs2, zs);
        let p = b.ptr_add(x, offs2);
        b.line = 9;
        let v = b.load(p, masked.then_some(mask), None);
        let flat = b.let_(ty(F32, &[8]), Op::Reshape(v));
        let po = b.ptr_add(out, ar);
        b.store(po, flat, None);
        b.finish()
    };
    let xs: Vec<f32> = (1..=8).map(|i| i as f32).collect();
    let mut bufs = vec![f32_buf("x", &xs), f32_buf("out", &[0.0; 8])];
    let args = [0, 1].map(InterpArg::Buffer);
    let e = run(&build(false), [1, 1, 1], &args, &mut bufs).unwrap_err();
    assert_eq!(
        e.message,
        "load from `x` out of bounds at element -1 (x has 8 elements): program (0, 0, 0), lane 0 (index [0, 0])"
    );
    assert_eq!((e.kind(), e.line), ("out-of-bounds", Some(9)));
    run(&build(true), [1, 1, 1], &args, &mut bufs).unwrap();
    assert_eq!(f32s(&bufs[1]), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn fp32_math_is_rounded_once_per_op() {
    // sqrt, exp, tanh, erf, sigmoid, fma and a division of f32s, against f64 math rounded.
    let mut b = B::new();
    let out = b.param("out", ptr(F32, &[]));
    let x = b.float(F32, 0.7);
    let y = b.float(F32, 3.0);
    let ops = [
        UnOp::Sqrt,
        UnOp::Exp,
        UnOp::Tanh,
        UnOp::Erf,
        UnOp::Sigmoid,
        UnOp::Rsqrt,
    ];
    for (i, op) in ops.into_iter().enumerate() {
        let r = b.let_(ty(F32, &[]), Op::Unary { op, src: x });
        b.store_at(out, i as i64, r);
    }
    let f = b.let_(ty(F32, &[]), Op::Fma { a: x, b: y, c: x });
    b.store_at(out, 6, f);
    let d = b.bin(BinOp::Div, x, y);
    b.store_at(out, 7, d);
    let k = b.finish();
    let mut bufs = vec![f32_buf("out", &[0.0; 8])];
    run(&k, [1, 1, 1], &[InterpArg::Buffer(0)], &mut bufs).unwrap();
    let x = f64::from(0.7f32);
    let want = [
        x.sqrt() as f32,
        x.exp() as f32,
        x.tanh() as f32,
        0.0,
        (1.0 / (1.0 + (-x).exp())) as f32,
        (1.0 / x.sqrt()) as f32,
        0.7f32.mul_add(3.0, 0.7),
        0.7f32 / 3.0,
    ];
    let mut got = f32s(&bufs[0]);
    // erf(0.7) = 0.67780119…; 0.7f32 is 1.2e-8 below 0.7 and erf' there is 0.69.
    assert!(
        (got[3] - 0.677_801_2).abs() < 1e-7,
        "erf(0.7f32) = {}",
        got[3]
    );
    got[3] = 0.0;
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------------------------
// The shipped kernels, from source: the checker's IR run by the interpreter.

use kwb::tile::{ArgKind, ConstValue, KernelRequest};
use std::sync::Arc;

fn compiled(path: &str, name: &str, args: Vec<ArgKind>, constexprs: &[(&str, i64)]) -> Arc<Kernel> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let source = std::fs::read_to_string(&path).unwrap();
    let request = KernelRequest {
        name: name.into(),
        args,
        constexprs: constexprs
            .iter()
            .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
            .collect(),
        num_warps: 4,
        sums: Default::default(),
    };
    let c = kwb::tile::compile(&path, &source, &[request]);
    assert!(
        c.kernels.len() == 1,
        "{}",
        kwb::diag::render_all(&c.diagnostics)
    );
    c.kernels[0].clone()
}

fn int_arg() -> ArgKind {
    ArgKind::Int {
        fits_i32: true,
        divisibility: 1,
        non_negative: true,
        one: false,
    }
}

/// A deterministic, varied input in about [-4, 4].
fn input(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 * 0.618_034).fract() - 0.5) * 8.0)
        .collect()
}

fn softmax_rows(x: &[f32], m: usize, n: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for r in 0..m {
        let row = &x[r * n..(r + 1) * n];
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |a, &b| a.max(f64::from(b)));
        let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / s));
    }
    out
}

fn assert_close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}"
        );
    }
}

#[test]
fn shipped_softmax_kernels_from_source() {
    let (m, n) = (5usize, 13usize);
    let x = input(m * n);
    let want = softmax_rows(&x, m, n);
    let ptrs = || vec![ArgKind::Pointer(DType::F32), ArgKind::Pointer(DType::F32)];
    for (file, name, grid) in [
        ("kernels/softmax/v5.tile", "softmax_row", m as u32),
        ("kernels/softmax/v6.tile", "softmax_persistent", 2),
    ] {
        let mut args = ptrs();
        args.extend([int_arg(), int_arg()]);
        let k = compiled(file, name, args, &[("BLOCK", 16)]);
        let mut bufs = vec![f32_buf("x", &x), f32_buf("y", &vec![f32::NAN; m * n])];
        let args = [
            InterpArg::Buffer(0),
            InterpArg::Buffer(1),
            InterpArg::Int(m as i64),
            InterpArg::Int(n as i64),
        ];
        let stats = run(&k, [grid, 1, 1], &args, &mut bufs)
            .map_err(|e| e.to_string())
            .unwrap();
        assert!(stats.ops > (m * n) as u64, "{file}: {} ops", stats.ops);
        assert_close(&f32s(&bufs[1]), &want, 1e-6);
    }
    // The user's module: (out, in, in_stride, out_stride, n_cols).
    let mut args = ptrs();
    args.extend([int_arg(), int_arg(), int_arg()]);
    let k = compiled(
        "kernels/softmax/fused_softmax.py",
        "fused_softmax",
        args,
        &[("BLOCK_SIZE", 16)],
    );
    let mut bufs = vec![f32_buf("y", &vec![f32::NAN; m * n]), f32_buf("x", &x)];
    let n = n as i64;
    let args = [
        InterpArg::Buffer(0),
        InterpArg::Buffer(1),
        InterpArg::Int(n),
        InterpArg::Int(n),
        InterpArg::Int(n),
    ];
    run(&k, [m as u32, 1, 1], &args, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    assert_close(&f32s(&bufs[0]), &want, 1e-6);
}

#[test]
fn shipped_elementwise_kernels_from_source() {
    // fp16 add: each sum rounded once to fp16, exactly.
    let n = 100;
    let a: Vec<half::f16> = input(n).iter().map(|&v| half::f16::from_f32(v)).collect();
    let b: Vec<half::f16> = input(n + 7)[7..]
        .iter()
        .map(|&v| half::f16::from_f32(v))
        .collect();
    let f16_buf = |name: &str, v: &[half::f16]| InterpBuffer {
        name: name.into(),
        dtype: DType::F16,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    let args = vec![
        ArgKind::Pointer(DType::F16),
        ArgKind::Pointer(DType::F16),
        ArgKind::Pointer(DType::F16),
        int_arg(),
    ];
    let k = compiled(
        "kernels/elementwise-add/v8.tile",
        "add_kernel",
        args,
        &[("BLOCK", 64)],
    );
    let mut bufs = vec![
        f16_buf("a", &a),
        f16_buf("b", &b),
        f16_buf("c", &[half::f16::NAN; 100]),
    ];
    let launch = [0, 1, 2].map(InterpArg::Buffer);
    let mut launch: Vec<_> = launch.into_iter().collect();
    launch.push(InterpArg::Int(n as i64));
    run(&k, [2, 1, 1], &launch, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    let c: Vec<half::f16> = bufs[2]
        .bytes
        .chunks(2)
        .map(|x| half::f16::from_le_bytes([x[0], x[1]]))
        .collect();
    let want: Vec<half::f16> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| half::f16::from_f32(x.to_f32() + y.to_f32()))
        .collect();
    assert_eq!(c, want);

    // tanh GELU in fp32.
    let n = 37;
    let x = input(n);
    let args = vec![
        ArgKind::Pointer(DType::F32),
        ArgKind::Pointer(DType::F32),
        int_arg(),
    ];
    let k = compiled(
        "kernels/gelu/v4.tile",
        "gelu_kernel",
        args,
        &[("BLOCK", 16)],
    );
    let mut bufs = vec![f32_buf("x", &x), f32_buf("y", &[f32::NAN; 37])];
    let args = [
        InterpArg::Buffer(0),
        InterpArg::Buffer(1),
        InterpArg::Int(n as i64),
    ];
    run(&k, [3, 1, 1], &args, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    let want: Vec<f64> = x
        .iter()
        .map(|&v| {
            let v = f64::from(v);
            0.5 * v * (1.0 + (0.797_884_56 * (v + 0.044_715 * v * v * v)).tanh())
        })
        .collect();
    assert_close(&f32s(&bufs[1]), &want, 1e-6);
}

#[test]
fn scalar_loops_and_division_as_triton_from_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scalars.tile");
    std::fs::write(
        &path,
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n\
         def k(out_ptr, n):\n    \
         i = 0\n    \
         total = 0\n    \
         while i < n:\n        \
         total += i\n        \
         i += 1\n    \
         tl.store(out_ptr, total)\n    \
         tl.store(out_ptr + 1, (n - 17) // 2)\n    \
         tl.store(out_ptr + 2, (n - 17) % 2)\n    \
         for j in range(n, 0, -3):\n        \
         tl.store(out_ptr + 3 + j // 3, j)\n    \
         tl.store(out_ptr + 7, -7 // 2)\n    \
         tl.store(out_ptr + 8, -7 % 2)\n",
    )
    .unwrap();
    let k = compiled(
        path.to_str().unwrap(),
        "k",
        vec![ArgKind::Pointer(DType::I32), int_arg()],
        &[],
    );
    let mut bufs = vec![i32_buf("out", &[0; 9])];
    let args = [InterpArg::Buffer(0), InterpArg::Int(10)];
    run(&k, [1, 1, 1], &args, &mut bufs)
        .map_err(|e| e.to_string())
        .unwrap();
    // sum(range(10)) = 45; on a runtime scalar, -7 // 2 = -3 and -7 % 2 = -1 (C's rounding,
    // as Triton 3.6 computes them on an H100); j = 10, 7, 4, 1; the same on literals folds at
    // compile time with Python's rounding, as Triton's frontend folds it: -4 and 1.
    assert_eq!(i32s(&bufs[0]), vec![45, -3, -1, 1, 4, 7, 10, -4, 1]);
}

// ---------------------------------------------------------------------------------------------
// Semantics the differential test against Triton found (tests/tile_differential.rs; the
// programs reduced from seeds 5808, 5787 and 6715 of its campaign, and 1393/1726).

/// Runs kernel `k` of a source (one program of 16 lanes) on an int32 output and the int
/// arguments `ints` (each `one` when it equals 1, as kwb and compiled Triton specialise).
fn run_source(src: &str, ints: &[i64]) -> Vec<i32> {
    let path = std::path::Path::new("regression.py");
    let mut args = vec![ArgKind::Pointer(DType::I32)];
    args.extend(ints.iter().map(|v| ArgKind::Int {
        fits_i32: true,
        divisibility: 1,
        non_negative: *v >= 0,
        one: *v == 1,
    }));
    let request = KernelRequest {
        name: "k".into(),
        args,
        constexprs: Vec::new(),
        num_warps: 1,
        sums: Default::default(),
    };
    let c = kwb::tile::compile(path, src, &[request]);
    assert!(
        c.kernels.len() == 1,
        "{}",
        kwb::diag::render_all(&c.diagnostics)
    );
    let mut bufs = vec![i32_buf("y", &[0; 16])];
    let mut iargs = vec![InterpArg::Buffer(0)];
    iargs.extend(ints.iter().map(|v| InterpArg::Int(*v)));
    run(&c.kernels[0], [1, 1, 1], &iargs, &mut bufs).unwrap();
    i32s(&bufs[0])
}

#[test]
fn tl_minimum_and_where_of_numbers_are_tensors_as_in_triton() {
    // Triton makes the arguments of `tl.minimum`/`tl.maximum`/`tl.where` tensors, so what
    // follows divides as tensors do (truncating): 3 // -4 is 0, not Python's -1.
    let src = "import triton.language as tl\n@triton.jit\ndef k(y_ptr):\n    o = tl.arange(0, 16)\n    a = tl.minimum(3, 3) // -4\n    b = tl.where(True, 7, 0) % -4\n    tl.store(y_ptr + o, o * 0 + a * 100 + b)\n";
    assert_eq!(run_source(src, &[]), vec![3; 16]);
}

#[test]
fn an_argument_equal_to_1_is_a_constexpr_as_compiled_triton_makes_it() {
    // Compiled Triton specialises an integer argument equal to 1 as the constexpr 1, so
    // `s // -2` folds with Python's floor (-1) where a runtime `s` truncates (0). Triton's
    // interpreter does not specialise: the differential test keeps `s` away from 1 for that
    // reason (docs/differential.md), and the GPU test holds kwb to compiled Triton.
    let src = "import triton.language as tl\n@triton.jit\ndef k(y_ptr, s):\n    o = tl.arange(0, 16)\n    tl.store(y_ptr + o, o * 0 + s // -2)\n";
    assert_eq!(run_source(src, &[1]), vec![-1; 16]);
    assert_eq!(run_source(src, &[3]), vec![-1; 16]);
    assert_eq!(run_source(src, &[-3]), vec![1; 16]);
    let unspecialised = "import triton.language as tl\n@triton.jit(do_not_specialize=['s'])\ndef k(y_ptr, s):\n    o = tl.arange(0, 16)\n    tl.store(y_ptr + o, o * 0 + s // -2)\n";
    assert_eq!(run_source(unspecialised, &[1]), vec![0; 16]);
}

#[test]
fn a_number_assigned_to_a_name_is_a_tensor_as_in_compiled_triton() {
    // Compiled Triton turns a number assigned to a plain name into a tensor (its code
    // generator's `_sanitize_target_value`), so `t = -1; t % 7` truncates to -1 (seed 5583 of
    // the differential campaign, confirmed against compiled Triton on an H200); annotated
    // `tl.constexpr`, it stays a Python number and `%` is Python's (6).
    let src = "import triton.language as tl\n@triton.jit\ndef k(y_ptr):\n    o = tl.arange(0, 16)\n    t = -1\n    c: tl.constexpr = -1\n    tl.store(y_ptr + o, o * 0 + (t % 7) * 100 + c % 7)\n";
    assert_eq!(run_source(src, &[]), vec![-94; 16]);
}

#[test]
fn an_fp16_maximum_with_a_python_float_stays_fp16_as_in_triton_3_9() {
    // Triton 3.9 leaves a Python float a weak scalar in `tl.maximum`/`tl.minimum`, so an fp16
    // tensor's maximum is fp16; Triton 3.6 made the float an fp32 tensor first and computed in
    // fp32 (seed 507772 of the GPU campaign, against 3.6 on an H200; its TTIR shows `extf` and
    // an fp32 `maxnumf`). kwb follows 3.9, whose interpreter gives 2560 here: in fp16, 2049.0
    // rounds to 2048 before the product; in fp32 it would be 1.25 * 2049 = 2561.25, so 2561.
    let src = "import triton.language as tl\n@triton.jit\ndef k(y_ptr):\n    o = tl.arange(0, 16)\n    h = (o * 0 + 1).to(tl.float16)\n    m = tl.maximum(h, 1.25) * 2049.0\n    tl.store(y_ptr + o, m.to(tl.int32))\n";
    assert_eq!(run_source(src, &[]), vec![2560; 16]);
}

#[test]
fn tl_fma_rounds_once_as_compiled_triton_does() {
    // Compiled Triton's `tl.fma` is one fused multiply-add; Triton's interpreter multiplies
    // and adds with numpy, rounding twice. kwb rounds once: (1 + 2^-12)^2 - (1 + 2^-11) is
    // 2^-24 fused and 0 unfused (why the differential generator keeps fma operands narrow,
    // seed 356858; docs/differential.md).
    let src = "import triton.language as tl\n@triton.jit\ndef k(y_ptr):\n    o = tl.arange(0, 16)\n    a = (o * 0 + 1).to(tl.float32) + 0.000244140625\n    r = tl.fma(a, a, -1.00048828125)\n    tl.store(y_ptr + o, (r * 1073741824.0).to(tl.int32))\n";
    assert_eq!(run_source(src, &[]), vec![64; 16]);
}
