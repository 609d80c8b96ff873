"""Reproduce the literature: each finding of docs/FINDINGS.md as a sweep (or probe) plus a verdict.

A verdict reads only stored results. It states the finding, the figures that bear on it, and
``reproduced``, ``not reproduced`` or ``inconclusive`` (with why); it never claims what was not
measured: a finding whose runs are missing or failed is inconclusive.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from evalsuite import frontier
from evalsuite.errors import UserError
from evalsuite.labels import memory_label
from evalsuite.reproduce_rules import BUDGET_FACTOR, CEILING, LEARNED_FRACTION, MARGIN, MIN_SEEDS, Cell, higher, not_higher
from evalsuite.sweep import SweepSpec
from evalsuite.records import TARGET_ACCURACY, RunRecord

SCALES = ("cpu", "paper")
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass
class Verdict:
    name: str
    finding: str
    status: str
    figures: list[str]
    why: str = ""

    def as_dict(self) -> dict:
        return {"name": self.name, "finding": self.finding, "status": self.status, "figures": self.figures, "why": self.why}


@dataclass
class Experiment:
    name: str
    finding: str
    source: str
    specs: dict[str, dict]                    # scale -> sweep spec (dict form)
    verdict: Callable[[list[dict], pd.DataFrame, dict], Verdict]
    minutes: dict[str, float]                 # expected run time per scale (2-core CPU / a GPU)
    probes: dict[str, list[dict]] = field(default_factory=dict)  # scale -> capacity-probe calls
    cells: Callable[[list[dict], dict], list[Cell]] | None = None  # the cells its verdict rests on

    def params(self, scale: str) -> dict:
        return PARAMS[self.name][scale]

    def judge(self, runs: list[dict], probes: pd.DataFrame, scale: str) -> Verdict:
        return self.verdict(runs, probes, self.params(scale))

    def spec(self, scale: str) -> SweepSpec | None:
        data = self.specs.get(scale)
        return None if data is None else SweepSpec(name=f"reproduce-{self.name}-{scale}", **data)


# ---- helpers over stored runs -------------------------------------------------------------------

def _missing(name, finding, cells: list[Cell]) -> Verdict | None:
    gone = [c.label for c in cells if not c.present]
    if gone:
        return Verdict(name, finding, INCONCLUSIVE, [c.figure() for c in cells],
                       f"no finished run for {', '.join(gone)}: run `evalsuite reproduce {name}`")
    return None


def _control(name, finding, control: Cell, figures: list[str]) -> Verdict | None:
    """Inconclusive unless the positive control (the model that should succeed) learned."""
    if control.learned:
        return None
    return Verdict(name, finding, INCONCLUSIVE, figures,
                   f"positive control failed: {control.label} did not learn this setting "
                   f"({_fmt(control.acc)}, chance {_fmt(control.floor)}), so a failure here says nothing about the model")


def _unsettled(cells: list[Cell]) -> str:
    """What each cell whose figure could still move with more budget, rates or seeds lacks."""
    parts = [f"{c.label}: {'; '.join(c.missing_for_settled())}" for c in cells
             if c.present and not c.stable and c.missing_for_settled()]
    return "; ".join(parts)


def contradicted(a: Cell, b: Cell) -> bool:
    """``a`` is not above ``b`` once budgets are fair: ``b`` given 4x the budget reaches a stable
    ``a``; or ``a`` is not above ``b`` and more budget does not change that (both figures stable,
    or both rerun at 4x with complete sweeps and seeds, and ``a`` not above there either)."""
    if not (a.present and b.present):
        return False
    long_b = b.long_acc
    if a.stable and long_b is not None and not b.incomplete() and a.acc - long_b <= MARGIN:
        return True
    if not not_higher(a, b):
        return False
    if a.stable and b.stable:
        return True
    long_a, long_b = a.long_acc, b.long_acc
    return (long_a is not None and long_b is not None and not a.incomplete() and not b.incomplete()
            and long_a - long_b <= MARGIN)


def _fmt(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _runnable(cells: list[Cell]) -> bool:
    """Whether `reproduce` can still run something that settles these cells (else only a harder
    setting can: a 4x rerun already moved a figure)."""
    return any(c.next_configs() for c in cells)


def _judge(name: str, finding: str, figures: list[str], checks: dict[str, bool | None], todo: str = "",
           runnable: bool = True) -> Verdict:
    """Each clause is True (shown), False (contradicted by settled runs) or None (not decidable:
    a run it rests on is unsettled). Reproduced when every clause holds; not reproduced when one
    is contradicted; otherwise inconclusive, saying what to run."""
    word = {True: "yes", False: "no", None: "undecided"}
    figures = figures + ["; ".join(f"{k}: {word[v]}" for k, v in checks.items())]
    if all(v is True for v in checks.values()):
        return Verdict(name, finding, REPRODUCED, figures)
    if any(v is False for v in checks.values()):
        return Verdict(name, finding, NOT_REPRODUCED, figures,
                       "contradicted: " + ", ".join(k for k, v in checks.items() if v is False))
    hint = (f"; `evalsuite reproduce {name}` runs what is missing" if runnable
            else "; more budget overturns a failure here, so a setting where it fails is needed")
    return Verdict(name, finding, INCONCLUSIVE, figures,
                   "undecided: " + ", ".join(k for k, v in checks.items() if v is None)
                   + (f" (to settle: {todo}{hint})" if todo else ""))


def _lrs(scale_lrs):
    return {"train.lr": scale_lrs}


CPU_LRS = [0.001, 0.003, 0.01]
PAPER_LRS = [0.0001, 0.000464, 0.00215, 0.01]  # Zoology: logspace(-4, -2, 4)
CPU_BASE = {"task": "recall", "model": "softmax", "preset": "default"}
# CPU budget: the default preset at 3 epochs of 40k examples (1,875 steps, early stop at 0.99 validation);
# cells that do not learn are rerun at 4x (7,500 steps) by the escalation.
CPU_SET = {"train.epochs": 3}
PAPER_BASE = {"task": "recall", "model": "softmax", "preset": "zoology"}


def mqar(runs, label, model, *, d_model, pairs, seq_len=None, **more) -> Cell:
    """The MQAR cell of ``model`` (``linear`` is elu+1 unless ``feature_map`` is given)."""
    where = {"task__name": "recall", "model__name": model, "model__d_model": d_model, "task__num_kv_pairs": pairs, **more}
    if seq_len is not None:
        where["task__seq_len"] = seq_len
    if model == "linear":
        where.setdefault("model__feature_map", "elu1")
    return Cell.of(runs, label, **where)


# ---- 1. softmax solves MQAR at small width --------------------------------------------------------

NEAR_PERFECT = CEILING  # "near 100%"


def cells_softmax(runs, p):
    return [mqar(runs, f"softmax d{p['d_model']} (T={T}, D={D})", "softmax", d_model=p["d_model"], seq_len=T, pairs=D)
            for T, D in p["settings"]]


def verdict_softmax(runs, probes, p) -> Verdict:
    name, finding = "softmax-mqar", FINDINGS["softmax-mqar"]
    cells = cells_softmax(runs, p)
    if (v := _missing(name, finding, cells)):
        return v
    figures = [c.figure() for c in cells]
    if not any(c.learned for c in cells):
        return Verdict(name, finding, INCONCLUSIVE, figures, "positive control failed: softmax learned none of the "
                                                             "settings, so the training set-up, not the model, is in question")
    checks = {f"{c.label} >= {NEAR_PERFECT}": (True if c.learned_at(NEAR_PERFECT) and len(c.seeds) >= 2
                                               else False if c.settled_below(NEAR_PERFECT) else None) for c in cells}
    return _judge(name, finding, figures, checks, _unsettled(cells) or "a second seed",
                  runnable=_runnable(cells))


# ---- 2. elu+1 depends on width and D --------------------------------------------------------------

def cells_linear_width(runs, p):
    lo, hi = p["pairs"]
    lin = {(w, D): mqar(runs, f"elu+1 d{w} D={D}", "linear", d_model=w, pairs=D, seq_len=p["seq_len"])
           for w, D in [(w, hi) for w in p["widths"]] + [(p["ref_width"], lo)]}
    soft = {D: mqar(runs, f"softmax d{p['ref_width']} D={D}", "softmax", d_model=p["ref_width"], pairs=D,
                    seq_len=p["seq_len"]) for D in (lo, hi)}
    return lin, soft


def verdict_linear_width(runs, probes, p) -> Verdict:
    name, finding = "linear-width", FINDINGS["linear-width"]
    lin, soft = cells_linear_width(runs, p)
    cells = [*lin.values(), *soft.values()]
    if (v := _missing(name, finding, cells)):
        return v
    lo, hi = p["pairs"]
    w0, w1, ref = p["widths"][0], p["widths"][-1], p["ref_width"]
    figures = [c.figure() for c in cells]
    if (v := _control(name, finding, soft[hi], figures)):
        return v
    same = lin[ref, hi]
    # falls short of softmax at the same width: the shortfall must be settled
    short = True if higher(soft[hi], same) and same.settled_below(soft[hi].acc - MARGIN) \
        else False if contradicted(soft[hi], same) else None
    # improves with width (at the larger D): the small width's shortfall must be settled
    small, large = lin[w0, hi], lin[w1, hi]
    grows = True if higher(large, small) and small.settled_below(large.acc - MARGIN) \
        else False if contradicted(large, small) else None
    # drops as D grows (at the reference width): the small D must be learned, the large D's drop settled
    few, many = lin[ref, lo], lin[ref, hi]
    drops = True if few.learned and higher(few, many) and many.settled_below(few.acc - MARGIN) \
        else False if few.learned and contradicted(few, many) else None
    return _judge(name, finding, figures, {f"falls short of softmax at d_model {ref}": short,
                                           f"improves from d_model {w0} to {w1}": grows,
                                           f"drops from D={lo} to D={hi}": drops}, _unsettled(cells),
                  runnable=_runnable(cells))


# ---- 3. capacity knee -----------------------------------------------------------------------------

# the memories of the capacity verdict, named by the one function that names probe rows
CAPACITY_MEMORIES = [memory_label(*m) for m in (("linear", "elu1"), ("linear", "dpfp", {"nu": 1}),
                                                ("linear", "dpfp", {"nu": 2}), ("linear", "dpfp", {"nu": 3}),
                                                ("softmax",))]


def probe_curves(probes: pd.DataFrame, d_key: int) -> dict[str, pd.DataFrame]:
    """Per memory, one row per S from the longest step budget probed: accuracy averaged over the
    seeds at that budget, ``seeds``, ``ran_out`` (some seed used every step: it may still have
    been learning) and ``base_steps`` (the memory's first budget). Only trained, setting-1 probes
    of the paper's variant at ``d_key``: other d_key or variants are never pooled in."""
    if probes is None or probes.empty or "d_key" not in probes:
        return {}
    rows = probes[(probes.trained == True) & (probes.setting == 1) & (probes.d_key == d_key)]  # noqa: E712
    if "variant" in rows:
        rows = rows[rows.variant.fillna("schlag") == "schlag"]
    if rows.empty:
        return {}
    rows = rows.assign(max_steps=rows.get("max_steps", pd.Series(0, index=rows.index)).fillna(0),
                       steps=rows.get("steps", pd.Series(0, index=rows.index)).fillna(0),
                       seed=rows.get("seed", pd.Series(0, index=rows.index)).fillna(0))
    rows = rows.assign(ran_out=rows.steps >= rows.max_steps, base_steps=rows.groupby("memory").max_steps.transform("min"))
    grouped = rows.groupby(["memory", "pairs", "max_steps"]).agg(
        accuracy=("accuracy", "mean"), seeds=("seed", "nunique"), ran_out=("ran_out", "any"),
        base_steps=("base_steps", "first")).reset_index()
    grouped = grouped.sort_values("max_steps").drop_duplicates(["memory", "pairs"], keep="last")
    return {m: df.sort_values("pairs") for m, df in grouped.groupby("memory")}


def knee_unsettled(curve: pd.DataFrame, threshold: float = TARGET_ACCURACY) -> tuple[str, list[int]] | None:
    """What the first S below ``threshold`` still needs before the knee can be cited, and the S
    values from it on: ``("seed", S)`` (a second seed), ``("steps", S)`` (4x the steps: a seed ran
    out of steps and may still have been learning); ``None`` when settled."""
    failing = curve[curve.accuracy < threshold]
    if failing.empty:
        return None
    first = failing.iloc[0]
    pending = [int(x) for x in curve.pairs if x >= first.pairs]
    if first.seeds < 2:
        return "seed", pending
    if first.ran_out and first.max_steps < BUDGET_FACTOR * first.base_steps:
        return "steps", pending
    return None  # two seeds, each probed at 4x or stopped by the paper's rule (10 evaluations without a better loss)


def verdict_capacity(runs, probes, p) -> Verdict:
    from evalsuite.analysis import half_point, knee

    name, finding = "capacity-knee", FINDINGS["capacity-knee"]
    need, d_key = CAPACITY_MEMORIES, p["d_key"]
    curves = probe_curves(probes, d_key)
    gone = [m for m in need if m not in curves]
    if gone:
        return Verdict(name, finding, INCONCLUSIVE, [], f"no probes of {', '.join(gone)} at d_key {d_key}: "
                                                         f"run `evalsuite reproduce {name}`")
    knees = {m: knee(curves[m]) for m in need}
    open_ = {m: knee_unsettled(curves[m]) for m in need}
    largest = int(min(curves[m].pairs.max() for m in need))
    figures = [f"d_key {d_key}, S up to {largest}, knee = largest S retrieved at >= {TARGET_ACCURACY} on held-out sequences "
               f"(mean over seeds): " + ", ".join(f"{m} {knees[m]}" + (" (unsettled)" if open_[m] else "") for m in need)]
    figures.append("50% point (S where accuracy falls through 0.5, log-interpolated): "
                   + ", ".join(f"{m} " + (f"{h:.0f}" if math.isfinite(h := half_point(curves[m])) else f">= {largest}")
                               for m in need))
    figures += [f"{m}: " + ", ".join(f"S={int(r.pairs)} {r.accuracy:.3f}" for r in curves[m].itertuples())
                + f" ({int(curves[m].seeds.min())}-{int(curves[m].seeds.max())} seeds, up to {int(curves[m].max_steps.max()):,} steps)"
                for m in need]
    # positive control: every memory retrieves the smallest S, or the probe did not train
    untrained = [m for m in need if curves[m].accuracy.iloc[0] < TARGET_ACCURACY]
    if untrained:
        return Verdict(name, finding, INCONCLUSIVE, figures,
                       f"positive control failed: {', '.join(untrained)} did not retrieve even {int(curves[untrained[0]].pairs.iloc[0])} pairs")

    def decided(value: bool, *memories) -> bool | None:
        return value if not any(open_[m] for m in memories) else None

    def out(a: str, b: str) -> bool:  # b's knee beyond a's, or both at the top of the range
        return knees[b] > knees[a] or knees[a] == knees[b] >= largest

    elu, d1, d2, d3 = need[:4]
    return _judge(name, finding, figures, {
        f"elu+1 knee within [d_key/2, 2 d_key] = [{d_key // 2}, {2 * d_key}]": decided(d_key / 2 <= knees[elu] <= 2 * d_key, elu),
        "DPFP nu=1 beyond elu+1": decided(out(elu, d1), elu, d1),
        "DPFP nu=2 beyond nu=1": decided(out(d1, d2), d1, d2),
        "DPFP nu=3 beyond nu=2": decided(out(d2, d3), d2, d3),
        "softmax shows no knee in the range": decided(knees["softmax"] >= largest, "softmax")},
        "; ".join(f"{m} at S {open_[m][1]}: " + ("a second seed" if open_[m][0] == "seed" else f"{BUDGET_FACTOR}x the steps")
                  for m in need if open_[m]))


# ---- 4. delta beats linear at equal state ---------------------------------------------------------

def cells_delta(runs, p):
    D, T = p["pairs"], p["seq_len"]
    pairs = {w: (mqar(runs, f"delta d{w} D={D}", "delta", d_model=w, pairs=D, seq_len=T),
                 mqar(runs, f"elu+1 d{w} D={D}", "linear", d_model=w, pairs=D, seq_len=T)) for w in p["widths"]}
    control = mqar(runs, f"softmax d{p['control_width']} D={D}", "softmax", d_model=p["control_width"], pairs=D, seq_len=T)
    return pairs, control


def verdict_delta(runs, probes, p) -> Verdict:
    name, finding = "delta-vs-linear", FINDINGS["delta-vs-linear"]
    pairs, control = cells_delta(runs, p)
    cells = [c for pair in pairs.values() for c in pair] + [control]
    if (v := _missing(name, finding, cells)):
        return v
    figures = [c.figure() for c in cells]
    figures += [f"d_model {w}: state delta {d.state:,.0f} vs elu+1 {lin.state:,.0f} floats" for w, (d, lin) in pairs.items()]
    if (v := _control(name, finding, control, figures)):
        return v
    gaps, beats = {}, {}
    for w, (d, lin) in pairs.items():
        gaps[w] = d.acc - lin.acc
        equal_state = d.state <= lin.state * 1.05
        beats[w] = (True if equal_state and higher(d, lin) and lin.settled_below(d.acc - MARGIN)
                    else False if contradicted(d, lin) else None)
    ws = sorted(pairs)
    beat = True if any(beats[w] is True for w in ws) else False if all(beats[w] is False for w in ws) else None
    small, large = ws[0], ws[-1]
    most_small = None
    if (beats[small] is True or beats[large] is True) and all(c.stable for pair in pairs.values() for c in pair):
        most_small = gaps[small] >= gaps[large] - MARGIN  # gaps of figures that more budget would move say nothing
    figures.append("gap (delta - elu+1): " + ", ".join(f"d_model {w}: {gaps[w]:+.3f}" for w in ws))
    return _judge(name, finding, figures, {"delta above elu+1 at equal or smaller state": beat,
                                           f"gap at d_model {small} at least the gap at {large} (margin {MARGIN})": most_small},
                  _unsettled(cells), runnable=_runnable(cells))


# ---- 5. hybrids recover recall --------------------------------------------------------------------

def cells_hybrid(runs, p):
    kw = dict(d_model=p["d_model"], pairs=p["pairs"], seq_len=p["seq_len"], model__n_layers=p["n_layers"])
    soft = mqar(runs, "softmax", "softmax", **kw)
    lin = mqar(runs, "elu+1", "linear", **kw)
    hybrids = [mqar(runs, f"hybrid {pat}", "hybrid", model__pattern=pat, **kw) for pat in p["patterns"]]
    return soft, lin, hybrids


RECOVERED = 0.8


def verdict_hybrid(runs, probes, p) -> Verdict:
    name, finding = "hybrid-recovery", FINDINGS["hybrid-recovery"]
    soft, lin, hybrids = cells_hybrid(runs, p)
    cells = [soft, lin, *hybrids]
    if (v := _missing(name, finding, cells)):
        return v
    figures = [c.figure() for c in cells]
    if (v := _control(name, finding, soft, figures)):
        return v
    if contradicted(soft, lin):
        return Verdict(name, finding, INCONCLUSIVE, figures, "the pure elu+1 model reaches softmax on this setting, so "
                                                             "there is nothing to recover: choose a harder setting")
    gap = soft.acc - lin.acc
    rec = {h.label: (h.acc - lin.acc) / gap if gap > 0 else math.nan for h in hybrids}
    figures.append("share of the elu+1-to-softmax gap recovered: " + ", ".join(f"{k} {v:.0%}" for k, v in rec.items()))
    top = max(hybrids, key=lambda h: h.acc)
    fails = True if higher(soft, lin) and lin.settled_below(soft.acc - MARGIN) else None
    recovers = (True if rec[top.label] >= RECOVERED and top.learned
                else False if all(h.settled_below(lin.acc + RECOVERED * gap) for h in hybrids) else None)
    return _judge(name, finding, figures, {"pure elu+1 falls short of softmax, at 4x the budget too": fails,
                                           f"a hybrid recovers >= {RECOVERED:.0%} of the gap": recovers}, _unsettled(cells),
                  runnable=_runnable(cells))


def cells_pair(runs, task: str, **where) -> list[Cell]:
    """Softmax and elu+1 on ``task`` (over every other setting the experiment's spec holds)."""
    return [Cell.of(runs, "softmax", task__name=task, model__name="softmax", **where),
            Cell.of(runs, "elu+1", task__name=task, model__name="linear", model__feature_map="elu1", **where)]


# ---- 6. ListOps ordering --------------------------------------------------------------------------

def verdict_listops(runs, probes, p) -> Verdict:
    name, finding = "listops-order", FINDINGS["listops-order"]
    soft, lin = cells_pair(runs, "listops")
    if (v := _missing(name, finding, [soft, lin])):
        return v
    figures = [c.figure() for c in (soft, lin)] + ["LRA Table 1: 36.37 vs 16.13 at length 2,000 (untuned); the floor is "
                                                   "the majority-class rate"]
    if soft.acc <= soft.floor + MARGIN:
        return Verdict(name, finding, INCONCLUSIVE, figures, f"positive control failed: softmax ({_fmt(soft.acc)}) is "
                                                             f"not above the majority-class rate ({_fmt(soft.floor)}) by {MARGIN}")
    order = (True if higher(soft, lin) and lin.settled_below(soft.acc - MARGIN)
             else False if contradicted(soft, lin) else None)
    far = max(soft.acc, lin.acc) < 0.9
    return _judge(name, finding, figures, {"softmax above elu+1": order, "both far below 100% (< 0.9)": far},
                  _unsettled([soft, lin]), runnable=_runnable([soft, lin]))


# ---- 7. Copy --------------------------------------------------------------------------------------

LOW_LOSS = 0.1


def verdict_copy(runs, probes, p) -> Verdict:
    name, finding = "copy", FINDINGS["copy"]
    soft, lin = cells_pair(runs, "copy")
    if (v := _missing(name, finding, [soft, lin])):
        return v
    figures = [f"{c.figure()}; test loss {_fmt(c.loss)}, best validation at step "
               f"{_fmt_steps(c)}" for c in (soft, lin)]
    if soft.loss >= LOW_LOSS:
        return Verdict(name, finding, INCONCLUSIVE, figures, f"positive control failed: softmax's test loss "
                                                             f"{_fmt(soft.loss)} is not below {LOW_LOSS}")
    low = (True if lin.loss < LOW_LOSS and len(lin.seeds) >= 2 and len(soft.seeds) >= 2
           else False if lin.loss >= LOW_LOSS and lin.stable else None)
    return _judge(name, finding, figures, {f"both test losses below {LOW_LOSS}": low}, _unsettled([lin]) or "a second seed",
                  runnable=_runnable([soft, lin]))


def _fmt_steps(c: Cell) -> str:
    return ", ".join(f"{r.metrics['best_step']} of {r.metrics['steps']}" for r in c.best_runs)


# ---- 8. Sharpness ---------------------------------------------------------------------------------

def cells_sharpness(runs, p) -> list[Cell]:
    return cells_pair(runs, "recall", model__d_model=p["d_model"], task__num_kv_pairs=p["pairs"], task__seq_len=p["seq_len"])


def _retrieval(run):
    a = run.metrics.get("analysis") or {}
    rows = a.get("sharpness") or []
    sel = a.get("retrieval_layer")
    for row in rows:
        if sel and row["layer"] == sel["layer"] and row["head"] == sel["head"]:
            return row, [c for c in a.get("sharpness_by_context", []) if c["layer"] == row["layer"] and c["head"] == row["head"]]
    return None, []


def verdict_sharpness(runs, probes, p) -> Verdict:
    name, finding = "sharpness", FINDINGS["sharpness"]
    soft, lin = cells_sharpness(runs, p)
    if (v := _missing(name, finding, [soft, lin])):
        return v
    figures = [c.figure() for c in (soft, lin)]
    not_learned = [c.label for c in (soft, lin) if not c.learned]
    if not_learned:
        return Verdict(name, finding, INCONCLUSIVE, figures, f"{' and '.join(not_learned)} did not learn this setting; "
                                                             "sharpness is compared between models that both solved it")
    rows = {c.label: [_retrieval(r) for r in c.best_runs] for c in (soft, lin)}
    if any(row is None for c in rows.values() for row, _ in c):
        return Verdict(name, finding, INCONCLUSIVE, figures, "the runs carry no sharpness analysis")
    ent = {k: [row["entropy"] for row, _ in v] for k, v in rows.items()}
    mass = {k: [row["answer_mass"] for row, _ in v] for k, v in rows.items()}
    figures.append("retrieval layer (most weight on the answer), mean over seeds: " + "; ".join(
        f"{k} entropy {_fmt(sum(ent[k]) / len(ent[k]))} nats (seeds {', '.join(_fmt(e) for e in ent[k])}), answer mass "
        f"{_fmt(sum(mass[k]) / len(mass[k]))}" for k in ent))
    sharper = max(ent["softmax"]) < 0.5 * min(ent["elu+1"])
    growth = []
    for _, ctx in rows["elu+1"]:
        ctx = sorted(ctx, key=lambda c: c["context"])
        if len(ctx) >= 2:
            growth.append(ctx[-1]["entropy"] - ctx[0]["entropy"])
            figures.append(f"elu+1 entropy from context {ctx[0]['context']:.0f} to {ctx[-1]['context']:.0f}: "
                           f"{_fmt(ctx[0]['entropy'])} -> {_fmt(ctx[-1]['entropy'])}")
    grows = (min(growth) > MARGIN) if growth else None
    return _judge(name, finding, figures, {"softmax's entropy below half of elu+1's (every seed)": sharper,
                                           f"elu+1's entropy grows with context by > {MARGIN} nats (every seed)": grows})


# ---- 9. the recall-memory frontier (evalsuite/frontier.py) --------------------------------------

def _frontier_verdict(name: str, check):
    def verdict(runs, probes, p) -> Verdict:
        finding = FINDINGS[name]
        fam = frontier.cells(runs, p["scale"], p["setting"])
        cells = [c for cs in fam.values() for c in cs]
        if (v := _missing(name, finding, cells)):
            return v
        figures = [c.figure() for c in cells]
        if (v := _control(name, finding, fam["softmax"][0], figures)):
            return v
        checks, more = check(fam)
        return _judge(name, finding, figures + more + [f"published: {frontier.PUBLISHED}"], checks, _unsettled(cells),
                      runnable=_runnable(cells))
    return verdict


def _frontier_cells(runs, p) -> list[Cell]:
    return [c for cs in frontier.cells(runs, p["scale"], p["setting"]).values() for c in cs]


# ---- 10. the field's other probes: repeated context, parity, induction extrapolation -------------

def cells_jrt(runs, p) -> dict[tuple[str, int], Cell]:
    """(model label, passes) -> the MQAR cell at the experiment's setting."""
    out = {}
    for label, model, width, more in p["models"]:
        for passes in (1, 2):
            where = {"task__num_passes": None if passes == 1 else passes, **more}
            out[label, passes] = mqar(runs, f"{label} d{width}, {passes} pass{'es' * (passes > 1)}", model, d_model=width,
                                      pairs=p["pairs"], seq_len=p["seq_len"], **where)
    return out


def _raises(two: Cell, one: Cell) -> bool | None:
    """Two passes above one, with one pass's shortfall settled (True); contradicted (False)."""
    if higher(two, one) and one.settled_below(two.acc - MARGIN):
        return True
    return False if contradicted(two, one) else None


def _unchanged(a: Cell, b: Cell) -> bool | None:
    """Both learned and neither above the other by the margin; False when one is above with both stable."""
    if not (a.present and b.present):
        return None
    if higher(a, b) or higher(b, a):
        return False if a.stable and b.stable else None
    return True if a.learned and b.learned and len(a.seeds) >= MIN_SEEDS and len(b.seeds) >= MIN_SEEDS else None


def verdict_jrt(runs, probes, p) -> Verdict:
    name, finding = "jrt", FINDINGS["jrt"]
    cells = cells_jrt(runs, p)
    if (v := _missing(name, finding, list(cells.values()))):
        return v
    figures = [c.figure() for c in cells.values()]
    if (v := _control(name, finding, cells["softmax", 1], figures)):
        return v
    fixed = [label for label, *_ in p["models"] if label != "softmax"]
    # "at a state where one pass fails": one pass must fall short of softmax, else there is nothing to raise
    checks = {}
    for label in fixed:
        one, two = cells[label, 1], cells[label, 2]
        if contradicted(cells["softmax", 1], one):
            checks[f"{label}: one pass falls short of softmax"] = False
        else:
            checks[f"{label}: two passes above one pass"] = _raises(two, one)
    checks["softmax: two passes equal to one"] = _unchanged(cells["softmax", 1], cells["softmax", 2])
    figures.append("gain from the second pass: " + ", ".join(
        f"{label} {cells[label, 2].acc - cells[label, 1].acc:+.3f}" for label, *_ in p["models"]))
    figures.append("published (docs/FINDINGS.md, finding 10; Arora et al. 2024): repeating the context raises recurrent "
                   "models' recall by +11.0 +- 1.3 points (16 models, 6 tasks, LM scale); MQAR with the pairs written "
                   "twice is our token-level version")
    return _judge(name, finding, figures, checks, _unsettled(list(cells.values())), runnable=_runnable(list(cells.values())))


def cells_parity(runs, p) -> dict[str, Cell]:
    where = {"task__name": "word_problem", "task__group": "Z2", "task__seq_len": p["seq_len"], "model__d_model": p["d_model"]}
    return {"delta, beta in (0, 2)": Cell.of(runs, "delta, beta in (0, 2)", model__name="delta",
                                             model__negative_eigenvalues=True, **where),
            "delta, beta in (0, 1)": Cell.of(runs, "delta, beta in (0, 1)", model__name="delta",
                                             model__negative_eigenvalues=None, **where),
            "elu+1": Cell.of(runs, "elu+1", model__name="linear", model__feature_map="elu1", **where)}


PARITY_LEVEL = CEILING  # "learns parity": at least this accuracy at every position of the training length


def _does_not_learn(c: Cell, level: float) -> bool | None:
    """Below ``level`` and settled there (True); at or above it at either budget (False)."""
    if c.learned_at(level) or (c.long_acc is not None and c.long_acc >= level):
        return False
    return True if c.settled_below(level) else None


def verdict_parity(runs, probes, p) -> Verdict:
    name, finding = "parity-negative-eigenvalues", FINDINGS["parity-negative-eigenvalues"]
    cells = cells_parity(runs, p)
    if (v := _missing(name, finding, list(cells.values()))):
        return v
    figures = [c.figure() for c in cells.values()]
    for c in cells.values():
        longest = _eval_accuracies(c)
        if longest:
            figures.append(f"{c.label} at test lengths: " + ", ".join(f"T={T} {a:.3f}" for T, a in longest.items()))
    neg = cells["delta, beta in (0, 2)"]
    if not neg.learned_at(PARITY_LEVEL) and not (neg.long_acc is not None and neg.long_acc >= PARITY_LEVEL):
        if neg.settled_below(PARITY_LEVEL) or not neg.missing_for_settled():
            return Verdict(name, finding, INCONCLUSIVE, figures,
                           f"positive control failed: the delta rule with beta in (0, 2) did not reach {PARITY_LEVEL} "
                           "with a full sweep, two seeds and 4x the budget, so the others' failure says nothing here")
    learns = True if neg.learned_at(PARITY_LEVEL) and len(neg.seeds) >= MIN_SEEDS else None
    figures.append("published (docs/FINDINGS.md, finding 12; Grazzi et al. 2024): with eigenvalues in [-1, 1] "
                   "(beta in (0, 2)) the delta rule solves parity, which beta in (0, 1) cannot")
    return _judge(name, finding, figures, {
        f"delta, beta in (0, 2) reaches {PARITY_LEVEL} (two seeds)": learns,
        f"delta, beta in (0, 1) stays below {PARITY_LEVEL}": _does_not_learn(cells["delta, beta in (0, 1)"], PARITY_LEVEL),
        f"elu+1 stays below {PARITY_LEVEL}": _does_not_learn(cells["elu+1"], PARITY_LEVEL)},
        _unsettled(list(cells.values())), runnable=_runnable(list(cells.values())))


def _run_eval_accuracies(r: RunRecord) -> dict[int, float]:
    """Test length -> one run's accuracy on each eval segment (lengths beyond training)."""
    out = {}
    for i, seg in enumerate(r.config["task"].get("eval_segments") or []):
        acc = r.metrics.get(f"eval_{i}_accuracy")
        if acc is not None:
            out[seg["seq_len"]] = acc
    return out


def _eval_accuracies(c: Cell) -> dict[int, float]:
    """Test length -> mean accuracy over the best runs' seeds on each eval segment."""
    out: dict[int, list[float]] = {}
    for r in c.best_runs:
        for T, acc in _run_eval_accuracies(r).items():
            out.setdefault(T, []).append(acc)
    return {T: sum(v) / len(v) for T, v in sorted(out.items())}


def cells_induction(runs, p) -> dict[str, Cell]:
    where = {"task__name": "induction", "task__seq_len": p["seq_len"], "model__d_model": p["d_model"]}
    return {label: Cell.of(runs, label, model__name=model, **more, **where) for label, model, more in p["models"]}


def verdict_induction(runs, probes, p) -> Verdict:
    name, finding = "induction-extrapolation", FINDINGS["induction-extrapolation"]
    cells = cells_induction(runs, p)
    if (v := _missing(name, finding, list(cells.values()))):
        return v
    figures = [c.figure() for c in cells.values()]
    by_len = {label: _eval_accuracies(c) for label, c in cells.items()}
    for label, accs in by_len.items():
        figures.append(f"{label}, trained at T={p['seq_len']}, tested at: " + ", ".join(f"T={T} {a:.3f}" for T, a in accs.items()))
    soft = cells["softmax"]
    if (v := _control(name, finding, soft, figures)):
        return v
    level = soft.floor + LEARNED_FRACTION * (1 - soft.floor)
    far = [T for T in by_len["softmax"] if T >= p["beyond"] * p["seq_len"]]
    if not far:
        return Verdict(name, finding, INCONCLUSIVE, figures, f"no test length of at least {p['beyond']}x the training length")
    # contradicted when the best rate's seeds (two or more) all hold the learned level at every far
    # length; shown when every run of the cell (every rate, seed and budget) falls below it there
    seeds_ok = len(soft.seeds) >= MIN_SEEDS
    far_accs = [_run_eval_accuracies(r) for r in soft.runs]
    best_far = [_run_eval_accuracies(r) for r in soft.best_runs]
    if seeds_ok and all(all(a.get(T, 0.0) >= level for T in far) for a in best_far):
        drops = False
    elif seeds_ok and all(all(a.get(T, 1.0) < level for T in far) for a in far_accs):
        drops = True
    else:
        drops = None
    holds = {label: all(accs.get(T, 0.0) >= level for T in far) for label, accs in by_len.items() if label != "softmax"}
    figures.append(f"learned level {level:.3f} (halfway from the floor {soft.floor:.3f} to 1); lengths judged: {far}")
    figures.append("published (docs/FINDINGS.md, finding 11; Mamba, Table 2: vocab 16, train 256): attention variants "
                   "generalise to at most about 2x the training length, Mamba to 2^20. Deviations: we train at T 64 and "
                   "test to 1,024 (16x); our softmax has no positional encoding (a short convolution supplies order), "
                   "where the paper's attention variants used absolute, RoPE and xPos positions")
    checks = {f"softmax below {level:.3f} at {p['beyond']}x the training length and beyond": drops}
    return _judge(name, finding, figures + [f"{label} holds the learned level at {p['beyond']}x and beyond: "
                                            f"{'yes' if h else 'no'} (reported, not judged)" for label, h in holds.items()],
                  checks, _unsettled([soft]) or "a second seed", runnable=_runnable([soft]))


FINDINGS = {
    "softmax-mqar": "Softmax attention solves MQAR at small width (2 layers, 1 head, d_model 64; (T, D) = (64, 4), (128, 8)).",
    "linear-width": "elu+1 linear attention falls short of softmax at the same width, improves as d_model grows, and drops as D grows.",
    "capacity-knee": "One memory layer, S pairs then one read: elu+1 errs past about d_key pairs, DPFP's knee moves out with nu (2 nu d_key), softmax has no knee in the range.",
    "delta-vs-linear": "The delta rule beats additive (elu+1) linear attention on MQAR at equal state, most at small width.",
    "hybrid-recovery": "Replacing one of two linear layers with softmax recovers most of softmax's MQAR accuracy where pure linear fails.",
    "listops-order": "ListOps: softmax above elu+1 linear attention, both far below 100%.",
    "copy": "Copy: softmax and elu+1 linear attention both reach a low loss (linear may converge more slowly).",
    "sharpness": "Softmax concentrates its weight on the queried key; elu+1's implicit weights are much flatter, and their entropy grows with context length.",
    "frontier-delta": f"The delta rule reaches MQAR accuracy {frontier.LEVEL} with less state than additive (elu+1) and decayed (GLA, Mamba-2, RetNet) linear attention.",
    "frontier-swa": f"Sliding-window attention needs far more state ({frontier.FAR:g}x or more) than fixed-state mixers for the same recall.",
    "frontier-based": "Based sits above both of its parts (Taylor linear attention, sliding-window attention) at no more state.",
    "jrt": "Reading the context twice (just read twice) raises a fixed-state model's MQAR recall (elu+1, delta) where one pass falls short, while softmax is unchanged.",
    "parity-negative-eigenvalues": "With beta in (0, 2) (eigenvalues in (-1, 1)) the delta rule learns parity, where beta in (0, 1) and elu+1 linear attention do not.",
    "induction-extrapolation": "On induction heads, softmax attention generalises to at most about 2x its training length.",
}

PAPER_ZOOLOGY_PAIRS = [[64, 4], [128, 8], [256, 16], [512, 64]]

# Verdict parameters per scale: the widths and settings each verdict reads (paper: the papers' own).
PARAMS = {
    "softmax-mqar": {"cpu": {"d_model": 64, "settings": [(64, 4), (128, 8)]},
                     "paper": {"d_model": 64, "settings": [(64, 4), (128, 8)]}},
    "linear-width": {"cpu": {"widths": [32, 64, 128], "ref_width": 64, "pairs": (4, 16), "seq_len": 64},
                     "paper": {"widths": [64, 128, 256, 512], "ref_width": 64, "pairs": (4, 16), "seq_len": 256}},
    "capacity-knee": {"cpu": {"d_key": 16}, "paper": {"d_key": 64}},
    "delta-vs-linear": {"cpu": {"widths": [32, 64], "pairs": 16, "seq_len": 64, "control_width": 64},
                        "paper": {"widths": [64, 128, 256], "pairs": 64, "seq_len": 512, "control_width": 64}},
    "hybrid-recovery": {"cpu": {"d_model": 64, "pairs": 16, "seq_len": 64, "n_layers": 2, "patterns": ["SL", "LS"]},
                        "paper": {"d_model": 64, "pairs": 16, "seq_len": 256, "n_layers": 4, "patterns": ["LS", "SL", "LLLS"]}},
    "listops-order": {"cpu": {}, "paper": {}},
    "copy": {"cpu": {}, "paper": {}},
    "sharpness": {"cpu": {"d_model": 64, "pairs": 4, "seq_len": 64},
                  "paper": {"d_model": 64, "pairs": 16, "seq_len": 256}},
    "jrt": {"cpu": {"pairs": 16, "seq_len": 96, "models": [("elu+1", "linear", 16, {}), ("delta", "delta", 16, {}),
                                                            ("softmax", "softmax", 32, {})]},
            "paper": {"pairs": 16, "seq_len": 256, "models": [("elu+1", "linear", 64, {}), ("delta", "delta", 64, {}),
                                                               ("softmax", "softmax", 64, {})]}},
    "parity-negative-eigenvalues": {"cpu": {"seq_len": 64, "d_model": 32}, "paper": {"seq_len": 64, "d_model": 128}},
    "induction-extrapolation": {
        "cpu": {"seq_len": 64, "d_model": 64, "beyond": 4, "models": [("softmax", "softmax", {}), ("delta", "delta", {})]},
        "paper": {"seq_len": 256, "d_model": 64, "beyond": 4, "models": [("softmax", "softmax", {}), ("delta", "delta", {})]}},
    **{name: {"cpu": {"scale": "cpu", "setting": {"task.seq_len": 64, "task.num_kv_pairs": 16}},
              "paper": {"scale": "paper", "setting": {"task.vocab_size": 8192}}}  # the zoology-mixture preset's runs
       for name in ("frontier-delta", "frontier-swa", "frontier-based")},
}

FRONTIER_PAPER_LRS = [0.001, 0.00316, 0.01, 0.0316]  # Zoology's README plot: logspace(-3, -1.5, 4)
# one sweep behind the three frontier verdicts (shared run ids: each run trains once)
FRONTIER_SPECS = {
    # the base is itself a point (the softmax control at the middle rate), so it adds no run
    "cpu": {"base": {**CPU_BASE, "model.d_model": 32, "train.lr": CPU_LRS[1]}, "set": {**CPU_SET, "task.num_kv_pairs": 16},
            "points": frontier.points("cpu", CPU_LRS)},
    # Zoology's README plot (zoology/experiments/030325_new_arch): the recall preset zoology-mixture
    # (train (T, D) = (64, 4) x 100k, (128, 8), (256, 16), (256, 32), (256, 64) x 20k each; test to
    # (1024, 256)), 2 layers, 2 heads, no MLP, no positions, batch 256, 32 epochs, rates
    # logspace(-3, -1.5, 4). Deviations: our short convolution (kernel 3) stands in for its BaseConv
    # (kernel 3 plus an implicit long convolution); Based at width 64 only.
    "paper": {"base": {"task": "recall", "model": "softmax", "preset": "zoology-mixture", "model.d_model": 128,
                       "train.lr": FRONTIER_PAPER_LRS[1]},
              "points": frontier.points("paper", FRONTIER_PAPER_LRS)},
}
ALIASES = {"frontier": ["frontier-delta", "frontier-swa", "frontier-based"]}


def _flat(parts) -> list[Cell]:
    """Every Cell in nested tuples, lists and dicts of cells."""
    if isinstance(parts, Cell):
        return [parts]
    items = parts.values() if isinstance(parts, dict) else parts
    return [c for part in items for c in _flat(part)]


def _rows(*rows) -> dict:
    """A joint grid axis over (model, d_model, T, D) rows, crossed with the CPU learning rates."""
    return {"model,model.d_model,task.seq_len,task.num_kv_pairs": [list(r) for r in rows], "train.lr": CPU_LRS}


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    Experiment("softmax-mqar", FINDINGS["softmax-mqar"], "Zoology (Arora et al. 2023), Figure 2", {
        "cpu": {"base": CPU_BASE, "set": CPU_SET, "grid": _rows(("softmax", 64, 64, 4), ("softmax", 64, 128, 8))},
        "paper": {"base": PAPER_BASE, "grid": {"task.seq_len,task.num_kv_pairs": [[64, 4], [128, 8]], **_lrs(PAPER_LRS)},
                  "set": {"model.d_model": 64}},
    }, verdict_softmax, {"cpu": 4, "paper": 60}, cells=lambda runs, p: cells_softmax(runs, p)),
    Experiment("linear-width", FINDINGS["linear-width"], "Zoology Figure 2; Based recall/state trade-off", {
        "cpu": {"base": {**CPU_BASE, "model": "linear"}, "set": CPU_SET,
                "grid": _rows(("linear", 32, 64, 16), ("linear", 64, 64, 16), ("linear", 128, 64, 16), ("linear", 64, 64, 4),
                              ("softmax", 64, 64, 16), ("softmax", 64, 64, 4))},
        "paper": {"base": {**PAPER_BASE, "model": "linear"},
                  "grid": {"model.d_model": [64, 128, 256, 512], "task.seq_len,task.num_kv_pairs": [[256, 4], [256, 16]],
                           **_lrs(PAPER_LRS)},
                  "points": [{"model": "softmax", "model.d_model": 64, "task.num_kv_pairs": D, "task.seq_len": 256,
                              "train.lr": lr} for lr in PAPER_LRS for D in (4, 16)]},
    }, verdict_linear_width, {"cpu": 30, "paper": 240},
        cells=lambda runs, p: [c for part in cells_linear_width(runs, p) for c in part.values()]),
    Experiment("capacity-knee", FINDINGS["capacity-knee"], "Schlag et al. 2021, section 6.1, setting 1", {}, verdict_capacity,
               {"cpu": 6, "paper": 30},
               probes={"cpu": [dict(memory="linear", feature_map="elu1"), *[dict(memory="linear", feature_map="dpfp",
                                                                                 feature_map_options={"nu": n}) for n in (1, 2, 3)],
                               dict(memory="softmax")],
                       "paper": [dict(memory="linear", feature_map="elu1", d_key=64, pairs=[20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600]),
                                 *[dict(memory="linear", feature_map="dpfp", feature_map_options={"nu": n}, d_key=64,
                                        pairs=[20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600]) for n in (1, 2, 3)],
                                 dict(memory="softmax", d_key=64, pairs=[20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600])]}),
    Experiment("delta-vs-linear", FINDINGS["delta-vs-linear"], "DeltaNet (Yang et al. 2024), MQAR; MAD in-context recall", {
        "cpu": {"base": {**CPU_BASE, "model": "delta"}, "set": CPU_SET,
                "grid": _rows(("delta", 32, 64, 16), ("delta", 64, 64, 16), ("linear", 32, 64, 16), ("linear", 64, 64, 16),
                              ("softmax", 64, 64, 16))},
        "paper": {"base": {**PAPER_BASE, "model": "delta"},
                  "grid": {"model": ["delta", "linear"], "model.d_model": [64, 128, 256], **_lrs(PAPER_LRS)},
                  "set": {"task.seq_len": 512, "task.num_kv_pairs": 64},
                  "points": [{"model": "softmax", "model.d_model": 64, "train.lr": lr} for lr in PAPER_LRS]},
    }, verdict_delta, {"cpu": 15, "paper": 120}, cells=lambda runs, p: _flat(cells_delta(runs, p))),
    Experiment("hybrid-recovery", FINDINGS["hybrid-recovery"], "Zoology; DeltaNet hybrids; 3:1 production hybrids", {
        "cpu": {"base": {**CPU_BASE, "model": "hybrid"}, "set": {**CPU_SET, "task.num_kv_pairs": 16},
                "grid": {"model.pattern": ["SL", "LS"], "train.lr": CPU_LRS},
                "points": [{"model": m, "train.lr": lr} for m in ("softmax", "linear") for lr in CPU_LRS]},
        "paper": {"base": {**PAPER_BASE, "model": "hybrid"},
                  "grid": {"model.pattern": ["LS", "SL", "LLLS"], **_lrs(PAPER_LRS)},
                  "set": {"model.n_layers": 4, "task.seq_len": 256, "task.num_kv_pairs": 16},
                  "points": [{"model": m, "train.lr": lr, "model.n_layers": 4} for m in ("softmax", "linear") for lr in PAPER_LRS]},
    }, verdict_hybrid, {"cpu": 12, "paper": 90}, cells=lambda runs, p: _flat(cells_hybrid(runs, p))),
    Experiment("listops-order", FINDINGS["listops-order"], "LRA (Tay et al. 2021), Table 1", {
        "cpu": {"base": {"task": "listops", "model": "softmax"}, "grid": {"model": ["softmax", "linear"], **_lrs(CPU_LRS)},
                "set": {"train.num_train": 20000, "train.epochs": 3}},
        "paper": {"base": {"task": "listops", "model": "softmax", "preset": "lra"},
                  "grid": {"model": ["softmax", "linear"], **_lrs(PAPER_LRS)}},
    }, verdict_listops, {"cpu": 12, "paper": 240}, cells=lambda runs, p: cells_pair(runs, "listops")),
    Experiment("copy", FINDINGS["copy"], "Katharopoulos et al. 2020, Figure 2", {
        "cpu": {"base": {"task": "copy", "model": "softmax"}, "grid": {"model": ["softmax", "linear"], **_lrs(CPU_LRS)},
                "set": {"train.epochs": 5}},  # pinned: the default preset's budget may change
        "paper": {"base": {"task": "copy", "model": "softmax", "preset": "paper"},
                  "grid": {"model": ["softmax", "linear"], **_lrs(PAPER_LRS)}},
    }, verdict_copy, {"cpu": 5, "paper": 60}, cells=lambda runs, p: cells_pair(runs, "copy")),
    Experiment("sharpness", FINDINGS["sharpness"], "the seed documents' geometric reading", {
        "cpu": {"base": CPU_BASE, "set": {**CPU_SET, "task.num_kv_pairs": 4}, "grid": {"model": ["softmax", "linear"], "train.lr": CPU_LRS}},
        "paper": {"base": PAPER_BASE, "grid": {"model": ["softmax", "linear"], **_lrs(PAPER_LRS)},
                  "set": {"model.d_model": 64, "task.seq_len": 256, "task.num_kv_pairs": 16}},
    }, verdict_sharpness, {"cpu": 3, "paper": 30}, cells=cells_sharpness),
    Experiment("jrt", FINDINGS["jrt"], "Arora et al. 2024, Just read twice (FINDINGS 10)", {
        "cpu": {"base": {**CPU_BASE, "model": "linear"}, "set": {**CPU_SET, "task.seq_len": 96, "task.num_kv_pairs": 16},
                "grid": {"model,model.d_model": [["linear", 16], ["delta", 16], ["softmax", 32]], "task.num_passes": [1, 2],
                         "train.lr": CPU_LRS}},
        "paper": {"base": {**PAPER_BASE, "model": "linear", "preset": "zoology-256"},
                  "grid": {"model": ["linear", "delta", "softmax"], "task.num_passes": [1, 2], **_lrs(PAPER_LRS)},
                  "set": {"task.num_kv_pairs": 16}},
    }, verdict_jrt, {"cpu": 30, "paper": 120}, cells=lambda runs, p: list(cells_jrt(runs, p).values())),
    Experiment("parity-negative-eigenvalues", FINDINGS["parity-negative-eigenvalues"],
               "Grazzi et al. 2024, negative eigenvalues (FINDINGS 12)", {
        "cpu": {"base": {"task": "word_problem", "model": "delta"}, "set": {"train.epochs": 3, "model.d_model": 32},
                "grid": {"model.negative_eigenvalues": [True, False], "train.lr": CPU_LRS},
                "points": [{"model": "linear", "train.lr": lr} for lr in CPU_LRS]},
        "paper": {"base": {"task": "word_problem", "model": "delta"}, "set": {"model.d_model": 128, "train.epochs": 20},
                  "grid": {"model.negative_eigenvalues": [True, False], **_lrs(PAPER_LRS)},
                  "points": [{"model": "linear", "train.lr": lr} for lr in PAPER_LRS]},
    }, verdict_parity, {"cpu": 12, "paper": 60}, cells=lambda runs, p: list(cells_parity(runs, p).values())),
    Experiment("induction-extrapolation", FINDINGS["induction-extrapolation"], "Mamba (Gu and Dao 2023), Table 2 (FINDINGS 11)", {
        "cpu": {"base": {"task": "induction", "model": "softmax"}, "set": {"train.epochs": 3},
                "grid": {"model": ["softmax", "delta"], "train.lr": CPU_LRS}},
        "paper": {"base": {"task": "induction", "model": "softmax", "preset": "mamba"},
                  "grid": {"model": ["softmax", "delta"], **_lrs(PAPER_LRS)}},
    }, verdict_induction, {"cpu": 5, "paper": 60}, cells=lambda runs, p: list(cells_induction(runs, p).values())),
    *[Experiment(name, FINDINGS[name], "Zoology README plot; Based (Arora et al. 2024), Figure 2; DeltaNet",
                 FRONTIER_SPECS, _frontier_verdict(name, check), {"cpu": 90, "paper": 600},
                 cells=_frontier_cells)
      for name, check in (("frontier-delta", frontier.delta_check), ("frontier-swa", frontier.swa_check),
                          ("frontier-based", frontier.based_check))],
]}


PROBE_STEPS = 4000  # the paper trains up to 100,000 steps; 4,000 at CPU scale (the knee is read from held-out loss and accuracy)


def _probe_name(call: dict) -> str:

    return memory_label(call["memory"], call.get("feature_map"), call.get("feature_map_options"))


def run_probes(experiment: Experiment, scale: str, store, echo=print) -> None:
    """Trained capacity probes (setting 1), stored in the store's probes table; skips those done."""
    from evalsuite.analysis import capacity_probe
    from evalsuite.analysis.capacity import PAIRS

    have = store.probes()
    for call in experiment.probes.get(scale, []):
        call = {"d_key": 16, "pairs": list(PAIRS), "variant": "schlag", "steps": PROBE_STEPS, **call}
        name = _probe_name(call)
        if not have.empty and {"memory", "trained", "d_key", "pairs", "setting", "variant", "max_steps"} <= set(have):
            mine = have[(have.memory == name) & (have.trained == True) & (have.d_key == call["d_key"])  # noqa: E712
                        & (have.setting == 1) & (have.variant == call["variant"]) & (have.max_steps == call["steps"])]
            if set(call["pairs"]) <= set(mine.pairs):
                echo(f"  probe {name}: cached")
                continue
        echo(f"  probe {name}, d_key {call['d_key']}, S in {call['pairs']}")
        store.add_probes(capacity_probe(trained=True, echo=echo, **call))
    # a knee whose first failing S has one seed gets a second; one that ran out of steps, 4x the steps
    for _ in range(4):
        pending_any = False
        for call in experiment.probes.get(scale, []):
            call = {"d_key": 16, "pairs": list(PAIRS), "variant": "schlag", "steps": PROBE_STEPS, **call}
            curve = probe_curves(store.probes(), call["d_key"]).get(_probe_name(call))
            todo = None if curve is None else knee_unsettled(curve)
            if todo is None:
                continue
            pending_any = True
            need, pairs = todo
            steps = int(curve.max_steps.max())
            seeds = [0, 1] if need == "steps" else [1]
            steps = BUDGET_FACTOR * steps if need == "steps" else steps
            echo(f"  probe {_probe_name(call)} again ({'4x the steps' if need == 'steps' else 'a second seed'}), "
                 f"S in {pairs}, {steps} steps, seeds {seeds}")
            for seed in seeds:
                store.add_probes(capacity_probe(trained=True, echo=echo, **{**call, "pairs": pairs, "steps": steps,
                                                                            "seed": seed}))
        if not pending_any:
            return


def escalation_name(name: str, scale: str) -> str:
    return f"reproduce-{name}-{scale}-escalation"


def experiment_runs(exp: Experiment, scale: str, store) -> list[RunRecord]:
    """The experiment's stored runs: its sweep's points plus what escalation added."""
    from evalsuite.sweep import expand

    if not store.path.exists():
        return []
    spec = exp.spec(scale)
    ids = {p.run_id for p in expand(spec)} if spec is not None else set()
    # experiments that share one sweep (the frontier's three) share what each one's escalation added
    group = next((g for g in ALIASES.values() if exp.name in g), [exp.name])
    wanted = {escalation_name(name, scale) for name in group}
    for sweep in store.sweeps():
        if sweep["name"] in wanted:
            ids |= set(store.sweep_runs(sweep["sweep_id"])[1])
    return store.runs(sorted(ids)) if ids else []


MAX_ROUNDS = 5


def escalate(exp: Experiment, scale: str, store, run_configs: Callable[[str, list[dict]], None], echo=print) -> None:
    """Make every cell the verdict rests on citable: extend the rate grid past an edge where a
    cell did not learn, add a second seed at the best rate, rerun at 4x the budget where it still
    did not learn (``Cell.next_configs``). Rounds until nothing is missing; resumable."""
    if exp.cells is None:
        return
    for round_ in range(1, MAX_ROUNDS + 1):
        runs = experiment_runs(exp, scale, store)
        todo, why = [], []
        for cell in exp.cells(runs, exp.params(scale)):
            configs = cell.next_configs()
            if configs:
                todo += configs
                why.append(f"{cell.label} ({cell.status_word()})")
        if not todo:
            return
        echo(f"  escalation round {round_}: {len(todo)} runs for {', '.join(why)}")
        run_configs(escalation_name(exp.name, scale), todo)
    echo(f"  escalation stopped after {MAX_ROUNDS} rounds; the verdict says what is still missing")


def verdicts(names: list[str], store, scale: str = "cpu") -> list[Verdict]:
    """Judge each experiment from what the store holds for its points and escalations."""
    probes = store.probes()
    return [EXPERIMENTS[name].judge(experiment_runs(EXPERIMENTS[name], scale, store), probes, scale) for name in names]


def check_names(names) -> list[str]:
    import difflib

    names = [m for n in names for m in ALIASES.get(n, [n])]
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        hints = [f"{n!r}" + (f" (did you mean {difflib.get_close_matches(n, EXPERIMENTS, 1)[0]!r}?)"
                             if difflib.get_close_matches(n, EXPERIMENTS, 1) else "") for n in unknown]
        raise UserError(f"NAMES: unknown experiment {', '.join(hints)}; available: {', '.join(EXPERIMENTS)}")
    return list(names) or list(EXPERIMENTS)


def verdict_html(vs: list[Verdict]) -> str:
    """The verdict section placed at the top of a reproduction report."""
    from html import escape

    rows = []
    for v in vs:
        cls = "verdict-" + v.status.replace(" ", "-")
        figures = "".join(f"<li>{escape(f)}</li>" for f in v.figures)
        why = f"<p class='muted'>{escape(v.why)}</p>" if v.why else ""
        rows.append(f"<tr><td><b>{escape(v.name)}</b><br><span class='muted'>{escape(EXPERIMENTS[v.name].source)}</span></td>"
                    f"<td>{escape(v.finding)}<ul>{figures}</ul>{why}</td><td class='{cls}'>{escape(v.status)}</td></tr>")
    counts = {s: sum(v.status == s for v in vs) for s in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    return (f"<h2 id='verdicts'>Verdicts: {summary}</h2><table><thead><tr><th>experiment</th><th>finding and figures</th>"
            f"<th>verdict</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
