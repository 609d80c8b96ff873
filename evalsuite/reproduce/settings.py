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

# --- Where the state binds (issue 62): the setting the failure findings are judged in at CPU scale ---
# capacity-trained's: MQAR at vocabulary 256 (127 keys, 128 values), d_model 64, one head, trained on
# an equal mixture of D = 2 ... 32 pairs (T = 4 D each) and read at each D (``task.eval_segments``:
# every D from one run, each D beside its own floor), each mixer's state set apart from the width:
# d_k = ``model.feature_dim``, d_v = ``model.value_dim``. The trained argmax probe measured what a
# state holds at this vocabulary (docs/capacity-argmax/RESULTS.md): about 2 (elu+1) and 3.5 (delta)
# pairs at (8, 8), 13 and 17 at (16, 16); capacity-argmax's codebook probe about 37 (elu+1) and 51
# (delta) at (32, 32). So at D = 16 the state binds at (8, 8) (5-8x past it) and about at (16, 16),
# and (32, 32), with 16x the state of (8, 8), holds D = 16: the same family at four times the state
# or more, the control a failure needs. Cells of equal configuration share their runs across the
# experiments (a configuration trained for capacity-trained is read again, never retrained).
BIND_PAIRS = (2, 4, 8, 16, 32)
BIND_EPOCHS = {"cpu": 4, "paper": 16}
BIND_MODELS = {"elu+1": {"model": "linear", "model.feature_map": "elu1"}, "delta": {"model": "delta"},
               "softmax": {"model": "softmax"}}


def bind_segments(passes: int = 1) -> list[dict]:
    """The mixture: every D at T = 4 D (one pass), or with the pairs written ``passes`` times at
    T = 2 (passes + 1) D: the same query region of 2 D tokens after the passes."""
    more = {"num_passes": passes} if passes > 1 else {}
    return [{"num_kv_pairs": D, "seq_len": 2 * (passes + 1) * D, **more} for D in BIND_PAIRS]


def bind_base(scale: str = "cpu") -> dict:
    return {"task": "recall", "model": "softmax", "preset": "default", "task.vocab_size": 256, "model.d_model": 64,
            "task.segments": bind_segments(), "task.eval_segments": bind_segments(),
            "train.epochs": BIND_EPOCHS[scale]}


def bind_point(model: str, dk: int | None = None, dv: int | None = None, layers: int = 2, passes: int = 1) -> dict:
    """One mixer at (d_k, d_v) (softmax: none) with ``layers`` mixer layers on ``bind_base``;
    ``passes`` > 1: the pairs written that many times (its own mixture)."""
    state = {"model.feature_dim": dk, "model.value_dim": dv} if dk else {}
    # the mixture is named in every point (one pass too: the same value as the base's, so the same run),
    # so that a cell of one pass never reads the runs of two
    seg = {"task.segments": bind_segments(passes), "task.eval_segments": bind_segments(passes)}
    return {**BIND_MODELS[model], **state, "model.n_layers": layers, **seg}


def bind_metric(D: int) -> str:
    """The figure a cell at D reads: its eval segment's accuracy."""
    return f"eval_{BIND_PAIRS.index(D)}_accuracy"


def state_label(model: str, dk: int | None = None, dv: int | None = None, layers: int = 2, D: int | None = None) -> str:
    s = f"{model} (d_k {dk}, d_v {dv})" if dk else model
    return s + f", {layers} layer{'s' * (layers != 1)}" + (f" D={D}" if D is not None else "")


def pair(reads: str = "", **point) -> list:
    """Softmax and elu+1 linear attention at one ``point`` (dotted keys as keyword names with
    ``__`` would not be one spelling, so pass them as a dict: ``pair(**{"task.seq_len": 64})``)."""
    from .experiment import CellSpec

    return [CellSpec("softmax", "softmax", {"model": "softmax", **point}, reads=reads),
            CellSpec("elu+1", "elu+1", {"model": "linear", **point}, reads=reads)]
