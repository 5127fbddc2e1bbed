# kwb differential test program, seed 101116
import triton
import triton.language as tl



@triton.jit
def kernel(x_ptr, h_ptr, i_ptr, yf_ptr, yi_ptr, yh_ptr, acc_ptr, n, s, BLOCK: tl.constexpr):
    pid = tl.program_id(
  0
)
    offs = (
      (pid * BLOCK) + tl.arange(0, BLOCK))
    mask = \
        (offs < n  # note
)
    zf = tl.zeros([BLOCK],
        dtype=tl.float32,)
    zh = tl.zeros([BLOCK], 
        dtype=tl.float16,)
    zi = tl.zeros([BLOCK],   # note
 dtype=tl.int32)
    x = tl.load((x_ptr +
        offs), 
             mask=mask, 
     other=0.5)
    h = tl.load(
            (h_ptr + offs
  ), mask=mask,  # note
         other=1.0,
)
    i = tl.load(
          (i_ptr + offs), mask=mask,  # note
    other=-3)
    t2 = h
    t3 = (i * (t2 / t2)  # note
       )
    tl.store(
    (yh_ptr + offs), 
   ((  # note
   t2 * t3) - i
    ),
mask=mask,)
