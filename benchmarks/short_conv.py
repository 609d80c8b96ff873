"""The short convolution alone: forward and backward of one layer's causal depthwise convolution
at the default size (batch 64, T 64, d 64, kernel 4), three ways:

- ``fused``: ``evalsuite.models.conv.causal_depthwise_conv`` (in-place taps, its own backward);
- ``composed``: the previous implementation, k shifted ``addcmul`` ops with autograd's backward;
- ``conv1d``: ``torch.nn.functional.conv1d`` with the transposes around it.

Each round measures every implementation in a fresh process, in turn (so none benefits from
another's warm caches or allocator state); the figure is the median over rounds, in ms per
forward+backward. For the conv's share of a whole training step, compare the conv_kernel 4 and 0
rows of ``benchmarks/train_throughput.py``.

    python benchmarks/short_conv.py [--rounds 5] [--reps 200] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

B, T, D, K = 64, 64, 64, 4


def composed(x, w, b):  # the implementation before models/conv.py
    k, T_ = w.shape[0], x.shape[1]
    padded = F.pad(x, (0, 0, k - 1, 0))
    y = torch.addcmul(b, padded[:, k - 1:], w[k - 1])
    for j in range(k - 1):
        y = torch.addcmul(y, padded[:, j:j + T_], w[j])
    return y


def conv1d(x, w, b):
    return F.conv1d(x.transpose(1, 2), w.t()[:, None], b, padding=w.shape[0] - 1,
                    groups=x.shape[-1])[..., :x.shape[1]].transpose(1, 2)


def measure(name: str, reps: int, threads: int) -> float:
    from evalsuite.models.conv import causal_depthwise_conv

    torch.set_num_threads(threads)
    f = {"fused": causal_depthwise_conv, "composed": composed, "conv1d": conv1d}[name]
    torch.manual_seed(0)
    x = torch.randn(B, T, D, requires_grad=True)
    w = torch.randn(K, D, requires_grad=True)
    b = torch.randn(D, requires_grad=True)
    g = torch.randn(B, T, D)
    for _ in range(20):
        f(x, w, b).backward(g)
    start = time.perf_counter()
    for _ in range(reps):
        f(x, w, b).backward(g)
    return (time.perf_counter() - start) / reps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(measure(args.worker, args.reps, args.threads))
        return
    names = ["fused", "composed", "conv1d"]
    times: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(args.rounds):
        for name in names:
            out = subprocess.run([sys.executable, __file__, "--worker", name, "--reps", str(args.reps),
                                  "--threads", str(args.threads)], capture_output=True, text=True, check=True)
            times[name].append(float(out.stdout.strip().splitlines()[-1]))
    print(f"short convolution, batch {B}, T {T}, d {D}, kernel {K}, {args.threads} threads: ms per forward+backward, "
          f"median of {args.rounds} rounds (alternating processes)")
    for name in names:
        print(f"  {name:<9} {statistics.median(times[name]):7.3f} ms   (rounds: "
              + ", ".join(f"{t:.3f}" for t in times[name]) + ")")
    print(json.dumps({n: statistics.median(v) for n, v in times.items()}))


if __name__ == "__main__":
    main()
