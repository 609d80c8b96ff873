"""Wrong answers, classified: another value from the same context (interference: the memory
returned the wrong pair) or a token that was never a value there (the memory returned noise)."""
from __future__ import annotations

import torch

from evalsuite.tasks import IGNORE

from .runs import AnalysisInput, run_analysis


def classify_errors(inputs: torch.Tensor, targets: torch.Tensor, predictions: torch.Tensor) -> dict[str, int]:
    """Counts of ``correct``, ``other_value`` (the answer to another query of the same example,
    present in its context) and ``not_a_value`` over the graded positions."""
    graded = targets != IGNORE
    right = graded & (predictions == targets)
    wrong = graded & ~right
    # the example's values: every graded target that also appears in the context
    in_context = (inputs[:, None, :] == targets[:, :, None]).any(-1) & graded       # [B, T]
    is_value = ((predictions[:, :, None] == targets[:, None, :]) & in_context[:, None, :]).any(-1)
    other = wrong & is_value
    return {"correct": int(right.sum()), "other_value": int(other.sum()), "not_a_value": int((wrong & ~is_value).sum())}


@run_analysis("errors")
def errors_analysis(inp: AnalysisInput) -> dict:
    return {"errors": classify_errors(inp.inputs, inp.targets, inp.predictions)}
