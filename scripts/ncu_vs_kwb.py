#!/usr/bin/env python3
"""kwb's kernel times held against Nsight Compute's, for the elementwise-add ladder.

On a GPU machine, one command:
    python3 scripts/ncu_vs_kwb.py [--kwb target/release/kwb] [--sizes 64Ki,1Mi,16Mi,256Mi]

It runs, at each size (64Ki, and `one`: a single element, are added to a temporary copy of the
workspace, which `--sizes one,...` can ask for; the shipped file is
not touched):
  * `kwb batch --format json` with CUPTI timing (the default),
  * the same with `KWB_TIMER=cupti-concurrent` (CUPTI's concurrent-kernel records, which CUPTI
    makes with code it adds to every thread block: the kind torch.profiler and Nsight Systems
    use, shown for contrast with kwb's serial records),
  * the same with `KWB_TIMER=events` (CUDA events, launch overhead included),
  * for every version, `kwb batch --versions V --sizes S` under
    `ncu --cache-control all --clock-control none --metrics gpu__time_duration.sum`,
    profiling a few of the kernel's launches after the check run (ncu flushes the caches
    before each, like kwb's default cold mode), and takes their median;
and prints the sizes x versions table of ncu, kwb-CUPTI and kwb-events, with the relative
differences from ncu. The target: CUPTI within +-3% of ncu (or +-0.2 us, whichever is larger)
for every version at every size. Exit status 0 when all are within it, 1 when any is not, 2 when
something could not be run.
"""

import argparse
import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKSPACE = os.path.join(REPO, "workspaces", "elementwise-add.yaml")
EXTRA_SIZE = (
    "  - {name: 64Ki, N: 64Ki}   # added by scripts/ncu_vs_kwb.py\n"
    "  - {name: one, N: 1}       # added by scripts/ncu_vs_kwb.py: one element, each clock's floor\n"
)
TOLERANCE_PCT = 3.0
TOLERANCE_US = 0.2


def die(msg):
    print(f"ncu_vs_kwb: {msg}", file=sys.stderr)
    sys.exit(2)


def find_kwb(given):
    if given:
        return given
    for cand in ("target/release/kwb", "target/debug/kwb"):
        path = os.path.join(REPO, cand)
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("kwb")
    if not found:
        die("no kwb binary: build one (cargo build --release) or pass --kwb PATH")
    return found


def temp_workspace():
    """A copy of the workspace next to it (its kernel paths are relative) with the extra sizes."""
    with open(WORKSPACE) as f:
        text = f.read()
    if "name: 64Ki" not in text:
        text = re.sub(r"(?m)^sizes:\n", "sizes:\n" + EXTRA_SIZE, text, count=1)
    fd, path = tempfile.mkstemp(
        prefix=".ncu-vs-kwb-", suffix=".yaml", dir=os.path.dirname(WORKSPACE)
    )
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def versions_and_entries(path):
    """[(version, entry)] in workspace order, read without a YAML library."""
    out, current, in_versions = [], None, False
    with open(path) as f:
        for line in f:
            if re.match(r"^versions:\s*$", line):
                in_versions = True
                continue
            if not in_versions:
                continue
            m = re.match(r"^  ([A-Za-z0-9_.-]+):\s*$", line)
            if m:
                current = m.group(1)
                continue
            m = re.match(r"^    entry:\s*([A-Za-z0-9_]+)", line)
            if m and current:
                out.append((current, m.group(1)))
                current = None
    return out


def run_batch(kwb, ws, sizes, env_extra, extra_args=()):
    env = dict(os.environ, **env_extra)
    cmd = [kwb, "batch", ws, "--format", "json", "--sizes", ",".join(sizes), *extra_args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        die(f"{' '.join(cmd)} printed no JSON report (exit {p.returncode}):\n{p.stderr}")
    for line in p.stderr.splitlines():
        if "kwb worker" in line:
            print(f"  {line}")
    return report


def medians(report):
    """{(version, size): (median_us, timer, event_median_us, l2_resident)}"""
    out = {}
    for r in report["results"]:
        t = r.get("timing") or {}
        if r.get("status") == "ok" and t:
            out[(r["version"], r["size"])] = (
                t["median_us"],
                t.get("timer", "events?"),
                t.get("event_median_us"),
                t.get("l2_resident"),
            )
        else:
            print(f"  {r['version']} @ {r['size']}: {r.get('status')} {r.get('message') or ''}")
    return out


def ncu_time(ncu, kwb, ws, version, entry, size, launches, cache="all", clock="none", extra=()):
    """Median gpu__time_duration of `launches` launches of `entry`, in us, or None; with
    `extra` metrics, a dict of every metric's median instead."""
    with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as log:
        log_path = log.name
    metrics = ",".join(("gpu__time_duration.sum",) + tuple(extra))
    cmd = [
        ncu, "--cache-control", cache, "--clock-control", clock,
        "--metrics", metrics, "--csv", "--print-units", "base",
        "--target-processes", "all", "-k", f"regex:^{entry}$",
        "--launch-skip", "3", "--launch-count", str(launches),
        "--log-file", log_path,
        kwb, "batch", ws, "--format", "json", "--versions", version, "--sizes", size,
        "--warmup-ms", "1", "--min-time", "0.01", "--max-time", "0.2",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, KWB_TIMER="events"))
    try:
        with open(log_path) as f:
            text = f.read()
    finally:
        os.unlink(log_path)
    rows = [l for l in text.splitlines() if l.startswith('"')]
    values = []
    others = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        if row.get("Metric Name") in extra:
            try:
                others.setdefault(row["Metric Name"], []).append(float(row["Metric Value"].replace(",", "")))
            except ValueError:
                pass
            continue
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = (row.get("Metric Unit") or "").strip()
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
        values.append(value * scale.get(unit, 1e-3))
    if not values:
        print(f"  ncu measured nothing for {version} @ {size} (exit {p.returncode}):")
        print("  " + "\n  ".join((p.stderr or text).strip().splitlines()[-8:]))
        return None
    if extra:
        out = {k: statistics.median(v) for k, v in others.items()}
        out["gpu__time_duration.sum"] = statistics.median(values)
        return out
    return statistics.median(values)


PROBE_METRICS = ("sm__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.max", "dram__bytes_read.sum")


def probe(ncu, kwb, ws, versions, sizes, launches):
    """Where Nsight Compute's figure and kwb's part: ncu under each cache and clock control,
    with the SM clock it ran at and the SM cycles, beside kwb's CUPTI time."""
    cupti = medians(run_batch(kwb, ws, sizes, {}))
    print(f"\n{'size':>6} {'ver':>4} {'cache':>5} {'clock':>5} | {'ncu µs':>8} {'SM MHz':>7} {'SM cycles':>10} {'DRAM read':>10} | {'cupti µs':>8}")
    for size in sizes:
        for version, entry in versions:
            c = cupti.get((version, size))
            for cache, clock in (("all", "none"), ("none", "none"), ("all", "base")):
                m = ncu_time(ncu, kwb, ws, version, entry, size, launches, cache, clock, PROBE_METRICS)
                if not m:
                    continue
                mhz = m.get("sm__cycles_elapsed.avg.per_second", float("nan")) / 1e6
                cyc = m.get("sm__cycles_elapsed.max", float("nan"))
                dram = m.get("dram__bytes_read.sum", float("nan"))
                print(
                    f"{size:>6} {version:>4} {cache:>5} {clock:>5} | {m['gpu__time_duration.sum']:8.3f} "
                    f"{mhz:7.0f} {cyc:10.0f} {dram:10.0f} | {c[0] if c else float('nan'):8.3f}",
                    flush=True,
                )


def within(kwb_us, ncu_us):
    return abs(kwb_us - ncu_us) <= max(ncu_us * TOLERANCE_PCT / 100.0, TOLERANCE_US)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kwb", help="the kwb binary (default: target/release/kwb, else kwb on PATH)")
    ap.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ap.add_argument("--sizes", default="64Ki,1Mi,16Mi,256Mi")
    ap.add_argument("--versions", help="comma-separated versions (default: all)")
    ap.add_argument("--launches", type=int, default=15, help="launches ncu profiles per kernel")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--probe", action="store_true",
                    help="instead of the table: ncu under each cache and clock control, with its SM clock")
    args = ap.parse_args()
    kwb = find_kwb(args.kwb)
    if not os.access(args.ncu, os.X_OK):
        die(f"ncu not found at {args.ncu}: pass --ncu PATH")
    sizes = args.sizes.split(",")
    ws = temp_workspace()
    try:
        versions = versions_and_entries(ws)
        if args.versions:
            keep = set(args.versions.split(","))
            versions = [v for v in versions if v[0] in keep]
        print(f"kwb: {kwb}\nncu: {args.ncu}\nworkspace: {WORKSPACE} (+64Ki)\n")
        if args.probe:
            probe(args.ncu, kwb, ws, versions, sizes, args.launches)
            return
        print("kwb batch, CUPTI timer ...")
        cupti_report = run_batch(kwb, ws, sizes, {})
        print("kwb batch, KWB_TIMER=cupti-concurrent ...")
        concurrent = medians(run_batch(kwb, ws, sizes, {"KWB_TIMER": "cupti-concurrent"}))
        print("kwb batch, KWB_TIMER=events ...")
        events_report = run_batch(kwb, ws, sizes, {"KWB_TIMER": "events"})
        cupti, events = medians(cupti_report), medians(events_report)
        # A swept version's results are named by configuration (v9[block=256]): the table
        # holds the plain versions only.
        versions = [v for v in versions if any(k[0] == v[0] for k in cupti)]
        dev = cupti_report.get("device") or {}
        copy, stream = dev.get("measured_copy_gbps"), dev.get("stream_kernel_gbps")
        print(
            f"device: {dev.get('name')} · L2 {int(dev.get('l2_bytes', 0)) >> 20} MiB · "
            f"copy peak {copy} GB/s · kwb stream kernel peak {stream} GB/s"
        )
        ncu = {}
        for size in sizes:
            for version, entry in versions:
                print(f"ncu {version} ({entry}) @ {size} ...", flush=True)
                ncu[(version, size)] = ncu_time(args.ncu, kwb, ws, version, entry, size, args.launches)
    finally:
        os.unlink(ws)

    def pct(a, b):
        return f"{(a - b) / b * 100:+6.1f}%" if a is not None and b else "      -"

    def us(x):
        return f"{x:9.3f}" if x is not None else "        -"

    print()
    header = (f"{'size':>6} {'ver':>4} | {'ncu µs':>9} | {'cupti µs':>9} {'Δ':>7} {'ok':>3} | "
              f"{'concurrent':>10} {'Δ':>7} | {'events µs':>9} {'Δ':>7} | timer  L2")
    print(header)
    print("-" * len(header))
    failures, missing, rows = 0, 0, []
    for size in sizes:
        for version, _ in versions:
            n = ncu.get((version, size))
            c = cupti.get((version, size))
            e = events.get((version, size))
            c_us, timer, _, l2 = c if c else (None, "-", None, None)
            e_us = e[0] if e else None
            k = concurrent.get((version, size))
            k_us = k[0] if k else None
            ok = "-"
            if n is not None and c_us is not None:
                good = within(c_us, n) and timer == "cupti"
                ok = "yes" if good else "NO"
                failures += 0 if good else 1
            else:
                missing += 1
            print(
                f"{size:>6} {version:>4} | {us(n)} | {us(c_us)} {pct(c_us, n)} {ok:>3} | "
                f"{us(k_us):>10} {pct(k_us, n)} | {us(e_us)} {pct(e_us, n)} | {timer:<6} {'L2' if l2 else ''}"
            )
            rows.append(dict(size=size, version=version, ncu_us=n, cupti_us=c_us,
                             cupti_concurrent_us=k_us, events_us=e_us, timer=timer,
                             l2_resident=l2))
        print("-" * len(header))
    total = len(sizes) * len(versions)
    print(
        f"\n{total - failures - missing} of {total} within ±{TOLERANCE_PCT}% (or ±{TOLERANCE_US} µs) "
        f"of ncu; {failures} outside; {missing} without a figure"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=dev, rows=rows), f, indent=2)
    sys.exit(2 if missing else 1 if failures else 0)


if __name__ == "__main__":
    main()
