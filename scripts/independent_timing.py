#!/usr/bin/env python3
"""Independent timing of kwb's elementwise-add seed ladder (kernels/elementwise-add).

This script shares no code with kwb: it compiles each kernel file with CuPy
(NVRTC by default), checks it against a + b, and times it with CUDA events, so
its numbers can be held against what kwb reports.

Method, per version and size:
  * correctness: output compared with a + b (also at awkward sizes that
    exercise the tails, and with guard elements past n that must stay unwritten);
  * warm-up: the kernel is launched until at least --warmup-ms have passed;
  * samples: before each sample a buffer of 2x the L2 size is written (outside
    the timed region) so every sample starts with a cold L2; one launch is then
    timed between two CUDA events;
  * report: median time in us, GB/s = 3 * n * elem_size / median, and the
    coefficient of variation (stdev / mean) of the samples.
A device-to-device copy of a >= 1 GiB buffer is timed the same way as a
practical bandwidth peak (GB/s = 2 * bytes / t).

Usage:
  python3 scripts/independent_timing.py
  python3 scripts/independent_timing.py --sizes 1Mi,16Mi --versions v6,v7 --json out.json
"""

import argparse
import json
import os
import re
import statistics
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_DIR = os.path.join(REPO_ROOT, "kernels", "elementwise-add")

# version -> (file, entry point, element dtype, threads per block, elements per block)
# The grid is always cdiv(n, elements per block), matching each file's launch comment.
# For v7 the elements per block depend on KWB_V7_VEC (filled in at run time).
VERSIONS = {
    "v1": ("v1_f32.cu", "add_f32", "float32", 256, 256),
    "v2": ("v2_f32x4.cu", "add_f32x4", "float32", 64, 256),
    "v3": ("v3_f16.cu", "add_f16", "float16", 256, 256),
    "v4": ("v4_f16x2.cu", "add_f16x2", "float16", 256, 256),
    "v5": ("v5_f16x8.cu", "add_f16x8", "float16", 32, 256),
    "v6": ("v6_f16x8_pack.cu", "add_f16x8_pack", "float16", 32, 256),
    "v7": ("v7_f16_stream.cu", "add_f16_stream", "float16", 256, None),
}

# Sizes that exercise every tail path (n % 2, % 4, % 8, partial blocks, one element).
TAIL_SIZES = [1, 2, 3, 5, 7, 8, 9, 31, 255, 257, 1023, 1025, 8191, 8193, 65537, 1000003]
GUARD = 64  # elements past n that a correct kernel must leave untouched


def cdiv(a, b):
    return (a + b - 1) // b


def parse_size(text):
    """'1Mi' -> 1048576, '16Mi', '256Mi', '1Gi', '1000', '4K' ..."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]i?)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (use e.g. 1048576, 1Mi, 16Mi)")
    value = int(m.group(1))
    unit = (m.group(2) or "").lower()
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30}[unit]
    n = value * scale
    if not 1 <= n <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"size {text!r} must be in [1, 2^31-1] (kernels take an int n)")
    return n


def split_list(values):
    out = []
    for v in values:
        out.extend(x for x in v.split(",") if x.strip())
    return [x.strip() for x in out]


def fmt_size(n):
    for unit, shift in (("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def v7_default_vec(path):
    with open(path) as f:
        m = re.search(r"#define\s+KWB_V7_VEC\s+(\d+)", f.read())
    if not m:
        raise RuntimeError(f"{path}: no '#define KWB_V7_VEC <n>' found")
    return int(m.group(1))


class Bench:
    def __init__(self, args):
        import cupy as cp

        self.cp = cp
        self.args = args
        self.dev = cp.cuda.Device()
        self.props = cp.cuda.runtime.getDeviceProperties(self.dev.id)
        self.l2_bytes = int(self.dev.attributes["L2CacheSize"])
        # Written before every sample so that no sample finds its data in L2.
        self.flush_buf = cp.empty(max(2 * self.l2_bytes, 1 << 20), dtype=cp.uint8)
        # A blocking stream: it orders itself after work on the legacy default
        # stream (where CuPy creates the inputs), so no launch can race them.
        self.stream = cp.cuda.Stream(non_blocking=False)
        self.modules = {}
        self.v7_vec = args.v7_vec if args.v7_vec is not None else \
            v7_default_vec(os.path.join(KERNEL_DIR, VERSIONS["v7"][0]))

    # ---------------------------------------------------------------- compile
    def kernel(self, version):
        cp = self.cp
        if version in self.modules:
            return self.modules[version]
        fname, entry, _, _, _ = VERSIONS[version]
        path = os.path.join(KERNEL_DIR, fname)
        with open(path) as f:
            code = f.read()
        options = ["-arch=sm_90"]
        if version == "v7" and self.args.v7_vec is not None:
            options.append(f"-DKWB_V7_VEC={self.args.v7_vec}")
        try:
            mod = cp.RawModule(code=code, options=tuple(options), backend=self.args.backend)
            fn = mod.get_function(entry)
        except Exception as e:  # noqa: BLE001 - report and retry without the explicit arch
            print(f"[warn] {version}: compile with {options} failed ({type(e).__name__}: "
                  f"{str(e).strip().splitlines()[0] if str(e).strip() else e!r}); "
                  f"retrying with CuPy's own -arch", file=sys.stderr)
            options = [o for o in options if not o.startswith("-arch")]
            mod = cp.RawModule(code=code, options=tuple(options), backend=self.args.backend)
            fn = mod.get_function(entry)
        self.modules[version] = (mod, fn)
        return mod, fn

    def launch_config(self, version, n):
        _, _, _, block, per_block = VERSIONS[version]
        if version == "v7":
            per_block = 256 * 8 * self.v7_vec  # block=256, ELEMS_PER_THREAD = 8*KWB_V7_VEC
        return (cdiv(n, per_block),), (block,)

    def launch(self, version, a, b, c, n):
        """Launch on the current CuPy stream (callers enter `with self.stream`)."""
        _, fn = self.kernel(version)
        grid, block = self.launch_config(version, n)
        fn(grid, block, (a, b, c, self.cp.int32(n)))

    # ---------------------------------------------------------------- check
    def inputs(self, dtype, n, extra=0):
        cp = self.cp
        rng = cp.random.default_rng(12345 + n)
        a = rng.standard_normal(n + extra, dtype=cp.float32).astype(dtype)
        b = rng.standard_normal(n + extra, dtype=cp.float32).astype(dtype)
        return a, b

    def check(self, version, n):
        """Output matches a + b on [0, n) and the GUARD elements after n stay untouched."""
        cp = self.cp
        dtype = VERSIONS[version][2]
        a, b = self.inputs(dtype, n, GUARD)
        c = cp.full(n + GUARD, cp.nan, dtype=dtype)
        cp.cuda.Device().synchronize()
        with self.stream:
            self.launch(version, a, b, c, n)
        self.stream.synchronize()
        ref = (a[:n].astype(cp.float32) + b[:n].astype(cp.float32)).astype(dtype)
        tol = 1e-6 if dtype == "float32" else 2e-3
        ok = bool(cp.allclose(c[:n], ref, rtol=tol, atol=tol))
        untouched = bool(cp.isnan(c[n:]).all())
        if not ok:
            bad = int(cp.count_nonzero(~cp.isclose(c[:n], ref, rtol=tol, atol=tol)))
            first = int(cp.argmax(~cp.isclose(c[:n], ref, rtol=tol, atol=tol)))
            return f"{bad} of {n} elements wrong (first at {first})"
        if not untouched:
            return f"wrote past n (guard region of {GUARD} elements modified)"
        return None

    # ---------------------------------------------------------------- timing
    def flush_l2(self):
        self.flush_buf.fill(0)  # runs on the current (self.stream) stream

    def time_op(self, op):
        """Return the list of per-sample times (ms) of op(), cold L2 each sample."""
        cp = self.cp
        start = cp.cuda.Event()
        end = cp.cuda.Event()
        with self.stream:
            # Warm-up: at least warmup_ms of back-to-back launches (and at least 3).
            t0 = time.perf_counter()
            launches = 0
            while launches < 3 or (time.perf_counter() - t0) * 1e3 < self.args.warmup_ms:
                op()
                launches += 1
                if launches % 8 == 0 or launches < 3:
                    self.stream.synchronize()
            self.stream.synchronize()
            times = []
            for _ in range(self.args.samples):
                self.flush_l2()          # outside the timed region
                start.record(self.stream)
                op()
                end.record(self.stream)
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end))
        return times

    @staticmethod
    def summarize(times_ms):
        med = statistics.median(times_ms)
        mean = statistics.fmean(times_ms)
        cv = statistics.pstdev(times_ms) / mean if mean > 0 else float("nan")
        return med * 1e3, cv

    def copy_peak(self):
        cp = self.cp
        nbytes = self.args.copy_bytes
        src = cp.empty(nbytes, dtype=cp.uint8)
        dst = cp.empty(nbytes, dtype=cp.uint8)
        src.fill(1)
        cp.cuda.Device().synchronize()

        def op():
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                        cp.cuda.runtime.memcpyDeviceToDevice, self.stream.ptr)

        times = self.time_op(op)
        med_us, cv = self.summarize(times)
        del src, dst
        cp.get_default_memory_pool().free_all_blocks()
        return med_us, 2 * nbytes / (med_us * 1e-6) / 1e9, cv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["1Mi,16Mi,256Mi"],
                    help="element counts, comma or space separated (1048576, 1Mi, 16Mi, 256Mi ...)")
    ap.add_argument("--versions", nargs="+", default=[",".join(VERSIONS)],
                    help="versions to run, e.g. v1,v2,v7 (default: all)")
    ap.add_argument("--json", metavar="FILE", help="write results as JSON to FILE")
    ap.add_argument("--samples", type=int, default=100, help="timed samples per point (>= 50; default 100)")
    ap.add_argument("--warmup-ms", type=float, default=25.0, help="warm-up time per point (>= 25; default 25)")
    ap.add_argument("--backend", choices=("nvrtc", "nvcc"), default="nvrtc", help="CuPy compile backend")
    ap.add_argument("--v7-vec", type=int, default=None,
                    help="compile v7 with -DKWB_V7_VEC=N (default: the file's own value)")
    ap.add_argument("--copy-bytes", type=parse_size, default=1 << 30,
                    help="buffer size for the device-to-device copy peak (default 1Gi)")
    ap.add_argument("--no-copy", action="store_true", help="skip the copy peak measurement")
    ap.add_argument("--no-tail-check", action="store_true", help="skip the extra correctness sizes")
    args = ap.parse_args()

    sizes = [parse_size(s) for s in split_list(args.sizes)]
    versions = split_list(args.versions)
    for v in versions:
        if v not in VERSIONS:
            ap.error(f"unknown version {v!r}; known: {', '.join(VERSIONS)}")
    if args.samples < 50:
        ap.error("--samples must be >= 50")
    if args.warmup_ms < 25:
        ap.error("--warmup-ms must be >= 25")
    if args.copy_bytes < (1 << 30):
        ap.error("--copy-bytes must be >= 1Gi")

    try:
        import cupy as cp
    except ImportError:
        sys.exit("CuPy is required (pip install cupy-cuda13x)")

    bench = Bench(args)
    name = bench.props["name"]
    name = name.decode() if isinstance(name, bytes) else name
    print(f"device: {name}, {bench.props['multiProcessorCount']} SMs, L2 {bench.l2_bytes / 2**20:.1f} MiB; "
          f"CuPy {cp.__version__}, backend {args.backend}; "
          f"{args.samples} samples, warm-up >= {args.warmup_ms:g} ms, L2 flushed ({2 * bench.l2_bytes / 2**20:.0f} MiB) "
          f"before each sample")

    # Correctness first: every version at the timed sizes and at tail-heavy sizes.
    failures = []
    check_sizes = sorted(set(sizes) | (set() if args.no_tail_check else set(TAIL_SIZES)))
    for v in versions:
        for n in check_sizes:
            err = bench.check(v, n)
            if err:
                failures.append((v, n, err))
                print(f"[FAIL] {v} n={n}: {err}")
        bench.cp.get_default_memory_pool().free_all_blocks()
    if not failures:
        print(f"correctness: all {len(versions)} versions match a+b at {len(check_sizes)} sizes "
              f"(tails and out-of-bounds guard checked)")

    peak = None
    if not args.no_copy:
        peak = bench.copy_peak()
        print(f"device-to-device copy ({args.copy_bytes / 2**30:.2f} GiB): median {peak[0]:.1f} us, "
              f"{peak[1]:.1f} GB/s (2*bytes/t), cv {peak[2]:.3f}")

    results = []
    print()
    hdr = f"{'version':<8}{'n':>8}{'grid x block':>18}{'median_us':>12}{'GB/s':>10}{'cv':>8}{'% copy':>8}  status"
    print(hdr)
    print("-" * len(hdr))
    # Group by dtype and size so one set of buffers serves several versions.
    for n in sizes:
        for dtype in ("float32", "float16"):
            group = [v for v in versions if VERSIONS[v][2] == dtype]
            if not group:
                continue
            a, b = bench.inputs(dtype, n)
            c = cp.empty(n, dtype=dtype)
            cp.cuda.Device().synchronize()
            elem = cp.dtype(dtype).itemsize
            for v in group:
                status = "ok" if not any(f[0] == v and f[1] == n for f in failures) else "WRONG"
                times = bench.time_op(lambda v=v: bench.launch(v, a, b, c, n))
                med_us, cv = bench.summarize(times)
                gbps = 3 * n * elem / (med_us * 1e-6) / 1e9
                grid, block = bench.launch_config(v, n)
                pct = f"{100 * gbps / peak[1]:.0f}%" if peak else "-"
                print(f"{v:<8}{fmt_size(n):>8}{f'{grid[0]} x {block[0]}':>18}{med_us:>12.2f}{gbps:>10.1f}"
                      f"{cv:>8.3f}{pct:>8}  {status}", flush=True)
                results.append({"version": v, "n": n, "median_us": round(med_us, 3),
                                "gbps": round(gbps, 2), "cv": round(cv, 5)})
            del a, b, c
            cp.get_default_memory_pool().free_all_blocks()

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"\nwrote {len(results)} results to {args.json}")
    if failures:
        print(f"\n{len(failures)} correctness failure(s)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
