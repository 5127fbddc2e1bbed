//! The tile interpreter: the IR run on the CPU, program by program, on host buffers. It is the
//! tile language's reference semantics, so it favours being exactly right over being clever:
//! float results are rounded to their dtype after every op, integers wrap at their width, and
//! every masked-on lane's address is checked against the buffer it points into. An access
//! outside a buffer stops the launch with an [`InterpError`] naming the program, the lane, the
//! buffer, the offset and the tile source line.
//!
//! Programs run one after another (x fastest), which also makes atomics trivially atomic; within
//! a program each op is evaluated over its whole tile in one loop (see [`value`] for how values
//! are held).

mod dot;
mod elementwise;
mod exec;
mod math;
mod memory;
mod scan;
mod shape;
mod sort;
mod validate;
mod value;

#[cfg(test)]
mod tests;

use super::{ir, InterpArg, InterpBuffer};
use ir::Elem;
use value::{Data, Ptr};

/// What a run did: `ops` counts element operations, a measure of work.
#[derive(Debug, Clone, Copy)]
pub struct InterpStats {
    pub ops: u64,
}

/// An error that stopped a run: an out-of-bounds access, or an operation the interpreter
/// cannot do, with the program and the tile source line.
#[derive(Debug)]
pub struct InterpError {
    pub program: [u32; 3],
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    kind: FaultKind,
}

impl InterpError {
    /// `out-of-bounds` for an access outside a buffer; `false-assumption` for a `tl.assume`
    /// whose condition is false; `interpreter` for a kernel the interpreter could not run (a
    /// malformed kernel, bad arguments, a loop that never ends).
    pub fn kind(&self) -> &'static str {
        match self.kind {
            FaultKind::OutOfBounds => "out-of-bounds",
            FaultKind::FalseAssumption => "false-assumption",
            FaultKind::Interpreter => "interpreter",
            FaultKind::Timeout => "timeout",
            FaultKind::Cancelled => "cancelled",
        }
    }

    /// The launch ran past its watchdog ([`run_watched`]).
    pub fn is_timeout(&self) -> bool {
        self.kind == FaultKind::Timeout
    }

    /// The launch was stopped because its work is no longer wanted.
    pub fn is_cancelled(&self) -> bool {
        self.kind == FaultKind::Cancelled
    }

    /// A fault of the kernel itself (reported as a finding), not of the interpreter's run.
    pub fn is_finding(&self) -> bool {
        !matches!(
            self.kind,
            FaultKind::Interpreter | FaultKind::Timeout | FaultKind::Cancelled
        )
    }
}

impl std::fmt::Display for InterpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            f.write_str(": ")?;
        }
        write!(f, "{}: {}", self.kind(), self.message)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FaultKind {
    OutOfBounds,
    FalseAssumption,
    Interpreter,
    Timeout,
    Cancelled,
}

/// An error inside the interpreter, before the launch-level facts (program, file) are added.
#[derive(Debug)]
struct Fault {
    kind: FaultKind,
    message: String,
    line: Option<u32>,
}

impl Fault {
    fn interp(message: impl Into<String>) -> Fault {
        Fault {
            kind: FaultKind::Interpreter,
            message: message.into(),
            line: None,
        }
    }

    fn false_assumption() -> Fault {
        Fault {
            kind: FaultKind::FalseAssumption,
            message: "the condition of `tl.assume` is false here (undefined behaviour: a \
                      compiled kernel may compute anything from it)"
                .into(),
            line: None,
        }
    }

    fn out_of_bounds(message: String) -> Fault {
        Fault {
            kind: FaultKind::OutOfBounds,
            message,
            line: None,
        }
    }

    /// Attaches the source line of the statement that failed (the innermost one wins).
    fn at_line(mut self, line: u32) -> Fault {
        if self.line.is_none() && line > 0 {
            self.line = Some(line);
        }
        self
    }
}

/// Runs `kernel` over `grid` programs on `buffers`.
pub fn run(
    kernel: &ir::Kernel,
    grid: [u32; 3],
    args: &[InterpArg],
    buffers: &mut [InterpBuffer],
) -> Result<InterpStats, InterpError> {
    run_limited(kernel, grid, args, buffers, exec::MAX_STEPS, None)
}

/// [`run`], stopping with a timeout error once the launch has run `watchdog_ms` of wall-clock
/// time (as a launch on the GPU is stopped by kwb's watchdog).
pub fn run_watched(
    kernel: &ir::Kernel,
    grid: [u32; 3],
    args: &[InterpArg],
    buffers: &mut [InterpBuffer],
    watchdog_ms: Option<u64>,
    cancel: Option<&crate::watchdog::CancelFlag>,
) -> Result<InterpStats, InterpError> {
    let watchdog = crate::watchdog::Watchdog::start(watchdog_ms, cancel);
    run_limited(kernel, grid, args, buffers, exec::MAX_STEPS, watchdog)
}

/// [`run`], stopping after `max_steps` statement executions.
fn run_limited(
    kernel: &ir::Kernel,
    grid: [u32; 3],
    args: &[InterpArg],
    buffers: &mut [InterpBuffer],
    max_steps: u64,
    watchdog: Option<crate::watchdog::Watchdog>,
) -> Result<InterpStats, InterpError> {
    let file = Some(kernel.file.display().to_string());
    let error = |program: [u32; 3], f: Fault| InterpError {
        program,
        message: f.message,
        file: file.clone(),
        line: f.line.or(Some(kernel.loc.line)).filter(|&l| l > 0),
        kind: f.kind,
    };
    validate::validate(kernel).map_err(|f| error([0; 3], f))?;
    let vars = bind(kernel, args, buffers).map_err(|f| error([0; 3], f))?;
    // Validation makes the evaluator's indexing safe; should a bug slip through anyway, a
    // panic becomes an error of the launch rather than of kwb.
    let run = std::panic::AssertUnwindSafe(|| {
        let mut m = exec::Machine::new(kernel, vars, grid, buffers);
        m.max_steps = max_steps;
        m.deadline = watchdog.clone();
        m.launch()
            .map(|()| InterpStats { ops: m.ops })
            .map_err(|(pid, f)| error(pid, f))
    });
    std::panic::catch_unwind(run).unwrap_or_else(|_| {
        Err(error(
            [0; 3],
            Fault::interp("internal error in the tile interpreter (a bug: please report it)"),
        ))
    })
}

/// Every variable's storage, zeroed, with the parameters bound to the launch arguments.
fn bind(
    kernel: &ir::Kernel,
    args: &[InterpArg],
    buffers: &[InterpBuffer],
) -> Result<Vec<Data>, Fault> {
    if args.len() != kernel.params.len() {
        return Err(Fault::interp(format!(
            "`{}` takes {} launch arguments, but {} were given",
            kernel.name,
            kernel.params.len(),
            args.len()
        )));
    }
    let mut vars: Vec<Data> = kernel.vars.iter().map(|v| Data::zeroed(&v.ty)).collect();
    for (i, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let ty = kernel.ty(p.var);
        let wrong = |what: &str| {
            Fault::interp(format!(
                "argument {i} (`{}`) is {what}, but the kernel takes {}",
                p.name,
                describe(ty)
            ))
        };
        if ty.is_tile() {
            return Err(wrong("given at launch"));
        }
        let value = match (ty.elem, a) {
            (Elem::Ptr(_), InterpArg::Buffer(b)) if *b < buffers.len() => Data::Ptr(vec![Ptr {
                buf: *b as u32,
                byte: 0,
            }]),
            (Elem::Ptr(_), InterpArg::Buffer(b)) => {
                return Err(wrong(&format!("buffer {b}, which does not exist")))
            }
            (Elem::Scalar(s), InterpArg::Int(x)) if s.is_float() => {
                Data::Float(vec![value::int_to_float(ir::Scalar::I64, s, *x)])
            }
            (Elem::Scalar(s), InterpArg::Int(x)) => Data::Int(vec![value::wrap(s, *x)]),
            (Elem::Scalar(s), InterpArg::Float(x)) if s.is_float() => {
                Data::Float(vec![value::convert_float(s, *x)])
            }
            (Elem::Scalar(_), InterpArg::Float(_)) => return Err(wrong("a float")),
            (Elem::Scalar(_), InterpArg::Buffer(_)) => return Err(wrong("a buffer")),
            (Elem::Ptr(_), _) => return Err(wrong("a number")),
        };
        if let Some(slot) = vars.get_mut(p.var.0 as usize) {
            *slot = value;
        }
    }
    Ok(vars)
}

fn describe(ty: &ir::Type) -> String {
    let elem = match ty.elem {
        Elem::Scalar(s) => s.triton_name().to_string(),
        Elem::Ptr(s) => format!("a pointer to {}", s.triton_name()),
    };
    if ty.is_tile() {
        format!("a {:?} tile of {elem}", ty.shape)
    } else {
        elem
    }
}
