"""The short convolution's kernel (``models/conv.py``) against ``conv1d`` itself (padding k-1,
first T outputs), in float64: values, and the gradients of input, taps and bias; under
``torch.func.vmap`` too (grouped training batches it)."""
import pytest
import torch
import torch.nn.functional as F

from evalsuite.models.backbone import ShortConv
from evalsuite.models.conv import causal_depthwise_conv


def reference(x, weight, bias):  # x [B, T, d], weight [d, 1, k] (Conv1d's)
    k, T = weight.shape[-1], x.shape[1]
    return F.conv1d(x.transpose(1, 2), weight, bias, padding=k - 1, groups=x.shape[-1])[..., :T].transpose(1, 2)


CASES = [(1, 5), (3, 2), (4, 3), (4, 4), (4, 17), (4, 64), (6, 9)]


@pytest.mark.parametrize("kernel, T", CASES, ids=[f"k{k}-T{t}" for k, t in CASES])
def test_values_and_gradients_equal_conv1d(kernel, T):
    torch.manual_seed(0)
    conv = ShortConv(6, kernel).double()
    torch.nn.init.normal_(conv.conv.bias)
    x = torch.randn(3, T, 6, dtype=torch.float64, requires_grad=True)
    ours = conv(x)
    ref = reference(x, conv.conv.weight, conv.conv.bias)
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(ref)
    a = torch.autograd.grad(ours, (x, conv.conv.weight, conv.conv.bias), g)
    b = torch.autograd.grad(ref, (x, conv.conv.weight, conv.conv.bias), g)
    for u, v in zip(a, b):
        torch.testing.assert_close(u, v, rtol=1e-12, atol=1e-12)


def test_gradcheck():
    x = torch.randn(2, 7, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(causal_depthwise_conv, (x, w, b))


def test_vmapped_over_members_equals_each_member_alone():
    """As grouped training calls it: parameters and inputs stacked on a leading member axis."""
    torch.manual_seed(0)
    G, k = 3, 4
    x = torch.randn(G, 2, 10, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(G, k, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(G, 5, dtype=torch.float64, requires_grad=True)
    batched = torch.func.vmap(causal_depthwise_conv)(x, w, b)
    alone = torch.stack([causal_depthwise_conv(x[i], w[i], b[i]) for i in range(G)])
    torch.testing.assert_close(batched, alone)
    g = torch.randn_like(batched)
    for u, v in zip(torch.autograd.grad(batched, (x, w, b), g), torch.autograd.grad(alone, (x, w, b), g)):
        torch.testing.assert_close(u, v)
