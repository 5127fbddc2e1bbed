//! What a thread's operands hold: its registers (read and written), its coordinates and
//! special registers, immediates read as an instruction's type, and the addresses of
//! symbols, parameters and `[base+offset]` operands.

use super::Cta;
use crate::emu::inst::*;
use crate::emu::SymbolKind;

impl Cta<'_> {
    /// Thread coordinates of linear thread `t`.
    pub(crate) fn coords(&self, t: usize) -> [u32; 3] {
        let t = t as u32;
        let [bx, by, _] = self.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
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
}
