"""State size, one definition: the floats a sequence keeps to decode its next token
(``LanguageModel.state_size``: KV cache for softmax, S (and z) for linear, S for delta, plus the
short convolution's window), and the bytes they take at a dtype."""
from __future__ import annotations

DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float64": 8}


def state_size(model, seq_len: int, dtype: str = "float32") -> dict[str, int]:
    """``{"floats": n, "bytes": n * size(dtype)}`` per sequence after ``seq_len`` tokens."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    floats = int(model.state_size(seq_len))
    return {"floats": floats, "bytes": floats * DTYPE_BYTES[dtype]}
