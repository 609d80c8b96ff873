"""What the experiments' designs share: the learning-rate grids and base configurations of each
scale, and the CPU scale's query/key size where a finding rests on a fixed state."""
from __future__ import annotations

CPU_LRS = (0.001, 0.003, 0.01)
PAPER_LRS = (0.0001, 0.000464, 0.00215, 0.01)  # Zoology: logspace(-4, -2, 4)
# CPU budget: the default preset at 3 epochs of 40k examples (1,875 steps, early stop at 0.99 validation)
CPU_BASE = {"task": "recall", "model": "softmax", "preset": "default", "train.epochs": 3}
PAPER_BASE = {"task": "recall", "model": "softmax", "preset": "zoology"}
# The CPU scale's d' (query/key size per head, ``model.feature_dim``) at a trainable width where a
# finding rests on a fixed state falling short: D = 16 pairs = 4 d'. d' pairs is the squared-error
# law; under cross-entropy both sides of the d' x d_v state count, and at value size 64 (the head
# size) the state holds far more than d' pairs and rarely binds here (docs/guide/analysis.md;
# capacity-argmax measures what a d_k x d_v state holds, capacity-trained where trained models bind).
CPU_FEATURE_DIM = 4


def pair(reads: str = "", **point) -> list:
    """Softmax and elu+1 linear attention at one ``point`` (dotted keys as keyword names with
    ``__`` would not be one spelling, so pass them as a dict: ``pair(**{"task.seq_len": 64})``)."""
    from .experiment import CellSpec

    return [CellSpec("softmax", "softmax", {"model": "softmax", **point}, reads=reads),
            CellSpec("elu+1", "elu+1", {"model": "linear", **point}, reads=reads)]
