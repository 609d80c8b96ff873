"""Plot properties the plotting code checks when it draws (``plots.violations``, from matplotlib's
own extents and artists): no legend over its axes or title, at most eight series per axes (faceted
beyond), every accuracy axis with its floor, log axes only over data that span them."""
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from evalsuite.reports import plots


def test_overlaps_sees_a_legend_inside_the_axes_and_place_legends_moves_it_out():
    fig, ax = plt.subplots()
    for k in range(6):
        ax.plot([0, 1], [k, k + 1], label=f"series {k}")
    ax.set_title("a title")
    ax.legend(loc="center")
    assert any("overlaps the axes" in o for o in plots.overlaps(fig))
    plots.place_legends(fig)
    assert plots.overlaps(fig) == []
    plt.close(fig)


def _captured(monkeypatch):
    """Each builder draws through ``to_uri``: record what the rules find in the figure as saved."""
    seen = []
    real = plots.to_uri

    def capture(fig, fmt="png"):
        plots.enforce(fig)
        seen.append({"violations": plots.violations(fig), "axes": len(fig.axes),
                     "series": [len(plots._series(ax)) for ax in fig.axes],
                     "scales": [ax.get_xscale() for ax in fig.axes]})
        return real(fig, fmt)

    monkeypatch.setattr(plots, "to_uri", capture)
    return seen


def test_every_builder_draws_within_the_rules(monkeypatch):
    seen = _captured(monkeypatch)
    df = pd.DataFrame([{"x": 2 ** i, "accuracy": 1 - i / 10, "model": f"model {m}", "floor": 0.1}
                       for m in range(6) for i in range(6)])
    plots.lines(df, "x", "accuracy", "model", title="t", xlabel="x", logx=True, floor="floor")
    plots.collapse(pd.DataFrame([{"series": f"s{m}", "ratio": 2 ** i / 4, "accuracy": min(1, 4 / 2 ** i),
                                  "floor": 0.05} for m in range(5) for i in range(5)]), title="c",
                   long=pd.DataFrame([{"series": f"s{m}", "ratio": 4.0, "accuracy": 0.9} for m in range(5)]))
    plots.bars(pd.DataFrame([{"x": f"L{i}", "y": i + 1.0, "model": f"m{m}"} for m in range(4) for i in range(3)]),
               "x", "y", "model", title="b", ylabel="y")
    points = pd.DataFrame([{"series": f"m{m}", "state": 2 ** (m + i), "accuracy": i / 4, "floor": 0.06, "run": f"{m}{i}"}
                           for m in range(3) for i in range(4)])
    plots.frontier(points, points.head(3), title="f", long=points.head(2).assign(accuracy=0.9))
    plots.verdict_cells([{"label": "elu+1 D=16", "floor": 0.1, "seeds": {0: 0.5, 1: 0.6}, "long": {0: 0.55}}])
    curve = [{"step": 50 * i, "val_accuracy": min(1.0, 0.1 * i)} for i in range(12)]
    plots.overlaid_curves({D: {f"model {m}": [curve, curve[:8]] for m in range(3)} for D in (4, 8, 16)},
                          {4: 0.25, 8: 0.125, 16: None}, rows="model", cols="D")
    assert len(seen) == 6 and all(s["violations"] == [] for s in seen), seen


def test_overlaid_curves_average_the_seeds_and_give_each_row_one_legend_entry(monkeypatch):
    """A sweep's overlay: the mean of the seeds at each step (the band their sd), one line per row in
    each panel, one legend entry per row (not per panel), no figure past eight rows."""
    seen = []
    real = plots.to_uri

    def capture(fig, fmt="png"):
        axes = [ax for ax in fig.axes if ax.get_visible()]
        seen.append({"lines": {ln.get_label(): list(ln.get_ydata()) for ln in axes[0].get_lines()},
                     "legend": [t.get_text() for t in fig.legends[0].get_texts()], "panels": len(axes)})
        return real(fig, fmt)

    monkeypatch.setattr(plots, "to_uri", capture)
    a = [{"step": 0, "val_accuracy": 0.2}, {"step": 100, "val_accuracy": 0.6}]
    b = [{"step": 0, "val_accuracy": 0.4}, {"step": 100, "val_accuracy": 1.0}]
    assert plots.overlaid_curves({16: {"elu+1": [a, b], "softmax": [b]}, 32: {"elu+1": [a]}}, {16: 0.06, 32: 0.03},
                                 rows="model", cols="D")
    (got,) = seen
    assert got["lines"]["elu+1"] == pytest.approx([0.3, 0.8]) and got["lines"]["softmax"] == [0.4, 1.0]
    assert got["legend"] == ["elu+1", "softmax"] and got["panels"] == 2
    many = {16: {f"m{k}": [a] for k in range(9)}}
    assert plots.overlaid_curves(many, {16: 0.06}, rows="model", cols="D") is None


def test_more_than_eight_series_are_faceted_into_axes_of_at_most_eight(monkeypatch):
    seen = _captured(monkeypatch)
    df = pd.DataFrame([{"x": 2 ** i, "accuracy": 0.5, "model": f"model {m:02d}", "floor": 0.1}
                       for m in range(20) for i in range(4)])
    plots.lines(df, "x", "accuracy", "model", title="t", xlabel="x", logx=True, floor="floor")
    plots.bars(pd.DataFrame([{"x": "L0", "y": 1.0, "model": f"m{m}"} for m in range(11)]), "x", "y", "model",
               title="b", ylabel="y")
    lines, bars = seen
    assert lines["axes"] == 3 and lines["series"] == [7, 7, 6] and lines["violations"] == []
    assert bars["axes"] == 2 and max(bars["series"]) <= plots.MAX_SERIES and bars["violations"] == []


def test_the_rules_see_too_many_series_a_missing_floor_and_a_narrow_log_axis():
    fig, ax = plt.subplots()
    for k in range(9):
        ax.plot([1, 2], [k / 10, k / 10], label=f"series {k}")
    ax.set(ylabel="accuracy", xscale="log", xlabel="pairs (log scale)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    found = plots.violations(fig)
    assert any("9 series" in f for f in found) and any("floor" in f for f in found)
    assert any("log x axis" in f for f in found)  # 1 to 2 is not three doublings
    ax.axhline(0.05, label="floor (no-memory reader)")
    with pytest.warns(plots.PlotRuleWarning, match="9 series"):
        left = plots.enforce(fig)
    assert ax.get_xscale() == "linear" and ax.get_xlabel() == "pairs" and not any("floor" in f or "log" in f for f in left)
    plt.close(fig)


def test_a_log_axis_over_decades_stays_log(monkeypatch):
    seen = _captured(monkeypatch)
    df = pd.DataFrame([{"x": 10 ** i, "accuracy": 0.5, "model": "m", "floor": 0.1} for i in range(4)])
    plots.lines(df, "x", "accuracy", "model", title="t", xlabel="x", logx=True, floor="floor")
    narrow = pd.DataFrame([{"x": x, "accuracy": 0.5, "model": "m", "floor": 0.1} for x in (16, 24, 32)])
    plots.lines(narrow, "x", "accuracy", "model", title="n", xlabel="x", logx=True, floor="floor")
    assert seen[0]["scales"] == ["log"] and seen[1]["scales"] == ["linear"]


def test_near_zero_signal_cross_talk_is_capped_and_said():
    """A head that reads almost nothing from the answer has cross-talk ~1e11: shown capped at
    1e3 and named in the figure's title, so the best model does not look the worst."""
    from evalsuite.records import RunRecord
    from evalsuite.reports.sections.interference import CROSSTALK_CAP, _interference

    rows = [{"layer": 0, "head": 0, "crosstalk_median": 2.0}, {"layer": 1, "head": 0, "crosstalk_median": 2e11}]
    run = RunRecord(run_id="r", status="done", config={"task": {"name": "recall"}, "model": {"name": "softmax"}},
                    metrics={"analysis": {"interference": rows}})
    section = _interference([run], "png")
    assert "1 bar(s) capped at 1000" in section["plots"][0]["title"] and CROSSTALK_CAP == 1e3


def test_an_axis_of_whole_numbers_gets_whole_number_ticks(monkeypatch):
    """"accuracy against the number of pairs" with most models at one D showed ticks at 15.5 and
    16.5: an integer axis gets integer ticks."""
    ticks = []
    real = plots.to_uri

    def capture(fig, fmt="png"):
        fig.canvas.draw()
        ticks.extend(t for ax in fig.axes for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1])
        return real(fig, fmt)

    monkeypatch.setattr(plots, "to_uri", capture)
    df = pd.DataFrame([{"pairs": 16, "accuracy": 0.5 + m / 10, "model": f"m{m}", "floor": 1 / 16} for m in range(3)])
    plots.lines(df, "pairs", "accuracy", "model", title="t", xlabel="pairs", floor="floor")
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_a_line_plot_draws_only_series_with_two_points_or_more():
    """A model run at one value of the plot's axis is one lone point beside the others' lines: the
    summary table shows it; a plot of only such points is not drawn (issue 64)."""
    from evalsuite.reports.sections import _lines_only

    df = pd.DataFrame([{"model": "a", "d_model": 32}, {"model": "a", "d_model": 64}, {"model": "b", "d_model": 64}])
    assert list(_lines_only(df, "d_model").model) == ["a", "a"]
    assert _lines_only(df[df.model == "b"], "d_model").empty
    assert _lines_only(pd.DataFrame(), "d_model").empty


def test_lines_shade_the_seeds_spread(monkeypatch):
    """One plot per question with the seeds' spread: +- 1 sd shaded per series, from a summary row's
    accuracy_std or from rows that share an x (issue 64)."""
    from matplotlib.collections import PolyCollection

    seen = []
    real = plots.to_uri
    monkeypatch.setattr(plots, "to_uri", lambda fig, fmt="png": seen.append(
        sum(isinstance(c, PolyCollection) for ax in fig.axes for c in ax.collections)) or real(fig, fmt))
    summary = pd.DataFrame([{"x": x, "accuracy": 0.5, "accuracy_std": 0.05, "model": m, "floor": 0.1}
                            for m in ("a", "b") for x in (1, 2, 4)])
    plots.lines(summary, "x", "accuracy", "model", title="t", xlabel="x", floor="floor")
    seeds = pd.DataFrame([{"x": x, "accuracy": 0.5 + 0.1 * s, "model": "a", "floor": 0.1} for s in range(3) for x in (1, 2)])
    plots.lines(seeds, "x", "accuracy", "model", title="t", xlabel="x", floor="floor")
    one = pd.DataFrame([{"x": x, "accuracy": 0.5, "model": "a", "floor": 0.1} for x in (1, 2)])
    plots.lines(one, "x", "accuracy", "model", title="t", xlabel="x", floor="floor")
    assert seen == [2, 1, 0]


def test_a_long_cell_label_keeps_its_end():
    """Cells of one configuration differ only at the end of their labels (D=2 ... D=32): a label cut
    to fit keeps its end."""
    label = "elu+1 (d_k 8, d_v 8), 2 layers D=16"
    short = plots._middle(label, 30)
    assert len(short) == 30 and short.endswith("layers D=16") and short.startswith("elu+1 (d_k")
    assert plots._middle("softmax D=4", 30) == "softmax D=4"
