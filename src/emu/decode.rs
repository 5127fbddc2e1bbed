//! Decoding one PTX instruction's opcode text (`ld.global.nc.v4.f32`, `setp.ge.s32`,
//! `cvt.rn.f32.f64`…) into an [`Op`], its type and its modifiers.

use super::inst::*;
use super::{decode_sync, decode_tma};

/// The opcode's base, types and modifiers; `Err` names what is not supported.
pub fn opcode(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut parts = text.split('.');
    let base = parts.next().unwrap_or_default();
    match base {
        "mma" => return mma(text),
        "ldmatrix" => return ldmatrix(text),
        "cp" if text.starts_with("cp.async.bulk") => return decode_tma::bulk_tensor(text),
        "cp" if text.starts_with("cp.async.mbarrier")
            || text.starts_with("cp.async.wait_")
            || text.starts_with("cp.async.commit_") =>
        {
            return decode_sync::cp_async_sync(text)
        }
        "bar" | "barrier" if text.split('.').any(|p| p == "red") => {
            return decode_sync::barrier_red(text)
        }
        "cp" => return cp_async(text),
        "mbarrier" => return decode_tma::mbarrier(text),
        "prefetch" if text.ends_with(".tensormap") => return decode_tma::prefetch_tensormap(text),
        "fence" if text.starts_with("fence.mbarrier_init") => {
            return decode_tma::mbarrier_init_fence(text)
        }
        "wgmma" => return wgmma(text),
        "fence" if text.starts_with("fence.proxy.async") => return proxy_fence(text),
        // Programmatic dependent launch (`tl.extra.cuda.gdc_wait` / `gdc_launch_dependents`):
        // the emulator runs one grid at a time, so there is never a grid to wait for or to
        // let start early.
        "griddepcontrol" => {
            return match text {
                "griddepcontrol.wait" | "griddepcontrol.launch_dependents" => Ok((
                    Op::Nop,
                    Ty::B32,
                    Mods {
                        vec: 1,
                        ..Mods::default()
                    },
                )),
                _ => Err(format!("`{text}`")),
            }
        }
        _ => {}
    }
    let op = match base {
        "mov" => Op::Mov,
        "add" => Op::Add,
        "sub" => Op::Sub,
        "mul" | "mul24" => Op::Mul,
        "mad" | "mad24" => Op::Mad,
        "fma" => Op::Fma,
        "div" => Op::Div,
        "rem" => Op::Rem,
        "neg" => Op::Neg,
        "abs" => Op::Abs,
        "min" => Op::Min,
        "max" => Op::Max,
        "and" => Op::And,
        "or" => Op::Or,
        "xor" => Op::Xor,
        "not" => Op::Not,
        "cnot" => Op::Cnot,
        "shl" => Op::Shl,
        "shr" => Op::Shr,
        "setp" => Op::Setp,
        "selp" => Op::Selp,
        "cvt" => Op::Cvt,
        "cvta" => Op::Cvta,
        "ld" => Op::Ld,
        "ldu" => Op::Ldu,
        "st" => Op::St,
        "bra" => Op::Bra,
        "ret" => Op::Ret,
        "exit" => Op::Exit,
        "bar" | "barrier" => Op::Bar,
        "membar" | "fence" => Op::Membar,
        "shfl" => Op::Shfl,
        "vote" => Op::Vote,
        "redux" => Op::Redux,
        "activemask" => Op::Activemask,
        "atom" => Op::Atom,
        "red" => Op::Red,
        "rcp" => Op::Rcp,
        "sqrt" => Op::Sqrt,
        "rsqrt" => Op::Rsqrt,
        "ex2" => Op::Ex2,
        "lg2" => Op::Lg2,
        "sin" => Op::Sin,
        "cos" => Op::Cos,
        "tanh" => Op::Tanh,
        "popc" => Op::Popc,
        "clz" => Op::Clz,
        "brev" => Op::Brev,
        "bfe" => Op::Bfe,
        "bfi" => Op::Bfi,
        "prmt" => Op::Prmt,
        "dp4a" => Op::Dp4a,
        "lop3" => Op::Lop3,
        "shf" => Op::Shf,
        "copysign" => Op::Copysign,
        "testp" => Op::Testp,
        "prefetch" | "prefetchu" | "discard" | "applypriority" | "createpolicy" | "pmevent"
        | "nanosleep" => Op::Nop,
        _ => return Err(format!("`{base}`")),
    };
    let mut mods = Mods {
        vec: 1,
        ..Mods::default()
    };
    let mut types: Vec<Ty> = Vec::new();
    for p in parts {
        if let Some(t) = Ty::parse(p) {
            types.push(t);
            continue;
        }
        match p {
            "ftz" => mods.ftz = true,
            "sat" | "satfinite" => mods.sat = true,
            "approx" | "full" => mods.approx = true,
            "lo" if op == Op::Setp => mods.cmp = Some(Cmp::Lo),
            "hi" if op == Op::Setp => mods.cmp = Some(Cmp::Hi),
            "ls" => mods.cmp = Some(Cmp::Ls),
            "hs" => mods.cmp = Some(Cmp::Hs),
            "lo" => mods.half = Half::Lo,
            "hi" => mods.half = Half::Hi,
            "wide" => mods.half = Half::Wide,
            "rn" => mods.round = Round::Rn,
            "rz" => mods.round = Round::Rz,
            "rm" => mods.round = Round::Rm,
            "rp" => mods.round = Round::Rp,
            "rni" => mods.round = Round::Rni,
            "rzi" => mods.round = Round::Rzi,
            "rmi" => mods.round = Round::Rmi,
            "rpi" => mods.round = Round::Rpi,
            "global" => mods.space = Some(Space::Global),
            "shared" => mods.space = Some(Space::Shared),
            "local" => mods.space = Some(Space::Local),
            "param" => mods.space = Some(Space::Param),
            "const" => mods.space = Some(Space::Const),
            "to" => mods.to = true,
            "v2" => mods.vec = 2,
            "v4" => mods.vec = 4,
            "v8" => mods.vec = 8,
            "up" if op == Op::Shfl => mods.sub = SHFL_UP,
            "down" if op == Op::Shfl => mods.sub = SHFL_DOWN,
            "bfly" if op == Op::Shfl => mods.sub = SHFL_BFLY,
            "idx" if op == Op::Shfl => mods.sub = SHFL_IDX,
            "all" if op == Op::Vote => mods.sub = VOTE_ALL,
            "any" if op == Op::Vote => mods.sub = VOTE_ANY,
            "uni" if op == Op::Vote => mods.sub = VOTE_UNI,
            "ballot" if op == Op::Vote => mods.sub = VOTE_BALLOT,
            "l" if op == Op::Shf => mods.sub = 0,
            "r" if op == Op::Shf => mods.sub = 1,
            "clamp" => mods.clamp = true,
            "wrap" => mods.clamp = false,
            "add" => mods.sub = ATOM_ADD,
            "min" => mods.sub = ATOM_MIN,
            "max" => mods.sub = ATOM_MAX,
            "exch" => mods.sub = ATOM_EXCH,
            "cas" => mods.sub = ATOM_CAS,
            "and" if op != Op::Setp => mods.sub = ATOM_AND,
            "or" if op != Op::Setp => mods.sub = ATOM_OR,
            "xor" if op != Op::Setp => mods.sub = ATOM_XOR,
            "inc" => mods.sub = ATOM_INC,
            "dec" => mods.sub = ATOM_DEC,
            "and" => mods.bool_op = Some(0),
            "or" => mods.bool_op = Some(1),
            "xor" => mods.bool_op = Some(2),
            "eq" => mods.cmp = Some(Cmp::Eq),
            "ne" => mods.cmp = Some(Cmp::Ne),
            "lt" => mods.cmp = Some(Cmp::Lt),
            "le" => mods.cmp = Some(Cmp::Le),
            "gt" => mods.cmp = Some(Cmp::Gt),
            "ge" => mods.cmp = Some(Cmp::Ge),
            "equ" => mods.cmp = Some(Cmp::Equ),
            "neu" => mods.cmp = Some(Cmp::Neu),
            "ltu" => mods.cmp = Some(Cmp::Ltu),
            "leu" => mods.cmp = Some(Cmp::Leu),
            "gtu" => mods.cmp = Some(Cmp::Gtu),
            "geu" => mods.cmp = Some(Cmp::Geu),
            "num" => mods.cmp = Some(Cmp::Num),
            "nan" => mods.cmp = Some(Cmp::Nan),
            // Hints and scopes that change nothing a single emulated CTA can observe.
            "sync" | "aligned" | "uni" | "nc" | "ca" | "cg" | "cs" | "lu" | "cv" | "wb" | "wt"
            | "volatile" | "relaxed" | "acquire" | "release" | "acq_rel" | "sc" | "cta" | "gpu"
            | "sys" | "cluster" | "weak" | "L1::evict_last" | "L1::evict_first"
            | "L1::no_allocate" | "L2::evict_last" | "L2::evict_first" | "L2::128B"
            | "L2::256B" | "L2::64B" | "L1::evict_normal" | "L2::cache_hint" | "noftz"
            | "arrive" | "red" | "popc" | "b" | "shiftamt" | "f4e" | "b4e" | "rc8" | "ecl"
            | "ecr" | "rc16" | "uni_aligned" | "collective" | "proxy" | "async" | "alias" => {}
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    let ty = match (op, types.as_slice()) {
        (Op::Cvt, [d, s]) => {
            mods.src_ty = Some(*s);
            *d
        }
        (Op::Dp4a, [a @ (Ty::U32 | Ty::S32), b @ (Ty::U32 | Ty::S32)]) => {
            mods.src_ty = Some(*a);
            *b
        }
        (Op::Dp4a, _) => return Err(format!("`{text}` (dp4a takes .u32 or .s32 twice)")),
        (Op::Bar | Op::Membar | Op::Ret | Op::Exit | Op::Bra | Op::Nop, []) => Ty::B32,
        (Op::Activemask, [t]) => *t,
        (_, [t]) => *t,
        (Op::Bar | Op::Membar, _) => Ty::B32,
        (_, []) => return Err(format!("`{text}` (no type)")),
        (_, [.., t]) => *t,
    };
    Ok((op, ty, mods))
}

/// `mma.sync.aligned.m16n8k16.row.col.DTYPE.ATYPE.BTYPE.CTYPE`, with f16 or bf16 inputs and f16
/// or f32 accumulators; any other shape, layout or type is named as unsupported.
fn mma(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut types = Vec::new();
    let (mut row, mut col, mut shape) = (false, false, None);
    for p in text.split('.').skip(1) {
        match p {
            "sync" | "aligned" => {}
            "row" if !row && !col => row = true,
            "col" if row => col = true,
            "satfinite" => {}
            s if s.starts_with('m') && s.contains('n') && s.contains('k') => shape = Some(s),
            t => match Ty::parse(t) {
                Some(ty) => types.push(ty),
                None => return Err(format!("`{text}` (modifier `.{t}`)")),
            },
        }
    }
    if shape != Some("m16n8k16") {
        let s = shape.unwrap_or("none");
        return Err(format!(
            "`{text}` (shape `.{s}`; the emulator runs mma of shape .m16n8k16)"
        ));
    }
    if !(row && col) {
        return Err(format!("`{text}` (layouts other than `.row.col`)"));
    }
    let [d, a, b, c] = types[..] else {
        return Err(format!("`{text}` (expected four types: D, A, B, C)"));
    };
    let acc = |t: Ty| matches!(t, Ty::F32 | Ty::F16);
    if a != b || !matches!(a, Ty::F16 | Ty::Bf16) || !acc(d) || !acc(c) {
        return Err(format!(
            "`{text}` (types; the emulator runs f16 or bf16 inputs with f16 or f32 accumulators)"
        ));
    }
    if a == Ty::Bf16 && (d != Ty::F32 || c != Ty::F32) {
        return Err(format!("`{text}` (bf16 inputs need f32 accumulators)"));
    }
    let mods = Mods {
        vec: 1,
        src_ty: Some(a),
        c_ty: Some(c),
        ..Mods::default()
    };
    Ok((Op::Mma, d, mods))
}

/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.ATYPE.BTYPE` with f16 or bf16 inputs (both the
/// same) and N a multiple of 8 up to 256, kept in `Mods::vec` as N / 8; and `wgmma.fence`,
/// `wgmma.commit_group`, `wgmma.wait_group`, which change nothing here: the emulator performs
/// each `mma_async` when it is issued. Other shapes, types, sparse forms are named unsupported.
fn wgmma(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut parts = text.split('.').skip(1);
    let what = parts.next().unwrap_or_default();
    let (mut shape, mut types) = (None, Vec::new());
    for p in parts {
        match p {
            "sync" | "aligned" => {}
            s if what == "mma_async" && s.starts_with('m') && s.contains('n') => shape = Some(s),
            t => match Ty::parse(t) {
                Some(ty) if what == "mma_async" => types.push((t, ty)),
                _ => return Err(format!("`{text}` (modifier `.{t}`)")),
            },
        }
    }
    let mut mods = Mods {
        vec: 1,
        ..Mods::default()
    };
    match what {
        "fence" | "commit_group" | "wait_group" => return Ok((Op::Nop, Ty::B32, mods)),
        "mma_async" => {}
        _ => return Err(format!("`{text}`")),
    }
    let n = shape
        .and_then(|s| {
            s.strip_prefix("m64n")?
                .strip_suffix("k16")?
                .parse::<u32>()
                .ok()
        })
        .filter(|n| n.is_multiple_of(8) && (8..=256).contains(n));
    let Some(n) = n else {
        let s = shape.unwrap_or("none");
        return Err(format!(
            "`{text}` (shape `.{s}`; the emulator runs wgmma of shape .m64nNk16, N a multiple of 8 up to 256)"
        ));
    };
    let [(d_name, d), (_, a), (_, b)] = types[..] else {
        return Err(format!("`{text}` (expected three types: D, A, B)"));
    };
    if d != Ty::F32 {
        return Err(format!(
            "`{text}` (D type `.{d_name}`; the emulator runs wgmma with .f32 accumulators)"
        ));
    }
    if a != b || !matches!(a, Ty::F16 | Ty::Bf16) {
        return Err(format!(
            "`{text}` (input types; the emulator runs wgmma with .f16 or .bf16 inputs)"
        ));
    }
    mods.vec = (n / 8) as u8;
    mods.src_ty = Some(a);
    Ok((Op::Wgmma, d, mods))
}

/// `fence.proxy.async` with no state space, `.shared::cta`, `.shared::cluster` or `.global`:
/// orders generic-proxy writes before async-proxy reads (`wgmma`, bulk copies), which the
/// emulator performs at issue in program order, so it is a fence like any other.
fn proxy_fence(text: &str) -> Result<(Op, Ty, Mods), String> {
    match text.strip_prefix("fence.proxy.async") {
        Some("" | ".shared::cta" | ".shared::cluster" | ".global") => Ok((
            Op::Membar,
            Ty::B32,
            Mods {
                vec: 1,
                ..Mods::default()
            },
        )),
        _ => Err(format!(
            "`{text}` (state space; `.shared::cta`, `.shared::cluster` or `.global`)"
        )),
    }
}

/// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans][.shared[::cta]].b16`.
fn ldmatrix(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut mods = Mods {
        vec: 0,
        ..Mods::default()
    };
    let mut ty = None;
    for p in text.split('.').skip(1) {
        match p {
            "sync" | "aligned" | "m8n8" => {}
            "x1" => mods.vec = 1,
            "x2" => mods.vec = 2,
            "x4" => mods.vec = 4,
            "trans" => mods.trans = true,
            "shared" | "shared::cta" => mods.space = Some(Space::Shared),
            "b16" => ty = Some(Ty::B16),
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    if mods.vec == 0 {
        return Err(format!("`{text}` (no `.x1`, `.x2` or `.x4`)"));
    }
    let ty = ty.ok_or_else(|| format!("`{text}` (no `.b16`)"))?;
    Ok((Op::Ldmatrix, ty, mods))
}

/// `cp.async.{ca,cg}.shared[::cta].global[.L2::…]`, a copy. The group and mbarrier forms are
/// decoded in [`decode_sync`], the bulk tensor forms in [`decode_tma`].
fn cp_async(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut parts = text.split('.').skip(1);
    if parts.next() != Some("async") {
        return Err(format!("`{text}`"));
    }
    let mut mods = Mods {
        vec: 1,
        ..Mods::default()
    };
    let (mut dst_shared, mut src_global) = (false, false);
    for p in parts {
        match p {
            "ca" | "cg" => {}
            "shared" | "shared::cta" if !dst_shared => dst_shared = true,
            "global" if dst_shared => src_global = true,
            p if p.starts_with("L2::") => {}
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    if !(dst_shared && src_global) {
        return Err(format!("`{text}` (only `.shared.global` copies)"));
    }
    mods.space = Some(Space::Shared);
    Ok((Op::CpAsync, Ty::B8, mods))
}
