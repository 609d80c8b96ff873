"""A sweep's report leads with its own answer (``reports/sections/sweep.py``, ``evalsuite.pivot``):
the pivot of what its runs vary, each cell the mean +- sd over seeds beside the floor, the rate
chosen by validation on the seeds every rate has; a reproduction leads with its verdicts instead."""
from evalsuite import pivot
from evalsuite.reports import builder
from tests.reproduce.synthetic import cell


def sweep_runs():
    """elu+1 and softmax at D 4 and 16 (T 64): three rates on seed 0 (the middle one best by
    validation), seeds 1-3 at it."""
    return (cell("linear", 0.85, pairs=4, spread=0.05, long=False) + cell("linear", 0.25, pairs=16, spread=0.05, long=False)
            + cell("softmax", 1.0, pairs=4, long=False) + cell("softmax", 0.98, pairs=16, spread=0.01, long=False))


def test_the_pivot_reads_the_chosen_rates_seeds_beside_the_floor():
    runs = sweep_runs()
    assert pivot.varying_axes(runs) == ("model", "D")
    found = {(c["model"], c["D"]): c for c in pivot.cells(runs, ("model", "D"))}
    lin = found["linear/elu1", 16]
    # the rate chosen on seed 0's validation (0.003), the figure over seeds 1-3 at it: 0.20, 0.25, 0.30
    assert lin["lr"] == 0.003 and lin["settings"] == 1 and lin["seeds"] == 3 and abs(lin["accuracy"] - 0.25) < 1e-9
    assert abs(lin["floor"] - 1 / 16) < 1e-9
    assert pivot.text(lin) == "0.250 +- 0.050 (n=3; floor 0.062)"


def test_a_sweeps_report_leads_with_its_answer_and_a_reproduction_does_not():
    runs = sweep_runs()
    html = builder.render(runs, "a sweep")
    assert html.index('id="sweep"') < html.index('id="summary"')
    assert "test accuracy by model and D" in html and "evalsuite runs --pivot model,D" in html
    from evalsuite import reproduce as rep
    from tests.reproduce.synthetic import CASES, NO_PROBES

    good = CASES["copy"][0]
    judged = builder.render(good, "a reproduction", verdicts=[rep.get("copy").judge(good, NO_PROBES, "cpu")])
    assert 'id="sweep"' not in judged


def test_a_column_of_runs_that_leave_the_key_out_sorts_last():
    """Runs that set a model key (feature_dim 8, 16) beside runs that leave it out (None): the pivot's
    columns sort numbers first and "not set" last (sorting raised a TypeError, None against 4)."""
    runs = (cell("linear", 0.85, pairs=4, long=False, feature_dim=8) + cell("linear", 0.9, pairs=4, long=False, feature_dim=16)
            + cell("softmax", 1.0, pairs=4, long=False))
    axes = pivot.varying_axes(runs)
    assert axes == ("model", "feature_dim"), axes
    html = builder.render(runs, "a sweep")
    assert 'id="sweep"' in html and html.index(">8<") < html.index(">16<") < html.index(">not set<")
