"""The report's summary rows and the verdicts state a configuration's figure by one rule
(``evalsuite.selection``): the rate by mean validation accuracy over seeds (ties: the smaller
rate; never by test accuracy), then the mean, sample standard deviation and n of test accuracy."""
import statistics

import pytest

from evalsuite import selection
from evalsuite.records import RunRecord
from evalsuite.reports.builder import summarize
from evalsuite.reports.sections.frontier import pareto
from evalsuite.reproduce.cells import Cell


def run(lr, seed, acc, val=None, status="done"):
    config = {"task": {"name": "recall", "seq_len": 64, "num_kv_pairs": 8},
              "model": {"name": "linear", "feature_map": "elu1", "d_model": 64, "n_layers": 2},
              "train": {"lr": lr, "epochs": 1}, "seed": seed}
    metrics = {"accuracy": acc, "val_accuracy": acc if val is None else val, "context_chance": 0.125}
    return RunRecord(run_id=f"{lr}-{seed}", config=config, status=status, metrics=metrics if status == "done" else {},
                     error=None if status == "done" else "boom")


def test_summary_takes_best_lr_and_spreads_over_seeds():
    runs = [run(1e-3, 0, 0.5), run(1e-3, 1, 0.7), run(3e-3, 0, 0.8), run(3e-3, 1, 0.9), run(1e-2, 0, 0, status="diverged")]
    (row,) = summarize(runs)
    assert row["best_lr"] == 3e-3 and row["accuracy"] == pytest.approx(0.85)
    assert row["accuracy_std"] == pytest.approx(statistics.stdev([0.8, 0.9])) and row["seeds"] == 2
    assert row["accuracy_seeds"] == [0.8, 0.9]
    assert row["runs"] == 5 and row["failed"] == 1 and "1 diverged" in row["status"] and row["error"] == "boom"


def test_a_tie_in_validation_gives_the_summary_row_and_the_verdict_the_same_figure():
    """Two rates both validate at 1.0 (their test accuracies differ): the summary row and the
    verdict's cell choose the same rate (the smaller) and state the same mean, spread and n."""
    runs = [run(1e-3, 0, 0.97, val=1.0), run(1e-3, 1, 0.91, val=1.0), run(1e-3, 2, 0.95, val=1.0),
            run(3e-3, 0, 0.99, val=1.0), run(3e-3, 1, 0.99, val=1.0), run(3e-3, 2, 0.98, val=1.0),
            run(1e-2, 0, 0.5, val=0.5), run(1e-2, 1, 0.5, val=0.5), run(1e-2, 2, 0.5, val=0.5)]
    (row,) = summarize(runs)
    cell = Cell.of(runs, "elu+1", {"model.name": "linear"})
    assert row["best_lr"] == cell.best_lr == 1e-3
    assert row["accuracy"] == pytest.approx(cell.acc) == pytest.approx(statistics.fmean([0.97, 0.91, 0.95]))
    assert row["accuracy_std"] == pytest.approx(cell.spread) == pytest.approx(statistics.stdev([0.97, 0.91, 0.95]))
    assert row["seeds"] == cell.accuracy.n == 3
    assert row["accuracy_seeds"] == list(cell.accuracy.values) == [0.97, 0.91, 0.95]
    assert "0.943 +- 0.031 sd (n=3: 0.970, 0.910, 0.950)" in cell.figure()


def test_the_seed_that_chose_the_rate_is_not_reported():
    """Seed 0 ran at every rate and chose 3e-3 by validation; seeds 1-3 ran at that rate only: the
    figure is theirs, not seed 0's (whose validation picked the rate), in the row and the cell alike."""
    runs = [run(1e-3, 0, 0.5, val=0.5), run(3e-3, 0, 0.99, val=0.99), run(1e-2, 0, 0.6, val=0.6),
            run(3e-3, 1, 0.8), run(3e-3, 2, 0.7), run(3e-3, 3, 0.9)]
    (row,) = summarize(runs)
    cell = Cell.of(runs, "elu+1", {"model.name": "linear"})
    assert row["best_lr"] == cell.best_lr == 3e-3
    assert row["accuracy_seeds"] == list(cell.accuracy.values) == [0.8, 0.7, 0.9]
    assert cell.seeds == [1, 2, 3]
    # every seed at every rate: every seed votes and every seed is reported
    every = [run(lr, s, a, val=a) for s in (0, 1, 2) for lr, a in ((1e-3, 0.5), (3e-3, 0.9 - 0.1 * s), (1e-2, 0.6))]
    assert Cell.of(every, "x", {"model.name": "linear"}).accuracy.values == (0.9, 0.8, 0.7)


def test_a_rate_is_never_chosen_by_test_accuracy():
    """A run without a validation accuracy is not selectable: no fallback to test accuracy."""
    runs = [run(1e-3, 0, 0.2), run(3e-3, 0, 0.99, val=float("nan"))]
    assert selection.best_rate(runs) == 1e-3
    (row,) = summarize(runs)
    assert row["best_lr"] == 1e-3 and row["accuracy"] == pytest.approx(0.2)


def test_one_seed_has_no_spread():
    fig = selection.figure([run(1e-3, 0, 0.5)])
    assert fig.n == 1 and fig.std is None and fig.text() == "0.500 (n=1)"
    assert selection.figure([]).text() == "n/a"


def test_pareto():
    rows = [{"state": 100, "accuracy": 0.5}, {"state": 200, "accuracy": 0.4}, {"state": 300, "accuracy": 0.9},
            {"state": 300, "accuracy": 0.8}, {"state": 50, "accuracy": 0.1}]
    assert [(r["state"], r["accuracy"]) for r in pareto(rows)] == [(50, 0.1), (100, 0.5), (300, 0.9)]


def test_a_grid_over_both_sides_of_the_state_is_one_line():
    """The binding setting's frontier sets d_k = d_v together: its points are one line over both
    keys, not one line each (a value side set apart from the key side stays its own line)."""
    from evalsuite.reports.sections.frontier import line_key, state_axis

    def config(**model):
        return {"task": {"name": "recall"}, "model": {"name": "delta", "d_model": 64, **model}, "train": {"lr": 0.01},
                "seed": 0}

    both = [config(feature_dim=d, value_dim=d) for d in (8, 16, 32)]
    assert {state_axis(c["model"]) for c in both} == {"feature_dim+value_dim"}
    assert len({line_key(c) for c in both}) == 1
    apart = [config(feature_dim=d, value_dim=32) for d in (8, 16)]
    assert state_axis(apart[0]["model"]) == "feature_dim" and len({line_key(c) for c in apart}) == 1
    assert line_key(apart[0]) != line_key(config(feature_dim=8, value_dim=16))
