//! The workspace file exactly as written: serde structs that mirror the YAML, with unknown
//! fields rejected. Nothing here is interpreted; `validate` turns it into a [`super::Workspace`].

use indexmap::IndexMap;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// A number or an expression string, kept as the expression's source text.
#[derive(Debug, Clone, PartialEq)]
pub struct Lit(pub String);

impl<'de> Deserialize<'de> for Lit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LitVisitor)
    }
}

struct LitVisitor;

impl Visitor<'_> for LitVisitor {
    type Value = Lit;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or an expression string such as `cdiv(N, 256)`")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lit, E> {
        Ok(Lit(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lit, E> {
        Ok(Lit(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lit, E> {
        Ok(Lit(format!("{v:?}")))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lit, E> {
        Ok(Lit(v.to_string()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Lit, E> {
        Ok(Lit(v.to_string()))
    }
}

/// A launch dimension: one expression (x) or a list of up to three (x, y, z).
#[derive(Debug, Clone, PartialEq)]
pub struct Dim(pub Vec<Lit>);

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct DimVisitor;
        impl<'de> Visitor<'de> for DimVisitor {
            type Value = Dim;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an expression, or a list [x, y, z] of one to three expressions")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dim, E> {
                LitVisitor.visit_i64(v).map(|l| Dim(vec![l]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dim, E> {
                LitVisitor.visit_u64(v).map(|l| Dim(vec![l]))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dim, E> {
                LitVisitor.visit_f64(v).map(|l| Dim(vec![l]))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dim, E> {
                LitVisitor.visit_str(v).map(|l| Dim(vec![l]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Dim, A::Error> {
                let mut out = Vec::new();
                while let Some(l) = seq.next_element::<Lit>()? {
                    out.push(l);
                }
                if out.is_empty() || out.len() > 3 {
                    return Err(de::Error::invalid_length(out.len(), &self));
                }
                Ok(Dim(out))
            }
        }
        d.deserialize_any(DimVisitor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkspace {
    pub name: Option<String>,
    pub description: Option<String>,
    pub arch: Option<String>,
    pub sizes: Vec<IndexMap<String, Lit>>,
    pub buffers: IndexMap<String, RawBuffer>,
    pub reference: Option<RawReference>,
    pub tolerance: Option<RawTolerance>,
    pub bytes: Option<Lit>,
    pub flops: Option<Lit>,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub defines: IndexMap<String, Lit>,
    pub versions: IndexMap<String, RawVersion>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBuffer {
    pub dtype: Option<String>,
    pub shape: Option<Vec<Lit>>,
    pub init: Option<serde_norway::Value>,
    pub output: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReference {
    pub expr: Option<IndexMap<String, String>>,
    pub version: Option<String>,
    pub npy: Option<IndexMap<String, String>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTolerance {
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
}

/// `baseline: {name: "Triton 3.6.0", us: 12.5, note: "..."}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBaseline {
    pub name: String,
    pub us: Lit,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVersion {
    pub file: String,
    pub description: Option<String>,
    pub entry: Option<String>,
    pub grid: Option<Dim>,
    pub block: Option<Dim>,
    pub shared: Option<Lit>,
    pub args: Option<Vec<Lit>>,
    pub launches: Option<Vec<RawLaunch>>,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub defines: IndexMap<String, Lit>,
    #[serde(default)]
    pub buffers: IndexMap<String, RawBuffer>,
    #[serde(default)]
    pub scratch: IndexMap<String, RawBuffer>,
    pub tolerance: Option<RawTolerance>,
    /// Tile-language versions: warps per program (the CTA is `num_warps * 32` threads).
    pub num_warps: Option<Lit>,
    /// Tile-language versions: persistent programs (one CTA per program slot of the GPU, each
    /// running programs until the grid is done).
    pub persistent: Option<bool>,
    /// Triton's launch option of the same name: `false` rounds every product and sum on its
    /// own (NVRTC `--fmad=false`) instead of contracting `a * b + c` into a fused multiply-add.
    pub enable_fp_fusion: Option<bool>,
    /// Tile-language versions: folders (relative to the workspace) where the kernel's
    /// absolute imports are also looked for, as Python's `sys.path`.
    #[serde(default)]
    pub python_path: Vec<String>,
    /// Tile-language versions: names of the kernel's module bound at run time to Triton
    /// objects, by dotted path.
    #[serde(default)]
    pub python_globals: IndexMap<String, String>,
    /// Another tool's time for the same launch (Triton's, recorded by `kwb capture`), shown
    /// beside kwb's own.
    pub baseline: Option<RawBaseline>,
    /// Tile-language versions: the Triton release whose numerics to follow where releases
    /// differ (`"3.6"`, `"3.6.0"`).
    pub triton: Option<Lit>,
    /// Tile-language versions: values of the kernel's `tl.constexpr` parameters.
    #[serde(default)]
    pub constexprs: IndexMap<String, Lit>,
    /// Values to sweep: each name (a constexpr, a define, `block`, `num_warps` or a variable
    /// of the version's expressions) with its list of values; every combination is a version.
    #[serde(default)]
    pub sweep: IndexMap<String, Vec<Lit>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLaunch {
    pub entry: String,
    pub grid: Dim,
    pub block: Dim,
    pub shared: Option<Lit>,
    pub args: Vec<Lit>,
}
