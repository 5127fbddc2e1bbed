//! The checker: a parsed file and one [`KernelRequest`] in, one typed [`ir::Kernel`] out. It
//! binds the launch arguments and constexprs to the kernel's parameters (as Triton's JIT
//! specialises), resolves names, folds constexprs, promotes dtypes, broadcasts shapes and
//! inlines calls to the file's other `@triton.jit` functions, reporting every error it finds
//! (a failed expression is poisoned so it does not cascade).

mod block_ptr;
mod block_ptr_access;
mod builtins;
mod carry;
mod descriptor;
mod dot;
mod dtype_attr;
mod elementwise;
mod emit;
mod expr;
mod flatten;
mod fold;
mod globals;
mod libdevice;
mod loops;
mod memory;
mod names;
mod ops;
mod python;
mod random;
mod reached;
mod rearrange;
mod scan;
mod shape;
mod sort;
mod standard;
mod stmt;
mod units;
mod value;
mod window;

#[cfg(test)]
mod tests;

use super::ast::{ExprKind, FuncDef};
use super::parse::{self, FileKind, ParseError};
use super::span::{LineIndex, Span};
use super::{ir, ArgKind, ConstValue, KernelRequest, KernelSignature, ParamSig};
use crate::diag::{Diagnostic, Severity};
use emit::{Ck, Finding, Frame};
use expr::Args;
use std::collections::HashMap;
use std::path::Path;
use value::Val;

/// Checks and specialises each requested kernel of `source`; the kernels come back in request
/// order, with every diagnostic (errors and warnings) found on the way.
pub fn check(
    path: &Path,
    source: &str,
    requests: &[KernelRequest],
) -> (Vec<ir::Kernel>, Vec<Diagnostic>) {
    let env = super::PythonEnv::default();
    let (kernels, diagnostics, _) = check_with_imports(path, source, requests, &env);
    (kernels, diagnostics)
}

/// [`check`], and the other files the kernels' file imports from (read for this check: a
/// change to one of them changes the kernels). Absolute imports are also looked for in
/// `env.path` (after the file's own folders, before `$PYTHONPATH`'s), and `env.globals`
/// replace the file's own bindings of their names.
pub fn check_with_imports(
    path: &Path,
    source: &str,
    requests: &[KernelRequest],
    env: &super::PythonEnv,
) -> (Vec<ir::Kernel>, Vec<Diagnostic>, Vec<std::path::PathBuf>) {
    let units = units::load(path, source, &env.path);
    let mut tables = units::tables(&units);
    units::inject(&mut tables[0], &env.globals);
    let mut findings: Vec<Finding> = units[0].parse_errors.iter().cloned().map(finding).collect();
    let mut kernels = Vec::new();
    for req in requests {
        let (k, f) = check_kernel(&units, &tables, req);
        findings.extend(f);
        kernels.extend(k);
    }
    let mut out = Vec::new();
    for (i, u) in units.iter().enumerate() {
        let mine: Vec<Finding> = findings.iter().filter(|f| f.unit == i).cloned().collect();
        if !mine.is_empty() {
            out.extend(diagnostics(&u.path, &u.source, &u.lines, mine));
        }
    }
    let files = units.iter().skip(1).map(|u| u.path.clone()).collect();
    (kernels, out, files)
}

/// The `@triton.jit` kernels of `source` and their parameters.
pub fn signatures(path: &Path, source: &str) -> Result<Vec<KernelSignature>, Vec<Diagnostic>> {
    let lines = LineIndex::new(source);
    let (module, errors) = parse::parse(source, FileKind::of(path));
    if !errors.is_empty() {
        let f = errors.into_iter().map(finding).collect();
        return Err(diagnostics(path, source, &lines, f));
    }
    // A call is the name followed by `(` in another function's text (a word of its own).
    let calls = |caller: &crate::tile::ast::FuncDef, name: &str| {
        let body = source
            .get(caller.span.start as usize..caller.span.end as usize)
            .unwrap_or("");
        body.match_indices(name).any(|(at, _)| {
            let before = body[..at].chars().next_back();
            let after = body[at + name.len()..].trim_start().chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                && after == Some('(')
        })
    };
    Ok(module
        .funcs
        .iter()
        .map(|f| KernelSignature {
            called: (module.funcs.iter())
                .any(|g| g.name.name != f.name.name && calls(g, &f.name.name)),
            name: f.name.name.clone(),
            params: f
                .params
                .iter()
                .map(|p| ParamSig {
                    name: p.name.name.clone(),
                    constexpr: p.constexpr,
                    has_default: p.default.is_some(),
                })
                .collect(),
            line: lines.loc(source, f.def_span.start).line,
        })
        .collect())
}

fn finding(e: ParseError) -> Finding {
    Finding {
        unit: 0,
        severity: Severity::Error,
        span: e.span,
        message: e.message,
    }
}

/// Findings → diagnostics with file, line and column, in source order, without repeats (a
/// kernel requested twice reports its problems once).
fn diagnostics(
    path: &Path,
    source: &str,
    lines: &LineIndex,
    mut f: Vec<Finding>,
) -> Vec<Diagnostic> {
    f.sort_by_key(|x| x.span.start);
    let mut out: Vec<Diagnostic> = Vec::new();
    for x in f {
        let loc = lines.loc(source, x.span.start);
        let d = match x.severity {
            Severity::Error => Diagnostic::error(x.message),
            _ => Diagnostic::warning(x.message),
        }
        .in_file(path)
        .at(loc.line, Some(loc.col));
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

fn check_kernel(
    units: &[units::Unit],
    tables: &[HashMap<String, units::Binding>],
    req: &KernelRequest,
) -> (Option<ir::Kernel>, Vec<Finding>) {
    let (path, source, lines, module) = (
        &units[0].path,
        units[0].source.as_str(),
        &units[0].lines,
        &units[0].module,
    );
    let Some(idx) = module.funcs.iter().position(|f| f.name.name == req.name) else {
        let names: Vec<&str> = module.funcs.iter().map(|f| f.name.name.as_str()).collect();
        let msg = match names::suggest(&req.name, names.iter().copied()) {
            Some(s) => format!(
                "no `@triton.jit` function `{}` in this file; did you mean `{s}`?",
                req.name
            ),
            None if names.is_empty() => format!(
                "no `@triton.jit` function `{}` in this file (it has none)",
                req.name
            ),
            None => format!(
                "no `@triton.jit` function `{}` in this file (its kernels: {})",
                req.name,
                names.join(", ")
            ),
        };
        let f = Finding {
            unit: 0,
            severity: Severity::Error,
            span: Span::default(),
            message: msg,
        };
        return (None, vec![f]);
    };
    let func = &module.funcs[idx];
    if func.has_errors {
        return (None, Vec::new());
    }
    let mut ck = Ck::new(units, tables.to_vec(), idx);
    ck.loc = lines.loc(source, func.def_span.start);
    let params = ck.bind_kernel(func, req);
    ck.stmts(&func.body);
    ck.every_statement_reached(&func.body);
    let mut body = std::mem::take(&mut ck.prelude);
    body.extend(ck.blocks.pop().unwrap_or_default());
    let kernel = ir::Kernel {
        name: req.name.clone(),
        file: path.clone(),
        params,
        vars: std::mem::take(&mut ck.vars),
        body,
        num_warps: req.num_warps,
        sums: req.sums,
        loc: lines.loc(source, func.def_span.start),
        descriptors: std::mem::take(&mut ck.descriptors),
        desc_loads: std::mem::take(&mut ck.desc_loads),
        block_misses: Vec::new(),
    };
    (Some(kernel), ck.findings)
}

/// Whether the kernel's `@triton.jit(do_not_specialize=[...])` names parameter `name` (by
/// name, or by its index among all parameters, as Triton accepts both): kwb then assumes
/// nothing of its value (neither that it is 1 nor what divides it).
fn do_not_specialize(func: &FuncDef, name: &str) -> bool {
    let index = func.params.iter().position(|p| p.name.name == name);
    func.decorators.iter().any(|d| {
        let ExprKind::Call { kwargs, .. } = &d.kind else {
            return false;
        };
        kwargs
            .iter()
            .filter(|k| k.name.name == "do_not_specialize")
            .any(|k| match &k.value.kind {
                ExprKind::List(items) | ExprKind::Tuple(items) => {
                    items.iter().any(|e| match &e.kind {
                        ExprKind::Str(s) => s == name,
                        ExprKind::Int(i) => {
                            index.is_some_and(|x| usize::try_from(*i).ok() == Some(x))
                        }
                        _ => false,
                    })
                }
                _ => false,
            })
    })
}

/// The type of a launched parameter bound to an argument of `kind`, with the largest power of
/// two known to divide it and whether it is known non-negative; `None` for a `None` argument.
fn launched_type(kind: &ArgKind) -> Option<(ir::Type, u64, bool)> {
    Some(match kind {
        ArgKind::Pointer(dt) => (
            ir::Type {
                elem: ir::Elem::Ptr(ir::Scalar::from_dtype(*dt)),
                shape: Vec::new(),
            },
            16,
            true,
        ),
        ArgKind::Int {
            fits_i32,
            divisibility,
            non_negative,
            ..
        } => (
            ir::Type::scalar(if *fits_i32 {
                ir::Scalar::I32
            } else {
                ir::Scalar::I64
            }),
            *divisibility,
            *non_negative,
        ),
        ArgKind::Float => (ir::Type::scalar(ir::Scalar::F32), 1, false),
        ArgKind::None => return None,
    })
}

impl Ck<'_> {
    /// Binds launch arguments to the non-constexpr parameters in order, and constexprs by name;
    /// returns the launched parameters.
    fn bind_kernel(&mut self, func: &FuncDef, req: &KernelRequest) -> Vec<ir::Param> {
        let kname = &func.name.name;
        let at = func.name.span;
        let launched: Vec<&str> = func
            .params
            .iter()
            .filter(|p| !p.constexpr)
            .map(|p| p.name.name.as_str())
            .collect();
        let required = func
            .params
            .iter()
            .filter(|p| !p.constexpr && p.default.is_none())
            .count();
        if req.args.len() < required || req.args.len() > launched.len() {
            let takes = if required == launched.len() {
                format!("{required}")
            } else {
                format!("{required} to {}", launched.len())
            };
            self.error(
                at,
                format!(
                    "kernel `{kname}` takes {takes} launch argument(s) ({}), but the workspace passes {}",
                    launched.join(", "),
                    req.args.len()
                ),
            );
        }
        for (name, _) in &req.constexprs {
            match func.params.iter().find(|p| p.name.name == *name) {
                Some(p) if !p.constexpr => {
                    self.error(at, format!("`{name}` is a launch parameter of kernel `{kname}`, not a `tl.constexpr`; pass it in `args`"));
                }
                Some(_) => {}
                None => {
                    let cs: Vec<&str> = func
                        .params
                        .iter()
                        .filter(|p| p.constexpr)
                        .map(|p| p.name.name.as_str())
                        .collect();
                    let msg = match names::suggest(name, cs.iter().copied()) {
                        Some(s) => format!("kernel `{kname}` has no constexpr parameter `{name}`; did you mean `{s}`?"),
                        None if cs.is_empty() => format!("kernel `{kname}` has no constexpr parameter `{name}` (it has no constexprs)"),
                        None => format!("kernel `{kname}` has no constexpr parameter `{name}` (its constexprs: {})", cs.join(", ")),
                    };
                    self.error(at, msg);
                }
            }
        }
        let mut params = Vec::new();
        let mut args = req.args.iter();
        for p in &func.params {
            let pname = &p.name.name;
            let v = if p.constexpr {
                let given = req
                    .constexprs
                    .iter()
                    .find(|(n, _)| n == pname)
                    .map(|(_, v)| v);
                let default = p.default.as_ref().map(|d| self.eval_default(d));
                match (given, default) {
                    (Some(g), d) => {
                        let v = match g {
                            ConstValue::Int(i) => Val::Int(*i),
                            ConstValue::Float(f) => Val::Float(*f),
                            ConstValue::Bool(b) => Val::Bool(*b),
                            ConstValue::Str(s) => Val::Str(s.clone()),
                            ConstValue::DType(d) => Val::DType(*d),
                            ConstValue::None => Val::None,
                        };
                        let kind = |v: &Val| match v {
                            Val::Int(_) => Some("an int"),
                            Val::Float(_) => Some("a float"),
                            Val::Bool(_) => Some("a bool"),
                            Val::Str(_) => Some("a string"),
                            Val::DType(_) => Some("a dtype"),
                            _ => None,
                        };
                        if let Some(d) = &d {
                            if let (Some(want), Some(got)) = (kind(d), kind(&v)) {
                                if want != got && !(want == "a float" && got == "an int") {
                                    let shown = g.python();
                                    self.error(p.name.span, format!("constexpr `{pname}` of kernel `{kname}` takes {want} (its default is `{}`), but the workspace gives {got}, `{shown}`", self.text(p.default.as_ref().map_or(at, |e| e.span))));
                                }
                            }
                        }
                        v
                    }
                    (None, Some(d)) => d,
                    (None, None) => self.error(
                        p.name.span,
                        format!("kernel `{kname}` needs a value for its constexpr `{pname}`; give it in the workspace's `constexprs` (e.g. `constexprs: {{{pname}: 128}}`)"),
                    ),
                }
            } else {
                match args.next() {
                    Some(kind) => {
                        let Some((ty, div, non_negative)) = launched_type(kind) else {
                            // `None`: a constexpr `None`, not passed at launch.
                            self.env.insert(pname.clone(), Val::None);
                            continue;
                        };
                        let pinned = !do_not_specialize(func, pname);
                        let (div, non_negative) = if pinned {
                            (div, non_negative)
                        } else {
                            (1, false)
                        };
                        let var = self.new_var(ty, Some(pname.clone()));
                        params.push(ir::Param {
                            name: pname.clone(),
                            var,
                            divisibility: div,
                            non_negative,
                        });
                        match kind {
                            // Triton's specialisation of an integer equal to 1.
                            ArgKind::Int { one: true, .. } if pinned => Val::Int(1),
                            _ => Val::Var(var),
                        }
                    }
                    None => match &p.default {
                        Some(d) => self.eval_default(d),
                        None => Val::Poison,
                    },
                }
            };
            self.env.insert(pname.clone(), v);
        }
        params
    }

    /// A parameter's default value: Triton lets it read any global.
    fn eval_default(&mut self, d: &crate::tile::ast::Expr) -> Val {
        let saved = std::mem::replace(&mut self.in_default, true);
        let v = self.eval(d);
        self.in_default = saved;
        v
    }

    /// A call to another `@triton.jit` function of the file, inlined.
    pub fn inline_call(&mut self, idx: usize, a: Args) -> Val {
        let module = self.module;
        let Some(func) = module.funcs.get(idx) else {
            return Val::Poison;
        };
        let fname = &func.name.name;
        if (self.unit == 0 && idx == self.kernel)
            || self
                .frames
                .iter()
                .any(|f| (f.unit, f.func) == (self.unit, idx))
        {
            return self.error(a.span, format!("`{fname}` calls itself (directly or through other functions); recursion cannot be inlined"));
        }
        if func.has_errors {
            if self.unit != 0 {
                // Another file's syntax errors inside this helper: reported in that file.
                let errors: Vec<ParseError> = (self.units[self.unit].parse_errors.iter())
                    .filter(|e| func.span.start <= e.span.start && e.span.start <= func.span.end)
                    .cloned()
                    .collect();
                for e in errors {
                    self.error(e.span, e.message);
                }
            }
            return Val::Poison;
        }
        let names: Vec<&str> = func.params.iter().map(|p| p.name.name.as_str()).collect();
        if a.pos.len() > names.len() {
            return self.error(
                a.span,
                format!(
                    "`{fname}` takes {} argument(s), but {} were given",
                    names.len(),
                    a.pos.len()
                ),
            );
        }
        let mut slots: Vec<Option<Val>> = vec![None; names.len()];
        for (i, arg) in a.pos.into_iter().enumerate() {
            slots[i] = Some(arg.val);
        }
        for (k, arg) in a.kw {
            match names.iter().position(|n| *n == k) {
                Some(i) => slots[i] = Some(arg.val),
                None => {
                    self.error(arg.span, format!("`{fname}` has no parameter `{k}`"));
                    return Val::Poison;
                }
            }
        }
        let saved_env = std::mem::take(&mut self.env);
        let saved_gone = std::mem::take(&mut self.gone);
        let saved_loc = self.loc;
        let mut ok = true;
        let mut bound = HashMap::new();
        for (p, slot) in func.params.iter().zip(slots) {
            let v = match (slot, &p.default) {
                (Some(v), _) => v,
                (None, Some(d)) => self.eval_default(d),
                (None, None) => {
                    self.error(
                        a.span,
                        format!("`{fname}` needs its `{}` argument", p.name.name),
                    );
                    ok = false;
                    Val::Poison
                }
            };
            // A `tl.constexpr` annotation on a called function's parameter does not make a
            // runtime argument an error: Triton binds the values it is given (tutorial 06
            // passes its runtime `N_CTX` to `_attn_fwd_inner`'s constexpr `N_CTX`).
            bound.insert(p.name.name.clone(), v);
        }
        if !ok {
            self.env = saved_env;
            self.gone = saved_gone;
            return Val::Poison;
        }
        if self.frames.len() >= 32 {
            self.env = saved_env;
            self.gone = saved_gone;
            return self.error(a.span, "calls nest more than 32 deep");
        }
        self.env = bound;
        self.frames.push(Frame {
            unit: self.unit,
            func: idx,
            depth: self.depth,
            ret: None,
        });
        self.stmts(&func.body);
        let ret = self.frames.pop().and_then(|f| f.ret).unwrap_or(Val::None);
        self.stop = false;
        self.env = saved_env;
        self.gone = saved_gone;
        self.loc = saved_loc;
        ret
    }
}
