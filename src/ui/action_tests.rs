//! Tests of `update`: the latest save wins, a broken workspace keeps the running one, and the
//! source ↔ PTX correlation works both ways. Driven with actions directly, no terminal.

use super::*;
use crate::compile::Arch;
use crate::diag::Diagnostic;
use std::path::Path;

fn app() -> App {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/elementwise-add/v1_f32.cu");
    let ws = Workspace::for_kernel_file(&file).unwrap();
    let mut app = App::new(ws, Arch::DEFAULT);
    app.gpu = GpuState::Absent("test".into());
    app
}

fn done(app: &App, generation: u64, ok: bool) -> Action {
    let v = &app.versions[0];
    let result = CompiledVersion {
        version: v.name.clone(),
        file: v.file.clone(),
        arch: Arch::DEFAULT,
        ok,
        diagnostics: if ok {
            vec![]
        } else {
            vec![Diagnostic::error("broken").in_file(&v.file).at(7, Some(3))]
        },
        log: String::new(),
        ptx: Arc::from(format!("// generation {generation}")),
        cubin: Arc::from(Vec::new()),
        kernels: Vec::new(),
        options: Vec::new(),
        includes: Vec::new(),
        cached: false,
        millis: 1.0,
        generated: None,
        tile_kernels: Vec::new(),
        tile_dynamic_shared: Vec::new(),
        tile_tensor_maps: Vec::new(),
        sizes: Vec::new(),
        variants: Vec::new(),
    };
    Action::Compiled(Box::new(CompileDone {
        index: 0,
        generation,
        source: Arc::from("src"),
        source_lines: Arc::default(),
        result: Arc::new(result),
        ptx_lines: Arc::new(vec![
            Line::raw("a"),
            Line::raw("b"),
            Line::raw("c"),
            Line::raw("d"),
        ]),
        sass: None,
        cuda_lines: Arc::default(),
        ptx_source_lines: Arc::new(vec![None, Some(3), Some(3), Some(4)]),
    }))
}

#[test]
fn the_latest_save_wins_and_a_failed_compile_keeps_the_last_good_one() {
    let mut app = app();
    let file = app.versions[0].file.clone();
    assert_eq!(
        update(&mut app, Action::FilesChanged(vec![file.clone()])),
        vec![Effect::Compile {
            index: 0,
            generation: 1
        }]
    );
    assert_eq!(
        update(&mut app, Action::FilesChanged(vec![file])),
        vec![Effect::Compile {
            index: 0,
            generation: 2
        }]
    );
    // The first save's compile arrives late: it is ignored.
    let a = done(&app, 1, true);
    update(&mut app, a);
    assert_eq!(app.versions[0].status, VersionStatus::Compiling);
    assert!(app.versions[0].compiled.is_none());
    let a = done(&app, 2, true);
    // With no GPU, the new compile is checked on the CPU (emulator, tile interpreter).
    assert_eq!(
        update(&mut app, a),
        vec![Effect::Run {
            index: 0,
            generation: 2
        }]
    );
    assert_eq!(app.versions[0].status, VersionStatus::Checking);
    assert_eq!(app.versions[0].shown_generation, 2);
    // A broken save: its diagnostics show, the last good PTX stays (and is marked stale).
    app.versions[0].generation = 3;
    let a = done(&app, 3, false);
    update(&mut app, a);
    assert_eq!(app.versions[0].status, VersionStatus::CompileError);
    assert_eq!(app.versions[0].diagnostics[0].line, Some(7));
    assert_eq!(
        &*app.versions[0].compiled.as_ref().unwrap().ptx,
        "// generation 2"
    );
    assert!(app.versions[0].stale());
}

#[test]
fn an_unrelated_file_changes_nothing() {
    let mut app = app();
    assert!(update(
        &mut app,
        Action::FilesChanged(vec!["/tmp/elsewhere.cu".into()])
    )
    .is_empty());
    assert_eq!(app.versions[0].generation, 0);
}

#[test]
fn a_broken_workspace_keeps_the_running_configuration() {
    let mut app = app();
    let before = app.workspace.versions.clone();
    let diag = Diagnostic::error("unknown field `grdi`")
        .in_file("w.yaml")
        .at(9, Some(5));
    let effects = update(&mut app, Action::WorkspaceReloaded(Err(vec![diag])));
    assert!(effects.is_empty());
    assert_eq!(app.workspace.versions, before);
    assert_eq!(app.workspace_errors.len(), 1);
    assert!(app.message.contains("previous configuration"));
    assert_eq!(app.all_diagnostics().len(), 1);
}

#[test]
fn source_and_ptx_lines_correlate_both_ways() {
    let mut app = app();
    let a = done(&app, 0, true);
    update(&mut app, a);
    app.focus = Focus::Main;
    app.tab = Tab::Source;
    app.cursor_line = 2;
    update(&mut app, Action::Down);
    assert_eq!(app.cursor_line, 3);
    assert_eq!(
        app.correlated_ptx,
        vec![1, 2],
        "source line 3 produced PTX lines 1 and 2"
    );
    app.tab = Tab::Ptx;
    app.ptx_cursor = 2;
    update(&mut app, Action::Down);
    assert_eq!(app.ptx_cursor, 3);
    assert_eq!(app.cursor_line, 4, "PTX line 3 came from source line 4");
    assert_eq!(app.correlated_ptx, vec![3]);
}

#[test]
fn what_if_keys_move_within_the_hardware_limits() {
    let mut app = app();
    for _ in 0..10 {
        update(&mut app, Action::WhatIfBlock(1));
    }
    assert_eq!(app.what_if.block, Some(1024));
    for _ in 0..100 {
        update(&mut app, Action::WhatIfRegisters(-1));
    }
    assert_eq!(app.what_if.register_cap, Some(16));
    update(&mut app, Action::WhatIfShared(1));
    assert_eq!(app.what_if.dynamic_shared, Some(4096));
    update(&mut app, Action::WhatIfReset);
    assert_eq!(app.what_if, WhatIf::default());
}

#[test]
fn a_gpu_of_another_arch_recompiles_everything_for_it() {
    let mut app = app();
    let device = crate::report::DeviceInfo::stand_in("sm_89");
    let effects = update(&mut app, Action::Gpu(GpuState::Present(device)));
    let sm89 = Arch::parse("sm_89").unwrap();
    assert_eq!(
        effects,
        vec![
            Effect::Retarget(sm89),
            Effect::Compile {
                index: 0,
                generation: 1
            }
        ]
    );
    assert_eq!(app.arch, sm89);
    assert!(app.message.contains("sm_89"));
}

#[test]
fn an_sm_90a_workspace_stays_sm_90a_on_its_sm_90_gpu() {
    let mut app = app();
    app.arch = Arch::parse("sm_90a").unwrap();
    let device = crate::report::DeviceInfo::stand_in("sm_90");
    let effects = update(&mut app, Action::Gpu(GpuState::Present(device)));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Retarget(_))),
        "{effects:?}"
    );
    assert_eq!(app.arch.to_string(), "sm_90a");
}

#[test]
fn the_reconnect_key_asks_the_gpu_thread_to_reconnect() {
    let mut app = app();
    assert_eq!(update(&mut app, Action::Reconnect), vec![Effect::Reconnect]);
}

/// The elementwise-add workspace, which has sizes to run at.
fn sized_app() -> App {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("workspaces/elementwise-add.yaml");
    let mut app = App::new(crate::workspace::load(&path).unwrap(), Arch::DEFAULT);
    app.gpu = GpuState::Absent("test".into());
    app
}

fn finished(app: &App, status: Status, provisional: bool, last: bool) -> Action {
    let size = app.workspace.sizes[0].name.clone();
    Action::Run {
        index: 0,
        generation: app.versions[0].generation,
        size: 0,
        event: RunEvent::Finished {
            result: Box::new(RunResult::new(&app.versions[0].name, &size, status)),
            samples: vec![1.0, 2.0],
            last,
            provisional,
        },
    }
}

#[test]
fn a_quick_look_shows_provisional_figures_until_its_full_run_replaces_them() {
    let mut app = sized_app();
    let a = done(&app, 0, true);
    update(&mut app, a);
    let a = finished(&app, Status::Ok, true, false);
    update(&mut app, a);
    let v = &app.versions[0];
    assert!(
        v.results[0].is_some(),
        "the quick look's result is shown at once"
    );
    assert!(v.provisional[0]);
    assert_eq!(v.status, VersionStatus::Benchmarking, "still refining");
    let a = finished(&app, Status::Ok, false, true);
    update(&mut app, a);
    let v = &app.versions[0];
    assert!(!v.provisional[0]);
    assert_eq!(v.status, VersionStatus::Done);
}

#[test]
fn a_failed_or_skipped_quick_look_is_final() {
    for (status, shown) in [
        (Status::CheckFailed, VersionStatus::CheckFailed),
        (Status::Skipped, VersionStatus::Done),
    ] {
        let mut app = sized_app();
        let a = done(&app, 0, true);
        update(&mut app, a);
        let a = finished(&app, status, true, false);
        update(&mut app, a);
        assert!(!app.versions[0].provisional[0], "{status:?}");
        // The GPU thread sends it again as final, as the last of the request.
        let a = finished(&app, status, false, true);
        update(&mut app, a);
        assert!(!app.versions[0].provisional[0], "{status:?}");
        assert_eq!(app.versions[0].status, shown, "{status:?}");
    }
}

#[test]
fn the_reseed_key_draws_new_inputs_and_reruns_every_compiled_version() {
    let mut app = sized_app();
    assert_eq!(update(&mut app, Action::Reseed), vec![Effect::Reseed]);
    let a = done(&app, 0, true);
    update(&mut app, a);
    let generation = app.versions[0].generation;
    assert_eq!(
        update(&mut app, Action::Reseed),
        vec![
            Effect::Reseed,
            Effect::Run {
                index: 0,
                generation
            }
        ]
    );
}
