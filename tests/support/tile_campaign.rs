//! Campaigns of the differential test: many generated programs on several threads, each
//! thread with its own runner (its own Triton process); a mismatch is reduced to a small
//! program in the manner of C-Reduce and saved as a regression fixture that
//! `tests/diff_regressions.rs` replays without Triton.

use super::tile_diff::Outcome;
use super::tilegen::{self, Layout, Program};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What a campaign found.
#[derive(Default)]
pub struct Tally {
    pub agree: u64,
    /// Programs of exact operations only that agreed (compared bit for bit).
    pub exact: u64,
    pub rejected_by_triton: Vec<(u64, String)>,
    pub rejected_by_kwb: Vec<(u64, String)>,
    pub mismatches: Vec<Found>,
    /// Programs that agree, by generator feature.
    pub features: BTreeMap<&'static str, u64>,
}

/// A mismatch, reduced.
pub struct Found {
    pub seed: u64,
    pub first: String,
    pub reduced: Program,
    pub why: String,
    /// The regression fixture's folder.
    pub saved: PathBuf,
}

impl Found {
    pub fn report(&self) -> String {
        format!(
            "seed {}: {}\nreduced (saved in {}): {}\n{}",
            self.seed,
            self.first,
            self.saved.display(),
            self.why,
            tilegen::print(&self.reduced, &mut Layout::plain())
        )
    }
}

/// How a mismatch shows: two mismatches of one kind are "the same bug" for the reducer.
fn kind(message: &str) -> &'static str {
    if message.starts_with("layout") {
        "layout"
    } else if message.contains("Triton gives") {
        "value"
    } else {
        "other"
    }
}

/// A campaign's settings, from the environment: its work folder (`KWB_DIFF_DIR`, else
/// `target/DEFAULT`, emptied), where reduced mismatches are saved (`KWB_DIFF_SAVE`, else
/// `DIR/regressions`; `tests/diff_regressions` keeps them as tests), the programs
/// (`COUNT_VAR`, else `count`; from `KWB_DIFF_SEED`, else 1) and the threads (`KWB_DIFF_JOBS`,
/// else every core, at most 8).
pub struct Settings {
    pub dir: PathBuf,
    pub save: PathBuf,
    pub first: u64,
    pub count: u64,
    pub jobs: usize,
}

impl Settings {
    pub fn from_env(default: &str, count_var: &str, count: u64) -> Settings {
        use super::tile_diff::env_u64;
        let dir = std::env::var_os("KWB_DIFF_DIR")
            .map_or_else(|| super::repo().join("target").join(default), PathBuf::from);
        let _ = std::fs::remove_dir_all(&dir);
        let save = std::env::var_os("KWB_DIFF_SAVE")
            .map_or_else(|| dir.join("regressions"), PathBuf::from);
        // At most 8 by default: each thread holds a Python process with torch (about 400 MB).
        let cores = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(8);
        Settings {
            save,
            first: env_u64("KWB_DIFF_SEED", 1),
            count: env_u64(count_var, count),
            jobs: env_u64("KWB_DIFF_JOBS", cores as u64) as usize,
            dir,
        }
    }
}

/// One side of a differential run: kwb's CPU engines against Triton's interpreter, or kwb on a
/// GPU against compiled Triton.
pub trait Differential {
    /// Runs `p` in the folder [`Differential::folder`]`(tag)`.
    fn check(&mut self, p: &Program, tag: &str) -> Outcome;
    fn folder(&self, tag: &str) -> PathBuf;
    /// How many runs reducing one mismatch may take, unless `KWB_DIFF_REDUCE_TRIES` says.
    fn reduce_budget(&self) -> u64 {
        1500
    }
}

/// Programs `first..first + count` on `jobs` threads; `make(t)` builds thread `t`'s runner.
/// Mismatches are reduced with the same runner and saved under `save` (a folder per seed).
pub fn campaign<R: Differential>(
    first: u64,
    count: u64,
    jobs: usize,
    make: impl Fn(usize) -> R + Sync,
    save: &Path,
) -> Tally {
    let next = AtomicU64::new(first);
    let tally = Mutex::new(Tally::default());
    let done = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..jobs.max(1) {
            let (next, tally, done, make) = (&next, &tally, &done, &make);
            s.spawn(move || {
                let mut runner = make(t);
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + count {
                        break;
                    }
                    let p = tilegen::generate(seed);
                    let outcome = runner.check(&p, &format!("seed-{seed}"));
                    let found = match &outcome {
                        Outcome::Mismatch(e) => {
                            let (reduced, why) = reduce(&mut runner, p.clone(), e);
                            let saved = save.join(format!("seed-{seed}"));
                            // Once more, so that its folder holds the reduced program's files.
                            let tag = format!("seed-{seed}-final");
                            let why = match runner.check(&reduced, &tag) {
                                Outcome::Mismatch(w) => w,
                                other => format!("{why} (the last run gave {other:?})"),
                            };
                            save_fixture(&reduced, &why, &runner.folder(&tag), &saved);
                            Some(Found {
                                seed,
                                first: e.clone(),
                                reduced,
                                why,
                                saved,
                            })
                        }
                        _ => None,
                    };
                    let mut t = tally.lock().unwrap();
                    match outcome {
                        Outcome::Agree => {
                            t.agree += 1;
                            t.exact += u64::from(p.exact);
                            for f in &p.features {
                                *t.features.entry(f).or_default() += 1;
                            }
                        }
                        Outcome::TritonRejects(e) => t.rejected_by_triton.push((seed, e)),
                        Outcome::KwbRejects(e) => t.rejected_by_kwb.push((seed, e)),
                        Outcome::Mismatch(_) => t.mismatches.extend(found),
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % 1000 == 0 {
                        eprintln!("campaign: {n} of {count} programs");
                    }
                }
            });
        }
    });
    let mut t = tally.into_inner().unwrap();
    t.mismatches.sort_by_key(|f| f.seed);
    t.rejected_by_kwb.sort_by_key(|r| r.0);
    t.rejected_by_triton.sort_by_key(|r| r.0);
    t
}

/// Shrinks `p` while it still mismatches in the same way (statements removed, branches kept,
/// expressions replaced by operands), restarting from where the last success was; at most
/// `KWB_DIFF_REDUCE_TRIES` runs (default [`Differential::reduce_budget`]). Returns the smallest
/// program and its message.
pub fn reduce(runner: &mut impl Differential, p: Program, first: &str) -> (Program, String) {
    let budget = super::tile_diff::env_u64("KWB_DIFF_REDUCE_TRIES", runner.reduce_budget());
    let tag = format!("seed-{}-reducing", p.seed);
    let (mut best, mut why, mut tries, mut start) = (p, first.to_string(), 0, 0);
    'outer: loop {
        let candidates = tilegen::smaller(&best);
        for (i, q) in candidates.into_iter().enumerate().skip(start) {
            if tries >= budget {
                break 'outer;
            }
            tries += 1;
            if let Outcome::Mismatch(e) = runner.check(&q, &tag) {
                if kind(&e) == kind(first) {
                    (best, why, start) = (q, e, i);
                    continue 'outer;
                }
            }
        }
        if start == 0 {
            break;
        }
        start = 0; // one more full pass from the top
    }
    (best, why)
}

/// Writes the regression fixture of `p` into `to`: the program as Triton ran it (`k.py`), the
/// layouts kwb ran or compiled (`k.*.py`, copied from the run's folder `from`), its inputs,
/// Triton's outputs (`NAME.triton.npy`), the workspace (`workspace.yaml`, paths relative) and
/// `why.txt` (first line `exact` or `inexact`, then the mismatch).
pub fn save_fixture(p: &Program, why: &str, from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    std::fs::write(to.join("k.py"), tilegen::print(p, &mut Layout::plain())).unwrap();
    if let Ok(entries) = std::fs::read_dir(from) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let keep = (name.starts_with("k.") && name.ends_with(".py") && name != "k.py")
                || name.ends_with(".triton.npy");
            if keep {
                let _ = std::fs::copy(e.path(), to.join(&name));
            }
        }
    }
    super::tile_diff::write_inputs(p, to);
    let yaml = super::tile_diff::Runner::workspace(p, Path::new(""), "k.py");
    std::fs::write(to.join("workspace.yaml"), yaml).unwrap();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{}\nseed {}\n{why}",
        if p.exact { "exact" } else { "inexact" },
        p.seed
    );
    std::fs::write(to.join("why.txt"), text).unwrap();
}

/// Prints a campaign's summary line, its coverage and a sample of rejections.
pub fn print_tally(what: &str, first: u64, count: u64, t: &Tally) {
    println!(
        "{what}: {count} programs from seed {first}: {} agree with Triton ({} compared bit for bit), {} rejected by kwb, {} rejected by Triton, {} mismatches",
        t.agree,
        t.exact,
        t.rejected_by_kwb.len(),
        t.rejected_by_triton.len(),
        t.mismatches.len()
    );
    println!(
        "coverage (programs that agree, by feature): {:?}",
        t.features
    );
    for (seed, e) in t.rejected_by_kwb.iter().take(5) {
        println!(
            "kwb rejects seed {seed}: {}",
            e.lines().take(4).collect::<Vec<_>>().join(" | ")
        );
    }
    for (seed, e) in t.rejected_by_triton.iter().take(3) {
        println!("Triton rejects seed {seed}: {e}");
    }
}
