"""Run analyses: what every finished run records under ``metrics["analysis"]``.

A run analysis is a function of one ``AnalysisInput`` that returns a dict of JSON-able results,
registered with ``@run_analysis("name")`` in any module of ``evalsuite.analysis`` (``RUN_ANALYSES``,
the suite's one ``Registry``, imports every module there on first use, so a new analysis is one new
file). ``summary`` runs them all on the first
``ANALYSIS_EXAMPLES`` test examples and merges their dicts. They share one pass over the graded
positions (``AnalysisInput.chunks``: logits, attention views and answer positions per chunk of
examples, computed once). An analysis that needs what a mixer does not expose (its attention
weights) raises ``NotImplementedError``; the run records why under ``unavailable``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from evalsuite.registry import Registry

from .attention import Chunk, graded_chunks

ANALYSIS_EXAMPLES = 256  # test examples each run analyses (T x T matrices per layer: keep it small)
ANALYSIS_BYTES = 2**30   # what the shared pass may hold in T x T attention views (float32, every layer)


def analysis_examples(seq_len: int, n_layers: int, max_examples: int = ANALYSIS_EXAMPLES) -> int:
    """How many test examples the analyses read: ``max_examples``, fewer where their T x T views
    would pass ``ANALYSIS_BYTES`` (a T = 8,192 run keeps 268 MB of weights per example and layer;
    256 of them would not fit in memory), and at least one."""
    per_example = 4 * seq_len * seq_len * max(n_layers, 1)
    return max(1, min(max_examples, ANALYSIS_BYTES // per_example))
RUN_ANALYSES = Registry("run analysis", builtin_package="evalsuite.analysis")


def run_analysis(name: str) -> Callable[[Callable[["AnalysisInput"], dict]], Callable]:
    """Register ``fn(AnalysisInput) -> dict`` as a run analysis."""
    return RUN_ANALYSES.register(name)


@dataclass
class AnalysisInput:
    model: torch.nn.Module
    inputs: torch.Tensor               # [n, T]
    targets: torch.Tensor              # [n, T]
    answers: torch.Tensor | None = None
    _chunks: list[Chunk] | None = field(default=None, repr=False)

    @property
    def chunks(self) -> list[Chunk]:
        """The pass over graded positions, made on first use and shared by every analysis."""
        if self._chunks is None:
            self._chunks = list(graded_chunks(self.model, self.inputs, self.targets, self.answers))
        return self._chunks

    @property
    def predictions(self) -> torch.Tensor:
        """``[n, T]`` argmax predictions (from the shared pass when it was made; every mixer has these)."""
        if self._chunks is not None:
            return torch.cat([c.logits.argmax(-1) for c in self._chunks])
        return torch.cat([self.model(self.inputs[lo:lo + 32]).argmax(-1) for lo in range(0, len(self.inputs), 32)])


@torch.no_grad()
def summary(model, inputs: torch.Tensor, targets: torch.Tensor, max_examples: int = ANALYSIS_EXAMPLES,
            answers: torch.Tensor | None = None) -> dict:
    """Every registered run analysis on the first ``max_examples`` examples, merged."""
    model.eval()
    max_examples = analysis_examples(inputs.shape[1], len(getattr(model, "blocks", ())), max_examples)
    inp = AnalysisInput(model, inputs[:max_examples], targets[:max_examples],
                        None if answers is None else answers[:max_examples])
    out: dict = {"examples": int(inp.inputs.shape[0])}
    for name, fn in RUN_ANALYSES.items():  # the first use imports every analysis module
        try:
            out.update(fn(inp))
        except NotImplementedError as exc:  # e.g. a mixer that exposes no attention weights
            out.setdefault("unavailable", str(exc))
    return out
