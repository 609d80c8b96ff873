"""The recall-memory frontier: MQAR accuracy against state size, one curve per mixer family.

Every family is trained over the axis that sets its state (width for the fixed-state mixers at
paper scale, both sides of their state, d_k = d_v, at CPU scale where the state binds (issue 62;
``families``), the window for sliding-window attention, the feature size for Based and its
Taylor-linear part), each
point with a learning-rate sweep and three reported seeds, under the rules of ``cells``. What the literature
claims about this picture (docs/FINDINGS.md, finding 9) becomes three experiments that share this
module's sweep (group ``frontier``), each able to fail: ``experiments/frontier_delta.py``,
``frontier_swa.py`` and ``frontier_based.py``. The report draws the picture itself
(``reports/sections/frontier.py``) from the summary rows.
"""
from __future__ import annotations

from evalsuite.models.state import zoology_units
from evalsuite.records import Verdict

from . import clauses
from .cells import Cell
from .frontier_families import CPU_D, READ_BY_NONE, families
from .settings import CPU_LRS, bind_base, bind_metric
from .verdict import Judge

LEVEL = 0.9  # the accuracy whose cheapest state the verdicts compare (the table also shows 0.99)
FAR = 4.0    # "far more state": at least this factor
CLOSE = 2.0  # below this factor, "far more" is contradicted
EQUAL_STATE = 1.25  # a part "at no more state" than Based: its state at most this factor of Based's




def design(scale: str, base: dict, rates, setting: dict, metric: str = "accuracy", at: str = ""):
    """Every family at every axis value and rate (``setting``: the task keys every point shares;
    ``metric``: the figure each cell reads, ``at`` its words in labels); softmax is the positive
    control."""
    from .experiment import CellSpec, Design

    cells = [CellSpec((f.label, v), f"{f.label} ({f.axis_name} = {v}){at}", {**f.fixed, **f.point(v), **setting},
                      role="control" if f.kind == "control" else "reported" if f.label in READ_BY_NONE else "test",
                      reads="the positive control" if f.kind == "control" else
                      "" if f.label in READ_BY_NONE else f"the least state reaching {LEVEL}", metric=metric)
             for f in families(scale) for v in f.values]
    return Design(base, cells, rates, {"scale": scale})


def by_family(cells, scale: str) -> dict[str, list[Cell]]:
    """Family label -> its cells, one per axis value, ascending."""
    return {f.label: [cells[f.label, v] for v in f.values] for f in families(scale)}


def reaches(cell: Cell, level: float = LEVEL) -> bool:
    """At ``level`` as every verdict's capability clause reads it (``clauses.reaches``: three or more
    seeds; the mean at the base budget or at 4x on every seed, or a majority of seeds at either):
    a late learner counts, one seed's 4x rerun alone does not."""
    return clauses.reaches(cell, level)


def smallest_state(family_cells: list[Cell], level: float = LEVEL) -> float | None:
    """The least state among a family's cells that reach ``level`` (None: none does)."""
    states = [state(c) for c in family_cells if reaches(c, level)]
    return min(states) if states else None


def state(cell: Cell) -> float | None:
    """The cell's state as Zoology counts it per mixer (``Cell.mixer_state``; docs/FINDINGS.md,
    finding 21: attention 2 d_model T, a window 2 d_model w, DeltaNet heads d_k d_v, GLA d_k d_v,
    Based heads d_v times the expanded feature size plus its denominator): every frontier comparison
    reads it; our ``state_size`` adds the short convolution's window."""
    return cell.mixer_state


def zoology_state(cell: Cell) -> float | None:
    """The cell's state in Zoology's logged units (``models.state.zoology_units``: 4 x the mixers'
    floats summed over layers, the short convolution's window not counted)."""
    xs = [zoology_units(r.metrics["state_size"], r.config["model"]) for r in cell.runs if r.metrics.get("state_size")]
    return sum(xs) / len(xs) if xs else None


def least_state_figure(fam: dict[str, list[Cell]], level: float = LEVEL) -> str:
    """Per family, the least state reaching ``level`` in our floats and in Zoology's units."""
    parts = []
    for label, cs in fam.items():
        reached = [c for c in cs if reaches(c, level)]
        best = min(reached, key=state) if reached else None
        parts.append(f"{label} " + ("never" if best is None else
                                    f"{state_text(state(best))} floats = {state_text(zoology_state(best))} Zoology units "
                                    f"({state_text(best.state)} with the convolution's window)"))
    return (f"least state reaching {level}, as Zoology counts it per mixer (floats per sequence, the mixers' summed over "
            f"layers, the short convolution's window not counted, as Zoology's Hybrid(BaseConv, mixer) reports only the "
            f"mixer's; its logged units are 4 x that) and ours with the window: " + "; ".join(parts))


def never_reaches(family_cells: list[Cell], level: float = LEVEL) -> bool:
    """Every cell is present and stays below ``level`` when given 4x the budget, with a full sweep."""
    return all(c.settled_below(level) for c in family_cells)


def shown_short_to(family_cells: list[Cell], level: float = LEVEL) -> float | None:
    """The largest state up to which the family is shown to fall short of ``level``: every cell
    with that state or less is settled below it (None: its cheapest cell is not). A grid shows a
    threshold only between its points: the family's least state reaching ``level`` lies above
    this one and at or below ``smallest_state``, and a claim about a factor of state needs the
    bound on the side it argues from, not the next point of the grid."""
    if not all(c.present for c in family_cells):
        return None  # a point with no run: where it sits, nothing is shown
    bound = None
    for c in sorted(family_cells, key=state):
        if not c.settled_below(level):
            break
        bound = state(c)
    return bound


def least_state_range(family_cells: list[Cell], level: float = LEVEL) -> str:
    """Where the grid places the family's least state reaching ``level``: above its bound shown
    short and at or below its first point that reaches, e.g. "(600, 1,408]"; "<= 600" where its
    cheapest point reaches; "never" where none does (with the bound it is shown short to)."""
    reach, short = smallest_state(family_cells, level), shown_short_to(family_cells, level)
    if reach is None:
        return "never" + (f" (short to {state_text(short)})" if short is not None else "")
    return f"({state_text(short)}, {state_text(reach)}]" if short is not None else f"<= {state_text(reach)}"


def optimises(family_cells: list[Cell]) -> bool:
    """The family's positive control: some cell of it learned (its mean at least halfway from the
    floor to 1, at the base budget or at 4x on every seed). A family that learned at no state of
    the grid has shown no shortfall of state: it may have failed to optimise (FINDINGS 16; the
    Mamba-2 form's plateau at CPU scale, docs/MODELS.md), so "never reaches" cannot count for it."""
    return any(c.learned or clauses.learned_at_4x(c) for c in family_cells if c.present)


def less_state(a: list[Cell], b: list[Cell]) -> bool | None:
    """Family ``a`` reaches LEVEL with less state than ``b``: True, False, or None (unsettled). A
    grid places each family's least state reaching LEVEL above its bound shown short
    (``shown_short_to``) and at or below its first point that reaches (``smallest_state``), so
    ``a`` needs less where its first reaching point is at or below ``b``'s bound, and more where
    ``b``'s first reaching point is at or below ``a``'s bound; a gap that straddles the other's
    point leaves it undecided (as frontier-swa reads its factor). A family that never reaches
    LEVEL loses only where it learned somewhere (``optimises``)."""
    sa, sb = smallest_state(a), smallest_state(b)
    short_a, short_b = shown_short_to(a), shown_short_to(b)
    if sa is not None and short_b is not None and sa <= short_b and (sb is not None or optimises(b)):
        return True
    if sb is not None and short_a is not None and sb <= short_a and (sa is not None or optimises(a)):
        return False
    return None


def learned_nowhere(fam: dict[str, list[Cell]], labels) -> list[str]:
    """A figure for each of ``labels`` that learned at no state (``optimises``), for a check's figures."""
    return [f"{k} learned at no state of the grid, at the base budget or 4x: no shortfall of state shown "
            f"(it may not have optimised), so a comparison that needs it to fall short stays undecided"
            for k in labels if all(c.present for c in fam[k]) and not optimises(fam[k])]


def state_text(x) -> str:
    return "never" if x is None else f"{x:,.0f}"


# Zoology's README plot, read off by eye (docs/FINDINGS.md, finding 9): what our figures stand beside.
PUBLISHED = ("Zoology README plot (approximate; its x axis is in Zoology's logged units, FINDINGS 13): DeltaNet 0.79 at 9e3, 0.96 at 3.5e4; GLA 0.53 at 4.7e3, "
             "0.95 at 7e4; Mamba-2 0.52 at 8e3 to 0.84 at 1e5; sliding window 0.08 at 1e4 to 0.94 at 5e5; "
             "Based 0.67 at 9e3 rising to 1.0")


PAPER_LRS = (0.001, 0.00316, 0.01, 0.0316)  # Zoology's README plot: logspace(-3, -1.5, 4)
# one design behind the three frontier experiments (shared run ids: each run trains once)
DESIGNS = {
    # cpu: the binding setting, every cell read at D = 16 (``families`` says why)
    "cpu": design("cpu", bind_base("cpu"), CPU_LRS, {}, metric=bind_metric(CPU_D), at=f" D={CPU_D}"),
    # Zoology's README plot (zoology/experiments/030325_new_arch): the recall preset zoology-mixture
    # (train (T, D) = (64, 4) x 100k, (128, 8), (256, 16), (256, 32), (256, 64) x 20k each; test to
    # (1024, 256)), 2 layers, 2 heads, no MLP, no positions, batch 256, 32 epochs, rates
    # logspace(-3, -1.5, 4). Deviations: our short convolution (kernel 3) stands in for its BaseConv
    # (kernel 3 plus an implicit long convolution); Based at width 64 only.
    "paper": design("paper", {"task": "recall", "model": "softmax", "preset": "zoology-mixture", "model.d_model": 128},
                    PAPER_LRS, {"task.vocab_size": 8192}),
}
SOURCE = "Zoology README plot; Based (Arora et al. 2024), Figure 2; DeltaNet"
# cpu: RWKV-7 trains with its recurrent loop, about 3x the delta rule's step time at T 64; DeltaProduct
# (n_h 2) runs the chunked delta rule on 2 T sub-steps
MINUTES = {"cpu": (170, 443), "paper": 600}  # cpu: docs/PROJECTION-62-frontier.md (the three share this sweep)


def verdict_of(check):
    """The verdict function of a frontier experiment: the families' cells, the softmax control,
    then ``check(families) -> (clauses, figures, waits)``, where ``waits`` are the cells whose
    figures could still decide its undecided clauses: only those are named as what is left to
    settle (the three experiments share every family's cells, and a clause about Based waits on
    no delta-rule cell)."""
    from .verdict import runnable, unsettled

    def verdict(cells, probes, p: dict, judge: Judge) -> Verdict:
        fam = by_family(cells, p["scale"])
        flat = [c for cs in fam.values() for c in cs]
        if (v := judge.missing(flat)):
            return v
        figures = [c.figure() for c in flat]
        if (v := judge.control(fam["softmax"][0], figures)):
            return v
        checks, more, waits = check(fam)
        return judge.decide(figures + more + [least_state_figure(fam), f"published: {PUBLISHED}"], checks,
                            unsettled(waits), can_run=runnable(waits))
    return verdict


def sweep_file() -> str:
    """examples/sweeps/frontier-cpu.yaml: the CPU frontier's first sweep (seed 0, every rate) as a
    sweep file, each point with only the keys it sets beyond the base (``python -m
    evalsuite.reproduce.frontier > examples/sweeps/frontier-cpu.yaml`` writes it)."""
    import yaml

    spec = DESIGNS["cpu"].spec("frontier-cpu")

    def flow(x) -> str:
        return yaml.safe_dump(x, default_flow_style=True, width=10 ** 6, sort_keys=False).strip()

    base = dict(spec.base)
    lines = ["# The recall-memory frontier at CPU scale: the sweep behind `evalsuite reproduce frontier`",
             f"# ({len(spec.points)} runs; reproduce adds the escalations: rates past an edge, more seeds, 4x reruns).",
             "# The binding setting (evalsuite/reproduce/settings.py, bind_base): MQAR at vocabulary 256, width 64,",
             "# two mixer layers, trained on D = 2 ... 32 and read at D = 16; the fixed-state mixers' state set on",
             "# both sides (model.feature_dim = model.value_dim = 8, 16, 32; evalsuite/reproduce/frontier.py says why).",
             "# Generated from evalsuite/reproduce/frontier.py: python -m evalsuite.reproduce.frontier > this file;",
             "# run it alone with",
             "#   evalsuite sweep examples/sweeps/frontier-cpu.yaml --workers 2",
             "name: frontier-cpu", f"base: {flow(base)}", "points:"]
    lines += [f"- {flow({k: v for k, v in pt.items() if k == 'model' or base.get(k, object()) != v})}" for pt in spec.points]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(sweep_file(), end="")
