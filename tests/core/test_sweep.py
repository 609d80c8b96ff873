"""Sweeps: validation up front, local workers, resume after SIGKILL, concurrent writers, Ray."""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from evalsuite import sweep as sweeps
from evalsuite.cli import main
from evalsuite.records import RunRecord
from evalsuite.store import Store

GRID6 = textwrap.dedent("""
    name: tiny6
    base: {task: recall, model: linear, preset: tiny}
    grid:
      model: [softmax, linear, delta]
      train.lr: [0.001, 0.003]
""")


def write(tmp_path, text, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def done_rows(store_path):
    with sqlite3.connect(store_path) as conn:
        return conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()


def test_readme_example_expands_to_six_points(repo_root):
    points = sweeps.expand(sweeps.load_spec(repo_root / "examples" / "sweeps" / "readme-example.yaml"))
    assert len(points) == 6
    assert {(p.config.model.name, p.config.train.lr) for p in points} == {
        (m, lr) for m in ("softmax", "linear", "delta") for lr in (0.001, 0.003)}
    assert all(p.config.train.epochs == 1 for p in points)


def test_toml_spec_points_and_seeds(tmp_path):
    spec = write(tmp_path, textwrap.dedent("""
        seeds = [0, 1]
        [base]
        task = "recall"
        model = "softmax"
        preset = "tiny"
        [[points]]
        model = "hybrid"
        "model.pattern" = "DS"
    """), "spec.toml")
    points = sweeps.expand(sweeps.load_spec(spec))
    assert len(points) == 4 and {p.config.seed for p in points} == {0, 1}


def test_invalid_point_is_refused_before_any_run(tmp_path, store_path):
    spec = write(tmp_path, GRID6.replace("train.lr: [0.001, 0.003]", "model.d_model: [32, -4]"))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--store", str(store_path)])
    assert res.exit_code == 2
    assert "model.d_model=-4" in res.output and "nothing was run" in res.output
    assert not store_path.exists()
    bad = write(tmp_path, "grid: {model: []}\nbase: {task: recall}", "bad.yaml")
    assert CliRunner().invoke(main, ["sweep", str(bad)]).exit_code == 2
    ok = write(tmp_path, GRID6, "ok.yaml")
    res = CliRunner().invoke(main, ["sweep", str(ok), "--address", "10.0.0.1:6379", "--store", str(store_path)])
    assert res.exit_code == 2 and "--address is for --executor ray" in res.output
    assert not store_path.exists()


def test_grid_of_six_with_two_workers_then_resume(tmp_path, store_path):
    spec = write(tmp_path, GRID6)
    res = CliRunner().invoke(main, ["sweep", str(spec), "--workers", "2", "--store", str(store_path)])
    assert res.exit_code == 0, res.output
    assert done_rows(store_path) == [("done", 6)]
    assert len(list((store_path.parent / "weights").glob("*.pt"))) == 6
    assert {r.preset for r in Store(store_path).runs()} == {"tiny"}  # recorded through the worker processes
    # its closing lines answer its question: the swept model against the task, each rate chosen by validation
    assert "test accuracy by model and task" in res.output and "--pivot model,task" in res.output
    assert re.search(r"softmax on recall \[model=softmax, train\.lr=0\.00[13], seed=0\]", res.output)  # each point by its values
    again = CliRunner().invoke(main, ["sweep", str(spec), "--store", str(store_path), "--no-report"])
    assert "6 done, 0 to run" in again.output
    status = CliRunner().invoke(main, ["sweep", str(spec), "--status", "--store", str(store_path)])
    assert "6 done, 0 running, 0 interrupted, 0 failed, 0 left" in status.output
    sid = Store(store_path).sweeps()[0]["sweep_id"]
    out = tmp_path / "sweep.html"
    assert CliRunner().invoke(main, ["report", "--store", str(store_path), "--sweep", sid[:5], "-o", str(out)]).exit_code == 0


def _launch(spec, store_path, *extra):
    return subprocess.Popen([sys.executable, "-m", "evalsuite.cli", "sweep", str(spec), "--store", str(store_path),
                             "--no-report", *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, env={**os.environ, "OMP_NUM_THREADS": "1"})  # two drivers: no oversubscription


def _wait_for(predicate, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _count_done(store_path):
    try:
        return dict(done_rows(store_path)).get("done", 0)
    except sqlite3.Error:
        return 0


def test_sigkill_driver_and_workers_partway_then_rerun_gives_exactly_six(tmp_path, store_path):
    spec = write(tmp_path, GRID6)
    proc = _launch(spec, store_path, "--workers", "1")
    assert _wait_for(lambda: _count_done(store_path) >= 2), proc.stdout.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its workers, mid-sweep
    proc.wait()
    assert _count_done(store_path) < 6
    rerun = _launch(spec, store_path, "--workers", "2")
    out = rerun.communicate(timeout=300)[0].decode()
    assert rerun.returncode == 0, out
    assert done_rows(store_path) == [("done", 6)]


def test_killed_worker_is_retried(tmp_path, store_path):
    spec = write(tmp_path, GRID6)
    proc = _launch(spec, store_path, "--workers", "2")

    def workers():
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]
    assert _wait_for(lambda: len(workers()) >= 2 and _count_done(store_path) >= 1)
    os.kill(workers()[0], signal.SIGKILL)
    out = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 0, out
    assert done_rows(store_path) == [("done", 6)]


def test_two_sweeps_write_one_store_at_once(tmp_path, store_path):
    a = write(tmp_path, GRID6.replace("model: [softmax, linear, delta]", "model: [softmax, linear]"), "a.yaml")
    b = write(tmp_path, GRID6.replace("model: [softmax, linear, delta]", "model: [delta, hybrid]"), "b.yaml")
    procs = [_launch(a, store_path, "--workers", "1"), _launch(b, store_path, "--workers", "1")]
    for p in procs:
        out = p.communicate(timeout=300)[0].decode()
        assert p.returncode == 0, out
    assert done_rows(store_path) == [("done", 8)]
    with sqlite3.connect(store_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*) FROM sweeps").fetchone() == (2,)


def test_ray_weights_travel_with_the_run_when_the_cluster_started_elsewhere(tmp_path, monkeypatch):
    """The Ray executor on a local instance (one Ray start serves both checks, about 30 s each):
    a cluster started from another folder and a relative store path: the workers' own working
    directory is not the driver's, so weights must come back with the task's result (they used to
    be written to a relative incoming/ that the driver never saw: runs done, weights lost)."""
    ray = pytest.importorskip("ray", reason="install the ray extra (make test does)")
    cluster, project = tmp_path / "cluster", tmp_path / "project"
    cluster.mkdir()
    project.mkdir()
    spec = write(project, GRID6.replace("model: [softmax, linear, delta]", "model: [softmax]"))
    monkeypatch.chdir(cluster)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        monkeypatch.chdir(project)
        store = Store("results/s.db")  # relative, as a user types it
        summary = sweeps.run_sweep(spec, store=store, executor="ray", echo=lambda *_: None)
    finally:
        ray.shutdown()
    assert summary["ran"] == 2 and summary["failed"] == 0
    assert done_rows(project / "results" / "s.db") == [("done", 2)]
    runs = store.runs()
    assert all(r.ok and not r.warnings for r in runs), [r.warnings for r in runs]
    assert all((project / "results" / "weights" / f"{r.run_id}.pt").exists() for r in runs)
    assert not any((cluster / "results").glob("**/*.pt")) and not list((project / "results" / "incoming").iterdir())


def test_every_example_sweep_file_expands(repo_root, monkeypatch):
    """A sweep file in examples/ that no longer validates is a broken example (exit 2 for a user).
    Examples are run from the repository root (their plug-in paths are relative to it)."""
    from evalsuite import sweep as sweeps

    monkeypatch.chdir(repo_root)
    files = sorted((repo_root / "examples" / "sweeps").glob("*.yaml"))
    assert len(files) >= 6
    for path in files:
        assert sweeps.expand(sweeps.load_spec(path)), path.name


def test_a_segment_ends_at_its_deadline_and_the_next_invocation_resumes(tmp_path, store_path, monkeypatch):
    """``deadline``: with one worker and a deadline reached inside the first run, that run stops
    there with its checkpoint (kept in the store) and is recorded interrupted, none starts after it,
    and a second call resumes it from the checkpoint and runs the rest."""
    from evalsuite.train import branch

    monkeypatch.setattr(branch, "CHECKPOINT_S", 1e9)  # only the deadline saves
    spec = sweeps.load_spec(write(tmp_path, GRID6 + "set: {train.epochs: 100}\n"))  # about 800 steps a run
    points = sweeps.expand(spec)[:2]
    store = Store(store_path)
    first = sweeps.run_points(points, name="seg", spec=spec.model_dump(), store=store, workers=1,
                              deadline=time.monotonic() + 5, echo=lambda *_: None)
    assert first["left"] == 1 and done_rows(store_path) == [("interrupted", 2)]
    stopped = [r for r in store.runs() if r.error and "segment ended at step" in r.error]
    assert len(stopped) == 1
    with store.connect(create=False) as conn:
        assert conn.execute("SELECT kind, key FROM snapshots WHERE kind = 'checkpoint'").fetchall() == \
            [("checkpoint", stopped[0].run_id)]
    past = sweeps.run_points(points, name="seg", spec=spec.model_dump(), store=store, workers=1,
                             deadline=time.monotonic() - 1, echo=lambda *_: None)
    assert past["ran"] == 0 and past["left"] == 2  # nothing starts after the deadline
    rest = sweeps.run_points(points, name="seg", spec=spec.model_dump(), store=store, workers=1, echo=lambda *_: None)
    assert rest["ran"] == 2 and done_rows(store_path) == [("done", 2)]
    assert store.get(stopped[0].run_id).metrics["resumed_from_step"] > 0


def _timed(store, point, *, seed, wall, steps, budget):
    """A synthetic done run of ``point``'s configuration at another seed that took ``wall`` seconds."""
    from evalsuite.config import run_id
    from evalsuite.records import RunRecord

    config = {**point.config.as_dict(), "seed": seed}
    store.finish(RunRecord(run_id=run_id(config), config=config, status="done",
                           metrics={"accuracy": 0.5, "wall_time_s": wall, "steps": steps, "budget_steps": budget}))


def test_expected_seconds_reads_the_configurations_finished_runs(tmp_path, store_path):
    """Median seconds per step of the same configuration (any seed, rate or epochs) times the steps
    its epochs give, times the margin; None without such a run."""
    spec = sweeps.load_spec(write(tmp_path, GRID6))
    points = sweeps.expand(spec)
    store = Store(store_path)
    soft = [p for p in points if p.config.model.name == "softmax"]
    _timed(store, soft[0], seed=90, wall=10.0, steps=100, budget=100)
    _timed(store, soft[1], seed=91, wall=30.0, steps=50, budget=100)  # stopped early: 0.6 s a step
    _timed(store, soft[0], seed=92, wall=20.0, steps=100, budget=100)
    configs = [p.config.as_dict() for p in points]
    epochs = configs[0]["train"]["epochs"]
    # a 4x rerun as escalation writes it: four times the epochs, its warm-up fixed in steps, a plateau
    # stop past the base budget (the same time per step; the 16x rung had no estimate while
    # plateau_after counted as a different configuration)
    longer = {**configs[0], "train": {**configs[0]["train"], "epochs": 4 * epochs, "warmup_steps": 250,
                                      "plateau_window": 5, "plateau_gain": 0.005, "plateau_above": 0.95,
                                      "plateau_after": 100}}
    got = sweeps.expected_seconds(store, [configs[0], longer] + [c for c in configs if c["model"]["name"] != "softmax"])
    per_epoch = 100 / epochs
    assert got[0] == pytest.approx(sweeps.ESTIMATE_MARGIN * 0.2 * per_epoch * epochs)  # median of 0.1, 0.6, 0.2
    assert got[1] == pytest.approx(4 * got[0])
    assert got[2:] == [None] * 4


def test_a_nan_metric_is_stored_as_strict_json_and_an_old_nan_row_still_times(tmp_path, store_path):
    """A metric that is NaN (no wrong answers to take a median of) is written as null, so SQLite's
    JSON functions read the row; a row an older version wrote with a bare NaN does not stop the
    segment's estimates (it stopped segment 21 with 'malformed JSON')."""
    from evalsuite.config import run_id

    spec = sweeps.load_spec(write(tmp_path, GRID6))
    soft = [p for p in sweeps.expand(spec) if p.config.model.name == "softmax"]
    store = Store(store_path)
    _timed(store, soft[0], seed=90, wall=10.0, steps=100, budget=100)
    config = {**soft[0].config.as_dict(), "seed": 91}
    rid = run_id(config)
    store.finish(RunRecord(run_id=rid, config=config, status="done",
                           metrics={"wall_time_s": 30.0, "steps": 100, "budget_steps": 100,
                                    "interference": [{"crosstalk_wrong": float("nan")}], "loss": float("inf")}))
    with sqlite3.connect(store_path) as conn:
        (valid,) = conn.execute("SELECT json_valid(metrics) FROM runs WHERE run_id = ?", (rid,)).fetchone()
    assert valid == 1
    assert store.get(rid).metrics["interference"] == [{"crosstalk_wrong": None}] and store.get(rid).metrics["loss"] is None
    with sqlite3.connect(store_path) as conn:  # as the older version wrote it
        conn.execute("UPDATE runs SET metrics = ? WHERE run_id = ?",
                     ('{"wall_time_s": 30.0, "steps": 100, "budget_steps": 100, "x": NaN}', rid))
    assert sorted(w for _, w, _, _ in store.timings()) == [10.0, 30.0]
    assert sweeps.expected_seconds(store, [soft[0].config.as_dict()])[0] == pytest.approx(
        sweeps.ESTIMATE_MARGIN * 0.2 * 100)  # the median of 0.1 and 0.3 s a step


def test_a_segment_starts_no_run_it_expects_to_end_past_the_deadline(tmp_path, store_path):
    """A run whose configuration took longer than the time left (but less than a whole segment) is
    held back (recorded interrupted for the next invocation, the sweep's ``left``); one with no
    precedent still runs; one longer than any segment starts anyway (it runs in pieces, its
    checkpoint carrying it from segment to segment)."""
    from evalsuite.executors.local import LONGEST_SEGMENT_S

    spec = sweeps.load_spec(write(tmp_path, GRID6))
    points = sweeps.expand(spec)
    soft = [p for p in points if p.config.model.name == "softmax"]
    lin = [p for p in points if p.config.model.name == "linear"][:1]
    store = Store(store_path)
    _timed(store, soft[0], seed=90, wall=2000, steps=10, budget=10)  # about 2,000 s a run: more than the 600 left
    result = sweeps.run_points(soft + lin, name="seg", spec=spec.model_dump(), store=store, workers=1,
                               deadline=time.monotonic() + 600, echo=lambda *_: None)
    assert result["ran"] == 1 and result["left"] == 2
    statuses = {r["run_id"]: r["status"] for r in store.statuses([p.run_id for p in soft + lin])}
    assert statuses == {soft[0].run_id: "interrupted", soft[1].run_id: "interrupted", lin[0].run_id: "done"}
    _timed(store, soft[0], seed=91, wall=10 * LONGEST_SEGMENT_S, steps=10, budget=10)  # now longer than any segment
    again = sweeps.run_points(soft, name="seg", spec=spec.model_dump(), store=store, workers=1,
                              deadline=time.monotonic() + 600, echo=lambda *_: None)
    assert again["ran"] == 2 and again["left"] == 0


def test_reproduce_segment_minutes_is_checked_before_any_work(tmp_path):
    out = CliRunner().invoke(main, ["reproduce", "copy", "--segment-minutes", "0", "--store", str(tmp_path / "s.db")])
    assert out.exit_code == 2 and "--segment-minutes" in out.output and not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("grid, axes", [
    (["model", "train.lr"], ("model", "task")),
    (["train.lr", "task.num_kv_pairs", "model,model.feature_map"], ("model", "D")),
    (["model.d_model", "task.seq_len"], ("d_model", "T")),
    (["train.lr"], None),
], ids=["model-and-rate", "joint-model-by-D", "width-by-T", "rate-only"])
def test_a_sweeps_pivot_follows_its_swept_variables(grid, axes):
    from evalsuite.pivot import sweep_axes

    assert sweep_axes(grid) == axes


def test_a_progress_line_names_a_segment_list_by_the_shapes_it_spans():
    """A mixture of task shapes swept as a value (the binding setting's one pass or two) reads as its
    span, not as five dicts on every progress line."""
    from evalsuite.reproduce.settings import bind_segments
    from evalsuite.sweep import describe

    line = describe({"model": "delta", "task.segments": bind_segments(2), "train.lr": 0.01})
    assert line == "model=delta, task.segments=5 segments: T 12-192, D 2-32 (num_passes 2), train.lr=0.01"
    assert describe({"task.segments": bind_segments()}) == "task.segments=5 segments: T 8-128, D 2-32"
    assert describe({}) == "(base)"


def test_a_sweep_says_how_far_it_is_while_runs_are_in_flight():
    """Between two finished runs (minutes apart in a reproduction segment) a line every TICK_S."""
    import time

    from evalsuite.sweep import Progress

    lines = []
    progress = Progress(3, lines.append)
    with progress.ticking(every=0.05):
        time.sleep(0.3)
    n = len(lines)
    assert n >= 2 and all(x.startswith("... 0 of 3 runs done, 3 left") for x in lines)
    time.sleep(0.15)
    assert len(lines) == n  # it stops with its block


def test_a_sweep_s_progress_counts_interrupted_runs_apart_from_failed_ones():
    """A run a segment's end stopped is resumed by the next invocation, not a failure: the progress
    lines and the closing line say which is which."""
    from evalsuite.sweep import Progress

    lines = []
    progress = Progress(3, lines.append)
    config = {"task": {"name": "recall"}, "model": {"name": "linear"}, "seed": 0}
    for status in ("done", "interrupted", "failed"):
        progress.update(RunRecord(run_id=status, config=config, status=status, metrics={"accuracy": 0.5}))
    progress.close()
    assert "| 0 failed, " in lines[0] and "| 0 failed, 1 interrupted (resumed by the next invocation)," in lines[1]
    assert "| 1 failed, 1 interrupted" in lines[2] and lines[3].endswith("1 failed, 1 interrupted (resumed by the "
                                                                         "next invocation)")
