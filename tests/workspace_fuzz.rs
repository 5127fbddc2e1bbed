//! A deterministic mutation fuzzer for workspace YAML: the shipped workspaces and the error
//! fixtures, mutated (bytes, YAML tokens and whole fields spliced in, lines deleted,
//! duplicated, swapped and re-indented), loaded by `kwb::workspace::load_str`. Nothing may
//! panic, whatever the text, and every refusal is a diagnostic with a message.
//!
//! `cargo test --test workspace_fuzz` runs 2,000 inputs; `KWB_FUZZ_ITERS=1000000 cargo test
//! --release --test workspace_fuzz -- --ignored --nocapture` runs the long campaign. A
//! panicking input is written to `target/workspace-fuzz-panic-N.yaml` so it can be replayed.

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use support::rng::Rng;

/// Pieces of workspace YAML: structure, values at their edges, and whole fields (the newer
/// ones, such as `persistent` and sweeps, included).
const TOKENS: &[&str] = &[
    ":",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\n",
    "\n  ",
    "\n    ",
    "\t",
    "#",
    "'",
    "\"",
    "&a ",
    "*a",
    "<<: *a",
    "!!str ",
    "~",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e309",
    "NaN",
    "18446744073709551616",
    "64Ki",
    "cdiv(M, 128)",
    "M // 0",
    "next_pow2(",
    "persistent: true",
    "persistent: [true, false]",
    "sweep: {persistent: [false, true], num_warps: [4, 8]}",
    "sweep: {BLOCK: []}",
    "grid: [M, 2, 1]",
    "block: [1024, 2, 1]",
    "num_warps: 3",
    "dtype: f16",
    "dtype: i8",
    "shape: [M, K]",
    "init: {npy: missing.npy}",
    "output: true",
    "emulate: true",
    "args: [a, b, c, M, N, K, K]",
    "file: ../kernels/matmul/v4.tile",
    "file: /dev/null",
    "arch: sm_90a",
    "arch: sm_80a",
    "tolerance: {rtol: -1}",
    "reference: {expr: {c: matmul(a, b)}}",
    "constexprs: {BLOCK_M: 0}",
];

/// The shipped workspaces and the fixtures, with the file each came from (relative kernel
/// paths resolve against it).
fn corpus() -> Vec<(std::path::PathBuf, String)> {
    let repo = support::repo();
    let mut out = Vec::new();
    for dir in ["workspaces", "tests/fixtures/workspaces"] {
        let mut files: Vec<_> = std::fs::read_dir(repo.join(dir))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((p, text));
        }
    }
    out
}

fn mutate(rng: &mut Rng, base: &str, corpus: &[(std::path::PathBuf, String)]) -> String {
    let mut s = base.to_string();
    for _ in 0..1 + rng.below(2) {
        let lines: Vec<&str> = s.lines().collect();
        let at = floor_boundary(&s, rng.below(s.len() + 1));
        s = match rng.below(8) {
            0 => {
                let end = floor_boundary(&s, at + rng.below(24));
                format!("{}{}", &s[..at], &s[end..])
            }
            1 | 2 => format!("{}{}{}", &s[..at], rng.pick(TOKENS), &s[at..]),
            3 if !lines.is_empty() => {
                let i = rng.below(lines.len());
                let mut l = lines.clone();
                l.insert(i, lines[i]);
                l.join("\n")
            }
            4 if lines.len() > 1 => {
                let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                let mut l = lines.clone();
                l.swap(i, j);
                l.join("\n")
            }
            5 if !lines.is_empty() => {
                let i = rng.below(lines.len());
                let mut l: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
                l[i] = match rng.below(3) {
                    0 => format!("  {}", l[i]),
                    1 => l[i].trim_start().to_string(),
                    _ => String::new(),
                };
                l.join("\n")
            }
            6 => {
                // A piece of another workspace spliced in.
                let other = &corpus[rng.below(corpus.len())].1;
                let a = floor_boundary(other, rng.below(other.len() + 1));
                let b = floor_boundary(other, a + rng.below(200));
                format!("{}{}{}", &s[..at], &other[a..b], &s[at..])
            }
            _ => {
                let c = ["0", "9", "x", "-", " ", ":", "\u{feff}", "é"][rng.below(8)];
                let end = floor_boundary(&s, at + 1);
                format!("{}{c}{}", &s[..at], &s[end..])
            }
        };
    }
    s
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn run(iters: u64) {
    let corpus = corpus();
    assert!(corpus.len() >= 10, "the corpus is missing");
    let mut rng = Rng(0x7773_6675_7a7a);
    let (mut panics, mut loaded, mut refused) = (0u64, 0u64, 0u64);
    let hook = std::panic::take_hook();
    let shown = std::sync::atomic::AtomicU32::new(0);
    std::panic::set_hook(Box::new(move |info| {
        if shown.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 5 {
            eprintln!("workspace fuzz: panic: {info}");
        }
    }));
    for i in 0..iters {
        let (path, base) = &corpus[rng.below(corpus.len())];
        let text = mutate(&mut rng, base, &corpus);
        let r = catch_unwind(AssertUnwindSafe(|| kwb::workspace::load_str(path, &text)));
        match r {
            Err(_) => {
                panics += 1;
                let _ = std::fs::create_dir_all("target");
                let _ = std::fs::write(format!("target/workspace-fuzz-panic-{i}.yaml"), &text);
            }
            Ok(Ok(_)) => loaded += 1,
            Ok(Err(e)) => {
                refused += 1;
                assert!(
                    !e.diagnostics.is_empty()
                        && e.diagnostics.iter().all(|d| !d.message.is_empty()),
                    "a refusal without a message: {e:?}\n{text}"
                );
            }
        }
    }
    std::panic::set_hook(hook);
    println!("workspace fuzz: {iters} inputs, {loaded} loaded, {refused} refused with diagnostics, {panics} panics");
    assert_eq!(
        panics, 0,
        "inputs that panicked are in target/workspace-fuzz-panic-*.yaml"
    );
}

#[test]
fn fuzz_workspaces_briefly() {
    run(2_000);
}

#[test]
#[ignore]
fn fuzz_workspaces_long() {
    let iters = std::env::var("KWB_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    run(iters);
}
