//! Semantic checks on a deserialized workspace: expressions parse and use only known names,
//! files exist, buffers and versions resolve. Every problem is collected, not just the first,
//! and each one points at its field in the YAML.

use super::dtype::{DType, Init};
use super::formula::Formula;
use super::raw::{
    Dim, Lit, RawBuffer, RawLaunch, RawReference, RawTolerance, RawVersion, RawWorkspace,
};
use super::spans::SpanIndex;
use super::{
    Arg, Buffer, Launch, ProblemSize, Reference, SourceKind, Tolerance, Version, Workspace,
    WorkspaceError,
};

#[path = "validate_sweep.rs"]
mod sweep;
#[path = "validate_tile.rs"]
mod tile;
use super::file_problem::{file_problem, FileProblem};
use crate::common::arch::Arch;
use crate::diag::Diagnostic;
use indexmap::IndexMap;
use serde_norway::Value;
use std::path::{Path, PathBuf};

struct Validator<'a> {
    path: &'a Path,
    dir: PathBuf,
    spans: &'a SpanIndex,
    diags: Vec<Diagnostic>,
}

pub(super) fn validate(
    path: &Path,
    raw: RawWorkspace,
    spans: SpanIndex,
) -> Result<Workspace, WorkspaceError> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut v = Validator {
        path,
        dir,
        spans: &spans,
        diags: Vec::new(),
    };

    let arch = raw.arch.as_deref().and_then(|a| match Arch::parse(a) {
        Ok(arch) => Some(arch),
        Err(msg) => v.err("arch", msg),
    });
    let sizes = v.sizes(&raw.sizes);
    // Names come from the file even where a value failed, so one bad size is one error.
    let size_vars: Vec<String> = raw
        .sizes
        .first()
        .map(|m| {
            m.keys()
                .filter(|k| *k != "name" && *k != "emulate")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let vars: Vec<&str> = size_vars.iter().map(String::as_str).collect();

    let mut buffers = Vec::new();
    for (name, rb) in &raw.buffers {
        if let Some(b) = v.buffer(&format!("buffers.{name}"), name, rb, None, &vars) {
            buffers.push(b);
        }
    }
    if !raw.buffers.is_empty() && !buffers.iter().any(|b| b.output) && v.diags.is_empty() {
        v.err::<()>(
            "buffers",
            "no buffer is marked `output: true`: kwb needs at least one output to check".into(),
        );
    }

    let mut with_buffers = vars.clone();
    with_buffers.extend(buffers.iter().map(|b| b.name.as_str()));
    let bytes = raw
        .bytes
        .as_ref()
        .and_then(|l| v.formula("bytes", l, &with_buffers));
    let flops = raw
        .flops
        .as_ref()
        .and_then(|l| v.formula("flops", l, &with_buffers));
    let tolerance = raw.tolerance.and_then(|t| v.tolerance("tolerance", t));

    let mut versions = Vec::new();
    let mut sweeps = Vec::new();
    for (name, rv) in &raw.versions {
        if rv.sweep.is_empty() {
            if let Some(ver) = v.version(name, rv, &raw, &buffers, &vars) {
                versions.push(ver);
            }
        } else if let Some((sweep, configs)) = v.swept_version(name, rv, &raw, &buffers, &vars) {
            sweeps.push(sweep);
            versions.extend(configs);
        }
    }
    if raw.versions.is_empty() {
        v.err::<()>("versions", "the workspace lists no versions".into());
    }
    let reference = match &raw.reference {
        Some(r) => v.reference(r, &raw, &vars, &versions),
        None => Reference::None,
    };

    if v.diags.iter().any(Diagnostic::is_error) {
        return Err(WorkspaceError {
            diagnostics: v.diags,
        });
    }
    Ok(Workspace {
        path: path.to_path_buf(),
        name: raw.name.unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        description: raw.description,
        arch,
        sizes,
        buffers,
        reference,
        tolerance,
        bytes,
        flops,
        versions,
        sweeps,
        spans,
    })
}

impl Validator<'_> {
    /// Records an error at `field` and returns `None`, so callers can write `return v.err(..)`.
    fn err<T>(&mut self, field: &str, message: String) -> Option<T> {
        let mut d = Diagnostic::error(message).in_file(self.path).field(field);
        if let Some(pos) = self.spans.find(field) {
            d = d.at(pos.line, Some(pos.column));
        }
        self.diags.push(d);
        None
    }

    fn formula(&mut self, field: &str, lit: &Lit, known: &[&str]) -> Option<Formula> {
        match Formula::parse(&lit.0) {
            Ok(f) => {
                let unknown: Vec<String> = f
                    .free_variables()
                    .into_iter()
                    .filter(|n| !known.contains(&n.as_str()))
                    .collect();
                if unknown.is_empty() {
                    Some(f)
                } else {
                    let list = if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    };
                    self.err(
                        field,
                        format!(
                            "unknown name `{}` in `{}`; expected one of: {list}",
                            unknown.join("`, `"),
                            lit.0
                        ),
                    )
                }
            }
            Err(msg) => self.err(field, format!("bad expression: {msg}")),
        }
    }

    fn sizes(&mut self, raw: &[IndexMap<String, Lit>]) -> Vec<ProblemSize> {
        if raw.is_empty() {
            self.err::<()>(
                "sizes",
                "the workspace lists no problem sizes; expected e.g. `sizes: [{N: 1Mi}]`".into(),
            );
        }
        let mut out: Vec<ProblemSize> = Vec::new();
        let mut first_vars: Option<Vec<String>> = None;
        for (i, map) in raw.iter().enumerate() {
            let field = format!("sizes[{i}]");
            let mut vars = Vec::new();
            let mut name = None;
            let mut emulate = false;
            let mut zeros = Vec::new();
            for (k, lit) in map {
                if k == "name" {
                    name = Some(lit.0.clone());
                    continue;
                }
                if k == "emulate" {
                    match lit.0.as_str() {
                        "true" => emulate = true,
                        "false" => {}
                        other => {
                            self.err::<()>(
                                &format!("{field}.emulate"),
                                format!("`emulate` is true or false, got `{other}`"),
                            );
                        }
                    }
                    continue;
                }
                if !is_identifier(k) {
                    self.err::<()>(
                        &format!("{field}.{k}"),
                        format!("`{k}` is not a valid size variable name"),
                    );
                    continue;
                }
                let f = format!("{field}.{k}");
                let Some(formula) = self.formula(&f, lit, &[]) else {
                    continue;
                };
                match formula.eval_int(&super::SizeEnv::vars(&[])) {
                    Ok(0) => {
                        zeros.push(f);
                        vars.push((k.clone(), 0));
                    }
                    Ok(n) if n > 0 => vars.push((k.clone(), n)),
                    Ok(n) => {
                        self.err::<()>(&f, format!("a size must not be negative, got {n}"));
                    }
                    Err(e) => {
                        self.err::<()>(&f, e);
                    }
                }
            }
            let names: Vec<String> = vars.iter().map(|(n, _)| n.clone()).collect();
            match &first_vars {
                None => first_vars = Some(names),
                Some(first)
                    if *first != names
                        && vars.len()
                            == map.len()
                                - usize::from(name.is_some())
                                - usize::from(map.contains_key("emulate")) =>
                {
                    self.err::<()>(
                        &field,
                        format!(
                            "every size must set the same variables ({}), this one sets: {}",
                            first.join(", "),
                            names.join(", ")
                        ),
                    );
                }
                _ => {}
            }
            let name = name.unwrap_or_else(|| {
                vars.iter()
                    .map(|(k, _)| format!("{k}={}", raw_text(map, k)))
                    .collect::<Vec<_>>()
                    .join(",")
            });
            // A dimension of 0 would launch nothing and check nothing; said at the variable,
            // with the size's name, once the name is known.
            for f in zeros {
                let var = &f[field.len() + 1..];
                self.err::<()>(
                    &f,
                    format!(
                        "size `{name}`: `{var}` is 0; every dimension of a size must be at least 1"
                    ),
                );
            }
            if out.iter().any(|s| s.name == name) {
                self.err::<()>(&field, format!("duplicate size `{name}`"));
            }
            out.push(ProblemSize {
                name,
                vars,
                emulate,
            });
        }
        out
    }

    fn buffer(
        &mut self,
        field: &str,
        name: &str,
        rb: &RawBuffer,
        base: Option<&Buffer>,
        vars: &[&str],
    ) -> Option<Buffer> {
        if !is_identifier(name) {
            return self.err(
                field,
                format!("`{name}` is not a valid buffer name (letters, digits and _)"),
            );
        }
        let dtype = match (&rb.dtype, base) {
            (Some(d), _) => match DType::parse(d) {
                Some(d) => d,
                None => {
                    return self.err(
                        &format!("{field}.dtype"),
                        format!("unknown dtype `{d}`; expected one of: {}", dtype_names()),
                    )
                }
            },
            (None, Some(b)) => b.dtype,
            (None, None) => {
                return self.err(
                    field,
                    format!("buffer `{name}` needs a `dtype` ({})", dtype_names()),
                )
            }
        };
        let shape = match (&rb.shape, base) {
            (Some(dims), _) => {
                if dims.is_empty() {
                    return self.err(
                        &format!("{field}.shape"),
                        "a shape needs at least one dimension, e.g. `[N]`".into(),
                    );
                }
                let mut out = Vec::new();
                for (i, d) in dims.iter().enumerate() {
                    out.push(self.formula(&format!("{field}.shape[{i}]"), d, vars)?);
                }
                out
            }
            (None, Some(b)) => b.shape.clone(),
            (None, None) => {
                return self.err(
                    field,
                    format!("buffer `{name}` needs a `shape`, e.g. `[N]`"),
                )
            }
        };
        let init = match (&rb.init, base) {
            (Some(v), _) => self.init(&format!("{field}.init"), v)?,
            (None, Some(b)) => b.init.clone(),
            (None, None) => Init::DEFAULT,
        };
        let output = rb.output.or(base.map(|b| b.output)).unwrap_or(false);
        let init_given = rb.init.is_some() || base.is_some_and(|b| b.init_given);
        Some(Buffer {
            name: name.to_string(),
            dtype,
            shape,
            init,
            output,
            init_given,
        })
    }

    fn init(&mut self, field: &str, v: &Value) -> Option<Init> {
        let expected = format!("expected one of {}, e.g. `randn`, `{{uniform: [-1, 1]}}`, `{{constant: 0.5}}`, `{{npy: data/x.npy}}`", Init::NAMES);
        let (kind, arg) = match v {
            Value::String(s) => (s.as_str(), None),
            Value::Mapping(m) if m.len() == 1 => {
                let (k, a) = m.iter().next()?;
                match k.as_str() {
                    Some(k) => (k, Some(a)),
                    None => return self.err(field, expected),
                }
            }
            _ => return self.err(field, expected),
        };
        let num = |v: &Value| v.as_f64();
        let init = match (kind, arg) {
            ("randn", None) | ("randn", Some(Value::Null)) => Init::DEFAULT,
            ("randn", Some(Value::Mapping(m))) => {
                let get = |k: &str| m.get(k).map(num);
                match (
                    get("mean").unwrap_or(Some(0.0)),
                    get("std").unwrap_or(Some(1.0)),
                    m.len() <= 2,
                ) {
                    (Some(mean), Some(std), true) => Init::Randn { mean, std },
                    _ => {
                        return self.err(field, "randn takes `{mean: M, std: S}` (numbers)".into())
                    }
                }
            }
            ("uniform", None) | ("uniform", Some(Value::Null)) => Init::Uniform {
                low: -1.0,
                high: 1.0,
            },
            ("uniform", Some(Value::Sequence(s))) if s.len() == 2 => match (num(&s[0]), num(&s[1]))
            {
                (Some(low), Some(high)) if low < high => Init::Uniform { low, high },
                _ => return self.err(field, "uniform takes `[low, high]` with low < high".into()),
            },
            ("arange", None) => Init::Arange,
            ("zeros", None) => Init::Constant { value: 0.0 },
            ("constant", Some(a)) => match num(a) {
                Some(value) => Init::Constant { value },
                None => {
                    return self.err(
                        field,
                        "constant takes a number, e.g. `{constant: 0.5}`".into(),
                    )
                }
            },
            ("npy", Some(Value::String(p))) => {
                let path = normalize(&self.dir.join(p));
                if let Some(problem) = file_problem(&path) {
                    return self.err(field, npy_problem(&path, problem));
                }
                Init::Npy { path }
            }
            _ => return self.err(field, format!("bad init `{kind}`: {expected}")),
        };
        Some(init)
    }

    fn tolerance(&mut self, field: &str, t: RawTolerance) -> Option<Tolerance> {
        for (k, v) in [("rtol", t.rtol), ("atol", t.atol)] {
            if let Some(v) = v {
                if !(v >= 0.0 && v.is_finite()) {
                    return self.err(
                        &format!("{field}.{k}"),
                        format!("{k} must be a finite number >= 0, got {v}"),
                    );
                }
            }
        }
        Some(Tolerance {
            rtol: t.rtol,
            atol: t.atol,
        })
    }

    fn version(
        &mut self,
        name: &str,
        rv: &RawVersion,
        ws: &RawWorkspace,
        buffers: &[Buffer],
        vars: &[&str],
    ) -> Option<Version> {
        let field = format!("versions.{name}");
        let errors_before = self.diags.len();
        let file = normalize(&self.dir.join(&rv.file));
        let problem = file_problem(&file).map(|p| match p {
            FileProblem::NotFound => format!(
                "kernel file not found: {} (paths are relative to the workspace's folder)",
                file.display()
            ),
            other => format!("kernel file {} {other}", file.display()),
        });
        if let Some(message) = problem {
            self.err::<()>(&format!("{field}.file"), message);
        }
        let mut own = buffers.to_vec();
        for (bname, rb) in &rv.buffers {
            let bf = format!("{field}.buffers.{bname}");
            match own.iter().position(|b| &b.name == bname) {
                Some(i) => {
                    if let Some(b) = self.buffer(&bf, bname, rb, Some(&own[i].clone()), vars) {
                        own[i] = b;
                    }
                }
                None => {
                    self.err::<()>(
                        &bf,
                        format!(
                            "no workspace buffer `{bname}` to override; buffers: {}",
                            names(buffers)
                        ),
                    );
                }
            }
        }
        let mut scratch = Vec::new();
        for (sname, rb) in &rv.scratch {
            let sf = format!("{field}.scratch.{sname}");
            if own.iter().any(|b| &b.name == sname) {
                self.err::<()>(
                    &sf,
                    format!("scratch buffer `{sname}` has the name of a workspace buffer"),
                );
            } else if let Some(b) = self.buffer(&sf, sname, rb, None, vars) {
                scratch.push(Buffer { output: false, ..b });
            }
        }
        let kind = SourceKind::of(&file);
        let tile = self.tile_fields(&field, rv, kind, vars);
        let mut launch_vars = vars.to_vec();
        launch_vars.extend(
            (tile.constexprs.iter())
                .filter(|(_, c)| c.formula().is_some())
                .map(|(n, _)| n.as_str()),
        );
        if tile.num_warps.is_some() {
            launch_vars.push("num_warps");
        }
        let vars = &launch_vars[..];
        let single = rv.entry.is_some()
            || rv.grid.is_some()
            || rv.block.is_some()
            || rv.args.is_some()
            || rv.shared.is_some();
        let raw_launches: Vec<(String, RawLaunch)> = match (&rv.launches, single) {
            (Some(_), true) => {
                return self.err(&field, "give either `entry`, `grid`, `block` and `args`, or a list of `launches`, not both".into());
            }
            (Some(ls), false) => {
                if ls.is_empty() {
                    return self.err(&format!("{field}.launches"), "`launches` is empty".into());
                }
                ls.iter()
                    .enumerate()
                    .map(|(i, l)| (format!("{field}.launches[{i}]"), clone_launch(l)))
                    .collect()
            }
            (None, _) => {
                let missing: Vec<&str> = [
                    ("entry", rv.entry.is_none()),
                    ("grid", rv.grid.is_none()),
                    ("block", rv.block.is_none() && !kind.is_tile()),
                    ("args", rv.args.is_none()),
                ]
                .into_iter()
                .filter_map(|(k, m)| m.then_some(k))
                .collect();
                if !missing.is_empty() {
                    return self.err(
                        &field,
                        format!(
                            "version `{name}` is missing `{}` (or give a list of `launches`)",
                            missing.join("`, `")
                        ),
                    );
                }
                vec![(
                    field.clone(),
                    RawLaunch {
                        entry: rv.entry.clone()?,
                        grid: rv.grid.clone()?,
                        block: rv.block.clone().or_else(|| tile.block())?,
                        shared: rv.shared.clone(),
                        args: rv.args.clone()?,
                    },
                )]
            }
        };
        // Names from the file, so a buffer that failed its own checks is not reported again here.
        let buffer_names: Vec<&str> = ws
            .buffers
            .keys()
            .chain(rv.scratch.keys())
            .map(String::as_str)
            .collect();
        let mut launches = Vec::new();
        for (lf, rl) in raw_launches {
            let nones: Vec<usize> = (rl.args.iter().enumerate())
                .filter(|(_, a)| a.0.trim() == "None")
                .map(|(i, _)| i)
                .collect();
            if !kind.is_tile() {
                for i in nones {
                    self.err::<()>(
                        &format!("{lf}.args[{i}]"),
                        "`None` is an argument of tile-language kernels only (Triton specialises it away); a CUDA kernel takes every argument".into(),
                    );
                }
            }
            if let Some(l) = self.launch(&lf, rl, vars, &buffer_names) {
                launches.push(l);
            }
        }
        let mut defines = Vec::new();
        for (k, lit) in ws.defines.iter().chain(&rv.defines) {
            defines.retain(|(d, _): &(String, String)| d != k);
            defines.push((k.clone(), lit.0.clone()));
        }
        let tolerance = rv
            .tolerance
            .and_then(|t| self.tolerance(&format!("{field}.tolerance"), t));
        let baseline = rv.baseline.as_ref().and_then(|b| {
            let us = self.formula(&format!("{field}.baseline.us"), &b.us, vars)?;
            Some(super::Baseline {
                name: b.name.clone(),
                us,
                note: b.note.clone(),
            })
        });
        let triton = rv.triton.as_ref().and_then(|t| {
            let f = format!("{field}.triton");
            if !kind.is_tile() {
                return self.err(
                    &f,
                    "`triton` is for tile-language versions (.tile, .py): it picks the Triton release whose numerics kwb follows".into(),
                );
            }
            match triton_release(&t.0) {
                Some(r) => Some(r),
                None => self.err(
                    &f,
                    format!(
                        "`{}` is not a Triton release kwb knows: give 3.0 or later, as `3.6` or `3.6.0`",
                        t.0
                    ),
                ),
            }
        });
        let python_path = self.python_path(&field, kind, &rv.python_path);
        self.python_globals(&field, kind, &rv.python_globals);
        if self.diags.len() > errors_before {
            return None;
        }
        Some(Version {
            name: name.to_string(),
            description: rv.description.clone(),
            file,
            kind,
            num_warps: tile.num_warps,
            persistent: tile.persistent,
            constexprs: tile.constexprs,
            options: ws
                .options
                .iter()
                .chain(&rv.options)
                .cloned()
                .chain((rv.enable_fp_fusion == Some(false)).then(|| "--fmad=false".to_string()))
                .collect(),
            defines,
            launches,
            buffers: own,
            scratch,
            tolerance,
            field,
            sweep: None,
            baseline,
            triton,
            fp_fusion: rv.enable_fp_fusion != Some(false),
            python_path,
            python_globals: rv.python_globals.clone().into_iter().collect(),
        })
    }

    fn launch(
        &mut self,
        field: &str,
        rl: RawLaunch,
        vars: &[&str],
        buffers: &[&str],
    ) -> Option<Launch> {
        if !is_identifier(&rl.entry) {
            return self.err(
                &format!("{field}.entry"),
                format!("`{}` is not a kernel name", rl.entry),
            );
        }
        let grid = self.dim(&format!("{field}.grid"), &rl.grid, vars);
        let block = self.dim(&format!("{field}.block"), &rl.block, vars);
        let shared = match &rl.shared {
            Some(l) => self.formula(&format!("{field}.shared"), l, vars),
            None => Formula::parse("0").ok(),
        };
        let mut args = Vec::new();
        for (i, a) in rl.args.iter().enumerate() {
            let af = format!("{field}.args[{i}]");
            if buffers.contains(&a.0.trim()) {
                args.push(Arg::Buffer(a.0.trim().to_string()));
            } else if a.0.trim() == "None" {
                args.push(Arg::None);
            } else {
                let mut known = vars.to_vec();
                known.extend_from_slice(buffers);
                let f = self.formula(&af, a, vars);
                if f.is_none() && is_identifier(a.0.trim()) {
                    // Already reported; the list of names is in that message.
                }
                args.push(Arg::Scalar(f?));
            }
        }
        Some(Launch {
            entry: rl.entry,
            grid: grid?,
            block: block?,
            shared: shared?,
            args,
            field: field.to_string(),
        })
    }

    fn dim(&mut self, field: &str, d: &Dim, vars: &[&str]) -> Option<[Formula; 3]> {
        let one = Formula::parse("1").ok()?;
        let mut out = [one.clone(), one.clone(), one];
        for (i, lit) in d.0.iter().enumerate() {
            let f = if d.0.len() == 1 {
                field.to_string()
            } else {
                format!("{field}[{i}]")
            };
            out[i] = self.formula(&f, lit, vars)?;
        }
        Some(out)
    }

    fn reference(
        &mut self,
        r: &RawReference,
        ws: &RawWorkspace,
        vars: &[&str],
        versions: &[Version],
    ) -> Reference {
        let given = [r.expr.is_some(), r.version.is_some(), r.npy.is_some()]
            .iter()
            .filter(|g| **g)
            .count();
        if given != 1 {
            self.err::<()>(
                "reference",
                "give exactly one of `expr` (per output), `version` or `npy` (per output)".into(),
            );
            return Reference::None;
        }
        let is_output = |b: &RawBuffer| b.output == Some(true);
        let outputs: Vec<&str> = ws
            .buffers
            .iter()
            .filter(|(_, b)| is_output(b))
            .map(|(n, _)| n.as_str())
            .collect();
        if let Some(v) = &r.version {
            if ws.versions.get(v).is_some_and(|rv| !rv.sweep.is_empty()) {
                self.err::<()>(
                    "reference.version",
                    format!(
                        "`{v}` is swept; the reference must be one version, e.g. one of its \
                         configurations such as `{}`",
                        versions
                            .iter()
                            .find(|x| x.sweep.as_ref().is_some_and(|s| &s.parent == v))
                            .map_or_else(|| format!("{v}[...]"), |x| x.name.clone())
                    ),
                );
            } else if !versions.iter().any(|x| &x.name == v) {
                self.err::<()>(
                    "reference.version",
                    format!(
                        "no version `{v}`; versions: {}",
                        versions
                            .iter()
                            .map(|x| x.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            return Reference::Version(v.clone());
        }
        let map = r.expr.as_ref().or(r.npy.as_ref());
        let kind = if r.expr.is_some() { "expr" } else { "npy" };
        let Some(map) = map else {
            return Reference::None;
        };
        for o in &outputs {
            if !map.contains_key(*o) {
                self.err::<()>(
                    &format!("reference.{kind}"),
                    format!("output buffer `{o}` has no reference"),
                );
            }
        }
        let mut inputs: Vec<&str> = ws
            .buffers
            .iter()
            .filter(|(_, b)| !is_output(b))
            .map(|(n, _)| n.as_str())
            .collect();
        inputs.extend_from_slice(vars);
        let mut exprs = Vec::new();
        let mut files = Vec::new();
        for (k, src) in map {
            let field = format!("reference.{kind}.{k}");
            if !outputs.contains(&k.as_str()) {
                self.err::<()>(
                    &field,
                    format!(
                        "`{k}` is not an output buffer; outputs: {}",
                        outputs.join(", ")
                    ),
                );
                continue;
            }
            if r.expr.is_some() {
                if let Some(f) = self.formula(&field, &Lit(src.clone()), &inputs) {
                    exprs.push((k.clone(), f));
                }
            } else {
                let path = normalize(&self.dir.join(src));
                match file_problem(&path) {
                    None => files.push((k.clone(), path)),
                    Some(problem) => {
                        self.err::<()>(&field, npy_problem(&path, problem));
                    }
                }
            }
        }
        if r.expr.is_some() {
            Reference::Expr(exprs)
        } else {
            Reference::Npy(files)
        }
    }
}

/// `a/b/../c` → `a/c`, lexically, so paths print the way people write them.
pub(crate) fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn clone_launch(l: &RawLaunch) -> RawLaunch {
    RawLaunch {
        entry: l.entry.clone(),
        grid: l.grid.clone(),
        block: l.block.clone(),
        shared: l.shared.clone(),
        args: l.args.clone(),
    }
}

fn raw_text(map: &IndexMap<String, Lit>, k: &str) -> String {
    map.get(k).map(|l| l.0.clone()).unwrap_or_default()
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn dtype_names() -> String {
    DType::ALL
        .iter()
        .map(|d| d.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn names(buffers: &[Buffer]) -> String {
    buffers
        .iter()
        .map(|b| b.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What is wrong with an `.npy` path, said as the diagnostics say it.
fn npy_problem(path: &Path, problem: FileProblem) -> String {
    match problem {
        FileProblem::NotFound => format!("`.npy` file not found: {}", path.display()),
        other => format!("`.npy` file {} {other}", path.display()),
    }
}

/// `3.6`, `3.6.0` or `3.9.0+git1a2b` as `(3, 6)`; None for anything else, or before 3.0.
pub fn triton_release(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().split(['.', '+']);
    let major: u32 = parts.next()?.parse().ok()?;
    let minor = parts.next()?;
    let digits = minor.len() - minor.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let minor: u32 = minor[..digits].parse().ok()?;
    (major >= 3).then_some((major, minor))
}
