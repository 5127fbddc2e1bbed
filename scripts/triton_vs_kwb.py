#!/usr/bin/env python3
"""Triton code written elsewhere, compiled by Triton and by kwb, checked and timed on one GPU in
one process, on the same launch.

Each case names an unchanged Triton source file (a tutorial, a library's module), one kernel in
it and one launch: its buffers, arguments, constexprs, num_warps, num_stages and grid. For each:

- Triton compiles the kernel (an `@triton.autotune`/`@triton.heuristics` wrapper is unwrapped,
  so the launch's own configuration is used) and runs it;
- kwb compiles the same file for the same launch (`kwb inspect --cubin-dir` on a workspace this
  script writes) and CuPy runs kwb's CUBIN on the same tensors;
- the outputs are compared (kwb's against Triton's, with the case's tolerance);
- both kernels are timed by their own GPU durations as torch.profiler (CUPTI) records them, L2
  flushed before every launch, alternating for --rounds rounds so that no phase of the run
  favours either; each side's figure is the median of its rounds' medians.

Usage (GPU machine with torch, triton and cupy; from the repository root):
  python3 scripts/triton_vs_kwb.py CASES.json [--kwb .gpu-bundle/bin/kwb] [--json out.json]

CASES.json is a list of objects:
  {"name": "...", "file": "/abs/03-matrix-multiplication.py", "kernel": "matmul_kernel",
   "buffers": {"a": {"dtype": "f16", "shape": [4096, 4096]}, ..., "c": {..., "output": true}},
   "args": ["a", "b", "c", 4096, ...], "constexprs": {"BLOCK_SIZE_M": 128, ...},
   "num_warps": 8, "num_stages": 3, "grid": [1024, 1, 1], "rtol": 1e-2, "atol": 1e-2,
   "flops": 1.37e11}
(a buffer's optional "init" is "uniform01" (in [0, 1)), "bits" (0 or 1) or "zeros", and
"std" scales its normal draws; else randn, or integers in [-100, 100))
(a relative "file" is relative to CASES.json's folder). scripts/conformance_cases.py writes
such cases for Triton's tutorials.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tile_vs_triton import kernels_median_us  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                "i32": torch.int32, "f64": torch.float64}


def load_module(path):
    """The file's imports, module-level constants and `@triton.jit` functions, executed without
    the rest: a tutorial runs its tests and benchmarks at the top level. Line numbers are kept,
    so Triton reads each kernel's source from the file itself."""
    import ast
    with open(path) as f:
        tree = ast.parse(f.read(), path)

    def is_jit(d):
        target = d.func if isinstance(d, ast.Call) else d
        return (isinstance(target, ast.Attribute) and target.attr == "jit") or \
            (isinstance(target, ast.Name) and target.id == "jit")

    keep = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            # An import the installed Triton lacks (an older tutorial's
            # `triton.tools.experimental_descriptor`) is left out, not fatal: the kernels that
            # need it fail on their own.
            guard = ast.parse("try:\n    pass\nexcept ImportError:\n    pass\n").body[0]
            guard.body = [node]
            ast.copy_location(guard, node)
            ast.fix_missing_locations(guard)
            keep.append(guard)
        elif isinstance(node, ast.FunctionDef) and any(is_jit(d) for d in node.decorator_list):
            node.decorator_list = [d for d in node.decorator_list if is_jit(d)]
            keep.append(node)
        elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.Call)) \
                and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
            keep.append(node)
    name = "case_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path))
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), module.__dict__)
    except Exception:  # noqa: BLE001 - a constant that needs the rest of the file: leave it out
        keep = [n for n in keep if not isinstance(n, ast.Assign)]
        exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), module.__dict__)
    return module


def jit_function(obj):
    """The JITFunction under any autotune/heuristics wrappers."""
    while hasattr(obj, "fn") and not hasattr(obj, "arg_names"):
        obj = obj.fn
    while type(obj).__name__ in ("Autotuner", "Heuristics"):
        obj = obj.fn
    return obj


def workspace(case, folder):
    """The kwb workspace for one case's launch."""
    bufs = "".join(
        f"  {n}: {{dtype: {b['dtype']}, shape: [{', '.join(map(str, b['shape']))}]"
        + (", output: true" if b.get("output") else "") + "}\n"
        for n, b in case["buffers"].items())
    args = ", ".join(a if isinstance(a, str) else f'"{a}"' for a in case["args"])
    cx = ", ".join(f"{k}: {v}" for k, v in case.get("constexprs", {}).items())
    grid = case["grid"]
    text = (f"name: {case['name']}\nsizes:\n  - {{name: s, Z: 1}}\nbuffers:\n{bufs}versions:\n"
            f"  kwb:\n    file: {case['file']}\n    entry: {case['kernel']}\n"
            f"    constexprs: {{{cx}}}\n    num_warps: {case.get('num_warps', 4)}\n"
            f"    grid: [{', '.join(map(str, grid))}]\n    args: [{args}]\n")
    path = os.path.join(folder, "case.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def kwb_kernel(kwb, case, folder):
    """(launch(tensors), kernel name) for kwb's CUBIN of the case, or (None, why)."""
    import cupy
    import numpy
    path = workspace(case, folder)
    out_dir = os.path.join(folder, "cubins")
    os.makedirs(out_dir, exist_ok=True)
    run = subprocess.run([kwb, "inspect", path, "--format", "json", "--cubin-dir", out_dir],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        return None, (run.stderr or run.stdout).strip().splitlines()[-12:]
    report = json.loads(run.stdout)
    k = report["versions"][0]["kernels"][0]
    if k.get("tensor_maps"):
        return None, ["kwb copies with TMA here; this script does not encode tensor maps yet"]
    dyn = k["launches"][0]["dynamic_shared_bytes"]
    cubin = next(os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.endswith(".cubin"))
    fn = cupy.RawModule(path=cubin).get_function(k["name"])
    if dyn > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = dyn
    threads = 32 * case.get("num_warps", 4)

    def launch(tensors):
        args = []
        for a in case["args"]:
            if isinstance(a, str):
                args.append(cupy.asarray(tensors[a]))
            elif isinstance(a, float):
                args.append(numpy.float32(a))
            else:
                args.append(numpy.int32(a) if -2**31 <= a < 2**31 else numpy.int64(a))
        fn(tuple(case["grid"]), (threads,), tuple(args), shared_mem=dyn)
    return launch, k["name"]


def tensors_for(case, seed):
    torch.manual_seed(seed)
    out = {}
    for n, b in case["buffers"].items():
        dt = TORCH_DTYPES[b["dtype"]]
        if b.get("output"):
            out[n] = torch.zeros(b["shape"], dtype=dt, device="cuda")
        elif b.get("init") == "zeros":
            out[n] = torch.zeros(b["shape"], dtype=dt, device="cuda")
        elif "std" in b:
            out[n] = b["std"] * torch.randn(b["shape"], dtype=dt, device="cuda")
        elif b.get("init") == "uniform01":
            out[n] = torch.rand(b["shape"], dtype=dt, device="cuda")
        elif b.get("init") == "bits":
            out[n] = torch.randint(0, 2, b["shape"], dtype=dt, device="cuda")
        elif dt.is_floating_point:
            out[n] = torch.randn(b["shape"], dtype=dt, device="cuda")
        else:
            out[n] = torch.randint(-100, 100, b["shape"], dtype=dt, device="cuda")
    return out


def run_case(kwb, case, rounds):
    row = {"name": case["name"]}
    folder = tempfile.mkdtemp(prefix="kwb-case-")
    kernel = jit_function(getattr(load_module(case["file"]), case["kernel"]))
    grid = tuple(case["grid"])
    opts = {"num_warps": case.get("num_warps", 4)}
    if "num_stages" in case:
        opts["num_stages"] = case["num_stages"]

    def triton_launch(t):
        args = [t[a] if isinstance(a, str) else a for a in case["args"]]
        kernel[grid](*args, **case.get("constexprs", {}), **opts)

    mine, why = kwb_kernel(kwb, case, folder)
    tt, tk = tensors_for(case, 0), tensors_for(case, 0)
    triton_launch(tt)
    torch.cuda.synchronize()
    if mine is None:
        row["kwb"] = "does not compile: " + " | ".join(why)
        return row
    mine(tk)
    torch.cuda.synchronize()
    bad = []
    for n, b in case["buffers"].items():
        if b.get("output"):
            a, c = tt[n].float(), tk[n].float()
            if not torch.allclose(c, a, rtol=case.get("rtol", 1e-3), atol=case.get("atol", 1e-3), equal_nan=True):
                bad.append(f"{n}: max |kwb - triton| = {(c - a).abs().max().item():.3g}")
    row["check"] = "ok" if not bad else "MISMATCH " + "; ".join(bad)
    tri, kw = [], []
    for _ in range(rounds):
        tri.append(kernels_median_us(lambda: triton_launch(tt)))
        kw.append(kernels_median_us(lambda: mine(tk)))
    row["triton_us"], row["kwb_us"] = statistics.median(tri), statistics.median(kw)
    row["ratio"] = row["kwb_us"] / row["triton_us"]
    row["rounds"] = [round(k / t, 3) for k, t in zip(kw, tri)]
    if case.get("flops"):
        row["triton_tflops"] = case["flops"] / row["triton_us"] / 1e6
        row["kwb_tflops"] = case["flops"] / row["kwb_us"] / 1e6
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--kwb", default=os.path.join(REPO, ".gpu-bundle", "bin", "kwb"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    import triton
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, triton {triton.__version__}")
    print("# kernel time: CUPTI (torch.profiler), L2 flushed before each launch, "
          f"median of {a.rounds} alternating rounds of 100 launches")
    rows = []
    with open(a.cases) as f:
        cases = json.load(f)
    for case in cases:
        # A relative `file` is relative to the cases file.
        case["file"] = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(a.cases)), case["file"]))
    for case in cases:
        try:
            row = run_case(a.kwb, case, a.rounds)
        except Exception as e:  # noqa: BLE001 - one failed case is reported, the rest run
            row = {"name": case["name"], "error": repr(e)[-500:]}
        rows.append(row)
        if "ratio" in row:
            extra = f"  ({row['kwb_tflops']:.0f} vs {row['triton_tflops']:.0f} TFLOP/s)" if "kwb_tflops" in row else ""
            print(f"{row['name']:<40} triton {row['triton_us']:9.1f} us  kwb {row['kwb_us']:9.1f} us  "
                  f"kwb/triton {row['ratio']:.3f} rounds {row['rounds']}  check {row['check']}{extra}", flush=True)
        else:
            print(f"{row['name']:<40} {row.get('kwb') or row.get('error')}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
