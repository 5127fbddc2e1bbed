//! Persistent tile programs (`persistent: true`): the kernel loops over the grid's programs on
//! fewer CTAs. The PTX emulator runs them on two CTAs (`EMULATED_RESIDENT_CTAS`), so at these
//! small sizes every CTA runs several programs, and the checks compare with the reference.

mod support;

fn workspace(dir: &std::path::Path, versions: &str) -> std::path::PathBuf {
    let kernels = support::repo().join("kernels");
    let yaml = format!(
        "name: persistent\narch: sm_90\n\
         sizes:\n  - {{name: odd, M: 37, N: 1000, emulate: true}}\n  - {{name: long, M: 5, N: 4100, emulate: true}}\n\
         buffers:\n  x: {{dtype: f32, shape: [M, N], init: randn}}\n  y: {{dtype: f32, shape: [M, N], output: true}}\n\
         reference:\n  expr:\n    y: softmax(x, axis=-1)\n\
         tolerance: {{rtol: 1e-5, atol: 1e-6}}\nversions:\n{}",
        versions.replace("KERNELS", &kernels.display().to_string())
    );
    let path = dir.join("ws.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn persistent_programs_pass_on_the_emulator_and_the_interpreter() {
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    // A row per program (the loop-wrapped form), and a chunked row (a loop of its own per
    // program), each run by two CTAs on the emulator.
    let ws = workspace(
        dir.path(),
        "  row:\n    file: KERNELS/softmax/v5.tile\n    entry: softmax_row\n    \
         constexprs: {BLOCK: next_pow2(N)}\n    grid: M\n    args: [x, y, M, N]\n    persistent: true\n\
         \x20 chunked:\n    file: KERNELS/softmax/v8_chunked.tile\n    entry: softmax_chunked\n    \
         constexprs: {BLOCK: 1024}\n    grid: M\n    args: [x, y, M, N]\n    persistent: true\n",
    );
    let ws = ws.to_str().unwrap();
    support::assert_cpu_batch_passes(ws, 4);
    // The generated code loops over programs and takes their count last.
    let (code, out, err) = support::run_kwb(&["inspect", ws, "--version", "row", "--cuda"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("int kwb_programs)"), "{out}");
    assert!(
        out.contains("kwb_pid < kwb_programs; kwb_pid += (int)gridDim.x"),
        "{out}"
    );
}

#[test]
fn the_persistent_matmul_fetches_the_next_program_before_its_epilogue() {
    support::provision_nvrtc();
    let path = support::repo().join("workspaces/matmul.yaml");
    let (code, out, err) = support::run_kwb(&[
        "inspect",
        path.to_str().unwrap(),
        "--version",
        "v6[GROUP=8,persistent=true]",
        "--sizes",
        "4096x4096x4096",
        "--cuda",
    ]);
    assert_eq!(code, 0, "{err}");
    let next = out
        .find("the next program's first copies")
        .expect("overlapped form");
    let epilogue = out.find("this program's epilogue").expect("its epilogue");
    let staged = out.find("its own, after the rings").expect("own staging");
    assert!(next < epilogue && epilogue < staged, "{out}");
    // The prologue's copies are written twice: for the first program and for each next one.
    assert_eq!(
        out.matches("for (int kwb_s = 0; kwb_s < 2; ++kwb_s)")
            .count(),
        2
    );
}

#[test]
fn a_cuda_version_cannot_be_persistent_and_a_persistent_grid_is_one_dimensional() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k(float* y, int n) {}\n",
    )
    .unwrap();
    let yaml = "sizes: [{N: 128}]\nbuffers:\n  y: {dtype: f32, shape: [N], output: true}\n\
                versions:\n  v1: {file: k.cu, entry: k, grid: 1, block: 128, args: [y, N], persistent: true}\n";
    std::fs::write(dir.path().join("ws.yaml"), yaml).unwrap();
    let err = kwb::workspace::load(&dir.path().join("ws.yaml"))
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("versions.v1.persistent") && err.contains("tile-language"),
        "{err}"
    );
    let ws = workspace(
        dir.path(),
        "  row:\n    file: KERNELS/softmax/v5.tile\n    entry: softmax_row\n    \
         constexprs: {BLOCK: next_pow2(N)}\n    grid: [M, 2, 1]\n    args: [x, y, M, N]\n    persistent: true\n",
    );
    support::provision_nvrtc();
    let (_, out, err) = support::run_kwb(&["batch", "--cpu", ws.to_str().unwrap()]);
    assert!(
        format!("{out}{err}").contains("grid must be one-dimensional"),
        "{out}\n{err}"
    );
}

/// The generated CUDA of v4.tile's matmul at 128x256x64 (3 stages, 8 warps) for sm_90,
/// persistent, against its golden file (`KWB_BLESS=1` rewrites it): the overlapped form.
#[test]
fn the_persistent_matmul_matches_its_golden_file() {
    use kwb::tile::{compile_for, Target};
    let path = support::repo().join("kernels/matmul/v4.tile");
    let source = std::fs::read_to_string(&path).unwrap();
    let req = support::matmul_request([16, 16, 16]);
    // The golden's `#line` directives name the file as the test gives it.
    let out = compile_for(
        std::path::Path::new("kernels/matmul/v4.tile"),
        &source,
        &[req],
        Target::sm(90).with_persistent(true),
    );
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    assert!(out.arch_specific);
    support::assert_golden(
        &support::repo().join("tests/tile/ok_matmul_persistent.cu"),
        &out.cuda,
    );
}
