//! The TUI's whole state: one plain struct, changed only by `update` (see `action.rs`) and
//! read by the pure render functions in `panels/`. Nothing here does I/O.

use crate::compile::{Arch, CompiledVersion};
use crate::diag::Diagnostic;
use crate::report::{DeviceInfo, RunResult};
use crate::workspace::Workspace;
use ratatui::layout::Rect;
use ratatui::text::Line;
use std::path::PathBuf;
use std::sync::Arc;

/// Where a version is in its compile → check → benchmark life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionStatus {
    /// Nothing started yet.
    Idle,
    Compiling,
    /// Compiled; its runs wait until kwb knows whether there is a GPU.
    Queued,
    CompileError,
    Checking,
    CheckFailed,
    Benchmarking,
    Done,
    Crashed,
    Timeout,
}

impl VersionStatus {
    pub fn label(self) -> &'static str {
        match self {
            VersionStatus::Idle => "not run",
            VersionStatus::Compiling => "compiling",
            VersionStatus::Queued => "queued",
            VersionStatus::CompileError => "compile error",
            VersionStatus::Checking => "checking",
            VersionStatus::CheckFailed => "check failed",
            VersionStatus::Benchmarking => "benchmarking",
            VersionStatus::Done => "done",
            VersionStatus::Crashed => "crashed",
            VersionStatus::Timeout => "timeout",
        }
    }

    /// True while new work for the version is under way.
    pub fn busy(self) -> bool {
        matches!(
            self,
            VersionStatus::Compiling | VersionStatus::Checking | VersionStatus::Benchmarking
        )
    }
}

/// One version as the TUI shows it. The last good compile and results stay here while newer
/// work runs (the list marks them stale), so the screen never goes blank on a save.
#[derive(Debug, Clone)]
pub struct VersionView {
    pub name: String,
    pub description: Option<String>,
    pub file: PathBuf,
    pub status: VersionStatus,
    /// The source as last read, for the Source tab.
    pub source: Arc<str>,
    /// `source` highlighted (computed when it changes, never while drawing).
    pub source_lines: Arc<Vec<Line<'static>>>,
    /// The shown compile's PTX, highlighted.
    pub ptx_lines: Arc<Vec<Line<'static>>>,
    /// The shown compile's SASS, when a disassembler is available.
    pub sass: Option<Arc<Vec<Line<'static>>>>,
    /// Tile versions: the shown compile's generated CUDA, highlighted.
    pub cuda_lines: Arc<Vec<Line<'static>>>,
    /// What the version's file is written in.
    pub kind: crate::workspace::SourceKind,
    /// Per line of the shown PTX, the source line (1-based) its `.loc` points at.
    pub ptx_source_lines: Arc<Vec<Option<u32>>>,
    /// The last successful compile.
    pub compiled: Option<Arc<CompiledVersion>>,
    /// The latest compile's diagnostics (errors of a failed compile, or warnings).
    pub diagnostics: Vec<Diagnostic>,
    /// Per problem size (same order as the workspace's sizes), the last result.
    pub results: Vec<Option<RunResult>>,
    /// Per problem size, the last benchmark's samples in µs, for the sparkline.
    pub samples: Vec<Vec<f64>>,
    /// Per problem size: the shown result is a quick look (a few samples, taken first so the
    /// viewed size has a checked, timed figure at once) that a full run is still refining.
    pub provisional: Vec<bool>,
    /// Bumped on every change of the source; results from older generations are stale.
    pub generation: u64,
    /// The generation `compiled` and `results` came from.
    pub shown_generation: u64,
}

impl VersionView {
    /// Results and PTX on screen come from an older source than the latest save. A version
    /// that has shown nothing yet (its first compile is under way, or failed) is never stale.
    pub fn stale(&self) -> bool {
        let shown = self.compiled.is_some() || self.results.iter().any(Option::is_some);
        shown && self.shown_generation < self.generation
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Source,
    Ptx,
    Sass,
    Compare,
    /// The CUDA C++ kwb generated from a tile-language version.
    Cuda,
    /// A swept version's configurations: the table per size, a heatmap for two axes.
    Sweep,
    /// Every version at its arithmetic intensity and achieved FLOP/s under the device's
    /// ceilings, at the viewed size.
    Roofline,
}

impl Tab {
    /// Every tab, in the order of their keys (1-7).
    pub const ALL: [Tab; 7] = [
        Tab::Source,
        Tab::Ptx,
        Tab::Sass,
        Tab::Compare,
        Tab::Cuda,
        Tab::Sweep,
        Tab::Roofline,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Source => "Source",
            Tab::Ptx => "PTX",
            Tab::Sass => "SASS",
            Tab::Compare => "Compare",
            Tab::Cuda => "CUDA",
            Tab::Sweep => "Sweep",
            Tab::Roofline => "Roofline",
        }
    }

    /// The key that selects the tab by default: its place in [`Tab::ALL`], from 1.
    pub fn number(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0) + 1
    }

    /// The title where the tab bar is narrow (80 columns).
    pub fn short(self) -> &'static str {
        match self {
            Tab::Source => "Src",
            Tab::Ptx => "PTX",
            Tab::Sass => "SASS",
            Tab::Compare => "Cmp",
            Tab::Cuda => "CU",
            Tab::Sweep => "Swp",
            Tab::Roofline => "Roof",
        }
    }
}

/// Which part of the screen keys scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Versions,
    Main,
    Diagnostics,
}

/// The occupancy panel's what-if inputs; `None` means "as launched".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WhatIf {
    pub block: Option<u32>,
    pub dynamic_shared: Option<u32>,
    pub register_cap: Option<u32>,
}

/// One row of the Compare tab's side-by-side PTX diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareRow {
    pub left: Option<String>,
    pub right: Option<String>,
    pub kind: RowKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Same,
    Removed,
    Added,
    Changed,
}

/// The two marked versions (indexes into `versions`) and their PTX diff.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareView {
    pub left: usize,
    pub right: usize,
    pub rows: Vec<CompareRow>,
}

/// What kwb knows about the GPU.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuState {
    /// Still finding out.
    Probing,
    /// No usable GPU; the reason is shown in the run panels.
    Absent(String),
    Present(DeviceInfo),
}

/// The whole TUI state.
#[derive(Debug, Clone)]
pub struct App {
    pub workspace: Workspace,
    /// Problems with the workspace file on disk; the last good configuration keeps running.
    pub workspace_errors: Vec<Diagnostic>,
    pub arch: Arch,
    pub versions: Vec<VersionView>,
    pub selected: usize,
    /// The problem size the run panels show.
    pub size: usize,
    pub tab: Tab,
    pub focus: Focus,
    /// Up to two versions marked for Compare.
    pub marks: Vec<usize>,
    pub what_if: WhatIf,
    pub gpu: GpuState,
    /// The highlighted source line (1-based) in the Source tab; PTX lines it produced are
    /// highlighted in the PTX tab, and the reverse.
    pub cursor_line: u32,
    /// The selected PTX line (0-based) in the PTX tab; moving it moves `cursor_line` to the
    /// source line that produced it (the reverse correlation).
    pub ptx_cursor: usize,
    /// Derived by `update` from `cursor_line` and the shown compile's `.loc` map: the PTX
    /// lines (0-based) the cursor's source line produced.
    pub correlated_ptx: Vec<usize>,
    /// The side-by-side PTX diff of the two marked versions, derived by `update`.
    pub compare: Option<CompareView>,
    /// Scroll offset of the main tab, in lines.
    pub scroll: u16,
    pub diagnostic: usize,
    /// Show the selected diagnostic's source line.
    pub show_diagnostic_source: bool,
    pub help: bool,
    /// What the help overlay lists: the key bindings in force, (keys, what they do).
    pub help_lines: Vec<(String, String)>,
    /// How far the help overlay is scrolled, in rows (where it does not fit the screen).
    pub help_scroll: u16,
    /// The terminal's size, as last reported: how far the help can scroll depends on it.
    pub screen: Rect,
    pub theme: usize,
    /// A one-line message at the bottom (last event, errors about themes or the terminal).
    pub message: String,
    pub quit: bool,
}

impl App {
    pub fn new(workspace: Workspace, arch: Arch) -> App {
        let sizes = workspace.sizes.len();
        let versions = workspace
            .versions
            .iter()
            .map(|v| VersionView {
                name: v.name.clone(),
                description: v.description.clone(),
                file: v.file.clone(),
                status: VersionStatus::Idle,
                source: std::fs::read_to_string(&v.file).unwrap_or_default().into(),
                source_lines: Arc::default(),
                ptx_lines: Arc::default(),
                sass: None,
                cuda_lines: Arc::default(),
                kind: v.kind,
                ptx_source_lines: Arc::default(),
                compiled: None,
                diagnostics: Vec::new(),
                results: vec![None; sizes],
                samples: vec![Vec::new(); sizes],
                provisional: vec![false; sizes],
                generation: 0,
                shown_generation: 0,
            })
            .collect();
        App {
            workspace,
            workspace_errors: Vec::new(),
            arch,
            versions,
            selected: 0,
            size: 0,
            tab: Tab::Ptx,
            focus: Focus::Versions,
            marks: Vec::new(),
            what_if: WhatIf::default(),
            gpu: GpuState::Probing,
            cursor_line: 1,
            ptx_cursor: 0,
            correlated_ptx: Vec::new(),
            compare: None,
            scroll: 0,
            diagnostic: 0,
            show_diagnostic_source: false,
            help: false,
            help_lines: super::keys::Keymap::default().help().to_vec(),
            help_scroll: 0,
            screen: Rect::default(),
            theme: 0,
            message: String::new(),
            quit: false,
        }
    }

    /// The tabs on offer: all of them, the Sweep tab only when a version is swept.
    pub fn tabs(&self) -> Vec<Tab> {
        Tab::ALL
            .into_iter()
            .filter(|t| *t != Tab::Sweep || !self.workspace.sweeps.is_empty())
            .collect()
    }

    pub fn current(&self) -> Option<&VersionView> {
        self.versions.get(self.selected)
    }

    /// Every diagnostic on screen: the workspace's first, then each version's.
    pub fn all_diagnostics(&self) -> Vec<&Diagnostic> {
        self.workspace_errors
            .iter()
            .chain(self.versions.iter().flat_map(|v| v.diagnostics.iter()))
            .collect()
    }
}
