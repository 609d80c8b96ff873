"""A run's data: train, validation and test splits of its task mixture (and one test set per eval
segment) from disjoint generator seeds, and the training split as the loss reads it (``Graded``),
staged on the device where it fits."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from evalsuite.config import MAX_SEGMENTS, TaskSpec, TrainConfig
from evalsuite.tasks import IGNORE, Batch

SPLITS = {"train": 0, "val": 1, "test": 2}
STAGE_FRACTION = 0.25  # stage the data on a GPU when it takes at most this share of the free memory


def split_seed(seed: int, split: str, segment: int = 0) -> int:
    """Train, validation and test data (and each segment of a mixture) of every run seed come from
    disjoint generator seeds."""
    return (3 * seed + SPLITS[split]) * MAX_SEGMENTS + segment


def make_data(task: TaskSpec, train: TrainConfig, seed: int, splits=tuple(SPLITS),
              cache_dir=None) -> tuple[dict[str, Batch], list[Batch]]:
    """Train/val/test splits of the training mixture (or those in ``splits``), plus one test set
    per eval segment. ``cache_dir``: where slow generators may cache (see ``Task.generate``)."""
    mixture = task.mixture
    if len(mixture) + len(task.evals) > MAX_SEGMENTS:
        raise ValueError(f"at most {MAX_SEGMENTS} segments are supported")
    total = sum(share for _, share in mixture)
    data = {}
    for split in splits:
        n = getattr(train, f"num_{split}")
        counts = [max(1, round(n * share / total)) for _, share in mixture]
        data[split] = Batch.concat([t.generate(c, split_seed(seed, split, i), cache_dir)
                                    for i, ((t, _), c) in enumerate(zip(mixture, counts))])
    evals = [t.generate(n, split_seed(seed, "test", len(mixture) + i), cache_dir)
             for i, ((t, _), n) in enumerate(zip(task.evals, task.eval_sizes(train.num_test)))]
    return data, evals


@dataclass
class Graded:
    """A training split as the loss reads it: ``inputs [N, T]``, and per example the positions of
    its graded targets, in order (``index [N, K]``), and those targets (``targets [N, K]``). K is
    the most graded positions any example of the split has; an example with fewer is padded with
    ungraded positions, whose target is IGNORE.

    Built once per split on the host, so that the loss gathers a fixed K positions per example: no
    boolean mask whose size the host must read (a sync per step on CUDA), a shape ``vmap`` can
    batch (grouped training), and the output head on K positions instead of T (MQAR: 8 of 64)."""

    inputs: torch.Tensor
    index: torch.Tensor
    targets: torch.Tensor

    @classmethod
    def of(cls, batch: Batch) -> "Graded":
        ungraded = (batch.targets == IGNORE).to(torch.uint8)
        K = max(1, int((1 - ungraded).sum(1).max()))
        index = ungraded.argsort(dim=1, stable=True)[:, :K]                       # graded positions first
        return cls(batch.inputs, index, batch.targets.gather(1, index))

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, rows) -> "Graded":
        return Graded(self.inputs[rows], self.index[rows], self.targets[rows])

    def to(self, device) -> "Graded":
        return Graded(*(t.to(device, non_blocking=True) for t in (self.inputs, self.index, self.targets)))


def stage(data: Graded, device: torch.device) -> Graded:
    """``data`` moved to ``device`` once, where it fits (CUDA); else as it is (batches then move one
    at a time)."""
    if device.type != "cuda":
        return data
    size = sum(t.numel() * t.element_size() for t in (data.inputs, data.index, data.targets))
    free, _ = torch.cuda.mem_get_info(device)
    return data.to(device) if size <= STAGE_FRACTION * free else data
