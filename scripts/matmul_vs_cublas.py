#!/usr/bin/env python3
"""kwb's matmul ladder against cuBLAS (torch.matmul), side by side, on one GPU, in one run.

Both sides use kwb's protocol: fp16 A (M×K) and B (K×N), fp16 C; cold L2 (a buffer of twice
the L2 size written before each sample, outside the timed region); one call between two CUDA
events per sample; the median of the samples. kwb's own figures come from `kwb batch --format
json` on workspaces/matmul.yaml (CUPTI kernel time where available; its timer is printed).

Usage (on a GPU machine with torch, from the repository root):
  python3 scripts/matmul_vs_cublas.py [--kwb .gpu-bundle/bin/kwb] [--json out.json]
"""

import argparse
import json
import os
import statistics
import subprocess

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [(1000, 1000, 1000), (4096, 4096, 4096), (8192, 8192, 1024)]


def cublas_median_us(m, n, k, samples=100):
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1,
                        dtype=torch.float32, device="cuda")
    for _ in range(10):
        torch.matmul(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        flush.fill_(1.0)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwb", default=os.path.join(REPO, ".gpu-bundle", "bin", "kwb"))
    ap.add_argument("--json")
    a = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    names = [f"{m}x{n}x{k}" for m, n, k in SIZES]
    out = subprocess.run([a.kwb, "batch", os.path.join(REPO, "workspaces", "matmul.yaml"),
                          "--sizes", ",".join(names), "--format", "json", "--max-time", "1"],
                         capture_output=True, text=True, check=False)
    if not out.stdout.strip():
        raise SystemExit(f"kwb batch failed:\n{out.stderr}")
    results = json.loads(out.stdout)["results"]
    rows = []
    for (m, n, k), name in zip(SIZES, names):
        flop = 2.0 * m * n * k
        c_us = cublas_median_us(m, n, k)
        print(f"{name:>16}: cuBLAS {c_us:9.1f} us {flop / c_us / 1e6:7.1f} TFLOP/s")
        for r in results:
            if r["size"] != name:
                continue
            t = r.get("timing") or {}
            us = t.get("median_us")
            if us is None:
                print(f"{'':>18}{r['version']}: {r['status']} {r.get('message') or ''}")
                continue
            rows.append(dict(size=name, version=r["version"], us=us, cublas_us=c_us,
                             timer=t.get("timer"), check=r["status"]))
            print(f"{'':>18}{r['version']}: {us:9.1f} us {flop / us / 1e6:7.1f} TFLOP/s "
                  f"= {100 * c_us / us:5.1f}% of cuBLAS ({t.get('timer', 'events')}, {r['status']})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(0), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
