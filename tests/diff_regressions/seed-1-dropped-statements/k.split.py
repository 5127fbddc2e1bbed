# kwb differential test program, seed 1
import triton
import triton.language as tl



@triton.jit
def kernel(x_ptr, w_ptr, b_ptr, y_ptr, z_ptr, M, N, s, R: tl.constexpr, C: tl.constexpr):
    pid = tl.program_id(
          0)
    rows = ((pid * R) + tl.arange(0,R,))
    cols = tl.arange(  # note
0, C
        )
    m2 = (
   (rows[:, None] < M
          ) & (cols[None, :] <
         N))
    x = tl.load(
      (x_ptr + (
        (rows[:, None] * N) + cols[None, :])), mask=m2, other=0.0,)
    wrow = tl.load(  # note
           (
           w_ptr + cols), 
   mask=(cols < N
          ), 
            other=1.0,)
    w = wrow[None, :]
    zf = tl.zeros([R, C], dtype=tl.float32,)
    zh = \
        tl.zeros([R, C],dtype=tl.float16)
    zi = tl.zeros([R, C],   # note
            dtype=tl.int32)
    bm = tl.load(b_ptr)
    c1 = ((0.5 + zh
         )).to(tl.int32)
    tl.store((z_ptr +
          rows
         ), 
           1,   # note
      mask=(rows < M))
