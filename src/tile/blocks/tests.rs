//! Which pointer loads the pass proves blocks of a tensor: Triton's tutorial matmul, and each
//! change to it that breaks one step of the proof.

use super::why;
use crate::tile::{compile_for, ArgKind, ConstValue, DType, Extent, KernelRequest, Target};
use std::path::Path;

/// Triton's tutorial matmul (kwb's `kernels/matmul/v4.tile`, comments left out).
const TUTORIAL: &str = "import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_pid_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_m
    pid_n = (pid % per_group) // group_m
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * N + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)
";

fn request(non_negative: bool) -> KernelRequest {
    let int = ArgKind::Int {
        fits_i32: true,
        divisibility: 16,
        non_negative,
        one: false,
    };
    let cx = [
        ("BLOCK_M", 128),
        ("BLOCK_N", 256),
        ("BLOCK_K", 64),
        ("GROUP_M", 8),
        ("NUM_STAGES", 3),
    ];
    KernelRequest {
        name: "matmul_kernel".into(),
        args: vec![
            ArgKind::Pointer(DType::F16),
            ArgKind::Pointer(DType::F16),
            ArgKind::Pointer(DType::F16),
            int.clone(),
            int.clone(),
            int,
        ],
        constexprs: cx
            .iter()
            .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
            .collect(),
        num_warps: 8,
        sums: Default::default(),
    }
}

/// The names of the loads proven blocks (`a`, `b`), in the order the pass recorded them.
fn blocks(src: &str, non_negative: bool) -> Vec<String> {
    let out = compile_for(
        Path::new("t.tile"),
        src,
        &[request(non_negative)],
        Target::sm(90),
    );
    let errors: Vec<_> = out.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let k = &out.kernels[0];
    let mut names: Vec<String> = k
        .desc_loads
        .iter()
        .map(|d| k.vars[d.dst.0 as usize].name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// Why each load that is not a block is not, by name (`a`, `b`).
fn misses(src: &str) -> Vec<(String, &'static str)> {
    let out = compile_for(Path::new("t.tile"), src, &[request(true)], Target::sm(90));
    let k = &out.kernels[0];
    let mut m: Vec<_> = k
        .block_misses
        .iter()
        .map(|b| {
            (
                k.vars[b.dst.0 as usize].name.clone().unwrap_or_default(),
                b.reason,
            )
        })
        .collect();
    m.sort();
    m
}

fn miss(name: &str, reason: &'static str) -> (String, &'static str) {
    (name.to_string(), reason)
}

fn edited(from: &str, to: &str) -> String {
    assert!(TUTORIAL.contains(from), "{from}");
    TUTORIAL.replacen(from, to, 1)
}

#[test]
fn the_tutorial_loads_are_blocks_of_a_and_b_copied_with_tma() {
    assert_eq!(blocks(TUTORIAL, true), ["a", "b"]);
    let out = compile_for(
        Path::new("t.tile"),
        TUTORIAL,
        &[request(true)],
        Target::sm(90),
    );
    let k = &out.kernels[0];
    // A: M x K with rows of K; B: K x N with rows of N; the kernel's blocks.
    let shapes: Vec<_> = k
        .descriptors
        .iter()
        .map(|d| (d.shape.clone(), d.strides[0], d.block.clone()))
        .collect();
    let p = |i: usize| k.params[i].var;
    assert!(
        shapes.contains(&(vec![p(3), p(5)], p(5), vec![128, 64])),
        "{shapes:?}"
    );
    assert!(
        shapes.contains(&(vec![p(5), p(4)], p(4), vec![64, 256])),
        "{shapes:?}"
    );
    // The launch encodes the same maps as for v7's descriptors.
    let maps = &out.tensor_maps[0].1;
    assert_eq!(maps.len(), 2);
    assert!(maps
        .iter()
        .any(|m| m.base == 0 && m.dims == [Extent::Arg(5), Extent::Arg(3)]));
    assert!(out.cuda.contains("kwb_tma2d("));
    // Without the facts of the launch (the sizes may be negative) and no `tl.assume`, no proof.
    assert!(blocks(
        &edited("    tl.assume(pid_m >= 0)\n    tl.assume(pid_n >= 0)\n", ""),
        false
    )
    .is_empty());
}

#[test]
fn a_start_that_may_be_negative_is_not_a_block() {
    // pid_n divides by `group_m`, a difference: only `tl.assume` says it is not negative.
    // pid_m is a sum of quotients and remainders of non-negative sizes.
    let src = edited("    tl.assume(pid_n >= 0)\n", "");
    assert_eq!(blocks(&src, true), ["a"]);
    assert_eq!(misses(&src), [miss("b", why::NEGATIVE)]);
    // The generated code says why B's copies are not TMA (nor A's: a loop's ring loads are
    // all TMA copies or none).
    let out = compile_for(Path::new("t.tile"), &src, &[request(true)], Target::sm(90));
    assert!(out.cuda.contains("copied by cp.async"), "{}", out.cuda);
    assert!(out
        .cuda
        .contains("is not proven a block: a block's first row or column may be negative"));
    assert!(misses(TUTORIAL).is_empty());
}

#[test]
fn wrapped_rows_must_be_left_out_of_every_store() {
    // Without the row bound, C's rows past M would receive the wrapped rows' products.
    let src = edited(
        "c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)",
        "c_mask = (offs_cm[:, None] < M + 0 * N) & (offs_cn[None, :] < N)",
    );
    assert_eq!(
        blocks(&src, true),
        ["a", "b"],
        "the same bound, written otherwise"
    );
    let src = edited(
        "c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)",
        "c_mask = offs_cn[None, :] < N",
    );
    assert_eq!(blocks(&src, true), ["b"]);
    assert_eq!(misses(&src), [miss("a", why::STORED)]);
    // A product reduced over its rows mixes the wrapped rows into every result (and the proof
    // follows values element by element only, so B's columns are not proven either).
    let src = edited(
        "    tl.store(c_ptrs, c, mask=c_mask)\n",
        "    tl.store(c_ptrs, c, mask=c_mask)\n    tl.store(c_ptr + offs_cn, tl.sum(acc, axis=0).to(tl.float16), mask=offs_cn < N)\n",
    );
    assert!(blocks(&src, true).is_empty());
}

#[test]
fn each_index_needs_one_bound_and_a_zero_fill() {
    // No mask along K: the block's extent is unknown.
    let src = edited(
        "a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)",
        "a = tl.load(a_ptrs)",
    );
    assert_eq!(blocks(&src, true), ["b"]);
    assert_eq!(misses(&src), [miss("a", why::BOUND)]);
    // Another value than zero outside the mask.
    let src = edited(
        "b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)",
        "b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=1.0)",
    );
    assert_eq!(blocks(&src, true), ["a"]);
    assert_eq!(misses(&src), [miss("b", why::OTHER)]);
    // A mask conjunct that is not an index bound.
    let src = edited(
        "a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)",
        "a = tl.load(a_ptrs, mask=(offs_k[None, :] < K - k * BLOCK_K) & (offs_k[None, :] != 3), other=0.0)",
    );
    assert_eq!(blocks(&src, true), ["b"]);
    assert_eq!(misses(&src), [miss("a", why::MASK)]);
    // An extent that changes from one iteration to the next.
    let src = edited(
        "K - k * BLOCK_K, other=0.0)\n        b",
        "K - k * BLOCK_K * 2, other=0.0)\n        b",
    );
    assert_eq!(blocks(&src, true), ["b"]);
    assert_eq!(misses(&src), [miss("a", why::EXTENT)]);
}

#[test]
fn a_wrap_along_k_or_a_loop_not_counting_from_zero_is_not_a_block() {
    // Wrapped along the dot's K: every product would read the wrapped columns.
    let src = edited(
        "offs_k = tl.arange(0, BLOCK_K)",
        "offs_k = tl.arange(0, BLOCK_K) % K",
    );
    assert!(blocks(&src, true).is_empty());
    // (Advancing a wrapped index by BLOCK_K is no longer a shift of the block.)
    assert_eq!(misses(&src), [miss("a", why::FORM), miss("b", why::FORM)]);
    let src = edited(
        "for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):",
        "for k in tl.range(1, tl.cdiv(K, BLOCK_K) + 1, num_stages=NUM_STAGES):",
    );
    assert!(blocks(&src, true).is_empty());
    assert_eq!(misses(&src), [miss("a", why::LOOP), miss("b", why::LOOP)]);
    // A pointer tile that advances one column further than its mask: the extent would grow.
    let src = edited("a_ptrs += BLOCK_K\n", "a_ptrs += BLOCK_K + K * 0 + 1\n");
    assert_eq!(blocks(&src, true), ["b"]);
    assert_eq!(misses(&src), [miss("a", why::EXTENT)]);
}
