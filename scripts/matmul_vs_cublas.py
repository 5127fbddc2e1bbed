#!/usr/bin/env python3
"""kwb's matmul ladder against cuBLAS (torch.matmul), side by side, on one GPU, in one run.

Every side uses kwb's protocol: fp16 A (M×K) and B (K×N), fp16 C; cold L2 (a buffer of twice
the L2 size read before each sample, outside the timed region, so L2 holds clean lines as after
kwb's flush kernel); one call between two CUDA events per sample; the median of the samples.
kwb's own figures come from `kwb batch --format json` on workspaces/matmul.yaml (CUPTI kernel
time where available; its timer is printed). The best v5 configuration at each size is also
timed in this script's own harness: its CUBIN (`kwb inspect --cubin-dir`) loaded by CuPy and
timed by the code that times cuBLAS and Triton, so that comparison differs only by the kernels
(v7, whose TMA copies take two tensor maps by value, is launched through the driver with
ctypes, its maps encoded as kwb encodes them). The "in turn" line then times Triton's
best kernel and that v5 alternately for five rounds, so that no phase of the run favours either. Events also time the launch's host overhead
whenever the GPU gets there first, which Triton's Python launcher makes large and variable, so
cuBLAS and Triton are also timed by their kernels' own durations (torch.profiler, CUPTI: the
clock kwb reads); the comparisons with kwb use that figure.

Triton: the very file kwb compiles for v4 (kernels/matmul/v4.tile, Triton source) compiled by
Triton under `triton.autotune` over the configurations Triton's matmul tutorial tunes over on
NVIDIA GPUs (block sizes, GROUP_M 8, num_stages and num_warps), at its best configuration.

Usage (on a GPU machine with torch, from the repository root):
  python3 scripts/matmul_vs_cublas.py [--kwb .gpu-bundle/bin/kwb] [--json out.json]
"""

import argparse
import json
import os
import statistics
import subprocess

import torch

from tile_vs_triton import kernels_median_us, kwb_cubins

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [(1000, 1000, 1000), (4096, 4096, 4096), (8192, 8192, 1024)]


def cold_median_us(call, samples=100):
    flush = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1,
                       dtype=torch.float32, device="cuda")
    for _ in range(10):
        call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        flush.sum()
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def cublas_median_us(m, n, k):
    """(events µs, kernel µs) of torch.matmul."""
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    call = lambda: torch.matmul(a, b)
    return cold_median_us(call), kernels_median_us(call)


# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps): the tutorial's NVIDIA configurations.
TUTORIAL_CONFIGS = [
    (128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
    (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
]


def triton_median_us(m, n, k, source="v4.tile"):
    """Triton compiling kernels/matmul/`source` (v4.tile: the tutorial's kernel; v7.tile: the
    same with tensor descriptors), autotuned; (events µs, kernel µs, best config, the call) or
    None."""
    try:
        import importlib.machinery
        import importlib.util
        import triton
    except ImportError as e:
        print(f"  no Triton: {e}")
        return None
    if source == "v7.tile":
        # Descriptors made in the kernel need global scratch for their tensor maps.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    path = os.path.join(REPO, "kernels", "matmul", source)
    loader = importlib.machinery.SourceFileLoader("kwb_matmul_" + source.split(".")[0], path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    # v4.tile's K loop takes its stage count from NUM_STAGES (`tl.range(..., num_stages=)`),
    # so each configuration's num_stages goes there too.
    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "NUM_STAGES": st},
                             num_stages=st, num_warps=w) for bm, bn, bk, st, w in TUTORIAL_CONFIGS]
    kernel = triton.autotune(configs=configs, key=["M", "N", "K"])(mod.matmul_kernel)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
    call = lambda: kernel[grid](a, b, c, m, n, k)
    call()
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-2, atol=2e-2)
    return cold_median_us(call), kernels_median_us(call), str(kernel.best_config), call


_CUBINS = {}


def kwb_same_harness(kwb, version, size, m, n, k):
    """(events µs, kernel µs, the call) of kwb's compiled `version` at `size`, launched by CuPy
    from its CUBIN with the workspace's launch, and timed as cuBLAS and Triton are."""
    import cupy
    import numpy
    if not _CUBINS:
        _CUBINS.update(kwb_cubins(kwb, os.path.join(REPO, "workspaces", "matmul.yaml")))
    path, entry, dyn, maps = _CUBINS[(version, size)]
    cfg = dict(kv.split("=") for kv in version[version.index("[") + 1:-1].split(","))
    bm, bn = int(cfg.get("BM", 128)), int(cfg.get("BN", 256))  # v6: 128x256 tiles
    warps = 4 * (1 + int(bm * bn >= 128 * 256))  # v5's and v6's num_warps in workspaces/matmul.yaml
    kernel = cupy.RawModule(path=path).get_function(entry)
    kernel.max_dynamic_shared_size_bytes = dyn
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    args = (cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), numpy.int32(m), numpy.int32(n), numpy.int32(k))
    grid = ((m + bm - 1) // bm) * ((n + bn - 1) // bn)
    if maps:
        # TMA: the launch passes tensor maps after the arguments (ctypes below).
        return tma_same_harness(path, entry, dyn, maps, a, b, c, m, n, k, grid, 32 * warps,
                                "persistent=true" in version)
    if "persistent=true" in version:
        # Persistent: the program count is the last argument, and the launch runs as many
        # CTAs as the GPU holds at once (kwb asks the driver; here by shared memory, which
        # limits v6's configurations to one CTA per SM).
        args = args + (numpy.int32(grid),)
        per_sm = max(1, (228 * 1024) // (dyn + 1024))
        grid = min(grid, per_sm * torch.cuda.get_device_properties(0).multi_processor_count)
    call = lambda: kernel((grid,), (32 * warps,), args, shared_mem=dyn)
    call.keep = (a, b, c)  # the tensors outlive the call (see tma_same_harness)
    call()
    torch.cuda.synchronize()
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-2, atol=2e-2)
    return cold_median_us(call), kernels_median_us(call), call


def _cuda():
    """The CUDA driver, through ctypes (CuPy cannot pass a 128-byte `CUtensorMap` by value)."""
    import ctypes
    cu = ctypes.CDLL("libcuda.so.1")
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    cu.cuTensorMapEncodeTiled.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                                          u64p, u64p, u32p, u32p, ctypes.c_int, ctypes.c_int,
                                          ctypes.c_int, ctypes.c_int]
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    return cu


def tma_same_harness(path, entry, dyn, maps, a, b, c, m, n, k, grid, threads, persistent):
    """(events µs, kernel µs, the call) of a version that copies with TMA, launched through the
    driver with the tensor maps kwb reports for it (`kwb inspect --format json`), encoded as
    kwb encodes them (src/run/gpu/program.rs): 2-byte elements, the reported swizzle, 256-byte L2
    promotion, zeros outside. A persistent one takes the program count before the maps and
    runs one CTA per SM (its shared memory allows one)."""
    import ctypes
    torch.cuda.synchronize()
    cu = _cuda()
    # Everything the launch points at lives as long as the call: the tensors above all (freed,
    # their memory would go to other tensors and the kernel would read those).
    keep = [a, b, c]
    args = [a, b, c, m, n, k]

    def extent(e):
        return args[e["arg"]] if "arg" in e else e["const"]

    def tensor_map(spec):
        t = args[spec["base"]]
        stride = extent(spec["strides"][0])
        inner, outer = (extent(d) for d in spec["dims"])
        raw = ctypes.create_string_buffer(128 + 64)
        keep.append(raw)
        at = (ctypes.addressof(raw) + 63) // 64 * 64
        dims = (ctypes.c_uint64 * 2)(inner, outer)
        strides = (ctypes.c_uint64 * 1)(stride * 2)
        boxes = (ctypes.c_uint32 * 2)(*spec["box_dims"])
        ones = (ctypes.c_uint32 * 2)(1, 1)
        swizzle = {0: 0, 32: 1, 64: 2, 128: 3}[spec["swizzle"]]
        # UINT16, no interleave, the swizzle, 256-byte L2 promotion, zero fill.
        r = cu.cuTensorMapEncodeTiled(at, 1, 2, t.data_ptr(), dims, strides, boxes, ones, 0,
                                      swizzle, 3, 0)
        assert r == 0, f"cuTensorMapEncodeTiled: error {r}"
        return at

    image = open(path, "rb").read()
    keep.append(image)
    mod, func = ctypes.c_void_p(), ctypes.c_void_p()
    assert cu.cuModuleLoadData(ctypes.byref(mod), image) == 0
    assert cu.cuModuleGetFunction(ctypes.byref(func), mod, entry.encode()) == 0
    assert cu.cuFuncSetAttribute(func, 8, dyn) == 0  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    slots = [ctypes.c_uint64(a.data_ptr()), ctypes.c_uint64(b.data_ptr()), ctypes.c_uint64(c.data_ptr()),
             ctypes.c_int32(m), ctypes.c_int32(n), ctypes.c_int32(k)]
    if persistent:
        slots.append(ctypes.c_int32(grid))
        grid = min(grid, torch.cuda.get_device_properties(0).multi_processor_count)
    keep.extend(slots)
    ptrs = [ctypes.addressof(v) for v in slots]
    ptrs += [tensor_map(spec) for spec in maps]
    params = (ctypes.c_void_p * len(ptrs))(*ptrs)
    keep.append(params)

    def call():
        stream = torch.cuda.current_stream().cuda_stream
        r = cu.cuLaunchKernel(func, grid, 1, 1, threads, 1, 1, dyn, stream, params, None)
        assert r == 0, f"cuLaunchKernel: error {r}"

    call()
    torch.cuda.synchronize()
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-2, atol=2e-2)
    call.keep = keep
    return cold_median_us(call), kernels_median_us(call), call


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
        c_ev, c_us = cublas_median_us(m, n, k)
        print(f"{name:>16}: cuBLAS {c_us:9.1f} us {flop / c_us / 1e6:7.1f} TFLOP/s (kernel; events "
              f"{c_ev:.1f} us)")
        tri = triton_median_us(m, n, k)
        tri_desc = triton_median_us(m, n, k, "v7.tile")
        if tri_desc:
            t_ev, t_us, cfg, _ = tri_desc
            rows.append(dict(size=name, version="triton-v7-descriptors-autotuned", us=t_us, events_us=t_ev,
                             cublas_us=c_us, cublas_events_us=c_ev, config=cfg))
            print(f"{'':>18}Triton (v7.tile, tensor descriptors, tutorial autotune): {t_us:9.1f} us "
                  f"{flop / t_us / 1e6:7.1f} TFLOP/s = {100 * c_us / t_us:5.1f}% of cuBLAS ({cfg})")
        if tri:
            t_ev, t_us, cfg, _ = tri
            rows.append(dict(size=name, version="triton-tutorial-autotuned", us=t_us, events_us=t_ev,
                             cublas_us=c_us, cublas_events_us=c_ev, config=cfg))
            print(f"{'':>18}Triton (v4.tile, tutorial autotune): {t_us:9.1f} us {flop / t_us / 1e6:7.1f} TFLOP/s "
                  f"= {100 * c_us / t_us:5.1f}% of cuBLAS (kernel; events {t_ev:.1f} us) ({cfg})")
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
        # The best v5, the best persistent v6 (v6 also sweeps `persistent: false`) and the best
        # v7 (TMA), each in turn with Triton's tutorial kernel; v7 also with Triton's v7.
        for family in (lambda v: v.startswith("v5["),
                       lambda v: v.startswith("v6[") and "persistent=true" in v,
                       lambda v: v.startswith("v7[")):
            best = min((r for r in results if r["size"] == name and family(r["version"])
                        and (r.get("timing") or {}).get("median_us")),
                       key=lambda r: r["timing"]["median_us"], default=None)
            if best and tri:
                in_turn(a, best, tri, rows, name, m, n, k, flop, c_us)
            if best and tri_desc and best["version"].startswith("v7["):
                print(f"{'':>18}(against Triton compiling the same descriptors:)")
                in_turn(a, best, tri_desc, rows, name, m, n, k, flop, c_us)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(0), rows=rows), f, indent=1)


def in_turn(a, best, tri, rows, name, m, n, k, flop, c_us):
    """The best configuration of a family (v5, v6) in this script's harness, then in turn with
    Triton for five rounds in this process: the lines before time Triton's side and then
    kwb's, and a phase of the run can favour either."""
    h_ev, h_us, h_call = kwb_same_harness(a.kwb, best["version"], name, m, n, k)
    rows.append(dict(size=name, version=best["version"] + " (this harness)", us=h_us,
                     events_us=h_ev, cublas_us=c_us))
    print(f"{'':>18}one harness: {best['version']} {h_us:9.1f} us {flop / h_us / 1e6:7.1f} TFLOP/s "
          f"(events {h_ev:.1f} us) | Triton {tri[1]:9.1f} us | kwb/Triton time {h_us / tri[1]:.3f}")
    rounds = [(kernels_median_us(tri[3], 50), kernels_median_us(h_call, 50)) for _ in range(5)]
    ratios = [v / t for t, v in rounds]
    rows[-1].update(in_turn_triton_us=[t for t, _ in rounds], in_turn_kwb_us=[v for _, v in rounds])
    print(f"{'':>18}in turn: Triton {statistics.median(t for t, _ in rounds):9.1f} us | "
          f"{best['version']} {statistics.median(v for _, v in rounds):9.1f} us | kwb/Triton time "
          f"{statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()
