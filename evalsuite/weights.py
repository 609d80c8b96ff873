"""A run's weights file, verified when it is read: its SHA-256 against the one recorded with the
run, and its contents (a state dict of finite tensors); every failure is one ``WeightsError`` line
naming the file, never a traceback."""
from __future__ import annotations

import hashlib
from pathlib import Path

from evalsuite.errors import UserError


class WeightsError(UserError):
    """A run's weights cannot be used: the message names the file."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load(path: Path, run_id: str, expected_sha256: str | None = None) -> dict:
    """The state dict in ``path``: ``WeightsError`` for a missing, empty, truncated or foreign file,
    a hash that is not the recorded one, or non-finite values."""
    import torch

    if not path.exists():
        raise WeightsError(f"no saved weights for run {run_id} (looked for {path}); "
                           f"retrain it with `evalsuite run ... --force`")
    if path.stat().st_size == 0:
        raise WeightsError(f"weights file {path} is empty; retrain the run with --force")
    if expected_sha256 and (actual := sha256_of(path)) != expected_sha256:
        raise WeightsError(f"weights file {path} is not the one recorded with run {run_id} (SHA-256 {actual[:12]}... "
                           f"against {expected_sha256[:12]}...): damaged or another run's; retrain it with --force")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one message, never a traceback
        raise WeightsError(f"weights file {path} cannot be read as torch weights ({type(exc).__name__}: damaged, "
                           f"truncated or not a weights file); retrain the run with --force") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise WeightsError(f"weights file {path} does not hold a state dict of tensors")
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise WeightsError(f"weights file {path} has non-finite values in {', '.join(bad[:3])}"
                           + (f" and {len(bad) - 3} more" if len(bad) > 3 else ""))
    return state
