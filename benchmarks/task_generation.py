"""Examples per second for every task at its CPU preset ("default") and its published preset.

    python benchmarks/task_generation.py [--n 20000]

ListOps at the LRA preset draws trees until enough fall in the 500-2000 token window, which is
slow by nature (the generated set is cached on disk); it uses fewer examples.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from evalsuite import tasks

PUBLISHED = {"recall": "zoology-256", "copy": "paper", "selective_copy": "mad", "recall_mad": "mad",
             "needle": "multiquery", "listops": "lra"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    os.environ["EVALSUITE_CACHE"] = tempfile.mkdtemp()  # measure generation, not the cache
    print(f"{'task':<16}{'preset':<14}{'T':>6}{'examples':>10}{'seconds':>10}{'examples/s':>14}")
    for name in tasks.names():
        cls = tasks.TASKS.get(name)
        for preset in ("default", PUBLISHED.get(name)):
            if preset not in cls.presets:
                continue
            params = {k: v for k, v in cls.presets[preset].items() if k != "preset_base"}
            task = tasks.get(name, **params)
            n = 200 if (name == "listops" and preset == "lra") else args.n
            start = time.perf_counter()
            task.generate(n, 1)
            seconds = time.perf_counter() - start
            print(f"{name:<16}{preset:<14}{task.seq_len:>6}{n:>10}{seconds:>10.3f}{n / seconds:>14,.0f}")


if __name__ == "__main__":
    main()
