//! Differential testing of kwb's tile compiler against Triton itself, on the CPU.
//!
//! Random valid Triton kernels (`support/tilegen/`, seeded) run under Triton's own interpreter
//! (`TRITON_INTERPRET=1`, torch on the CPU; `scripts/triton_interpret.py`) from their plain
//! layout, and under kwb's tile interpreter and as the PTX kwb generated, in kwb's emulator,
//! from a layout split inside brackets; every buffer must come out the same: bit for bit where
//! the program uses exact operations only, within about an fp16 ulp otherwise. Two more layouts
//! (splits, comments, trailing commas, backslashes) must compile to the plain layout's IR.
//!
//! A mismatch is reduced (statements removed, branches kept, expressions replaced by operands,
//! while it persists, as C-Reduce does) and saved as a fixture (`KWB_DIFF_SAVE`, default
//! `target/tile-diff/regressions/seed-N/`) that `tests/diff_regressions.rs` replays without
//! Triton once copied into `tests/diff_regressions/`; the test fails with the reduced program.
//!
//! `cargo test --test tile_differential` runs 500 programs on up to 8 cores (`KWB_DIFF_PROGRAMS`,
//! `KWB_DIFF_SEED`, `KWB_DIFF_JOBS` pick others). torch and triton are installed into kwb's
//! cache folder on first use; where that is impossible the test says why and passes only
//! outside CI (`CI` unset).

mod support;

use kwb::compile::Arch;
use std::path::PathBuf;
use support::tile_campaign::{campaign, print_tally, Settings};
use support::tile_diff::Runner;
use support::triton::{provision, Interpreter};

/// The site packages torch and triton come from, or None (with the reason printed) where they
/// cannot be installed outside CI.
fn site() -> Option<PathBuf> {
    support::provision_nvrtc();
    match provision() {
        Ok(s) => Some(s),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the differential test, but Triton is unavailable: {e}"
            );
            println!("SKIPPED: differential test against Triton: {e}");
            None
        }
    }
}

#[test]
fn kwb_agrees_with_triton_on_random_programs() {
    let Some(site) = site() else { return };
    let Settings {
        dir,
        save,
        first,
        count,
        jobs,
    } = Settings::from_env("tile-diff", "KWB_DIFF_PROGRAMS", 500);
    let make = |t: usize| {
        let triton = Interpreter::start(&site).expect("the Triton interpreter starts");
        if t == 0 {
            println!("triton interpreter: {}", triton.versions.trim());
        }
        Runner {
            triton,
            arch: Arch::parse("sm_90").unwrap(),
            dir: dir.clone(),
        }
    };
    let t = campaign(first, count, jobs, make, &save);
    print_tally("tile differential", first, count, &t);
    let found: Vec<String> = t.mismatches.iter().map(|f| f.report()).collect();
    assert!(found.is_empty(), "{}", found.join("\n\n"));
    // The generator must make programs Triton accepts, and kwb must run most of them.
    assert!(
        t.rejected_by_triton.len() as u64 * 20 <= count,
        "the generator made {} programs Triton rejects",
        t.rejected_by_triton.len()
    );
    assert!(
        t.agree * 2 >= count,
        "only {} of {count} programs ran in both",
        t.agree
    );
}
