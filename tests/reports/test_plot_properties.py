"""Plot properties the plotting code checks when it draws (``plots.overlaps``, from matplotlib's
own extents): no legend over its axes or title, for every plot builder on data that would put it
there."""
import matplotlib.pyplot as plt
import pandas as pd

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


def test_every_line_plot_is_drawn_without_overlap(monkeypatch):
    """Each builder draws through ``to_uri``: capture the figure as it is saved and check it."""
    seen = []
    real = plots.to_uri

    def capture(fig, fmt="png"):  # the check to_uri makes, then what the figure is left with
        if plots.overlaps(fig):
            plots.place_legends(fig)
        seen.append(plots.overlaps(fig))
        return real(fig, fmt)

    monkeypatch.setattr(plots, "to_uri", capture)
    df = pd.DataFrame([{"x": 2 ** i, "accuracy": 1 - i / 10, "model": f"model {m}"} for m in range(6) for i in range(6)])
    plots.lines(df, "x", "accuracy", "model", title="t", xlabel="x", logx=True)
    plots.collapse(pd.DataFrame([{"series": f"s{m}", "ratio": 2 ** i / 4, "accuracy": min(1, 4 / 2 ** i)}
                                 for m in range(5) for i in range(5)]), title="c")
    plots.bars(pd.DataFrame([{"x": f"L{i}", "y": i + 1.0, "model": f"m{m}"} for m in range(4) for i in range(3)]),
               "x", "y", "model", title="b", ylabel="y")
    assert len(seen) == 3 and all(o == [] for o in seen), seen


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
