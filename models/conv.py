"""The short convolution's kernel: a causal depthwise convolution over time with its own backward.

    y[b, t, c] = bias[c] + sum_{j < k} w[j, c] * x[b, t - (k - 1) + j, c]      (x = 0 before t = 0)

With s = k - 1 - j the tap's shift, tap j adds ``w[j] * x[:, :T - s]`` into ``y[:, s:]``. The
backward is the same structure turned around:

    dL/dx[:, :T - s] += w[j] * g[:, s:]          (the input gradient: g correlated with w)
    dL/dw[j]          = sum_{b, t} g[:, s:] * x[:, :T - s]
    dL/dbias          = sum_{b, t} g

Every tap of the forward and of the input gradient is an in-place multiply-add on a slice of one
output buffer (no temporary per tap); each tap's weight gradient is a product with the zero-padded
input reduced as a whole (a reduction over a slice measured several times slower on a CPU). The
composed version (a padded copy and a fresh ``[B, T, d]`` tensor per tap, autograd's backward)
spent its time on those temporaries and slice reductions, not on arithmetic
(``benchmarks/short_conv.py``).
``tests/models/test_conv.py`` checks values and gradients against ``conv1d`` in float64.
"""
from __future__ import annotations

import torch

try:  # vmap has no batching rule for addcmul_ and would loop over the members: add a product there
    from torch._C._functorch import is_batchedtensor
except ImportError:  # pragma: no cover - an older torch
    def is_batchedtensor(tensor) -> bool:
        return False


def _batched(*tensors) -> bool:
    return any(is_batchedtensor(t) for t in tensors)


def _multiply_add(out: torch.Tensor, a: torch.Tensor, w: torch.Tensor) -> None:
    """``out += a * w`` in place: one fused op, or (under vmap) a product and an in-place add."""
    if _batched(out, a, w):
        out.add_(a * w)
    else:
        out.addcmul_(a, w)


def _multiply_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """``out = a * b`` into an existing buffer (vmap has no rule for ``out=``: a copy and a product)."""
    if _batched(out, a, b):
        out.copy_(a).mul_(b)
    else:
        torch.mul(a, b, out=out)


class CausalDepthwiseConv(torch.autograd.Function):
    """``x [B, T, d]``, ``w [k, d]`` (tap j multiplies x_{t-(k-1)+j}), ``bias [d]`` -> ``[B, T, d]``."""

    generate_vmap_rule = True  # grouped training batches it with torch.func.vmap

    @staticmethod
    def forward(x, w, bias):
        T, k = x.shape[-2], w.shape[0]
        w = w.to(x.dtype)
        y = torch.addcmul(bias.to(x.dtype), x, w[k - 1])              # the bias and the tap at shift 0
        for j in range(k - 1):
            s = k - 1 - j
            if s < T:
                _multiply_add(y[..., s:, :], x[..., :T - s, :], w[j])  # in place: no temporary per tap
        return y

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w, bias = inputs
        ctx.save_for_backward(x, w)
        ctx.bias_dtype = bias.dtype

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        T, k = x.shape[-2], w.shape[0]
        wx = w.to(g.dtype)
        grad_x = g * wx[k - 1]
        for j in range(k - 1):
            s = k - 1 - j
            if s < T:
                _multiply_add(grad_x[..., :T - s, :], g[..., s:, :], wx[j])
        # each tap's weight gradient: its products written into one buffer (zeros where the tap
        # reads before t = 0), reduced as a whole: a reduction over a slice runs several times slower
        reduce = tuple(range(g.dim() - 1))                            # every axis but the channel's
        product = torch.empty_like(g)
        grad_w = []
        for j in range(k):
            s = k - 1 - j
            if s >= T:
                grad_w.append(torch.zeros_like(w[j]))
                continue
            _multiply_into(product[..., s:, :], g[..., s:, :], x[..., :T - s, :])
            product[..., :s, :].zero_()
            grad_w.append(product.sum(reduce))
        grad_w = torch.stack(grad_w)
        return grad_x, grad_w.to(w.dtype), g.sum(reduce).to(ctx.bias_dtype)


def causal_depthwise_conv(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The short convolution of ``x [B, T, d]`` with taps ``w [k, d]`` and ``bias [d]``."""
    return CausalDepthwiseConv.apply(x, w, bias)
