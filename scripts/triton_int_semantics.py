#!/usr/bin/env python3
"""How Triton rounds `//` and `%`, on the GPU: the semantics kwb's tile language follows.

kwb's tile language is Triton's, so a kernel must compute what Triton computes. This script
runs one Triton kernel that divides -7 by 2 on a runtime scalar (a kernel argument, and one
derived from `tl.program_id`), on a tile, and on floats, and checks the results against C's
rounding (`//` truncates toward zero, `%` takes the dividend's sign, float `%` is fmod),
which is what kwb generates and interprets (`src/tile/check/ops.rs`; the "kwb" column is that
rule, which tests/tile_interp.rs checks on kwb itself). Compile-time numbers
fold with Python's rounding in both (`-7 // 2 == -4` on literals).

Usage (on a GPU machine with torch and Triton): python3 scripts/triton_int_semantics.py
"""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def probe(out_ptr, fout_ptr, a, b, fa, fb, BLOCK: tl.constexpr):
    tl.store(out_ptr + 0, a // b)
    tl.store(out_ptr + 1, a % b)
    offs = tl.arange(0, BLOCK)
    t = offs * 0 + a
    tl.store(out_ptr + 2 + offs, t // b, mask=offs < 1)
    tl.store(out_ptr + 3 + offs, t % b, mask=offs < 1)
    p = tl.program_id(0) - 7
    tl.store(out_ptr + 4, p // 2)
    tl.store(out_ptr + 5, p % 2)
    tl.store(out_ptr + 6, -7 // 2)
    tl.store(out_ptr + 7, -7 % 2)
    tl.store(fout_ptr + 0, fa % fb)
    ft = offs.to(tl.float32) * 0.0 + fa
    tl.store(fout_ptr + 1 + offs, ft % fb, mask=offs < 1)


def main():
    out = torch.zeros(8, dtype=torch.int32, device="cuda")
    fout = torch.zeros(2, dtype=torch.float32, device="cuda")
    probe[(1,)](out, fout, -7, 2, -7.5, 2.0, BLOCK=16)
    got = out.tolist()
    fgot = fout.tolist()
    print(f"device: {torch.cuda.get_device_name(0)}; triton {triton.__version__}")
    rows = [("argument -7 // 2", got[0], -3), ("argument -7 % 2", got[1], -1),
            ("tile -7 // 2", got[2], -3), ("tile -7 % 2", got[3], -1),
            ("program_id - 7 = -7: // 2", got[4], -3), ("program_id - 7 = -7: % 2", got[5], -1),
            ("literal -7 // 2 (folded)", got[6], -4), ("literal -7 % 2 (folded)", got[7], 1),
            ("argument -7.5 % 2.0", fgot[0], -1.5), ("tile -7.5 % 2.0", fgot[1], -1.5)]
    bad = 0
    for what, g, want in rows:
        ok = g == want
        bad += not ok
        print(f"  {what:28} Triton {g:6}  kwb {want:6}  {'same' if ok else 'DIFFERENT'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
