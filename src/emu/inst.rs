//! The emulator's compact instruction form: PTX text is decoded once per module into these,
//! with registers as indices, labels as instruction indices, types and modifiers as enums, so
//! execution does no string work.

/// A scalar type, from the PTX type suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    F32,
    F64,
    Pred,
}

impl Ty {
    pub fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "f16x2" => Ty::F16x2,
            "bf16" => Ty::Bf16,
            "bf16x2" => Ty::Bf16x2,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "pred" => Ty::Pred,
            _ => return None,
        })
    }

    /// Size in bytes (a predicate counts as one).
    pub fn bytes(self) -> u32 {
        match self {
            Ty::B8 | Ty::U8 | Ty::S8 | Ty::Pred => 1,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::Bf16 => 2,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 | Ty::F16x2 | Ty::Bf16x2 => 4,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 8,
        }
    }

    pub fn bits(self) -> u32 {
        self.bytes() * 8
    }

    pub fn signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub fn float(self) -> bool {
        matches!(
            self,
            Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2 | Ty::F32 | Ty::F64
        )
    }
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    Clock,
    Clock64,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    SmId,
    GlobalTimer,
    DynSmemSize,
}

/// Where an address operand's base comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    Reg(u32),
    /// A module or entry symbol (shared/global/const variable): its address.
    Sym(u32),
    /// A kernel parameter, by index.
    Param(u32),
    /// A plain number.
    Abs,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Reg(u32),
    /// Raw bits of an immediate (floats as their bits in the instruction's type).
    Imm(u64),
    /// A float written in decimal, converted once the instruction's type is known.
    FImm(f64),
    Vec(Vec<Operand>),
    Addr(Base, i64),
    Special(Sreg),
    /// A branch target: an instruction index.
    Label(u32),
    /// A symbol used as a value (`mov.u64 %rd1, smem;`).
    Sym(u32),
    /// `_` in a vector (a discarded element).
    Sink,
    /// `!%p`, a source predicate read negated.
    NotPred(u32),
}

/// State spaces of loads, stores and atomics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Generic,
    Global,
    Shared,
    Local,
    Param,
    Const,
}

/// Comparison operators of `setp` and `set`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// Rounding modes of `cvt`, `fma`, `add`…
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Round {
    #[default]
    None,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Mov,
    Add,
    Sub,
    Mul,
    Mad,
    Fma,
    Div,
    Rem,
    Neg,
    Abs,
    Min,
    Max,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Setp,
    Selp,
    Cvt,
    Cvta,
    Ld,
    Ldu,
    St,
    Bra,
    Ret,
    Exit,
    Bar,
    BarWarp,
    Membar,
    Shfl,
    Vote,
    Redux,
    Activemask,
    Atom,
    Red,
    Rcp,
    Sqrt,
    Rsqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
    Popc,
    Clz,
    Brev,
    Bfe,
    Bfi,
    Prmt,
    /// `dp4a.atype.btype d, a, b, c`: `c` plus the four byte products of `a` and `b` (a's
    /// type in `Mods::src_ty`, b's in the instruction's type).
    Dp4a,
    Lop3,
    Shf,
    Copysign,
    Testp,
    /// `mma.sync.aligned.m16n8k16.row.col`: a warp's tensor-core multiply-accumulate.
    Mma,
    /// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16`: a warp loads 8x8 tiles.
    Ldmatrix,
    /// `cp.async.{ca,cg}.shared.global`: run at once, as a global read and a shared write.
    CpAsync,
    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32`: a warpgroup's multiply of shared-memory
    /// tiles, run at once, warp by warp (N / 8 in `Mods::vec`, the input type in `src_ty`).
    Wgmma,
    /// `mbarrier.{init,arrive,expect_tx,try_wait,test_wait,inval}`: the operation in
    /// `Mods::sub` (`MBAR_*`), kept in a per-CTA table by the barrier's shared-memory offset.
    Mbarrier,
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`: a TMA
    /// load of one box, run at once (N in `Mods::vec`).
    BulkTensor,
    /// `prefetch.tensormap`: checks the map, changes nothing.
    PrefetchTensorMap,
    /// `bar.red.{and,or}.pred` and `bar.red.popc.u32` (also `barrier[.cta].red`): a CTA-wide
    /// barrier whose destination gets the AND, OR or count of the threads' predicates (the
    /// operation in `Mods::sub`, `RED_*`).
    BarRed,
    /// `cp.async.commit_group`, `cp.async.wait_group N`, `cp.async.wait_all`: the copies are
    /// done at issue, so these only track which of a thread's copies are still in flight
    /// (`Mods::sub`, `CPA_*`).
    CpAsyncGroup,
    /// `cp.async.mbarrier.arrive[.noinc].shared[::cta].b64 [bar]`: an arrive-on the barrier
    /// when the thread's copies complete (`Mods::sub` is 1 for `.noinc`, a real arrival).
    CpAsyncArrive,
    Nop,
}

/// Modifiers an instruction may carry, as flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mods {
    pub ftz: bool,
    pub sat: bool,
    pub approx: bool,
    /// `mul`/`mad`: .lo, .hi, .wide.
    pub half: Half,
    pub round: Round,
    pub cmp: Option<Cmp>,
    /// `setp` combined with a predicate: .and/.or/.xor.
    pub bool_op: Option<u8>,
    pub space: Option<Space>,
    /// Vector width of a load/store (1, 2, 4); `ldmatrix`'s tile count; `wgmma`'s N / 8.
    pub vec: u8,
    /// Shuffle mode, vote mode, atomic op, redux op, shf direction: a small code.
    pub sub: u8,
    /// `cvt`'s source type, `setp`'s compared type is `ty`.
    pub src_ty: Option<Ty>,
    /// `shf.clamp` (a shift of 32 or more saturates) rather than `.wrap`.
    pub clamp: bool,
    /// `cvta.to.*` (generic to space) rather than `cvta.*` (space to generic).
    pub to: bool,
    /// `ldmatrix … .trans`: each 8x8 tile is delivered transposed.
    pub trans: bool,
    /// `mma`: the accumulator (C) type; `ty` is D's and `src_ty` A's and B's.
    pub c_ty: Option<Ty>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Half {
    #[default]
    None,
    Lo,
    Hi,
    Wide,
}

/// Shuffle modes (`Mods::sub`).
pub const SHFL_UP: u8 = 0;
pub const SHFL_DOWN: u8 = 1;
pub const SHFL_BFLY: u8 = 2;
pub const SHFL_IDX: u8 = 3;
/// Vote modes.
pub const VOTE_ALL: u8 = 0;
pub const VOTE_ANY: u8 = 1;
pub const VOTE_UNI: u8 = 2;
pub const VOTE_BALLOT: u8 = 3;
/// Atomic and reduction operations.
pub const ATOM_ADD: u8 = 0;
pub const ATOM_MIN: u8 = 1;
pub const ATOM_MAX: u8 = 2;
pub const ATOM_EXCH: u8 = 3;
pub const ATOM_CAS: u8 = 4;
pub const ATOM_AND: u8 = 5;
pub const ATOM_OR: u8 = 6;
pub const ATOM_XOR: u8 = 7;
pub const ATOM_INC: u8 = 8;
pub const ATOM_DEC: u8 = 9;

/// mbarrier operations (`Mods::sub` of [`Op::Mbarrier`]).
pub const MBAR_INIT: u8 = 0;
pub const MBAR_ARRIVE: u8 = 1;
pub const MBAR_ARRIVE_EXPECT_TX: u8 = 2;
pub const MBAR_EXPECT_TX: u8 = 3;
pub const MBAR_TRY_WAIT: u8 = 4;
pub const MBAR_TRY_WAIT_PARITY: u8 = 5;
pub const MBAR_TEST_WAIT: u8 = 6;
pub const MBAR_TEST_WAIT_PARITY: u8 = 7;
pub const MBAR_INVAL: u8 = 8;

/// Barrier reductions (`Mods::sub` of [`Op::BarRed`]).
pub const RED_AND: u8 = 0;
pub const RED_OR: u8 = 1;
pub const RED_POPC: u8 = 2;

/// `cp.async` group operations (`Mods::sub` of [`Op::CpAsyncGroup`]).
pub const CPA_COMMIT: u8 = 0;
pub const CPA_WAIT_GROUP: u8 = 1;
pub const CPA_WAIT_ALL: u8 = 2;

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq)]
pub struct Inst {
    pub op: Op,
    pub ty: Ty,
    pub mods: Mods,
    /// `@%p` / `@!%p`: the guard register and whether it is negated.
    pub guard: Option<(u32, bool)>,
    /// Destination first (for stores, the address), then sources.
    pub args: Vec<Operand>,
    /// The PTX line (1-based).
    pub line: u32,
    /// The source location from the last `.loc`: (file index, line).
    pub loc: Option<(u32, u32)>,
    /// The instruction's opcode text, for messages.
    pub text: Box<str>,
}
