//! `kwb capture`: from a Python program's Triton launches to workspaces. The program runs
//! unchanged with a hook (`hook.py`, see `program.rs`) that records each distinct launch: the
//! kernel's file and entry, its constexprs, warps, stages and grid, its arguments, the tensors
//! before and after (`.npy`), and Triton's own kernel time. Each recorded launch becomes a
//! workspace (`write.rs`) that `kwb batch` and `kwb watch` take as they are.
//!
//! The seam: [`capture`] takes [`Options`] and returns an [`Outcome`] or a [`CaptureError`];
//! the command line turns them into messages and exit codes.

pub mod program;
pub mod record;
pub mod report;
pub mod write;

pub use program::HookSettings;
use record::{Launch, Record, Start};
use std::path::{Path, PathBuf};

/// The folder marker: its presence says kwb wrote the folder; it lists the files it wrote.
const MARKER: &str = ".kwb-capture";

#[derive(Debug, Clone)]
pub struct Options {
    /// The program and its arguments: `python prog.py --flag`.
    pub argv: Vec<String>,
    pub out: PathBuf,
    pub hook: HookSettings,
}

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{path}: {1}", path = .0.display())]
    Io(PathBuf, #[source] std::io::Error),
    #[error("{}: the folder exists and was not written by `kwb capture`; name another with --out (kwb never writes over a folder it did not make)", .0.display())]
    NotOurs(PathBuf),
    #[error("no program to run: give it after `--`, e.g. `kwb capture -- python prog.py`")]
    NoProgram,
    #[error("cannot run `{0}`: {1}")]
    Start(String, #[source] std::io::Error),
}

/// One workspace written.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub kernel: String,
    pub triton_us: Option<f64>,
}

/// What a capture did.
#[derive(Debug)]
pub struct Outcome {
    pub program: program::Ended,
    pub start: Option<Start>,
    pub written: Vec<Written>,
    /// Workspaces whose launch changed none of its tensors (the kernel wrote what was already
    /// there, e.g. a second launch on the same data): kwb cannot tell its outputs.
    pub unchecked: Vec<PathBuf>,
    /// Launches that cannot be workspaces: the kernel and every reason.
    pub refused: Vec<(String, Vec<String>)>,
    /// The `--max-bytes` cap: kernels not recorded because of it.
    pub over_limit: Vec<String>,
    /// The hook's own failures and lines it wrote that do not parse.
    pub hook_errors: Vec<String>,
    /// Launches seen and recorded, over all processes.
    pub launches: u64,
    pub recorded: u64,
    /// Whether the program's Python could import Triton (`None`: the hook never reported).
    pub triton: Option<bool>,
}

/// Runs the program with the hook and writes a workspace per recorded launch into the folder.
pub fn capture(o: &Options) -> Result<Outcome, CaptureError> {
    if o.argv.is_empty() {
        return Err(CaptureError::NoProgram);
    }
    prepare(&o.out)?;
    let io = |e| CaptureError::Io(o.out.clone(), e);
    let ended = program::run(&o.argv, &o.out, &o.hook)
        .map_err(|e| CaptureError::Start(o.argv[0].clone(), e))?;
    let (records, bad) = record::read_dir(&o.out).map_err(io)?;
    let mut out = Outcome {
        program: ended,
        start: None,
        written: Vec::new(),
        unchecked: Vec::new(),
        refused: Vec::new(),
        over_limit: Vec::new(),
        hook_errors: bad,
        launches: 0,
        recorded: 0,
        triton: None,
    };
    let command = o.argv.join(" ");
    let mut launches: Vec<Launch> = Vec::new();
    for r in records {
        match r {
            Record::Start(s) => {
                out.start.get_or_insert(s);
            }
            Record::Launch(l) => launches.push(*l),
            Record::Limit { kernel, .. } => out.over_limit.push(kernel),
            Record::Error { kernel, message } => out.hook_errors.push(match kernel {
                Some(k) => format!("`{k}`: {message}"),
                None => message,
            }),
            Record::Summary {
                launches,
                recorded,
                triton,
                ..
            } => {
                out.launches += launches;
                out.recorded += recorded;
                out.triton = Some(out.triton.unwrap_or(false) || triton.unwrap_or(true));
            }
            Record::Unknown => {}
        }
    }
    let start = out.start.clone().unwrap_or_default();
    let origin = write::Origin {
        command: &command,
        start: &start,
    };
    let mut taken: Vec<String> = Vec::new();
    for l in &launches {
        match write::workspace(l, &origin) {
            Ok(write::Text { text, checked }) => {
                let name = file_name(&l.kernel, &taken);
                taken.push(name.clone());
                let path = o.out.join(&name);
                if !checked {
                    out.unchecked.push(path.clone());
                }
                std::fs::write(&path, text).map_err(|e| CaptureError::Io(path.clone(), e))?;
                out.written.push(Written {
                    path,
                    kernel: l.kernel.clone(),
                    triton_us: l.triton_us,
                });
            }
            Err(problems) => out.refused.push((l.kernel.clone(), problems)),
        }
    }
    mark(&o.out).map_err(io)?;
    Ok(out)
}

/// `kernel.yaml`, or `kernel-2.yaml` and on for its further specialisations.
fn file_name(kernel: &str, taken: &[String]) -> String {
    let safe: String = kernel
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    (1..)
        .map(|n| match n {
            1 => format!("{safe}.yaml"),
            n => format!("{safe}-{n}.yaml"),
        })
        .find(|n| !taken.contains(n))
        .unwrap_or_default()
}

/// Makes the folder ready: created, or empty, or an earlier capture whose files are removed.
fn prepare(dir: &Path) -> Result<(), CaptureError> {
    let io = |e| CaptureError::Io(dir.to_path_buf(), e);
    if !dir.exists() {
        return std::fs::create_dir_all(dir).map_err(io);
    }
    let marker = dir.join(MARKER);
    let entries: Vec<_> = std::fs::read_dir(dir).map_err(io)?.flatten().collect();
    if entries.is_empty() {
        return Ok(());
    }
    let Ok(listed) = std::fs::read_to_string(&marker) else {
        return Err(CaptureError::NotOurs(dir.to_path_buf()));
    };
    for name in listed.lines().filter(|n| !n.is_empty() && !n.contains('/')) {
        let p = dir.join(name);
        if p.is_file() {
            std::fs::remove_file(&p).map_err(|e| CaptureError::Io(p, e))?;
        }
    }
    let hook = dir.join(".hook");
    if hook.is_dir() {
        std::fs::remove_dir_all(&hook).map_err(|e| CaptureError::Io(hook, e))?;
    }
    Ok(())
}

/// Lists every file of the folder in its marker, so the next capture may replace them.
fn mark(dir: &Path) -> std::io::Result<()> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n != MARKER)
        .collect();
    names.sort();
    std::fs::write(dir.join(MARKER), names.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_names_count_up_per_kernel() {
        let taken = vec!["k.yaml".to_string()];
        assert_eq!(file_name("k", &taken), "k-2.yaml");
        assert_eq!(file_name("_a.b", &[]), "_a_b.yaml");
    }

    #[test]
    fn a_folder_kwb_did_not_write_is_never_touched() {
        let dir = std::env::temp_dir().join(format!("kwb-capture-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mine.txt"), "user data").unwrap();
        assert!(matches!(prepare(&dir), Err(CaptureError::NotOurs(_))));
        assert_eq!(
            std::fs::read_to_string(dir.join("mine.txt")).unwrap(),
            "user data"
        );
        // A capture's own folder: its listed files go, anything else stays.
        std::fs::write(dir.join(MARKER), "old.yaml\n").unwrap();
        std::fs::write(dir.join("old.yaml"), "x").unwrap();
        prepare(&dir).unwrap();
        assert!(!dir.join("old.yaml").exists() && dir.join("mine.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
