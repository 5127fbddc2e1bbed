//! On GPUs: kwb's compiled kernels against Triton's compiled kernels, on the random programs of
//! `tests/support/tilegen/` (the CPU side of this is `tests/tile_differential.rs`).
//!
//! Triton (the machine's own torch and triton) compiles and runs each program's plain layout;
//! kwb compiles a layout split inside brackets and runs it in its GPU worker on the same inputs,
//! with Triton's outputs as the reference. Threads share the GPUs, each with its own Triton
//! process and kwb worker. A mismatch is reduced and saved as on the CPU.

mod support;

use kwb::compile::Arch;
use kwb::run::supervisor::worker_command::WorkerCommand;
use kwb::run::supervisor::{JobResult, Supervisor};
use std::fmt::Write as _;
use std::path::PathBuf;
use support::differential::{planned, Case};
use support::tile_campaign::{campaign, print_tally, Differential, Settings};
use support::tile_diff::{Outcome, Runner};
use support::tilegen::{self, Arg, Layout, Program};
use support::triton::Interpreter;

/// One thread's pair: Triton compiling for one GPU, and a kwb worker on the same GPU.
struct Gpu {
    runner: Runner,
    worker: Supervisor,
}

impl Differential for Gpu {
    fn folder(&self, tag: &str) -> PathBuf {
        self.runner.dir.join(tag)
    }

    /// A run on the GPU compiles with Triton first (about a second): a shorter reduction.
    fn reduce_budget(&self) -> u64 {
        150
    }

    fn check(&mut self, p: &Program, tag: &str) -> Outcome {
        let (dir, _) = self.runner.write(p, tag);
        let request = self.runner.triton_request(p, &dir);
        if let Err(e) = self.runner.triton.run(&request) {
            return Outcome::TritonRejects(e);
        }
        let split = tilegen::print(p, &mut Layout::seeded(p.seed * 7 + 3));
        std::fs::write(dir.join("k.split.py"), split).unwrap();
        let mut yaml = Runner::workspace(p, &dir, "k.split.py");
        yaml.push_str("reference:\n  npy:\n");
        for a in &p.args {
            if let Arg::Buffer { name, .. } = a {
                let f = dir.join(format!("{name}.triton.npy"));
                let _ = writeln!(yaml, "    {name}: {}", f.display());
            }
        }
        // kwb's per-dtype tolerances (exact for int32, 2 ulp for fp16, 1e-5 for fp32) for
        // exact programs. Triton runs with `enable_fp_fusion=False`: by default it contracts
        // `a * b + c` into one FMA, rounding once, where kwb rounds the product and the sum,
        // and under cancellation (`x * x - x * x`) that is no rounding difference at all
        // (docs/differential.md).
        // Inexact ones within 2e-3, as on the CPU: a last-bit difference of `exp` can flip a
        // later rounding to fp16.
        if !p.exact {
            yaml.push_str("tolerance: {rtol: 2e-3, atol: 2e-3}\n");
        }
        let case = Case {
            yaml: &yaml,
            version: "k",
            size: "s",
            seed: p.seed,
            code: |c| kwb::run::cpu::CpuCode::Tile(c.tile_kernels.clone()),
            tolerance: None,
        };
        let job = match planned(&dir, self.runner.arch, &case) {
            Ok((job, _)) => job,
            Err(e) => return Outcome::KwbRejects(e),
        };
        match self.worker.run(&job, &mut |_| {}) {
            JobResult::Done(o) => match (o.error, o.check) {
                (Some(e), _) => Outcome::Mismatch(format!("kwb's run failed: {e}")),
                (None, Some(c)) if c.passed => Outcome::Agree,
                (None, Some(c)) => Outcome::Mismatch(format!(
                    "Triton gives other values: {}",
                    c.failure.unwrap_or_default()
                )),
                (None, None) => Outcome::Mismatch("kwb's run was not checked".into()),
            },
            other => Outcome::Mismatch(format!("kwb's worker: {other:?}")),
        }
    }
}

/// `KWB_DIFF_GPU_PROGRAMS` programs (default 100) from `KWB_DIFF_SEED`, on `KWB_DIFF_JOBS`
/// threads (default: the cores, at most 8) spread over every GPU.
#[test]
#[ignore = "needs an NVIDIA GPU and Triton: the GPU bundle runs it with --include-ignored"]
fn kwb_agrees_with_compiled_triton_on_the_gpu() {
    let Some(_gpu) = kwb::run::gpu::open::gpu_or_skip("kwb_agrees_with_compiled_triton_on_the_gpu")
    else {
        return;
    };
    support::provision_nvrtc();
    let gpus = kwb::run::gpu::open::probe(0).expect("a GPU");
    let Settings {
        dir,
        save,
        first,
        count,
        jobs,
    } = Settings::from_env("tile-diff-gpu", "KWB_DIFF_GPU_PROGRAMS", 100);
    let make = |t: usize| {
        let ordinal = t % gpus;
        let triton = Interpreter::start_compiled(ordinal).expect("Triton starts on the GPU");
        if t == 0 {
            println!("triton on the GPU: {}", triton.versions.trim());
        }
        let cmd = WorkerCommand::new(support::kwb_bin(), ["worker"]);
        let mut worker = Supervisor::start(cmd).expect("kwb's worker starts");
        worker
            .device(ordinal as u32)
            .expect("kwb's worker opens the GPU");
        Gpu {
            runner: Runner {
                triton,
                arch: Arch::parse("sm_90").unwrap(),
                dir: dir.clone(),
            },
            worker,
        }
    };
    let t = campaign(first, count, jobs, make, &save);
    print_tally(
        &format!("tile differential on {gpus} GPU(s)"),
        first,
        count,
        &t,
    );
    let found: Vec<String> = t.mismatches.iter().map(|f| f.report()).collect();
    assert!(found.is_empty(), "{}", found.join("\n\n"));
    assert!(
        t.agree * 2 >= count,
        "only {} of {count} programs ran on both sides",
        t.agree
    );
}
