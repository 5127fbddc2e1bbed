//! `kwb batch` on the command line without a GPU: usage errors and the no-GPU path map to their
//! documented exit codes with messages that say what to do; compile errors reach stderr from
//! `batch` and `inspect`, and `inspect` of a file without kernels says so.

mod support;

fn kwb(args: &[&str]) -> (i32, String, String) {
    support::run_kwb(args)
}

#[test]
fn unknown_sizes_and_versions_are_usage_errors() {
    let (code, _, err) = kwb(&[
        "batch",
        "workspaces/elementwise-add.yaml",
        "--sizes",
        "1Mi,3Mi",
    ]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(
        err.contains("no size `3Mi`; sizes: 1Mi, 16Mi, 256Mi, odd"),
        "{err}"
    );
    let (code, _, err) = kwb(&[
        "batch",
        "workspaces/elementwise-add.yaml",
        "--versions",
        "v99",
    ]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("no version `v99`"), "{err}");
}

#[test]
fn a_bad_baseline_or_workspace_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("baseline.json");
    std::fs::write(&bad, "{\"schema\": 99}").unwrap();
    let (code, _, err) = kwb(&[
        "batch",
        "workspaces/gelu.yaml",
        "--baseline",
        &bad.display().to_string(),
    ]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("baseline.json"), "{err}");
    let (code, _, err) = kwb(&["batch", "tests/fixtures/workspaces/unknown_field.yaml"]);
    assert_eq!(code, kwb::exit::USAGE, "{err}");
    assert!(err.contains("unknown field `grdi`"), "{err}");
}

#[test]
fn without_a_gpu_batch_exits_5_and_says_why() {
    if kwb::run::gpu::open::probe(0).is_ok() {
        println!("a GPU is present; the no-GPU path is not exercised here");
        return;
    }
    let (code, out, err) = kwb(&["batch", "workspaces/elementwise-add.yaml", "--sizes", "1Mi"]);
    assert_eq!(code, kwb::exit::NO_GPU, "{out}{err}");
    assert!(err.contains("no usable GPU"), "{err}");
    assert!(err.contains("`kwb batch --cpu`"), "{err}");
    assert!(err.contains("`kwb inspect`"), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn inspect_of_a_tile_file_with_syntax_errors_lists_each_at_its_line() {
    let (code, out, err) = kwb(&[
        "inspect",
        "tests/tile/err_syntax.tile",
        "--constexpr",
        "BLOCK=128",
    ]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{out}{err}");
    let text = format!("{out}{err}");
    assert!(text.contains("err_syntax.tile:8:"), "{text}");
    assert!(text.contains("err_syntax.tile:9:"), "{text}");
    assert!(
        !text.contains("error: :"),
        "a diagnostic wrapped in another: {text}"
    );
}

#[test]
fn inspect_cuda_prints_each_specialisation_of_a_tile_version() {
    let (code, out, err) = kwb(&[
        "inspect",
        "workspaces/elementwise-add.yaml",
        "--version",
        "v8",
        "--cuda",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // The GPU sizes (n divisible by 16: 128-bit vectors) and the odd size (scalar accesses,
    // each one predicated load or store) are two specialisations.
    let vec = out
        .find("--- generated CUDA of v8 (sizes 1Mi, 16Mi, 256Mi) ---")
        .expect(&out);
    let odd = out
        .find("--- generated CUDA of v8 (sizes odd) ---")
        .expect(&out);
    assert!(out[vec..odd].contains("kwb_ld128("), "{out}");
    assert!(out[odd..].contains("kwb_ld16s("), "{out}");
    assert!(out[odd..].contains("kwb_st16s("), "{out}");
    // fp16 code includes the half header, and nothing includes the bf16 one it does not use.
    assert!(out.contains("#include <cuda_fp16.h>"), "{out}");
    assert!(!out.contains("#include <cuda_bf16.h>"), "{out}");
    // Without --cuda, no generated code.
    let (_, plain, _) = kwb(&[
        "inspect",
        "workspaces/elementwise-add.yaml",
        "--version",
        "v8",
    ]);
    assert!(!plain.contains("generated CUDA"), "{plain}");
}

#[test]
fn inspect_cubin_dir_writes_each_specialisation_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("cubins");
    let path = out_dir.to_str().unwrap();
    let args = [
        "inspect",
        "workspaces/elementwise-add.yaml",
        "--version",
        "v7",
        "--version",
        "v8",
        "--cubin-dir",
        path,
    ];
    let (code, out, err) = kwb(&args);
    assert_eq!(code, 0, "{out}{err}");
    // v7 (.cu) serves every size with one CUBIN; v8 (tile) has one per specialisation, and
    // each size gets the file of the one that serves it.
    let read = |name: &str| {
        std::fs::read(out_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}\n{err}"))
    };
    for name in [
        "v7.cubin",
        "v8@1Mi.cubin",
        "v8@16Mi.cubin",
        "v8@256Mi.cubin",
        "v8@odd.cubin",
    ] {
        assert_eq!(&read(name)[..4], b"\x7fELF", "{name} is not an ELF CUBIN");
    }
    assert_eq!(read("v8@1Mi.cubin"), read("v8@256Mi.cubin"));
    assert_ne!(read("v8@1Mi.cubin"), read("v8@odd.cubin"));
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 5);
    // A second run finds the files there: it says so and writes nothing.
    std::fs::write(out_dir.join("v7.cubin"), b"mine").unwrap();
    let (code, out, err) = kwb(&args);
    assert_eq!(code, kwb::exit::USAGE, "{out}{err}");
    assert!(err.contains("v7.cubin already exists"), "{err}");
    assert_eq!(std::fs::read(out_dir.join("v7.cubin")).unwrap(), b"mine");
}

#[test]
fn rows_of_a_multiple_of_8_fp16_elements_move_in_16_byte_copies() {
    // At 1000³ (M, N, K multiples of 8, not of 16) Triton's rule (divisible by 16) would prove
    // nothing, and every ring copy would go element by element; kwb keeps divisibility by 8, so
    // fp16 rows of 2,000 bytes are 16-byte aligned and the copies are cp.async of 16 bytes.
    let (code, out, err) = kwb(&[
        "inspect",
        "workspaces/matmul.yaml",
        "--version",
        "v4",
        "--sizes",
        "1000x1000x1000,odd",
        "--cuda",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let k1000 = out
        .find("--- generated CUDA of v4 (sizes 1000x1000x1000) ---")
        .expect(&out);
    let odd = out
        .find("--- generated CUDA of v4 (sizes odd) ---")
        .expect(&out);
    let (k1000, odd) = if k1000 < odd {
        (&out[k1000..odd], &out[odd..])
    } else {
        (&out[k1000..], &out[odd..k1000])
    };
    assert!(
        k1000.contains("divisible by 16: a_ptr, b_ptr, c_ptr; by 8: M, N, K"),
        "{k1000}"
    );
    assert!(k1000.contains("kwb_cp16("), "{k1000}");
    assert!(!k1000.contains("kwb_ld16s("), "{k1000}");
    // `odd` has N = 45: B's rows are not aligned, so its copies stay element-wise (K = 40 is a
    // multiple of 8, so A's are 16 bytes).
    assert!(odd.contains("by 8: K"), "{odd}");
    assert!(
        odd.contains("kwb_ld16s(") && odd.contains("kwb_cp16("),
        "{odd}"
    );
}

#[test]
fn compile_errors_reach_stderr_from_batch_and_inspect() {
    let ws = "tests/fixtures/workspaces/compile_error.yaml";
    let error = "broken_syntax.cu:7:37: error: identifier \"undeclared_thing\" is undefined";
    // batch: the report (stdout) has the first error; stderr has it with its source line.
    let (code, out, err) = kwb(&["batch", "--cpu", ws]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{out}{err}");
    assert!(err.contains(error), "{err}");
    assert!(err.contains("7 |     if (i < n)"), "{err}");
    // inspect with JSON on stdout: stdout stays JSON, the error is on stderr too.
    let (code, out, err) = kwb(&["inspect", "--format", "json", ws]);
    assert_eq!(code, kwb::exit::COMPILE_ERROR, "{out}{err}");
    assert!(err.contains(error), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_eq!(json["versions"][0]["ok"], false, "{out}");
}

#[test]
fn inspect_of_a_file_without_kernels_says_so() {
    let (code, out, err) = kwb(&["inspect", "tests/fixtures/workspaces/no_kernels.cu"]);
    assert_eq!(code, kwb::exit::OK, "{out}{err}");
    assert!(out.contains("[ok, no kernels, "), "{out}");
    let warning = "no_kernels.cu: warning: the file defines no kernel (no `__global__` function)";
    assert!(out.contains(warning), "{out}");
    assert!(err.contains(warning), "{err}");
}
