#!/usr/bin/env python3
"""Runs Triton kernels under Triton's own interpreter (TRITON_INTERPRET=1, torch on the CPU),
for kwb's differential tests (tests/tile_differential.rs); with KWB_TRITON_DEVICE=cuda, compiled
by Triton and run on the GPU instead (with KWB_TRITON_FP_FUSION=0, without contracting
`a * b + c` into FMAs).

A server: one JSON request per line on stdin, one JSON answer per line on stdout, so that
torch and triton are imported once for many kernels. A request:

    {"file": "/abs/k.py", "kernel": "k", "grid": [g0, g1, g2], "num_warps": 4,
     "args": [{"npy": "/abs/x.npy", "out": "/abs/x.out.npy"}, {"int": 7}, {"float": 0.5}],
     "constexprs": {"BLOCK": 64, "DT": {"dtype": "float16"}}}

Each buffer argument is read from its `npy`, passed as a CPU tensor, and written after the
launch to its `out`. A constexpr given as {"dtype": NAME} is `triton.language.NAME`. The answer
is {"ok": true} or {"ok": false, "error": "..."}.
"""

import importlib.util
import json
import os
import sys
import traceback

DEVICE = os.environ.get("KWB_TRITON_DEVICE", "cpu")
if DEVICE == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402,F401


def load(path, n):
    spec = importlib.util.spec_from_file_location(f"kwb_diff_{n}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(req, n):
    kernel = getattr(load(req["file"], n), req["kernel"])
    args, outs = [], []
    for a in req["args"]:
        if "npy" in a:
            t = torch.from_numpy(np.load(a["npy"]).copy()).to(DEVICE)
            args.append(t)
            outs.append((t, a["out"]))
        elif "int" in a:
            args.append(int(a["int"]))
        else:
            args.append(float(a["float"]))
    grid = tuple(req["grid"])
    opts = {}
    if DEVICE != "cpu" and os.environ.get("KWB_TRITON_FP_FUSION") == "0":
        # Round every product and sum, as kwb and Triton's interpreter do (no FMA contraction).
        opts["enable_fp_fusion"] = False
    constexprs = {
        name: getattr(triton.language, v["dtype"]) if isinstance(v, dict) else v
        for name, v in req.get("constexprs", {}).items()
    }
    kernel[grid](*args, **constexprs, num_warps=req.get("num_warps", 4), **opts)
    for t, path in outs:
        np.save(path, t.cpu().numpy())


def main():
    print(json.dumps({"ready": True, "triton": triton.__version__, "torch": torch.__version__,
                      "device": DEVICE if DEVICE == "cpu" else torch.cuda.get_device_name(0)}), flush=True)
    for n, line in enumerate(sys.stdin):
        line = line.strip()
        if not line:
            continue
        try:
            run(json.loads(line), n)
            answer = {"ok": True}
        except BaseException as e:  # noqa: BLE001 - every failure is reported to the caller
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            answer = {"ok": False, "error": last[-2000:]}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
