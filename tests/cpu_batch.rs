//! `kwb batch --cpu` with no GPU: every shipped version of every workspace runs on the CPU (CUDA
//! in the PTX emulator, tile kernels in the tile interpreter) and passes its reference check;
//! the tile kernels' generated code passes in the emulator too; broken kernels are reported
//! with what went wrong and where, while the versions after them still run.

mod support;

use kwb::report::{Backend, BatchReport, Status};

fn assert_all_pass(workspace: &str, extra: &[&str]) -> BatchReport {
    let mut args = vec![workspace];
    args.extend_from_slice(extra);
    let (code, report, err) = support::cpu_batch_json(&args);
    for r in &report.results {
        assert_eq!(
            r.status,
            Status::Ok,
            "{workspace}: {} @ {}: {:?}\n{err}",
            r.version,
            r.size,
            r.message
        );
        let check = r.check.as_ref().expect("checked against the reference");
        assert!(check.passed, "{workspace}: {} @ {}", r.version, r.size);
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        assert!(r.timing.is_none(), "the CPU times nothing");
    }
    assert_eq!(code, kwb::exit::OK, "{err}");
    assert_eq!(report.backend, Some(Backend::Emulator));
    report
}

#[test]
fn every_shipped_version_passes_on_the_cpu() {
    let mut shipped: Vec<_> = std::fs::read_dir(support::repo().join("workspaces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    shipped.sort();
    assert!(shipped.len() >= 3, "{shipped:?}");
    let mut interpreted = 0;
    for path in shipped {
        let ws = format!("workspaces/{}", path.file_name().unwrap().to_string_lossy());
        // Tile-language versions (.tile, .py) run in the interpreter, CUDA in the emulator.
        let loaded = kwb::workspace::load(&path).unwrap();
        let emulated: Vec<&str> = loaded
            .sizes
            .iter()
            .filter(|s| s.emulate)
            .map(|s| s.name.as_str())
            .collect();
        assert!(!emulated.is_empty(), "{ws} has no size for the CPU");
        let tile: Vec<String> = loaded
            .versions
            .iter()
            .filter(|v| v.kind != kwb::workspace::SourceKind::Cuda)
            .map(|v| v.name.clone())
            .collect();
        let report = assert_all_pass(&ws, &[]);
        assert!(!report.results.is_empty());
        for r in &report.results {
            // The sizes meant for emulation, and only those.
            assert!(
                emulated.contains(&r.size.as_str()),
                "{ws}: {} @ {}",
                r.version,
                r.size
            );
            let want = if tile.contains(&r.version) {
                interpreted += 1;
                Backend::Interpreter
            } else {
                Backend::Emulator
            };
            assert_eq!(r.backend, Some(want), "{ws}: {}", r.version);
        }
    }
    assert!(interpreted >= 5, "only {interpreted} tile versions ran");
}

#[test]
fn tile_kernels_generated_code_passes_in_the_emulator() {
    // The tile compiler's output, run instruction by instruction: a check of the lowering that
    // needs no GPU.
    for (ws, versions) in [
        ("workspaces/elementwise-add.yaml", "v8"),
        ("workspaces/gelu.yaml", "v4"),
        ("workspaces/softmax.yaml", "v5,v6,triton"),
    ] {
        let report = assert_all_pass(ws, &["--cpu-engine", "emulator", "--versions", versions]);
        assert!(report
            .results
            .iter()
            .all(|r| r.backend == Some(Backend::Emulator)));
    }
}

#[test]
fn tile_kernels_pass_at_sizes_that_exercise_their_masks() {
    for ws in [
        "tile_odd_sizes",
        "tile_odd_add",
        "tile_odd_gelu",
        "tile_strided_matmul",
    ] {
        let ws = format!("tests/fixtures/workspaces/{ws}.yaml");
        let sizes = kwb::workspace::load(&support::repo().join(&ws))
            .unwrap()
            .sizes
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
            .join(",");
        assert_all_pass(&ws, &["--sizes", &sizes]);
        assert_all_pass(&ws, &["--sizes", &sizes, "--cpu-engine", "emulator"]);
    }
}

#[test]
fn broken_kernels_are_reported_with_what_and_where() {
    let (code, report, err) = support::cpu_batch_json(&[
        "tests/fixtures/broken/broken.yaml",
        "--versions",
        "good,oob,wrong,unwritten,good2",
    ]);
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    let get = |v: &str| report.results.iter().find(|r| r.version == v).unwrap();
    assert_eq!(get("good").status, Status::Ok);
    assert_eq!(get("good2").status, Status::Ok);
    let oob = get("oob");
    assert_eq!(oob.status, Status::CheckFailed);
    let f = &oob.findings[0];
    assert_eq!(f.kind, "out-of-bounds", "{f}");
    assert!(
        f.file.as_deref().is_some_and(|p| p.ends_with("broken.cu")),
        "{f}"
    );
    assert_eq!(f.line, Some(12), "{f}");
    assert_eq!(get("wrong").status, Status::CheckFailed);
    let unwritten = get("unwritten");
    assert_eq!(unwritten.status, Status::CheckFailed);
    assert!(
        unwritten
            .message
            .as_deref()
            .unwrap_or("")
            .contains("never written"),
        "{:?}",
        unwritten.message
    );
}

/// `kwb batch --cpu` of a one-version workspace copying `x` (100 f32) to `y` with `body`, the
/// tile kernel `copy_kernel(x_ptr, y_ptr, n, BLOCK)` (64-element programs) written to `name`.tile
/// (its body starts at line 7): the single result, which must have failed its check.
fn failed_copy(name: &str, body: &str) -> kwb::report::RunResult {
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join(format!("{name}.tile"));
    let source = format!(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n\
         def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n{body}"
    );
    std::fs::write(&kernel, source).unwrap();
    let ws = dir.path().join(format!("{name}.yaml"));
    std::fs::write(
        &ws,
        format!(
            "name: {name}\nsizes:\n  - {{name: s, N: 100, emulate: true}}\nbuffers:\n  \
             x: {{dtype: f32, shape: [N], init: randn}}\n  \
             y: {{dtype: f32, shape: [N], output: true}}\nreference:\n  expr:\n    y: x\n\
             versions:\n  v1:\n    file: {}\n    entry: copy_kernel\n    \
             constexprs: {{BLOCK: 64}}\n    grid: cdiv(N, BLOCK)\n    args: [x, y, N]\n",
            kernel.display()
        ),
    )
    .unwrap();
    let (code, report, err) = support::cpu_batch_json(&[ws.to_str().unwrap()]);
    assert_eq!(code, kwb::exit::CHECK_FAILED, "{err}");
    let r = report.results.into_iter().next().expect("one result");
    assert_eq!(r.status, Status::CheckFailed, "{:?}", r.message);
    assert_eq!(r.backend, Some(Backend::Interpreter));
    r
}

#[test]
fn a_tile_kernel_that_stores_past_the_end_is_a_finding_with_its_line() {
    // The tail program's unmasked store runs past `y`: the interpreter stops it at the first
    // bad lane and names the buffer, the element, the program and the tile line.
    let r = failed_copy(
        "oob",
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    \
         x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n    \
         tl.store(y_ptr + offs, x)\n",
    );
    let f = r.findings.first().expect("an out-of-bounds finding");
    assert_eq!(f.kind, "out-of-bounds", "{f}");
    assert!(
        f.file.as_deref().is_some_and(|p| p.ends_with("oob.tile")),
        "{f}"
    );
    assert_eq!(f.line, Some(9), "{f}");
    assert_eq!(f.cta, Some([1, 0, 0]), "{f}");
    assert_eq!(
        f.message,
        "store to `y` out of bounds at element 100 (y has 100 elements): program (1, 0, 0), lane 36",
        "{f}"
    );
}

#[test]
fn a_false_tl_assume_is_a_finding_with_its_line() {
    // Triton makes a false assumption undefined behaviour; the interpreter checks each one.
    let r = failed_copy(
        "assume",
        "    pid = tl.program_id(0)\n    \
         tl.assume(pid * BLOCK < n - 40)\n    \
         offs = pid * BLOCK + tl.arange(0, BLOCK)\n    \
         tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n",
    );
    let f = r.findings.first().expect("a false-assumption finding");
    assert_eq!(f.kind, "false-assumption", "{f}");
    // Program 1 starts at 64, not below 100 - 40.
    assert_eq!((f.line, f.cta), (Some(8), Some([1, 0, 0])), "{f}");
    assert!(f.message.contains("`tl.assume`"), "{f}");
}

/// Library idioms that kwb once refused: a libdevice function imported inside a top-level
/// `try`/`except` (liger-kernel's), and a layout change of 64 KiB, past the 48 KiB of static
/// shared memory (now dynamic, as Triton places it). Both engines, checked against the
/// reference.
#[test]
fn conditional_imports_and_shared_memory_past_48_kib() {
    support::assert_cpu_batch_passes("tests/fixtures/big_smem/big_smem.yaml", 2);
}

/// Branches of a top-level `if` that bind a name to different things: kwb cannot know which
/// one Python runs, so a kernel using the name is an error that says so, never a guess.
#[test]
fn a_name_imported_differently_in_two_branches_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.py");
    std::fs::write(
        &file,
        "import triton\nimport triton.language as tl\nimport os\n\
         if os.environ.get('FAST'):\n    from triton.language.extra.libdevice import exp as f\n\
         else:\n    from triton.language.extra.libdevice import log as f\n\n\
         @triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    o = tl.arange(0, B)\n    \
         tl.store(x_ptr + o, f(tl.load(x_ptr + o)))\n",
    )
    .unwrap();
    let (code, _, err) =
        support::run_kwb(&["inspect", file.to_str().unwrap(), "--constexpr", "B=64"]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("`f` is bound differently in the branches of a top-level `if`/`try`"),
        "{err}"
    );
}
