//! File watching for hot reload: turns an editor's save, whatever its strategy, into one
//! [`Changed`] naming the watched file.
//!
//! Why this exists: editors rarely save by writing the file in place. VS Code and JetBrains write a
//! temporary file and rename it over the original (the watched inode is replaced), vim renames the
//! original to `file~` and writes a new file (after probing the directory with a file called
//! `4913`), `sed -i` renames its `sedXXXXXX` temporary over the file, and a plain write arrives as
//! a burst of modify events. A watch on the file itself would go dead on the first rename, and raw
//! events would trigger several recompiles per save, some of them while the file is half written.
//!
//! How:
//! * The parent *directories* of the watched files are watched (non-recursively), so a file
//!   renamed over a watched one, or deleted and created again, is still seen.
//! * Event paths are compared with keys made once, in [`FileWatcher::set_files`]: the canonical
//!   parent directory joined with the file name (plus, for a file that is a symlink, its target).
//!   Events on other files of those directories (temporaries, `~` backups, `4913`, `.swp`) are
//!   dropped unless a rename lands them on a watched file. Reads (open, close without write, access
//!   time) never count, so the compiler reading a source does not trigger a reload.
//! * Two stages of debouncing ([`Timing`]). notify-debouncer-full (timeout `stitch`, tick
//!   `stitch / 4`) stitches rename pairs and drops duplicates, but it releases each raw event on its
//!   own timer, so a burst longer than its timeout comes out in several batches. A second,
//!   trailing-edge stage on our own thread merges batches and calls `on_change` once the watched
//!   files have been quiet for `quiet`.
//!
//! Guarantee: events on watched files that follow each other by less than `quiet - stitch / 4`
//! give exactly one `Changed`, delivered about `stitch + quiet` to `stitch + quiet + stitch / 4`
//! (plus scheduling delay) after the last of them, so a save whose steps are that close is read
//! once, when done. Gaps longer than `quiet + stitch / 4` always give separate events, except that
//! a file reported again within `max_delay` with the same bytes is not reported (the tail of one
//! save whose steps were spread out, such as vim's fsync on a loaded machine). Activity that never
//! pauses is still reported at least every `max_delay`. [`FileWatcher::new`] takes one `debounce`
//! for all three ([`Timing::debounce`]): merged below `7/8 × debounce`, delivered after
//! `1.5 × debounce` to `1.625 × debounce`, reported at least every [`MAX_DELAY_FACTOR`] ×
//! `debounce`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use notify_debouncer_full::notify::event::{AccessKind, AccessMode, MetadataKind, ModifyKind};
use notify_debouncer_full::notify::{self, Event, EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};

/// Smaller debounce values are raised to this, so the debouncer's tick never spins.
pub const MIN_DEBOUNCE: Duration = Duration::from_millis(4);
/// With [`Timing::debounce`], a change is reported at the latest this many `debounce` periods
/// after it, even if the watched files never go quiet.
pub const MAX_DELAY_FACTOR: u32 = 10;

/// How raw events are grouped into one [`Changed`] (the module doc says what each guarantees).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The first stage's timeout (notify-debouncer-full: stitches rename pairs, drops
    /// duplicates; it ticks every quarter of it).
    pub stitch: Duration,
    /// The second stage: a change is reported once the watched files have been quiet this long,
    /// so writes closer than about this are one change.
    pub quiet: Duration,
    /// A change is reported at the latest this long after its first event, even if the files
    /// never go quiet; a file reported again within this long with the same bytes is dropped.
    pub max_delay: Duration,
}

impl Timing {
    /// One figure for all three: stitch `debounce / 2`, quiet `debounce`, max delay
    /// [`MAX_DELAY_FACTOR`] × `debounce`.
    pub fn debounce(debounce: Duration) -> Timing {
        let debounce = debounce.max(MIN_DEBOUNCE);
        Timing {
            stitch: debounce / 2,
            quiet: debounce,
            max_delay: debounce * MAX_DELAY_FACTOR,
        }
    }
}

/// Watched files whose content may have changed since the previous `Changed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The paths exactly as they were given to [`FileWatcher::set_files`], sorted and deduplicated,
    /// so the caller can look them up directly. A file deleted and not re-created is included too:
    /// the caller finds it missing.
    pub paths: Vec<PathBuf>,
}

/// Why a watch could not be set up. Every variant about a file names it.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot start the file watcher: {0}")]
    Start(#[source] notify::Error),
    #[error("cannot watch {}: its directory {} is not usable: {source}", path.display(), dir.display())]
    NoDirectory {
        path: PathBuf,
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot watch {}: it does not name a file", path.display())]
    NotAFile { path: PathBuf },
    #[error("cannot watch {} (directory {}): {source}", path.display(), dir.display())]
    Watch {
        path: PathBuf,
        dir: PathBuf,
        #[source]
        source: notify::Error,
    },
}

/// Watches a set of files (kernel sources, the files they include, the workspace YAML) by
/// watching their parent directories non-recursively, so that renames over a file are seen, and
/// reports changes to exactly those files. Dropping it stops the reports.
pub struct FileWatcher {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    set: Arc<Mutex<WatchSet>>,
    /// Watched directory (canonical) → the first given path that needed it, for error messages.
    dirs: BTreeMap<PathBuf, PathBuf>,
}

impl FileWatcher {
    /// Starts a watcher with an empty set. `debounce`: e.g. 30 ms (see the module doc for what it
    /// guarantees). `on_change` is called from the watcher's own thread.
    pub fn new(
        debounce: Duration,
        on_change: impl FnMut(Changed) + Send + 'static,
    ) -> Result<FileWatcher, WatchError> {
        FileWatcher::with_timing(Timing::debounce(debounce), on_change)
    }

    /// [`FileWatcher::new`] with each stage's timing given (see [`Timing`]).
    pub fn with_timing(
        timing: Timing,
        on_change: impl FnMut(Changed) + Send + 'static,
    ) -> Result<FileWatcher, WatchError> {
        let stitch = timing.stitch.max(MIN_DEBOUNCE / 2);
        let quiet = timing.quiet.max(MIN_DEBOUNCE);
        let max_delay = timing.max_delay.max(quiet);
        let set = Arc::new(Mutex::new(WatchSet::default()));
        let (tx, rx) = mpsc::channel::<Vec<PathBuf>>();
        let coalescer_set = Arc::clone(&set);
        thread::Builder::new()
            .name("kwb-watch".into())
            .spawn(move || coalesce(&rx, quiet, max_delay, &coalescer_set, on_change))
            .map_err(|e| WatchError::Start(notify::Error::io(e)))?;
        let mapper_set = Arc::clone(&set);
        // Dropping the debouncer ends its thread, which drops `tx` and so ends ours.
        let debouncer = new_debouncer(
            stitch,
            Some(stitch / 4),
            move |result: DebounceEventResult| {
                let hits = lock(&mapper_set).affected(&result);
                if !hits.is_empty() {
                    let _ = tx.send(hits);
                }
            },
        )
        .map_err(WatchError::Start)?;
        Ok(FileWatcher {
            debouncer,
            set,
            dirs: BTreeMap::new(),
        })
    }

    /// Replaces the watched set (the workspace may change its files). A file need not exist yet,
    /// but its directory must. On error the previous set stays in force. A watched directory that
    /// is deleted reports all its files; calling this again once it is back re-arms the watch.
    pub fn set_files(&mut self, files: &[PathBuf]) -> Result<(), WatchError> {
        let mut new = WatchSet::default();
        let mut wanted = BTreeMap::new();
        for given in files {
            for key in watch_keys(given)? {
                if let Some(dir) = key.parent() {
                    wanted
                        .entry(dir.to_path_buf())
                        .or_insert_with(|| given.clone());
                }
                new.insert(key, given.clone());
            }
        }
        let mut added = Vec::new();
        for (dir, given) in &wanted {
            // Watching an already watched directory again is harmless, and re-arms it if it was
            // deleted and re-created since.
            if let Err(source) = self.debouncer.watch(dir, RecursiveMode::NonRecursive) {
                for dir in added {
                    let _ = self.debouncer.unwatch(dir);
                }
                return Err(WatchError::Watch {
                    path: given.clone(),
                    dir: dir.clone(),
                    source,
                });
            }
            if !self.dirs.contains_key(dir) {
                added.push(dir);
            }
        }
        for dir in self.dirs.keys().filter(|d| !wanted.contains_key(*d)) {
            // Fails when the directory is already gone, which is fine.
            let _ = self.debouncer.unwatch(dir);
        }
        *lock(&self.set) = new;
        self.dirs = wanted;
        Ok(())
    }
}

impl Drop for FileWatcher {
    fn drop(&mut self) {
        // Changes still on their way are filtered out against the now empty set.
        *lock(&self.set) = WatchSet::default();
    }
}

fn lock(set: &Mutex<WatchSet>) -> MutexGuard<'_, WatchSet> {
    set.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The keys events are compared with for one given path: the canonical parent directory joined
/// with the file name, and, when that is a symlink, also the file it resolves to (editing the
/// target produces events only in the target's directory).
fn watch_keys(given: &Path) -> Result<Vec<PathBuf>, WatchError> {
    let not_a_file = || WatchError::NotAFile {
        path: given.to_path_buf(),
    };
    let name = given.file_name().ok_or_else(not_a_file)?;
    let parent = match given.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let no_dir = |source| WatchError::NoDirectory {
        path: given.to_path_buf(),
        dir: parent.to_path_buf(),
        source,
    };
    let dir = parent.canonicalize().map_err(no_dir)?;
    if !dir.is_dir() {
        return Err(no_dir(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    let key = dir.join(name);
    if key.is_dir() {
        return Err(not_a_file());
    }
    let mut keys = vec![key.clone()];
    match key.canonicalize() {
        Ok(target) if target != key => keys.push(target),
        _ => {}
    }
    Ok(keys)
}

/// Whether an event of this kind may mean the file's content changed. Reads do not count.
fn changes_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any => true,
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        // Data, renames, and metadata (so `touch file.cu` forces a reload).
        EventKind::Modify(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Other => false,
    }
}

/// The watched set as the event-mapping side sees it.
#[derive(Debug, Default)]
struct WatchSet {
    /// Key (see [`watch_keys`]) → the given paths it stands for.
    keys: HashMap<PathBuf, Vec<PathBuf>>,
    given: BTreeSet<PathBuf>,
}

impl WatchSet {
    fn insert(&mut self, key: PathBuf, given: PathBuf) {
        let entry = self.keys.entry(key).or_default();
        if !entry.contains(&given) {
            entry.push(given.clone());
        }
        self.given.insert(given);
    }

    /// The given paths a debounced batch touches, sorted. Errors and overflows (the kernel queue
    /// overflowed, events were lost) count as a change to every file, so the caller re-reads.
    fn affected(&self, result: &DebounceEventResult) -> Vec<PathBuf> {
        let mut out = BTreeSet::new();
        match result {
            Ok(events) => events.iter().for_each(|e| self.event_hits(e, &mut out)),
            Err(_) => out.extend(self.given.iter().cloned()),
        }
        out.into_iter().collect()
    }

    fn event_hits(&self, event: &Event, out: &mut BTreeSet<PathBuf>) {
        if event.need_rescan() {
            out.extend(self.given.iter().cloned());
            return;
        }
        if !changes_content(&event.kind) {
            return;
        }
        let gone = matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        );
        for path in &event.paths {
            if let Some(given) = self.keys.get(path) {
                out.extend(given.iter().cloned());
            } else if gone {
                // A watched directory itself was removed or moved: all its files are affected.
                for (key, given) in &self.keys {
                    if key.parent() == Some(path.as_path()) {
                        out.extend(given.iter().cloned());
                    }
                }
            }
        }
    }
}

/// The trailing-edge stage: gathers hits until none has come for `quiet` (or the oldest has waited
/// `max_delay`), then reports the ones still watched. Ends when the debouncer thread, which owns
/// the sender, ends.
fn coalesce(
    rx: &Receiver<Vec<PathBuf>>,
    quiet: Duration,
    max_delay: Duration,
    set: &Mutex<WatchSet>,
    mut on_change: impl FnMut(Changed),
) {
    // Each path's content at its last report, and when. A path reported again within
    // `max_delay` with the same bytes is the tail of the same save (an editor's fsync or
    // attribute change after a pause longer than `quiet`, as vim's on a loaded machine), not a
    // new change: it is dropped.
    let mut reported: HashMap<PathBuf, (Option<u64>, Instant)> = HashMap::new();
    while let Ok(first) = rx.recv() {
        let deadline = Instant::now() + max_delay;
        let mut pending: BTreeSet<PathBuf> = first.into_iter().collect();
        let open = loop {
            let wait = quiet.min(deadline.saturating_duration_since(Instant::now()));
            match rx.recv_timeout(wait) {
                Ok(more) if Instant::now() < deadline => pending.extend(more),
                Ok(more) => {
                    pending.extend(more);
                    break true;
                }
                Err(RecvTimeoutError::Timeout) => break true,
                Err(RecvTimeoutError::Disconnected) => break false,
            }
        };
        let paths: Vec<PathBuf> = {
            let set = lock(set);
            pending
                .into_iter()
                .filter(|p| set.given.contains(p))
                .collect()
        };
        let now = Instant::now();
        let paths: Vec<PathBuf> = paths
            .into_iter()
            .filter(|p| {
                let digest = content_digest(p);
                let again = matches!(reported.get(p),
                    Some((d, at)) if *d == digest && now.duration_since(*at) < max_delay);
                reported.insert(p.clone(), (digest, now));
                !again
            })
            .collect();
        if !paths.is_empty() {
            on_change(Changed { paths });
        }
        if !open {
            break;
        }
    }
}

/// A hash of the file's bytes (None when it cannot be read: missing, or a directory).
fn content_digest(path: &Path) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let bytes = std::fs::read(path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, RemoveKind, RenameMode};
    use notify_debouncer_full::DebouncedEvent;

    fn set() -> WatchSet {
        let mut s = WatchSet::default();
        s.insert("/w/k.cu".into(), "src/k.cu".into());
        s.insert("/w/k.h".into(), "src/k.h".into());
        s.insert("/other/ws.yaml".into(), "ws.yaml".into());
        s
    }

    fn hits(kind: EventKind, paths: &[&str]) -> Vec<PathBuf> {
        let mut event = Event::new(kind);
        event.paths = paths.iter().map(PathBuf::from).collect();
        set().affected(&Ok(vec![DebouncedEvent::new(event, Instant::now())]))
    }

    #[test]
    fn events_map_to_the_given_paths_of_watched_files_only() {
        let k = vec![PathBuf::from("src/k.cu")];
        let none: Vec<PathBuf> = Vec::new();
        let rename = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(hits(rename, &["/w/k.cu.tmp1", "/w/k.cu"]), k);
        assert_eq!(hits(rename, &["/w/k.cu", "/w/k.cu~"]), k);
        assert_eq!(hits(rename, &["/w/a.tmp", "/w/b.tmp"]), none);
        assert_eq!(
            hits(EventKind::Create(CreateKind::File), &["/w/4913"]),
            none
        );
        assert_eq!(
            hits(EventKind::Remove(RemoveKind::File), &["/w/k.cu~"]),
            none
        );
        assert_eq!(hits(EventKind::Remove(RemoveKind::File), &["/w/k.cu"]), k);
        let close_write = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert_eq!(hits(close_write, &["/w/k.cu"]), k);
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(hits(open, &["/w/k.cu"]), none);
        let atime = EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime));
        assert_eq!(hits(atime, &["/w/k.cu"]), none);
        // The watched directory itself disappearing affects the files in it, and only those.
        let gone = hits(EventKind::Remove(RemoveKind::Folder), &["/w"]);
        assert_eq!(gone, [PathBuf::from("src/k.cu"), PathBuf::from("src/k.h")]);
    }

    #[test]
    fn rescans_and_errors_report_every_file() {
        let all = ["src/k.cu", "src/k.h", "ws.yaml"]
            .map(PathBuf::from)
            .to_vec();
        let rescan = Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        let ok = Ok(vec![DebouncedEvent::new(rescan, Instant::now())]);
        assert_eq!(set().affected(&ok), all);
        let err = Err(vec![notify::Error::generic("lost")]);
        assert_eq!(set().affected(&err), all);
    }

    #[test]
    fn keys_join_the_canonical_directory_and_the_name() {
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let keys = watch_keys(Path::new("not-yet-there.cu")).unwrap();
        assert_eq!(keys, [cwd.join("not-yet-there.cu")]);
        let keys = watch_keys(Path::new("src/../src/lib.rs")).unwrap();
        assert_eq!(keys, [cwd.join("src/lib.rs")]);
        assert!(matches!(
            watch_keys(Path::new("no/such/dir/k.cu")),
            Err(WatchError::NoDirectory { .. })
        ));
        assert!(matches!(
            watch_keys(Path::new("/")),
            Err(WatchError::NotAFile { .. })
        ));
        assert!(matches!(
            watch_keys(Path::new("src")),
            Err(WatchError::NotAFile { .. })
        ));
    }
}
