//! A deterministic mutation fuzzer for the tile language's front end: the shipped tile
//! kernels and the error fixtures, mutated (bytes, tokens, splices, deleted and duplicated
//! lines, re-indented lines, odd numbers), fed to `kwb::tile::compile_for` with a few request
//! shapes (half of them for sm_90, where the matmul loop's dot goes to wgmma) and to
//! `kwb::tile::signatures`. Nothing may panic, whatever the input.
//!
//! `cargo test --test tile_fuzz` runs 3,000 inputs; `KWB_FUZZ_ITERS=1000000 cargo test --test
//! tile_fuzz -- --ignored` runs the long campaign. A panicking input is written to
//! `target/tile-fuzz-panic-N.tile` so it can be replayed.

mod support;

use kwb::tile::{compile_for, signatures, ArgKind, ConstValue, DType, KernelRequest, Target};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// xorshift64*: small, seeded, the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    ".",
    "=",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "<<",
    ">>",
    "<",
    "==",
    "&",
    "|",
    "^",
    "~",
    "@",
    "\\\n",
    "\n",
    "\n    ",
    "\n        ",
    "    ",
    "\t",
    "#",
    "\"",
    "'",
    "\"\"\"",
    "None",
    "True",
    "not ",
    " and ",
    " or ",
    "if ",
    " else ",
    "for ",
    " in ",
    "while ",
    "return ",
    "lambda ",
    "def ",
    "@triton.jit\n",
    "tl.",
    "tl.arange(0, 7)",
    "tl.load(",
    "tl.store(",
    "x",
    "offs",
    "BLOCK",
    "[:, None]",
    "[None, :]",
    ".to(tl.float16)",
    ".T",
    "tl.static_range(3)",
    "tl.sum(",
    "axis=1",
    "mask=",
    "other=",
    "float('inf')",
    "tl.zeros([64, 64], tl.float32)",
    "tl.where(",
    "tl.program_id(0)",
    "range(",
    "é",
    "$",
    "0x",
    "1e",
    "_",
    "\r\n",
    "pass",
];

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "16",
    "100",
    "1024",
    "4096",
    "65536",
    "2147483648",
    "9223372036854775807",
    "99999999999999999999",
    "0.0",
    "1e308",
    "-0.5",
    "1 << 62",
    "2 ** 63",
    "-9223372036854775808",
];

fn mutate(rng: &mut Rng, src: &str, corpus: &[String]) -> String {
    let mut b: Vec<u8> = src.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = b.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                b[i] = *rng.pick(b"()[]{}:,.=+-*/%<>!@#\\\"' \n\t0123456789abcxyz_");
            }
            1 => {
                let i = rng.below(len + 1);
                let t = rng.pick(TOKENS).as_bytes();
                b.splice(i..i, t.iter().copied());
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below(16.min(len - i));
                b.drain(i..i + n);
            }
            3 => {
                let i = rng.below(len + 1);
                let t = rng.pick(NUMBERS).as_bytes();
                b.splice(i..i, t.iter().copied());
            }
            _ => {
                // Line operations.
                let text = String::from_utf8_lossy(&b).into_owned();
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                if lines.is_empty() {
                    continue;
                }
                let i = rng.below(lines.len());
                match rng.below(5) {
                    0 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    1 => {
                        lines.remove(i);
                    }
                    2 => {
                        let j = rng.below(lines.len());
                        lines.swap(i, j);
                    }
                    3 => {
                        let other = rng.pick(corpus);
                        let ol: Vec<&str> = other.lines().collect();
                        if !ol.is_empty() {
                            let s = rng.below(ol.len());
                            let n = 1 + rng.below(6.min(ol.len() - s));
                            for (k, l) in ol[s..s + n].iter().enumerate() {
                                lines.insert(i + k, l.to_string());
                            }
                        }
                    }
                    _ => {
                        let pad = " ".repeat(rng.below(10));
                        lines[i] = format!("{pad}{}", lines[i].trim_start());
                    }
                }
                b = lines.join("\n").into_bytes();
                b.push(b'\n');
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn corpus() -> Vec<String> {
    let mut files = vec![
        "kernels/elementwise-add/v8.tile".to_string(),
        "kernels/gelu/v4.tile".to_string(),
        "kernels/softmax/v5.tile".to_string(),
        "kernels/softmax/v6.tile".to_string(),
        "kernels/softmax/fused_softmax.py".to_string(),
        "kernels/softmax/v8_chunked.tile".to_string(),
        "kernels/matmul/v4.tile".to_string(),
        "kernels/matmul/v7.tile".to_string(),
        // imports inside a top-level try (a library's idiom) and a 64 KiB layout change
        "tests/fixtures/big_smem/kernels.py".to_string(),
        // tl.sort in its three spellings, 1-D and 2-D, beside a tl.dot
        "tests/tile_scan_rand/sort.py".to_string(),
        // block pointers: loads, stores, advances in loops, helpers, tuples carried
        "tests/tile_scan_rand/block_ptr.py".to_string(),
    ];
    let mut fixtures: Vec<String> = std::fs::read_dir("tests/tile")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "tile"))
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    fixtures.sort();
    files.extend(fixtures);
    let mut v: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    v.push(
        "import triton.language as tl\n@triton.jit\ndef helper(x, F: tl.constexpr = 2):\n    return x * F\n\n@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    r = tl.arange(0, 16)[:, None]\n    c = tl.arange(0, BLOCK)[None, :]\n    acc = tl.zeros([16, BLOCK], tl.float32)\n    for i in tl.range(0, n, 4):\n        acc += tl.load(x_ptr + r * BLOCK + c, mask=(r < n) & (c < n), other=0.0)\n    if n > 2:\n        acc = acc * 2\n    else:\n        acc = helper(acc)\n    j = 0\n    while j < n:\n        j += 1\n    for s in tl.static_range(2):\n        acc = tl.where(acc > s, tl.exp(acc), -acc)\n    t = tl.sum(acc.T, axis=0).to(tl.float16)\n    tl.atomic_add(y_ptr + tl.arange(0, 16), t.to(tl.float32))\n    tl.store(y_ptr + r * BLOCK + c, tl.reshape(acc, [16 * BLOCK]).reshape(16, BLOCK))\n".to_string(),
    );
    // The language of scans, random numbers, atomics and shape ops.
    v.push("import triton\nimport triton.language as tl\n\n@triton.jit\ndef add_pair(a, b):\n    return a + b\n\n@triton.jit\ndef k(x_ptr, y_ptr, i_ptr, n, seed, BLOCK: tl.constexpr):\n    o = tl.arange(0, BLOCK)\n    m = o < n\n    x = tl.load(x_ptr + o, mask=m, other=0.0)\n    i = tl.load(i_ptr + o, mask=m, other=0)\n    c = tl.cumsum(x, axis=0) + tl.cumprod(x * 0 + 1, axis=0)\n    s = tl.associative_scan(x, 0, add_pair)\n    r = tl.reduce(x, 0, add_pair)\n    u = tl.rand(seed, o) + tl.randn(seed, o) + tl.randint(seed, o).to(tl.float32)\n    h = tl.umulhi(i.to(tl.uint32), i.to(tl.uint32))\n    q = tl.clamp(x, -1.0, 1.0)\n    f = tl.flip(x, 0)\n    a, b = tl.split(tl.join(x, q))\n    v = tl.interleave(a, b)\n    w = tl.ravel(tl.reshape(v, [2, BLOCK]))\n    pm, pn = tl.swizzle2d(tl.program_id(0), tl.program_id(1), 4, 4, 2)\n    old = tl.atomic_cas(i_ptr, 0, 1)\n    tl.atomic_xchg(i_ptr + 1, old)\n    tl.store(y_ptr + o, c + s + r + u + q + f + h.to(tl.float32) + (pm + pn).to(tl.float32), mask=m)\n    tl.store(y_ptr + BLOCK + tl.arange(0, 2 * BLOCK), w)\n".to_string());
    v
}

/// Requests shaped like what kwb sends: the signature's kernels with pointers, ints and floats,
/// and a few deliberately wrong ones.
fn requests(rng: &mut Rng, path: &Path, src: &str) -> Vec<KernelRequest> {
    let mut out = Vec::new();
    let block = *rng.pick(&[1i64, 16, 64, 128, 1024, 100, 0, -4, 1 << 40]);
    if let Ok(sigs) = signatures(path, src) {
        for s in sigs {
            let args = s
                .params
                .iter()
                .filter(|p| !p.constexpr && !p.has_default)
                .map(|p| match rng.below(5) {
                    0 => ArgKind::Int {
                        fits_i32: rng.below(2) == 0,
                        divisibility: 1u64 << rng.below(5),
                        non_negative: rng.below(2) == 0,
                        one: rng.below(4) == 0,
                    },
                    1 => ArgKind::Float,
                    _ if p.name.ends_with("ptr") || rng.below(3) == 0 => {
                        ArgKind::Pointer(*rng.pick(&[
                            DType::F32,
                            DType::F16,
                            DType::BF16,
                            DType::I32,
                            DType::F64,
                        ]))
                    }
                    _ => ArgKind::Int {
                        fits_i32: true,
                        divisibility: 16,
                        non_negative: true,
                        one: false,
                    },
                })
                .collect();
            let constexprs = s
                .params
                .iter()
                .filter(|p| p.constexpr)
                .map(|p| {
                    let v = match rng.below(6) {
                        0 => ConstValue::Float(1.5),
                        1 => ConstValue::Bool(true),
                        _ => ConstValue::Int(block),
                    };
                    (p.name.clone(), v)
                })
                .collect();
            out.push(KernelRequest {
                name: s.name,
                args,
                constexprs,
                num_warps: 4,
                sums: Default::default(),
            });
        }
    }
    out.push(KernelRequest {
        name: "k".into(),
        args: vec![
            ArgKind::Pointer(DType::F32),
            ArgKind::Pointer(DType::F16),
            ArgKind::Int {
                fits_i32: true,
                divisibility: 1,
                non_negative: true,
                one: false,
            },
        ],
        constexprs: vec![("BLOCK".into(), ConstValue::Int(block))],
        num_warps: 4,
        sums: Default::default(),
    });
    out
}

fn run(iters: u64) {
    let corpus = corpus();
    assert!(corpus.len() >= 6, "the corpus is missing");
    // `KWB_FUZZ_SEED` gives a campaign's parallel shards different inputs.
    let seed: u64 = std::env::var("KWB_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let mut panics = 0u64;
    let hook = std::panic::take_hook();
    // Only the first few panics are printed (with their message and place).
    let shown = std::sync::atomic::AtomicU32::new(0);
    std::panic::set_hook(Box::new(move |info| {
        if shown.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 5 {
            eprintln!("tile fuzz: panic: {info}");
        }
    }));
    for i in 0..iters {
        let base = rng.pick(&corpus).clone();
        let src = mutate(&mut rng, &base, &corpus);
        let path = if base.contains("if __name__") || rng.below(4) == 0 {
            "fuzz.py"
        } else {
            "fuzz.tile"
        };
        let path = Path::new(path);
        // Half the inputs for sm_90, where the matmul loop's dot goes to wgmma; every other
        // one of each half as persistent programs (`persistent.rs`).
        let target = Target::sm(if i % 2 == 0 { 90 } else { 0 }).with_persistent(i % 4 >= 2);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let reqs = requests(&mut rng, path, &src);
            let _ = signatures(path, &src);
            let _ = compile_for(path, &src, &reqs, target);
        }));
        if r.is_err() {
            panics += 1;
            let _ = std::fs::create_dir_all("target");
            let _ = std::fs::write(format!("target/tile-fuzz-panic-{i}.tile"), &src);
        }
    }
    std::panic::set_hook(hook);
    println!("tile fuzz: {iters} inputs, {panics} panics");
    assert_eq!(
        panics, 0,
        "inputs that panicked are in target/tile-fuzz-panic-*.tile"
    );
}

#[test]
fn fuzz_front_end_briefly() {
    run(3_000);
}

#[test]
#[ignore]
fn fuzz_front_end_long() {
    let iters = std::env::var("KWB_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    run(iters);
}

/// Every tile version of every shipped workspace at each size: its file, source and the
/// requests kwb compiles it with (sweeps expanded).
fn shipped_requests() -> Vec<(std::path::PathBuf, String, Vec<KernelRequest>)> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(support::repo().join("workspaces"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files {
        let Ok(ws) = kwb::workspace::load(&f) else {
            continue;
        };
        for v in &ws.versions {
            let is_tile = v.file.extension().is_some_and(|e| e == "tile" || e == "py");
            let Ok(src) = std::fs::read_to_string(&v.file) else {
                continue;
            };
            if !is_tile {
                continue;
            }
            for size in &ws.sizes {
                if let Ok(reqs) = kwb::compile::tile_version::requests(v, Some(size)) {
                    out.push((v.file.clone(), src.clone(), reqs));
                }
            }
        }
    }
    out
}

/// The property beyond "no panic": a kernel laid out anew (lines split and joined inside
/// brackets, comments, backslash continuations; `support/layout.rs`) compiles to the same IR.
/// Over every shipped tile kernel as kwb compiles it, for sm_90 and for any GPU.
fn relayout(iters: u64) {
    let cases = shipped_requests();
    assert!(cases.len() >= 10, "the shipped tile versions are missing");
    let mut rng = support::rng::Rng(7);
    for i in 0..iters {
        let (path, src, reqs) = &cases[rng.below(cases.len())];
        let other = support::layout::reformat(src, &mut rng, 1 + (i % 6) as usize);
        let target = Target::sm(if i % 2 == 0 { 90 } else { 0 });
        let a = compile_for(path, src, reqs, target);
        let b = compile_for(path, &other, reqs, target);
        let strip = |c: &kwb::tile::Compiled| -> Vec<_> {
            c.kernels.iter().map(|k| k.without_locs()).collect()
        };
        assert!(
            a.diagnostics.iter().all(|d| !d.is_error()),
            "{}: a shipped kernel does not compile:\n{}",
            path.display(),
            kwb::diag::render_all(&a.diagnostics)
        );
        assert!(
            b.diagnostics.iter().all(|d| !d.is_error()) && strip(&a) == strip(&b),
            "input {i} ({}): the same kernel laid out anew compiles differently:\n{}\n--- laid out anew ---\n{other}",
            path.display(),
            kwb::diag::render_all(&b.diagnostics)
        );
    }
    println!(
        "tile relayout: {iters} inputs over {} shipped kernel specialisations, each compiled to the same IR",
        cases.len()
    );
}

#[test]
fn relaid_out_kernels_compile_to_the_same_ir() {
    relayout(200);
}

#[test]
#[ignore]
fn relaid_out_kernels_compile_to_the_same_ir_long() {
    let iters = std::env::var("KWB_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    relayout(iters);
}
