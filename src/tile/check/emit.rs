//! The checker's state for one kernel, and the helpers every check uses to build IR: new
//! variables, statements at the current source position, and the conversions that make
//! operands agree (casts to a dtype, splats and broadcasts to a shape).

use super::units::{Binding, Unit};
use super::value::{default_dtype, show_shape, show_type, Operand, Val};
use crate::diag::Severity;
use crate::tile::ast::Module;
use crate::tile::ir::{self, Const, Elem, Op, Scalar, StmtKind, Type, VarId};
use crate::tile::span::{LineIndex, Loc, Span};
use std::collections::HashMap;

/// A problem found while checking, located by span (converted to a diagnostic at the edge).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Finding {
    /// The file (`units.rs`): 0 is the kernel's.
    pub unit: usize,
    pub severity: Severity,
    pub span: Span,
    pub message: String,
}

/// A `@triton.jit` helper being inlined.
pub(super) struct Frame {
    /// The helper's file and its index among that file's functions.
    pub unit: usize,
    pub func: usize,
    /// The runtime nesting (`if`/loops) at the call: a `return` must be at this depth.
    pub depth: u32,
    pub ret: Option<Val>,
}

/// Everything known while one kernel is specialised.
pub(super) struct Ck<'a> {
    pub src: &'a str,
    pub module: &'a Module,
    pub lines: &'a LineIndex,
    pub findings: Vec<Finding>,
    pub vars: Vec<ir::Var>,
    /// The statement lists being built, innermost last.
    pub blocks: Vec<Vec<ir::Stmt>>,
    /// The source position of the statement being checked.
    pub loc: Loc,
    pub env: HashMap<String, Val>,
    /// Every file taking part (`units.rs`), each file's top-level names, and the file whose
    /// code is being checked (`src`, `module` and `lines` are its).
    pub units: &'a [Unit],
    pub tables: Vec<HashMap<String, Binding>>,
    pub unit: usize,
    /// Names that cannot be used here, and why (assigned in one branch only, …).
    pub gone: HashMap<String, String>,
    /// The current block has ended (a `return`): the statements after it are not checked.
    pub stop: bool,
    /// How many runtime `if`s and loops enclose the current statement.
    pub depth: u32,
    pub frames: Vec<Frame>,
    /// The kernel being checked (index into `module.funcs`).
    pub kernel: usize,
    /// `tl.make_tensor_descriptor` results and the loads through them (`descriptor.rs`).
    pub descriptors: Vec<ir::Descriptor>,
    pub desc_loads: Vec<ir::DescLoad>,
    /// Constants the kernel defines before its first statement, wherever they were asked for
    /// (a block pointer load's descriptor extents: a loop's body then holds no statement of
    /// them that its pipelining would have to place).
    pub prelude: Vec<ir::Stmt>,
    /// Which statements were checked and which left out on purpose (`reached.rs`).
    pub reached: super::reached::Reached,
    /// Module-level values once read, by unit and index in its `module.globals`
    /// (`globals.rs`).
    pub global_cache: HashMap<(usize, usize), Val>,
    /// The module-level values being evaluated (a cycle is an error).
    pub evaluating_globals: Vec<(usize, usize)>,
    /// A parameter's default value is being evaluated: as in Triton, any global may be read.
    pub in_default: bool,
}

impl<'a> Ck<'a> {
    pub fn new(units: &'a [Unit], tables: Vec<HashMap<String, Binding>>, kernel: usize) -> Self {
        Ck {
            src: &units[0].source,
            module: &units[0].module,
            lines: &units[0].lines,
            units,
            tables,
            unit: 0,
            findings: Vec::new(),
            vars: Vec::new(),
            blocks: vec![Vec::new()],
            loc: Loc::default(),
            env: HashMap::new(),
            gone: HashMap::new(),
            stop: false,
            depth: 0,
            frames: Vec::new(),
            kernel,
            descriptors: Vec::new(),
            desc_loads: Vec::new(),
            prelude: Vec::new(),
            reached: Default::default(),
            global_cache: HashMap::new(),
            evaluating_globals: Vec::new(),
            in_default: false,
        }
    }

    pub fn error(&mut self, span: Span, message: impl Into<String>) -> Val {
        self.findings.push(Finding {
            unit: self.unit,
            severity: Severity::Error,
            span,
            message: message.into(),
        });
        Val::Poison
    }

    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.findings.push(Finding {
            unit: self.unit,
            severity: Severity::Warning,
            span,
            message: message.into(),
        });
    }

    /// Makes unit `u` the one whose code is checked; returns the one it was.
    pub fn enter_unit(&mut self, u: usize) -> usize {
        let prev = self.unit;
        let unit = &self.units[u];
        self.unit = u;
        self.src = &unit.source;
        self.module = &unit.module;
        self.lines = &unit.lines;
        prev
    }

    /// The source text of a span (for messages that quote what the user wrote).
    pub fn text(&self, span: Span) -> &'a str {
        self.src
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    pub fn ty(&self, v: VarId) -> &Type {
        &self.vars[v.0 as usize].ty
    }

    pub fn new_var(&mut self, ty: Type, name: Option<String>) -> VarId {
        self.vars.push(ir::Var { ty, name });
        VarId(self.vars.len() as u32 - 1)
    }

    /// Gives an unnamed variable the source name it is bound to.
    pub fn name_var(&mut self, v: VarId, name: &str) {
        let var = &mut self.vars[v.0 as usize];
        if var.name.is_none() {
            var.name = Some(name.to_string());
        }
    }

    pub fn push(&mut self, kind: StmtKind) {
        let loc = self.loc;
        if let Some(b) = self.blocks.last_mut() {
            b.push(ir::Stmt { kind, loc });
        }
    }

    /// `tmp = op` with a fresh temporary of type `ty`.
    pub fn emit(&mut self, ty: Type, op: Op) -> VarId {
        let dst = self.new_var(ty, None);
        self.push(StmtKind::Assign { dst, op });
        dst
    }

    /// The scalar dtype of a runtime value, when it is a number (not a pointer).
    pub fn scalar_of(&self, v: VarId) -> Option<Scalar> {
        match self.ty(v).elem {
            Elem::Scalar(s) => Some(s),
            Elem::Ptr(_) => None,
        }
    }

    pub fn shape_of(&self, v: &Val) -> Vec<u32> {
        match v {
            Val::Var(x) => self.ty(*x).shape.clone(),
            _ => Vec::new(),
        }
    }

    /// An operand's dtype for promotion, or `None` when it is not a number.
    pub fn operand(&self, v: &Val) -> Option<Operand> {
        match v {
            Val::Var(x) => self.scalar_of(*x).map(|s| Operand {
                dtype: s,
                weak: false,
                fits_i32: true,
            }),
            Val::Int(i) => Some(Operand {
                dtype: Scalar::I32,
                weak: true,
                fits_i32: i32::try_from(*i).is_ok(),
            }),
            _ => default_dtype(v).map(|s| Operand {
                dtype: s,
                weak: true,
                fits_i32: true,
            }),
        }
    }

    /// A compile-time number as an IR constant of dtype `s`.
    pub fn const_as(v: &Val, s: Scalar) -> Const {
        let f = match v {
            Val::Int(i) => *i as f64,
            Val::Float(f) => *f,
            Val::Bool(b) => f64::from(u8::from(*b)),
            _ => 0.0,
        };
        if s == Scalar::I1 {
            return Const::Bool(f != 0.0);
        }
        if s.is_float() {
            return Const::Float(f);
        }
        match v {
            Val::Int(i) => Const::Int(*i),
            Val::Bool(b) => Const::Int(i64::from(*b)),
            // Float to int truncates, saturating (as `as` does).
            _ => Const::Int(f as i64),
        }
    }

    /// `v` converted to dtype `s` (its shape kept).
    pub fn cast(&mut self, v: VarId, s: Scalar) -> VarId {
        let ty = self.ty(v).clone();
        if ty.elem == Elem::Scalar(s) {
            return v;
        }
        self.emit(
            Type {
                elem: Elem::Scalar(s),
                shape: ty.shape,
            },
            Op::Cast(v),
        )
    }

    /// `v` splatted or broadcast to `shape` (which the caller has checked it broadcasts to).
    pub fn bcast(&mut self, v: VarId, shape: &[u32]) -> VarId {
        let ty = self.ty(v).clone();
        if ty.shape == shape {
            return v;
        }
        if ty.shape.is_empty() {
            return self.emit(
                Type {
                    elem: ty.elem,
                    shape: shape.to_vec(),
                },
                Op::Splat(v),
            );
        }
        let mut cur = v;
        let mut cur_shape = ty.shape.clone();
        while cur_shape.len() < shape.len() {
            cur_shape.insert(0, 1);
            cur = self.emit(
                Type {
                    elem: ty.elem,
                    shape: cur_shape.clone(),
                },
                Op::ExpandDims { src: cur, axis: 0 },
            );
        }
        if cur_shape == shape {
            return cur;
        }
        self.emit(
            Type {
                elem: ty.elem,
                shape: shape.to_vec(),
            },
            Op::Broadcast(cur),
        )
    }

    /// A number (compile-time or runtime) as a variable of dtype `s`, its shape kept.
    pub fn as_dtype(&mut self, v: &Val, s: Scalar) -> Option<VarId> {
        match v {
            Val::Var(x) => {
                self.scalar_of(*x)?;
                Some(self.cast(*x, s))
            }
            Val::Int(_) | Val::Float(_) | Val::Bool(_) => {
                Some(self.emit(Type::scalar(s), Op::Const(Self::const_as(v, s))))
            }
            _ => None,
        }
    }

    /// A number (compile-time or runtime) as a variable of dtype `s` and shape `shape` (which
    /// the caller has checked it broadcasts to).
    pub fn operand_as(&mut self, v: &Val, s: Scalar, shape: &[u32]) -> Option<VarId> {
        let x = self.as_dtype(v, s)?;
        Some(self.bcast(x, shape))
    }

    /// A value converted to exactly type `ty` (a number to a scalar or tile of `ty`'s dtype),
    /// or `None` when it cannot be without an explicit conversion (a different runtime type).
    pub fn coerce_to(&mut self, v: &Val, ty: &Type) -> Option<VarId> {
        match v {
            Val::Var(x) if self.ty(*x) == ty => Some(*x),
            Val::Var(_) => None,
            _ => match ty.elem {
                Elem::Scalar(s) => self.operand_as(v, s, &ty.shape),
                Elem::Ptr(_) => None,
            },
        }
    }

    /// The numpy broadcast of two shapes, or an error showing both.
    pub fn broadcast_shapes(&mut self, a: &[u32], b: &[u32], span: Span) -> Option<Vec<u32>> {
        match broadcast(a, b) {
            Some(s) => Some(s),
            None => {
                self.error(
                    span,
                    format!("cannot broadcast {} with {}", show_shape(a), show_shape(b)),
                );
                None
            }
        }
    }

    pub fn show(&self, v: &Val) -> String {
        match v {
            Val::Var(x) => a_type(self.ty(*x)),
            other => other.describe(),
        }
    }
}

/// A type with its article: "an int32[128]", "a float16".
pub(super) fn a_type(t: &Type) -> String {
    let s = show_type(t);
    if s.starts_with('i') {
        format!("an {s}")
    } else {
        format!("a {s}")
    }
}

/// Numpy's broadcast of two shapes (trailing dimensions aligned; 1 stretches).
pub(super) fn broadcast(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        *o = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::broadcast;

    #[test]
    fn numpy_broadcasting() {
        assert_eq!(broadcast(&[], &[4]), Some(vec![4]));
        assert_eq!(broadcast(&[4, 1], &[1, 8]), Some(vec![4, 8]));
        assert_eq!(broadcast(&[8], &[4, 1]), Some(vec![4, 8]));
        assert_eq!(broadcast(&[64], &[128]), None);
    }
}
