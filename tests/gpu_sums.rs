//! On a GPU with torch and Triton: kwb's full float sums give compiled Triton's bits. A
//! program launches a row sum (plain, and of products) in bf16, fp16 and fp32 at several sizes
//! and warp counts; `kwb capture` records each launch with Triton's outputs, and `kwb batch`
//! must match the plain sums of aligned rows with a tolerance of zero (sums of products, whose
//! contraction LLVM's vectorizer decides, and unaligned rows, which Triton lays out otherwise,
//! are reported). The same workspaces told to follow the other release's order must not all match,
//! or the check proves nothing. Ignored without `--include-ignored`; run with it and no GPU,
//! it skips, saying why, or fails under `KWB_REQUIRE_GPU=1`.

mod support;

use kwb::report::{BatchReport, Status};
use kwb::run::gpu::open::gpu_or_skip;
use std::path::{Path, PathBuf};
use std::process::Command;

const DRIVER: &str = r#"torch.manual_seed(0)
for dtype in (torch.bfloat16, torch.float16, torch.float32):
    for n, warps in ((1024, 4), (4096, 8), (8192, 16), (64, 4), (1000, 4)):
        block = triton.next_power_of_2(n)
        x = torch.randn(64, n, device="cuda", dtype=dtype)
        w = torch.rand(n, device="cuda", dtype=dtype) + 0.5
        for product in (False, True):
            y = torch.empty(64, device="cuda", dtype=dtype)
            row_sum[(64,)](x, w, y, n, BLOCK=block, PRODUCT=product, num_warps=warps)
torch.cuda.synchronize()
print("sums done")
"#;

fn python_site() -> Option<PathBuf> {
    match support::triton::provision() {
        Ok(site) => Some(site),
        Err(e) => {
            println!("SKIPPED: torch and triton are unavailable: {e}");
            None
        }
    }
}

/// The workspaces capture wrote, each with a zero tolerance.
fn exact_workspaces(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    out.sort();
    for p in &out {
        let text = std::fs::read_to_string(p).unwrap();
        let kept: String = text
            .lines()
            .filter(|l| !l.starts_with("tolerance:"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(p, format!("tolerance: {{rtol: 0, atol: 0}}\n{kept}")).unwrap();
    }
    out
}

fn batch(ws: &Path) -> BatchReport {
    let out = Command::new(support::kwb_bin())
        .args([
            "batch",
            "--format",
            "json",
            "--min-time",
            "0.01",
            "--max-time",
            "0.1",
        ])
        .arg(ws)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    kwb::report::json::from_json(&stdout).unwrap_or_else(|e| {
        panic!(
            "{}: not a JSON report ({e}):\n{stdout}\n{}",
            ws.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn full_sums_give_compiled_tritons_bits() {
    if gpu_or_skip("full_sums_give_compiled_tritons_bits").is_none() {
        return;
    }
    let Some(site) = python_site() else { return };
    support::provision_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    let program = format!(
        "import torch\n{}\n{DRIVER}",
        include_str!("fixtures/sums/row_sum.py")
    );
    std::fs::write(dir.path().join("prog.py"), program).unwrap();
    let out = Command::new(support::kwb_bin())
        .current_dir(dir.path())
        .env("PYTHONPATH", &site)
        .args([
            "capture",
            "--out",
            "cap",
            "--no-time",
            "--max-per-kernel",
            "100",
            "--",
            "python3",
            "prog.py",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "capture failed:\n{stderr}");
    let workspaces = exact_workspaces(&dir.path().join("cap"));
    assert_eq!(workspaces.len(), 30, "one per launch:\n{stderr}");
    let mut other_order_misses = 0;
    for ws in &workspaces {
        let text = std::fs::read_to_string(ws).unwrap();
        let release = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("triton: "))
            .unwrap_or_else(|| panic!("{}: no `triton:` release", ws.display()))
            .trim_matches('"')
            .to_string();
        // Bit for bit where kwb places the elements as Triton does (rows of a multiple of 16
        // elements: 16-byte runs) and no product is contracted (LLVM's vectorizer decides
        // which of Triton's products become fused multiply-adds): the others are reported.
        let plain = text.contains("PRODUCT: false");
        let aligned = !text.contains(", 1000]");
        let asserted = plain && aligned;
        for r in &batch(ws).results {
            println!(
                "{} (Triton {release}, {}{}): {} {:?}",
                ws.file_name().unwrap().to_string_lossy(),
                if plain { "sum" } else { "sum of products" },
                if aligned { "" } else { ", unaligned rows" },
                r.status,
                r.check.as_ref().map(|c| c.max_abs_error)
            );
            if asserted {
                assert_eq!(
                    r.status,
                    Status::Ok,
                    "{}: {:?} {:?}",
                    ws.display(),
                    r.message,
                    r.check.as_ref().and_then(|c| c.failure.clone())
                );
            }
        }
        if !asserted {
            continue;
        }
        // The other order: 3.6 and before fold left to right, 3.8 and later build trees.
        let (_, minor) = kwb::workspace::triton_release(&release).unwrap();
        let other = if minor < 8 { "3.9" } else { "3.6" };
        let swapped = text.replace(
            &format!("triton: \"{release}\""),
            &format!("triton: \"{other}\""),
        );
        let alt = ws.with_extension("other.yaml");
        std::fs::write(&alt, swapped).unwrap();
        other_order_misses += batch(&alt)
            .results
            .iter()
            .filter(|r| r.status != Status::Ok)
            .count();
    }
    println!("the other release's order misses {other_order_misses} of 12 plain launches");
    assert!(
        other_order_misses > 0,
        "no launch tells the two orders apart: the check cannot see the order"
    );
}
