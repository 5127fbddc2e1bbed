//! Shared test helpers: NVRTC provisioning, so `cargo test` works on a fresh machine with no
//! CUDA toolkit, and golden-file comparison.
#![allow(dead_code)]

pub mod differential;
pub mod emu_block;
pub mod layout;
pub mod rng;
pub mod tile_campaign;
pub mod tile_diff;
pub mod tilegen;
pub mod tmux;
pub mod triton;
pub mod ui_results;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Makes sure NVRTC and the CUDA headers can be found, installing the pinned pip wheels into
/// kwb's cache folder if nothing is there yet. Panics with the reason if that is impossible.
pub fn provision_nvrtc() {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    let r = DONE.get_or_init(|| {
        if kwb::compile::locate::locate().is_ok() {
            return Ok(());
        }
        let target = kwb::cache_dir()
            .ok_or("no cache folder: set HOME or KWB_CACHE_DIR")?
            .join("cuda-wheels");
        eprintln!(
            "tests: NVRTC not found; installing the 13.0 wheels into {}",
            target.display()
        );
        kwb::compile::provision::install(&target).map_err(|e| e.to_string())?;
        kwb::compile::locate::locate()
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    if let Err(e) = r {
        panic!("these tests need NVRTC and could not provision it: {e}");
    }
}

/// A compiler for `arch` with caching off, NVRTC provisioned first.
pub fn compiler(arch: &str) -> kwb::compile::Compiler {
    provision_nvrtc();
    let arch = kwb::compile::Arch::parse(arch).expect("test arch");
    kwb::compile::Compiler::new(arch, kwb::compile::Cache::disabled()).expect("NVRTC loads")
}

/// Compares `actual` with the golden file at `path`; `KWB_BLESS=1` rewrites the file instead.
pub fn assert_golden(path: &Path, actual: &str) {
    if std::env::var_os("KWB_BLESS").is_some() {
        std::fs::write(path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "missing golden file {} ({e}); run with KWB_BLESS=1 to create it",
            path.display()
        )
    });
    assert_eq!(
        actual,
        expected,
        "output differs from {} (KWB_BLESS=1 to update)",
        path.display()
    );
}

/// The kwb binary: cargo's build of it, or, where the tests were carried to another machine
/// without it (the GPU bundle), the `kwb` on PATH.
pub fn kwb_bin() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_kwb"));
    if built.exists() {
        built
    } else {
        PathBuf::from("kwb")
    }
}

/// Runs kwb with `args` in the repository root: (exit code, stdout, stderr).
pub fn run_kwb(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(kwb_bin())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run kwb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A ratatui buffer as text, one line per row, trailing spaces dropped (a wide symbol counts
/// once): what the snapshot tests compare.
pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let a = buf.area;
    let mut out = String::new();
    for y in a.top()..a.bottom() {
        let mut row = String::new();
        let mut skip = 0;
        for x in a.left()..a.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buf[(x, y)].symbol();
            skip = ratatui::text::Line::raw(symbol).width().saturating_sub(1);
            row.push_str(symbol);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// `kwb batch --cpu --format json --seed 7 ARGS`: exit code, the parsed report, stderr.
/// The request a matmul workspace makes of a Triton-style matmul kernel (`matmul_kernel`: fp16
/// A, B, C, then M, N, K with the given divisibility facts) at 128x256x64 tiles, groups of 8,
/// 3 stages and 8 warps.
pub fn matmul_request(divisibility: [u64; 3]) -> kwb::tile::KernelRequest {
    use kwb::tile::{ArgKind, ConstValue, DType};
    let int = |d: u64| ArgKind::Int {
        fits_i32: true,
        divisibility: d,
        non_negative: true,
        one: false,
    };
    kwb::tile::KernelRequest {
        name: "matmul_kernel".into(),
        args: vec![
            ArgKind::Pointer(DType::F16),
            ArgKind::Pointer(DType::F16),
            ArgKind::Pointer(DType::F16),
            int(divisibility[0]),
            int(divisibility[1]),
            int(divisibility[2]),
        ],
        constexprs: [
            ("BLOCK_M", 128),
            ("BLOCK_N", 256),
            ("BLOCK_K", 64),
            ("GROUP_M", 8),
            ("NUM_STAGES", 3),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), ConstValue::Int(v)))
        .collect(),
        num_warps: 8,
        sums: Default::default(),
    }
}

/// `kwb batch --cpu` on `workspace` with the PTX emulator and with the default engine: each
/// run gives `results` results, every one of them passing its check.
pub fn assert_cpu_batch_passes(workspace: &str, results: usize) {
    for engine in [&["--cpu-engine", "emulator"][..], &[][..]] {
        let mut args = vec![workspace];
        args.extend(engine);
        let (code, report, err) = cpu_batch_json(&args);
        assert_eq!(code, 0, "{engine:?}: {err}");
        assert_eq!(report.results.len(), results, "{err}");
        for r in &report.results {
            assert_eq!(
                r.status,
                kwb::report::Status::Ok,
                "{engine:?} {} @ {}: {:?}",
                r.version,
                r.size,
                r.message
            );
        }
    }
}

pub fn cpu_batch_json(args: &[&str]) -> (i32, kwb::report::BatchReport, String) {
    provision_nvrtc();
    let mut all = vec!["batch", "--cpu", "--format", "json", "--seed", "7"];
    all.extend_from_slice(args);
    let (code, out, err) = run_kwb(&all);
    let report = kwb::report::json::from_json(&out)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{out}\n{err}"));
    (code, report, err)
}
