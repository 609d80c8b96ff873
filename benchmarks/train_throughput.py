"""Training throughput (steps/s) and MQAR generation speed; prints figures, asserts nothing.

Reference point (issue 2): the Zoology codebase trains a 2-layer, 1-head attention model
(vocab 256, T = 64, d_model 64, batch 64) at 35-40 steps/s on a 2-core CPU.

    python benchmarks/train_throughput.py [--steps 200] [--device auto]
"""
from __future__ import annotations

import argparse
import contextlib
import time

import torch

from evalsuite import config as cfg
from evalsuite import environment, tasks
from evalsuite.train import make_optimizer, autocast_for, train_step


def steps_per_second(model_name: str, conv_kernel: int, steps: int, device: torch.device) -> float:
    config = cfg.resolve("recall", model_name, overrides={
        "vocab_size": 256, "seq_len": 64, "num_kv_pairs": 8, "d_model": 64, "n_layers": 2, "n_heads": 1,
        "conv_kernel": conv_kernel, "batch_size": 64})
    torch.manual_seed(0)
    model = cfg.build_model(config["model"], 256).to(device)
    data = tasks.get("recall", **{k: v for k, v in config["task"].items() if k != "name"}).generate(64 * 32, 0)
    optimizer = make_optimizer(model, cfg.TrainConfig(**config["train"]), device)
    autocast = autocast_for(device, "auto")
    batches = [data[i * 64:(i + 1) * 64].to(device) for i in range(32)]
    for i in range(10):  # warm-up
        train_step(model, optimizer, batches[i % 32], 1.0, autocast)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        train_step(model, optimizer, batches[i % 32], 1.0, autocast)
    sync()
    return steps / (time.perf_counter() - start)


def generation_speed(n: int, seq_len: int, pairs: int, vocab: int) -> float:
    task = tasks.get("recall", vocab_size=vocab, seq_len=seq_len, num_kv_pairs=pairs)
    task.generate(1000, 0)
    start = time.perf_counter()
    task.generate(n, 1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    device = environment.resolve_device(args.device)
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("training throughput: vocab 256, T 64, d_model 64, 2 layers, 1 head, batch 64")
    for model_name in ("softmax", "linear"):
        for conv in (0, 4):
            sps = steps_per_second(model_name, conv, args.steps, device)
            print(f"  {model_name:<8} conv_kernel={conv}: {sps:7.1f} steps/s")
    for n, T, D, V in ((100_000, 256, 16, 8192), (100_000, 64, 4, 8192)):
        seconds = generation_speed(n, T, D, V)
        print(f"MQAR generation: {n:,} examples, T={T}, D={D}, V={V}: {seconds:.2f} s ({n / seconds:,.0f} examples/s)")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
