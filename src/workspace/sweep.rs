//! Sweeps: a version with `sweep: {NAME: [values…]}` stands for one version per combination of
//! the values, each an ordinary [`Version`](super::Version) named after its values
//! (`v9[block=256]`, `v6[BLOCK=1024,num_warps=8]`). Expansion happens when the workspace is
//! loaded (see `validate_sweep.rs`), so compiling, planning, checking and timing see only plain
//! versions; this file holds what is left of the sweep afterwards: its axes, its
//! configurations, and which configuration the version's own (unswept) fields choose at a size.

use super::formula::{Formula, SizeEnv};
use super::ProblemSize;
use crate::expr::Scalar;

/// What a swept name stands for in the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisKind {
    /// A tile version's `tl.constexpr` (listed under `constexprs`).
    Constexpr,
    /// A `#define` passed to NVRTC (listed under `defines`, the version's or the workspace's).
    Define,
    /// A CUDA version's block size (its x dimension); `block` may also appear in the version's
    /// grid, args and shared expressions.
    Block,
    /// A tile version's warps per program.
    NumWarps,
    /// A tile version's `persistent` (`true` or `false`).
    Persistent,
    /// A variable that the version's expressions use and that is not a size variable.
    Var,
}

impl AxisKind {
    pub fn label(self) -> &'static str {
        match self {
            AxisKind::Constexpr => "constexpr",
            AxisKind::Define => "define",
            AxisKind::Block => "block",
            AxisKind::NumWarps => "num_warps",
            AxisKind::Persistent => "persistent",
            AxisKind::Var => "variable",
        }
    }
}

/// One swept name and its values, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAxis {
    pub name: String,
    pub kind: AxisKind,
    /// Each value's text, as written (trimmed).
    pub values: Vec<String>,
    /// The version's own value for this name (its default configuration), when it gives one:
    /// e.g. its `block` expression. May depend on the size.
    pub default: Option<String>,
}

/// A swept version after expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The version's name in the workspace, e.g. `v9`.
    pub parent: String,
    pub description: Option<String>,
    pub axes: Vec<SweepAxis>,
    /// The configurations' version names, first axis slowest (as nested loops in axis order).
    pub configs: Vec<String>,
    /// Unswept constexprs of the version, which the defaults may refer to.
    pub context: Vec<(String, Formula)>,
    /// The field path of the version, e.g. `versions.v9`.
    pub field: String,
}

/// Where one configuration sits in its sweep: set on each version a sweep expanded into.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    pub parent: String,
    /// (axis name, value text), in axis order.
    pub values: Vec<(String, String)>,
}

impl SweepPoint {
    /// The configuration's name without its axis names, `parent[1,2]`: for a column too
    /// narrow for [`config_name`]'s (the Sweep tab names the axes, in the same order).
    pub fn short_name(&self) -> String {
        let values: Vec<&str> = self.values.iter().map(|(_, v)| v.as_str()).collect();
        format!("{}[{}]", self.parent, values.join(","))
    }
}

/// The name of the configuration with `values`: `parent[a=1,b=2]`.
pub fn config_name(parent: &str, values: &[(String, String)]) -> String {
    let inner: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{parent}[{}]", inner.join(","))
}

/// Every combination of the axes' value indices, first axis slowest. One empty combination when
/// there are no axes; none when an axis is empty.
pub fn combinations(lengths: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &n in lengths {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..n).map(move |i| {
                    let mut c = prefix.clone();
                    c.push(i);
                    c
                })
            })
            .collect();
    }
    out
}

impl Sweep {
    /// The index in `configs` of the configuration the version's own fields choose at `size`
    /// (its "rule"), when every axis has a default and the default is one of the swept values.
    pub fn default_at(&self, size: &ProblemSize) -> Option<usize> {
        let mut vars = size.vars.clone();
        for (name, f) in &self.context {
            if let Ok(Scalar::Int(v)) = f.eval(&SizeEnv::vars(&vars)) {
                vars.push((name.clone(), v));
            }
        }
        let mut index = 0;
        for axis in &self.axes {
            let default = axis.default.as_deref()?;
            let want = value_at(default, &vars);
            let i = axis
                .values
                .iter()
                .position(|v| same_value(&value_at(v, &vars), &want))?;
            if let Some(Value::Int(n)) = want {
                vars.push((axis.name.clone(), n));
            }
            index = index * axis.values.len() + i;
        }
        self.configs.get(index).map(|_| index)
    }

    /// The value the version's own fields give each axis at `size`, as text (`?` where it has
    /// none or it cannot be worked out), for saying what the rule chose when it is not swept.
    pub fn default_values_at(&self, size: &ProblemSize) -> Vec<(String, String)> {
        let mut vars = size.vars.clone();
        for (name, f) in &self.context {
            if let Ok(Scalar::Int(v)) = f.eval(&SizeEnv::vars(&vars)) {
                vars.push((name.clone(), v));
            }
        }
        let mut out = Vec::new();
        for axis in &self.axes {
            let shown = match axis.default.as_deref().map(|d| value_at(d, &vars)) {
                Some(Some(Value::Int(n))) => {
                    vars.push((axis.name.clone(), n));
                    n.to_string()
                }
                Some(Some(Value::Text(t))) => t,
                _ => "?".to_string(),
            };
            out.push((axis.name.clone(), shown));
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(i64),
    Text(String),
}

/// A value evaluated at the size when it is an integer expression, else its text.
fn value_at(text: &str, vars: &[(String, i64)]) -> Option<Value> {
    match Formula::parse(text) {
        Ok(f) => match f.eval_int(&SizeEnv::vars(vars)) {
            Ok(n) => Some(Value::Int(n)),
            Err(_) if f.free_variables().is_empty() => Some(Value::Text(text.trim().into())),
            Err(_) => None,
        },
        Err(_) => Some(Value::Text(text.trim().into())),
    }
}

fn same_value(a: &Option<Value>, b: &Option<Value>) -> bool {
    matches!((a, b), (Some(x), Some(y)) if x == y)
}

/// `text` with every whole-word use of the name `name` replaced by `(value)`. Numbers with
/// suffixes (`64Ki`) and attribute names after a dot are left alone.
pub fn substitute(text: &str, name: &str, value: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if c.is_ascii_digit() {
            while i < chars.len() && (word(chars[i]) || chars[i] == '.') {
                out.push(chars[i]);
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
            let token: String = chars[start..i].iter().collect();
            let after_dot = start > 0 && chars[start - 1] == '.';
            if token == name && !after_dot {
                out.push('(');
                out.push_str(value.trim());
                out.push(')');
            } else {
                out.push_str(&token);
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The known name closest to `name` by edit distance, if close enough to be a likely typo.
pub fn suggest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(2);
    known
        .into_iter()
        .map(|k| (distance(&name.to_lowercase(), &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.to_string())
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(cur)
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_first_axis_slowest() {
        assert_eq!(
            combinations(&[2, 3]),
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert_eq!(combinations(&[1]), vec![vec![0]]);
        assert!(combinations(&[2, 0]).is_empty());
    }

    #[test]
    fn substitution_is_whole_words_only() {
        assert_eq!(
            substitute("cdiv(N, block) + blocks + 64Ki", "block", "256"),
            "cdiv(N, (256)) + blocks + 64Ki"
        );
        assert_eq!(substitute("Ki * 2", "Ki", "3"), "(3) * 2");
        assert_eq!(substitute("x.block", "block", "3"), "x.block");
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            suggest("BLOKC", ["BLOCK", "num_warps"]),
            Some("BLOCK".into())
        );
        assert_eq!(
            suggest("num_warp", ["BLOCK", "num_warps"]),
            Some("num_warps".into())
        );
        assert_eq!(suggest("zzz", ["BLOCK"]), None);
    }
}
