//! Tests of the engine's compile scope: a save compiles the specialisations of the sizes its
//! backend runs, and a version compiled for another backend is compiled again before it runs.
//! Real NVRTC compiles, no terminal.

use super::*;
use crate::compile::CompiledVersion;
use crate::report::DeviceInfo;
use crate::ui::app::VersionStatus;
use std::path::Path;

fn device() -> DeviceInfo {
    DeviceInfo::stand_in("sm_90")
}

/// The elementwise-add workspace: GPU sizes 1Mi, 16Mi, 256Mi (n divisible by 16, so tile v8
/// gets 128-bit vectors) and the CPU size `odd` (scalar, masked accesses).
fn setup() -> (Engine, App, Receiver<Msg>, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("workspaces/elementwise-add.yaml");
    let app = App::new(crate::workspace::load(&path).unwrap(), Arch::DEFAULT);
    let (tx, rx) = channel();
    let compiler = Compiler::new(Arch::DEFAULT, Cache::disabled()).unwrap();
    let engine = Engine::new(
        tx,
        compiler,
        super::super::themes::available(false).0,
        false,
    );
    let v8 = app.workspace.versions.iter().position(|v| v.name == "v8");
    (engine, app, rx, v8.unwrap())
}

/// The next compile result the engine sends, skipping other messages (SASS, runs).
fn next_compiled(rx: &Receiver<Msg>) -> Box<CompileDone> {
    loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Msg::Action(Action::Compiled(done))) => return done,
            Ok(_) => continue,
            Err(e) => panic!("no compile result: {e}"),
        }
    }
}

fn specialised_for(c: &CompiledVersion) -> Vec<Vec<String>> {
    std::iter::once(c)
        .chain(&c.variants)
        .map(|p| p.sizes.clone())
        .collect()
}

/// Compiles version `index` as the engine does with a GPU present.
fn compile_on_a_gpu(
    engine: &mut Engine,
    app: &mut App,
    rx: &Receiver<Msg>,
    index: usize,
) -> Box<CompileDone> {
    app.gpu = GpuState::Present(device());
    let compile = Effect::Compile {
        index,
        generation: 0,
    };
    engine.effect(app, compile);
    next_compiled(rx)
}

#[test]
fn a_gpu_compiles_only_the_gpu_sizes_and_a_cpu_only_the_cpu_sizes() {
    let (mut engine, mut app, rx, v8) = setup();
    let gpu = compile_on_a_gpu(&mut engine, &mut app, &rx, v8);
    assert!(gpu.result.ok, "{:?}", gpu.result.diagnostics);
    // One specialisation serves every GPU size; the scalar one for `odd` is not compiled.
    assert_eq!(
        gpu.result.variants.len(),
        0,
        "{:?}",
        specialised_for(&gpu.result)
    );
    assert!(["1Mi", "16Mi", "256Mi"]
        .iter()
        .all(|s| gpu.result.serves(s)));
    assert!(!gpu.result.serves("odd"));
    assert!(gpu
        .result
        .generated
        .as_deref()
        .unwrap()
        .contains("kwb_ld128("));
    // (Taking the result ends the compile in flight; with no GPU thread, nothing runs.)
    engine.apply(&mut app, Action::Compiled(gpu));

    app.gpu = GpuState::Absent("test".into());
    engine.effect(
        &mut app,
        Effect::Compile {
            index: v8,
            generation: 0,
        },
    );
    let cpu = next_compiled(&rx);
    assert!(cpu.result.serves("odd"));
    assert!(!cpu.result.serves("16Mi"));
    assert!(cpu
        .result
        .generated
        .as_deref()
        .unwrap()
        .contains("kwb_ld16s("));
}

#[test]
fn a_version_compiled_for_the_gpu_is_compiled_again_before_it_runs_on_the_cpu() {
    let (mut engine, mut app, rx, v8) = setup();
    let gpu = compile_on_a_gpu(&mut engine, &mut app, &rx, v8);
    assert!(!gpu.result.serves("odd"));
    // The GPU went away before the result arrived: its run goes to the CPU, at `odd`, which
    // this compile does not serve, so the engine compiles again instead of running it.
    app.gpu = GpuState::Absent("test".into());
    engine.apply(&mut app, Action::Compiled(gpu));
    let again = next_compiled(&rx);
    assert_eq!(again.index, v8);
    assert!(
        again.result.serves("odd"),
        "{:?}",
        specialised_for(&again.result)
    );
    // That one runs: the CPU checks v8 at `odd`.
    engine.apply(&mut app, Action::Compiled(again));
    loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Msg::Action(Action::Run {
                index,
                event: RunEvent::Finished { result, .. },
                ..
            })) if index == v8 => {
                assert_eq!(result.size, "odd");
                assert_eq!(
                    result.status,
                    crate::report::Status::Ok,
                    "{:?}",
                    result.message
                );
                break;
            }
            Ok(Msg::Action(Action::Compiled(_))) => panic!("compiled a third time"),
            Ok(_) => continue,
            Err(e) => panic!("no run result: {e}"),
        }
    }
}

/// What the loop saw while a file was saved: the saves (`FilesChanged`), the compiles that
/// landed, and each state the version's row went through (its status, whether it was marked
/// stale, and which save its PTX came from; consecutive repeats folded).
#[derive(Debug, Default)]
struct Seen {
    saves: usize,
    compiles: usize,
    states: Vec<(VersionStatus, bool, u64)>,
}

impl Seen {
    /// Applies one message as the loop does and records what it did to version 0.
    fn apply(&mut self, engine: &mut Engine, app: &mut App, m: Msg) {
        let Msg::Action(a) = m else { return };
        match &a {
            Action::FilesChanged(_) => self.saves += 1,
            Action::Compiled(_) => self.compiles += 1,
            _ => {}
        }
        engine.apply(app, a);
        let v = &app.versions[0];
        let now = (v.status, v.stale(), v.shown_generation);
        if self.states.last() != Some(&now) {
            self.states.push(now);
        }
    }
}

/// The finding: 20 writes of a kernel 50 ms apart flickered through 28 states (with the 30 ms
/// window this test saw 16 to 18 saves and 5 compiles). Through the watch loop's own path (the
/// runtime's watcher on a real file, `FilesChanged`, the engine and real NVRTC compiles), such a
/// burst is one save: one compile, of the last write, and the row goes compiling → compiled
/// once. A writer that the machine held up for 3/4 of the watcher's quiet time or more between
/// two writes may really have paused; each such pause may add one save.
#[test]
fn a_burst_of_20_writes_50ms_apart_is_one_save_and_one_compile() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.cu");
    let original = std::fs::read_to_string(repo.join("kernels/elementwise-add/v1_f32.cu")).unwrap();
    std::fs::write(&file, &original).unwrap();
    let mut ws = crate::workspace::load(&repo.join("workspaces/elementwise-add.yaml")).unwrap();
    ws.versions.truncate(1);
    ws.sweeps.clear();
    ws.versions[0].file = file.clone();
    let mut app = App::new(ws, Arch::DEFAULT);
    let (tx, rx) = channel();
    let compiler = Compiler::new(Arch::DEFAULT, Cache::disabled()).unwrap();
    let mut engine = Engine::new(
        tx.clone(),
        compiler,
        super::super::themes::available(false).0,
        false,
    );
    let _watcher = watch(&tx, std::slice::from_ref(&file)).unwrap();
    let mut seen = Seen::default();
    let gap = Duration::from_millis(50);
    let mut last: Option<Instant> = None;
    let mut pauses = 0;
    for i in 0..20 {
        let now = Instant::now();
        if last.is_some_and(|t| now - t >= SAVE_TIMING.quiet * 3 / 4) {
            pauses += 1;
        }
        last = Some(now);
        std::fs::write(&file, format!("{original}// write {i}\n")).unwrap();
        // The loop keeps serving messages between writes, as it does while the user types.
        let next = now + gap;
        while let Some(left) = next.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(m) => seen.apply(&mut engine, &mut app, m),
                Err(_) => break,
            }
        }
    }
    // Then until the compile of the last write is on screen and nothing more comes.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let settled =
            app.versions[0].source.contains("// write 19") && !app.versions[0].status.busy();
        let wait = if settled {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(1)
        };
        match rx.recv_timeout(wait) {
            Ok(m) => seen.apply(&mut engine, &mut app, m),
            Err(_) if settled => break,
            Err(_) => assert!(
                Instant::now() < deadline,
                "no compile of the last write: {seen:?}"
            ),
        }
    }
    eprintln!("{seen:?}; the writer paused {pauses} times");
    assert!(app.versions[0].source.ends_with("// write 19\n"));
    assert!(seen.saves >= 1 && seen.saves <= 1 + pauses, "{seen:?}");
    assert!(
        seen.compiles >= 1 && seen.compiles <= seen.saves,
        "{seen:?}"
    );
    if pauses == 0 {
        assert_eq!((seen.saves, seen.compiles), (1, 1), "{seen:?}");
        let states = [
            (VersionStatus::Compiling, false, 0),
            (VersionStatus::Queued, false, 1),
        ];
        assert_eq!(seen.states, states, "{seen:?}");
    }
}
