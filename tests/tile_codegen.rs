//! The tile language's CUDA writer: golden CUDA for hand-built IR kernels (the shipped
//! elementwise-add, GELU and softmax kernels as the checker lowers them, and a few that reach
//! the less common paths), each compiled by NVRTC for sm_90 with its PTX and ptxas report
//! checked for what matters: vector accesses where proven, no stack, shuffles in reductions.
//! `KWB_BLESS=1` rewrites the goldens. Skips (saying why) when NVRTC cannot be found.

mod support;

use kwb::tile::cuda;
use kwb::tile::ir::*;
use kwb::tile::span::Loc;
use std::path::PathBuf;

/// Builds a kernel statement by statement; nested bodies through `begin`/`end`.
struct B {
    k: Kernel,
    stack: Vec<Vec<Stmt>>,
    line: u32,
}

const I32: Elem = Elem::Scalar(Scalar::I32);
const F32: Elem = Elem::Scalar(Scalar::F32);
const BOOL: Elem = Elem::Scalar(Scalar::I1);

impl B {
    fn new(name: &str, file: &str, num_warps: u32) -> B {
        B {
            k: Kernel {
                name: name.into(),
                file: PathBuf::from(file),
                params: Vec::new(),
                vars: Vec::new(),
                body: Vec::new(),
                num_warps,
                sums: Default::default(),
                loc: Loc { line: 1, col: 1 },
                descriptors: Vec::new(),
                desc_loads: Vec::new(),
                block_misses: Vec::new(),
            },
            stack: vec![Vec::new()],
            line: 1,
        }
    }

    fn var(&mut self, name: Option<&str>, elem: Elem, shape: &[u32]) -> VarId {
        self.k.vars.push(Var {
            ty: Type {
                elem,
                shape: shape.to_vec(),
            },
            name: name.map(str::to_string),
        });
        VarId(self.k.vars.len() as u32 - 1)
    }

    fn param(&mut self, name: &str, elem: Elem, div16: bool) -> VarId {
        let v = self.var(Some(name), elem, &[]);
        self.k.params.push(Param {
            name: name.into(),
            var: v,
            divisibility: if div16 { 16 } else { 1 },
            non_negative: true,
        });
        v
    }

    /// Later statements come from tile line `l`.
    fn at(&mut self, l: u32) -> &mut B {
        self.line = l;
        self
    }

    fn push(&mut self, kind: StmtKind) {
        let loc = Loc {
            line: self.line,
            col: 5,
        };
        if let Some(top) = self.stack.last_mut() {
            top.push(Stmt { kind, loc });
        }
    }

    fn set(&mut self, name: Option<&str>, elem: Elem, shape: &[u32], op: Op) -> VarId {
        let dst = self.var(name, elem, shape);
        self.push(StmtKind::Assign { dst, op });
        dst
    }

    fn int(&mut self, i: i64) -> VarId {
        self.set(None, I32, &[], Op::Const(Const::Int(i)))
    }

    fn splat(&mut self, v: VarId, shape: &[u32]) -> VarId {
        let elem = self.k.vars[v.0 as usize].ty.elem;
        self.set(None, elem, shape, Op::Splat(v))
    }

    fn bin(&mut self, name: Option<&str>, op: BinOp, lhs: VarId, rhs: VarId) -> VarId {
        let ty = self.k.vars[lhs.0 as usize].ty.clone();
        let elem = match op {
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => BOOL,
            _ => ty.elem,
        };
        self.set(name, elem, &ty.shape, Op::Binary { op, lhs, rhs })
    }

    fn un(&mut self, name: Option<&str>, op: UnOp, src: VarId) -> VarId {
        let ty = self.k.vars[src.0 as usize].ty.clone();
        self.set(name, ty.elem, &ty.shape, Op::Unary { op, src })
    }

    fn ptr_add(&mut self, ptr: VarId, offset: VarId) -> VarId {
        let ty = self.k.vars[offset.0 as usize].ty.clone();
        let elem = self.k.vars[ptr.0 as usize].ty.elem;
        let p = if ty.is_tile() && !self.k.vars[ptr.0 as usize].ty.is_tile() {
            self.splat(ptr, &ty.shape)
        } else {
            ptr
        };
        self.set(None, elem, &ty.shape, Op::PtrAdd { ptr: p, offset })
    }

    fn load(&mut self, name: &str, ptr: VarId, mask: Option<VarId>, other: Option<VarId>) -> VarId {
        let ty = self.k.vars[ptr.0 as usize].ty.clone();
        let Elem::Ptr(s) = ty.elem else {
            panic!("load of a non-pointer")
        };
        self.set(
            Some(name),
            Elem::Scalar(s),
            &ty.shape,
            Op::Load { ptr, mask, other },
        )
    }

    fn store(&mut self, ptr: VarId, value: VarId, mask: Option<VarId>) {
        self.push(StmtKind::Store { ptr, value, mask });
    }

    fn begin(&mut self) {
        self.stack.push(Vec::new());
    }

    fn end(&mut self) -> Vec<Stmt> {
        self.stack.pop().unwrap_or_default()
    }

    fn done(mut self) -> Kernel {
        self.k.body = self.stack.pop().unwrap_or_default();
        self.k
    }
}

/// `offs = pid * BLOCK + tl.arange(0, BLOCK)` and `mask = offs < n`, as the checker lowers them.
fn blocked_offsets(b: &mut B, n: VarId, block: u32) -> (VarId, VarId) {
    let pid = b.set(Some("pid"), I32, &[], Op::ProgramId(0));
    let bl = b.int(i64::from(block));
    let base = b.bin(None, BinOp::Mul, pid, bl);
    let base_t = b.splat(base, &[block]);
    let ar = b.set(
        None,
        I32,
        &[block],
        Op::Arange {
            start: 0,
            end: i64::from(block),
        },
    );
    let offs = b.bin(Some("offs"), BinOp::Add, base_t, ar);
    let n_t = b.splat(n, &[block]);
    let mask = b.bin(Some("mask"), BinOp::Lt, offs, n_t);
    (offs, mask)
}

fn add_f16() -> Kernel {
    add_f16_n(true)
}

/// The fp16 add, with `n` divisible by 16 (every GPU size) or not (an odd size).
fn add_f16_n(n_div16: bool) -> Kernel {
    let mut b = B::new("add_kernel", "kernels/elementwise-add/v8.tile", 4);
    let h = Elem::Ptr(Scalar::F16);
    let (a_ptr, b_ptr, c_ptr) = (
        b.param("a_ptr", h, true),
        b.param("b_ptr", h, true),
        b.param("c_ptr", h, true),
    );
    let n = b.param("n", I32, n_div16);
    b.at(12);
    let (offs, mask) = blocked_offsets(&mut b, n, 4096);
    b.at(15);
    let pa = b.ptr_add(a_ptr, offs);
    let a = b.load("a", pa, Some(mask), None);
    b.at(16);
    let pb = b.ptr_add(b_ptr, offs);
    let bv = b.load("b", pb, Some(mask), None);
    b.at(17);
    let pc = b.ptr_add(c_ptr, offs);
    let sum = b.bin(None, BinOp::Add, a, bv);
    b.store(pc, sum, Some(mask));
    b.done()
}

fn gelu_f32() -> Kernel {
    let mut b = B::new("gelu_kernel", "kernels/gelu/v4.tile", 4);
    let f = Elem::Ptr(Scalar::F32);
    let (x_ptr, y_ptr) = (b.param("x_ptr", f, true), b.param("y_ptr", f, true));
    let n = b.param("n", I32, true);
    b.at(9);
    let (offs, mask) = blocked_offsets(&mut b, n, 2048);
    b.at(12);
    let px = b.ptr_add(x_ptr, offs);
    let zero = b.set(None, F32, &[], Op::Const(Const::Float(0.0)));
    let x = b.load("x", px, Some(mask), Some(zero));
    b.at(13);
    let c = |b: &mut B, v: f64| {
        let s = b.set(None, F32, &[], Op::Const(Const::Float(v)));
        b.splat(s, &[2048])
    };
    let k1 = c(&mut b, 0.044715);
    let t = b.bin(None, BinOp::Mul, k1, x);
    let t = b.bin(None, BinOp::Mul, t, x);
    let t = b.bin(None, BinOp::Mul, t, x);
    let t = b.bin(None, BinOp::Add, x, t);
    let k0 = c(&mut b, 0.79788456);
    let inner = b.bin(Some("inner"), BinOp::Mul, k0, t);
    b.at(14);
    let half = c(&mut b, 0.5);
    let hx = b.bin(None, BinOp::Mul, half, x);
    let th = b.un(None, UnOp::Tanh, inner);
    let one = c(&mut b, 1.0);
    let s = b.bin(None, BinOp::Add, one, th);
    let y = b.bin(Some("y"), BinOp::Mul, hx, s);
    b.at(15);
    let py = b.ptr_add(y_ptr, offs);
    b.store(py, y, Some(mask));
    b.done()
}

/// Softmax of one row held in registers (v5), or (persistent) v6's grid-stride loop.
fn softmax(block: u32, num_warps: u32, persistent: bool) -> Kernel {
    let (name, file) = if persistent {
        ("softmax_persistent", "kernels/softmax/v6.tile")
    } else {
        ("softmax_row", "kernels/softmax/v5.tile")
    };
    let mut b = B::new(name, file, num_warps);
    let f = Elem::Ptr(Scalar::F32);
    let (x_ptr, y_ptr) = (b.param("x_ptr", f, true), b.param("y_ptr", f, true));
    let n_rows = b.param("n_rows", I32, true);
    let n_cols = b.param("n_cols", I32, true);
    b.at(10);
    let start = b.set(
        Some(if persistent { "start" } else { "row" }),
        I32,
        &[],
        Op::ProgramId(0),
    );
    let mut row = start;
    let (mut step, mut var) = (start, start);
    if persistent {
        b.at(11);
        step = b.set(Some("step"), I32, &[], Op::NumPrograms(0));
        var = b.var(Some("row"), I32, &[]);
        row = var;
    }
    b.at(if persistent { 12 } else { 11 });
    let offs = b.set(
        Some("offs"),
        I32,
        &[block],
        Op::Arange {
            start: 0,
            end: i64::from(block),
        },
    );
    b.at(if persistent { 13 } else { 12 });
    let n_t = b.splat(n_cols, &[block]);
    let mask = b.bin(Some("mask"), BinOp::Lt, offs, n_t);
    if persistent {
        b.at(14);
        b.begin();
    }
    let l = if persistent { 15 } else { 13 };
    b.at(l);
    let base = b.bin(None, BinOp::Mul, row, n_cols);
    let base_t = b.splat(base, &[block]);
    let idx = b.bin(None, BinOp::Add, base_t, offs);
    let px = b.ptr_add(x_ptr, idx);
    let ninf = b.set(None, F32, &[], Op::Const(Const::Float(f64::NEG_INFINITY)));
    let x = b.load("x", px, Some(mask), Some(ninf));
    b.at(l + 1);
    let m = b.set(
        None,
        F32,
        &[],
        Op::Reduce {
            op: ReduceOp::Max,
            src: x,
            axis: Some(0),
        },
    );
    let m_t = b.splat(m, &[block]);
    let shifted = b.bin(Some("shifted"), BinOp::Sub, x, m_t);
    b.at(l + 2);
    let num = b.un(Some("num"), UnOp::Exp, shifted);
    b.at(l + 3);
    let den = b.set(
        Some("den"),
        F32,
        &[],
        Op::Reduce {
            op: ReduceOp::Sum,
            src: num,
            axis: Some(0),
        },
    );
    b.at(l + 4);
    let py = b.ptr_add(y_ptr, idx);
    let den_t = b.splat(den, &[block]);
    let y = b.bin(None, BinOp::Div, num, den_t);
    b.store(py, y, Some(mask));
    if persistent {
        let body = b.end();
        b.at(14);
        b.push(StmtKind::For {
            var,
            start,
            end: n_rows,
            step,
            body,
            num_stages: None,
        });
    }
    b.done()
}

/// A 2-D kernel: a `[R, C]` tile built by broadcasting, reduced along each axis (sum over
/// rows, argmax over columns), written back through a transpose, with an atomic and a loop.
fn two_d() -> Kernel {
    let (r, c) = (16u32, 64u32);
    let mut b = B::new("two_d", "tests/tile/ok_two_d.tile", 4);
    let f = Elem::Ptr(Scalar::F32);
    let x_ptr = b.param("x_ptr", f, true);
    let out_ptr = b.param("out_ptr", Elem::Ptr(Scalar::I32), true);
    let acc_ptr = b.param("acc_ptr", f, true);
    let stride = b.param("stride", I32, false);
    b.at(3);
    let rows = b.set(
        Some("rows"),
        I32,
        &[r],
        Op::Arange {
            start: 0,
            end: i64::from(r),
        },
    );
    let cols = b.set(
        Some("cols"),
        I32,
        &[c],
        Op::Arange {
            start: 0,
            end: i64::from(c),
        },
    );
    b.at(4);
    let rr = b.set(None, I32, &[r, 1], Op::ExpandDims { src: rows, axis: 1 });
    let st = b.splat(stride, &[r, 1]);
    let rs = b.bin(None, BinOp::Mul, rr, st);
    let rsb = b.set(None, I32, &[r, c], Op::Broadcast(rs));
    let cc = b.set(None, I32, &[1, c], Op::ExpandDims { src: cols, axis: 0 });
    let ccb = b.set(None, I32, &[r, c], Op::Broadcast(cc));
    let idx = b.bin(Some("idx"), BinOp::Add, rsb, ccb);
    b.at(5);
    let px = b.ptr_add(x_ptr, idx);
    let x = b.load("x", px, None, None);
    b.at(6);
    let colsum = b.set(
        Some("colsum"),
        F32,
        &[c],
        Op::Reduce {
            op: ReduceOp::Sum,
            src: x,
            axis: Some(0),
        },
    );
    let best = b.set(
        Some("best"),
        I32,
        &[r],
        Op::Reduce {
            op: ReduceOp::ArgMax,
            src: x,
            axis: Some(1),
        },
    );
    b.at(7);
    let pacc = b.ptr_add(acc_ptr, cols);
    let _old = b.set(
        Some("old"),
        F32,
        &[c],
        Op::Atomic {
            op: AtomicOp::Add,
            ptr: pacc,
            value: colsum,
            mask: None,
            cmp: None,
        },
    );
    b.at(8);
    let pout = b.ptr_add(out_ptr, rows);
    b.store(pout, best, None);
    b.at(9);
    let xt = b.set(
        Some("xt"),
        F32,
        &[c, r],
        Op::Permute {
            src: x,
            perm: vec![1, 0],
        },
    );
    let total = b.set(
        Some("total"),
        F32,
        &[],
        Op::Reduce {
            op: ReduceOp::Max,
            src: xt,
            axis: None,
        },
    );
    b.at(10);
    let i = b.var(Some("i"), I32, &[]);
    let zero = b.int(0);
    let three = b.int(3);
    let one = b.int(1);
    b.begin();
    b.at(11);
    let ps = b.ptr_add(acc_ptr, i);
    b.store(ps, total, None);
    let body = b.end();
    b.at(10);
    b.push(StmtKind::For {
        var: i,
        start: zero,
        end: three,
        step: one,
        body,
        num_stages: None,
    });
    b.done()
}

/// NVRTC's result for `cuda`, or None (the test is skipped, with the reason printed).
fn nvrtc_compile(cuda: &str) -> Option<kwb::compile::nvrtc::RawOutput> {
    let nvrtc = match kwb::compile::nvrtc::nvrtc() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("skipping the NVRTC half of this test: NVRTC not found ({e})");
            return None;
        }
    };
    let arch = kwb::compile::Arch::parse("sm_90").expect("sm_90");
    let opts = nvrtc.base_options(arch);
    let out = nvrtc.compile("tile.cu", cuda, &opts).expect("NVRTC runs");
    assert!(
        out.ok,
        "NVRTC rejected the generated code:\n{}\n{cuda}",
        out.log
    );
    Some(out)
}

/// Checks the golden file and compiles; returns (PTX, ptxas log).
fn golden_and_compile(name: &str, k: &Kernel) -> Option<(String, String)> {
    let cuda = cuda::write(std::slice::from_ref(k));
    let path = support::repo()
        .join("tests/tile")
        .join(format!("ok_{name}.cu"));
    support::assert_golden(&path, &cuda);
    nvrtc_compile(&cuda).map(|o| (o.ptx, o.log))
}

fn assert_no_stack(log: &str, what: &str) {
    assert!(
        log.contains("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
        "{what}: ptxas reports a stack frame or spills:\n{log}"
    );
}

#[test]
fn fp16_add_uses_128_bit_loads_and_stores() {
    let Some((ptx, log)) = golden_and_compile("add_f16", &add_f16()) else {
        return;
    };
    assert_eq!(ptx.matches("ld.global.v4.b32").count(), 8, "{ptx}");
    assert_eq!(ptx.matches("st.global.v4.b32").count(), 4, "{ptx}");
    assert!(!ptx.contains("ld.global.u16") && !ptx.contains("ld.global.b16"));
    // A streaming kernel asks for 8 blocks of 128 threads per SM (64 registers a thread), so
    // ptxas issues all eight loads before the first add instead of fitting 32 registers.
    assert!(ptx.contains(".minnctapersm 8"), "{ptx}");
    assert_no_stack(&log, "add");
}

/// At an odd `n` the masks are not constant over a vector: the writer splits the kernel
/// (`tail.rs`). The in-bounds threads keep the 128-bit accesses, the tail's threads walk their
/// elements in a loop that stays rolled, and nothing goes to local memory. Without the split
/// the kernel was 96 predicated scalar accesses per thread and 100 registers.
#[test]
fn an_odd_size_splits_the_add_into_vectors_and_a_scalar_tail() {
    let Some((ptx, log)) = golden_and_compile("add_f16_odd", &add_f16_n(false)) else {
        return;
    };
    assert_eq!(ptx.matches("ld.global.v4.b32").count(), 8, "{ptx}");
    assert_eq!(ptx.matches("st.global.v4.b32").count(), 4, "{ptx}");
    // The tail loop: one predicated 2-byte load per input and one store, not unrolled.
    assert_eq!(ptx.matches("ld.global.b16").count(), 2, "{ptx}");
    assert_eq!(ptx.matches("st.global.b16").count(), 1, "{ptx}");
    assert_no_stack(&log, "add at an odd size");
    let regs: u32 = log
        .split("Used ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no register count in the ptxas log:\n{log}"));
    // The streaming kernels' register budget (`streaming.rs`); the old form took 100.
    assert!(regs <= 64, "{regs} registers:\n{log}");
}

#[test]
fn gelu_uses_float4_and_the_library_tanh() {
    let Some((ptx, log)) = golden_and_compile("gelu_f32", &gelu_f32()) else {
        return;
    };
    assert_eq!(ptx.matches("ld.global.v4.b32").count(), 4, "{ptx}");
    assert_eq!(ptx.matches("st.global.v4.b32").count(), 4, "{ptx}");
    assert!(
        !ptx.contains("tanh.approx"),
        "tanhf should come from the device library"
    );
    assert_no_stack(&log, "gelu");
}

#[test]
fn softmax_rows_are_vectorised_and_reduced_with_shuffles() {
    for (block, warps) in [(1024, 4), (4096, 8), (32768, 16)] {
        let name = format!("softmax_{block}");
        let Some((ptx, log)) = golden_and_compile(&name, &softmax(block, warps, false)) else {
            return;
        };
        let vectors = u64::from(block) / u64::from(warps * 32 * 4);
        assert_eq!(
            ptx.matches("ld.global.v4.b32").count() as u64,
            vectors,
            "{name}"
        );
        assert_eq!(
            ptx.matches("st.global.v4.b32").count() as u64,
            vectors,
            "{name}"
        );
        assert!(ptx.contains("shfl.sync.bfly"), "{name}: no warp shuffles");
        assert!(
            ptx.contains("ex2.approx.f32"),
            "{name}: exp is not ex2.approx"
        );
        assert!(ptx.contains("div.full.f32"), "{name}: / is not div.full");
        assert_no_stack(&log, &name);
    }
}

#[test]
fn persistent_softmax_loops_over_rows_in_registers() {
    let Some((ptx, log)) = golden_and_compile("softmax_persistent", &softmax(4096, 8, true)) else {
        return;
    };
    assert_eq!(ptx.matches("ld.global.v4.b32").count(), 4);
    assert!(ptx.contains("bar.sync"));
    assert_no_stack(&log, "softmax v6");
}

#[test]
fn two_d_tiles_broadcast_reduce_along_axes_and_permute() {
    let Some((ptx, _log)) = golden_and_compile("two_d", &two_d()) else {
        return;
    };
    assert!(ptx.contains("atom.global.add.f32") || ptx.contains("red.global.add.f32"));
    assert!(ptx.contains("shfl.sync.bfly"));
}

#[test]
fn unaligned_sizes_fall_back_to_scalar_accesses() {
    // n_cols not divisible by 16: rows are not provably aligned, so no vectors.
    let mut k = softmax(1024, 4, false);
    for p in &mut k.params {
        p.divisibility = if p.name.ends_with("ptr") { 16 } else { 1 };
    }
    let cuda = cuda::write(&[k]);
    let Some(out) = nvrtc_compile(&cuda) else {
        return;
    };
    assert!(!out.ptx.contains("ld.global.v4"), "{cuda}");
    assert!(
        out.ptx.contains("@%p"),
        "the masked loads must be predicated"
    );
}

#[test]
fn lines_of_the_tile_source_reach_the_ptx() {
    let cuda = cuda::write(&[add_f16()]);
    assert!(cuda.contains("#line 15 \"kernels/elementwise-add/v8.tile\""));
    let Some(out) = nvrtc_compile(&cuda) else {
        return;
    };
    assert!(out.ptx.contains("v8.tile"), "no .file for the tile source");
}

/// Runs the 2-D kernel's generated PTX in kwb's PTX emulator: broadcasts, both axis
/// reductions, the permute through shared memory, atomics and the loop give the right values.
#[test]
fn two_d_kernel_computes_the_right_values_in_the_emulator() {
    let cuda = cuda::write(&[two_d()]);
    let Some(out) = nvrtc_compile(&cuda) else {
        return;
    };
    let module = kwb::emu::Module::parse(&out.ptx).expect("the emulator reads the PTX");
    let (r, c) = (16usize, 64usize);
    let x: Vec<f32> = (0..r * c)
        .map(|i| ((i / c * 7 + i % c * 13) % 17) as f32 - 8.0)
        .collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let mut mem = kwb::emu::Memory::new();
    let init = kwb::emu::InitState::Initialized;
    let xa = mem.alloc("x", &bytes(&x), init);
    let oa = mem.alloc("out", &vec![0u8; r * 4], init);
    let aa = mem.alloc("acc", &vec![0u8; c * 4], init);
    let launch = kwb::emu::Launch {
        entry: "two_d",
        grid: [1, 1, 1],
        block: [128, 1, 1],
        dynamic_shared: 0,
        params: &kwb::emu::ParamValue::words(&[xa, oa, aa, c as u64]),
    };
    let report = kwb::emu::run(&module, &launch, &mut mem, &Default::default()).expect("runs");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let f32s = |b: Vec<u8>| -> Vec<f32> {
        b.chunks(4)
            .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    };
    let acc = f32s(mem.read(aa, c * 4));
    let best: Vec<i32> = mem
        .read(oa, r * 4)
        .chunks(4)
        .map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let total = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for (j, got) in acc.iter().enumerate() {
        let want = if j < 3 {
            total
        } else {
            (0..r).map(|i| x[i * c + j]).sum()
        };
        assert_eq!(*got, want, "acc[{j}]");
    }
    for (i, got) in best.iter().enumerate() {
        let row = &x[i * c..(i + 1) * c];
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let want = row.iter().position(|&v| v == m).unwrap_or(0) as i32;
        assert_eq!(*got, want, "argmax of row {i}");
    }
}

/// The shipped tile kernels, compiled from source by `kwb::tile::compile` as a workspace
/// specialises them: PTX for (file, kernel, args, constexprs, warps).
fn from_source(
    file: &str,
    name: &str,
    args: Vec<kwb::tile::ArgKind>,
    constexprs: &[(&str, i64)],
    num_warps: u32,
) -> Option<(String, String)> {
    use kwb::tile::{ConstValue, KernelRequest};
    let path = support::repo().join(file);
    let source = std::fs::read_to_string(&path).expect("kernel source");
    let req = KernelRequest {
        name: name.into(),
        args,
        constexprs: constexprs
            .iter()
            .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
            .collect(),
        num_warps,
        sums: Default::default(),
    };
    let compiled = kwb::tile::compile(&path, &source, &[req]);
    assert!(
        !compiled.cuda.is_empty(),
        "{file}: {}",
        kwb::diag::render_all(&compiled.diagnostics)
    );
    nvrtc_compile(&compiled.cuda).map(|o| (o.ptx, o.log))
}

fn ptr(d: kwb::workspace::DType) -> kwb::tile::ArgKind {
    kwb::tile::ArgKind::Pointer(d)
}

fn int16() -> kwb::tile::ArgKind {
    kwb::tile::ArgKind::Int {
        fits_i32: true,
        divisibility: 16,
        non_negative: true,
        one: false,
    }
}

/// (file, kernel, arguments, constexpr, its value, warps, vector loads expected).
type Shipped = (
    &'static str,
    &'static str,
    Vec<kwb::tile::ArgKind>,
    &'static str,
    i64,
    u32,
    usize,
);

#[test]
fn shipped_tile_kernels_vectorise_from_source() {
    use kwb::workspace::DType::{F16, F32};
    let cases: Vec<Shipped> = vec![
        (
            "kernels/elementwise-add/v8.tile",
            "add_kernel",
            vec![ptr(F16), ptr(F16), ptr(F16), int16()],
            "BLOCK",
            4096,
            4,
            8,
        ),
        (
            "kernels/gelu/v4.tile",
            "gelu_kernel",
            vec![ptr(F32), ptr(F32), int16()],
            "BLOCK",
            2048,
            4,
            4,
        ),
        (
            "kernels/softmax/v5.tile",
            "softmax_row",
            vec![ptr(F32), ptr(F32), int16(), int16()],
            "BLOCK",
            1024,
            4,
            2,
        ),
        (
            "kernels/softmax/v5.tile",
            "softmax_row",
            vec![ptr(F32), ptr(F32), int16(), int16()],
            "BLOCK",
            4096,
            8,
            4,
        ),
        (
            "kernels/softmax/v5.tile",
            "softmax_row",
            vec![ptr(F32), ptr(F32), int16(), int16()],
            "BLOCK",
            32768,
            16,
            16,
        ),
        (
            "kernels/softmax/v6.tile",
            "softmax_persistent",
            vec![ptr(F32), ptr(F32), int16(), int16()],
            "BLOCK",
            4096,
            8,
            4,
        ),
        (
            "kernels/softmax/fused_softmax.py",
            "fused_softmax",
            vec![ptr(F32), ptr(F32), int16(), int16(), int16()],
            "BLOCK_SIZE",
            4096,
            8,
            4,
        ),
    ];
    for (file, name, args, c, block, warps, loads) in cases {
        let Some((ptx, log)) = from_source(file, name, args, &[(c, block)], warps) else {
            return;
        };
        let what = format!("{file} at {c} = {block}, {warps} warps");
        assert_eq!(ptx.matches("ld.global.v4.b32").count(), loads, "{what}");
        assert_eq!(
            ptx.matches("st.global.v4.b32").count(),
            loads / if name == "add_kernel" { 2 } else { 1 },
            "{what}"
        );
        assert_no_stack(&log, &what);
    }
}

#[test]
fn a_two_d_tile_source_compiles_to_its_golden() {
    use kwb::tile::{ConstValue, KernelRequest};
    use kwb::workspace::DType::{F32, I32 as DI32};
    let path = PathBuf::from("tests/tile/ok_rows.tile");
    let source = std::fs::read_to_string(support::repo().join(&path)).expect("source");
    let req = KernelRequest {
        name: "rows_kernel".into(),
        args: vec![ptr(F32), ptr(F32), ptr(DI32), ptr(F32), int16()],
        constexprs: vec![
            ("R".into(), ConstValue::Int(16)),
            ("C".into(), ConstValue::Int(64)),
        ],
        num_warps: 4,
        sums: Default::default(),
    };
    let compiled = kwb::tile::compile(&path, &source, &[req]);
    assert!(
        !compiled.cuda.is_empty(),
        "{}",
        kwb::diag::render_all(&compiled.diagnostics)
    );
    support::assert_golden(
        &support::repo().join("tests/tile/ok_rows.cu"),
        &compiled.cuda,
    );
    let Some(out) = nvrtc_compile(&compiled.cuda) else {
        return;
    };
    assert!(
        out.ptx.contains("ld.global.v4.b32"),
        "rows of 64 fp32 are vectorised"
    );
    assert!(out.ptx.contains("atom.global.add.f32") || out.ptx.contains("red.global.add.f32"));

    // Two programs of 16 rows over a 32 x 48 matrix (the last 16 columns masked off).
    let module = kwb::emu::Module::parse(&out.ptx).expect("the emulator reads the PTX");
    let (rows, n) = (32usize, 48usize);
    let x: Vec<f32> = (0..rows * n)
        .map(|i| ((i / n * 5 + i % n * 11) % 13) as f32 - 6.0)
        .collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let mut mem = kwb::emu::Memory::new();
    let init = kwb::emu::InitState::Initialized;
    let xa = mem.alloc("x", &bytes(&x), init);
    let ya = mem.alloc("y", &vec![0u8; rows * n * 4], init);
    let ia = mem.alloc("idx", &vec![0u8; rows * 4], init);
    let ca = mem.alloc("colsum", &vec![0u8; n * 4], init);
    let launch = kwb::emu::Launch {
        entry: "rows_kernel",
        grid: [2, 1, 1],
        block: [128, 1, 1],
        dynamic_shared: 0,
        params: &kwb::emu::ParamValue::words(&[xa, ya, ia, ca, n as u64]),
    };
    let report = kwb::emu::run(&module, &launch, &mut mem, &Default::default()).expect("runs");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let words =
        |b: Vec<u8>| -> Vec<[u8; 4]> { b.chunks(4).map(|w| [w[0], w[1], w[2], w[3]]).collect() };
    let y: Vec<f32> = words(mem.read(ya, rows * n * 4))
        .into_iter()
        .map(f32::from_le_bytes)
        .collect();
    let idx: Vec<i32> = words(mem.read(ia, rows * 4))
        .into_iter()
        .map(i32::from_le_bytes)
        .collect();
    let colsum: Vec<f32> = words(mem.read(ca, n * 4))
        .into_iter()
        .map(f32::from_le_bytes)
        .collect();
    for r in 0..rows {
        let row = &x[r * n..(r + 1) * n];
        // Masked-off columns load 0.0, which takes part in the max and argmax.
        let m = row.iter().copied().fold(0.0f32, f32::max);
        for j in 0..n {
            assert_eq!(y[r * n + j], row[j] - m, "y[{r}][{j}]");
        }
        let want = if row.iter().all(|&v| v < 0.0) {
            n as i32
        } else {
            row.iter().position(|&v| v == m).unwrap_or(0) as i32
        };
        assert_eq!(idx[r], want, "argmax of row {r}");
    }
    for j in 0..n {
        let want: f32 = (0..rows).map(|r| x[r * n + j]).sum();
        assert_eq!(colsum[j], want, "colsum[{j}]");
    }
}
