"""State size, one definition: the floats a sequence keeps to decode its next token
(``LanguageModel.state_size``: KV cache for softmax, S (and z) for linear, S for delta, plus the
short convolution's window), the bytes they take at a dtype, and the same state in Zoology's
logged units (``zoology_units``) for comparisons with its plots."""
from __future__ import annotations

DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float64": 8}


def state_size(model, seq_len: int, dtype: str = "float32") -> dict[str, int]:
    """``{"floats": n, "bytes": n * size(dtype)}`` per sequence after ``seq_len`` tokens."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    floats = int(model.state_size(seq_len))
    return {"floats": floats, "bytes": floats * DTYPE_BYTES[dtype]}


def zoology_units(floats: float, model: dict) -> float:
    """Zoology's logged state size for a model of ours whose ``state_size`` is ``floats``, from its
    stored model section (``n_layers``, ``d_model``, ``conv_kernel``).

    Zoology (``zoology/model.py: _compute_state_size``) sums each layer's sequence-mixer
    ``state_size`` and multiplies by 4 (bytes at fp32). Its README-plot models wrap each mixer in
    ``Hybrid(BaseConv, mixer)``, whose ``state_size`` is the mixer's alone, so the short
    convolution's window is not counted (its DeltaNet ignores its own short convolutions too; only
    its GLA adds them). Our figure counts that window, ``(conv_kernel - 1) x d_model`` per layer:
    it is taken out here, then the rest is multiplied by 4."""
    kernel = model.get("conv_kernel", 0) or 0
    conv = model["n_layers"] * (kernel - 1) * model["d_model"] if kernel else 0
    return 4 * (floats - conv)
