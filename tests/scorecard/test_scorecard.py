"""`evalsuite scorecard`: the shipped baselines, the comparison marks, a tiny scorecard end to end
and a plug-in's identity."""
import json
import shutil
import time

import pytest
from click.testing import CliRunner

from evalsuite.cli import main
from evalsuite.scorecard import measure
from evalsuite.scorecard.baselines import LABELS, MAPS
from evalsuite.scorecard.card import METRICS, Baselines, Card, Figure, compare, load_baselines

MAP = '''import torch

from evalsuite.models.feature_maps import FeatureMap


class Sq(FeatureMap):
    """relu(x)^2 + 1e-3: positive."""

    def forward(self, x):
        return torch.relu(x).square() + 1e-3
'''


def test_the_shipped_baselines_load_and_were_made_at_the_declared_settings():
    """baselines.json (``python -m evalsuite.scorecard.baselines``): every baseline map, at the
    settings ``measure`` declares now, full size, every figure on three seeds."""
    made = load_baselines()
    assert made.command == "python -m evalsuite.scorecard.baselines" and made.commit and made.made
    assert [c.ref for c in made.cards] == [m or "softmax" for m in MAPS]
    assert [c.label for c in made.cards] == [LABELS.get(m, "softmax") for m in MAPS]
    for card, ref in zip(made.cards, MAPS):
        assert not card.quick, card.label
        declared = measure.mqar_configs(ref, seeds=(0,), rates=measure.MQAR_RATES[:1])[0].as_dict()
        assert card.settings["mqar"] == {k: v for k, v in declared.items() if k not in ("seed", "plugins")}, card.label
        assert card.settings["probe_sizes"] == [list(s) for s in measure.SIZES]
        assert {f.metric for f in card.figures} >= {"mqar", "crosstalk", "entropy", "time_ratio"}
        assert ({f.metric for f in card.figures} >= {"argmax_capacity", "squared_capacity"}) == (ref is not None)
        for f in card.figures:
            if f.metric != "state_floats":
                assert sorted(f.seeds) == list(measure.SEEDS), (card.label, f.metric, f.setting)


def fig(metric, *values, setting=""):
    return Figure(metric=metric, setting=setting, seeds=dict(enumerate(values)))


@pytest.mark.parametrize("a, b, expected", [
    pytest.param(fig("mqar", 0.9, 0.92, 0.91), fig("mqar", 0.5, 0.55, 0.52), "better", id="higher-accuracy-better"),
    pytest.param(fig("mqar", 0.5, 0.55, 0.52), fig("mqar", 0.9, 0.92, 0.91), "worse", id="lower-accuracy-worse"),
    pytest.param(fig("mqar", 0.9, 0.5, 0.91), fig("mqar", 0.5, 0.9, 0.52), None, id="seeds-disagree"),
    pytest.param(fig("mqar", 0.9, 0.92), fig("mqar", 0.5, 0.55), None, id="two-seeds-too-few"),
    pytest.param(fig("mqar", 0.56, 0.57, 0.58), fig("mqar", 0.52, 0.53, 0.54), None, id="within-the-margin"),
    pytest.param(fig("crosstalk", 0.2, 0.21, 0.2), fig("crosstalk", 0.6, 0.62, 0.61), "better", id="lower-crosstalk-better"),
    pytest.param(fig("argmax_capacity", 10, 10.5, 9.8), fig("argmax_capacity", 12, 12.4, 11.9), None,
                 id="capacity-within-25-percent"),
    pytest.param(fig("argmax_capacity", 10, 10.5, 9.8), fig("argmax_capacity", 20, 21, 19), "worse", id="capacity-halved"),
    pytest.param(fig("entropy", 1.0, 1.0, 1.0), fig("entropy", 3.0, 3.0, 3.0), None, id="descriptive-never-marked"),
])
def test_a_difference_is_marked_only_where_the_comparison_rule_decides_it(a, b, expected):
    assert compare(a, b) == expected


def test_a_bound_decides_only_on_its_own_side():
    """A probe whose grid ended before it failed gives a lower bound (">= 95"): it can be shown above
    a smaller figure, never below a larger one."""
    above = Figure(metric="argmax_capacity", seeds={0: 95, 1: 95, 2: 95}, note="argmax seed 0: above the grid (> 95)")
    assert above.text().startswith(">= 95") and above.censored == "above"
    assert compare(above, fig("argmax_capacity", 12, 13, 12.5)) == "better"
    assert compare(above, fig("argmax_capacity", 400, 410, 420)) is None
    assert compare(fig("argmax_capacity", 400, 410, 420), above) is None


def test_an_accuracy_below_its_floor_says_so():
    from evalsuite.reports.scorecard import shown

    assert shown(fig("mqar", 0.15, 0.16, 0.17), "D = 4 (floor 0.385)").endswith("< floor")
    assert "floor" not in shown(fig("mqar", 0.85, 0.86, 0.87), "D = 4 (floor 0.385)")
    from evalsuite.reports.scorecard import table

    low = Card(label="low", ref="x", identity="x", figures=[fig("mqar", 0.15, 0.16, 0.17, setting="D = 4 (floor 0.385)")])
    lower = Card(label="lower", ref="y", identity="y", figures=[fig("mqar", 0.01, 0.02, 0.01, setting="D = 4 (floor 0.385)")])
    high = Card(label="high", ref="z", identity="z", figures=[fig("mqar", 0.9, 0.91, 0.92, setting="D = 4 (floor 0.385)")])
    assert [c["mark"] for c in table(low, [lower, high])[0]["cells"]] == [None, "worse"]  # both below: unmarked


def test_every_metric_answers_one_of_the_pages_questions():
    from evalsuite.scorecard.card import QUESTIONS

    assert all(m.question in QUESTIONS for m in METRICS.values())


def tiny_baselines(tmp_path):
    """Two hand-made baseline cards (no training), one far above and one far below any smoke run."""
    def card(label, acc):
        return Card(label=label, ref=label, identity=label, figures=[
            fig("mqar", acc, acc, acc, setting="D = 4"), fig("argmax_capacity", 50 * acc, 50 * acc, 50 * acc,
                                                           setting="d_k 8, d_v 8")])
    path = tmp_path / "base.json"
    path.write_text(Baselines(command="by hand", cards=[card("high", 0.99), card("low", 0.001)]).model_dump_json())
    return path


def test_a_tiny_scorecard_runs_end_to_end_and_a_second_call_reads_it_back(tmp_path):
    """--quick with a test map: the page, the JSON with the same figures and comparisons, and a second
    call that trains nothing (it reads the stored scorecard)."""
    (tmp_path / "sq.py").write_text(MAP)
    base, store = tiny_baselines(tmp_path), tmp_path / "s" / "evalsuite.db"
    args = ["scorecard", str(tmp_path / "sq.py") + ":Sq", "--quick", "--baselines", str(base), "--store", str(store),
            "--workers", "1", "-o", str(tmp_path / "card.html")]
    first = CliRunner().invoke(main, args + ["--json"])
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["map"]["label"].startswith("Sq@") and data["map"]["quick"]
    assert {f["metric"] for f in data["map"]["figures"]} >= {"argmax_capacity", "squared_capacity", "mqar", "crosstalk",
                                                             "entropy", "monotonicity", "smallest_weight", "kl_softmax",
                                                             "state_floats", "time_ratio"}
    assert len(data["map"]["run_ids"]) == 2  # seed 0 at both rates: a smoke
    assert {c["against"] for c in data["comparisons"]} == {"high", "low"}
    html = (tmp_path / "card.html").read_text()
    assert "Scorecard: Sq@" in html and "--quick" in html and 'id="scorecard-data"' in html
    begin = time.perf_counter()
    second = CliRunner().invoke(main, args)
    assert second.exit_code == 0 and "the stored scorecard" in second.output, second.output
    assert time.perf_counter() - begin < 30  # no training: it reads the card (a smoke trains for longer)


@pytest.mark.parametrize("ref, message", [
    ("nosuchmap", "MAP: 'nosuchmap' cannot be scored"),
    ("identity", "is not nonnegative"),
])
def test_a_map_that_cannot_be_scored_is_refused_before_any_work(tmp_path, ref, message):
    res = CliRunner().invoke(main, ["scorecard", ref, "--quick", "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "s.db").exists()


def test_a_plugin_is_its_contents_the_same_file_at_two_paths_is_one_map(tmp_path):
    """The scorecard names a plug-in by its class and contents: one file in two folders is one map
    (one label, one stored scorecard); an edited file is another, with its own label."""
    from evalsuite.scorecard.score import cache_path, describe
    from evalsuite.store import Store

    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        shutil.copy(_example(), tmp_path / folder / "m.py")
    (tmp_path / "c" / "m.py").write_text((tmp_path / "c" / "m.py").read_text() + "\n# edited\n")
    store = Store(tmp_path / "s.db")
    a, b, c = (describe(str(tmp_path / f / "m.py") + ":ExpMap") for f in ("a", "b", "c"))
    assert a[0] == b[0] and a[1] == b[1] and a[0].startswith("ExpMap@")
    assert c[0] != a[0] and c[0].startswith("ExpMap@")
    paths = [cache_path(str(tmp_path / f / "m.py") + ":ExpMap", store, quick=True) for f in ("a", "b", "c")]
    assert paths[0] == paths[1] != paths[2]


def _example():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "examples" / "exp_feature_map.py"
