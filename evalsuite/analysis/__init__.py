"""Why a model fails to recall: memory capacity, key interference, attention sharpness, errors.

Python: ``capacity_probe``, ``knee``, ``half_point``, ``attention_sharpness``, ``key_interference``,
``classify_errors``, ``state_size``; ``summary(model, batch)`` is what every run records."""
from __future__ import annotations

import torch

from . import interference, sharpness
from .attention import answer_positions, attention_views
from .capacity import analytic_probe, capacity_probe, half_point, knee, trained_probe
from .errors import classify_errors
from .interference import coherence, crosstalk, gram, key_interference
from .sharpness import attention_sharpness, row_stats
from .state import DTYPE_BYTES, state_size

ANALYSIS_EXAMPLES = 256  # test examples each run analyses (T x T matrices per layer: keep it small)


@torch.no_grad()
def summary(model, inputs: torch.Tensor, targets: torch.Tensor, max_examples: int = ANALYSIS_EXAMPLES,
            answers: torch.Tensor | None = None) -> dict:
    """Sharpness and interference per layer and head, and the error classes, on the first
    ``max_examples`` examples; mixers that expose no weights get only the error classes."""
    inputs, targets = inputs[:max_examples], targets[:max_examples]
    answers = None if answers is None else answers[:max_examples]
    model.eval()
    predictions = model(inputs).argmax(-1)
    out: dict = {"examples": int(inputs.shape[0]), "errors": classify_errors(inputs, targets, predictions)}
    try:
        sharp = attention_sharpness(model, inputs, targets, answers)
        queries, examples = key_interference(model, inputs, targets, answers)
    except NotImplementedError as exc:
        out["unavailable"] = str(exc)
        return out
    out["sharpness"] = sharpness.summarize(sharp)
    best = sharpness.retrieval_layer(out["sharpness"])
    if best is not None:
        out["retrieval_layer"] = {"layer": int(best["layer"]), "head": int(best["head"])}
        out["example"] = _example(model, inputs, targets, answers, int(best["layer"]), int(best["head"]))
    out["sharpness_by_context"] = sharpness.by_context(sharp).to_dict("records")
    out["interference"] = interference.summarize(queries, examples)
    out["interference_by_keys"] = interference.by_keys(examples).to_dict("records")
    return out


MAX_EXAMPLE_LEN = 2048  # longest attention row kept for the report


def _example(model, inputs, targets, answers, layer: int, head: int) -> dict | None:
    """One graded query of the first example that has one, at the retrieval layer and head: its
    attention row, where the answer was, and the Gram matrix of the keys where answers are read."""
    from .attention import answer_reach
    from evalsuite.tasks import IGNORE

    for b in range(inputs.shape[0]):
        found = answer_positions(inputs[b:b + 1], targets[b:b + 1], None if answers is None else answers[b:b + 1])[0]
        graded = ((targets[b] != IGNORE) & (found >= 0)).nonzero().flatten()
        if graded.numel():
            break
    else:
        return None
    t = int(graded[-1])
    if t + 1 > MAX_EXAMPLE_LEN:
        return None
    _, views = attention_views(model, inputs[b:b + 1])
    view = views[layer]
    row = view.weights[0, head, t, :t + 1].float()
    reach = answer_reach(model)
    offset = int(torch.stack([row[min(int(found[t]) + o, t)].abs() for o in range(reach)]).argmax())
    written = (found[graded] + offset).clamp(max=inputs.shape[1] - 1).unique()
    return {"layer": layer, "head": head, "query_position": t, "answer_position": int(found[t]),
            "reach": reach, "weights": [round(float(w), 5) for w in row],
            "gram": [[round(float(g), 4) for g in r] for r in gram(view.keys[0, head, written].float())],
            "key_positions": written.tolist()}


__all__ = ["ANALYSIS_EXAMPLES", "DTYPE_BYTES", "analytic_probe", "answer_positions", "attention_views",
           "attention_sharpness", "capacity_probe", "classify_errors", "coherence", "crosstalk", "gram", "half_point",
           "interference", "key_interference", "knee", "row_stats", "sharpness", "state_size", "summary",
           "trained_probe"]
