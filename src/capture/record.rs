//! What the capture hook (`hook.py`) writes: one JSON object per line in `launches-<pid>.jsonl`,
//! one file per Python process of the program. Read back here into typed records.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One line of a `launches-<pid>.jsonl` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The first launch of a process: what it ran with.
    Start(Start),
    Launch(Box<Launch>),
    /// A launch not recorded because the `--max-bytes` cap was reached.
    Limit {
        kernel: String,
        bytes_needed: u64,
        max_bytes: u64,
    },
    /// The hook's own failure while recording a launch (the launch itself still ran).
    Error {
        #[serde(default)]
        kernel: Option<String>,
        message: String,
    },
    /// At the process's exit.
    Summary {
        #[serde(default)]
        launches: u64,
        #[serde(default)]
        recorded: u64,
        #[serde(default)]
        skipped: BTreeMap<String, u64>,
        /// Whether the process could import Triton at all.
        #[serde(default)]
        triton: Option<bool>,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Start {
    #[serde(default)]
    pub triton_version: Option<String>,
    #[serde(default)]
    pub torch_version: Option<String>,
    #[serde(default)]
    pub interpret: bool,
    #[serde(default)]
    pub device: Option<String>,
}

/// One recorded launch: a kernel, its specialisation and everything needed to run it again.
#[derive(Debug, Clone, Deserialize)]
pub struct Launch {
    pub kernel: String,
    pub file: PathBuf,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default = "four")]
    pub num_warps: u32,
    #[serde(default)]
    pub num_stages: Option<u32>,
    pub grid: Vec<u64>,
    #[serde(default)]
    pub constexprs: serde_json::Map<String, serde_json::Value>,
    pub args: Vec<Arg>,
    #[serde(default)]
    pub problems: Vec<String>,
    #[serde(default)]
    pub triton_us: Option<f64>,
    #[serde(default)]
    pub triton_samples: Option<u64>,
    #[serde(default)]
    pub timing_error: Option<String>,
    #[serde(default)]
    pub launch_index: u64,
    /// Every tensor already held what the launch wrote: the outputs a replay found (`hook.py`).
    #[serde(default)]
    pub probed: Vec<String>,
    /// The program's `sys.path` at the launch (folders that exist, less Python's own library):
    /// where the kernel's imports are looked for.
    #[serde(default)]
    pub sys_path: Vec<PathBuf>,
    /// Names of the kernel's module bound at the launch to Triton objects its source does not
    /// give kwb (`_isnan` → `triton.language.extra.cuda.libdevice.isnan`).
    #[serde(default)]
    pub python_globals: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub probe_error: Option<String>,
    /// Triton's own replay of the launch differed from its first run (float atomics add in
    /// no fixed order): output → largest absolute difference.
    #[serde(default)]
    pub spread: std::collections::BTreeMap<String, f64>,
}

fn four() -> u32 {
    4
}

/// One argument of a launch, for a parameter that is not a `tl.constexpr`.
#[derive(Debug, Clone, Deserialize)]
pub struct Arg {
    pub name: String,
    #[serde(flatten)]
    pub kind: ArgKind,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgKind {
    Tensor(Tensor),
    Int {
        value: i64,
    },
    Float {
        value: serde_json::Value,
    },
    Bool {
        value: bool,
    },
    None,
    Other {
        #[serde(rename = "type", default)]
        type_name: String,
    },
}

/// A tensor argument: its dtype, its view, and the files of the memory the kernel can reach.
#[derive(Debug, Clone, Deserialize)]
pub struct Tensor {
    /// torch's name: `float32`, `bfloat16`, `int64`, `bool`, ...
    pub dtype: String,
    #[serde(default)]
    pub shape: Vec<u64>,
    #[serde(default)]
    pub strides: Vec<i64>,
    /// Elements from the view's first element to the last one any index reaches.
    pub span: u64,
    /// The span before the launch (a 1-D `.npy`, relative to the capture folder).
    #[serde(default)]
    pub input: Option<String>,
    /// The span after the launch, when the launch changed it.
    #[serde(default)]
    pub output: Option<String>,
    #[serde(default)]
    pub changed: bool,
    /// The same memory as an earlier argument (its index): one buffer, passed twice.
    #[serde(default)]
    pub alias_of: Option<usize>,
}

/// Every record of a capture folder, in file-name order (one file per process), each line
/// in order. A line that does not parse is returned as an error naming the file and line.
pub fn read_dir(dir: &Path) -> std::io::Result<(Vec<Record>, Vec<String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("launches-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    let (mut records, mut bad) = (Vec::new(), Vec::new());
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(r) => records.push(r),
                Err(e) => bad.push(format!("{}:{}: {e}", f.display(), i + 1)),
            }
        }
    }
    Ok((records, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_line_reads_back() {
        let line = r#"{"type": "launch", "kernel": "add", "file": "/p/k.py", "line": 4,
            "num_warps": 4, "num_stages": 3, "grid": [96, 1, 1],
            "constexprs": {"BLOCK": 1024, "ACT": {"str": "gelu"}, "DT": {"dtype": "fp16"}, "B": null},
            "args": [{"name": "x", "kind": "tensor", "dtype": "float32", "shape": [4, 8],
                      "strides": [8, 1], "span": 32, "input": "a.npy", "output": null, "changed": false},
                     {"name": "n", "kind": "int", "value": 98432},
                     {"name": "s", "kind": "float", "value": "inf"},
                     {"name": "f", "kind": "bool", "value": true},
                     {"name": "b", "kind": "none"},
                     {"name": "d", "kind": "other", "type": "TensorDescriptor"}],
            "problems": [], "triton_us": 1.5, "launch_index": 0, "key": "x"}"#;
        let Record::Launch(l) = serde_json::from_str::<Record>(&line.replace('\n', " ")).unwrap()
        else {
            panic!("not a launch")
        };
        assert_eq!(
            (l.kernel.as_str(), l.grid.as_slice()),
            ("add", &[96, 1, 1][..])
        );
        assert!(matches!(&l.args[0].kind, ArgKind::Tensor(t) if t.span == 32));
        assert!(matches!(l.args[1].kind, ArgKind::Int { value: 98432 }));
        assert!(
            matches!(&l.args[5].kind, ArgKind::Other { type_name } if type_name == "TensorDescriptor")
        );
        assert_eq!(l.triton_us, Some(1.5));
        let other: Record = serde_json::from_str(r#"{"type": "something_new"}"#).unwrap();
        assert!(matches!(other, Record::Unknown));
    }
}
