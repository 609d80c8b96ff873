"""Benchmarks that print figures: kernel time against sequence length, and decoding cost.

Run as ``evalsuite bench kernels`` / ``evalsuite bench decode`` or ``python benchmarks/*.py``.
Speed goals are printed next to the measurements, never asserted in tests.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch
import torch.nn.functional as F

from evalsuite import models
from evalsuite.models import ops
from evalsuite.models.decayed import decayed_attention
from evalsuite.models.swa import sliding_window_attention

KERNEL_LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)
DECODE_CONTEXTS = (1024, 4096, 16384, 65536)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], object], device: torch.device, min_time: float = 0.3, max_reps: int = 10) -> float:
    """Median seconds per call, repeating until ``min_time`` has passed. The first call warms up;
    when it alone takes over a second it is the measurement (start-up costs are then noise)."""
    start = time.perf_counter()
    fn()
    _sync(device)
    first = time.perf_counter() - start
    if first > 1.0:
        return first
    times: list[float] = []
    while len(times) < max_reps and (sum(times) < min_time or len(times) < 2):
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def kernel_cases(batch: int, heads: int, dim: int, device: torch.device):
    """name -> (make inputs for T, forward function); each timed forward + backward."""
    def qkv(T):
        return [torch.randn(batch, heads, T, dim, device=device, requires_grad=True) for _ in range(3)]

    def qkvb(T):
        q, k, v = (torch.randn(batch, heads, T, dim, device=device) for _ in range(3))
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        beta = torch.rand(batch, heads, T, device=device)
        return [t.requires_grad_() for t in (q, k, v, beta)]

    def qkvg(kind):
        def make(T):
            q, k, v = (torch.randn(batch, heads, T, dim, device=device) for _ in range(3))
            shape = (batch, heads, T) if kind == "scalar" else (batch, heads, T, dim)
            log_g = F.logsigmoid(torch.randn(*shape, device=device) + 4)  # decays near 0.98
            return [t.requires_grad_() for t in (q, k, v, log_g)]
        return make

    return {
        "softmax (SDPA)": (qkv, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
        "swa-64": (qkv, lambda q, k, v: sliding_window_attention(q, k, v, 64)),
        "linear chunk": (qkv, lambda q, k, v: ops.linear_attention(q, k, v, mode="chunk")),
        "linear recurrent": (qkv, lambda q, k, v: ops.linear_attention(q, k, v, mode="recurrent")),
        "delta chunk": (qkvb, lambda q, k, v, b: ops.delta_rule(q, k, v, b, mode="chunk")),
        "delta recurrent": (qkvb, lambda q, k, v, b: ops.delta_rule(q, k, v, b, mode="recurrent")),
        "decay scalar chunk": (qkvg("scalar"), lambda q, k, v, g: decayed_attention(q, k, v, g)),
        "decay vector chunk": (qkvg("vector"), lambda q, k, v, g: decayed_attention(q, k, v, g)),
        "decay recurrent": (qkvg("vector"), lambda q, k, v, g: decayed_attention(q, k, v, g, mode="recurrent")),
    }


def kernels(lengths=KERNEL_LENGTHS, batch: int = 1, heads: int = 4, dim: int = 64, device: str = "cpu",
            recurrent_max: int = 8192, echo=print) -> dict[str, dict[int, float]]:
    """Forward + backward seconds per kernel and length; prints a table, the crossover and the goals."""
    dev = torch.device(device)
    cases = kernel_cases(batch, heads, dim, dev)
    echo(f"kernel forward+backward, B={batch} H={heads} d={dim}, {dev} ({torch.get_num_threads()} threads), seconds")
    echo(f"{'T':>7} " + " ".join(f"{name:>17}" for name in cases))
    results: dict[str, dict[int, float]] = {name: {} for name in cases}
    for T in lengths:
        row = []
        for name, (make, fn) in cases.items():
            if "recurrent" in name and T > recurrent_max:
                row.append(f"{'-':>17}")
                continue
            inputs = make(T)

            def fwd_bwd():
                out = fn(*inputs)
                out.sum().backward()
            results[name][T] = time_call(fwd_bwd, dev)
            row.append(f"{results[name][T]:>17.4f}")
        echo(f"{T:>7} " + " ".join(row))
    _kernel_verdicts(results, echo)
    return results


def _kernel_verdicts(results, echo) -> None:
    soft, lin, delta, delta_rec = (results[n] for n in ("softmax (SDPA)", "linear chunk", "delta chunk", "delta recurrent"))
    crossover = next((T for T in sorted(lin) if T in soft and lin[T] < soft[T]), None)
    echo(f"crossover: linear chunk is faster than SDPA from T = {crossover}" if crossover
         else "crossover: linear chunk never faster than SDPA in this range")
    if 8192 in soft and 8192 in lin:
        ratio = soft[8192] / lin[8192]
        echo(f"goal linear chunk >= 10x SDPA at T=8192: {ratio:.1f}x {'met' if ratio >= 10 else 'NOT met'}")
    if 2048 in lin and 16384 in lin:
        growth = lin[16384] / lin[2048]
        echo(f"goal linear chunk T x8 (2048 -> 16384) costs <= x10: x{growth:.1f} {'met' if growth <= 10 else 'NOT met'}")
    for name in ("decay scalar chunk", "decay vector chunk", "swa-64"):
        if 2048 in results[name] and 16384 in results[name]:
            growth = results[name][16384] / results[name][2048]
            echo(f"goal {name} T x8 (2048 -> 16384) costs <= x10 (linear in T): x{growth:.1f} "
                 f"{'met' if growth <= 10 else 'NOT met'}")
    if 2048 in delta and 2048 in delta_rec:
        ratio = delta_rec[2048] / delta[2048]
        echo(f"goal delta chunk >= 10x delta recurrent at T=2048: {ratio:.1f}x {'met' if ratio >= 10 else 'NOT met'}")


def decode(contexts=DECODE_CONTEXTS, d_model: int = 256, n_layers: int = 2, n_heads: int = 4, device: str = "cpu",
           steps: int = 32, echo=print) -> list[dict]:
    """Per-token decode time and state bytes (fp32) after ``context`` tokens, batch 1.

    A softmax model's KV cache is filled to the context length with random keys and values (its
    cost does not depend on their content); linear and delta models carry their fixed state."""
    dev = torch.device(device)
    rows = []
    echo(f"decode, batch 1, d_model={d_model}, {n_layers} layers, {n_heads} heads, {dev}")
    echo(f"{'model':>8} {'context':>8} {'ms/token':>9} {'state MiB':>10}")
    for name in ("softmax", "linear", "delta"):
        torch.manual_seed(0)
        model = models.build(name, vocab_size=256, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                             positions="none").to(dev).eval()
        for context in contexts:
            state = model.init_state(1, max_len=context + steps + 1, device=dev)
            if name == "softmax":
                for _, mixer_state in state["layers"]:
                    mixer_state["cache"][:, :, :, :context].normal_()
                    mixer_state["length"] = context
            tokens = torch.randint(0, 256, (steps,), device=dev)

            def run(state=state):
                s = state
                for t in tokens:
                    _, s = model.step(t[None], s)
            seconds = time_call(run, dev, min_time=0.2, max_reps=5) / steps
            state_bytes = 4 * model.state_size(context)
            rows.append({"model": name, "context": context, "ms_per_token": 1e3 * seconds, "state_bytes": state_bytes})
            echo(f"{name:>8} {context:>8} {1e3 * seconds:>9.3f} {state_bytes / 2**20:>10.3f}")
    return rows
