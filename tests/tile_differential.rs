//! Differential testing of kwb's tile compiler against Triton itself, on the CPU.
//!
//! Random valid Triton kernels (`support/tilegen.rs`, seeded) run under Triton's own
//! interpreter (`TRITON_INTERPRET=1`, torch on the CPU; `scripts/triton_interpret.py`), under
//! kwb's tile interpreter, and as the PTX kwb generated, in kwb's emulator; every buffer must
//! come out the same: bit for bit where the program uses exact operations only, within a few
//! ulp otherwise. Each program is also printed in two more layouts (lines split inside
//! brackets, comments, trailing commas, backslashes), which must compile to the same IR.
//!
//! A mismatch is reduced (statements removed while it persists, as C-Reduce does) and written
//! to `target/tile-diff/seed-N.py`; the test fails with the seed and the reduced program.
//!
//! `cargo test --test tile_differential` runs 500 programs (`KWB_DIFF_PROGRAMS`,
//! `KWB_DIFF_SEED` pick others). torch and triton are installed into kwb's cache folder on first
//! use; where that is impossible the test says why and passes only outside CI (`CI` unset).

mod support;

use kwb::compile::Arch;
use std::collections::BTreeMap;
use std::path::PathBuf;
use support::tile_diff::{env_u64, Outcome, Runner};
use support::tilegen::{self, Layout};
use support::triton::{provision, Interpreter};

fn setup() -> Option<Runner> {
    support::provision_nvrtc();
    let site = match provision() {
        Ok(s) => s,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the differential test, but Triton is unavailable: {e}"
            );
            println!("SKIPPED: differential test against Triton: {e}");
            return None;
        }
    };
    let triton = Interpreter::start(&site).expect("the Triton interpreter starts");
    println!("triton interpreter: {}", triton.versions.trim());
    // `KWB_DIFF_DIR`: another folder, for a campaign beside a test run.
    let dir = std::env::var_os("KWB_DIFF_DIR")
        .map_or_else(|| support::repo().join("target/tile-diff"), PathBuf::from);
    let _ = std::fs::remove_dir_all(&dir);
    Some(Runner {
        triton,
        arch: Arch::parse("sm_90").unwrap(),
        dir,
    })
}

#[test]
fn kwb_agrees_with_triton_on_random_programs() {
    let Some(mut runner) = setup() else { return };
    let count = env_u64("KWB_DIFF_PROGRAMS", 500);
    let first = env_u64("KWB_DIFF_SEED", 1);
    let (mut agree, mut rejected_by_triton, mut rejected_by_kwb) = (0, Vec::new(), Vec::new());
    let mut mismatches = Vec::new();
    let mut features: BTreeMap<&'static str, u32> = BTreeMap::new();
    let mut exact = 0;
    for seed in first..first + count {
        let p = tilegen::generate(seed);
        match runner.run(&p, &format!("seed-{seed}")) {
            Outcome::Agree => {
                agree += 1;
                exact += u32::from(p.exact);
                for f in &p.features {
                    *features.entry(f).or_default() += 1;
                }
            }
            Outcome::TritonRejects(e) => rejected_by_triton.push((seed, e)),
            Outcome::KwbRejects(e) => rejected_by_kwb.push((seed, e)),
            Outcome::Mismatch(e) => {
                let (small, why) = runner.reduce(p.clone());
                let src = tilegen::print(&small, &mut Layout::plain());
                let file = runner.dir.join(format!("seed-{seed}-reduced/k.py"));
                mismatches.push(format!(
                    "seed {seed}: {e}\nreduced ({}): {why}\n{src}",
                    file.display()
                ));
            }
        }
    }
    println!(
        "tile differential: {count} programs from seed {first}: {agree} agree with Triton ({exact} compared bit for bit), {} rejected by kwb, {} rejected by Triton, {} mismatches",
        rejected_by_kwb.len(),
        rejected_by_triton.len(),
        mismatches.len()
    );
    println!("coverage (programs that agree, by feature): {features:?}");
    for (seed, e) in rejected_by_kwb.iter().take(5) {
        println!(
            "kwb rejects seed {seed}: {}",
            e.lines().take(4).collect::<Vec<_>>().join(" | ")
        );
    }
    for (seed, e) in rejected_by_triton.iter().take(3) {
        println!("Triton rejects seed {seed}: {e}");
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
    // The generator must make programs Triton accepts, and kwb must run most of them.
    assert!(
        rejected_by_triton.len() as u64 * 20 <= count,
        "the generator made {} programs Triton rejects",
        rejected_by_triton.len()
    );
    assert!(
        agree * 2 >= count,
        "only {agree} of {count} programs ran in both"
    );
}
