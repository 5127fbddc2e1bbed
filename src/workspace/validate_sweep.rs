//! Checking and expanding a version's `sweep`: each swept name must be one of the version's
//! constexprs or defines, `block` (CUDA), `num_warps` (tile), or a variable its expressions use;
//! every axis needs at least one value. Each combination becomes a copy of the raw version with
//! the values put in, checked like any version, so a sweep's configurations are ordinary
//! versions to everything after loading.

use super::super::formula::{Formula, SizeEnv};
use super::super::raw::{Dim, Lit, RawVersion, RawWorkspace};
use super::super::sweep::{
    combinations, config_name, substitute, suggest, AxisKind, Sweep, SweepAxis, SweepPoint,
};
use super::super::{Buffer, SourceKind, Version};
use super::{normalize, Validator};

/// The most configurations one sweep may expand to.
pub(super) const MAX_CONFIGS: usize = 4096;

impl Validator<'_> {
    /// A swept version: its sweep and one version per configuration, or `None` after errors.
    pub(super) fn swept_version(
        &mut self,
        name: &str,
        rv: &RawVersion,
        ws: &RawWorkspace,
        buffers: &[Buffer],
        vars: &[&str],
    ) -> Option<(Sweep, Vec<Version>)> {
        let field = format!("versions.{name}");
        let kind = SourceKind::of(&normalize(&self.dir.join(&rv.file)));
        let errors_before = self.diags.len();
        let mut axes = Vec::new();
        for (axis, values) in &rv.sweep {
            if let Some(a) = self.axis(&field, axis, values, rv, ws, kind, vars) {
                axes.push(a);
            }
        }
        if self.diags.len() > errors_before {
            return None;
        }
        let lengths: Vec<usize> = axes.iter().map(|a: &SweepAxis| a.values.len()).collect();
        let total = lengths.iter().product::<usize>();
        if total > MAX_CONFIGS {
            return self.err(
                &format!("{field}.sweep"),
                format!("this sweep has {total} configurations; at most {MAX_CONFIGS} are allowed"),
            );
        }
        let context: Vec<(String, Formula)> = rv
            .constexprs
            .iter()
            .filter(|(k, _)| !rv.sweep.contains_key(*k))
            .filter_map(|(k, l)| Formula::parse(&l.0).ok().map(|f| (k.clone(), f)))
            .collect();
        let mut versions = Vec::new();
        for combo in combinations(&lengths) {
            let values: Vec<(String, String)> = axes
                .iter()
                .zip(&combo)
                .map(|(a, &i)| (a.name.clone(), a.values[i].clone()))
                .collect();
            let derived = apply(rv, &axes, &values);
            let before = self.diags.len();
            let ver = self.version(name, &derived, ws, buffers, vars);
            // A problem of the version itself shows once, not once per configuration.
            let new: Vec<_> = self.diags.drain(before..).collect();
            for d in new {
                if !self.diags.contains(&d) {
                    self.diags.push(d);
                }
            }
            let mut ver = ver?;
            ver.name = config_name(name, &values);
            ver.sweep = Some(SweepPoint {
                parent: name.to_string(),
                values,
            });
            versions.push(ver);
        }
        let sweep = Sweep {
            parent: name.to_string(),
            description: rv.description.clone(),
            configs: versions.iter().map(|v| v.name.clone()).collect(),
            axes,
            context,
            field,
        };
        Some((sweep, versions))
    }

    /// One swept name: what it stands for, its values and the version's own value.
    #[allow(clippy::too_many_arguments)]
    fn axis(
        &mut self,
        field: &str,
        name: &str,
        values: &[Lit],
        rv: &RawVersion,
        ws: &RawWorkspace,
        kind: SourceKind,
        vars: &[&str],
    ) -> Option<SweepAxis> {
        let af = format!("{field}.sweep.{name}");
        if values.is_empty() {
            return self.err(
                &af,
                format!("`{name}` has no values to sweep; give a list such as `[128, 256]`"),
            );
        }
        let buffers: Vec<&String> = ws.buffers.keys().chain(rv.scratch.keys()).collect();
        let used: Vec<String> = used_variables(rv)
            .into_iter()
            .filter(|u| !buffers.contains(&u))
            .collect();
        let (axis_kind, default) = if name == "block" {
            if kind.is_tile() {
                return self.err(
                    &af,
                    "a tile version's block is `32 * num_warps` threads; sweep `num_warps`".into(),
                );
            }
            match &rv.block {
                Some(d) => (AxisKind::Block, d.0.first().map(|l| l.0.clone())),
                None => {
                    return self.err(
                        &af,
                        "`block` can be swept in a version with one launch (`entry`, `grid`, \
                         `block`, `args`); with `launches`, sweep a variable their blocks use"
                            .into(),
                    )
                }
            }
        } else if name == "num_warps" {
            if !kind.is_tile() {
                return self.err(
                    &af,
                    "`num_warps` is for tile-language versions; a CUDA version sweeps `block`"
                        .into(),
                );
            }
            (
                AxisKind::NumWarps,
                Some(rv.num_warps.as_ref().map_or("4".into(), |l| l.0.clone())),
            )
        } else if name == "persistent" {
            if !kind.is_tile() {
                return self.err(
                    &af,
                    "`persistent` is for tile-language versions (.tile, .py)".into(),
                );
            }
            let own = rv.persistent.unwrap_or(false);
            (AxisKind::Persistent, Some(own.to_string()))
        } else if let Some(l) = rv.constexprs.get(name) {
            (AxisKind::Constexpr, Some(l.0.clone()))
        } else if let Some(l) = rv.defines.get(name).or(ws.defines.get(name)) {
            (AxisKind::Define, Some(l.0.clone()))
        } else if vars.contains(&name) {
            return self.err(
                &af,
                format!("`{name}` is a size variable; sizes are listed under `sizes`, not swept"),
            );
        } else if used.iter().any(|u| u == name) {
            (AxisKind::Var, None)
        } else {
            let mut known: Vec<&str> = Vec::new();
            if kind.is_tile() {
                known.push("num_warps");
                known.push("persistent");
                known.extend(rv.constexprs.keys().map(String::as_str));
            } else {
                known.push("block");
            }
            known.extend(rv.defines.keys().map(String::as_str));
            known.extend(ws.defines.keys().map(String::as_str));
            known.extend(
                used.iter()
                    .map(String::as_str)
                    .filter(|u| !vars.contains(u) && *u != "num_warps"),
            );
            let mut seen = Vec::new();
            known.retain(|k| {
                let first = !seen.contains(k);
                seen.push(*k);
                first
            });
            let hint = match suggest(name, known.iter().copied()) {
                Some(s) => format!("; did you mean `{s}`?"),
                None => format!("; it can sweep: {}", known.join(", ")),
            };
            let what = if kind.is_tile() {
                "a constexpr, a define, `num_warps`, `persistent` or a variable the version's expressions use"
            } else {
                "a define, `block` or a variable the version's expressions use"
            };
            return self.err(
                &af,
                format!("unknown sweep name `{name}`: not {what}{hint}"),
            );
        };
        let mut texts: Vec<String> = Vec::new();
        for (i, lit) in values.iter().enumerate() {
            let vf = format!("{af}[{i}]");
            let text = lit.0.trim().to_string();
            if texts.contains(&text) {
                self.err::<()>(&vf, format!("`{text}` is listed twice in `{name}`"));
                continue;
            }
            if axis_kind == AxisKind::Persistent {
                if text != "true" && text != "false" {
                    self.err::<()>(
                        &vf,
                        format!("`persistent` is `true` or `false`, got `{text}`"),
                    );
                    continue;
                }
            } else if axis_kind != AxisKind::Define {
                if let Err(e) = sweep_value(&text, axis_kind, vars) {
                    self.err::<()>(&vf, e);
                    continue;
                }
            } else if text.is_empty() || text.contains(char::is_whitespace) {
                self.err::<()>(&vf, format!("a define's value is one word, got `{text}`"));
                continue;
            }
            texts.push(text);
        }
        Some(SweepAxis {
            name: name.to_string(),
            kind: axis_kind,
            values: texts,
            default,
        })
    }
}

/// Checks one value of a non-define axis: an expression over the size variables; for
/// `num_warps`, a constant power of two from 1 to 32.
fn sweep_value(text: &str, kind: AxisKind, vars: &[&str]) -> Result<(), String> {
    if kind == AxisKind::Constexpr {
        // A string, dtype or `None` (docs/workspace.md).
        if let Some(r) = super::super::Constexpr::symbolic(text) {
            return r.map(|_| ());
        }
    }
    {
        let f = Formula::parse(text).map_err(|e| format!("bad expression: {e}"))?;
        let unknown: Vec<String> = f
            .free_variables()
            .into_iter()
            .filter(|n| !vars.contains(&n.as_str()))
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "unknown name `{}` in `{text}`; a swept value may use: {}",
                unknown.join("`, `"),
                if vars.is_empty() {
                    "no names".to_string()
                } else {
                    vars.join(", ")
                }
            ));
        }
        if kind == AxisKind::NumWarps {
            match f.eval_int(&SizeEnv::vars(&[])) {
                Ok(n) if (1..=32).contains(&n) && n & (n - 1) == 0 => {}
                Ok(n) => {
                    return Err(format!(
                        "`num_warps` must be a power of two from 1 to 32, got {n}"
                    ))
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The raw version with one configuration's values put in.
fn apply(rv: &RawVersion, axes: &[SweepAxis], values: &[(String, String)]) -> RawVersion {
    let mut out = rv.clone();
    out.sweep.clear();
    for (axis, (name, value)) in axes.iter().zip(values) {
        match axis.kind {
            AxisKind::Constexpr => {
                out.constexprs.insert(name.clone(), Lit(value.clone()));
            }
            AxisKind::Define => {
                out.defines.insert(name.clone(), Lit(value.clone()));
            }
            AxisKind::NumWarps => out.num_warps = Some(Lit(value.clone())),
            AxisKind::Persistent => out.persistent = Some(value == "true"),
            AxisKind::Block => {
                if let Some(block) = &mut out.block {
                    block.0[0] = Lit(value.clone());
                }
                substitute_all(&mut out, "block", value);
            }
            AxisKind::Var => substitute_all(&mut out, name, value),
        }
    }
    out
}

/// Puts `value` for the variable `name` into every expression of the version.
fn substitute_all(rv: &mut RawVersion, name: &str, value: &str) {
    let sub = |l: &mut Lit| l.0 = substitute(&l.0, name, value);
    let sub_dim = |d: &mut Dim| d.0.iter_mut().for_each(sub);
    if let Some(d) = &mut rv.grid {
        sub_dim(d);
    }
    if let Some(d) = &mut rv.block {
        sub_dim(d);
    }
    rv.shared.iter_mut().for_each(sub);
    rv.args.iter_mut().flatten().for_each(sub);
    rv.num_warps.iter_mut().for_each(sub);
    rv.constexprs.values_mut().for_each(sub);
    for l in rv.launches.iter_mut().flatten() {
        sub_dim(&mut l.grid);
        sub_dim(&mut l.block);
        l.shared.iter_mut().for_each(sub);
        l.args.iter_mut().for_each(sub);
    }
}

/// Every variable the version's expressions use, in first-use order.
fn used_variables(rv: &RawVersion) -> Vec<String> {
    let mut lits: Vec<&Lit> = Vec::new();
    for d in [&rv.grid, &rv.block].into_iter().flatten() {
        lits.extend(&d.0);
    }
    lits.extend(&rv.shared);
    lits.extend(rv.args.iter().flatten());
    lits.extend(&rv.num_warps);
    lits.extend(rv.constexprs.values());
    for l in rv.launches.iter().flatten() {
        lits.extend(l.grid.0.iter().chain(&l.block.0).chain(&l.args));
        lits.extend(&l.shared);
    }
    let mut out: Vec<String> = Vec::new();
    for l in lits {
        if let Ok(f) = Formula::parse(&l.0) {
            for v in f.free_variables() {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
    }
    out
}
