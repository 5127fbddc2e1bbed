//! On a GPU: kwb's compiled kernels against Triton's compiled kernels, on the random programs of
//! `tests/support/tilegen.rs` (the CPU side of this is `tests/tile_differential.rs`).

mod support;

use kwb::compile::Arch;
use std::fmt::Write as _;
use support::tile_diff::{env_u64, Runner};
use support::tilegen::{self, Arg};
use support::triton::Interpreter;

/// On a GPU: kwb's compiled kernel (`kwb batch`, on the GPU) against Triton's compiled kernel
/// (the machine's own torch and triton), on the same inputs: Triton's outputs become the
/// reference of kwb's run, within kwb's per-dtype tolerances (bit for bit for int32).
/// `KWB_DIFF_GPU_PROGRAMS` programs
/// (default 100) from `KWB_DIFF_SEED`. Skips, saying why, without a GPU.
#[test]
fn kwb_agrees_with_compiled_triton_on_the_gpu() {
    let Some(_gpu) = kwb::run::gpu::gpu_or_skip("kwb_agrees_with_compiled_triton_on_the_gpu")
    else {
        return;
    };
    support::provision_nvrtc();
    let mut runner = Runner {
        triton: Interpreter::start_compiled().expect("Triton starts on the GPU"),
        arch: Arch::parse("sm_90").unwrap(),
        dir: support::repo().join("target/tile-diff-gpu"),
    };
    println!("triton on the GPU: {}", runner.triton.versions.trim());
    let _ = std::fs::remove_dir_all(&runner.dir);
    let count = env_u64("KWB_DIFF_GPU_PROGRAMS", 100);
    let first = env_u64("KWB_DIFF_SEED", 1);
    let (mut agree, mut exact, mut rejected, mut failures) = (0, 0, 0, Vec::new());
    for seed in first..first + count {
        let p = tilegen::generate(seed);
        let (dir, _) = runner.write(&p, &format!("seed-{seed}"));
        let request = runner.triton_request(&p, &dir);
        if runner.triton.run(&request).is_err() {
            rejected += 1;
            continue;
        }
        let mut yaml = Runner::workspace(&p, &dir);
        yaml.push_str("reference:\n  npy:\n");
        for a in &p.args {
            if let Arg::Buffer { name, .. } = a {
                let _ = writeln!(
                    yaml,
                    "    {name}: {}",
                    dir.join(format!("{name}.triton.npy")).display()
                );
            }
        }
        // kwb's per-dtype tolerances (exact for int32, 2 ulp for fp16, 1e-5 for fp32) for
        // exact programs, not bit for bit: compiled Triton contracts `a * b + c` into one FMA,
        // rounding once, where kwb (and Triton's interpreter) round the product and the sum
        // (docs/differential.md). Inexact ones within 2e-3, as on the CPU: a last-bit
        // difference of `exp` can flip a later rounding to fp16.
        if !p.exact {
            yaml.push_str("tolerance: {rtol: 2e-3, atol: 2e-3}\n");
        }
        let path = dir.join("gpu.yaml");
        std::fs::write(&path, &yaml).unwrap();
        let out = std::process::Command::new(support::kwb_bin())
            .arg("batch")
            .arg(&path)
            .args([
                "--format",
                "json",
                "--min-time",
                "0.001",
                "--max-time",
                "0.01",
                "--min-samples",
                "1",
            ])
            .output()
            .expect("kwb runs");
        let text = String::from_utf8_lossy(&out.stdout);
        match kwb::report::json::from_json(&text) {
            Ok(r)
                if r.results
                    .first()
                    .is_some_and(|r| r.status == kwb::report::Status::Ok) =>
            {
                agree += 1;
                exact += u32::from(p.exact);
            }
            Ok(r) => {
                let why = r
                    .results
                    .first()
                    .map(|r| format!("{:?}: {}", r.status, r.message.clone().unwrap_or_default()));
                if why.as_deref().is_some_and(|w| w.contains("Compile")) {
                    rejected += 1;
                } else {
                    failures.push(format!("seed {seed}: {}", why.unwrap_or_default()));
                }
            }
            Err(e) => failures.push(format!(
                "seed {seed}: {e}: {}",
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    }
    println!(
        "tile differential on the GPU: {count} programs from seed {first}: {agree} agree with compiled Triton ({exact} of them exact-only programs), {rejected} not run by one side, {} mismatches",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
