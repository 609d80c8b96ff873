"""Reproduce the literature: each finding of FINDINGS.md as a sweep (or probe) plus a verdict.

A verdict reads only stored results. It states the finding, the figures that bear on it, and
``reproduced``, ``not reproduced`` or ``inconclusive`` (with why); it never claims what was not
measured: a finding whose runs are missing or failed is inconclusive.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from evalsuite.sweep import SweepSpec

SCALES = ("cpu", "paper")
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
TARGET = 0.99


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
    verdict: Callable[[list[dict], pd.DataFrame], Verdict]
    minutes: dict[str, float]                 # expected run time per scale (2-core CPU / a GPU)
    probes: dict[str, list[dict]] = field(default_factory=dict)  # scale -> capacity-probe calls

    def spec(self, scale: str) -> SweepSpec | None:
        data = self.specs.get(scale)
        return None if data is None else SweepSpec(name=f"reproduce-{self.name}-{scale}", **data)


# ---- helpers over stored runs -------------------------------------------------------------------

def label(run: dict) -> str:
    from evalsuite.reports.builder import model_label

    return model_label(run["config"])


def best(runs: list[dict], **where) -> dict | None:
    """The done run with the best test accuracy among those matching ``where`` (best over the
    learning-rate sweep and seeds); keys: ``model`` (label), ``d_model``, ``seq_len``, ``pairs``, ``task``."""
    def ok(r):
        c = r["config"]
        values = {"model": label(r), "d_model": c["model"]["d_model"], "seq_len": c["task"].get("seq_len"),
                  "pairs": c["task"].get("num_kv_pairs"), "task": c["task"]["name"], "name": c["model"]["name"]}
        return r["status"] == "done" and all(values.get(k) == v for k, v in where.items())
    matches = [r for r in runs if ok(r)]
    return max(matches, key=lambda r: r["metrics"]["accuracy"]) if matches else None


def acc(run: dict | None) -> float:
    return math.nan if run is None else run["metrics"]["accuracy"]


def _missing(name, finding, what) -> Verdict:
    return Verdict(name, finding, INCONCLUSIVE, [], f"no finished run for {what}: run `evalsuite reproduce {name}`")


def _fmt(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _judge(name: str, finding: str, figures: list[str], checks: dict[str, bool]) -> Verdict:
    """Reproduced when every named check holds; the figures list each check's outcome."""
    figures = figures + ["; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in checks.items())]
    if all(checks.values()):
        return Verdict(name, finding, REPRODUCED, figures)
    return Verdict(name, finding, NOT_REPRODUCED, figures, "not shown: " + ", ".join(k for k, v in checks.items() if not v))


def _lrs(scale_lrs):
    return {"train.lr": scale_lrs}


CPU_LRS = [0.001, 0.003]
PAPER_LRS = [0.0001, 0.000464, 0.00215, 0.01]
CPU_BASE = {"task": "recall", "model": "softmax", "preset": "default"}
PAPER_BASE = {"task": "recall", "model": "softmax", "preset": "zoology"}


# ---- 1. softmax solves MQAR at small width --------------------------------------------------------

def verdict_softmax(runs, probes) -> Verdict:
    name, finding = "softmax-mqar", FINDINGS["softmax-mqar"]
    figures, accs = [], []
    for T, D in ((64, 4), (128, 8)):
        r = best(runs, name="softmax", seq_len=T, pairs=D, d_model=64)
        if r is None:
            return _missing(name, finding, f"softmax at T={T}, D={D}")
        accs.append(acc(r))
        figures.append(f"softmax, d_model 64, T={T}, D={D}: accuracy {_fmt(acc(r))} (best lr {r['config']['train']['lr']})")
    status = REPRODUCED if min(accs) >= TARGET else NOT_REPRODUCED
    return Verdict(name, finding, status, figures, "" if status == REPRODUCED else
                   f"best accuracy {_fmt(min(accs))} < {TARGET} after the learning-rate sweep")


# ---- 2. elu+1 depends on width and D --------------------------------------------------------------

def verdict_linear_width(runs, probes) -> Verdict:
    name, finding = "linear-width", FINDINGS["linear-width"]
    widths, pairs = (32, 64, 128), (4, 16)
    grid = {(w, D): best(runs, model="linear/elu1", d_model=w, pairs=D) for w in widths for D in pairs}
    soft = best(runs, name="softmax", d_model=64, pairs=16)
    if any(v is None for v in grid.values()) or soft is None:
        return _missing(name, finding, "the linear width x pairs grid and softmax at d_model 64")
    figures = [f"elu+1, D={D}: " + ", ".join(f"d_model {w}: {_fmt(acc(grid[w, D]))}" for w in widths) for D in pairs]
    figures.append(f"softmax, d_model 64, D=16: {_fmt(acc(soft))}")
    short = acc(grid[64, 16]) < acc(soft) - 0.05
    grows = all(acc(grid[widths[-1], D]) > acc(grid[widths[0], D]) + 0.02 for D in pairs)
    drops = all(acc(grid[w, pairs[0]]) >= acc(grid[w, pairs[1]]) for w in widths)
    return _judge(name, finding, figures, {"falls short of softmax at d_model 64": short,
                                            "improves with width": grows, "drops as D grows": drops})


# ---- 3. capacity knee -----------------------------------------------------------------------------

def verdict_capacity(runs, probes) -> Verdict:
    from evalsuite.analysis import knee

    name, finding = "capacity-knee", FINDINGS["capacity-knee"]
    if probes is None or probes.empty:
        return _missing(name, finding, "the trained capacity probes")
    trained = probes[(probes.trained == True) & (probes.setting == 1)]  # noqa: E712
    knees = {m: knee(df) for m, df in trained.groupby("memory")}
    need = ["linear/elu1", "linear/dpfp(nu=1)", "linear/dpfp(nu=2)", "linear/dpfp(nu=3)", "softmax"]
    if any(m not in knees for m in need):
        return _missing(name, finding, "probes of " + ", ".join(m for m in need if m not in knees))
    d_key = int(trained.d_key.iloc[0])
    largest = int(trained.pairs.max())
    figures = [f"d_key {d_key}, S up to {largest}: knee (largest S at >= 0.99) " +
               ", ".join(f"{m} {knees[m]}" for m in need)]
    elu_near = d_key / 2 <= knees["linear/elu1"] <= 2 * d_key
    dpfp_out = knees["linear/dpfp(nu=1)"] <= knees["linear/dpfp(nu=2)"] <= knees["linear/dpfp(nu=3)"] \
        and knees["linear/dpfp(nu=3)"] > knees["linear/dpfp(nu=1)"] and knees["linear/dpfp(nu=1)"] >= knees["linear/elu1"]
    soft_none = knees["softmax"] == largest
    return _judge(name, finding, figures, {
        f"elu+1 knee within [d_key/2, 2 d_key] = [{d_key // 2}, {2 * d_key}]": elu_near,
        "DPFP knees move out with nu": dpfp_out, "softmax shows no knee in the range": soft_none})


# ---- 4. delta beats linear at equal state ---------------------------------------------------------

LEARNED = 0.2  # below this test accuracy on MQAR a model has not learned the task at all


def verdict_delta(runs, probes) -> Verdict:
    name, finding = "delta-vs-linear", FINDINGS["delta-vs-linear"]
    figures, wins, judged = [], [], 0
    for w in (32, 64):
        d, lin = best(runs, name="delta", d_model=w), best(runs, model="linear/elu1", d_model=w)
        if d is None or lin is None:
            return _missing(name, finding, f"delta and elu+1 at d_model {w}")
        sd, sl = d["metrics"]["state_size"], lin["metrics"]["state_size"]
        line = (f"d_model {w}, D={d['config']['task']['num_kv_pairs']}: delta {_fmt(acc(d))} (state {sd:,}) "
                f"vs elu+1 {_fmt(acc(lin))} (state {sl:,})")
        if max(acc(d), acc(lin)) < LEARNED:
            figures.append(line + f": neither learned the task (< {LEARNED}), so this width does not count")
            continue
        judged += 1
        figures.append(line)
        wins.append(acc(d) > acc(lin) + 0.05 and sd <= sl)
    if not judged:
        return Verdict(name, finding, INCONCLUSIVE, figures, "neither model learned at any width within the budget")
    status = REPRODUCED if all(wins) else NOT_REPRODUCED
    return Verdict(name, finding, status, figures, "" if status == REPRODUCED else
                   "the delta rule did not beat elu+1 by more than 0.05 at equal or smaller state where a model learned")


# ---- 5. hybrids recover recall --------------------------------------------------------------------

def verdict_hybrid(runs, probes) -> Verdict:
    name, finding = "hybrid-recovery", FINDINGS["hybrid-recovery"]
    soft, lin = best(runs, name="softmax"), best(runs, model="linear/elu1")
    hybrids = [r for r in runs if r["status"] == "done" and r["config"]["model"]["name"] == "hybrid"]
    if soft is None or lin is None or not hybrids:
        return _missing(name, finding, "softmax, elu+1 and the hybrids")
    by_label: dict[str, dict] = {}
    for r in hybrids:
        if label(r) not in by_label or acc(r) > acc(by_label[label(r)]):
            by_label[label(r)] = r
    figures = [f"softmax {_fmt(acc(soft))}, elu+1 {_fmt(acc(lin))}"]
    figures += [f"{k}: {_fmt(acc(v))}" for k, v in sorted(by_label.items())]
    top = max(by_label.values(), key=acc)
    recovered = (acc(top) - acc(lin)) / max(acc(soft) - acc(lin), 1e-9)
    figures.append(f"best hybrid {label(top)} recovers {recovered:.0%} of the gap from elu+1 to softmax")
    if acc(lin) >= 0.9:
        return Verdict(name, finding, INCONCLUSIVE, figures, "the pure linear model does not fail here, so there is nothing to recover")
    status = REPRODUCED if recovered >= 0.8 else NOT_REPRODUCED
    return Verdict(name, finding, status, figures, "" if status == REPRODUCED else "no hybrid recovered 80% of the gap")


# ---- 6. ListOps ordering --------------------------------------------------------------------------

def verdict_listops(runs, probes) -> Verdict:
    name, finding = "listops-order", FINDINGS["listops-order"]
    soft, lin = best(runs, name="softmax", task="listops"), best(runs, model="linear/elu1", task="listops")
    if soft is None or lin is None:
        return _missing(name, finding, "softmax and elu+1 on ListOps")
    majority = soft["metrics"].get("majority_rate", math.nan)
    figures = [f"softmax {_fmt(acc(soft))}, elu+1 {_fmt(acc(lin))}, majority-class rate {_fmt(majority)} "
               f"(LRA: 36.37 vs 16.13)"]
    order = acc(soft) > acc(lin)
    far = max(acc(soft), acc(lin)) < 0.9
    status = REPRODUCED if order and far else NOT_REPRODUCED
    why = "" if status == REPRODUCED else ("elu+1 is not below softmax" if not order else "one model is near 100%")
    return Verdict(name, finding, status, figures, why)


# ---- 7. Copy --------------------------------------------------------------------------------------

def verdict_copy(runs, probes) -> Verdict:
    name, finding = "copy", FINDINGS["copy"]
    soft, lin = best(runs, name="softmax", task="copy"), best(runs, model="linear/elu1", task="copy")
    if soft is None or lin is None:
        return _missing(name, finding, "softmax and elu+1 on copy")
    figures = [f"{k}: test accuracy {_fmt(acc(r))}, loss {_fmt(r['metrics']['loss'])}, best validation at step "
               f"{r['metrics']['best_step']} of {r['metrics']['steps']}" for k, r in (("softmax", soft), ("elu+1", lin))]
    low = soft["metrics"]["loss"] < 0.1 and lin["metrics"]["loss"] < 0.1
    status = REPRODUCED if low else NOT_REPRODUCED
    return Verdict(name, finding, status, figures, "" if low else "a model's test loss stayed above 0.1")


# ---- 8. Sharpness ---------------------------------------------------------------------------------

def _retrieval(run):
    a = run["metrics"].get("analysis") or {}
    rows = a.get("sharpness") or []
    sel = a.get("retrieval_layer")
    for row in rows:
        if sel and row["layer"] == sel["layer"] and row["head"] == sel["head"]:
            return row, [c for c in a.get("sharpness_by_context", []) if c["layer"] == row["layer"] and c["head"] == row["head"]]
    return None, []


def verdict_sharpness(runs, probes) -> Verdict:
    name, finding = "sharpness", FINDINGS["sharpness"]
    soft, lin = best(runs, name="softmax", d_model=64), best(runs, model="linear/elu1", d_model=64)
    if soft is None or lin is None:
        return _missing(name, finding, "softmax and elu+1 at d_model 64 with their analysis")
    (s_row, _), (l_row, l_ctx) = _retrieval(soft), _retrieval(lin)
    if s_row is None or l_row is None:
        return Verdict(name, finding, INCONCLUSIVE, [], "the runs carry no sharpness analysis")
    figures = [f"retrieval layer (most weight on the answer): softmax entropy {_fmt(s_row['entropy'])} nats, answer mass "
               f"{_fmt(s_row['answer_mass'])}; elu+1 entropy {_fmt(l_row['entropy'])}, answer mass {_fmt(l_row['answer_mass'])}"]
    sharper = s_row["entropy"] < 0.5 * l_row["entropy"]
    grows = None
    if len(l_ctx) >= 2:
        ctx = sorted(l_ctx, key=lambda c: c["context"])
        grows = ctx[-1]["entropy"] > ctx[0]["entropy"]
        figures.append(f"elu+1 entropy from context {ctx[0]['context']:.0f} to {ctx[-1]['context']:.0f}: "
                       f"{_fmt(ctx[0]['entropy'])} -> {_fmt(ctx[-1]['entropy'])}")
    status = REPRODUCED if sharper and grows else NOT_REPRODUCED
    return Verdict(name, finding, status, figures, "" if status == REPRODUCED else
                   ("softmax's entropy is not below half of elu+1's" if not sharper else "elu+1's entropy does not grow with context"))


FINDINGS = {
    "softmax-mqar": "Softmax attention solves MQAR at small width (2 layers, 1 head, d_model 64; (T, D) = (64, 4), (128, 8)).",
    "linear-width": "elu+1 linear attention falls short of softmax at the same width, improves as d_model grows, and drops as D grows.",
    "capacity-knee": "One memory layer, S pairs then one read: elu+1 errs past about d_key pairs, DPFP's knee moves out with nu (2 nu d_key), softmax has no knee in the range.",
    "delta-vs-linear": "The delta rule beats additive (elu+1) linear attention on MQAR at equal state, most at small width.",
    "hybrid-recovery": "Replacing one of two linear layers with softmax recovers most of softmax's MQAR accuracy where pure linear fails.",
    "listops-order": "ListOps: softmax above elu+1 linear attention, both far below 100%.",
    "copy": "Copy: softmax and elu+1 linear attention both reach a low loss (linear may converge more slowly).",
    "sharpness": "Softmax concentrates its weight on the queried key; elu+1's implicit weights are much flatter, and their entropy grows with context length.",
}

PAPER_ZOOLOGY_PAIRS = [[64, 4], [128, 8], [256, 16], [512, 64]]

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    Experiment("softmax-mqar", FINDINGS["softmax-mqar"], "Zoology (Arora et al. 2023), Figure 2", {
        "cpu": {"base": CPU_BASE, "grid": {"task.seq_len,task.num_kv_pairs": [[64, 4], [128, 8]], **_lrs(CPU_LRS)},
                "set": {"model.d_model": 64}},
        "paper": {"base": PAPER_BASE, "grid": {"task.seq_len,task.num_kv_pairs": [[64, 4], [128, 8]], **_lrs(PAPER_LRS)},
                  "set": {"model.d_model": 64}},
    }, verdict_softmax, {"cpu": 3, "paper": 60}),
    Experiment("linear-width", FINDINGS["linear-width"], "Zoology Figure 2; Based recall/state trade-off", {
        "cpu": {"base": {**CPU_BASE, "model": "linear"},
                "grid": {"model.d_model": [32, 64, 128], "task.num_kv_pairs": [4, 16], **_lrs(CPU_LRS)},
                "points": [{"model": "softmax", "model.d_model": 64, "task.num_kv_pairs": 16, "train.lr": lr} for lr in CPU_LRS]},
        "paper": {"base": {**PAPER_BASE, "model": "linear"},
                  "grid": {"model.d_model": [64, 128, 256, 512], "task.seq_len,task.num_kv_pairs": PAPER_ZOOLOGY_PAIRS,
                           **_lrs(PAPER_LRS)},
                  "points": [{"model": "softmax", "model.d_model": 64, "task.num_kv_pairs": 16, "task.seq_len": 256,
                              "train.lr": lr} for lr in PAPER_LRS]},
    }, verdict_linear_width, {"cpu": 12, "paper": 240}),
    Experiment("capacity-knee", FINDINGS["capacity-knee"], "Schlag et al. 2021, section 6.1, setting 1", {}, verdict_capacity,
               {"cpu": 4, "paper": 30},
               probes={"cpu": [dict(memory="linear", feature_map="elu1"), *[dict(memory="linear", feature_map="dpfp",
                                                                                 feature_map_options={"nu": n}) for n in (1, 2, 3)],
                               dict(memory="softmax")],
                       "paper": [dict(memory="linear", feature_map="elu1", d_key=64, pairs=[20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600]),
                                 *[dict(memory="linear", feature_map="dpfp", feature_map_options={"nu": n}, d_key=64,
                                        pairs=[20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600]) for n in (1, 2, 3)],
                                 dict(memory="softmax", d_key=64, pairs=[20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600])]}),
    Experiment("delta-vs-linear", FINDINGS["delta-vs-linear"], "DeltaNet (Yang et al. 2024), MQAR; MAD in-context recall", {
        "cpu": {"base": {**CPU_BASE, "model": "delta"},  # small widths learn faster at a larger rate
                "grid": {"model": ["delta", "linear"], "model.d_model": [32, 64], **_lrs(CPU_LRS + [0.01])},
                "set": {"task.num_kv_pairs": 16}},
        "paper": {"base": {**PAPER_BASE, "model": "delta"},
                  "grid": {"model": ["delta", "linear"], "model.d_model": [64, 128, 256], **_lrs(PAPER_LRS)},
                  "set": {"task.seq_len": 512, "task.num_kv_pairs": 64}},
    }, verdict_delta, {"cpu": 6, "paper": 120}),
    Experiment("hybrid-recovery", FINDINGS["hybrid-recovery"], "Zoology; DeltaNet hybrids; 3:1 production hybrids", {
        "cpu": {"base": {**CPU_BASE, "model": "hybrid"},
                "grid": {"model.pattern": ["LS", "SL"], **_lrs(CPU_LRS)},
                "points": [{"model": m, "train.lr": lr} for m in ("softmax", "linear") for lr in CPU_LRS]},
        "paper": {"base": {**PAPER_BASE, "model": "hybrid"},
                  "grid": {"model.pattern": ["LS", "SL", "LLLS"], **_lrs(PAPER_LRS)},
                  "set": {"model.n_layers": 4, "task.seq_len": 256, "task.num_kv_pairs": 16},
                  "points": [{"model": m, "train.lr": lr, "model.n_layers": 4} for m in ("softmax", "linear") for lr in PAPER_LRS]},
    }, verdict_hybrid, {"cpu": 6, "paper": 90}),
    Experiment("listops-order", FINDINGS["listops-order"], "LRA (Tay et al. 2021), Table 1", {
        "cpu": {"base": {"task": "listops", "model": "softmax"}, "grid": {"model": ["softmax", "linear"], **_lrs(CPU_LRS)},
                "set": {"train.num_train": 50000, "train.epochs": 3}},
        "paper": {"base": {"task": "listops", "model": "softmax", "preset": "lra"},
                  "grid": {"model": ["softmax", "linear"], **_lrs(PAPER_LRS)}},
    }, verdict_listops, {"cpu": 8, "paper": 240}),
    Experiment("copy", FINDINGS["copy"], "Katharopoulos et al. 2020, Figure 2", {
        "cpu": {"base": {"task": "copy", "model": "softmax"}, "grid": {"model": ["softmax", "linear"], **_lrs(CPU_LRS)}},
        "paper": {"base": {"task": "copy", "model": "softmax", "preset": "paper"},
                  "grid": {"model": ["softmax", "linear"], **_lrs(PAPER_LRS)}},
    }, verdict_copy, {"cpu": 3, "paper": 60}),
    Experiment("sharpness", FINDINGS["sharpness"], "the seed documents' geometric reading", {
        "cpu": {"base": CPU_BASE, "grid": {"model": ["softmax", "linear"], **_lrs(CPU_LRS)}, "set": {"model.d_model": 64}},
        "paper": {"base": PAPER_BASE, "grid": {"model": ["softmax", "linear"], **_lrs(PAPER_LRS)},
                  "set": {"model.d_model": 64, "task.seq_len": 256, "task.num_kv_pairs": 16}},
    }, verdict_sharpness, {"cpu": 3, "paper": 30}),
]}


def run_probes(experiment: Experiment, scale: str, store, echo=print) -> None:
    """Trained capacity probes (setting 1), stored in the store's probes table; skips those done."""
    from evalsuite.analysis import capacity_probe
    from evalsuite.analysis.capacity import PAIRS

    have = store.probes()
    for call in experiment.probes.get(scale, []):
        call = {"d_key": 16, "pairs": list(PAIRS), **call}
        name = call["memory"] if call["memory"] != "linear" else f"linear/{call.get('feature_map') or 'elu1'}"
        if call.get("feature_map_options"):
            name += "(" + ",".join(f"{k}={v}" for k, v in sorted(call["feature_map_options"].items())) + ")"
        if not have.empty and {"memory", "trained", "d_key", "pairs", "setting"} <= set(have):
            mine = have[(have.memory == name) & (have.trained == True) & (have.d_key == call["d_key"])  # noqa: E712
                        & (have.setting == 1)]
            if set(call["pairs"]) <= set(mine.pairs):
                echo(f"  probe {name}: cached")
                continue
        echo(f"  probe {name}, d_key {call['d_key']}, S in {call['pairs']}")
        store.add_probes(capacity_probe(trained=True, echo=echo, **call))


def verdicts(names: list[str], store, scale: str = "cpu") -> list[Verdict]:
    """Judge each experiment from what the store holds for its points."""
    from evalsuite.sweep import expand

    out = []
    probes = store.probes()
    for name in names:
        exp = EXPERIMENTS[name]
        spec = exp.spec(scale)
        ids = [p.run_id for p in expand(spec)] if spec is not None else []
        runs = store.runs(ids) if ids and store.path.exists() else []
        out.append(exp.verdict(runs, probes))
    return out


def check_names(names) -> list[str]:
    import difflib

    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        hints = [f"{n!r}" + (f" (did you mean {difflib.get_close_matches(n, EXPERIMENTS, 1)[0]!r}?)"
                             if difflib.get_close_matches(n, EXPERIMENTS, 1) else "") for n in unknown]
        raise ValueError(f"unknown experiment {', '.join(hints)}; available: {', '.join(EXPERIMENTS)}")
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
