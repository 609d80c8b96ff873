"""`reproduce --figures DIR`: the report's headline figures (the capacity law's collapse plot, the
frontier) as PNG files for the README, drawn from the same runs; 4x reruns drawn beside their base
points; bad folders refused before any work."""
import pandas as pd
import pytest
from click.testing import CliRunner

from evalsuite import reproduce as rep
from evalsuite.cli import main
from evalsuite.reports import builder, plots
from evalsuite.reports.figures import headline_figures
from tests.reproduce.synthetic import NO_PROBES, as_stored, capacity_law

PNG = b"\x89PNG\r\n\x1a\n"


def test_headline_figures_are_the_capacity_law_and_frontier_plots_as_png():
    """Each headline draws only the runs of the experiments it heads: the capacity law's runs make
    the collapse plot, and no frontier figure without a frontier experiment's runs."""
    runs = capacity_law(moving=0.1)
    figures = headline_figures({"capacity-law": runs, "copy": runs})
    names = [name for name, _, _ in figures]
    assert names == ["capacity-law-collapse.png", "capacity-law-retrieved.png"]
    assert all(data.startswith(PNG) for _, _, data in figures)
    # one per setting and base budget (8 epochs; the 4x reruns drawn on it), the one with the most points first
    assert sorted(n for n, _, _ in headline_figures({"frontier-delta": runs})) == [
        "frontier-recall-T128-D32-8ep.png", "frontier-recall-T16-D4-8ep.png", "frontier-recall-T32-D8-8ep.png",
        "frontier-recall-T64-D16-8ep.png"]
    assert headline_figures({"frontier-delta": runs})[0][0] == "frontier-recall-T64-D16-8ep.png"
    assert headline_figures({}) == [] and headline_figures({"capacity-law": []}) == []


def test_the_argmax_capacity_figures_draw_from_the_probes_once_their_experiments_are_named():
    """capacity-argmax runs no model: its plot of n* against d is drawn from the probes where it was
    judged; trained mixed-D models add the collapse plot; neither is drawn for other experiments."""
    from tests.reproduce.synthetic import argmax_probes, capacity_trained

    probes = argmax_probes()
    probes = probes.assign(n_values=probes.n_keys.where(probes.n_keys % 2 == 0, probes.n_keys + 1))
    assert [n for n, _, _ in headline_figures({"capacity-argmax": []}, probes)] == ["capacity-argmax-against-d.png"]
    assert headline_figures({"copy": []}, probes) == [] and headline_figures({"capacity-argmax": []}) == []
    runs, trained_probes = capacity_trained()
    names = [n for n, _, _ in headline_figures({"capacity-trained": runs}, trained_probes)]
    assert names == ["capacity-argmax-against-d.png", "capacity-argmax-collapse.png"]


def test_the_collapse_plot_draws_each_4x_rerun_hollow_beside_its_base_point(monkeypatch):
    """A point whose 4x rerun moved is budget, not capacity: the figure shows both."""
    seen = []
    real = plots.to_uri

    def capture(fig, fmt="png"):
        seen.append([ln for ax in fig.axes for ln in ax.lines if ln.get_markerfacecolor() == "none"
                     and ln.get_label() == "_nolegend_"])
        return real(fig, fmt)

    monkeypatch.setattr(plots, "to_uri", capture)
    base = pd.DataFrame([{"series": "a", "ratio": r, "accuracy": min(1, 1 / r), "floor": 0.1} for r in (0.5, 1, 2, 4)])
    long = pd.DataFrame([{"series": "a", "ratio": r, "accuracy": 0.9} for r in (2, 4)])
    plots.collapse(base, title="c", long=long)
    plots.collapse(base, title="c")
    assert [len(s) for s in seen] == [2, 0]


def _report(tmp_path):
    runs = as_stored(capacity_law(), "capacity-law")
    verdict = rep.get("capacity-law").judge(runs, NO_PROBES, "cpu")
    return builder.write(runs, tmp_path / "r.html", verdicts=[verdict], compact=True)


def test_figures_from_a_report_are_written_into_the_folder(tmp_path):
    out = tmp_path / "figs"
    res = CliRunner().invoke(main, ["reproduce", "capacity-law", "--verdicts-from", str(_report(tmp_path)),
                                    "--figures", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "capacity-law-collapse.png").read_bytes().startswith(PNG) and "figure   " in res.output


def test_a_figures_path_that_is_a_file_or_in_the_store_is_refused_before_any_work(tmp_path):
    report = _report(tmp_path)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    res = CliRunner().invoke(main, ["reproduce", "capacity-law", "--verdicts-from", str(report), "--figures", str(a_file)])
    assert res.exit_code == 2 and "--figures" in res.output and a_file.read_text() == "mine"
    store = tmp_path / "s" / "evalsuite.db"
    assert CliRunner().invoke(main, ["reproduce", "capacity-law", "--verdicts-from", str(report),
                                     "--rebuild-store", str(store)]).exit_code == 0
    res = CliRunner().invoke(main, ["reproduce", "capacity-law", "--verdicts-only", "--store", str(store),
                                    "--figures", str(store.parent / "weights")])
    assert res.exit_code == 2 and "Error: --figures" in res.output and "weights/" in res.output
    assert not (store.parent / "weights" / "capacity-law-collapse.png").exists()
    res = CliRunner().invoke(main, ["reproduce", "capacity-law", "--smoke", "--figures", str(tmp_path / "f")])
    assert res.exit_code == 2 and "--figures: not with --smoke" in res.output


@pytest.mark.parametrize("families, drawn", [(None, True), ({"delta", "softmax", "elu1"}, False)],
                         ids=["every-family-run", "three-families-run"])
def test_a_headline_waits_until_its_verdict_judges_its_clauses(tmp_path, families, drawn):
    """A frontier figure from a few of its families would read as the frontier: none is drawn until
    its verdict has judged its clauses (every cell it reads has runs), and the command says so."""
    from tests.reproduce.synthetic import CASES

    runs = as_stored([r for r in CASES["frontier-delta"][0]
                      if families is None or (r.config["model"].get("feature_map") or r.config["model"]["name"]) in families],
                     "frontier-delta")
    verdict = rep.get("frontier-delta").judge(runs, NO_PROBES, "cpu")
    report = builder.write(runs, tmp_path / "r.html", verdicts=[verdict], compact=True)
    out = tmp_path / "figs"
    res = CliRunner().invoke(main, ["reproduce", "frontier-delta", "--verdicts-from", str(report), "--figures", str(out)])
    assert res.exit_code == 0, res.output
    assert bool(list(out.glob("frontier-*.png"))) is drawn
    assert ("none drawn for frontier-delta" in res.output) is not drawn
