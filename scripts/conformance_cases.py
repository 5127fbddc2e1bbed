#!/usr/bin/env python3
"""Writes the launch cases of Triton's tutorials, as their own host code launches them, for
scripts/triton_vs_kwb.py.

The tutorials are not part of kwb: fetch them yourself (e.g. from a checkout of Triton,
python/tutorials/) into one folder, then

  python3 scripts/conformance_cases.py FOLDER > FOLDER/cases.json
  python3 scripts/triton_vs_kwb.py FOLDER/cases.json

Cases (file names as in Triton's repository):
- 01-vector-add.py `add_kernel`, 98432 fp32 elements, BLOCK_SIZE 1024 (the tutorial's size);
- 02-fused-softmax.py `softmax_kernel`, 4096x1024 fp32, its BLOCK_SIZE, 8 warps, num_stages 4,
  one program per 4 rows (the tutorial sizes its persistent grid by occupancy; both sides get
  this one);
- 03-matrix-multiplication.py `matmul_kernel`, fp16 4096^3, at each of the tutorial's CUDA
  autotune configurations (the autotune wrapper is bypassed so each is timed);
- 05-layer-norm.py `_layer_norm_fwd_fused`, 4096x8192 fp16, as the tutorial launches it;
- 04-low-memory-dropout.py `_dropout` (a 0/1 keep mask) and `_seeded_dropout` (`tl.rand`,
  seed 123), 1Mi fp32, p = 0.5;
- 07-extern-functions.py `asin_kernel` (libdevice), 98432 fp32 in [0, 1), as the tutorial;
- 11-programmatic-dependent-launch.py `add_kernel` with USE_GDC, 16Mi fp32 (both launched
  without the PDL attribute, so the wait returns at once);
- 06-fused-attention.py `_attn_fwd` (block pointers) at Z 4, H 32, N 4096, head dim 64 and 128,
  causal and not, BLOCK_M 128, BLOCK_N 64, 3 stages, 4 warps (an autotune configuration the
  tutorial keeps); `_attn_bwd_preprocess` and `_attn_bwd` at head dim 64 with the tutorial's
  own blocks.
"""

import json
import os
import sys

MATMUL_CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps), CUDA ones
    (128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4), (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2),
    (128, 256, 128, 8, 3, 8), (256, 128, 128, 8, 3, 8), (256, 64, 128, 8, 4, 4), (64, 256, 128, 8, 4, 4),
    (128, 128, 128, 8, 4, 4), (128, 64, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4), (128, 32, 64, 8, 4, 4),
]


def cdiv(a, b):
    return (a + b - 1) // b


def cases(folder):
    out = []
    have = lambda f: os.path.exists(os.path.join(folder, f))
    if have("01-vector-add.py"):
        n = 98432
        out.append({"name": "01 add_kernel 98432", "file": "01-vector-add.py", "kernel": "add_kernel",
                    "buffers": {"x": {"dtype": "f32", "shape": [n]}, "y": {"dtype": "f32", "shape": [n]},
                                "out": {"dtype": "f32", "shape": [n], "output": True}},
                    "args": ["x", "y", "out", n], "constexprs": {"BLOCK_SIZE": 1024},
                    "num_warps": 4, "grid": [cdiv(n, 1024), 1, 1], "rtol": 0, "atol": 0})
    if have("02-fused-softmax.py"):
        m, n = 4096, 1024
        out.append({"name": "02 softmax_kernel 4096x1024", "file": "02-fused-softmax.py",
                    "kernel": "softmax_kernel",
                    "buffers": {"y": {"dtype": "f32", "shape": [m, n], "output": True},
                                "x": {"dtype": "f32", "shape": [m, n]}},
                    "args": ["y", "x", n, n, m, n], "constexprs": {"BLOCK_SIZE": 1024, "num_stages": 4},
                    "num_warps": 8, "grid": [m // 4, 1, 1], "rtol": 1e-5, "atol": 1e-6})
    if have("03-matrix-multiplication.py"):
        m = n = k = 4096
        for bm, bn, bk, g, stages, warps in MATMUL_CONFIGS:
            out.append({"name": f"03 matmul 4096^3 {bm}x{bn}x{bk} s{stages} w{warps}",
                        "file": "03-matrix-multiplication.py", "kernel": "matmul_kernel",
                        "buffers": {"a": {"dtype": "f16", "shape": [m, k]}, "b": {"dtype": "f16", "shape": [k, n]},
                                    "c": {"dtype": "f16", "shape": [m, n], "output": True}},
                        "args": ["a", "b", "c", m, n, k, k, 1, n, 1, n, 1],
                        # The tutorial's ACTIVATION="" : kwb's workspace takes numbers only, and
                        # 0 == "leaky_relu" is False as "" == "leaky_relu" is.
                        "constexprs": {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                                       "GROUP_SIZE_M": g, "ACTIVATION": 0},
                        "num_warps": warps, "num_stages": stages,
                        "grid": [cdiv(m, bm) * cdiv(n, bn), 1, 1], "rtol": 1e-2, "atol": 1e-2,
                        "flops": 2.0 * m * n * k})
    if have("05-layer-norm.py"):
        m, n = 4096, 8192
        out.append({"name": "05 layer_norm fwd 4096x8192 fp16", "file": "05-layer-norm.py",
                    "kernel": "_layer_norm_fwd_fused",
                    "buffers": {"x": {"dtype": "f16", "shape": [m, n]}, "y": {"dtype": "f16", "shape": [m, n], "output": True},
                                "w": {"dtype": "f16", "shape": [n]}, "b": {"dtype": "f16", "shape": [n]},
                                "mean": {"dtype": "f32", "shape": [m], "output": True},
                                "rstd": {"dtype": "f32", "shape": [m], "output": True}},
                    "args": ["x", "y", "w", "b", "mean", "rstd", n, n, 1e-5],
                    "constexprs": {"BLOCK_SIZE": 8192}, "num_warps": 8, "grid": [m, 1, 1],
                    "rtol": 1e-2, "atol": 1e-2})
    if have("04-low-memory-dropout.py"):
        n = 1 << 20
        out.append({"name": "04 _dropout 1Mi fp32", "file": "04-low-memory-dropout.py",
                    "kernel": "_dropout",
                    "buffers": {"x": {"dtype": "f32", "shape": [n]},
                                "keep": {"dtype": "i32", "shape": [n], "init": "bits"},
                                "out": {"dtype": "f32", "shape": [n], "output": True}},
                    "args": ["x", "keep", "out", n, 0.5], "constexprs": {"BLOCK_SIZE": 1024},
                    "num_warps": 4, "grid": [cdiv(n, 1024), 1, 1], "rtol": 1e-6, "atol": 0})
        out.append({"name": "04 _seeded_dropout 1Mi fp32", "file": "04-low-memory-dropout.py",
                    "kernel": "_seeded_dropout",
                    "buffers": {"x": {"dtype": "f32", "shape": [n]},
                                "out": {"dtype": "f32", "shape": [n], "output": True}},
                    "args": ["x", "out", n, 0.5, 123], "constexprs": {"BLOCK_SIZE": 1024},
                    "num_warps": 4, "grid": [cdiv(n, 1024), 1, 1], "rtol": 1e-6, "atol": 0})
    if have("07-extern-functions.py"):
        n = 98432
        out.append({"name": "07 asin_kernel 98432 fp32", "file": "07-extern-functions.py",
                    "kernel": "asin_kernel",
                    "buffers": {"x": {"dtype": "f32", "shape": [n], "init": "uniform01"},
                                "y": {"dtype": "f32", "shape": [n], "output": True}},
                    "args": ["x", "y", n], "constexprs": {"BLOCK_SIZE": 1024},
                    "num_warps": 4, "grid": [cdiv(n, 1024), 1, 1], "rtol": 1e-6, "atol": 1e-7})
    if have("11-programmatic-dependent-launch.py"):
        n = 1 << 24
        out.append({"name": "11 add_kernel USE_GDC 16Mi fp32",
                    "file": "11-programmatic-dependent-launch.py", "kernel": "add_kernel",
                    "buffers": {"x": {"dtype": "f32", "shape": [n], "init": "uniform01"},
                                "y": {"dtype": "f32", "shape": [n], "init": "uniform01"},
                                "out": {"dtype": "f32", "shape": [n], "output": True}},
                    "args": ["x", "y", "out", n], "constexprs": {"BLOCK_SIZE": 1024, "USE_GDC": 1},
                    "num_warps": 4, "grid": [cdiv(n, 1024), 1, 1], "rtol": 0, "atol": 0})
    if have("06-fused-attention.py"):
        z, h, nctx = 4, 32, 4096
        for d in (64, 128):
            shape = [z, h, nctx, d]
            strides = [h * nctx * d, nctx * d, d, 1]
            for causal in (False, True):
                bm, bn = 128, 64
                flops = 4.0 * z * h * nctx * nctx * d * (0.5 if causal else 1.0)
                out.append({
                    "name": f"06 _attn_fwd Z{z} H{h} N{nctx} D{d}{' causal' if causal else ''}",
                    "file": "06-fused-attention.py", "kernel": "_attn_fwd",
                    "buffers": {"q": {"dtype": "f16", "shape": shape}, "k": {"dtype": "f16", "shape": shape},
                                "v": {"dtype": "f16", "shape": shape},
                                "m": {"dtype": "f32", "shape": [z, h, nctx], "output": True},
                                "o": {"dtype": "f16", "shape": shape, "output": True}},
                    "args": ["q", "k", "v", 0.5, "m", "o"] + strides * 4 + [z, h, nctx],
                    "constexprs": {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn,
                                   "STAGE": 3 if causal else 1},
                    "num_warps": 4, "num_stages": 3, "grid": [cdiv(nctx, bm), z * h, 1],
                    "rtol": 1e-2, "atol": 1e-2, "flops": flops})
        d = 64
        shape = [z, h, nctx, d]
        out.append({"name": f"06 _attn_bwd_preprocess Z{z} H{h} N{nctx} D{d}",
                    "file": "06-fused-attention.py", "kernel": "_attn_bwd_preprocess",
                    "buffers": {"o": {"dtype": "f16", "shape": shape}, "do": {"dtype": "f16", "shape": shape},
                                "delta": {"dtype": "f32", "shape": [z, h, nctx], "output": True}},
                    "args": ["o", "do", "delta", z, h, nctx],
                    "constexprs": {"BLOCK_M": 128, "HEAD_DIM": d}, "num_warps": 4,
                    "grid": [nctx // 128, z * h, 1], "rtol": 1e-3, "atol": 1e-3})
        # Small inputs (std 0.1) and zero row statistics keep every exp2 near 1, as a real
        # backward's (whose M and D come from its forward) are.
        small = {"dtype": "f16", "shape": shape, "std": 0.1}
        out.append({"name": f"06 _attn_bwd Z{z} H{h} N{nctx} D{d}", "file": "06-fused-attention.py",
                    "kernel": "_attn_bwd",
                    "buffers": {"q": small, "k": small, "v": small, "do": small,
                                "dq": {"dtype": "f16", "shape": shape, "output": True},
                                "dk": {"dtype": "f16", "shape": shape, "output": True},
                                "dv": {"dtype": "f16", "shape": shape, "output": True},
                                "m": {"dtype": "f32", "shape": [z, h, nctx], "init": "zeros"},
                                "delta": {"dtype": "f32", "shape": [z, h, nctx], "init": "zeros"}},
                    "args": ["q", "k", "v", 0.5, "do", "dq", "dk", "dv", "m", "delta",
                             h * nctx * d, nctx * d, d, 1, h, nctx],
                    "constexprs": {"BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32,
                                   "BLK_SLICE_FACTOR": 2, "HEAD_DIM": d},
                    "num_warps": 4, "num_stages": 5, "grid": [nctx // 128, 1, z * h],
                    "rtol": 2e-2, "atol": 2e-2, "flops": 2.5 * 4.0 * z * h * nctx * nctx * d})
    return out


if __name__ == "__main__":
    json.dump(cases(sys.argv[1]), sys.stdout, indent=1)
