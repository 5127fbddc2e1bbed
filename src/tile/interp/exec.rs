//! Running a launch: the programs of the grid one after another (x fastest), each walking the
//! kernel's structured statements (`if`, `for` with Python's `range` semantics, `while`,
//! `return`), and each assignment dispatched to the module that evaluates its op. A launch may
//! execute at most [`MAX_STEPS`] statements, so a `while` that never ends is an error instead
//! of a hang.

use super::value::Data;
use super::{dot, elementwise, memory, shape, Fault, FaultKind};
use crate::tile::ir::{Elem, Kernel, Op, Scalar, Stmt, StmtKind, Type, VarId};
use crate::tile::InterpBuffer;

/// Statement executions allowed per launch.
pub(super) const MAX_STEPS: u64 = 1 << 32;

/// How a block ended.
enum Flow {
    Normal,
    Return,
}

/// What every op may need besides its operands: the program, the grid and memory.
pub(super) struct Ctx<'a> {
    pub k: &'a Kernel,
    pub pid: [u32; 3],
    pub grid: [u32; 3],
    pub buffers: &'a mut [InterpBuffer],
    /// Where each tile size's elements live on the GPU, and the sums whose products Triton
    /// contracts: full float sums follow the GPU's order of additions (`ir::sums`).
    pub sums: shape::SumPlan,
}

/// The operands of one assignment: every variable, with the destination's old value kept
/// aside when the op reads it (`acc = acc + x`).
pub(super) struct Env<'a> {
    pub k: &'a Kernel,
    vars: &'a [Data],
    dst: VarId,
    saved: Option<&'a Data>,
}

impl<'a> Env<'a> {
    pub fn get(&self, v: VarId) -> Result<&'a Data, Fault> {
        if v == self.dst {
            if let Some(s) = self.saved {
                return Ok(s);
            }
        }
        self.vars
            .get(v.0 as usize)
            .ok_or_else(|| Fault::interp(format!("variable {} does not exist", v.0)))
    }

    /// The variable being assigned.
    pub fn dst(&self) -> VarId {
        self.dst
    }

    pub fn ints(&self, v: VarId) -> Result<&'a [i64], Fault> {
        match self.get(v)? {
            Data::Int(x) => Ok(x),
            _ => Err(kind_mismatch(v, "integer")),
        }
    }

    pub fn floats(&self, v: VarId) -> Result<&'a [f64], Fault> {
        match self.get(v)? {
            Data::Float(x) => Ok(x),
            _ => Err(kind_mismatch(v, "float")),
        }
    }

    pub fn ptrs(&self, v: VarId) -> Result<&'a [super::value::Ptr], Fault> {
        match self.get(v)? {
            Data::Ptr(x) => Ok(x),
            _ => Err(kind_mismatch(v, "pointer")),
        }
    }

    pub fn ty(&self, v: VarId) -> &'a Type {
        &self.k.vars[v.0 as usize].ty
    }

    /// The dtype of a number, or the pointee of a pointer.
    pub fn scalar(&self, v: VarId) -> Scalar {
        match self.ty(v).elem {
            Elem::Scalar(s) | Elem::Ptr(s) => s,
        }
    }
}

fn kind_mismatch(v: VarId, want: &str) -> Fault {
    Fault::interp(format!("variable {} does not hold {want} values", v.0))
}

pub(super) struct Machine<'a> {
    pub(super) ctx: Ctx<'a>,
    pub(super) vars: Vec<Data>,
    steps: u64,
    /// Statement executions allowed ([`MAX_STEPS`] unless a test lowers it).
    pub max_steps: u64,
    /// When the launch's watchdog runs out, and its length in ms.
    pub deadline: Option<crate::watchdog::Watchdog>,
    pub ops: u64,
}

impl<'a> Machine<'a> {
    pub fn new(
        k: &'a Kernel,
        vars: Vec<Data>,
        grid: [u32; 3],
        buffers: &'a mut [InterpBuffer],
    ) -> Machine<'a> {
        Machine {
            ctx: Ctx {
                k,
                pid: [0; 3],
                grid,
                buffers,
                sums: shape::SumPlan::of(k),
            },
            vars,
            steps: 0,
            max_steps: MAX_STEPS,
            deadline: None,
            ops: 0,
        }
    }

    /// Every program of the grid; the first fault stops the launch.
    pub fn launch(&mut self) -> Result<(), ([u32; 3], Fault)> {
        let [gx, gy, gz] = self.ctx.grid;
        let body = &self.ctx.k.body;
        for z in 0..gz {
            for y in 0..gy {
                for x in 0..gx {
                    self.ctx.pid = [x, y, z];
                    self.block(body).map_err(|f| ([x, y, z], f))?;
                }
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<(), Fault> {
        self.steps += 1;
        if self.steps.is_multiple_of(4096) {
            if let Some(Err(stopped)) = self.deadline.as_ref().map(|w| w.check()) {
                let (kind, message) = match stopped {
                    crate::watchdog::Stopped::Timeout(ms) => (
                        FaultKind::Timeout,
                        format!("the launch ran past its watchdog of {ms} ms (an endless loop?)"),
                    ),
                    crate::watchdog::Stopped::Cancelled => {
                        (FaultKind::Cancelled, "the launch was cancelled".to_string())
                    }
                };
                return Err(Fault {
                    kind,
                    message,
                    line: None,
                });
            }
        }
        if self.steps > self.max_steps {
            return Err(Fault::interp(format!(
                "program did not finish: the launch ran more than {} statements (a `while` loop whose condition never becomes false?)",
                self.max_steps
            )));
        }
        Ok(())
    }

    fn block(&mut self, body: &[Stmt]) -> Result<Flow, Fault> {
        for s in body {
            self.step()?;
            match self.stmt(s).map_err(|f| f.at_line(s.loc.line))? {
                Flow::Normal => {}
                Flow::Return => return Ok(Flow::Return),
            }
        }
        Ok(Flow::Normal)
    }

    /// Runs a block that cannot `return` (a combine function's body).
    pub(super) fn run_block(&mut self, body: &[Stmt]) -> Result<(), Fault> {
        self.block(body).map(|_| ())
    }

    pub(super) fn var(&self, v: VarId) -> Result<&Data, Fault> {
        self.vars
            .get(v.0 as usize)
            .ok_or_else(|| Fault::interp(format!("variable {} does not exist", v.0)))
    }

    fn int(&self, v: VarId) -> Result<i64, Fault> {
        self.var(v)?
            .first_int()
            .ok_or_else(|| Fault::interp(format!("variable {} is not an integer", v.0)))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<Flow, Fault> {
        match &s.kind {
            StmtKind::Assign { dst, op } => self.assign(*dst, op).map(|()| Flow::Normal),
            StmtKind::Store { ptr, value, mask } => {
                let env = Env {
                    k: self.ctx.k,
                    vars: &self.vars,
                    dst: VarId(u32::MAX),
                    saved: None,
                };
                self.ops += memory::store(&mut self.ctx, &env, *ptr, *value, *mask)?;
                Ok(Flow::Normal)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                if self.var(*cond)?.truth() {
                    self.block(then)
                } else {
                    self.block(otherwise)
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
                ..
            } => self.for_loop(*var, *start, *end, *step, body),
            StmtKind::While {
                cond_body,
                cond,
                body,
            } => loop {
                if let Flow::Return = self.block(cond_body)? {
                    return Ok(Flow::Return);
                }
                if !self.var(*cond)?.truth() {
                    return Ok(Flow::Normal);
                }
                if let Flow::Return = self.block(body)? {
                    return Ok(Flow::Return);
                }
                self.step()?;
            },
            // Programs run one at a time and a program is one sequence of ops: nothing to wait for.
            StmtKind::Barrier | StmtKind::GridDependency(_) => Ok(Flow::Normal),
            StmtKind::Assume { cond } => match self.var(*cond)?.truth() {
                true => Ok(Flow::Normal),
                false => Err(Fault::false_assumption()),
            },
            StmtKind::Return => Ok(Flow::Return),
        }
    }

    fn for_loop(
        &mut self,
        var: VarId,
        start: VarId,
        end: VarId,
        step: VarId,
        body: &[Stmt],
    ) -> Result<Flow, Fault> {
        let (mut i, end, step) = (self.int(start)?, self.int(end)?, self.int(step)?);
        if step == 0 {
            return Err(Fault::interp("range() step is zero"));
        }
        let dtype = match self.ctx.k.vars.get(var.0 as usize).map(|v| v.ty.elem) {
            Some(Elem::Scalar(s)) => s,
            _ => return Err(Fault::interp("a loop variable that is not an integer")),
        };
        while (step > 0 && i < end) || (step < 0 && i > end) {
            if let Some(Data::Int(v)) = self.vars.get_mut(var.0 as usize) {
                v.clear();
                v.push(super::value::wrap(dtype, i));
            }
            if let Flow::Return = self.block(body)? {
                return Ok(Flow::Return);
            }
            self.step()?;
            match i.checked_add(step) {
                Some(n) => i = n,
                None => break,
            }
        }
        Ok(Flow::Normal)
    }

    fn assign(&mut self, dst: VarId, op: &Op) -> Result<(), Fault> {
        if matches!(op, Op::Scan { .. } | Op::ReduceWith { .. }) {
            return self.combined(dst, op);
        }
        let k = self.ctx.k;
        let d = dst.0 as usize;
        let ty = &k
            .vars
            .get(d)
            .ok_or_else(|| Fault::interp(format!("variable {d} does not exist")))?
            .ty;
        let mut out = std::mem::take(&mut self.vars[d]);
        let saved = reads(op, dst).then(|| out.clone());
        out.reset(ty);
        let env = Env {
            k,
            vars: &self.vars,
            dst,
            saved: saved.as_ref(),
        };
        let r = eval(&mut self.ctx, &env, ty, op, &mut out);
        self.vars[d] = out;
        self.ops = self.ops.wrapping_add(r?);
        Ok(())
    }
}

/// Evaluates `op` into `out` (already the destination's kind and length); returns the element
/// operations it took.
fn eval(ctx: &mut Ctx, env: &Env, ty: &Type, op: &Op, out: &mut Data) -> Result<u64, Fault> {
    let n = ty.numel();
    match op {
        Op::Const(c) => elementwise::constant(ty, *c, out),
        Op::Copy(s) | Op::Hint { src: s, .. } | Op::Reshape(s) | Op::ExpandDims { src: s, .. } => {
            shape::copy(env.get(*s)?, out)
        }
        Op::Splat(s) => shape::splat(env.get(*s)?, out),
        Op::ProgramId(a) => elementwise::set_int(out, ctx.pid[usize::from(*a).min(2)]),
        Op::NumPrograms(a) => elementwise::set_int(out, ctx.grid[usize::from(*a).min(2)]),
        Op::Arange { start, .. } => elementwise::arange(ty, *start, out),
        Op::Broadcast(s) => shape::broadcast(env.ty(*s), env.get(*s)?, ty, out),
        Op::Permute { src, perm } => shape::permute(env.ty(*src), env.get(*src)?, perm, out),
        Op::Cast(s) => elementwise::cast(env, *s, ty, out),
        Op::Binary { op, lhs, rhs } => elementwise::binary(env, *op, *lhs, *rhs, ty, out),
        Op::Unary { op, src } => elementwise::unary(env, *op, *src, ty, out),
        Op::Fma { a, b, c } => elementwise::fma(env, *a, *b, *c, ty, out),
        Op::Where { cond, a, b } => elementwise::select(env, *cond, *a, *b, out),
        Op::PtrAdd { ptr, offset } => memory::ptr_add(env, *ptr, *offset, out),
        Op::Load { ptr, mask, other } => {
            return memory::load(ctx, env, *ptr, *mask, *other, ty, out);
        }
        Op::Reduce {
            op: crate::tile::ir::ReduceOp::Sum,
            src,
            ..
        } if !ty.is_tile() && env.scalar(*src).is_float() => {
            shape::float_sum(&ctx.sums, env, *src, ty, out)?;
            return Ok(env.ty(*src).numel());
        }
        Op::Reduce { op, src, axis } => {
            shape::reduce(env, *op, *src, *axis, ty, out)?;
            return Ok(env.ty(*src).numel());
        }
        Op::Atomic {
            op,
            ptr,
            value,
            mask,
            cmp,
        } => return memory::atomic(ctx, env, *op, *ptr, (*value, *cmp), *mask, out),
        Op::Dot { a, b, acc, .. } => return dot::dot(env, *a, *b, *acc, ty, out),
        Op::Sort { src, descending } => {
            return super::sort::sort(env, *src, *descending, ty, out);
        }
        Op::Scan { .. } | Op::ReduceWith { .. } => {
            return Err(Fault::interp("a scan evaluated as a plain op"))
        }
    }?;
    Ok(n)
}

/// Whether `op` reads `v`.
fn reads(op: &Op, v: VarId) -> bool {
    op.operands().contains(&v)
}
