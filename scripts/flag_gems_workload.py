#!/usr/bin/env python3
"""A flag-gems workload: PyTorch calls that flag-gems serves with its Triton kernels.

This is plain example code for flag-gems (FlagGems 5.x). It turns flag-gems on the way its users
do (``flag_gems.enable()``) and calls ordinary torch operators on CUDA tensors, so every
kernel is launched by flag-gems' own host code: pointwise ops (whose kernels flag-gems generates at
run time into ``$FLAGGEMS_CACHE_DIR``), reductions, scans, norms, matmuls, indexing, sorting,
random numbers, padding, pooling and upsampling. Nothing here depends on any other tool.

    python3 flag_gems_workload.py               # every op
    python3 flag_gems_workload.py --ops sum,mm  # those whose name starts with one of these
    python3 flag_gems_workload.py --list

Shapes are small (tens of thousands of elements), so that each launch's arrays are small: this
program is for conformance (does each kernel compile and compute what Triton's does), not speed.

Each op prints ``op NAME: ok`` or ``op NAME: FAILED: <error>``; the last line is
``flag-gems workload: N ops ok, M failed``. The exit status is 0 even when ops fail (2 when
flag_gems cannot be imported or there is no GPU: flag-gems needs a device to start).
"""

import argparse
import faulthandler
import sys
import time
import traceback


def ops_table(torch, F, dev):
    """(name, thunk) for each call. Thunks build their inputs, so a failing one fails alone."""
    g = torch.Generator(device=dev)
    g.manual_seed(0)

    def r(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
        t = torch.rand(*shape, device=dev, generator=g, dtype=torch.float32) * (hi - lo) + lo
        return t.to(dtype)

    def pos(*shape, dtype=torch.float32):
        return r(*shape, dtype=dtype, lo=0.1, hi=3.0)

    def ints(*shape, lo=-100, hi=100, dtype=torch.int32):
        return torch.randint(lo, hi, shape, device=dev, generator=g, dtype=dtype)

    def unit(*shape):
        return r(*shape, lo=-0.9, hi=0.9)

    M, N = 64, 512
    t = []

    def add(name, fn):
        t.append((name, fn))

    # Pointwise, one operand (flag-gems generates these kernels with pointwise_dynamic).
    for name in ["abs", "neg", "exp", "exp2", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "ceil",
                 "reciprocal", "square", "atan", "sign", "isfinite", "isnan", "isinf", "round",
                 "cosh", "angle", "signbit"]:
        add(name, lambda name=name: getattr(torch, name)(r(M, N)))
    for name in ["log", "sqrt", "rsqrt", "log10"]:
        add(name, lambda name=name: getattr(torch, name)(pos(M, N)))
    add("acos", lambda: torch.acos(unit(M, N)))
    add("logit", lambda: torch.logit(r(M, N, lo=0.05, hi=0.95)))
    add("i0", lambda: torch.i0(r(M, N)))
    add("special_i0e", lambda: torch.special.i0e(r(M, N)))
    add("special_i1", lambda: torch.special.i1(r(M, N)))
    add("expm1", lambda: torch.expm1(r(M, N)))
    add("nan_to_num", lambda: torch.nan_to_num(r(M, N).log()))
    add("abs_fp16", lambda: torch.abs(r(M, N, dtype=torch.float16)))
    add("exp_bf16", lambda: torch.exp(r(M, N, dtype=torch.bfloat16)))
    add("neg_int", lambda: torch.neg(ints(M, N)))
    add("bitwise_not", lambda: torch.bitwise_not(ints(M, N)))
    add("logical_not", lambda: torch.logical_not(ints(M, N, lo=0, hi=2)))
    for name in ["relu", "relu6", "gelu", "silu", "elu", "celu", "selu", "hardsigmoid", "softplus",
                 "softshrink", "logsigmoid", "hardswish"]:
        add(name, lambda name=name: getattr(F, name)(r(M, N)))
    add("gelu_tanh", lambda: F.gelu(r(M, N), approximate="tanh"))
    add("threshold", lambda: F.threshold(r(M, N), 0.5, -1.0))
    add("clamp", lambda: torch.clamp(r(M, N), -0.5, 0.7))
    add("clamp_min", lambda: torch.clamp_min(r(M, N), 0.1))
    add("clamp_tensor", lambda: torch.clamp(r(M, N), r(M, N) - 1, r(M, N) + 1))
    add("pow_scalar", lambda: torch.pow(r(M, N), 3))
    add("pow_tensor_tensor", lambda: torch.pow(pos(M, N), r(M, N)))
    add("pow_scalar_tensor", lambda: torch.pow(2.0, r(M, N)))
    # Pointwise, two or three operands, with broadcasting and mixed dtypes.
    for name in ["add", "sub", "mul", "div", "maximum", "minimum", "fmin", "atan2", "hypot",
                 "copysign", "logaddexp", "eq", "ne", "lt", "le", "gt", "ge", "remainder",
                 "floor_divide"]:
        add(name, lambda name=name: getattr(torch, name)(r(M, N), r(M, N) + 2.5))
    add("add_broadcast", lambda: torch.add(r(M, N), r(N), alpha=0.5))
    add("mul_scalar", lambda: torch.mul(r(M, N), 1.5))
    add("add_fp16", lambda: torch.add(r(M, N, dtype=torch.float16), r(M, N, dtype=torch.float16)))
    add("mul_bf16", lambda: torch.mul(r(M, N, dtype=torch.bfloat16), r(M, N, dtype=torch.bfloat16)))
    add("add_int", lambda: torch.add(ints(M, N), ints(M, N)))
    add("div_trunc", lambda: torch.div(r(M, N), r(M, N) + 2.5, rounding_mode="trunc"))
    add("div_floor", lambda: torch.div(r(M, N), r(M, N) + 2.5, rounding_mode="floor"))
    add("add_strided", lambda: torch.add(r(N, M).t(), r(M, N)))
    for name in ["bitwise_and", "bitwise_or", "bitwise_left_shift", "bitwise_right_shift"]:
        add(name, lambda name=name: getattr(torch, name)(ints(M, N, lo=0, hi=1000), ints(M, N, lo=0, hi=8)))
    for name in ["logical_and", "logical_or", "logical_xor"]:
        add(name, lambda name=name: getattr(torch, name)(ints(M, N, lo=0, hi=2), ints(M, N, lo=0, hi=2)))
    add("where", lambda: torch.where(r(M, N) > 0, r(M, N), r(M, N)))
    add("where_scalar", lambda: torch.where(r(M, N) > 0, r(M, N), 0.0))
    add("lerp", lambda: torch.lerp(r(M, N), r(M, N), 0.3))
    add("lerp_tensor", lambda: torch.lerp(r(M, N), r(M, N), r(M, N)))
    add("addcmul", lambda: torch.addcmul(r(M, N), r(M, N), r(M, N), value=0.5))
    add("addcdiv", lambda: torch.addcdiv(r(M, N), r(M, N), pos(M, N), value=0.5))
    add("isclose", lambda: torch.isclose(r(M, N), r(M, N), rtol=0.5))
    add("masked_fill", lambda: r(M, N).masked_fill(r(M, N) > 0, -1.0))
    add("polar", lambda: torch.polar(pos(M, N), r(M, N)))
    add("prelu", lambda: F.prelu(r(4, 16, 32), pos(16)))
    add("glu", lambda: F.glu(r(M, N), dim=-1))
    add("dropout", lambda: F.dropout(r(M, N), p=0.3, training=True))
    # Reductions and scans.
    for name in ["sum", "mean", "amax", "prod", "all", "any", "std", "var", "count_nonzero"]:
        add(name, lambda name=name: getattr(torch, name)(r(M, N)))
        add(name + "_dim", lambda name=name: getattr(torch, name)(r(M, N), dim=1))
    add("sum_dim0", lambda: torch.sum(r(M, N), dim=0))
    add("sum_fp16", lambda: torch.sum(r(M, N, dtype=torch.float16), dim=1))
    add("sum_int", lambda: torch.sum(ints(M, N), dim=1))
    add("max", lambda: torch.max(r(M, N)))
    add("max_dim", lambda: torch.max(r(M, N), dim=1))
    add("min", lambda: torch.min(r(M, N)))
    add("min_dim", lambda: torch.min(r(M, N), dim=0))
    add("argmax", lambda: torch.argmax(r(M, N), dim=1))
    add("argmax_all", lambda: torch.argmax(r(M, N)))
    add("argmin", lambda: torch.argmin(r(M, N), dim=1))
    add("aminmax", lambda: torch.aminmax(r(M, N), dim=1))
    add("var_mean", lambda: torch.var_mean(r(M, N), dim=1))
    add("vector_norm", lambda: torch.linalg.vector_norm(r(M, N), dim=1))
    add("vector_norm_inf", lambda: torch.linalg.vector_norm(r(M, N), ord=float("inf"), dim=1))
    add("norm_l1", lambda: torch.linalg.vector_norm(r(M, N), ord=1))
    add("trace", lambda: torch.trace(r(N, N)))
    add("cumsum", lambda: torch.cumsum(r(M, N), dim=1))
    add("cumsum_int", lambda: torch.cumsum(ints(M, N), dim=0))
    add("cummax", lambda: torch.cummax(r(M, N), dim=1))
    add("cummin", lambda: torch.cummin(r(M, N), dim=1))
    add("softmax", lambda: torch.softmax(r(M, N), dim=1))
    add("softmax_dim0", lambda: torch.softmax(r(M, N), dim=0))
    add("softmax_fp16", lambda: torch.softmax(r(M, 4096, dtype=torch.float16), dim=-1))
    add("softmax_backward", lambda: _backward(torch, lambda x: torch.softmax(x, dim=1), r(M, N)))
    add("log_softmax", lambda: torch.log_softmax(r(M, N), dim=1))
    add("log_softmax_backward", lambda: _backward(torch, lambda x: torch.log_softmax(x, dim=1), r(M, N)))
    add("sort", lambda: torch.sort(r(M, N), dim=1))
    add("sort_stable", lambda: torch.sort(ints(M, N), dim=1, stable=True))
    add("topk", lambda: torch.topk(r(M, N), 8, dim=1))
    add("quantile", lambda: torch.quantile(r(M, N), 0.3, dim=1))
    add("unique", lambda: torch.unique(ints(4096, lo=0, hi=50), return_counts=True))
    add("mse_loss", lambda: F.mse_loss(r(M, N), r(M, N)))
    add("nll_loss", lambda: F.nll_loss(torch.log_softmax(r(M, 100), 1), ints(M, lo=0, hi=100, dtype=torch.int64)))
    add("cross_entropy", lambda: F.cross_entropy(r(M, 100), ints(M, lo=0, hi=100, dtype=torch.int64)))
    add("margin_ranking_loss", lambda: F.margin_ranking_loss(r(N), r(N), torch.sign(r(N))))
    add("soft_margin_loss", lambda: F.soft_margin_loss(r(N), torch.sign(r(N))))
    # Norms.
    add("layer_norm", lambda: F.layer_norm(r(M, N), (N,), pos(N), r(N)))
    add("layer_norm_backward", lambda: _backward(torch, lambda x: F.layer_norm(x, (N,)), r(M, N)))
    add("rms_norm", lambda: F.rms_norm(r(M, N), (N,), pos(N)))
    add("group_norm", lambda: F.group_norm(r(4, 32, 16, 16), 8, pos(32), r(32)))
    add("group_norm_backward", lambda: _backward(torch, lambda x: F.group_norm(x, 8), r(4, 32, 16, 16)))
    add("batch_norm", lambda: F.batch_norm(r(8, 16, 32), torch.zeros(16, device=dev),
                                           torch.ones(16, device=dev), pos(16), r(16), training=True))
    add("weight_norm", lambda: torch._weight_norm(r(64, 128), pos(64, 1), 0))
    # Matmul family.
    add("mm", lambda: torch.mm(r(256, 128), r(128, 192)))
    add("mm_fp16", lambda: torch.mm(r(256, 256, dtype=torch.float16), r(256, 256, dtype=torch.float16)))
    add("mm_bf16_t", lambda: torch.mm(r(256, 128, dtype=torch.bfloat16), r(192, 128, dtype=torch.bfloat16).t()))
    add("bmm", lambda: torch.bmm(r(4, 64, 96), r(4, 96, 80)))
    add("addmm", lambda: torch.addmm(r(192), r(256, 128), r(128, 192), beta=0.5, alpha=2.0))
    add("baddbmm", lambda: torch.baddbmm(r(4, 64, 80), r(4, 64, 96), r(4, 96, 80)))
    add("mv", lambda: torch.mv(r(256, 512), r(512)))
    add("addmv", lambda: torch.addmv(r(256), r(256, 512), r(512)))
    add("addr", lambda: torch.addr(r(128, 96), r(128), r(96)))
    add("dot", lambda: torch.dot(r(4096), r(4096)))
    add("vdot", lambda: torch.vdot(r(4096), r(4096)))
    add("outer", lambda: torch.outer(r(128), r(96)))
    add("kron", lambda: torch.kron(r(16, 8), r(8, 12)))
    add("linear", lambda: F.linear(r(64, 256), r(128, 256), r(128)))
    add("sdpa", lambda: F.scaled_dot_product_attention(r(2, 4, 128, 64, dtype=torch.float16),
                                                       r(2, 4, 128, 64, dtype=torch.float16),
                                                       r(2, 4, 128, 64, dtype=torch.float16), is_causal=True))
    # Indexing, gathering, scattering.
    add("gather", lambda: torch.gather(r(M, N), 1, ints(M, 32, lo=0, hi=N, dtype=torch.int64)))
    add("scatter", lambda: torch.scatter(r(M, N), 1, ints(M, 32, lo=0, hi=N, dtype=torch.int64), r(M, 32)))
    add("scatter_add", lambda: r(M, N).scatter_add_(1, ints(M, 32, lo=0, hi=N, dtype=torch.int64), r(M, 32)))
    add("index_select", lambda: torch.index_select(r(M, N), 0, ints(32, lo=0, hi=M, dtype=torch.int64)))
    add("index_add", lambda: torch.index_add(r(M, N), 0, ints(32, lo=0, hi=M, dtype=torch.int64), r(32, N)))
    add("index", lambda: r(M, N)[ints(32, lo=0, hi=M, dtype=torch.int64)])
    add("index_put", lambda: r(M, N).index_put_((ints(32, lo=0, hi=M, dtype=torch.int64),), r(32, N), accumulate=True))
    add("masked_select", lambda: torch.masked_select(r(M, N), r(M, N) > 0))
    add("masked_scatter", lambda: r(M, N).masked_scatter(r(M, N) > 0, r(M, N)))
    add("nonzero", lambda: torch.nonzero(r(M, N) > 1.0))
    add("embedding", lambda: F.embedding(ints(M, lo=0, hi=1000, dtype=torch.int64), r(1000, 128)))
    add("embedding_backward", lambda: _backward(torch, lambda w: F.embedding(
        torch.arange(64, device=dev) % 100, w), r(100, 128)))
    add("one_hot", lambda: F.one_hot(ints(M, lo=0, hi=100, dtype=torch.int64), 100))
    add("isin", lambda: torch.isin(ints(M, N, lo=0, hi=1000), ints(64, lo=0, hi=1000)))
    add("select_scatter", lambda: torch.select_scatter(r(M, N), r(N), 0, 3))
    add("slice_scatter", lambda: torch.slice_scatter(r(M, N), r(M, 128), 1, 0, 256, 2))
    add("diag", lambda: torch.diag(r(N)))
    add("diag_2d", lambda: torch.diag(r(M, N), 1))
    add("diag_embed", lambda: torch.diag_embed(r(8, 32)))
    add("tril", lambda: torch.tril(r(M, N)))
    add("triu", lambda: torch.triu(r(M, N), 1))
    # Copies, shapes and layout.
    add("cat", lambda: torch.cat([r(M, N), r(32, N)], dim=0))
    add("cat_dim1", lambda: torch.cat([r(M, N), r(M, 100)], dim=1))
    add("stack", lambda: torch.stack([r(M, N), r(M, N)], dim=1))
    add("hstack", lambda: torch.hstack([r(M, N), r(M, 64)]))
    add("vstack", lambda: torch.vstack([r(M, N), r(8, N)]))
    add("flip", lambda: torch.flip(r(M, N), [0, 1]))
    add("roll", lambda: torch.roll(r(M, N), shifts=5, dims=1))
    add("repeat", lambda: r(16, 32).repeat(3, 2))
    add("tile", lambda: torch.tile(r(16, 32), (2, 3)))
    add("repeat_interleave", lambda: torch.repeat_interleave(r(M, 32), 3, dim=0))
    add("repeat_interleave_tensor", lambda: torch.repeat_interleave(ints(64, lo=0, hi=4, dtype=torch.int64)))
    add("contiguous", lambda: r(N, M).t().contiguous())
    add("copy", lambda: torch.empty(M, N, device=dev).copy_(r(N, M).t()))
    add("to_fp16", lambda: r(M, N).to(torch.float16))
    add("pad", lambda: F.pad(r(8, 16, 32), (2, 3, 1, 1), value=0.5))
    add("reflection_pad1d", lambda: F.pad(r(8, 16, 64), (3, 5), mode="reflect"))
    add("reflection_pad2d", lambda: F.pad(r(2, 8, 32, 32), (2, 2, 3, 3), mode="reflect"))
    add("replication_pad1d", lambda: F.pad(r(8, 16, 64), (3, 5), mode="replicate"))
    add("pixel_unshuffle", lambda: F.pixel_unshuffle(r(2, 4, 16, 16), 2))
    # Factories and random numbers.
    add("zeros", lambda: torch.zeros(M, N, device=dev))
    add("ones", lambda: torch.ones(M, N, device=dev))
    add("full", lambda: torch.full((M, N), 3.5, device=dev))
    add("fill", lambda: r(M, N).fill_(2.0))
    add("zeros_like", lambda: torch.zeros_like(r(M, N)))
    add("full_like", lambda: torch.full_like(r(M, N), 7.0))
    add("arange", lambda: torch.arange(0, 10000, 3, device=dev))
    add("arange_float", lambda: torch.arange(0.0, 100.0, 0.25, device=dev))
    add("linspace", lambda: torch.linspace(-3, 7, 5000, device=dev))
    add("logspace", lambda: torch.logspace(-3, 2, 500, device=dev))
    add("eye", lambda: torch.eye(300, 200, device=dev))
    add("rand", lambda: torch.rand(M, N, device=dev))
    add("randn", lambda: torch.randn(M, N, device=dev))
    add("rand_like", lambda: torch.rand_like(r(M, N)))
    add("uniform", lambda: r(M, N).uniform_(-1, 1))
    add("normal", lambda: r(M, N).normal_(0.5, 2.0))
    add("exponential", lambda: r(M, N).exponential_())
    add("bernoulli", lambda: r(M, N).bernoulli_(0.3))
    add("multinomial", lambda: torch.multinomial(pos(16, 100), 8, replacement=True))
    add("randperm", lambda: torch.randperm(5000, device=dev))
    # Convolution, pooling, upsampling.
    add("conv2d", lambda: F.conv2d(r(2, 8, 16, 16), r(16, 8, 3, 3), r(16), padding=1))
    add("conv1d", lambda: F.conv1d(r(2, 8, 64), r(16, 8, 5), padding=2))
    add("conv_depthwise", lambda: F.conv2d(r(2, 8, 16, 16), r(8, 1, 3, 3), groups=8, padding=1))
    add("avg_pool2d", lambda: F.avg_pool2d(r(2, 8, 32, 32), 2))
    add("max_pool2d", lambda: F.max_pool2d(r(2, 8, 32, 32), 3, stride=2, padding=1))
    add("upsample_nearest2d", lambda: F.interpolate(r(2, 4, 16, 16), scale_factor=2, mode="nearest"))
    add("upsample_nearest1d", lambda: F.interpolate(r(2, 4, 32), scale_factor=2, mode="nearest"))
    add("upsample_bicubic2d", lambda: F.interpolate(r(2, 4, 16, 16), scale_factor=2, mode="bicubic"))
    add("upsample_linear1d", lambda: F.interpolate(r(2, 4, 32), scale_factor=2, mode="linear"))
    # Activations' backward passes.
    for name in ["gelu", "silu", "sigmoid", "tanh", "elu", "threshold"]:
        fn = {"threshold": lambda x: F.threshold(x, 0.5, -1.0), "elu": F.elu, "sigmoid": torch.sigmoid,
              "tanh": torch.tanh}.get(name, getattr(F, name, None))
        add(name + "_backward", lambda fn=fn: _backward(torch, fn, r(M, N)))
    return t


def _backward(torch, fn, x):
    x = x.detach().requires_grad_(True)
    y = fn(x)
    y.backward(torch.ones_like(y))
    return x.grad


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=None, help="comma-separated prefixes of op names (default: all)")
    p.add_argument("--skip", default=None, help="comma-separated prefixes of op names to leave out")
    p.add_argument("--list", action="store_true", help="list the op names, then exit")
    p.add_argument("--traceback", action="store_true", help="print the full traceback of a failing op")
    p.add_argument("--hang-report", type=float, default=0, metavar="SECS",
                   help="print every thread's stack when one op runs longer than SECS")
    a = p.parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print(f"flag-gems workload: cannot import torch: {e}", file=sys.stderr)
        return 2
    if a.list:
        for name, _ in ops_table(torch, F, "cpu"):
            print(name)
        return 0
    if not torch.cuda.is_available():
        print("flag-gems workload: no CUDA device (flag-gems needs one to start)", file=sys.stderr)
        return 2
    try:
        import flag_gems
    except Exception as e:  # noqa: BLE001
        print(f"flag-gems workload: cannot import flag_gems: {e}", file=sys.stderr)
        return 2
    table = ops_table(torch, F, "cuda")
    wanted = a.ops.split(",") if a.ops else None
    unwanted = a.skip.split(",") if a.skip else []
    ok = failed = 0
    flag_gems.enable()  # every op flag-gems has, for the rest of the program
    for name, thunk in table:
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        if any(name.startswith(w) for w in unwanted):
            continue
        if a.hang_report:
            faulthandler.dump_traceback_later(a.hang_report, exit=False)
        start = time.perf_counter()
        try:
            out = thunk()
            torch.cuda.synchronize()
            del out
            ok += 1
            print(f"op {name}: ok in {1e3 * (time.perf_counter() - start):.0f} ms", flush=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            msg = str(e).strip().splitlines()
            print(f"op {name}: FAILED: {type(e).__name__}: {msg[-1] if msg else ''}", flush=True)
            if a.traceback:
                traceback.print_exc()
        finally:
            faulthandler.cancel_dump_traceback_later()
    print(f"flag-gems workload: {ok} ops ok, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
