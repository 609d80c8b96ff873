"""Why a model fails to recall: memory capacity, key interference, attention sharpness, errors,
state rank.

Python: ``capacity_probe``, ``knee``, ``half_point``, ``attention_sharpness``, ``key_interference``,
``classify_errors``, ``state_size``; ``summary(model, inputs, targets)`` runs every registered run
analysis (``runs.run_analysis``) and is what every run records."""
from __future__ import annotations

from . import interference, sharpness
from .attention import answer_positions, attention_views, graded_chunks
from .capacity import analytic_probe, capacity_probe, half_point, knee, trained_probe
from .errors import classify_errors
from .interference import coherence, crosstalk, gram, key_interference
from .runs import ANALYSIS_EXAMPLES, RUN_ANALYSES, AnalysisInput, run_analysis, summary
from .sharpness import attention_sharpness, row_stats
from evalsuite.models.state import DTYPE_BYTES, state_size

__all__ = ["ANALYSIS_EXAMPLES", "DTYPE_BYTES", "RUN_ANALYSES", "AnalysisInput", "analytic_probe", "answer_positions",
           "attention_views", "attention_sharpness", "capacity_probe", "classify_errors", "coherence", "crosstalk",
           "graded_chunks", "gram", "half_point", "interference", "key_interference", "knee", "row_stats",
           "run_analysis", "sharpness", "state_size", "summary", "trained_probe"]
