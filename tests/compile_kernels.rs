//! Every kernel in kernels/ compiles with NVRTC for sm_90 (no GPU needed), ptxas' log agrees
//! with the CUBIN, and a deliberately broken kernel yields a diagnostic on the right line.

mod support;

use kwb::compile::Cache;
use kwb::diag::Severity;
use kwb::workspace::Workspace;

fn kernel_files() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in ["elementwise-add", "gelu", "softmax"] {
        let d = support::repo().join("kernels").join(dir);
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "cu") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_shipped_kernel_compiles_and_its_log_matches_its_cubin() {
    let c = support::compiler("sm_90");
    let files = kernel_files();
    assert!(
        files.len() >= 14,
        "expected the 14 shipped versions, found {}",
        files.len()
    );
    for f in files {
        let ws = Workspace::for_kernel_file(&f).unwrap();
        let out = c.compile_version(Some(&ws), &ws.versions[0]);
        assert!(
            out.ok,
            "{} failed:\n{:#?}\n{}",
            f.display(),
            out.diagnostics,
            out.log
        );
        assert!(out
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error));
        assert!(
            !out.kernels.is_empty(),
            "{}: no kernels in the CUBIN",
            f.display()
        );
        assert!(
            out.ptx.contains(".entry"),
            "{}: PTX lacks an entry",
            f.display()
        );
        assert!(
            out.ptx.contains(".loc"),
            "{}: -lineinfo gave no .loc directives",
            f.display()
        );
        for k in &out.kernels {
            assert!(
                k.registers > 0,
                "{}: {} has no registers",
                f.display(),
                k.name
            );
            assert_eq!(k.spill_store_bytes, 0, "{}: {} spills", f.display(), k.name);
        }
    }
}

#[test]
fn the_three_workspaces_compile_with_their_entries_resolved() {
    let c = support::compiler("sm_90");
    for name in ["elementwise-add", "gelu", "softmax"] {
        let path = support::repo().join(format!("workspaces/{name}.yaml"));
        let ws = kwb::workspace::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let compiled = c.compile_workspace(&ws);
        assert_eq!(compiled.len(), ws.versions.len());
        for (v, out) in ws.versions.iter().zip(&compiled) {
            assert!(out.ok, "{name}/{}: {:#?}", v.name, out.diagnostics);
            for e in v.entries() {
                assert!(out.kernel(e).is_some(), "{name}/{}: no kernel {e}", v.name);
            }
        }
    }
}

#[test]
fn vectorized_versions_really_use_128_bit_accesses() {
    let c = support::compiler("sm_90");
    let ws =
        kwb::workspace::load(&support::repo().join("workspaces/elementwise-add.yaml")).unwrap();
    for v in ws
        .versions
        .iter()
        .filter(|v| ["v2", "v6", "v7"].contains(&v.name.as_str()))
    {
        let out = c.compile_version(Some(&ws), v);
        assert!(
            out.ptx.contains(".v4."),
            "{}: no 128-bit vector access in PTX",
            v.name
        );
    }
}

#[test]
fn shared_memory_barriers_and_stack_frames_are_read_and_cross_checked() {
    let c = support::compiler("sm_90");
    let f = support::repo().join("kernels/tests/shared_and_barriers.cu");
    let ws = Workspace::for_kernel_file(&f).unwrap();
    let out = c.compile_version(Some(&ws), &ws.versions[0]);
    assert!(out.ok, "{:#?}", out.diagnostics);
    let smem = out.kernel("smem_user").expect("smem_user");
    assert_eq!(smem.static_shared_bytes, 4096);
    assert!(smem.barriers >= 1);
    let spiller = out.kernel("spiller").expect("spiller");
    assert!(
        spiller.local_bytes >= 1024,
        "stack frame {}",
        spiller.local_bytes
    );
    let bounded = out.kernel("bounded").expect("bounded");
    assert_eq!(bounded.max_threads_per_block, Some(128));
}

#[test]
fn a_broken_kernel_gives_a_diagnostic_on_its_line() {
    let c = support::compiler("sm_90");
    let f = support::repo().join("kernels/tests/broken_syntax.cu");
    let ws = Workspace::for_kernel_file(&f).unwrap();
    let out = c.compile_version(Some(&ws), &ws.versions[0]);
    assert!(!out.ok);
    let err = out
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .expect("an error diagnostic");
    assert_eq!(err.line, Some(7), "{err}");
    assert!(err.column.is_some(), "{err}");
    assert!(err.message.contains("undeclared_thing"), "{err}");
    assert!(
        err.file
            .as_deref()
            .is_some_and(|p| p.ends_with("broken_syntax.cu")),
        "{err}"
    );
}

#[test]
fn the_cache_returns_the_same_result_without_nvrtc() {
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    let arch = kwb::compile::Arch::parse("sm_90").unwrap();
    let c = kwb::compile::Compiler::new(arch, Cache::at(dir.path())).unwrap();
    let f = support::repo().join("kernels/elementwise-add/v1_f32.cu");
    let ws = Workspace::for_kernel_file(&f).unwrap();
    let first = c.compile_version(Some(&ws), &ws.versions[0]);
    let second = c.compile_version(Some(&ws), &ws.versions[0]);
    assert!(!first.cached && second.cached);
    assert_eq!(first.kernels, second.kernels);
    assert_eq!(first.ptx, second.ptx);
    assert_eq!(first.cubin, second.cubin);
    // Changing an option is a different key.
    let mut v = ws.versions[0].clone();
    v.options.push("--use_fast_math".into());
    assert!(!c.compile_version(Some(&ws), &v).cached);
}

#[test]
fn the_tile_matmul_keeps_its_wgmma_pipeline_and_its_registers_on_hopper() {
    // ptxas serialises every wgmma (its advice C7514 or C7515) when anything reads or defines
    // an accumulator register while a wgmma may still write it, and a 64-bit pointer per epilogue register spills: both cost
    // most of what wgmma buys. Every configuration kwb ships must be free of both.
    let c = support::compiler("sm_90");
    let path = support::repo().join("workspaces/matmul.yaml");
    let mut ws = kwb::workspace::load(&path).unwrap();
    ws.sizes.retain(|s| s.name == "4096x4096x4096");
    ws.versions
        .retain(|v| ["v4", "v5", "v6", "v7"].contains(&v.family()));
    assert_eq!(
        ws.versions.len(),
        45,
        "v4, v5's 32 configurations, v6's 4 (persistent or not) and v7's 8 (TMA, persistent or not)"
    );
    let compiled = c.compile_workspace(&ws);
    for (v, out) in ws.versions.iter().zip(&compiled) {
        assert!(out.ok, "{}: {:#?}", v.name, out.diagnostics);
        assert!(out.ptx.contains("wgmma.mma_async"), "{}: no wgmma", v.name);
        let advice: Vec<_> = out
            .diagnostics
            .iter()
            .filter(|d| {
                d.message
                    .contains("wgmma.mma_async instructions are serialized")
            })
            .collect();
        assert!(advice.is_empty(), "{}: {advice:#?}", v.name);
        // The epilogue goes through shared memory and stores whole 16-byte vectors (no 4-byte
        // pieces of rows), and the loop's pointer tiles are a base and a running offset.
        let cuda = out.generated.as_deref().unwrap_or_default();
        assert!(
            cuda.contains("kwb_st128("),
            "{}: no staged epilogue",
            v.name
        );
        assert!(
            !out.ptx.contains("st.global.b32"),
            "{}: 4-byte stores",
            v.name
        );
        for k in &out.kernels {
            assert_eq!(k.spill_store_bytes, 0, "{}: {} spills", v.name, k.name);
        }
        if v.family() == "v7" {
            // Tensor descriptors: TMA copies of both operands, no pointer tiles at all.
            assert!(cuda.contains("kwb_tma2d("), "{}: no TMA copies", v.name);
            assert!(!cuda.contains("kwb_cp16("), "{}: cp.async copies", v.name);
            continue;
        }
        assert!(
            cuda.contains("kwb_po_a_ptrs"),
            "{}: a_ptrs not strided",
            v.name
        );
        assert!(
            cuda.contains("kwb_po_b_ptrs"),
            "{}: b_ptrs not strided",
            v.name
        );
    }
}

#[test]
fn a_workspace_for_sm_90a_compiles_hopper_only_instructions() {
    // `wgmma` exists on sm_90a alone: a CUDA kernel that uses it needs `arch: sm_90a`, and
    // the same kernel for plain sm_90 fails in ptxas, on the kernel's line.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("fence.cu"),
        "extern \"C\" __global__ void fence(float* x, int n) {\n    \
         asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n    \
         if ((int)threadIdx.x < n) x[threadIdx.x] = 1.0f;\n}\n",
    )
    .unwrap();
    let yaml = "arch: sm_90a\nsizes: [{N: 128}]\nbuffers:\n  x: {dtype: f32, shape: [N], output: true}\n\
                versions:\n  v1: {file: fence.cu, entry: fence, grid: 1, block: 128, args: [x, N]}\n";
    let path = dir.path().join("ws.yaml");
    std::fs::write(&path, yaml).unwrap();
    let ws = kwb::workspace::load(&path).unwrap();
    let arch = ws.arch.expect("the workspace names its arch");
    assert_eq!(arch.to_string(), "sm_90a");
    let specific = support::compiler("sm_90a").compile_version(Some(&ws), &ws.versions[0]);
    assert!(specific.ok, "{:#?}", specific.diagnostics);
    assert!(specific.ptx.contains(".target sm_90a"), "{}", specific.ptx);
    let plain = support::compiler("sm_90").compile_version(Some(&ws), &ws.versions[0]);
    assert!(!plain.ok, "wgmma compiled for plain sm_90");
    assert!(
        plain
            .diagnostics
            .iter()
            .any(|d| d.message.contains("wgmma")),
        "{:#?}",
        plain.diagnostics
    );
}

#[test]
fn a_diagnostic_of_one_specialisation_names_its_size_and_whether_only_the_cpu_runs_it() {
    // At the CPU-only size `odd` (N = 45: B's rows are not 4-byte aligned, so its copies are
    // per-element loads whose 32 pointers a thread keeps) the matmul spills and ptxas
    // serialises its wgmmas. That advice concerns no GPU run, and says so.
    let c = support::compiler("sm_90");
    let path = support::repo().join("workspaces/matmul.yaml");
    let mut ws = kwb::workspace::load(&path).unwrap();
    ws.versions.retain(|v| v.name == "v4");
    let out = c.compile_version(Some(&ws), &ws.versions[0]);
    assert!(out.ok, "{:#?}", out.diagnostics);
    let serialised: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("serialized"))
        .collect();
    assert!(
        !serialised.is_empty(),
        "the odd size's advice went away: {:#?}",
        out.diagnostics
    );
    for d in serialised {
        assert!(
            d.message
                .ends_with("(the specialisation for size odd, which only the CPU runs)"),
            "{}",
            d.message
        );
    }
}
