//! The fields only tile-language versions take: `num_warps` (the program's CTA is
//! `32 * num_warps` threads) and `constexprs` (values for the kernel's `tl.constexpr`
//! parameters, expressions over the size variables). A CUDA version that sets them is told to
//! use `block` and `defines` instead.

use super::super::formula::{Formula, SizeEnv};
use super::super::raw::{Dim, Lit, RawVersion};
use super::super::{Constexpr, SourceKind};
use super::{is_identifier, Validator};

/// A tile version's extra fields, checked. Empty for CUDA versions.
pub(super) struct TileFields {
    pub num_warps: Option<Formula>,
    pub persistent: bool,
    pub constexprs: Vec<(String, Constexpr)>,
}

impl TileFields {
    /// The block a tile version launches with when it gives none: `32 * num_warps` threads.
    pub fn block(&self) -> Option<Dim> {
        self.num_warps
            .as_ref()
            .map(|_| Dim(vec![Lit("32 * num_warps".into())]))
    }
}

impl Validator<'_> {
    pub(super) fn tile_fields(
        &mut self,
        field: &str,
        rv: &RawVersion,
        kind: SourceKind,
        vars: &[&str],
    ) -> TileFields {
        if !kind.is_tile() {
            if rv.num_warps.is_some() {
                self.err::<()>(
                    &format!("{field}.num_warps"),
                    "`num_warps` is for tile-language versions (.tile, .py); a CUDA version sets `block`".into(),
                );
            }
            if !rv.constexprs.is_empty() {
                self.err::<()>(
                    &format!("{field}.constexprs"),
                    "`constexprs` are for tile-language versions (.tile, .py); a CUDA version uses `defines`".into(),
                );
            }
            if rv.persistent.is_some() {
                self.err::<()>(
                    &format!("{field}.persistent"),
                    "`persistent` is for tile-language versions (.tile, .py); a CUDA kernel loops over its own work".into(),
                );
            }
            return TileFields {
                num_warps: None,
                persistent: false,
                constexprs: Vec::new(),
            };
        }
        let mut constexprs = Vec::new();
        for (name, lit) in &rv.constexprs {
            let f = format!("{field}.constexprs.{name}");
            if !is_identifier(name) {
                self.err::<()>(&f, format!("`{name}` is not a parameter name"));
                continue;
            }
            match Constexpr::symbolic(&lit.0) {
                None => {
                    if let Some(formula) = self.formula(&f, lit, vars) {
                        constexprs.push((name.clone(), Constexpr::Formula(formula)));
                    }
                }
                Some(Ok(other)) => constexprs.push((name.clone(), other)),
                Some(Err(e)) => {
                    self.err::<()>(&f, e);
                }
            }
        }
        let default = Lit("4".into());
        let nw_field = format!("{field}.num_warps");
        let mut nw_vars = vars.to_vec();
        nw_vars.extend(
            constexprs
                .iter()
                .filter(|(_, c)| c.formula().is_some())
                .map(|(n, _): &(String, Constexpr)| n.as_str()),
        );
        let num_warps = self.formula(
            &nw_field,
            rv.num_warps.as_ref().unwrap_or(&default),
            &nw_vars,
        );
        // A constant num_warps is checked here; one that depends on the size is checked when planned.
        if let Some(Ok(n)) = num_warps
            .as_ref()
            .filter(|f| f.free_variables().is_empty())
            .map(|f| f.eval_int(&SizeEnv::vars(&[])))
        {
            if !(1..=32).contains(&n) || n & (n - 1) != 0 {
                self.err::<()>(
                    &nw_field,
                    format!("`num_warps` must be a power of two from 1 to 32, got {n}"),
                );
            }
        }
        TileFields {
            num_warps,
            persistent: rv.persistent.unwrap_or(false),
            constexprs,
        }
    }
}

impl Validator<'_> {
    /// A tile version's `python_path`: folders relative to the workspace, each one that
    /// exists (a folder that is gone is skipped, as Python skips it on `sys.path`).
    pub(super) fn python_path(
        &mut self,
        field: &str,
        kind: SourceKind,
        raw: &[String],
    ) -> Vec<std::path::PathBuf> {
        if raw.is_empty() {
            return Vec::new();
        }
        if !kind.is_tile() {
            self.err::<()>(
                &format!("{field}.python_path"),
                "`python_path` is for tile-language versions (.tile, .py): it says where their imports are; a CUDA version sets `options: [-I…]`".into(),
            );
            return Vec::new();
        }
        raw.iter()
            .map(|p| super::normalize(&self.dir.join(p)))
            .filter(|p| p.is_dir())
            .collect()
    }
}

impl Validator<'_> {
    /// A tile version's `python_globals`: each a name and a dotted path of identifiers.
    pub(super) fn python_globals(
        &mut self,
        field: &str,
        kind: SourceKind,
        raw: &indexmap::IndexMap<String, String>,
    ) {
        if raw.is_empty() {
            return;
        }
        let f = format!("{field}.python_globals");
        if !kind.is_tile() {
            self.err::<()>(
                &f,
                "`python_globals` is for tile-language versions (.tile, .py)".into(),
            );
            return;
        }
        for (name, dotted) in raw {
            if !is_identifier(name) || !dotted.split('.').all(is_identifier) {
                self.err::<()>(
                    &format!("{f}.{name}"),
                    format!("`{name}: {dotted}` must be a name and a dotted path such as `triton.language.extra.cuda.libdevice.isnan`"),
                );
            }
        }
    }
}
