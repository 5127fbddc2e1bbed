"""The kernel of tests/tile_scan_rand/sort*.rs: `tl.sort` of a tile loaded from `x_ptr`,
converted to `DT`, stored to `y_ptr` (converted back to the buffer's dtype)."""

import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, R: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr, DT: tl.constexpr,
      FORM: tl.constexpr):
    # FORM 0: a 1-D tile of N. FORM 1, 2, 3: an R x N tile, each row sorted, the call spelled
    # three ways. FORM 4: the rows of an R x R product (R = N), a tile in tl.dot's layout.
    if FORM == 0:
        offs = tl.arange(0, N)
        y = tl.sort(tl.load(x_ptr + offs).to(DT), 0, descending=DESC)
        tl.static_assert(y.dtype == DT)
        tl.store(y_ptr + offs, y)
    else:
        r = tl.arange(0, R)[:, None]
        c = tl.arange(0, N)[None, :]
        x = tl.load(x_ptr + r * N + c).to(DT)
        if FORM == 1:
            y = tl.sort(x, descending=DESC)
        elif FORM == 2:
            y = tl.sort(x, 1, DESC)
        elif FORM == 3:
            y = x.sort(dim=1, descending=DESC)
        else:
            y = tl.sort(tl.dot(x, x), descending=DESC)
        tl.static_assert(y.dtype == x.dtype)
        tl.store(y_ptr + r * N + c, y)
