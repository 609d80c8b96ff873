"""Training throughput (steps/s, FLOP/s, MFU) and MQAR generation speed; prints figures, asserts nothing.

Setting (issue 17): recall, vocab 256, T 64, 8 pairs, d_model 64, 2 layers, 1 head, batch 64, no
MLP; softmax and elu+1 linear attention with the short convolution (conv_kernel 4, the default)
and without it (conv_kernel 0). Each figure is a median over rounds of ``--steps`` steps after 10
warm-up steps.

FLOPs per step (a matmul of (m x k)(k x n) counts 2mkn; backward counts twice the forward):

    step = 3 * [ N_tok * L * (8 d^2 + 2 k d + A) + N_graded * 2 d V ]

N_tok = B T tokens, L layers, k the convolution's kernel (0: none), N_graded the graded positions
(B D for MQAR), V the vocabulary; A the mixer's per-token cost: softmax 4 T d (scores and reads
over the full T x T square, as the reference figure of issue 17 counted it), linear attention 4 d^2
(write k v^T and read q^T S per token, chunked or not). MFU is achieved FLOP/s over the matmul
peak this script measures (fp32 ``torch.mm`` of 1024 x 1024, same threads).

    python benchmarks/train_throughput.py [--steps 300] [--rounds 3] [--device auto]
    python benchmarks/train_throughput.py --against /path/to/old/checkout   # alternate old and new

``--against`` runs every measurement in turn with the evalsuite package of this checkout and of the
other one (a ``git worktree`` of an older commit), in fresh processes, alternating, and prints both
medians and their ratio.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
CASES = [("softmax", 4), ("softmax", 0), ("linear", 4), ("linear", 0)]
B, T, D, V, DM, L = 64, 64, 8, 256, 64, 2


def flops_per_step(model: str, conv_kernel: int) -> float:
    mixer = 4 * T * DM if model == "softmax" else 4 * DM * DM
    forward = B * T * L * (8 * DM * DM + 2 * conv_kernel * DM + mixer) + B * D * 2 * DM * V
    return 3.0 * forward


def matmul_peak(device: torch.device, n: int = 1024, reps: int = 20) -> float:
    a, b = (torch.randn(n, n, device=device) for _ in range(2))
    for _ in range(3):
        a @ b
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync()
    return 2 * n ** 3 * reps / (time.perf_counter() - start)


def steps_per_second(model_name: str, conv_kernel: int, steps: int, device: torch.device) -> float:
    from evalsuite.train import autocast_for, make_optimizer, train_step

    overrides = {"vocab_size": V, "seq_len": T, "num_kv_pairs": D, "d_model": DM, "n_layers": L, "n_heads": 1,
                 "conv_kernel": conv_kernel, "batch_size": B}
    torch.manual_seed(0)
    try:  # the typed RunConfig (this checkout)
        from evalsuite.resolve import resolve

        config = resolve("recall", model_name, overrides=overrides)
        model, train, task = config.model.build(V), config.train, config.task.train_tasks[0]
    except ImportError:  # an older checkout (--against): a config dict
        from evalsuite import config as cfg
        from evalsuite import tasks

        config = cfg.resolve("recall", model_name, overrides=overrides)
        model, train = cfg.build_model(config["model"], V), cfg.TrainConfig(**config["train"])
        task = tasks.get("recall", **{k: v for k, v in config["task"].items() if k != "name"})
    model = model.to(device)
    data = task.generate(B * 32, 0)
    optimizer = make_optimizer(model, train, device)
    autocast = autocast_for(device, "auto")
    try:  # the training batch as the loss reads it (older checkouts, for --against, take the Batch)
        from evalsuite.train import Graded
        prepare = Graded.of
    except ImportError:
        prepare = lambda batch: batch  # noqa: E731
    batches = [prepare(data[i * B:(i + 1) * B]).to(device) for i in range(32)]
    for i in range(10):  # warm-up
        train_step(model, optimizer, batches[i % 32], 1.0, autocast)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        train_step(model, optimizer, batches[i % 32], 1.0, autocast)
    sync()
    return steps / (time.perf_counter() - start)


def measure_in(tree: Path, model: str, conv: int, steps: int, device: str) -> float:
    """steps/s of one case, measured in a fresh process that imports evalsuite from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps([model, conv, steps, device])],
                         env=env, cwd=tree, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def generation_speed(n: int, seq_len: int, pairs: int, vocab: int) -> float:
    from evalsuite import tasks

    task = tasks.get("recall", vocab_size=vocab, seq_len=seq_len, num_kv_pairs=pairs)
    task.generate(1000, 0)
    start = time.perf_counter()
    task.generate(n, 1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--against", type=Path, default=None, help="another checkout to alternate with (old commit)")
    parser.add_argument("--generation-examples", type=int, default=100_000, help="examples per MQAR generation figure")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # one measurement for --against, in this process's evalsuite
        from evalsuite import environment

        model, conv, steps, device = json.loads(args.worker)
        print(steps_per_second(model, conv, steps, environment.resolve_device(device)))
        return

    from evalsuite import environment

    device = environment.resolve_device(args.device)
    peak = matmul_peak(device)
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"matmul peak {peak / 1e9:.1f} GFLOP/s (fp32 1024^3)")
    print(f"training: recall vocab {V}, T {T}, D {D}, d_model {DM}, {L} layers, 1 head, batch {B}; "
          f"median of {args.rounds} rounds of {args.steps} steps")
    trees = [("new", ROOT)] + ([("old", args.against.resolve())] if args.against else [])
    header = f"  {'model':<8} {'conv':>4} {'GFLOP/step':>10}"
    for name, _ in trees:
        header += f" {name + ' steps/s':>13} {name + ' MFU':>8}"
    print(header + ("   new/old" if args.against else ""))
    for model, conv in CASES:
        figures: dict[str, list[float]] = {name: [] for name, _ in trees}
        for _ in range(args.rounds):  # alternate: new, old, new, old, ...
            for name, tree in trees:
                figures[name].append(measure_in(tree, model, conv, args.steps, str(device)) if args.against
                                     else steps_per_second(model, conv, args.steps, device))
        flops = flops_per_step(model, conv)
        line = f"  {model:<8} {conv:>4} {flops / 1e9:>10.3f}"
        for name, _ in trees:
            sps = statistics.median(figures[name])
            line += f" {sps:>13.1f} {sps * flops / peak:>8.1%}"
        if args.against:
            line += f"   x{statistics.median(figures['new']) / statistics.median(figures['old']):.2f}"
        print(line + "   (rounds: " + "; ".join(f"{n} " + ", ".join(f"{x:.1f}" for x in v) for n, v in figures.items()) + ")")
    n = args.generation_examples
    for seq_len, pairs, vocab in ((256, 16, 8192), (64, 4, 8192)):
        seconds = generation_speed(n, seq_len, pairs, vocab)
        print(f"MQAR generation: {n:,} examples, T={seq_len}, D={pairs}, V={vocab}: {seconds:.2f} s "
              f"({n / seconds:,.0f} examples/s)")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
