"""A verdict carries the cells it read (``records.VerdictCell``), from which the report draws its
small figure: per-seed accuracies at the chosen rate and at 4x the budget, beside the floor."""
from evalsuite import reproduce as rep
from evalsuite.records import Verdict
from evalsuite.reports import plots
from tests.reproduce.synthetic import CASES, NO_PROBES, delta


def test_a_verdict_keeps_each_cell_it_read_with_its_seeds_and_floor():
    runs = delta(0.9, 0.5, 0.99, 0.6)  # elu+1 below the ceiling: 4x reruns on every seed
    v = rep.get("delta-vs-linear").judge(runs, NO_PROBES, "cpu")
    cells = {c.label: c for c in v.cells}
    assert cells and all(c.floor is not None for c in cells.values())
    lin = next(c for label, c in cells.items() if label.startswith("elu+1 (d_k 8, d_v 8)"))
    assert sorted(lin.seeds) == [1, 2, 3] and lin.seeds[1] == 0.5 and sorted(lin.long) == [1, 2, 3]
    assert Verdict.model_validate_json(v.model_dump_json()).cells == v.cells  # travels in the report's data
    assert plots.verdict_cells([c.model_dump() for c in v.cells]).startswith("data:image/png")


def test_a_verdict_from_probes_or_from_missing_runs_has_no_cells_to_draw():
    v = rep.get("copy").judge([], NO_PROBES, "cpu")
    assert v.cells == [] and plots.verdict_cells([]) is None
    good = CASES["copy"][0]
    assert rep.get("copy").judge(good, NO_PROBES, "cpu").cells


def test_the_report_says_why_a_verdict_has_no_figure():
    """A verdict with no finished run says so in the figure's place; a probe's verdict points to its
    section (it read no trained cell by design)."""
    from evalsuite.reports import builder

    missing = rep.get("jrt").judge([], NO_PROBES, "cpu")
    probe = rep.get("capacity-knee").judge([], NO_PROBES, "cpu")
    html = builder.render(CASES["copy"][0], verdicts=[missing, probe], compact=True)
    assert "no finished run yet: nothing trained to draw" in html
    assert ("no trained cells: a probe, drawn in its section" in html) == (not (probe.why or "").startswith("no finished run"))
