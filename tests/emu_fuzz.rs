//! No panic on mutated PTX: the emulator's front end reads mutations of the shipped kernels'
//! PTX (byte flips, deleted and duplicated lines, swapped tokens, truncations) and must return
//! a module or errors, never panic. A quick run is part of `cargo test`; the full million is
//!
//!     cargo test --release --test emu_fuzz -- --ignored --nocapture
//!
//! and prints its count and time.

mod support;

use support::rng::Rng;

use kwb::emu::Module;

/// The PTX of every shipped CUDA version, and of the tile matmuls (tensor cores: `mma.sync`,
/// `ldmatrix`, `cp.async`, and on sm_90 `wgmma`; v7: mbarriers, bulk tensor copies, tensor-map
/// parameters, labels in nested scopes), compiled once.
fn corpus() -> Vec<String> {
    let compiler = support::compiler("sm_90");
    let mut out = Vec::new();
    for name in ["elementwise-add", "gelu", "softmax", "matmul"] {
        let ws = kwb::workspace::load(&support::repo().join(format!("workspaces/{name}.yaml")))
            .expect("shipped workspace");
        let wanted = |v: &&kwb::workspace::Version| {
            !v.kind.is_tile()
                || (name == "matmul"
                    && ["v4", "v7[GROUP=8,STAGES=3,persistent=true]"].contains(&v.name.as_str()))
        };
        for v in ws.versions.iter().filter(wanted) {
            let c = compiler.compile_version(Some(&ws), v);
            assert!(c.ok, "{} must compile", v.name);
            out.push(c.ptx.to_string());
        }
    }
    out
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    ";",
    "[",
    "]",
    ",",
    "%r1",
    "%rd1",
    "%p1",
    "@%p1",
    "@!%p1",
    ".reg",
    ".b32",
    ".u64",
    ".shared",
    "bra",
    "$L__BB0_1",
    "$L__BB0_1:",
    "ld.global.v4.f32",
    "st.shared.f32",
    "0f7FC00000",
    "0d3FF0000000000000",
    "-1",
    "0x",
    "{%r1,",
    "[%rd1+",
    ".entry",
    ".param",
    "%r<",
    ">",
    "|",
    "!",
    "mov.b32",
    "shfl.sync.bfly.b32",
    "bar.sync",
    "cvt.rn.f16.f32",
    ".loc",
    "\"",
    "_param_0",
];

fn mutate(rng: &mut Rng, base: &str) -> String {
    let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(4) {
        if lines.is_empty() {
            break;
        }
        let i = rng.below(lines.len());
        match rng.below(7) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(rng.below(lines.len()), l);
            }
            2 => {
                let mut b = lines[i].clone().into_bytes();
                if !b.is_empty() {
                    let k = rng.below(b.len());
                    b[k] = b[k].wrapping_add(1 + rng.below(255) as u8);
                }
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
            3 => {
                let tok = TOKENS[rng.below(TOKENS.len())];
                let mut l = lines[i].clone();
                let at = rng.below(l.len() + 1);
                let at = (0..=at).rev().find(|&k| l.is_char_boundary(k)).unwrap_or(0);
                l.insert_str(at, tok);
                lines[i] = l;
            }
            4 => {
                let words: Vec<&str> = lines[i].split_whitespace().collect();
                if words.len() > 1 {
                    let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
                    let (a, b) = (rng.below(w.len()), rng.below(w.len()));
                    w.swap(a, b);
                    lines[i] = w.join(" ");
                }
            }
            5 => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            _ => lines.truncate(i),
        }
    }
    lines.join("\n")
}

fn fuzz(count: u64) {
    let corpus = corpus();
    let mut rng = Rng(0x6b77_6266);
    let start = std::time::Instant::now();
    let (mut ok, mut rejected) = (0u64, 0u64);
    for n in 0..count {
        let base = &corpus[(n as usize) % corpus.len()];
        let text = mutate(&mut rng, base);
        match std::panic::catch_unwind(|| Module::parse(&text).map(|m| m.entries().len())) {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(errors)) => {
                assert!(!errors.is_empty());
                rejected += 1;
            }
            Err(_) => panic!("the PTX front end panicked on input #{n}:\n{text}"),
        }
    }
    println!(
        "emu fuzz: {count} mutated PTX inputs, {ok} parsed, {rejected} rejected with errors, no panic, in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn mutated_ptx_never_panics_quick() {
    fuzz(20_000);
}

#[test]
#[ignore = "a million executions: run in release, see the module docs"]
fn mutated_ptx_never_panics_million() {
    fuzz(1_000_000);
}
