# Block pointers (`tl.make_block_ptr`, `tl.advance`, `boundary_check`, `padding_option`), one
# case per value of CASE, for tests/tile_scan_rand/block_ptr.rs (and a kernel of the tile
# fuzzer's corpus). x and w are inputs, y the output; x is an M x N row-major tensor unless the
# case says otherwise.
import triton
import triton.language as tl


@triton.jit
def step(p, d: tl.constexpr):
    # A block pointer in, a block pointer out.
    return tl.advance(p, (0, d))


@triton.jit
def read(p):
    return tl.load(p, boundary_check=(0, 1))


@triton.jit
def out(y_ptr, v, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    tl.store(y_ptr + r * BN + c, v)


@triton.jit
def k(x_ptr, w_ptr, y_ptr, M, N, K, CASE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
      BK: tl.constexpr):
    if CASE == 0:
        # Both dimensions checked at the ragged corner, and from before the first row.
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (M - 2, N - 3), (BM, BN), (1, 0))
        out(y_ptr, tl.load(p, boundary_check=(0, 1), padding_option="zero"), BM, BN)
        q = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(N, 1), offsets=(-1, 1),
                              block_shape=(BM, BN), order=(1, 0))
        out(y_ptr + BM * BN, tl.load(q, boundary_check=(1, 0)), BM, BN)
    if CASE == 1:
        # Columns checked, rows not: rows past M are read from memory (x holds them).
        p = tl.make_block_ptr(x_ptr, (M, N), (8, 1), (M - 2, 2), (BM, BN), (1, 0))
        out(y_ptr, tl.load(p, boundary_check=(1, ), eviction_policy="evict_last"), BM, BN)
    if CASE == 2:
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (M - 2, N - 3), (BM, BN), (1, 0))
        out(y_ptr, tl.load(p, boundary_check=(0, 1), padding_option="nan"), BM, BN)
    if CASE == 3:
        # The transpose of x: an N x M tensor, column-major.
        p = tl.make_block_ptr(x_ptr, (N, M), (1, N), (1, 0), (BM, BN), order=(0, 1))
        out(y_ptr, tl.load(p, boundary_check=(0, 1), cache_modifier=".cg"), BM, BN)
    if CASE == 4:
        # A store at the ragged corner: y is 8 x 8, and what lies outside M x N is untouched.
        v = tl.load(tl.make_block_ptr(x_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0)))
        p = tl.make_block_ptr(y_ptr, (M, N), (8, 1), (M - 2, N - 3), (BM, BN), (1, 0))
        tl.store(p, v, boundary_check=(0, 1))
        q = tl.make_block_ptr(y_ptr, (M, N), (8, 1), (0, 0), (2, 2), (1, 0))
        tl.store(q, 7.0)
    if CASE == 5:
        # A matmul: x is M x K, w is K x N (fp16), y is M x N (fp32); K need not divide BK.
        a = tl.make_block_ptr(x_ptr, (M, K), (K, 1), (0, 0), (BM, BK), (1, 0))
        b = tl.make_block_ptr(w_ptr, (K, N), (N, 1), (0, 0), (BK, BN), (1, 0))
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(0, K, BK):
            acc += tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)))
            a = tl.advance(a, (0, BK))
            b = b.advance((BK, 0))
        c = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
        tl.store(c, acc.to(c.dtype.element_ty), boundary_check=(0, 1))
    if CASE == 6:
        # One dimension: N elements read BM at a time, written back doubled, and summed.
        p = tl.make_block_ptr(x_ptr, (N, ), (1, ), (0, ), (BM, ), (0, ))
        q = tl.make_block_ptr(y_ptr, shape=[N], strides=[1], offsets=[0], block_shape=[BM],
                              order=[0])
        s = tl.zeros((BM, ), dtype=tl.float32)
        i = 0
        while i < N:
            # A bare 0 is false to Triton: this load checks nothing (it reads past N).
            v = tl.load(p, boundary_check=0)
            s += v
            tl.store(q, v * 2, boundary_check=[0])
            p = tl.advance(p, [BM])
            q = tl.advance(q, [BM])
            i += BM
        tl.store(y_ptr + N + tl.arange(0, BM), s)
    if CASE == 7:
        # Through jit helpers, in a loop, and merged after a runtime `if`.
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for j in range(3):
            acc += read(p)
            p = step(p, 2)
        if M > 5:
            p = tl.advance(p, (1, 0))
        else:
            p = tl.advance(p, (0, -1))
        out(y_ptr, acc + read(p), BM, BN)
    if CASE == 8:
        # A tuple carried around a loop, and a block pointer re-made with a new base in it.
        r = tl.arange(0, BN)
        t = (tl.load(x_ptr + r), 0.0, 1)
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (1, BN), (1, 0))
        acc = tl.zeros((1, BN), dtype=tl.float32)
        for j in range(K):
            t = (t[0] * 0.5 + t[2], t[1] + tl.sum(t[0]), t[2] + 1)
            acc += tl.load(p, boundary_check=(1, ))
            p = tl.make_block_ptr(x_ptr + (j + 1) * N, (M, N), (N, 1), (0, 0), (1, BN), (1, 0))
        tl.store(y_ptr + r, t[0])
        tl.store(y_ptr + BN, t[1])
        tl.store(y_ptr + BN + 1, t[2] * 1.0)
        out(y_ptr + 2 * BN, acc, 1, BN)
    if CASE == 9:
        # The matmul of case 5 with the accumulator in the dot: on sm_90 its loads (both
        # dimensions checked, zeros outside, contiguous rows) are copied by TMA.
        a = tl.make_block_ptr(x_ptr, (M, K), (K, 1), (0, 0), (BM, BK), (1, 0))
        b = tl.make_block_ptr(w_ptr, (K, N), (N, 1), (0, 0), (BK, BN), (1, 0))
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(0, K, BK):
            acc = tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(1, 0)), acc)
            a = tl.advance(a, (0, BK))
            b = tl.advance(b, (BK, 0))
        c = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
        tl.store(c, acc, boundary_check=(0, 1))
    if CASE == 10:
        # Three dimensions: x as a 2 x M x N tensor, dimensions 1 and 2 checked; written to y
        # through a block pointer of y's 2 x BM x BN, advanced along dimension 0.
        p = tl.make_block_ptr(x_ptr, (2, M, N), (M * N, N, 1), (0, 1, 2), (2, BM, BN), (2, 1, 0))
        v = tl.load(p, boundary_check=(1, 2))
        q = tl.make_block_ptr(y_ptr, (2, BM, BN), (BM * BN, BN, 1), (0, 0, 0), (1, BM, BN),
                              (2, 1, 0))
        w = tl.load(tl.advance(p, (1, 0, 0)), boundary_check=(0, 1, 2))
        tl.store(q, tl.sum(v, axis=0)[None, :, :])
        tl.store(q.advance((1, 0, 0)), tl.max(w, axis=0)[None, :, :], boundary_check=(0, ))
