"""The recall-memory frontier's families: which mixers it sets beside each other, over which axis
of their state and at which values, at each scale (``families``). ``frontier`` builds the design
and reads the verdicts from them."""
from __future__ import annotations

from dataclasses import dataclass

@dataclass(frozen=True)
class Family:
    label: str
    fixed: dict          # config keys every point of the family sets
    axis: str | tuple    # the config key (or keys, each set to the value) that sets its state
    values: tuple        # the axis values at this scale
    kind: str            # "delta", "generalised-delta", "additive", "decayed", "window", "based", "based-part", "control"

    def point(self, value) -> dict:
        """The keys that set the family's state to ``value`` (every key of a two-key axis)."""
        return {k: value for k in ((self.axis,) if isinstance(self.axis, str) else self.axis)}

    @property
    def axis_name(self) -> str:
        keys = (self.axis,) if isinstance(self.axis, str) else self.axis
        return " = ".join({"feature_dim": "d_k", "value_dim": "d_v"}.get(k.split(".")[-1], k.split(".")[-1]) for k in keys)


BOTH_SIDES = ("model.feature_dim", "model.value_dim")
CPU_D = 16          # cpu: the pairs every cell is read at (the binding setting's eval segment for D = 16, T = 64)
CPU_SIDE = 8        # cpu: the value side of Based and its Taylor part (the fixed-state mixers' smallest point)


def families(scale: str) -> list[Family]:
    """The families and their axes. ``paper`` follows Zoology's README-plot sweep
    (``zoology/experiments/030325_new_arch`` and ``models_repo.py``): widths 64 / 128 / 256 for the
    fixed-state mixers, softmax and the sliding window at 128, windows 8 ... 1024, Based's feature
    size 8 / 16 / 24 (Zoology crosses it with widths 48 / 64 / 128; here at width 64 only).

    ``cpu`` (issue 62: where the state binds) is the binding setting (``settings.bind_base``:
    vocabulary 256, width 64, two mixer layers, trained on D = 2 ... 32 and read at D = 16, T = 64),
    each fixed-state mixer's state set on both sides, d_k = d_v = 8, 16, 32 (``feature_dim``,
    ``value_dim``; RetNet keeps its 4 heads, each at half that size: the same floats). The trained argmax probe at this
    vocabulary holds about 2 to 3.5 pairs at (8, 8), 13 to 17 at (16, 16) and 37 to 51 at (32, 32),
    so D = 16 sits past what the smallest state holds and inside the largest: the grid crosses
    every family's capacity at the D read. Windows 4, 8, 16 (2x, 4x and 8x the delta rule's state at
    16 per mixer) and 64 (it sees the whole sequence at D = 16: where the windows learn).
    Based (window 8) and its Taylor part at feature size 4 and 8 with a value side of 8, so that
    their linear state binds too. Cut before seeds (the projection, docs/PROJECTION-62.md): RWKV-7
    and DeltaProduct, which no verdict reads; the decayed families' largest state (their step costs
    2-3x the delta rule's); window 32."""
    if scale == "cpu":
        from .settings import bind_point

        def fixed(model: str, **keys) -> dict:  # a mixer in the binding setting (two layers, the D mixture)
            return {**bind_point("softmax"), "model": model, **keys}

        values = (8, 16, 32)
        cut = values[:-1]  # the decayed families' largest state: cut before seeds (docs/PROJECTION-62.md)
        return [
            Family("softmax", bind_point("softmax"), "model.d_model", (64,), "control"),
            Family("delta", fixed("delta"), BOTH_SIDES, values, "delta"),
            Family("elu+1", fixed("linear", **{"model.feature_map": "elu1"}), BOTH_SIDES, values, "additive"),
            Family("GLA", fixed("gla", **{"model.gate": "vector", "model.output_gate": True}), BOTH_SIDES, cut,
                   "decayed"),
            Family("Mamba-2", fixed("gla", **{"model.gate": "scalar", "model.step_size": True, "model.skip": True,
                                              "model.output_gate": True}), BOTH_SIDES, cut, "decayed"),
            # 4 heads of d_k = d_v = d hold as many floats as one head of 2 d: the same states as the others'
            Family("RetNet", fixed("gla", **{"model.gate": "fixed", "model.n_heads": 4, "model.output_gate": True}),
                   BOTH_SIDES, tuple(v // 2 for v in cut), "decayed"),
            Family("sliding window", fixed("swa"), "model.window", (4, 8, 16, 64), "window"),
            Family("Based", fixed("based", **{"model.window": 8, "model.value_dim": CPU_SIDE}), "model.feature_dim",
                   (4, 8), "based"),
            Family("Taylor linear", fixed("linear", **{"model.feature_map": "taylor", "model.value_dim": CPU_SIDE}),
                   "model.feature_dim", (4, 8), "based-part"),
        ]
    axis, values, width = "model.d_model", (64, 128, 256), 128
    windows = (8, 16, 32, 64, 128, 256, 512, 1024)
    return [
        Family("softmax", {"model": "softmax", "model.d_model": width}, "model.d_model", (width,), "control"),
        Family("delta", {"model": "delta"}, axis, values, "delta"),
        Family("elu+1", {"model": "linear", "model.feature_map": "elu1"}, axis, values, "additive"),
        # the decayed mixers in their papers' forms (issue 29; docs/MODELS.md names what still differs): GLA
        # with its output gate, Mamba-2 with its learned A, step size, D skip and z gate, RetNet with its
        # heads (one decay each), d_v = 2 d_k and its output gate
        Family("GLA", {"model": "gla", "model.gate": "vector", "model.output_gate": True}, axis, values, "decayed"),
        Family("Mamba-2", {"model": "gla", "model.gate": "scalar", "model.step_size": True, "model.skip": True,
                           "model.output_gate": True}, axis, values, "decayed"),
        Family("RetNet", {"model": "gla", "model.gate": "fixed", "model.n_heads": 4, "model.value_expansion": 2,
                          "model.output_gate": True}, axis, values, "decayed"),
        # the delta rule's newest kin (issue 29): shown on the frontier, read by no verdict yet
        # with RWKV-7's initial decays (named, so that runs stored before they were, which started every
        # decay at 0.738 per token, never join its cells)
        Family("RWKV-7", {"model": "rwkv7", "model.decay_init": "rwkv7"}, axis, values, "generalised-delta"),
        Family("DeltaProduct", {"model": "deltaproduct"}, axis, values, "generalised-delta"),
        Family("sliding window", {"model": "swa", "model.d_model": width}, "model.window", windows, "window"),
        Family("Based", {"model": "based", "model.d_model": 64, "model.window": 64}, "model.feature_dim",
               (8, 16, 24), "based"),
        Family("Taylor linear", {"model": "linear", "model.feature_map": "taylor", "model.d_model": 64},
               "model.feature_dim", (8, 16, 24), "based-part"),
    ]


READ_BY_NONE = ("RWKV-7", "DeltaProduct")  # shown on the frontier, read by no verdict yet
