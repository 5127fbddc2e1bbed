//! Hot reload's file watcher against real files and the real notify backend: every way an editor
//! saves gives exactly one `Changed` naming the saved file, after the save has finished; other
//! files in the same directory give nothing.
//!
//! Waits are on conditions with deadlines (a channel and `recv_timeout`); the only fixed waits are
//! the short pauses between the steps of a simulated save and the window in which a second,
//! unwanted event would have to show up.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::sleep;
use std::time::{Duration, Instant};

use kwb::watch::{Changed, FileWatcher, WatchError};
use tempfile::TempDir;

const DEBOUNCE: Duration = Duration::from_millis(30);
/// How long a change may take to be reported before the test fails.
const DEADLINE: Duration = Duration::from_secs(2);
/// After the expected event, nothing more may arrive within this window.
const QUIET: Duration = Duration::from_millis(200);
/// Pause between the steps of a simulated save.
const STEP: Duration = Duration::from_millis(1);

/// A `Changed` and, for each of its paths, the file's content when `on_change` ran (None: missing).
type Report = (Changed, Vec<Option<String>>);

struct Bench {
    _tmp: TempDir,
    dir: PathBuf,
    watcher: FileWatcher,
    rx: Receiver<Report>,
}

impl Bench {
    /// A temporary directory holding `existing` (each containing "v0"), with `watched` watched.
    fn new(existing: &[&str], watched: &[&str]) -> Bench {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        for name in existing {
            fs::write(dir.join(name), "v0").unwrap();
        }
        let (tx, rx) = mpsc::channel();
        let watcher = FileWatcher::new(DEBOUNCE, move |changed: Changed| {
            let contents = changed
                .paths
                .iter()
                .map(|p| fs::read_to_string(p).ok())
                .collect();
            let _ = tx.send((changed, contents));
        })
        .unwrap();
        let mut bench = Bench {
            _tmp: tmp,
            dir,
            watcher,
            rx,
        };
        bench.watch(watched);
        bench
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn watch(&mut self, names: &[&str]) {
        let paths: Vec<PathBuf> = names.iter().map(|n| self.path(n)).collect();
        self.watcher.set_files(&paths).unwrap();
    }

    /// Exactly one `Changed`, naming exactly `names`, and nothing after it; returns the contents
    /// the callback saw.
    fn expect_one(&self, names: &[&str]) -> Vec<Option<String>> {
        let (changed, contents) = self
            .rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|e| panic!("no Changed for {names:?} within {DEADLINE:?}: {e}"));
        let want: Vec<PathBuf> = names.iter().map(|n| self.path(n)).collect();
        assert_eq!(changed.paths, want);
        self.expect_quiet();
        contents
    }

    fn expect_quiet(&self) {
        match self.rx.recv_timeout(QUIET) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("unexpected second report: {other:?}"),
        }
    }
}

fn write_in_chunks(path: &Path, chunks: &[&str]) {
    let mut f = fs::File::create(path).unwrap();
    for chunk in chunks {
        f.write_all(chunk.as_bytes()).unwrap();
        f.flush().unwrap();
        sleep(STEP);
    }
}

fn have(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        eprintln!("{tool} not found; skipping the real-{tool} part of this test");
    }
    found
}

#[test]
fn plain_write_in_place() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    fs::write(b.path("k.cu"), "v1").unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);
}

#[test]
fn truncate_then_several_writes_is_one_change_with_the_final_content() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(b.path("k.cu"))
        .unwrap();
    for part in ["__global__ ", "void k() ", "{}"] {
        f.write_all(part.as_bytes()).unwrap();
        f.flush().unwrap();
        sleep(STEP);
    }
    drop(f);
    let contents = b.expect_one(&["k.cu"]);
    assert_eq!(contents, [Some("__global__ void k() {}".into())]);
}

#[test]
fn atomic_rename_over_the_file_like_vscode() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    write_in_chunks(&b.path("k.cu.tmp4711"), &["v", "1"]);
    fs::rename(b.path("k.cu.tmp4711"), b.path("k.cu")).unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);
}

#[test]
fn jetbrains_safe_write() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    write_in_chunks(&b.path("k.cu___jb_tmp___"), &["v1"]);
    fs::rename(b.path("k.cu"), b.path("k.cu___jb_old___")).unwrap();
    sleep(STEP);
    fs::rename(b.path("k.cu___jb_tmp___"), b.path("k.cu")).unwrap();
    sleep(STEP);
    fs::remove_file(b.path("k.cu___jb_old___")).unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);
}

#[test]
fn vim_backup_rename_and_write() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    // Swap file, then the `4913` probe for whether the directory is writable.
    write_in_chunks(&b.path(".k.cu.swp"), &["swap"]);
    fs::write(b.path("4913"), "").unwrap();
    fs::remove_file(b.path("4913")).unwrap();
    sleep(STEP);
    // backupcopy=no: the original becomes the backup, a new file is written, the backup goes.
    fs::rename(b.path("k.cu"), b.path("k.cu~")).unwrap();
    sleep(STEP);
    write_in_chunks(&b.path("k.cu"), &["v", "1"]);
    fs::remove_file(b.path("k.cu~")).unwrap();
    fs::remove_file(b.path(".k.cu.swp")).unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);
}

#[test]
fn real_vim_save() {
    if !have("vim") {
        return;
    }
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    // Vim's defaults (writebackup, backupcopy=auto: the 4913 probe, then rename and rewrite);
    // backupskip would otherwise exempt files under /tmp from the backup dance.
    let status = Command::new("vim")
        .args(["-u", "NONE", "-i", "NONE", "-N", "-es"])
        .args(["-c", "set nobackup writebackup backupcopy=auto backupskip="])
        .args(["-c", "%s/v0/v1/", "-c", "wq"])
        .arg(b.path("k.cu"))
        .status()
        .unwrap();
    assert!(status.success());
    // Vim ends the last line.
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1\n".into())]);
}

/// A save whose last step comes after a pause longer than the debounce, leaving the bytes as the
/// first report saw them (vim's fsync or attribute change on a loaded machine), is still one
/// `Changed`; a real change right after is reported.
#[test]
fn a_late_step_that_leaves_the_bytes_unchanged_is_not_a_second_change() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    fs::write(b.path("k.cu"), "v1").unwrap();
    sleep(DEBOUNCE * 3);
    fs::write(b.path("k.cu"), "v1").unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);
    fs::write(b.path("k.cu"), "v2").unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v2".into())]);
}

#[test]
fn sed_in_place_renames_its_temporary_over_the_file() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    // What GNU sed -i does: a `sedXXXXXX` temporary in the same directory, renamed over the file.
    write_in_chunks(&b.path("sedAb12Cd"), &["v1"]);
    let perms = fs::metadata(b.path("k.cu")).unwrap().permissions();
    fs::set_permissions(b.path("sedAb12Cd"), perms).unwrap();
    fs::rename(b.path("sedAb12Cd"), b.path("k.cu")).unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);

    if cfg!(target_os = "linux") && have("sed") {
        let status = Command::new("sed")
            .args(["-i", "s/v1/v2/"])
            .arg(b.path("k.cu"))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(b.expect_one(&["k.cu"]), [Some("v2".into())]);
    }
}

#[test]
fn delete_then_recreate_is_one_change() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    fs::remove_file(b.path("k.cu")).unwrap();
    sleep(Duration::from_millis(5));
    fs::write(b.path("k.cu"), "v1").unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [Some("v1".into())]);
}

#[test]
fn deletion_alone_is_reported_and_the_file_is_missing() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    fs::remove_file(b.path("k.cu")).unwrap();
    assert_eq!(b.expect_one(&["k.cu"]), [None]);
}

#[test]
fn a_file_that_does_not_exist_yet_is_reported_when_created() {
    let b = Bench::new(&[], &["later.cu"]);
    fs::write(b.path("later.cu"), "v1").unwrap();
    assert_eq!(b.expect_one(&["later.cu"]), [Some("v1".into())]);
}

/// Guarantee: writes closer than 7/8 of the debounce merge into one `Changed`, delivered after the
/// last write; each longer pause may start a new one. The test asserts one report when the writer
/// never paused 3/4 of the debounce (the normal case); on a machine so loaded that it did, it allows
/// one more report per such pause. Either way the last report sees the final content.
#[test]
fn a_burst_of_20_writes_in_50ms_is_one_change() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    let mut last = Instant::now();
    let mut long_pauses = 0;
    for i in 0..20 {
        fs::write(b.path("k.cu"), format!("write {i}")).unwrap();
        if last.elapsed() >= DEBOUNCE * 3 / 4 {
            long_pauses += 1;
        }
        last = Instant::now();
        sleep(Duration::from_micros(2500));
    }
    let final_content = [Some("write 19".to_string())];
    if long_pauses == 0 {
        assert_eq!(b.expect_one(&["k.cu"]), final_content);
        return;
    }
    eprintln!("the writer paused {long_pauses} times; allowing that many extra reports");
    let mut reports = vec![b.rx.recv_timeout(DEADLINE).expect("no Changed")];
    while let Ok(report) = b.rx.recv_timeout(QUIET) {
        reports.push(report);
    }
    assert!(reports.len() <= 1 + long_pauses, "{reports:?}");
    assert!(reports.iter().all(|(c, _)| c.paths == [b.path("k.cu")]));
    assert_eq!(reports.last().unwrap().1, final_content);
}

#[test]
fn other_files_in_the_same_directory_give_nothing() {
    let b = Bench::new(
        &["k.cu", "other.cu", "sentinel.cu"],
        &["k.cu", "sentinel.cu"],
    );
    fs::write(b.path("other.cu"), "x").unwrap();
    write_in_chunks(&b.path("k.cu.tmp99"), &["tmp"]);
    fs::rename(b.path("k.cu.tmp99"), b.path("k.cu.bak")).unwrap();
    fs::write(b.path("k.cu~"), "backup").unwrap();
    fs::remove_file(b.path("k.cu~")).unwrap();
    fs::write(b.path("4913"), "").unwrap();
    fs::remove_file(b.path("4913")).unwrap();
    write_in_chunks(&b.path(".k.cu.swp"), &["swap"]);
    fs::remove_file(b.path(".k.cu.swp")).unwrap();
    fs::create_dir(b.path("subdir")).unwrap();
    // Reading a watched file (as the compiler does) is not a change either.
    assert_eq!(fs::read_to_string(b.path("k.cu")).unwrap(), "v0");
    // Had anything above been taken for a change to k.cu, it would show up before or with this.
    fs::write(b.path("sentinel.cu"), "s").unwrap();
    b.expect_one(&["sentinel.cu"]);
}

#[test]
fn files_saved_together_are_one_change_listing_both() {
    let b = Bench::new(&["a.cu", "b.cuh"], &["b.cuh", "a.cu"]);
    fs::write(b.path("b.cuh"), "v1").unwrap();
    fs::write(b.path("a.cu"), "v1").unwrap();
    b.expect_one(&["a.cu", "b.cuh"]);
}

#[test]
fn set_files_switches_the_watched_set() {
    let mut b = Bench::new(&["a.cu"], &["a.cu"]);
    fs::create_dir(b.path("sub")).unwrap();
    fs::write(b.path("sub/b.cu"), "v0").unwrap();
    b.watch(&["sub/b.cu"]);
    fs::write(b.path("a.cu"), "v1").unwrap();
    fs::write(b.path("sub/b.cu"), "v1").unwrap();
    b.expect_one(&["sub/b.cu"]);
    // And back: the directory that was dropped is watched again.
    b.watch(&["a.cu"]);
    fs::write(b.path("sub/b.cu"), "v2").unwrap();
    fs::write(b.path("a.cu"), "v2").unwrap();
    b.expect_one(&["a.cu"]);
}

#[test]
fn a_missing_directory_is_an_error_naming_the_file_and_keeps_the_old_set() {
    let mut b = Bench::new(&["k.cu"], &["k.cu"]);
    let missing = b.path("no-such-dir/k.cu");
    let err = b
        .watcher
        .set_files(&[b.path("k.cu"), missing.clone()])
        .unwrap_err();
    assert!(matches!(err, WatchError::NoDirectory { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
    fs::write(b.path("k.cu"), "v1").unwrap();
    b.expect_one(&["k.cu"]);
}

#[test]
fn a_deleted_directory_reports_its_files_and_set_files_re_arms_it() {
    let mut b = Bench::new(&[], &[]);
    fs::create_dir(b.path("sub")).unwrap();
    fs::write(b.path("sub/k.cu"), "v0").unwrap();
    b.watch(&["sub/k.cu"]);
    fs::remove_dir_all(b.path("sub")).unwrap();
    assert_eq!(b.expect_one(&["sub/k.cu"]), [None]);
    fs::create_dir(b.path("sub")).unwrap();
    b.watch(&["sub/k.cu"]);
    fs::write(b.path("sub/k.cu"), "v1").unwrap();
    assert_eq!(b.expect_one(&["sub/k.cu"]), [Some("v1".into())]);
}

#[cfg(unix)]
#[test]
fn paths_through_symlinks_are_reported_as_given() {
    let b = Bench::new(&[], &[]);
    fs::create_dir(b.path("real")).unwrap();
    fs::write(b.path("real/k.cu"), "v0").unwrap();
    std::os::unix::fs::symlink(b.path("real"), b.path("link")).unwrap();
    fs::write(b.path("real/target.cuh"), "v0").unwrap();
    std::os::unix::fs::symlink(b.path("real/target.cuh"), b.path("alias.cuh")).unwrap();
    let mut b = b;
    b.watch(&["link/k.cu", "alias.cuh"]);
    // A save through the real directory is seen under the name the caller used.
    fs::write(b.path("real/k.cu"), "v1").unwrap();
    assert_eq!(b.expect_one(&["link/k.cu"]), [Some("v1".into())]);
    // A watched symlink's target is watched too.
    fs::write(b.path("real/target.cuh"), "v1").unwrap();
    assert_eq!(b.expect_one(&["alias.cuh"]), [Some("v1".into())]);
}

#[test]
fn dropping_the_watcher_stops_reports() {
    let b = Bench::new(&["k.cu"], &["k.cu"]);
    let Bench {
        _tmp,
        dir,
        watcher,
        rx,
    } = b;
    drop(watcher);
    fs::write(dir.join("k.cu"), "v1").unwrap();
    // The callback (and its sender) is dropped once the watcher's threads end, with nothing sent.
    match rx.recv_timeout(DEADLINE) {
        Err(RecvTimeoutError::Disconnected) => {}
        other => panic!("expected the channel to close without a report, got {other:?}"),
    }
}
