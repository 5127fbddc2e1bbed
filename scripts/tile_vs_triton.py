#!/usr/bin/env python3
"""kwb's tile-language kernels against Triton, side by side, on one GPU, in one run.

The tile kernels in kernels/ are Triton source: this script imports the very same files into
Triton (a `.tile` file is loaded as a Python module) and times Triton's compiled kernel with
kwb's protocol, then runs `kwb batch` on the same kernels and reads its JSON. Both sides:
cold L2 (a buffer of 2x the L2 size read before each sample, outside the timed region: a read
leaves L2 holding clean lines, as kwb's flush kernel does, where a fill would leave dirty lines
whose write-back the timed kernel pays),
CUDA events around the launch (kwb with `KWB_TIMER=events`, so neither side's figure is the
kernel-only CUPTI time while the other's includes launch overhead), median of the samples.
Softmax is also compared kernel-only: kwb's CUPTI time against Triton's kernel as
torch.profiler (CUPTI too) records it, with the same cold-L2 flush before each launch.

Each softmax size is timed at every num_warps in --warps on both sides, and each side's best
is reported (Triton's tutorial picks num_warps by block size; here both get their best).

Softmax is also timed in one harness: kwb writes its CUBINs (`kwb inspect --cubin-dir`), CuPy
loads them, and this script times kwb's kernel exactly as it times Triton's (same flush, same
events, same profiler), so the two figures differ only by the kernels. That covers the tile
v5 and the hand-written CUDA v7 (`--cuda-softmax-only`: v7 against Triton alone). Those
searches run one side after the other; the "in turn" line then times the two best v5
configurations again, alternating for five rounds in the same process, so that a quieter or
busier phase of the run cannot favour either side (at ~10 us per kernel it moved the ratio by
1-2%).

Usage (on a GPU machine with torch and triton, from the repository root):
  python3 scripts/tile_vs_triton.py [--kwb .gpu-bundle/bin/kwb] [--json out.json]
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import triton

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTMAX_SIZES = [(4096, 1024), (8192, 4096), (1024, 32768)]


def load_module(path):
    """Imports a .tile or .py file of Triton kernels as a Python module."""
    loader = importlib.machinery.SourceFileLoader(os.path.basename(path).replace(".", "_"), path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def l2_bytes():
    return torch.cuda.get_device_properties(0).L2_cache_size


def cold_median_us(launch, samples=200, warmup_ms=25.0):
    flush = torch.ones(2 * l2_bytes() // 4 + 1, dtype=torch.float32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # Warm-up by time (compiles Triton's kernel on the first call).
    launch()
    torch.cuda.synchronize()
    t0 = torch.cuda.Event(enable_timing=True)
    t0.record()
    while True:
        launch()
        t1 = torch.cuda.Event(enable_timing=True)
        t1.record()
        t1.synchronize()
        if t0.elapsed_time(t1) >= warmup_ms:
            break
    times = []
    for _ in range(samples):
        flush.sum()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def profiled_kernels(launch, samples=100):
    """The GPU kernels of `samples` launches, each after an L2 flush (whose reduction kernels
    are among them), as torch.profiler (CUPTI) records them, in time order."""
    from torch.profiler import ProfilerActivity, profile
    flush = torch.ones(2 * l2_bytes() // 4 + 1, dtype=torch.float32, device="cuda")
    launch()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(samples):
            flush.sum()
            launch()
        torch.cuda.synchronize()
    return sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                   and "Memcpy" not in e.name and "Memset" not in e.name),
                  key=lambda e: e.time_range.start)


def profiled_median_us(launch, name, samples=100):
    """The median GPU duration of the kernels called `name` that `launch` runs, as
    torch.profiler (CUPTI) records them, with L2 flushed before each launch."""
    durations = [e.time_range.elapsed_us() for e in profiled_kernels(launch, samples) if name in e.name]
    return statistics.median(durations) if durations else float("nan")


def kernels_median_us(launch, samples=100):
    """The median, over launches, of the summed GPU durations of every kernel one `launch`
    runs (the L2 flush before each launch left out): the clock kwb's CUPTI figures read, for a
    call that may run several kernels (cuBLAS)."""
    sums, current = [], None
    for e in profiled_kernels(launch, samples):
        # The flush (torch's own sum; cuBLAS' split-K kernels are named "splitKreduce_kernel"):
        # a new launch follows.
        if "at::native::reduce_kernel" in e.name:
            if current is not None:
                sums.append(current)
            current = 0.0
        elif current is not None:
            current += e.time_range.elapsed_us()
    if current:
        sums.append(current)
    return statistics.median(sums) if sums else float("nan")


def triton_softmax(mod_path, entry, m, n, warps, args_of):
    kernel = getattr(load_module(mod_path), entry)
    x = torch.randn(m, n, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    best, best_kernel = None, None
    for w in warps:
        launch = lambda: kernel[(m,)](*args_of(x, y, m, n), num_warps=w, **{"BLOCK" if "BLOCK" in kernel.arg_names else "BLOCK_SIZE": block})
        launch()
        torch.testing.assert_close(y, torch.softmax(x, dim=-1))
        t = cold_median_us(launch)
        if best is None or t < best[0]:
            best = (t, w)
        # Each clock picks its own best num_warps, on both sides.
        k = profiled_median_us(launch, entry)
        if best_kernel is None or k < best_kernel[0]:
            best_kernel = (k, w)

    def launcher(w):
        return lambda: kernel[(m,)](*args_of(x, y, m, n), num_warps=w, **{"BLOCK" if "BLOCK" in kernel.arg_names else "BLOCK_SIZE": block})
    return best + best_kernel + (launcher,)


def alternating_kernel_us(launches, rounds=5):
    """Kernel medians of each (launch, kernel name) in `launches`, measured in turn for
    `rounds` rounds in one process, so that neither side gets a quieter phase of the run:
    a list per launch."""
    out = [[] for _ in launches]
    for _ in range(rounds):
        for i, (launch, name) in enumerate(launches):
            out[i].append(profiled_median_us(launch, name))
    return out


def kwb_cubins(kwb, workspace_path):
    """kwb's CUBINs for every version and size of a workspace (`kwb inspect --cubin-dir`), with
    each launch's dynamic shared memory, keyed by (version, size)."""
    out_dir = tempfile.mkdtemp(prefix="kwb-cubins-")
    cmd = [kwb, "inspect", workspace_path, "--format", "json", "--cubin-dir", out_dir]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"kwb inspect failed:\n{out.stderr}")
    # File names as kwb writes them: characters other than letters, digits and `._-` become `_`
    # (a swept configuration `v5[BM=128,...]` is `v5_BM_128_..._`).
    safe = lambda name: "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)
    found = {}
    for v in json.loads(out.stdout)["versions"]:
        for k in v["kernels"]:
            for l in k["launches"]:
                path = os.path.join(out_dir, f"{safe(v['name'])}@{safe(l['size'])}.cubin")
                if not os.path.exists(path):
                    path = os.path.join(out_dir, f"{safe(v['name'])}.cubin")
                found[(v["name"], l["size"])] = (path, k["name"], l["dynamic_shared_bytes"],
                                                 k.get("tensor_maps", []))
    return found


def kwb_softmax_same_harness(cubin, m, n, warps, grid=None, block=None):
    """kwb's compiled softmax (its CUBIN, loaded by CuPy) timed by this script's own harness:
    (events median, profiler kernel median), both in us. A tile kernel launches one program of
    `warps` warps per row; a CUDA one gives its own `grid` and `block`."""
    launch, entry = kwb_softmax_launch(cubin, m, n, warps, grid, block)
    return cold_median_us(launch), profiled_median_us(launch, entry)


def kwb_softmax_launch(cubin, m, n, warps, grid=None, block=None):
    """A checked launch of kwb's compiled softmax (its CUBIN, loaded by CuPy), and its entry."""
    import cupy
    import numpy
    path, entry, dyn = cubin[:3]
    kernel = cupy.RawModule(path=path).get_function(entry)
    x = torch.randn(m, n, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    xc, yc = cupy.asarray(x), cupy.asarray(y)
    args = (xc, yc, numpy.int32(m), numpy.int32(n))
    grid, block = grid or m, block or 32 * warps
    launch = lambda: kernel((grid,), (block,), args, shared_mem=dyn)
    launch()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, dim=-1))
    return launch, entry


def kwb_batch(kwb, workspace_path, versions=None, sizes=None, timer="events"):
    """Runs `kwb batch` (its own cold-L2 protocol) and returns its results by (version, size)."""
    cmd = [kwb, "batch", workspace_path, "--format", "json"]
    if versions:
        cmd += ["--versions", ",".join(versions)]
    if sizes:
        cmd += ["--sizes", ",".join(sizes)]
    env = dict(os.environ)
    if timer == "events":
        env["KWB_TIMER"] = "events"
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if not out.stdout.strip():
        raise SystemExit(f"kwb batch failed:\n{out.stderr}")
    report = json.loads(out.stdout)
    return {(r["version"], r["size"]): r for r in report["results"]}


def softmax_sweep_workspace(warps):
    """A workspace with softmax v5.tile once per num_warps, at the three sizes."""
    tile = os.path.join(REPO, "kernels", "softmax", "v5.tile")
    sizes = "".join(f"  - {{name: {m}x{n}, M: {m}, N: {n}}}\n" for m, n in SOFTMAX_SIZES)
    versions = "".join(
        f"  w{w}:\n    file: {tile}\n    entry: softmax_row\n    constexprs: {{BLOCK: next_pow2(N)}}\n"
        f"    num_warps: {w}\n    grid: M\n    args: [x, y, M, N]\n"
        for w in warps
    )
    text = (
        "name: softmax-num-warps\nsizes:\n" + sizes
        + "buffers:\n  x: {dtype: f32, shape: [M, N], init: randn}\n  y: {dtype: f32, shape: [M, N], output: true}\n"
        + "reference:\n  expr:\n    y: softmax(x, axis=-1)\ntolerance: {rtol: 1e-5, atol: 1e-6}\n"
        + "bytes: bytes(x) + bytes(y)\nversions:\n" + versions
    )
    fd, path = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def median_us(r):
    return r["timing"]["median_us"] if r.get("timing") else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwb", default=os.path.join(REPO, ".gpu-bundle", "bin", "kwb"))
    ap.add_argument("--warps", default="4,8,16,32")
    ap.add_argument("--json")
    ap.add_argument("--cuda-softmax-only", action="store_true",
                    help="only softmax v7 (CUDA) against Triton, in one harness")
    a = ap.parse_args()
    warps = [int(w) for w in a.warps.split(",")]
    dev = torch.cuda.get_device_name(0)
    print(f"device: {dev}; triton {triton.__version__}; torch {torch.__version__}")
    rows = []
    v5 = os.path.join(REPO, "kernels", "softmax", "v5.tile")
    if not a.cuda_softmax_only:
        sweep_ws = softmax_sweep_workspace(warps)
        sweep = kwb_batch(a.kwb, sweep_ws)
        sweep_cupti = kwb_batch(a.kwb, sweep_ws, timer="cupti")
        cubins = kwb_cubins(a.kwb, sweep_ws)
    cuda_cubins = kwb_cubins(a.kwb, os.path.join(REPO, "workspaces", "softmax.yaml"))
    for m, n in SOFTMAX_SIZES:
        size = f"{m}x{n}"
        t_us, t_w, t_kernel, t_kernel_w, t_launcher = triton_softmax(v5, "softmax_row", m, n, warps, lambda x, y, m, n: (x, y, m, n))
        # softmax v7, the hand-written CUDA, launched as workspaces/softmax.yaml launches it
        # (four one-warp rows to a block for rows of up to 1024; one-warp blocks beside it),
        # timed by the harness that timed Triton's kernel.
        c = -(-n // 1024)
        launches = [("v7", -(-m // (1 + 3 * max(0, 2 - c))), 32 * min(32, c) + 96 * max(0, 2 - c))]
        if c == 1:
            launches.append(("v7, one warp per block", m, 32))
        for label, grid, block in launches:
            ev, k = kwb_softmax_same_harness(cuda_cubins[("v7", size)], m, n, 0, grid, block)
            rows.append(dict(kernel=f"softmax {label}", size=size, events_us=ev, kernel_us=k, grid=grid,
                             block=block, triton_us=t_us, triton_kernel_us=t_kernel))
            print(f"softmax {size:>11} {label:>22} (grid {grid}, block {block}): events {ev:8.2f} us "
                  f"(Triton {t_us:8.2f}, ratio {ev / t_us:.3f}) | kernel {k:8.2f} us "
                  f"(Triton {t_kernel:8.2f}, ratio {k / t_kernel:.3f})", flush=True)
        if a.cuda_softmax_only:
            continue
        ok = [(median_us(sweep[(f"w{w}", size)]), w) for w in warps if sweep[(f"w{w}", size)]["status"] == "ok"]
        for w in warps:
            r = sweep[(f"w{w}", size)]
            if r["status"] != "ok":
                print(f"kwb v5 @ {size}, num_warps={w}: {r['status']}: {r.get('message')}")
        if not ok:
            continue
        k_us, k_w = min(ok)
        gb = 2 * m * n * 4 / 1e3
        kc = [(median_us(sweep_cupti[(f"w{w}", size)]), w) for w in warps
              if sweep_cupti[(f"w{w}", size)]["status"] == "ok"]
        kc_us, kc_w = min(kc) if kc else (float("nan"), None)
        rows.append(dict(kernel="softmax v5.tile", size=size, triton_us=t_us, triton_warps=t_w, kwb_us=k_us, kwb_warps=k_w,
                         triton_kernel_us=t_kernel, triton_kernel_warps=t_kernel_w, kwb_kernel_us=kc_us, kwb_kernel_warps=kc_w))
        print(f"softmax {size:>11} events: Triton {t_us:8.2f} us (num_warps={t_w}, {gb / t_us:7.1f} GB/s) | "
              f"kwb {k_us:8.2f} us (num_warps={k_w}, {gb / k_us:7.1f} GB/s) | kwb/Triton time {k_us / t_us:.3f}")
        print(f"softmax {size:>11} kernel: Triton {t_kernel:8.2f} us (num_warps={t_kernel_w}, profiler) | "
              f"kwb {kc_us:8.2f} us (num_warps={kc_w}, CUPTI) | kwb/Triton time {kc_us / t_kernel:.3f}")
        # One harness for both: kwb's CUBIN timed exactly as Triton's kernel was.
        same = [kwb_softmax_same_harness(cubins[(f"w{w}", size)], m, n, w) + (w,) for w in warps
                if (f"w{w}", size) in cubins]
        if same:
            (s_ev, s_ev_w), (s_k, s_k_w) = min((e, w) for e, _, w in same), min((k, w) for _, k, w in same)
            rows[-1].update(same_harness_kwb_us=s_ev, same_harness_kwb_warps=s_ev_w,
                            same_harness_kwb_kernel_us=s_k, same_harness_kwb_kernel_warps=s_k_w)
            print(f"softmax {size:>11} one harness, events: Triton {t_us:8.2f} us (num_warps={t_w}) | "
                  f"kwb {s_ev:8.2f} us (num_warps={s_ev_w}) | kwb/Triton time {s_ev / t_us:.3f}")
            print(f"softmax {size:>11} one harness, kernel: Triton {t_kernel:8.2f} us (num_warps={t_kernel_w}) | "
                  f"kwb {s_k:8.2f} us (num_warps={s_k_w}) | kwb/Triton time {s_k / t_kernel:.3f}")
            # The two best configurations again, measured in turn: the searches above run one
            # side after the other, and at ~10 us a phase of the run can move a median by 1-2%.
            kl, ke = kwb_softmax_launch(cubins[(f"w{s_k_w}", size)], m, n, s_k_w)
            tr, kw = alternating_kernel_us([(t_launcher(t_kernel_w), "softmax_row"), (kl, ke)])
            ratios = [b / a for a, b in zip(tr, kw)]
            rows[-1].update(alternating_triton_kernel_us=tr, alternating_kwb_kernel_us=kw)
            print(f"softmax {size:>11} in turn, kernel: Triton {statistics.median(tr):8.2f} us "
                  f"(num_warps={t_kernel_w}) | kwb {statistics.median(kw):8.2f} us (num_warps={s_k_w}) | "
                  f"kwb/Triton time {statistics.median(ratios):.3f} (rounds: "
                  f"{', '.join(f'{r:.3f}' for r in ratios)})")
    for ws, tile, cuda, sizes in [] if a.cuda_softmax_only else [
                                  ("elementwise-add.yaml", "v8", "v7", ["16Mi", "256Mi"]),
                                  ("gelu.yaml", "v4", "v3", ["16Mi", "64Mi"])]:
        res = kwb_batch(a.kwb, os.path.join(REPO, "workspaces", ws), [cuda, tile], sizes)
        for s in sizes:
            c, t = res[(cuda, s)], res[(tile, s)]
            ratio = median_us(c) / median_us(t)
            rows.append(dict(kernel=f"{ws} {tile} vs {cuda}", size=s, cuda_us=median_us(c), tile_us=median_us(t), tile_speed_vs_cuda=ratio))
            print(f"{ws:>20} {s:>6}: CUDA {cuda} {median_us(c):8.2f} us | tile {tile} {median_us(t):8.2f} us ({t['status']}) | tile speed = {100 * ratio:.1f}% of CUDA")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(device=dev, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
