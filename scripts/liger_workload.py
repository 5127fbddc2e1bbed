#!/usr/bin/env python3
"""A liger-kernel 0.8.5 workload: every Triton op of liger_kernel.ops, forward and backward.

This is plain example code for liger-kernel. It calls each op the way its users do -- through the
``liger_kernel.transformers`` nn.Modules and functions where liger ships one, otherwise through the
op's ``Liger*Function.apply`` -- at LLM-like shapes (4096 tokens, hidden 4096, vocab 32000, 32 heads x
head_dim 128) in the dtypes people train in (bf16 activations and weights, fp32 where the op is usually
fed fp32, int64 labels), then runs one backward pass. Nothing here depends on any other tool.

    python3 liger_workload.py                      # every op, on CUDA if there is a GPU
    python3 liger_workload.py --ops rms_norm,rope  # a subset
    python3 liger_workload.py --list               # the op table
    TRITON_INTERPRET=1 python3 liger_workload.py --device cpu --small   # Triton's interpreter

Under TRITON_INTERPRET=1 (CPU tensors) activations default to fp32 -- the interpreter does bf16
arithmetic on raw 16-bit patterns -- and three gaps of the interpreter are filled first (see
install_interpreter_shims); liger itself is never patched.

Each op prints ``op NAME: ok (fwd+bwd) in X ms`` or ``op NAME: FAILED: <error>``; the last line is
``liger workload: N ops ok, M failed, K skipped``. The exit status is 0 even when ops fail (2 when
liger_kernel cannot be imported).

Ops left out: ``vocab_parallel_cross_entropy`` and ``LigerFusedLinearScaledCrossEntropyTPFunction``
need a torch.distributed tensor-parallel group; ``LigerFusedLinearScaledCrossEntropyFunction`` runs a
CuTe-DSL kernel on Hopper and a pure-PyTorch fallback elsewhere (no Triton); the ``cute``/``cutile``/
``cutedsl`` implementations need extra packages; ``liger_kernel.chunked_loss`` is torch.compile code,
not liger Triton kernels. They are listed as skipped.
"""

import argparse
import os
import sys
import time
import traceback
import types

# --------------------------------------------------------------------------------------------------
# Options that must be read before liger_kernel is imported.
# --------------------------------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default=None,
                   help="where the tensors live (default: cuda if available, else cpu; cpu implies --small "
                        "and needs TRITON_INTERPRET=1)")
    p.add_argument("--small", action="store_true", help="tiny shapes (batch 2, seq 4, hidden 64, vocab 128)")
    p.add_argument("--ops", default=None, help="comma-separated op names to run (default: all)")
    p.add_argument("--list", action="store_true", help="list the ops and the liger API each one calls, then exit")
    p.add_argument("--act-dtype", choices=["bf16", "fp16", "fp32"], default=None,
                   help="dtype of activations and weights (default: bf16; fp32 under TRITON_INTERPRET=1, "
                        "whose interpreter computes bf16 arithmetic on the raw 16-bit patterns)")
    p.add_argument("--impl", default="nvidia-triton",
                   help="liger_kernel.set_impl() pin for the ops liger dispatches by implementation "
                        "(rms_norm, layer_norm, rope, cross_entropy, ...); 'auto' lets liger choose "
                        "(default: nvidia-triton, so every op runs liger's Triton kernels)")
    p.add_argument("--autotune", action="store_true",
                   help="let fused_moe autotune its GEMMs (liger's default; this program sets "
                        "LIGER_FUSED_MOE_AUTOTUNE=0 unless this flag is given or the variable is already set)")
    p.add_argument("--no-interpreter-shims", action="store_true",
                   help="under TRITON_INTERPRET=1, do not work around the Triton interpreter's gaps "
                        "(see install_interpreter_shims)")
    p.add_argument("--traceback", action="store_true", help="print the full traceback of a failing op")
    return p.parse_args(argv)


# --------------------------------------------------------------------------------------------------
# Triton interpreter (TRITON_INTERPRET=1, CPU tensors)
# --------------------------------------------------------------------------------------------------


def install_interpreter_shims():
    """Fill three gaps of Triton's interpreter that compiled Triton does not have; liger is untouched.

    1. A Python float kernel argument reaches the kernel as a Python float, where compiled Triton passes
       an fp32 scalar: liger's ``eps.to(tl.float32)`` (rms_norm, layer_norm, kl_div, swiglu, ...) fails.
       Floats are passed as fp32 scalars instead.
    2. ``triton.language.extra.libdevice`` functions are empty stubs in the interpreter (they return
       None): liger imports ``rsqrt`` and ``tanh`` from it. They get interpreter versions built on
       ``tl.rsqrt`` / ``tl.exp``; this must run before liger_kernel is imported.
    3. An autotuned kernel with several configs benchmarks through the active GPU driver, and there is
       none: each config is run once and timed on the host instead.

    Returns the names of the shims installed. Run only under TRITON_INTERPRET=1.
    """
    import numpy as np
    import triton
    import triton.language as tl

    done = []
    try:
        from triton.runtime import interpreter as interp

        if hasattr(interp, "_implicit_cvt") and hasattr(interp, "TensorHandle"):
            orig_cvt = interp._implicit_cvt

            def _implicit_cvt(arg):
                if isinstance(arg, float):
                    return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
                return orig_cvt(arg)

            interp._implicit_cvt = _implicit_cvt
            done.append("float-args-as-fp32")
    except Exception:
        pass

    try:
        from triton.language.extra import libdevice

        def rsqrt(x):
            return tl.rsqrt(x)

        def tanh(x):
            return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)

        for name, fn in (("rsqrt", rsqrt), ("tanh", tanh)):
            if hasattr(libdevice, name):
                setattr(libdevice, name, fn)
        done.append("libdevice-rsqrt-tanh")
    except Exception:
        pass

    try:
        from triton.runtime.autotuner import Autotuner

        def _host_bench(kernel_call, quantiles=None):
            t0 = time.perf_counter()
            try:
                kernel_call()
                ms = (time.perf_counter() - t0) * 1e3
            except Exception as exc:
                # A config that fails a tl.static_assert is a compile error on the GPU, where the
                # autotuner scores it inf and moves on; the interpreter raises it at run time.
                if not isinstance(exc.__cause__, AssertionError):
                    raise
                ms = float("inf")
            return [ms] * len(quantiles) if quantiles else ms

        Autotuner.do_bench = property(lambda self: self._do_bench or _host_bench)
        done.append("autotune-host-bench")
    except Exception:
        pass

    import warnings  # masked-off lanes of a block compute 0/0 in numpy; compiled Triton never sees them

    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(triton|numpy)\.")
    del triton
    return done


# --------------------------------------------------------------------------------------------------
# Op registry
# --------------------------------------------------------------------------------------------------

OPS = []  # (name, api, fn, cuda_only_reason)
SKIPPED = [
    ("vocab_parallel_cross_entropy", "liger_kernel.transformers.LigerVocabParallelCrossEntropy",
     "needs a torch.distributed tensor-parallel process group (multi-GPU)"),
    ("fused_linear_scaled_cross_entropy", "liger_kernel.ops.LigerFusedLinearScaledCrossEntropyFunction",
     "CuTe-DSL kernel on sm_90 (needs nvidia-cutlass-dsl), pure-PyTorch fallback elsewhere: no Triton kernel"),
    ("fused_linear_scaled_cross_entropy_tp", "liger_kernel.ops.LigerFusedLinearScaledCrossEntropyTPFunction",
     "needs a torch.distributed tensor-parallel group and the native liger_cute_kernels package"),
]


def op(name, api, cuda_only=None):
    def register(fn):
        OPS.append((name, api, fn, cuda_only))
        return fn

    return register


class Env:
    """Device, dtypes and shapes shared by the ops."""

    def __init__(self, device, small, act_dtype, interpreting=False):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.small = small
        self.act = act_dtype  # activations and weights: bf16, as in mixed-precision training
        self.fp32 = torch.float32
        if small:
            self.B, self.T, self.H, self.V, self.I = 2, 4, 64, 128, 128
            self.n_heads, self.n_kv, self.head_dim = 4, 2, 16
        else:
            self.B, self.T, self.H, self.V, self.I = 2, 2048, 4096, 32000, 11008
            self.n_heads, self.n_kv, self.head_dim = 32, 8, 128
        self.BT = self.B * self.T
        # Triton's interpreter has no 16-bit float atomic_add; ops whose kernels atomically accumulate
        # into a tensor of the activation dtype use fp32 under it.
        self.atomic_dtype = self.fp32 if interpreting else self.act

    # tensors -------------------------------------------------------------------------------------
    def randn(self, *shape, dtype=None, grad=False, scale=1.0):
        t = self.torch.randn(*shape, device=self.device, dtype=self.fp32) * scale
        t = t.to(dtype or self.fp32)
        return t.requires_grad_(grad)

    def labels(self, n, vocab, ignore_frac=0.05):
        """int64 next-token labels with a few ignore_index (-100) positions, like padded SFT batches."""
        torch = self.torch
        y = torch.randint(0, vocab, (n,), device=self.device, dtype=torch.int64)
        drop = torch.rand(n, device=self.device) < ignore_frac
        return y.masked_fill(drop, -100)

    def module(self, m, dtype=None):
        return m.to(device=self.device, dtype=dtype or self.fp32)

    def config(self, **kw):
        return types.SimpleNamespace(**kw)

    def rope_cos_sin(self, seq, dim, dtype, base=10000.0):
        """HF LlamaRotaryEmbedding: cos/sin of shape (1, seq, dim) with the half-dim frequencies repeated."""
        torch = self.torch
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=self.device, dtype=torch.float32) / dim))
        pos = torch.arange(seq, device=self.device, dtype=torch.float32)
        freqs = torch.outer(pos, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None].to(dtype), emb.sin()[None].to(dtype)


def backward(*outs):
    """One backward pass through every output, with a random upstream gradient for non-scalars."""
    import torch

    tensors, grads = [], []
    for o in outs:
        if o is None or not o.requires_grad:
            continue
        tensors.append(o)
        grads.append(None if o.dim() == 0 else torch.randn_like(o))
    torch.autograd.backward(tensors, grads)


# --------------------------------------------------------------------------------------------------
# Losses
# --------------------------------------------------------------------------------------------------


@op("cross_entropy", "liger_kernel.transformers.LigerCrossEntropyLoss (dispatch -> LigerCrossEntropyFunction)")
def op_cross_entropy(e):
    from liger_kernel.transformers import LigerCrossEntropyLoss

    logits = e.randn(e.BT, e.V, dtype=e.act, grad=True)
    target = e.labels(e.BT, e.V)
    loss_fn = LigerCrossEntropyLoss(ignore_index=-100, reduction="mean")

    def run():
        backward(loss_fn(logits, target))

    return run


@op("fused_linear_cross_entropy",
    "liger_kernel.transformers.LigerFusedLinearCrossEntropyLoss (LigerFusedLinearCrossEntropyFunction)")
def op_fused_linear_cross_entropy(e):
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    hidden = e.randn(e.BT, e.H, dtype=e.act, grad=True)
    lm_head = e.randn(e.V, e.H, dtype=e.act, grad=True, scale=0.02)
    target = e.labels(e.BT, e.V)
    loss_fn = LigerFusedLinearCrossEntropyLoss(ignore_index=-100, reduction="mean")

    def run():
        backward(loss_fn(lm_head, hidden, target))

    return run


@op("jsd", "liger_kernel.transformers.LigerJSD (LigerJSDFunction)")
def op_jsd(e):
    from liger_kernel.transformers import LigerJSD

    student_logits = e.randn(e.BT, e.V, grad=True)
    teacher_logits = e.randn(e.BT, e.V)
    shift_labels = e.labels(e.BT, e.V)
    loss_fn = LigerJSD(beta=0.5, ignore_index=-100)

    def run():
        log_q = student_logits.log_softmax(dim=-1)
        log_p = teacher_logits.log_softmax(dim=-1)
        backward(loss_fn(log_q, log_p, shift_labels))

    return run


@op("fused_linear_jsd", "liger_kernel.transformers.LigerFusedLinearJSD (LigerFusedLinearJSDFunction)")
def op_fused_linear_jsd(e):
    from liger_kernel.transformers import LigerFusedLinearJSD

    student_in = e.randn(e.BT, e.H, dtype=e.act, grad=True)
    student_w = e.randn(e.V, e.H, dtype=e.act, grad=True, scale=0.02)
    teacher_in = e.randn(e.BT, e.H, dtype=e.act)
    teacher_w = e.randn(e.V, e.H, dtype=e.act, scale=0.02)
    shift_labels = e.labels(e.BT, e.V)
    loss_fn = LigerFusedLinearJSD(jsd_beta=0.5, ignore_index=-100, temperature=1.0)

    def run():
        backward(loss_fn(student_in, student_w, teacher_in, teacher_w, shift_labels))

    return run


@op("kl_div", "liger_kernel.transformers.LigerKLDIVLoss (LigerKLDivLossFunction)")
def op_kl_div(e):
    from liger_kernel.transformers import LigerKLDIVLoss

    student_logits = e.randn(e.BT, e.V, grad=True)
    teacher_logits = e.randn(e.BT, e.V)
    loss_fn = LigerKLDIVLoss(reduction="batchmean", log_target=False)

    def run():
        y_pred = student_logits.log_softmax(dim=-1)
        y_true = teacher_logits.softmax(dim=-1)
        backward(loss_fn(y_pred, y_true))

    return run


@op("fused_linear_kl_div", "liger_kernel.transformers.LigerFusedLinearKLDivLoss (LigerFusedLinearKLDivFunction)")
def op_fused_linear_kl_div(e):
    from liger_kernel.transformers import LigerFusedLinearKLDivLoss

    student_in = e.randn(e.BT, e.H, dtype=e.act, grad=True)
    student_w = e.randn(e.V, e.H, dtype=e.act, grad=True, scale=0.02)
    target = e.randn(e.BT, e.V).softmax(dim=-1)  # cached teacher probabilities (fp32)
    shift_labels = e.labels(e.BT, e.V)
    loss_fn = LigerFusedLinearKLDivLoss(reduction="batchmean", ignore_index=-100)

    def run():
        backward(loss_fn(student_in, student_w, target, shift_labels))

    return run


@op("tvd", "liger_kernel.transformers.LigerTVDLoss (LigerTVDLossFunction)")
def op_tvd(e):
    from liger_kernel.transformers import LigerTVDLoss

    student_logits = e.randn(e.BT, e.V, grad=True)
    teacher_logits = e.randn(e.BT, e.V)
    shift_labels = e.labels(e.BT, e.V)
    loss_fn = LigerTVDLoss(reduction="batchmean", ignore_index=-100)

    def run():
        p = student_logits.softmax(dim=-1)
        q = teacher_logits.softmax(dim=-1)
        backward(loss_fn(p, q, shift_labels))

    return run


@op("fused_ce_tvd", "liger_kernel.transformers.LigerFusedCETVDLoss (LigerFusedCETVDFunction)")
def op_fused_ce_tvd(e):
    from liger_kernel.transformers import LigerFusedCETVDLoss

    student_logits = e.randn(e.BT, e.V, dtype=e.act, grad=True)
    teacher_logits = e.randn(e.BT, e.V, dtype=e.act)
    target = e.labels(e.BT, e.V)
    loss_fn = LigerFusedCETVDLoss(ignore_index=-100)

    def run():
        ce, tvd = loss_fn(student_logits, teacher_logits, target)
        mask = (target != -100).float()
        loss = ((ce + 0.5 * tvd) * mask).sum() / mask.sum()
        backward(loss)

    return run


@op("grpo_loss", "liger_kernel.transformers.grpo_loss.triton_grpo_loss (GrpoLossFunction)")
def op_grpo_loss(e):
    from liger_kernel.transformers.grpo_loss import triton_grpo_loss

    torch = e.torch
    B, L = (2, e.T) if e.small else (4, 512)
    logits = e.randn(B, L + 1, e.V, dtype=e.act, grad=True)  # (B, L+1, V): last position is dropped
    completion_ids = torch.randint(0, e.V, (B, L), device=e.device, dtype=torch.int64)
    with torch.no_grad():
        logp = logits[:, :-1].float().log_softmax(-1).gather(-1, completion_ids[..., None])[..., 0]
    old_logp = (logp + 0.05 * e.randn(B, L)).contiguous()
    ref_logp = (logp + 0.05 * e.randn(B, L)).contiguous()
    advantages = e.randn(B)
    completion_mask = torch.ones(B, L, device=e.device, dtype=torch.int64)
    completion_mask[:, -max(1, L // 8):] = 0  # padded tail

    def run():
        loss, _metrics = triton_grpo_loss(
            logits, old_logp, ref_logp, completion_ids, advantages, completion_mask,
            temperature=0.9, beta=0.04, eps_low=0.2, eps_high=0.28, loss_type="dapo", reduce=True,
        )
        backward(loss)

    return run


# --------------------------------------------------------------------------------------------------
# Norms
# --------------------------------------------------------------------------------------------------


@op("rms_norm", "liger_kernel.transformers.LigerRMSNorm (LigerRMSNormFunction)")
def op_rms_norm(e):
    from liger_kernel.transformers import LigerRMSNorm

    norm = e.module(LigerRMSNorm(e.H, eps=1e-6), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(norm(x))

    return run


@op("fused_add_rms_norm", "liger_kernel.transformers.LigerFusedAddRMSNorm (LigerFusedAddRMSNormFunction)")
def op_fused_add_rms_norm(e):
    from liger_kernel.transformers import LigerFusedAddRMSNorm

    norm = e.module(LigerFusedAddRMSNorm(e.H, eps=1e-6), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)
    residual = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        y, new_residual = norm(x, residual)
        backward(y, new_residual)

    return run


@op("layer_norm", "liger_kernel.transformers.LigerLayerNorm (dispatch -> LigerLayerNormFunction)")
def op_layer_norm(e):
    from liger_kernel.transformers import LigerLayerNorm

    norm = e.module(LigerLayerNorm(e.H, eps=1e-6, bias=True), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(norm(x))

    return run


@op("group_norm", "liger_kernel.transformers.group_norm.LigerGroupNorm (LigerGroupNormFunction)")
def op_group_norm(e):
    from liger_kernel.transformers.group_norm import LigerGroupNorm

    batch, channels, groups, spatial = (2, 8, 4, 16) if e.small else (16, 512, 32, 1024)
    norm = e.module(LigerGroupNorm(num_channels=channels, num_groups=groups, eps=1e-6, bias=True))
    x = e.randn(batch, channels, spatial, grad=True)

    def run():
        backward(norm(x))

    return run


@op("poly_norm", "liger_kernel.transformers.LigerPolyNorm (LigerPolyNormFunction)")
def op_poly_norm(e):
    from liger_kernel.transformers import LigerPolyNorm

    norm = e.module(LigerPolyNorm(eps=1e-6), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(norm(x))

    return run


@op("modulated_rms_norm", "liger_kernel.transformers.LigerModulatedRMSNorm (LigerModulatedRMSNormFunction)")
def op_modulated_rms_norm(e):
    from liger_kernel.transformers import LigerModulatedRMSNorm

    norm = e.module(LigerModulatedRMSNorm(e.H, eps=1e-6), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)
    scale = e.randn(e.B, e.H, dtype=e.act, grad=True, scale=0.1)  # AdaLN: one modulation row per sample
    shift = e.randn(e.B, e.H, dtype=e.act, grad=True, scale=0.1)

    def run():
        backward(norm(x, scale, shift))

    return run


@op("dyt", "liger_kernel.transformers.LigerDyT (LigerDyTFunction)")
def op_dyt(e):
    from liger_kernel.transformers import LigerDyT

    dyt = e.module(LigerDyT(e.H, beta=True), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(dyt(x))

    return run


# --------------------------------------------------------------------------------------------------
# Positional embeddings
# --------------------------------------------------------------------------------------------------


@op("rope", "liger_kernel.transformers.liger_rotary_pos_emb (dispatch -> LigerRopeFunction)")
def op_rope(e):
    from liger_kernel.transformers import liger_rotary_pos_emb

    q = e.randn(e.B, e.n_heads, e.T, e.head_dim, dtype=e.act, grad=True)
    k = e.randn(e.B, e.n_kv, e.T, e.head_dim, dtype=e.act, grad=True)
    cos, sin = e.rope_cos_sin(e.T, e.head_dim, e.act)

    def run():
        q_out, k_out = liger_rotary_pos_emb(q, k, cos, sin)
        backward(q_out, k_out)

    return run


@op("qwen2vl_mrope",
    "liger_kernel.transformers.qwen2vl_mrope.liger_multimodal_rotary_pos_emb (LigerQwen2VLMRopeFunction)")
def op_qwen2vl_mrope(e):
    from liger_kernel.transformers.qwen2vl_mrope import liger_multimodal_rotary_pos_emb

    torch = e.torch
    half = e.head_dim // 2
    mrope_section = [half // 4, (half - half // 4) // 2, half - half // 4 - (half - half // 4) // 2]  # 16,24,24
    q = e.randn(e.B, e.n_heads, e.T, e.head_dim, dtype=e.act, grad=True)
    k = e.randn(e.B, e.n_kv, e.T, e.head_dim, dtype=e.act, grad=True)
    # (3, B, T, head_dim): temporal / height / width position streams
    inv_freq = 1.0 / (1000000.0 ** (torch.arange(0, e.head_dim, 2, device=e.device, dtype=torch.float32)
                                    / e.head_dim))
    pos = torch.arange(e.T, device=e.device, dtype=torch.float32)
    pos3 = torch.stack([pos, pos // 2, pos % 7])[:, None, :].expand(3, e.B, e.T)
    freqs = pos3[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(e.act).contiguous(), emb.sin().to(e.act).contiguous()

    def run():
        q_out, k_out = liger_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section)
        backward(q_out, k_out)

    return run


@op("llama4_rope", "liger_kernel.transformers.liger_llama4_text_rotary_pos_emb (LigerLlama4RopeFunction)")
def op_llama4_rope(e):
    from liger_kernel.transformers import liger_llama4_text_rotary_pos_emb

    torch = e.torch
    # Llama4 layout: (batch, seq, heads, head_dim), complex freqs_cis (seq, head_dim // 2)
    xq = e.randn(e.B, e.T, e.n_heads, e.head_dim, dtype=e.act, grad=True)
    xk = e.randn(e.B, e.T, e.n_kv, e.head_dim, dtype=e.act, grad=True)
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, e.head_dim, 2, device=e.device, dtype=torch.float32)
                                   / e.head_dim))
    freqs = torch.outer(torch.arange(e.T, device=e.device, dtype=torch.float32), inv_freq)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64

    def run():
        # the kernel rotates its (contiguous) inputs in place, as after q_proj(...).view(...)
        q_in, k_in = xq * 1, xk * 1
        q_out, k_out = liger_llama4_text_rotary_pos_emb(q_in, k_in, freqs_cis)
        backward(q_out, k_out)

    return run


# --------------------------------------------------------------------------------------------------
# Activations and MLPs
# --------------------------------------------------------------------------------------------------


def mlp_op(e, cls, hidden_act):
    """A liger MLP module (`cls`) forward and backward on one batch of activations."""
    cfg = e.config(hidden_size=e.H, intermediate_size=e.I, hidden_act=hidden_act)
    mlp = e.module(cls(cfg), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(mlp(x))

    return run


@op("swiglu", "liger_kernel.transformers.LigerSwiGLUMLP (LigerSiLUMulFunction)")
def op_swiglu(e):
    from liger_kernel.transformers import LigerSwiGLUMLP

    return mlp_op(e, LigerSwiGLUMLP, "silu")


@op("fused_gate_up_swiglu", "liger_kernel.ops.LigerFusedGateUpSiLUMulFunction (Megatron linear_fc1 layout)")
def op_fused_gate_up_swiglu(e):
    from liger_kernel.ops import LigerFusedGateUpSiLUMulFunction

    gate_up = e.randn(e.BT, 2 * e.I, dtype=e.act, grad=True)

    def run():
        backward(LigerFusedGateUpSiLUMulFunction.apply(gate_up, False))

    return run


@op("geglu", "liger_kernel.transformers.LigerGEGLUMLP (LigerGELUMulFunction)")
def op_geglu(e):
    from liger_kernel.transformers import LigerGEGLUMLP

    return mlp_op(e, LigerGEGLUMLP, "gelu_pytorch_tanh")


@op("relu_squared", "liger_kernel.transformers.LigerReLUSquared (LigerReLUSquaredFunction)")
def op_relu_squared(e):
    from liger_kernel.transformers import LigerReLUSquared

    act = LigerReLUSquared()
    x = e.randn(e.B, e.T, e.I, dtype=e.act, grad=True)

    def run():
        backward(act(x))

    return run


@op("tiled_mlp", "liger_kernel.transformers.LigerTiledSwiGLUMLP (LigerTiledMLPFunction + LigerSiLUMulFunction)")
def op_tiled_mlp(e):
    from liger_kernel.transformers import LigerTiledSwiGLUMLP

    cfg = e.config(hidden_size=e.H, intermediate_size=e.I, hidden_act="silu")
    mlp = e.module(LigerTiledSwiGLUMLP(cfg, num_shards=2 if e.small else 4), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(mlp(x))

    return run


@op("fused_moe", "liger_kernel.transformers.LigerExperts (LigerFusedMoEFunction)")
def op_fused_moe(e):
    from liger_kernel.transformers import LigerExperts

    torch = e.torch
    n_experts, top_k = (4, 2) if e.small else (8, 2)
    moe_inter = e.I // 2 if e.small else 1792
    cfg = e.config(hidden_size=e.H, num_local_experts=n_experts, intermediate_size=moe_inter, hidden_act="silu")
    experts = LigerExperts(cfg)
    with torch.no_grad():  # LigerExperts allocates its parameters with torch.empty
        experts.gate_up_proj.normal_(0.0, 0.02)
        experts.down_proj.normal_(0.0, 0.02)
    dtype = e.atomic_dtype  # bf16 on the GPU; backward atomically adds into a tensor of this dtype
    experts = e.module(experts, dtype)
    x = e.randn(e.B, e.T, e.H, dtype=dtype, grad=True)
    router_logits = e.randn(e.B, e.T, n_experts, grad=True)  # the router learns through the top-k weights

    def run():
        top_w, top_i = torch.topk(router_logits.softmax(-1), top_k, dim=-1)
        top_w = (top_w / top_w.sum(-1, keepdim=True)).to(dtype)
        backward(experts(x, top_i, top_w))

    return run


@op("softmax", "liger_kernel.transformers.LigerSoftmax (LigerSoftmaxFunction)")
def op_softmax(e):
    from liger_kernel.transformers import LigerSoftmax

    sm = LigerSoftmax()
    seq = e.T if e.small else 512
    scores = e.randn(e.B, e.n_heads, seq, seq, dtype=e.act, grad=True)

    def run():
        backward(sm(scores))

    return run


@op("sparsemax", "liger_kernel.transformers.LigerSparsemax (LigerSparsemaxFunction)")
def op_sparsemax(e):
    from liger_kernel.transformers import LigerSparsemax

    sm = LigerSparsemax(dim=-1)
    x = e.randn(e.BT, 64 if e.small else 1024, grad=True)

    def run():
        backward(sm(x))

    return run


# --------------------------------------------------------------------------------------------------
# Attention-side ops
# --------------------------------------------------------------------------------------------------


@op("multi_token_attention", "liger_kernel.transformers.LigerMultiTokenAttention (LigerMultiTokenAttentionFunction)")
def op_multi_token_attention(e):
    from liger_kernel.transformers import LigerMultiTokenAttention

    seq = 8 if e.small else 512
    mta = e.module(LigerMultiTokenAttention(e.n_heads, e.n_heads, kernel_size=3, padding=1))
    scores = e.randn(e.B, e.n_heads, seq, seq, grad=True)  # pre-softmax q.k^T scores (fp32)

    def run():
        backward(mta(scores))

    return run


@op("fused_neighborhood_attention",
    "liger_kernel.transformers.fused_neighborhood_attention.LigerFusedNeighborhoodAttention "
    "(LigerFusedNeighborhoodAttentionFunction)")
def op_fused_neighborhood_attention(e):
    from liger_kernel.transformers.fused_neighborhood_attention import LigerFusedNeighborhoodAttention

    hidden, heads, seq = (64, 4, 16) if e.small else (1024, 16, 1024)
    attn = e.module(LigerFusedNeighborhoodAttention(hidden, heads, kernel_size=7, dilation=1), e.act)
    x = e.randn(e.B, seq, hidden, dtype=e.act, grad=True)

    def run():
        backward(attn(x))

    return run


@op("mhc", "liger_kernel.transformers.LigerMHC (LigerMHCCoeffsFunction, LigerMHCPreFunction, "
    "LigerMHCPostResFunction)")
def op_mhc(e):
    from liger_kernel.transformers import LigerMHC

    torch = e.torch
    hc = 4
    c = e.H  # each residual stream carries the full hidden size
    layer = torch.nn.Linear(c, c, bias=False, device=e.device, dtype=e.act)
    # bf16/fp16 streams use tensor cores; fp32 is accepted only with allow_fp32=True
    mhc = LigerMHC(layer, hc=hc, c=c, phi_dtype=e.act, allow_fp32=e.act == e.fp32).to(e.device)
    x = e.randn(e.B, e.T, hc, c, dtype=e.act, grad=True)  # [batch, seq, streams, channels]

    def run():
        backward(mhc(x))

    return run


@op("attn_res", "liger_kernel.transformers.functional.liger_attn_res (LigerAttnResFunction)")
def op_attn_res(e):
    from liger_kernel.transformers.functional import liger_attn_res

    n_blocks, seq = (4, e.T) if e.small else (8, 1024)
    block_outputs = e.randn(n_blocks, e.B, seq, e.H, dtype=e.act, grad=True)  # [N, B, T, D]
    w_query = e.randn(e.H, dtype=e.act, grad=True, scale=0.02)
    w_norm = e.torch.ones(e.H, device=e.device, dtype=e.act, requires_grad=True)

    def run():
        backward(liger_attn_res(block_outputs, w_query, w_norm, eps=1e-6))

    return run


# --------------------------------------------------------------------------------------------------
# Experimental
# --------------------------------------------------------------------------------------------------


@op("embedding", "liger_kernel.transformers.experimental.LigerEmbedding (LigerEmbeddingFunction)")
def op_embedding(e):
    from liger_kernel.transformers.experimental import LigerEmbedding

    emb = e.module(LigerEmbedding(e.V, e.H), e.atomic_dtype)  # backward atomically adds into the weight grad
    ids = e.torch.randint(0, e.V, (e.B, e.T), device=e.device, dtype=e.torch.int64)

    def run():
        backward(emb(ids))

    return run


@op("mm_int8int2", "liger_kernel.ops.experimental.mm_int8int2.matmul (int8 x packed 2-bit; forward only)")
def op_mm_int8int2(e):
    from liger_kernel.ops.experimental.mm_int8int2 import matmul
    from liger_kernel.ops.experimental.mm_int8int2 import pack_weights

    torch = e.torch
    M, K, N = (16, 512, 32) if e.small else (4096, 4096, 4096)  # configs need K % (4 * BLOCK_SIZE_K) == 0
    a = torch.randint(-128, 127, (M, K), device=e.device, dtype=torch.int8)
    w = torch.randint(-1, 2, (K, N), device=e.device, dtype=torch.int32)  # ternary weights
    packed = pack_weights(w.clone(), bits=2)  # (K // 4, N) uint8

    def run():
        matmul(a, packed)
        return "fwd only: inference kernel without autograd"

    return run


# --------------------------------------------------------------------------------------------------
# Autotuned fused MLP
# --------------------------------------------------------------------------------------------------


@op("mlp", "liger_kernel.transformers.LigerMLP (LigerMLPFunction: fused gate/up GEMM + SwiGLU, TMA)",
    cuda_only="LigerMLPFunction asserts input.is_cuda (TMA tensor descriptors)")
def op_mlp(e):
    # Last on purpose: its Triton kernels autotune over 32 configs (forward and backward), which
    # dominates a first run's wall time while Triton compiles them.
    from liger_kernel.transformers import LigerMLP

    cfg = e.config(hidden_size=e.H, intermediate_size=e.I, hidden_act="silu")
    mlp = e.module(LigerMLP(cfg), e.act)
    x = e.randn(e.B, e.T, e.H, dtype=e.act, grad=True)

    def run():
        backward(mlp(x))

    return run


# --------------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------------


def one_line(exc):
    msg = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        f = tb[-1]
        text += f" (at {os.path.basename(f.filename)}:{f.lineno})"
    return text[:400]


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    if args.list:
        for name, api, _fn, cuda_only in OPS:
            print(f"{name:30s} {api}" + (f"  [cuda only: {cuda_only}]" if cuda_only else ""))
        for name, api, why in SKIPPED:
            print(f"{name:30s} {api}  [skipped: {why}]")
        return 0

    if not args.autotune:
        os.environ.setdefault("LIGER_FUSED_MOE_AUTOTUNE", "0")

    try:
        import torch
    except ImportError as exc:
        print(f"liger workload: cannot import torch: {exc}", file=sys.stderr)
        return 2
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        print("liger workload: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    small = args.small or device == "cpu"
    interpreting = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
    shims = []
    if device == "cpu" and not interpreting:
        print("liger workload: note: Triton kernels run on CPU tensors only under TRITON_INTERPRET=1")
    if interpreting and not args.no_interpreter_shims:
        shims = install_interpreter_shims()  # before liger_kernel binds libdevice functions
    try:
        import liger_kernel
        import liger_kernel.ops  # noqa: F401
        import liger_kernel.transformers  # noqa: F401
    except Exception as exc:  # liger_kernel missing, or one of its own dependencies
        missing = getattr(exc, "name", None)
        if isinstance(exc, ImportError) and missing and missing.split(".")[0] != "liger_kernel":
            hint = f"liger_kernel needs the Python package '{missing.split('.')[0]}', which is not installed"
        else:
            hint = "install liger-kernel or put its source tree on PYTHONPATH"
        print(f"liger workload: cannot import liger_kernel ({type(exc).__name__}: {exc}); {hint}", file=sys.stderr)
        return 2

    if args.impl != "auto" and hasattr(liger_kernel, "set_impl"):
        liger_kernel.set_impl(args.impl)

    selected, wanted = OPS, []
    if args.ops:
        wanted = [w.strip() for w in args.ops.split(",") if w.strip()]
        known = {name for name, *_ in OPS} | {name for name, *_ in SKIPPED}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            print(f"liger workload: unknown op(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
            return 2
        selected = [o for o in OPS if o[0] in wanted]
    skipped_static = [s for s in SKIPPED if not wanted or s[0] in wanted]

    version = getattr(liger_kernel, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v

            version = _v("liger-kernel")
        except Exception:
            version = "source tree"
    act_name = args.act_dtype or ("fp32" if interpreting else "bf16")
    act_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[act_name]
    where = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"liger workload: liger_kernel {version} from {os.path.dirname(liger_kernel.__file__)}, "
          f"torch {torch.__version__}, device {device} ({where}), {'small' if small else 'LLM-sized'} shapes, "
          f"activations {act_name}, impl {args.impl}")
    if shims:
        print(f"liger workload: Triton interpreter shims: {', '.join(shims)}")

    env = Env(device, small, act_dtype, interpreting)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    n_ok = n_failed = n_skipped = 0
    t_start = time.perf_counter()
    for name, _api, fn, cuda_only in selected:
        if cuda_only and device != "cuda":
            print(f"op {name}: skipped ({cuda_only})")
            n_skipped += 1
            continue
        torch.manual_seed(0)
        try:
            run = fn(env)
            sync()
            t0 = time.perf_counter()
            note = run()
            sync()
            ms = (time.perf_counter() - t0) * 1e3
            print(f"op {name}: ok ({note or 'fwd+bwd'}) in {ms:.1f} ms", flush=True)
            n_ok += 1
        except Exception as exc:
            print(f"op {name}: FAILED: {one_line(exc)}", flush=True)
            if args.traceback:
                traceback.print_exc()
            n_failed += 1
        finally:
            run = None
            if device == "cuda":
                torch.cuda.empty_cache()
    for name, _api, why in skipped_static:
        print(f"op {name}: skipped ({why})")
        n_skipped += 1
    print(f"liger workload: total {time.perf_counter() - t_start:.1f} s")
    print(f"liger workload: {n_ok} ops ok, {n_failed} failed, {n_skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
