//! Tests of the engine's compile scope: a save compiles the specialisations of the sizes its
//! backend runs, and a version compiled for another backend is compiled again before it runs.
//! Real NVRTC compiles, no terminal.

use super::*;
use crate::compile::CompiledVersion;
use crate::report::DeviceInfo;
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
