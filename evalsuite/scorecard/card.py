"""A scorecard: one map's figures per seed (``Card``), the metrics they are read as (``METRICS``:
the question each answers, its unit, whether higher is better, the margin the comparison rule
needs), the comparison against a baseline, and the shipped baselines."""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, Field

from evalsuite.protocol import MARGIN, seeds_above


@dataclass(frozen=True)
class Metric:
    name: str
    question: str        # the page's section it answers
    label: str           # its column in words
    unit: str
    higher_better: bool | None  # None: descriptive, never marked better or worse
    margin: float = MARGIN      # the comparison rule's margin, on ``scale``'d values
    log: bool = False           # compare logarithms (a ratio: capacities, times)


METRICS = {m.name: m for m in (
    Metric("argmax_capacity", "capacity", "argmax probe n*", "pairs", True, math.log(1.25), log=True),
    Metric("squared_capacity", "capacity", "squared-error probe n*", "pairs", True, math.log(1.25), log=True),
    Metric("mqar", "capacity", "MQAR accuracy", "accuracy", True),
    Metric("coherence_excess", "interference", "key coherence above random keys'", "cosine", None),
    Metric("crosstalk", "interference", "cross-talk (noise / signal of a read)", "ratio", False, math.log(1.25), log=True),
    Metric("entropy", "sharpness", "attention entropy", "nats", None),
    Metric("monotonicity", "sharpness", "monotonicity in q.k (Spearman)", "rho", None),
    Metric("smallest_weight", "sharpness", "smallest weight x n", "x uniform", None),
    Metric("kl_softmax", "sharpness", "KL(softmax || map)", "nats", None),
    Metric("state_floats", "cost", "state per head (floats)", "floats", None),
    Metric("time_ratio", "cost", "forward + backward time / elu+1's", "x", False, math.log(1.1), log=True),
)}
QUESTIONS = ("capacity", "interference", "sharpness", "cost")
SEEDS = 3  # a figure on this many seeds shows no count; one on fewer (or more) says how many


class Figure(BaseModel):
    """One metric at one setting, per seed (None: measured and undefined, e.g. no finite read)."""

    metric: str
    setting: str = ""          # "d_k 8, d_v 8", "D = 16", ...
    seeds: dict[int, float | None]
    note: str = ""             # "not converged", "no ladder: not settled", ...

    @property
    def values(self) -> list[float]:
        return [v for v in self.seeds.values() if v is not None and math.isfinite(v)]

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) >= 2 else None

    @property
    def censored(self) -> str:
        """"above" or "below" where some seed's figure is only a bound (a probe's grid ended first:
        ``measure`` says so in the note), else ""."""
        return "above" if "above the grid" in self.note else "below" if "below the grid" in self.note else ""

    def text(self) -> str:
        if self.mean is None:
            return "n/a"
        m = self.mean
        body = f"{m:,.0f}" if abs(m) >= 1000 else f"{m:.3g}" if abs(m) >= 10 else f"{m:.3f}"
        body = {"above": ">= ", "below": "<= "}.get(self.censored, "") + body
        if self.sd is not None:
            body += f" +- {self.sd:.2g}"
        return body + (f" (n={len(self.values)})" if len(self.values) not in (1, SEEDS) else "")


class Card(BaseModel):
    """What one map measured: its label, how to load it again, the settings and every figure."""

    label: str
    ref: str                    # a registered name or path.py:Class
    identity: str               # the name, or Class@sha256 of the plug-in's file (``protocol.identity``)
    kind: str = "linear"        # "linear" (a feature map) or "softmax"
    quick: bool = False
    settings: dict = Field(default_factory=dict)
    figures: list[Figure] = Field(default_factory=list)
    run_ids: list[str] = Field(default_factory=list)
    seconds: float | None = None
    commit: str | None = None
    made: str | None = None

    def figure(self, metric: str, setting: str = "") -> Figure | None:
        return next((f for f in self.figures if f.metric == metric and f.setting == setting), None)

    def rows(self) -> list[tuple[str, str]]:
        """(metric, setting) in the order measured."""
        return list(dict.fromkeys((f.metric, f.setting) for f in self.figures))


def compare(a: Figure | None, b: Figure | None) -> str | None:
    """"better" or "worse" (``a`` against ``b``) where the comparison rule decides it (every shared
    seed and the mean beyond the margin and both spreads, ``protocol.seeds_above``), else None. A
    descriptive metric is never marked; a ratio is compared on logarithms; a censored figure (a
    bound) decides only on the side its bound allows."""
    if a is None or b is None:
        return None
    metric = METRICS[a.metric]
    if metric.higher_better is None:
        return None

    def scaled(f: Figure) -> dict[int, float]:
        return {s: (math.log(v) if metric.log else v) for s, v in f.seeds.items()
                if v is not None and math.isfinite(v) and (v > 0 or not metric.log)}

    xa, xb = scaled(a), scaled(b)
    # a bound decides only on its own side: a figure censored above may be higher still, never lower
    if a.censored != "below" and b.censored != "above" and seeds_above(xa, xb, metric.margin):
        return "better" if metric.higher_better else "worse"
    if b.censored != "below" and a.censored != "above" and seeds_above(xb, xa, metric.margin):
        return "worse" if metric.higher_better else "better"
    return None


class Baselines(BaseModel):
    """The shipped baselines: the cards, and how they were made."""

    command: str
    commit: str | None = None
    made: str | None = None
    machine: str = ""
    cards: list[Card]


BASELINES = "baselines.json"


def load_baselines(path=None) -> Baselines:
    """The baselines shipped with the package (or ``path``)."""
    text = (open(path).read() if path is not None
            else resources.files("evalsuite.scorecard").joinpath(BASELINES).read_text())
    return Baselines.model_validate(json.loads(text))
