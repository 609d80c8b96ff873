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


def test_a_mixture_s_frontier_reads_each_eval_segment_not_the_overall_accuracy():
    """Runs trained on mixed D are drawn at each eval segment's (T, D) with that segment's accuracy
    and floor (the figure a verdict at that D reads), never at the mixture's overall accuracy; the
    hardest segment's plot comes first."""
    import pandas as pd

    from evalsuite.reports.sections import ReportData
    from evalsuite.reports.sections.frontier import Frontier

    segs = [{"seq_len": 32, "num_kv_pairs": 8}, {"seq_len": 64, "num_kv_pairs": 16}]

    def mixed(name, d, seed, at8, at16):
        config = {"task": {"name": "recall", "seq_len": 64, "num_kv_pairs": 8, "segments": segs, "eval_segments": segs},
                  "model": {"name": name, "feature_map": "elu1", "d_model": 64, "n_layers": 2, "feature_dim": d,
                            "value_dim": d},
                  "train": {"lr": 1e-3, "epochs": 4}, "seed": seed}
        metrics = {"accuracy": 0.5, "val_accuracy": 0.5, "floor": 0.15, "state_size": 2 * d * d,
                   "eval_0_accuracy": at8 + 0.01 * seed, "eval_0_floor": 0.21,
                   "eval_1_accuracy": at16 + 0.01 * seed, "eval_1_floor": 0.11}
        return RunRecord(run_id=f"{name}-{d}-{seed}", config=config, status="done", metrics=metrics)

    runs = [mixed(name, d, s, min(1.0, 0.3 + d / 40 + bonus), 0.1 + d / 40 + bonus)
            for name, bonus in (("linear", 0.0), ("delta", 0.2)) for d in (8, 16, 32) for s in (0, 1, 2)]
    summary = summarize(runs)
    assert all([s["pairs"] for s in row["eval_segments"]] == [8, 16] for row in summary)
    section = Frontier().build(ReportData(runs, summary, pd.DataFrame(), None), "png")
    assert [p["name"] for p in section["plots"]] == ["recall-T64-D16-mixed-4ep", "recall-T32-D8-mixed-4ep"]
    at16 = {(r["series"], r["state"]): r for r in section["points"] if r["D"] == 16}
    assert len(at16) == 6 and all(r["floor"] == pytest.approx(0.11) and r["seeds"] == 3 for r in at16.values())
    delta32 = next(r for (name, _), r in sorted(at16.items(), key=lambda kv: -kv[0][1]) if "delta" in name)
    assert delta32["accuracy"] == pytest.approx(0.1 + 32 / 40 + 0.2 + 0.01)  # the mean over seeds 0-2 at D=16
    assert all(r["accuracy"] != 0.5 for r in section["points"])  # the overall figure is drawn nowhere
    assert "trained on mixed D 8-16" in section["plots"][0]["title"] and "D=16" in section["plots"][0]["title"]
    assert {r["series"] for r in section["points"]} == {"delta/elu1 (over d_k = d_v)", "linear/elu1 (over d_k = d_v)"}
    # where the report's verdicts read one segment of these runs (the frontier verdicts read D = 16), that one is drawn
    from evalsuite.records import Verdict, VerdictCell

    cells = [VerdictCell(label=r["model"], metric="eval_1_accuracy", run_ids={0: r["anchor"]}) for r in summary]
    verdict = Verdict(name="frontier-delta", finding="f", status="inconclusive", cells=cells)
    section = Frontier().build(ReportData(runs, summary, pd.DataFrame(), None, [verdict]), "png")
    assert [p["name"] for p in section["plots"]] == ["recall-T64-D16-mixed-4ep"]
