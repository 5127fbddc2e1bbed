//! Running a grid: CTAs in parallel across cores; in each CTA, warps one after another until
//! every thread has exited, waits at a barrier or has parked after a failed mbarrier wait;
//! parked threads run again (and again, while that changes anything: else it is a deadlock)
//! until none is left, then the barrier is released. Inside a warp
//! the lanes run in lockstep: each step takes the lowest program counter among the running
//! lanes and executes that instruction for every lane there, so lanes that branched apart
//! reconverge where their paths meet (the immediate post-dominator of structured code), and a
//! loop's exited lanes wait for the others.

mod async_arrive;
mod async_copy;
mod barrier_red;
mod bulk_copy;
mod matrix_ops;
mod mbarrier;
mod memory_ops;
mod warp_ops;
mod warpgroup_ops;

use super::alu;
use super::checks::{Finding, FindingKind, Findings, Shadow};
use super::inst::*;
use super::memory::Memory;
use super::{EmuError, Entry, Launch, Module, Options, Report, SymbolKind};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};

/// Generic addresses of a CTA's shared memory and a thread's local memory start here.
pub(crate) const SHARED_WINDOW: u64 = 0x0000_1000_0000_0000;
pub(crate) const LOCAL_WINDOW: u64 = 0x0000_2000_0000_0000;
/// Generic addresses of the kernel's parameters (`cvta.param`) start here.
pub(crate) const PARAM_WINDOW: u64 = 0x0000_3000_0000_0000;
/// Lane-instructions one CTA may execute before it counts as hung.
const CTA_BUDGET: u64 = 400_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Run,
    Bar,
    /// Parked after a failed mbarrier wait, until the other warps have run.
    Wait,
    Done,
}

pub(crate) struct Cta<'a> {
    e: &'a Entry,
    files: &'a HashMap<u32, String>,
    mem: &'a Memory,
    params: &'a [u8],
    /// Per symbol of the entry: the address of a module-scope `.global` variable in `mem`.
    globals: &'a [u64],
    grid: [u32; 3],
    block: [u32; 3],
    ctaid: [u32; 3],
    dyn_shared: u32,
    n: usize,
    nregs: usize,
    regs: Vec<u64>,
    pc: Vec<u32>,
    st: Vec<State>,
    shared: Vec<u8>,
    sh_written: Vec<u64>,
    sh_shadow: Vec<Shadow>,
    local: Vec<u8>,
    gshadow: HashMap<u64, Shadow>,
    epoch: u32,
    findings: Findings,
    count: u64,
    approx: BTreeSet<&'static str>,
    /// The barrier instruction the waiting threads reached (for the divergence report).
    bar_at: Option<usize>,
    mbars: mbarrier::Barriers,
    /// Each thread's `cp.async` copies that no wait or mbarrier has tracked yet.
    in_flight: async_arrive::InFlight,
    /// The predicates that threads brought to a barrier reduction (`bar.red`).
    votes: barrier_red::Votes,
}

struct CtaOut {
    findings: Findings,
    count: u64,
    approx: BTreeSet<&'static str>,
}

pub fn run(
    module: &Module,
    launch: &Launch,
    mem: &mut Memory,
    opts: &Options,
) -> Result<Report, EmuError> {
    let e = module.entry(launch.entry).ok_or_else(|| {
        EmuError::BadLaunch(format!(
            "no kernel `{}` in the PTX; kernels: {}",
            launch.entry,
            module.entries().join(", ")
        ))
    })?;
    if launch.params.len() != e.params.len() {
        return Err(EmuError::BadLaunch(format!(
            "`{}` takes {} parameters, the launch gives {}",
            e.name,
            e.params.len(),
            launch.params.len()
        )));
    }
    let threads: u64 = launch.block.iter().map(|&d| u64::from(d)).product();
    if threads == 0 || threads > 1024 {
        return Err(EmuError::BadLaunch(format!(
            "a block of {threads} threads (1 to 1024 allowed)"
        )));
    }
    if launch.grid.contains(&0) {
        return Err(EmuError::BadLaunch("a grid with a zero dimension".into()));
    }
    let shared = u64::from(e.static_shared) + u64::from(launch.dynamic_shared);
    if shared > 227 * 1024 {
        return Err(EmuError::BadLaunch(format!(
            "{shared} bytes of shared memory per block (227 KiB at most)"
        )));
    }
    let params = super::param_space(e, launch.params)?;
    let globals = place_globals(e, mem);
    let [gx, gy, gz] = launch.grid.map(u64::from);
    let total = gx * gy * gz;
    let mem: &Memory = mem;
    let files = &module.files;
    let one = |i: u64| -> Result<CtaOut, EmuError> {
        let ctaid = [
            (i % gx) as u32,
            ((i / gx) % gy) as u32,
            (i / (gx * gy)) as u32,
        ];
        let mut cta = Cta::new(e, files, mem, &params, launch, ctaid);
        cta.globals = &globals;
        cta.run()?;
        Ok(CtaOut {
            findings: cta.findings,
            count: cta.count,
            approx: cta.approx,
        })
    };
    let outs: Vec<Result<CtaOut, EmuError>> = if opts.threads == 1 {
        (0..total).map(one).collect()
    } else if opts.threads > 1 {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
        {
            Ok(pool) => pool.install(|| (0..total).into_par_iter().map(one).collect()),
            Err(_) => (0..total).into_par_iter().map(one).collect(),
        }
    } else {
        (0..total).into_par_iter().map(one).collect()
    };
    let mut findings = Findings::default();
    let mut instructions = 0u64;
    let mut approx = BTreeSet::new();
    for o in outs {
        let o = o?;
        findings.merge(o.findings);
        instructions += o.count;
        approx.extend(o.approx);
    }
    let mut list = findings.list;
    list.sort_by_key(|f| (f.cta[2], f.cta[1], f.cta[0], f.ptx_line));
    let kept = list.len().min(opts.max_findings.max(1));
    let dropped = (list.len() - kept) as u64 + findings.repeats;
    list.truncate(kept);
    if dropped > 0 {
        if let Some(last) = list.last_mut() {
            last.message
                .push_str(&format!(" ({dropped} more like these elsewhere)"));
        }
    }
    Ok(Report {
        findings: list,
        instructions,
        approx: approx.into_iter().map(str::to_string).collect(),
    })
}

impl<'a> Cta<'a> {
    fn new(
        e: &'a Entry,
        files: &'a HashMap<u32, String>,
        mem: &'a Memory,
        params: &'a [u8],
        launch: &Launch,
        ctaid: [u32; 3],
    ) -> Cta<'a> {
        let n = launch.block.iter().product::<u32>() as usize;
        let nregs = e.nregs.max(1) as usize;
        let shared_len = (e.static_shared + launch.dynamic_shared) as usize;
        let mut shared = vec![0u8; shared_len];
        let mut sh_written = vec![0u64; shared_len.div_ceil(64)];
        // Initialised shared variables (rare) start written.
        for s in &e.symbols {
            if s.kind == SymbolKind::Shared && !s.init.is_empty() {
                let o = s.offset as usize;
                let end = (o + s.init.len()).min(shared_len);
                shared[o..end].copy_from_slice(&s.init[..end - o]);
                for b in o..end {
                    sh_written[b / 64] |= 1 << (b % 64);
                }
            }
        }
        Cta {
            e,
            files,
            mem,
            params,
            globals: &[],
            grid: launch.grid,
            block: launch.block,
            ctaid,
            dyn_shared: launch.dynamic_shared,
            n,
            nregs,
            regs: vec![0; n * nregs],
            pc: vec![0; n],
            st: vec![State::Run; n],
            shared,
            sh_written,
            sh_shadow: vec![Shadow::default(); shared_len.div_ceil(4)],
            local: vec![0; n * e.local_bytes as usize],
            gshadow: HashMap::new(),
            epoch: 1,
            findings: Findings::default(),
            count: 0,
            approx: BTreeSet::new(),
            bar_at: None,
            mbars: mbarrier::Barriers::default(),
            in_flight: async_arrive::InFlight::new(n),
            votes: barrier_red::Votes::new(n),
        }
    }

    fn run(&mut self) -> Result<(), EmuError> {
        let warps = self.n.div_ceil(32);
        loop {
            for w in 0..warps {
                self.run_warp(w)?;
            }
            if self.st.contains(&State::Wait) {
                // Threads spin on an mbarrier: run them again, unless nothing changed.
                if self.stuck() {
                    self.report_deadlock();
                    return Ok(());
                }
                self.revive_waiters();
                continue;
            }
            self.forget_waiters();
            let waiting: Vec<usize> = (0..self.n).filter(|&t| self.st[t] == State::Bar).collect();
            if waiting.is_empty() {
                return Ok(());
            }
            if waiting.len() < self.n {
                let absent = (0..self.n).find(|&t| self.st[t] != State::Bar).unwrap_or(0);
                if let Some(i) = self.bar_at {
                    let line = self.e.insts[i].line;
                    let msg = format!(
                        "barrier at PTX line {line} reached by {} of {} threads (thread {:?} {} it)",
                        waiting.len(),
                        self.n,
                        self.coords(absent),
                        if self.st[absent] == State::Done { "exited before" } else { "never reached" }
                    );
                    self.report(FindingKind::DivergentBarrier, i, waiting[0], msg);
                }
            }
            self.epoch += 1;
            self.bar_at = None;
            self.mbars.join_seen(&waiting);
            self.reduce_votes(&waiting);
            for t in waiting {
                self.st[t] = State::Run;
            }
        }
    }

    fn run_warp(&mut self, w: usize) -> Result<(), EmuError> {
        let lo = w * 32;
        let hi = (lo + 32).min(self.n);
        let end = self.e.insts.len() as u32;
        loop {
            let mut min = u32::MAX;
            for t in lo..hi {
                if self.st[t] == State::Run && self.pc[t] < min {
                    min = self.pc[t];
                }
            }
            if min == u32::MAX {
                return Ok(());
            }
            let mut mask = 0u32;
            for t in lo..hi {
                if self.st[t] == State::Run && self.pc[t] == min {
                    mask |= 1 << (t - lo);
                }
            }
            if min >= end {
                // Falling off the end is a return.
                for t in lanes(mask, lo) {
                    self.st[t] = State::Done;
                }
                continue;
            }
            self.step(lo, min as usize, mask)?;
            if self.count > CTA_BUDGET {
                return Err(EmuError::Budget(CTA_BUDGET));
            }
        }
    }

    /// Thread coordinates of linear thread `t`.
    pub(crate) fn coords(&self, t: usize) -> [u32; 3] {
        let t = t as u32;
        let [bx, by, _] = self.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    pub(crate) fn report(&mut self, kind: FindingKind, inst: usize, t: usize, message: String) {
        let i = &self.e.insts[inst];
        let source = i
            .loc
            .and_then(|(f, l)| self.files.get(&f).map(|p| (p.clone(), l)));
        let f = Finding {
            kind,
            message,
            cta: self.ctaid,
            thread: self.coords(t),
            ptx_line: i.line,
            source,
        };
        self.findings.push(f);
    }

    pub(crate) fn wants(&self, kind: FindingKind, inst: usize) -> bool {
        self.findings.wants(kind, self.e.insts[inst].line)
    }

    pub(crate) fn reg(&self, t: usize, r: u32) -> u64 {
        self.regs[t * self.nregs + r as usize]
    }

    pub(crate) fn set(&mut self, t: usize, op: &Operand, v: u64) {
        if let Operand::Reg(r) = op {
            self.regs[t * self.nregs + *r as usize] = v;
        }
    }

    /// The value of a source operand for thread `t`, read as type `ty`.
    pub(crate) fn read(&self, t: usize, op: &Operand, ty: Ty) -> u64 {
        match op {
            Operand::Reg(r) => self.reg(t, *r),
            Operand::NotPred(r) => u64::from(self.reg(t, *r) == 0),
            Operand::Imm(v) => *v,
            Operand::FImm(x) => match ty {
                Ty::F64 => x.to_bits(),
                Ty::F32 => u64::from((*x as f32).to_bits()),
                Ty::F16 | Ty::F16x2 => u64::from(half::f16::from_f64(*x).to_bits()),
                Ty::Bf16 | Ty::Bf16x2 => u64::from(half::bf16::from_f64(*x).to_bits()),
                _ => *x as i64 as u64,
            },
            Operand::Special(s) => self.special(t, *s),
            Operand::Sym(i) => self.symbol_address(*i),
            Operand::Addr(b, off) => self.base(t, *b).wrapping_add(*off as u64),
            _ => 0,
        }
    }

    pub(crate) fn symbol_address(&self, i: u32) -> u64 {
        let s = &self.e.symbols[i as usize];
        match s.kind {
            SymbolKind::Global => self.globals.get(i as usize).copied().unwrap_or(0),
            _ => u64::from(s.offset),
        }
    }

    pub(crate) fn base(&self, t: usize, b: Base) -> u64 {
        match b {
            Base::Reg(r) => self.reg(t, r),
            Base::Sym(i) => self.symbol_address(i),
            Base::Param(i) => u64::from(self.e.param_offsets[i as usize]),
            Base::Abs => 0,
        }
    }

    fn special(&self, t: usize, s: Sreg) -> u64 {
        let c = self.coords(t);
        let lane = (t % 32) as u32;
        u64::from(match s {
            Sreg::Tid(d) => c[d as usize],
            Sreg::Ntid(d) => self.block[d as usize],
            Sreg::Ctaid(d) => self.ctaid[d as usize],
            Sreg::Nctaid(d) => self.grid[d as usize],
            Sreg::LaneId => lane,
            Sreg::WarpId => (t / 32) as u32,
            Sreg::NWarpId => self.n.div_ceil(32) as u32,
            Sreg::Clock | Sreg::Clock64 | Sreg::GlobalTimer => return self.count,
            Sreg::LaneMaskEq => 1u32 << lane,
            Sreg::LaneMaskLt => (1u32 << lane) - 1,
            Sreg::LaneMaskLe => ((1u64 << (lane + 1)) - 1) as u32,
            Sreg::LaneMaskGt => !(((1u64 << (lane + 1)) - 1) as u32),
            Sreg::LaneMaskGe => !((1u32 << lane) - 1),
            Sreg::SmId => 0,
            Sreg::DynSmemSize => self.dyn_shared,
        })
    }

    /// Executes instruction `i` for the lanes of `mask` (warp starting at thread `lo`).
    fn step(&mut self, lo: usize, i: usize, mask: u32) -> Result<(), EmuError> {
        let e = self.e;
        let inst = &e.insts[i];
        let mut active = mask;
        if let Some((g, neg)) = inst.guard {
            for t in lanes(mask, lo) {
                if (self.reg(t, g) != 0) == neg {
                    active &= !(1 << (t - lo));
                }
            }
        }
        self.count += u64::from(active.count_ones());
        let next = (i + 1) as u32;
        match inst.op {
            Op::Bra => {
                let target = match inst.args.first() {
                    Some(Operand::Label(l)) => *l,
                    _ => return Err(unsupported(inst)),
                };
                for t in lanes(mask, lo) {
                    self.pc[t] = if active & (1 << (t - lo)) != 0 {
                        target
                    } else {
                        next
                    };
                }
                return Ok(());
            }
            Op::Ret | Op::Exit => {
                for t in lanes(mask, lo) {
                    if active & (1 << (t - lo)) != 0 {
                        self.st[t] = State::Done;
                    } else {
                        self.pc[t] = next;
                    }
                }
                return Ok(());
            }
            Op::Bar if !inst.text.contains("warp") && !inst.text.contains("arrive") => {
                for t in lanes(mask, lo) {
                    self.pc[t] = next;
                    if active & (1 << (t - lo)) != 0 {
                        self.st[t] = State::Bar;
                        self.bar_at = Some(i);
                    }
                }
                return Ok(());
            }
            Op::BarRed => {
                self.bar_red(lo, i, mask, active);
                return Ok(());
            }
            Op::CpAsyncGroup | Op::CpAsyncArrive => self.track_copies(lo, i, active)?,
            Op::Bar | Op::Membar | Op::Nop => {}
            Op::Shfl => self.shfl(lo, i, active)?,
            Op::Mma => self.mma(lo, i, active)?,
            Op::Ldmatrix => self.ldmatrix(lo, i, active)?,
            Op::Wgmma => self.wgmma(lo, i, active)?,
            Op::CpAsync => {
                for t in lanes(active, lo) {
                    self.cp_async(t, i)?;
                }
            }
            Op::Mbarrier => {
                let park = self.mbarrier(lo, i, active)?;
                for t in lanes(mask, lo) {
                    self.pc[t] = next;
                }
                for t in lanes(park, lo) {
                    self.st[t] = State::Wait;
                }
                return Ok(());
            }
            Op::BulkTensor => {
                for t in lanes(active, lo) {
                    self.bulk_tensor(t, i)?;
                }
            }
            Op::PrefetchTensorMap => {
                for t in lanes(active, lo) {
                    self.prefetch_tensor_map(t, i)?;
                }
            }
            Op::Vote | Op::Activemask | Op::Redux => self.vote(lo, i, active)?,
            Op::Ld | Op::Ldu | Op::St | Op::Atom | Op::Red => {
                for t in lanes(active, lo) {
                    self.memory_op(t, i)?;
                }
            }
            Op::Cvta => {
                for t in lanes(active, lo) {
                    let v = self.read(t, &inst.args[1], inst.ty);
                    let r = match (inst.mods.to, inst.mods.space) {
                        (false, Some(Space::Shared)) => SHARED_WINDOW.wrapping_add(v),
                        (false, Some(Space::Local)) => LOCAL_WINDOW.wrapping_add(v),
                        (true, Some(Space::Shared)) => v.wrapping_sub(SHARED_WINDOW),
                        (true, Some(Space::Local)) => v.wrapping_sub(LOCAL_WINDOW),
                        (false, Some(Space::Param)) => PARAM_WINDOW.wrapping_add(v),
                        (true, Some(Space::Param)) => v.wrapping_sub(PARAM_WINDOW),
                        _ => v,
                    };
                    let r = alu::mask(r, inst.ty.bits());
                    self.set(t, &inst.args[0], r);
                }
            }
            Op::Mov
                if matches!(inst.args.get(1), Some(Operand::Vec(_)))
                    || matches!(inst.args.first(), Some(Operand::Vec(_))) =>
            {
                self.pack(lo, i, active);
            }
            _ => {
                if let Some(note) = alu::approx_note(inst) {
                    self.approx.insert(note);
                }
                let srcs = &inst.args[1.min(inst.args.len())..];
                let mut vals = [0u64; 4];
                for t in lanes(active, lo) {
                    for (k, s) in srcs.iter().take(4).enumerate() {
                        let ty = if k == 2 && matches!(inst.op, Op::Selp | Op::Setp) {
                            Ty::Pred
                        } else {
                            inst.ty
                        };
                        vals[k] = self.read(t, s, ty);
                    }
                    let r = alu::eval(inst, &vals[..srcs.len().min(4)])
                        .ok_or_else(|| unsupported(inst))?;
                    self.set(t, &inst.args[0], r);
                }
            }
        }
        for t in lanes(mask, lo) {
            self.pc[t] = next;
        }
        Ok(())
    }

    /// `mov` that packs several registers into one or unpacks one into several.
    fn pack(&mut self, lo: usize, i: usize, active: u32) {
        let inst = &self.e.insts[i];
        let total = inst.ty.bits();
        for t in lanes(active, lo) {
            match (&inst.args[0], &inst.args[1]) {
                (d, Operand::Vec(parts)) => {
                    let w = total / parts.len() as u32;
                    let mut v = 0u64;
                    for (k, p) in parts.iter().enumerate() {
                        v |= alu::mask(self.read(t, p, inst.ty), w) << (w * k as u32);
                    }
                    self.set(t, d, v);
                }
                (Operand::Vec(parts), s) => {
                    let w = total / parts.len() as u32;
                    let v = self.read(t, s, inst.ty);
                    for (k, p) in parts.iter().enumerate() {
                        self.set(t, p, alu::mask(v >> (w * k as u32), w));
                    }
                }
                _ => {}
            }
        }
    }
}

pub(crate) fn unsupported(inst: &Inst) -> EmuError {
    EmuError::Unsupported {
        instruction: inst.text.to_string(),
        ptx_line: inst.line,
    }
}

/// The thread ids of the set bits of `mask`, for a warp starting at `lo`.
pub(crate) fn lanes(mask: u32, lo: usize) -> impl Iterator<Item = usize> {
    (0..32)
        .filter(move |l| mask & (1 << l) != 0)
        .map(move |l| lo + l)
}

/// The module-scope `.global` variables `e` names (a CUDA `__device__` variable), each a
/// buffer of `mem` that keeps its value from launch to launch, as on the GPU: its initialiser,
/// else zeros. Indexed by the entry's symbols (0 for the others).
fn place_globals(e: &Entry, mem: &mut Memory) -> Vec<u64> {
    e.symbols
        .iter()
        .map(|s| match s.kind {
            SymbolKind::Global => {
                let name = format!("the PTX variable `{}`", s.name);
                mem.named(&name).unwrap_or_else(|| {
                    let mut bytes = s.init.clone();
                    bytes.resize((s.size as usize).max(bytes.len()).max(1), 0);
                    mem.alloc(&name, &bytes, crate::emu::InitState::Initialized)
                })
            }
            _ => 0,
        })
        .collect()
}
