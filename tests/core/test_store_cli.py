"""Browsing a store without Python: `runs` (filters, --json, --csv), `show RUN` and `export`
(csv and jsonl round-trip through pandas; parquet needs an engine), on a store of synthetic
records (no training)."""
import json
import re

import pandas as pd
import pytest
from click.testing import CliRunner

from evalsuite.cli import main
from evalsuite.records import RunRecord, Status
from evalsuite.store import Store


def record(run_id, model="linear", status=Status.DONE, acc=0.5, seed=0, task="recall"):
    config = {"task": {"name": task, "seq_len": 64, "num_kv_pairs": 8}, "seed": seed,
              "model": {"name": model, "feature_map": "elu1" if model == "linear" else None, "d_model": 64, "n_layers": 2,
                        "feature_map_options": {"nu": 1} if model == "linear" else {}},
              "train": {"lr": 0.003, "epochs": 3.0}}
    metrics = {"accuracy": acc, "val_accuracy": acc, "floor": 0.16, "floor_reader": "order", "steps": 100,
               "analysis": {"nested": [1, 2]}} if status is Status.DONE else {}
    return RunRecord(run_id=run_id, config=config, status=status, metrics=metrics,
                     error=None if status is Status.DONE else "Traceback\nboom")


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "evalsuite.db")
    for r in (record("aaaa1111", acc=0.9), record("aaaa2222", model="softmax", acc=1.0, seed=1),
              record("bbbb3333", status=Status.FAILED), record("cccc4444", task="copy", acc=0.7)):
        s.finish(r)
    return s


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_runs_lists_filters_and_prints_json_and_csv(store):
    res = invoke("runs", "--store", str(store.path))
    assert res.exit_code == 0 and "4 runs in" in res.output and "aaaa1111" in res.output
    rows = json.loads(invoke("runs", "--store", str(store.path), "--json").output)
    assert {r["run_id"] for r in rows} == {"aaaa1111", "aaaa2222", "bbbb3333", "cccc4444"}
    assert {r["run_id"] for r in json.loads(invoke("runs", "--store", str(store.path), "--json", "--model", "softmax").output)} \
        == {"aaaa2222"}
    assert [r["run_id"] for r in json.loads(invoke("runs", "--store", str(store.path), "--json", "--status", "failed").output)] \
        == ["bbbb3333"]
    assert [r["run_id"] for r in json.loads(invoke("runs", "--store", str(store.path), "--json", "--task", "copy").output)] \
        == ["cccc4444"]
    csv = invoke("runs", "--store", str(store.path), "--csv").output
    assert csv.splitlines()[0].startswith("run_id,status,task,model")
    assert invoke("runs", "--store", str(store.path), "--json", "--csv").exit_code == 2
    missing = invoke("runs", "--store", str(store.path.parent / "none.db"))
    assert missing.exit_code == 2 and missing.output.startswith("Error: --store")


def test_show_a_run_by_prefix_and_as_json(store):
    res = invoke("show", "aaaa1", "--store", str(store.path))
    assert res.exit_code == 0 and "test accuracy" in res.output and "floor 0.1600: order" in res.output
    assert re.search(r"(below|at|above) the floor 0\.1600", res.output)  # words that match the numbers
    assert not re.search(r"wall time +\d+\.\d{2,}", res.output)  # seconds to a tenth, with their unit
    assert json.loads(invoke("show", "aaaa2", "--store", str(store.path), "--json").output)["run_id"] == "aaaa2222"
    for bad in ("aaaa", "zzzz"):  # several, none
        res = invoke("show", bad, "--store", str(store.path))
        assert res.exit_code == 2 and res.output.startswith("Error: RUN_ID") and "Traceback" not in res.output


@pytest.mark.parametrize("fmt, read", [("csv", pd.read_csv), ("jsonl", lambda p: pd.read_json(p, lines=True))])
def test_export_round_trips_through_pandas(store, tmp_path, fmt, read):
    out = tmp_path / f"runs.{fmt}"
    res = invoke("export", "--store", str(store.path), "--format", fmt, "-o", str(out))
    assert res.exit_code == 0, res.output
    frame = read(out)
    assert sorted(frame.run_id) == ["aaaa1111", "aaaa2222", "bbbb3333", "cccc4444"]
    by_id = frame.set_index("run_id")
    assert by_id.loc["aaaa1111", "accuracy"] == 0.9 and by_id.loc["aaaa1111", "model.name"] == "linear"
    assert json.loads(by_id.loc["aaaa1111", "model.feature_map_options"]) == {"nu": 1}
    assert "analysis" not in frame  # nested metrics stay in the store


def test_export_never_writes_over_the_store_and_names_parquets_need(store, monkeypatch):
    res = invoke("export", "--store", str(store.path), "-o", str(store.path))
    assert res.exit_code == 2 and "Error: --output" in res.output
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("pyarrow", "fastparquet") else real(name, *a))
    res = invoke("export", "--store", str(store.path), "--format", "parquet")
    assert res.exit_code == 2 and "pyarrow" in res.output


def test_sweep_status_without_a_spec_lists_the_stores_sweeps(store):
    store.add_sweep("s1", "grid", {"name": "grid"}, ["aaaa1111", "bbbb3333", "never-started"])
    res = invoke("sweep", "--status", "--store", str(store.path))
    assert res.exit_code == 0 and "s1  grid" in res.output and "3 runs: 1 done, 1 failed, 1 left" in res.output
    res = invoke("sweep", "--store", str(store.path))
    assert res.exit_code == 2 and res.output.startswith("Error: SPEC")


def _sweep_store(tmp_path):
    """A model x D sweep: elu+1 and softmax at D 4 and 16 on seeds 0-2, and elu+1 at D 16 at a
    second rate on seed 0 only (its validation on seed 0 is worse, so the first rate is shown)."""
    s = Store(tmp_path / "sweep.db")
    accs = {("linear", 4): [0.9, 0.8, 0.85], ("linear", 16): [0.3, 0.2, 0.25], ("softmax", 4): [1.0] * 3,
            ("softmax", 16): [0.99, 0.98, 0.97]}
    for (model, D), values in accs.items():
        for seed, acc in enumerate(values):
            r = record(f"{model}{D}{seed}", model=model, acc=acc, seed=seed)
            r.config["task"]["num_kv_pairs"] = D
            r.metrics["floor"] = 1 / D
            s.finish(r)
    r = record("linear16lr", acc=0.6, seed=0)
    r.config["task"]["num_kv_pairs"], r.config["train"]["lr"], r.metrics["val_accuracy"] = 16, 0.01, 0.1
    s.finish(r)
    return s


def test_runs_pivot_answers_a_sweeps_question(tmp_path):
    """`runs --pivot model,D`: mean +- sd over seeds per cell beside the floor, the rate chosen by
    validation on the seeds that ran every rate and the figure over the others (the suite's rule,
    never by test accuracy)."""
    store = _sweep_store(tmp_path)
    res = invoke("runs", "--store", str(store.path), "--pivot", "model,D")
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("linear/elu1(nu=1)"))
    # D 16: the rate chosen on seed 0 (the seed that ran both), the figure over seeds 1 and 2 at it
    assert "0.850 +- 0.050 (n=3; floor 0.250)" in line and "0.225 +- 0.035 (n=2; floor 0.062)" in line
    cells = json.loads(invoke("runs", "--store", str(store.path), "--pivot", "model,D", "--json").output)
    soft16 = next(c for c in cells if c["model"] == "softmax" and c["D"] == 16)
    assert soft16["seeds"] == 3 and abs(soft16["accuracy"] - 0.98) < 1e-9 and abs(soft16["sd"] - 0.01) < 1e-9
    lin16 = next(c for c in cells if c["model"] == "linear/elu1(nu=1)" and c["D"] == 16)
    assert lin16["accuracy"] == pytest.approx(0.225) and lin16["lr"] == 0.003 and lin16["seeds"] == 2


@pytest.mark.parametrize("axes, message", [
    ("model", "two different axes"), ("model,model", "two different axes"), ("model,Dx", "Did you mean 'D'?")])
def test_runs_pivot_refuses_bad_axes_before_reading(tmp_path, axes, message):
    res = invoke("runs", "--store", str(tmp_path / "none.db"), "--pivot", axes)
    assert res.exit_code == 2 and res.output.startswith("Error: --pivot") and message in res.output


def test_compare_shows_what_differs_and_the_metrics_side_by_side(store, tmp_path):
    """`compare`: the configuration keys whose values differ (here the model, its map and the seed;
    the shared ones left out), each metric per run with where it stands against its floor."""
    res = invoke("compare", "aaaa1", "aaaa2", "--store", str(store.path), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["runs"] == ["aaaa1111", "aaaa2222"]
    assert out["differences"] == {"model.feature_map": ["elu1", None], "model.feature_map_options": ['{"nu": 1}', "{}"],
                                  "model.name": ["linear", "softmax"], "seed": [0, 1]}
    assert out["metrics"]["accuracy"] == [0.9, 1.0] and out["metrics"]["floor"] == [0.16, 0.16]
    text = invoke("compare", "aaaa1", "aaaa2", "--store", str(store.path)).output
    assert "configuration keys that differ" in text and "task.seq_len" not in text and "above the floor" in text
    curves = invoke("compare", "aaaa1", "aaaa2", "--store", str(store.path), "-o", str(tmp_path / "c.png"))
    assert curves.exit_code == 0 and "stored without learning curves" in curves.output  # synthetic records: none


@pytest.mark.parametrize("args, message", [
    (["aaaa1"], "two or more"), (["aaaa1", "aaaa1111"], "name one run"), (["aaaa1", "zzzz"], "RUN_IDS"),
    (["aaaa1", "aaaa2", "-o", "c.html"], "--output: a .png")])
def test_compare_refuses_bad_input_with_one_error_line(store, args, message):
    res = invoke("compare", *args, "--store", str(store.path))
    assert res.exit_code == 2 and res.output.startswith("Error:") and message in res.output and "Traceback" not in res.output


def test_report_of_chosen_runs(store, tmp_path):
    out = tmp_path / "two.html"
    res = invoke("report", "aaaa1", "cccc", "--store", str(store.path), "-o", str(out))
    assert res.exit_code == 0 and "2 runs" in res.output and out.exists()
    assert invoke("report", "aaaa1", "--sweep", "x", "--store", str(store.path), "-o", str(out)).exit_code == 2


def test_the_preset_is_recorded_and_shown_and_old_runs_say_they_have_none(tmp_path):
    """A run records the preset it was resolved from (its env: not part of its id), and `runs`,
    `show` and `export` carry it; a record from before says so instead of guessing."""
    import evalsuite

    store = Store(tmp_path / "e.db")
    new = evalsuite.run("recall", "softmax", preset="tiny", store=store.path)
    assert new.preset == "tiny" and "preset" not in new.config
    store.finish(record("aaaa1111"))  # stored before presets were recorded
    rows = {r["run_id"]: r for r in json.loads(invoke("runs", "--store", str(store.path), "--json").output)}
    assert rows[new.run_id]["preset"] == "tiny" and rows["aaaa1111"]["preset"] is None
    assert (rows[new.run_id]["T"], rows[new.run_id]["D"]) == (32, 4)
    assert "preset         tiny" in invoke("show", new.run_id[:8], "--store", str(store.path)).output
    assert "not recorded" in invoke("show", "aaaa1", "--store", str(store.path)).output
    out = tmp_path / "runs.csv"
    assert invoke("export", "--store", str(store.path), "-o", str(out)).exit_code == 0
    assert set(pd.read_csv(out).preset.fillna("-")) == {"tiny", "-"}
