#!/usr/bin/env python3
"""The table of a `kwb capture` folder after `kwb batch` ran each workspace in it.

  kwb capture --out CAP -- python3 prog.py
  for w in CAP/*.yaml; do kwb batch "$w" --format json > "${w%.yaml}.json"; done
  python3 scripts/capture_table.py CAP

One row per workspace: the kernel, kwb's status and check against Triton's own outputs, kwb's
median and Triton's (the workspace's baseline, recorded by the capture) and their ratio. Then
the counts and the geometric mean of the ratios. A workspace with no JSON report (batch did not
run, or crashed before writing one) is listed as such, never left out.
"""

import glob
import json
import math
import os
import sys


def rows(folder):
    for ws in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        name = os.path.basename(ws)[:-5]
        report = ws[:-5] + ".json"
        row = {"workspace": name, "status": "no report", "check": "-", "kwb_us": None,
               "triton_us": None, "why": ""}
        try:
            with open(report) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            row["why"] = str(e)[:80]
            yield row
            continue
        for res in r.get("results", []):
            row["status"] = res.get("status", "?")
            c = res.get("check")
            row["check"] = "-" if c is None else ("pass" if c.get("passed") else "FAIL")
            t = res.get("timing") or {}
            row["kwb_us"] = t.get("median_us")
            b = res.get("baseline") or {}
            row["triton_us"] = b.get("us")
            row["why"] = (res.get("message") or (c or {}).get("failure") or "").splitlines()[0][:120] \
                if (res.get("message") or (c or {}).get("failure")) else ""
            break
        yield row


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "kwb-capture"
    table = list(rows(folder))
    print("| workspace | status | check | kwb µs | Triton µs | kwb / Triton | note |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for r in table:
        k, t = r["kwb_us"], r["triton_us"]
        ratio = k / t if k and t else None
        if ratio is not None and r["check"] == "pass":
            ratios.append(ratio)
        fmt = lambda x: "-" if x is None else f"{x:.2f}"
        print(f"| {r['workspace']} | {r['status']} | {r['check']} | {fmt(k)} | {fmt(t)} | "
              f"{'-' if ratio is None else f'{ratio:.3f}'} | {r['why'].replace('|', '/')} |")
    n = len(table)
    ok = sum(r["status"] == "ok" for r in table)
    passed = sum(r["check"] == "pass" for r in table)
    compiled = sum(r["status"] not in ("compile_error", "no report") for r in table)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print()
    print(f"capture table: {n} workspaces, {compiled} compiled, {passed} passed the check "
          f"against Triton's outputs, {ok} ok; kwb/Triton geometric mean {geo:.3f} over {len(ratios)}, "
          f"max {max(ratios) if ratios else float('nan'):.3f}, "
          f"above 1.25: {sum(x > 1.25 for x in ratios)}")


if __name__ == "__main__":
    main()
