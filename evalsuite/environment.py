"""What a run ran on, recorded beside its results."""
from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path

import numpy as np
import torch


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present; asking for CUDA without one is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda: CUDA is not available on this machine; use --device auto or cpu")
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"--device: must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():  # an installed copy (wheel), not a checkout
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


@functools.lru_cache(maxsize=1)
def cpu_model() -> str | None:
    """The CPU's model name (Linux: /proc/cpuinfo), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def describe(device: torch.device) -> dict:
    """The versions, machine and kernel path a run ran on. ``cpu`` and ``cpu_capability`` (the
    vector instructions torch's CPU kernels use: AVX2, AVX512, ...) are there because the same
    configuration on another CPU sums floats in another order, and a run on the edge of a plateau
    can then end elsewhere: two records that disagree and differ here are not a bug in the suite."""
    from evalsuite.version import __version__

    env = {
        "evalsuite": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "device": str(device),
        "threads": torch.get_num_threads(),
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "git_commit": git_commit(),
    }
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env
