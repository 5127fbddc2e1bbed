#!/usr/bin/env python3
"""What each GPU clock covers, for one small kernel: Nsight Compute against CUPTI against the
kernel's own %globaltimer, on a GPU machine, in one command:

    python3 scripts/clock_probe.py [--sizes 0,64Ki,1Mi,16Mi,256Mi] [--no-ncu] [--json out.json]

The kernels are kwb's v1 and v3 shapes (one fp32 or fp16 add per thread, 256-thread blocks);
size 0 is one block that does nothing but stamp its clock. Every launch starts from a cold L2
(a kernel reads a buffer of twice the L2 first, as kwb's flush does). Per size and kernel:

  * ncu: `gpu__time_duration.sum` under `ncu --cache-control all --clock-control none`, the
    median over the profiled launches (this script runs itself under ncu);
  * cupti: the kernel's duration as CUPTI's concurrent-kernel records give it (torch.profiler;
    CUPTI makes them with code it adds to every block, so this column carries that cost; kwb
    reads the serial records, which it does not);
  * span: the same launches, instrumented: thread 0 of each block takes %globaltimer when the
    block starts (atomicMin) and after the block's last store (atomicMax). The span from the
    first block's start to the last block's end is when the kernel's code ran, read by the
    kernel itself; `cupti (instr.)` is CUPTI's duration of those very launches;
  * events: CUDA events around one launch (launch overhead included).

If ncu's figure exceeds CUPTI's by a constant that the kernel's own span does not show, the
difference is outside the kernel's execution. No kwb code is used: the figures are independent.
"""

import argparse
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys

SOURCE = r"""
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned long long kwb_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// t: nullptr (not instrumented) or two stamps, [first block's start, last block's end].
#define PROBE_BODY(T, ADD)                                                         \
    if (t && threadIdx.x == 0) atomicMin(&t[0], kwb_now());                         \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                  \
    if (i < n) c[i] = ADD;                                                          \
    if (t) {                                                                        \
        __syncthreads();                                                            \
        if (threadIdx.x == 0) atomicMax(&t[1], kwb_now());                          \
    }
extern "C" __global__ void probe_add_f32(const float* a, const float* b, float* c, int n,
                                         unsigned long long* t) {
    PROBE_BODY(float, a[i] + b[i])
}
extern "C" __global__ void probe_add_f16(const __half* a, const __half* b, __half* c, int n,
                                         unsigned long long* t) {
    PROBE_BODY(__half, __hadd(a[i], b[i]))
}
extern "C" __global__ void probe_flush(const float4* buf, unsigned long long n, float* sink) {
    float acc = 0.f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float4 v = buf[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 12345.f) *sink = acc;  // never true: the buffer holds ones
}
"""

KERNELS = {"f32": ("probe_add_f32", "float32"), "f16": ("probe_add_f16", "float16")}


def parse_size(text):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}")
    return int(m.group(1)) << {None: 0, "Ki": 10, "Mi": 20, "Gi": 30}[m.group(2)]


class Probe:
    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.mod = cp.RawModule(code=SOURCE, options=("-arch=sm_90", "-std=c++17"))
        l2 = int(cp.cuda.Device().attributes["L2CacheSize"])
        self.flush_buf = cp.ones(2 * l2 // 4, dtype=cp.float32)
        self.sink = cp.zeros(4, dtype=cp.float32)
        self.flush_fn = self.mod.get_function("probe_flush")
        sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        self.flush_grid = 4 * sms

    def flush(self):
        cp = self.cp
        self.flush_fn((self.flush_grid,), (256,),
                      (self.flush_buf, cp.uint64(self.flush_buf.size // 4), self.sink))

    def buffers(self, kind, n):
        cp = self.cp
        dtype = KERNELS[kind][1]
        a = cp.ones(max(n, 1), dtype=dtype)
        return a, a.copy(), cp.empty_like(a)

    def launcher(self, kind, n, stamps=None):
        """A launch of `kind` at `n` (n = 0: one block that only stamps), with `stamps` a
        uint64 array of two (or None)."""
        cp = self.cp
        fn = self.mod.get_function(KERNELS[kind][0])
        a, b, c = self.buffers(kind, n)
        grid = max(1, (n + 255) // 256)
        block = 256 if n else 32

        def launch(t=None):
            ptr = t if t is not None else cp.uint64(0)
            fn((grid,), (block,), (a, b, c, cp.int32(n), ptr))
        return launch

    def events_us(self, launch, samples):
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(samples):
            self.flush()
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
        return statistics.median(times)

    def cupti(self, launch, name, samples, instrumented):
        """CUPTI durations (µs) of `samples` launches of kernel `name`, each after a flush,
        and, when instrumented, each launch's own %globaltimer span (µs)."""
        import torch
        from torch.profiler import ProfilerActivity, profile
        cp = self.cp
        stamps = cp.empty((samples, 2), dtype=cp.uint64)
        stamps[:, 0] = (1 << 64) - 1
        stamps[:, 1] = 0
        cp.cuda.Device().synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(samples):
                self.flush()
                launch(stamps[i] if instrumented else None)
            cp.cuda.Device().synchronize()
            torch.cuda.synchronize()
        durations = [e.time_range.elapsed_us() for e in sorted(
            (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
             and name in e.name), key=lambda e: e.time_range.start)]
        spans = []
        if instrumented:
            host = stamps.get()
            spans = [(int(e) - int(s)) / 1e3 for s, e in host]
        return durations, spans


def child(args):
    """Under ncu: the launches ncu profiles, each after the flush."""
    p = Probe()
    launch = p.launcher(args.kind, args.n)
    launch()
    p.cp.cuda.Device().synchronize()
    for _ in range(args.reps):
        p.flush()
        launch()
    p.cp.cuda.Device().synchronize()


def ncu_median_us(ncu, kind, n, reps):
    cmd = [ncu, "--cache-control", "all", "--clock-control", "none", "--csv", "--print-units", "base",
           "--metrics", "gpu__time_duration.sum", "-k", f"regex:{KERNELS[kind][0]}",
           "--launch-skip", "1", sys.executable, os.path.abspath(__file__), "--child",
           "--kind", kind, "--n", str(n), "--reps", str(reps)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    rows = [r for r in csv.reader(io.StringIO(p.stdout)) if len(r) > 5]
    if not rows:
        print(f"ncu printed no table (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}",
              file=sys.stderr)
        return None
    head, body = rows[0], rows[1:]
    col_name, col_unit, col_value = head.index("Metric Name"), head.index("Metric Unit"), head.index("Metric Value")
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
    vals = [float(r[col_value].replace(",", "")) * scale.get(r[col_unit], float("nan"))
            for r in body if r[col_name] == "gpu__time_duration.sum"]
    return statistics.median(vals) if vals else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="0,64Ki,1Mi,16Mi,256Mi")
    ap.add_argument("--kinds", default="f32,f16")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--ncu", default="/usr/local/cuda/bin/ncu")
    ap.add_argument("--json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kind", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=15, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    p = Probe()
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}; cupy {cp.__version__}")
    rows = []
    header = (f"{'size':>6} {'kind':>4} | {'ncu':>8} | {'cupti':>8} | {'span':>8} "
              f"{'cupti(instr.)':>13} {'cupti-span':>10} | {'events':>8} |  µs, medians")
    print(header)
    print("-" * len(header))
    for size_text in args.sizes.split(","):
        n = parse_size(size_text)
        for kind in args.kinds.split(","):
            name = KERNELS[kind][0]
            launch = p.launcher(kind, n)
            for _ in range(20):  # warm-up: module load, clocks
                p.flush()
                launch()
            cp.cuda.Device().synchronize()
            events = p.events_us(launch, args.samples)
            plain, _ = p.cupti(launch, name, args.samples, instrumented=False)
            instr, spans = p.cupti(launch, name, args.samples, instrumented=True)
            diffs = [d - s for d, s in zip(instr, spans)]
            ncu = None if args.no_ncu else ncu_median_us(args.ncu, kind, n, 15)
            row = {
                "size": size_text, "n": n, "kind": kind,
                "ncu_us": ncu,
                "cupti_us": statistics.median(plain) if plain else None,
                "span_us": statistics.median(spans) if spans else None,
                "cupti_instrumented_us": statistics.median(instr) if instr else None,
                "cupti_minus_span_us": statistics.median(diffs) if diffs else None,
                "events_us": events,
            }
            rows.append(row)
            f = lambda v: f"{v:8.3f}" if v is not None else f"{'-':>8}"
            print(f"{size_text:>6} {kind:>4} | {f(ncu)} | {f(row['cupti_us'])} | "
                  f"{f(row['span_us'])} {f(row['cupti_instrumented_us']):>13} "
                  f"{f(row['cupti_minus_span_us']):>10} | {f(events)} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
