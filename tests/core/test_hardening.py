"""Hostile and careless input: every case of the hardening issue, each with its behaviour now.

Stores here are filled with synthetic rows (``Store.start``/``finish``), not trained models, except
where training is the point (metrics before weights, an interrupted run)."""
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import evalsuite
from evalsuite.resolve import resolve
from evalsuite import files
from evalsuite.cli import main
from evalsuite.errors import UserError
from evalsuite.records import RunRecord
from evalsuite.store import Store
from evalsuite.store_file import APPLICATION_ID, SCHEMA_VERSION, StoreError

RUN = ["run", "--task", "recall", "--model", "linear", "--preset", "tiny", "--device", "cpu"]


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def synthetic_store(path: Path, n: int = 2) -> Store:
    """A store with ``n`` finished runs, written without training."""
    store = Store(path)
    for seed in range(n):
        config = resolve("recall", "linear", preset="tiny", seed=seed)
        store.finish(RunRecord(run_id=config.run_id, config=config.as_dict(), status="done", env={"device": "cpu"},
                               metrics={"accuracy": 0.5, "val_accuracy": 0.5, "loss": 1.0},
                               history=[{"step": 4, "val_accuracy": 0.5}]))
    return store


def assert_refused(res, *needles):
    assert res.exit_code == 2, res.output
    assert "Error:" in res.output and "Traceback" not in res.output, res.output
    for needle in needles:
        assert needle in res.output, res.output


# ---- install ------------------------------------------------------------------------------------

def test_python_floor_matches_the_code(repo_root):
    import tomllib

    meta = tomllib.loads((repo_root / "pyproject.toml").read_text())
    assert meta["project"]["requires-python"].startswith(">=3.11")  # sweep.py imports tomllib
    # the design card's top level: tasks/, models/ and reports/ install under evalsuite.*; every
    # package folder of the checkout is listed (the wheel test checks that every one ships)
    setup = meta["tool"]["setuptools"]
    roots = {"evalsuite": "evalsuite", **{name: folder for name, folder in setup["package-dir"].items()}}
    assert roots == {"evalsuite": "evalsuite", "evalsuite.tasks": "tasks", "evalsuite.models": "models",
                     "evalsuite.reports": "reports"}
    found = set()
    for name, folder in roots.items():
        for init in (repo_root / folder).rglob("__init__.py"):
            found.add(".".join([name, *init.parent.relative_to(repo_root / folder).parts]))
    assert sorted(setup["packages"]) == sorted(found)


def test_makefile_defines_each_variable_once_and_uses_it(repo_root):
    text = (repo_root / "Makefile").read_text()
    defined = [line.split()[0] for line in text.splitlines() if " ?= " in line or " := " in line]
    assert len(defined) == len(set(defined)), defined
    for name in defined:
        assert f"$({name})" in text, f"{name} is defined and never used"
    assert "PYTEST_ARGS ?=" in text


def test_docs_the_code_cites_exist(repo_root):
    cited = set()
    for path in (repo_root / "evalsuite").rglob("*.py"):
        cited |= {m for m in ("FINDINGS.md", "TASKS.md", "MODELS.md") if m in path.read_text()}
    assert cited, "the CLI and docstrings cite the findings"
    for name in cited:
        assert (repo_root / "docs" / name).exists(), name
        for path in (repo_root / "evalsuite").rglob("*.py"):
            for line in path.read_text().splitlines():
                if name in line:
                    assert f"docs/{name}" in line, f"{path}: {line.strip()}"


# ---- data loss ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["report", "--store", "{s}", "-o", "{s}"],
    ["report", "--store", "{s}", "-o", "{s}-wal"],
    ["report", "--store", "{s}", "-o", "{d}/sub/../store.db"],
    ["reproduce", "--verdicts-only", "--store", "{s}", "-o", "{s}"],
    ["analyze", "capacity", "--csv", "{s}", "--save", "--store", "{s}", "--pairs", "2"],
    ["sample", "--task", "recall", "--out", "{d}/other.db", "--overwrite"],
], ids=["report-o-store", "report-o-wal", "report-o-dotdot", "reproduce-o-store", "capacity-csv-store",
        "sample-over-another-sqlite"])
def test_no_output_may_replace_a_store(tmp_path, args):
    store = synthetic_store(tmp_path / "store.db")
    other = synthetic_store(tmp_path / "other.db")
    before = md5(store.path), md5(other.path)
    # sample --out must end in .jsonl/.npz: rename the other store to match
    if "sample" in args:
        os.replace(other.path, tmp_path / "other.jsonl")
        args = [a.replace("other.db", "other.jsonl") for a in args]
        before = md5(store.path), md5(tmp_path / "other.jsonl")
    res = invoke(*[a.format(s=store.path, d=tmp_path) for a in args])
    assert_refused(res)
    assert "results store" in res.output or "SQLite database" in res.output
    after = md5(store.path), md5(tmp_path / ("other.jsonl" if "sample" in args else "other.db"))
    assert after == before
    assert len(store.runs()) == 2


def test_metrics_land_before_weights_and_a_weights_failure_is_a_warning(tmp_path):
    store_path = tmp_path / "store.db"
    (tmp_path / "weights").write_text("a file where the weights folder should be")
    res = invoke(*RUN, "--store", store_path, "--out", tmp_path / "reports")
    assert res.exit_code == 0, res.output
    assert "warning" in res.output and "weights not saved" in res.output
    (row,) = Store(store_path).runs()
    assert row.status == "done" and "accuracy" in row.metrics
    assert any("weights not saved" in w for w in row.warnings)
    again = invoke(*RUN, "--store", store_path, "--out", tmp_path / "reports")
    assert again.exit_code == 0 and "cached" in again.output  # the rerun finds it, instead of failing again
    html = (tmp_path / "reports" / f"{row.run_id}.html").read_text()
    assert "Warning: weights not saved" in html


def test_concurrent_weight_saves_for_one_run_never_collide(tmp_path):
    store = Store(tmp_path / "store.db")
    state = {"w": torch.arange(1000.0)}
    errors = []

    def save():
        for _ in range(50):
            try:
                store.save_weights("r1", state)
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert torch.equal(store.load_weights("r1")["w"], state["w"])
    assert [p.name for p in (tmp_path / "weights").iterdir()] == ["r1.pt"]  # no temp file left behind


def test_planted_symlinks_are_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for name in ("x.jsonl.tmp.jsonl", "y.html.tmp", ".x.jsonl.tmp"):  # the old fixed temp names, and a guess
        (tmp_path / name).symlink_to(victim)
    synthetic_store(tmp_path / "store.db")
    assert invoke("sample", "--task", "recall", "--out", tmp_path / "x.jsonl").exit_code == 0
    assert invoke("report", "--store", tmp_path / "store.db", "-o", tmp_path / "y.html").exit_code == 0
    link = tmp_path / "z.jsonl"
    link.symlink_to(victim)  # the target itself is a link: refused, never followed, never replaced
    assert_refused(invoke("sample", "--task", "recall", "--out", link, "--overwrite"), "--out", "symbolic link")
    assert victim.read_text() == "precious" and link.is_symlink()


def test_sample_out_refuses_an_existing_file_without_overwrite(tmp_path):
    out = tmp_path / "x.jsonl"
    out.write_text("mine")
    assert_refused(invoke("sample", "--task", "recall", "--out", out), "--out", "exists", "--overwrite")
    assert out.read_text() == "mine"
    assert invoke("sample", "--task", "recall", "--out", out, "--overwrite").exit_code == 0
    assert len(out.read_text().splitlines()) == 3


def test_atomic_write_leaves_the_target_when_writing_fails(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")

    def explode(f):
        f.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        files.atomic_write(target, explode)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_sigterm_records_the_run_as_interrupted(tmp_path):
    store_path = tmp_path / "store.db"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "evalsuite.cli", *RUN, "--store", str(store_path),
                             "--set", "train.num_train=4096", "--set", "train.epochs=200",
                             "--set", "train.target_accuracy=1.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until the run is recorded as running
        try:
            if store_path.exists() and Store(store_path).runs():
                break
        except (sqlite3.OperationalError, StoreError):  # the file made (perhaps still empty), its tables not yet
            pass
        time.sleep(0.2)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 130, out
    assert "interrupted by SIGTERM" in out and "Traceback" not in out
    (row,) = Store(store_path).runs()
    assert row.status == "interrupted" and "SIGTERM" in row.error


def test_ctrl_c_records_the_run_as_interrupted(tmp_path, monkeypatch):
    from evalsuite import pipeline

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "train_one", stop)
    store = Store(tmp_path / "store.db")
    with pytest.raises(KeyboardInterrupt):
        pipeline.run_one(resolve("recall", "linear", preset="tiny"), device="cpu", store=store)
    assert [r.status for r in store.runs()] == ["interrupted"]
    res = invoke(*RUN, "--store", store.path)
    assert res.exit_code == 130 and "interrupted by Ctrl-C" in res.output


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_running_row_whose_process_is_gone_reads_stale_and_is_rerun(tmp_path):
    store = synthetic_store(tmp_path / "store.db", n=0)
    config = resolve("recall", "linear", preset="tiny")
    run_id = config.run_id
    store.start(run_id, config.as_dict(), {})
    with sqlite3.connect(store.path) as conn:  # as if a SIGKILLed process had started it
        conn.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (_dead_pid(), run_id))
    assert [r.status for r in store.runs()] == ["stale"]
    spec = tmp_path / "s.yaml"
    spec.write_text("base: {task: recall, model: linear, preset: tiny}\n")
    res = invoke("sweep", spec, "--store", store.path, "--status")
    assert "1 interrupted" in res.output and "its process is gone" in res.output
    html = tmp_path / "r.html"
    assert invoke("report", "--store", store.path, "-o", html).exit_code == 0
    assert "status-stale" in html.read_text()
    store.start(run_id, config.as_dict(), {})  # a live process (this one) runs it: running, not stale
    assert [r.status for r in store.runs()] == ["running"]


# ---- wrong results, silently --------------------------------------------------------------------

MAP = '''
import torch
from evalsuite.models.feature_maps import FeatureMap

class MyMap(FeatureMap):
    def forward(self, x):
        return torch.nn.functional.elu(x) + {offset}
'''


def test_an_edited_plugin_file_is_a_new_run(tmp_path, monkeypatch):
    plugin = tmp_path / "maps.py"
    plugin.write_text(MAP.format(offset=1))
    monkeypatch.chdir(tmp_path)
    first = resolve("recall", "linear", preset="tiny", feature_map="maps.py:MyMap")
    assert first.model.base.feature_map == f"{plugin.resolve()}:MyMap"  # absolute: analysable from anywhere
    assert first.plugins == {str(plugin.resolve()): hashlib.sha256(plugin.read_bytes()).hexdigest()}
    plugin.write_text(MAP.format(offset=2))
    second = resolve("recall", "linear", preset="tiny", feature_map="maps.py:MyMap")
    assert first.run_id != second.run_id
    from evalsuite.registry import resolve_attr

    assert resolve_attr("maps.py:MyMap")(4)(torch.zeros(1)).item() == 2.0  # the new contents, not a stale import
    assert "plugins" not in resolve("recall", "linear", preset="tiny").as_dict()  # built-in maps: ids unchanged


def test_a_plugin_is_its_contents_not_its_path(tmp_path, monkeypatch):
    """The same file in two folders is one run (one id, one setting, one report group); an edited
    file is another, with a label of its own; the label is the class and a short content hash, not
    a path (issue 63)."""
    from evalsuite.labels import model_label
    from evalsuite.protocol import setting_key
    from evalsuite.protocol import config_key

    a, b = tmp_path / "a", tmp_path / "deep" / "er" / "b"
    for d in (a, b):
        d.mkdir(parents=True)
        (d / "maps.py").write_text(MAP.format(offset=1))
    one = resolve("recall", "linear", preset="tiny", feature_map=f"{a / 'maps.py'}:MyMap")
    two = resolve("recall", "linear", preset="tiny", feature_map=f"{b / 'maps.py'}:MyMap")
    assert one.as_dict() != two.as_dict()  # each keeps its own path, to load it from
    assert one.run_id == two.run_id and setting_key(one.as_dict()) == setting_key(two.as_dict())
    assert config_key(one.as_dict()) == config_key(two.as_dict())
    digest = hashlib.sha256((a / "maps.py").read_bytes()).hexdigest()
    assert model_label(one.as_dict()) == model_label(two.as_dict()) == f"linear/MyMap@{digest[:7]}"
    (b / "maps.py").write_text(MAP.format(offset=2))
    edited = resolve("recall", "linear", preset="tiny", feature_map=f"{b / 'maps.py'}:MyMap")
    assert edited.run_id != one.run_id and config_key(edited.as_dict()) != config_key(one.as_dict())
    assert model_label(edited.as_dict()) != model_label(one.as_dict())
    assert model_label(edited.as_dict()).startswith("linear/MyMap@") and len(model_label(edited.as_dict())) < 24


def test_a_plugin_run_stored_under_its_path_id_still_imports(tmp_path):
    """Runs stored before plug-ins were identified by content keep their ids (the path was hashed
    too): a report that embeds one still imports it, checked against that id; a new run of the same
    plug-in gets its content id and trains afresh."""
    from evalsuite.config import path_run_id, run_id
    from evalsuite.imports import runs as check_runs

    (tmp_path / "maps.py").write_text(MAP.format(offset=1))
    config = resolve("recall", "linear", preset="tiny", feature_map=f"{tmp_path / 'maps.py'}:MyMap").as_dict()
    old, new = path_run_id(config), run_id(config)
    assert old != new
    item = {"run_id": old, "config": config, "status": "done", "metrics": {"accuracy": 0.5}}
    assert [r.run_id for r in check_runs([item], "--verdicts-from", "r.html")] == [old]
    with pytest.raises(Exception, match="not its configuration's hash"):
        check_runs([{**item, "run_id": "0" * 16}], "--verdicts-from", "r.html")


def test_analyze_a_run_whose_plugin_path_was_relative_from_another_folder(tmp_path, monkeypatch):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir(), elsewhere.mkdir()
    (work / "maps.py").write_text(MAP.format(offset=1))
    monkeypatch.chdir(work)
    result = evalsuite.run("recall", "linear", preset="tiny", feature_map="maps.py:MyMap", store=tmp_path / "s.db")
    assert result.ok
    monkeypatch.chdir(elsewhere)
    res = invoke("analyze", "sharpness", "--run", result.run_id[:8], "--store", tmp_path / "s.db", "--examples", 8)
    assert res.exit_code == 0, res.output


def _listops():
    from evalsuite import tasks

    return tasks.get("listops", max_depth=3, max_args=3, min_length=4, max_length=24)


def test_listops_cache_is_verified_and_regenerated(tmp_path):
    task = _listops()
    fresh = task.generate(32, 0, cache_dir=False)
    task.generate(32, 0, cache_dir=tmp_path)
    (path,) = (tmp_path / "listops").glob("*.npz")
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["targets"] = np.where(arrays["targets"] >= 0, 1, arrays["targets"])  # every answer "0"
    np.savez_compressed(path, **arrays)  # the digest is the old one
    for content in (None, b"", b"not an npz"):
        if content is not None:
            path.write_bytes(content)
        with pytest.warns(UserWarning, match="corrupt or was modified"):
            again = task.generate(32, 0, cache_dir=tmp_path)
        assert torch.equal(again.targets, fresh.targets) and torch.equal(again.inputs, fresh.inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(task.generate(32, 0, cache_dir=tmp_path).targets, fresh.targets)  # now clean


def test_listops_cache_lives_beside_the_store_and_sample_writes_none(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALSUITE_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert invoke("sample", "--task", "listops", "--preset", "tiny", "-n", "2").exit_code == 0
    assert list(tmp_path.iterdir()) == []
    store = Store(tmp_path / "runs" / "s.db")
    assert store.cache_dir == tmp_path / "runs" / "cache"
    monkeypatch.setenv("EVALSUITE_CACHE", str(tmp_path / "c"))
    assert store.cache_dir == tmp_path / "c"


@pytest.mark.parametrize("override, message", [
    ("task.num_kv_pairs=true", "task.num_kv_pairs: Value error, expected an integer, not a boolean"),
    ("train.lr=true", "train.lr: Value error, expected a number, not a boolean"),
    ("train.batch_size=1000000000000", "train.batch_size: 1000000000000 is more than the 256 training examples"),
    ("train.lr=nan", "train.lr: Input should be a finite number"),
    ("train.epochs=Infinity", "train.epochs: Input should be a finite number"),
    ("train.weight_decay=Infinity", "train.weight_decay: Input should be a finite number"),
    ("train.epochs=1e9", "train.epochs: 1e+09 epochs"),
    ("task.seq_len=100000000", "GiB is available"),
    ("model.d_model=1000000", "model.d_model: Input should be less than or equal to 16384"),
    ("model.d_model=16384", "GiB for the model"),
    ("model.n_layers=100000", "model.n_layers: Input should be less than or equal to 256"),
    ("train.epochs=1e-300", "less than one"),
    ("train.num_train=1000000000000", "GiB for 1,000,000,000,128 examples of length 32"),
    ('task.segments=[{"num_kv_pairs": 4}', "is not valid JSON"),
], ids=lambda v: v.split("=")[0] if "=" in v else None)
def test_bad_values_are_refused_before_anything_runs(tmp_path, override, message):
    res = invoke(*RUN, "--set", override, "--store", tmp_path / "s.db")
    assert_refused(res, message)
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "results").exists()


def test_segment_shares_and_counts_are_checked():
    for share in (float("nan"), float("inf"), True, 0):
        with pytest.raises(UserError, match=r"task.segments\[0\].share"):
            resolve("recall", "linear", preset="tiny", overrides={"task.segments": [{"share": share}]})
    with pytest.raises(UserError, match="at most 64 segments"):
        resolve("recall", "linear", preset="tiny", overrides={"task.segments": [{}] * 65})
    with pytest.raises(UserError, match="at most 64 segments"):
        resolve("recall", "linear", preset="tiny",
                    overrides={"task.segments": [{}] * 40, "task.eval_segments": [{}] * 25})


def test_memory_check_can_be_overridden(monkeypatch):
    from evalsuite import resources

    monkeypatch.setattr(resources, "available_memory", lambda: 1)
    with pytest.raises(UserError, match="EVALSUITE_MEMORY_CHECK=off"):
        resolve("recall", "linear", preset="tiny")
    monkeypatch.setenv("EVALSUITE_MEMORY_CHECK", "off")
    resolve("recall", "linear", preset="tiny")


@pytest.mark.parametrize("args, message", [
    (["sample", "--task", "recall", "-n", str(10**12)], "-n: needs about"),
    (["bench", "kernels", "--lengths", "100000000"], "--lengths: needs about"),
    (["bench", "decode", "--contexts", "100000000000"], "--contexts: needs about"),
    (["analyze", "capacity", "--d-key", str(10**8)], "--d-key"),
    (["analyze", "capacity", "--pairs", "2,1000000"], "--pairs: at most"),
    (["run", "--task", "recall", "--model", "linear", "--seed", str(2**63 + 1)], "--seed"),
    (["sample", "--task", "recall", "--set", "model.d_model=3"], "takes no model settings, only task."),
])
def test_sizes_that_cannot_fit_are_refused(tmp_path, args, message):
    assert_refused(invoke(*args), message)
    assert list(tmp_path.iterdir()) == []


def _spec(tmp_path, text: str | bytes, name="s.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("text, message", [
    (BOMB, "once YAML aliases are expanded"),
    ("base: {task: recall, model: linear, preset: tiny}\ngrid:\n  train.lr: [" + ", ".join(["0.001"] * 1000)
     + "]\n  train.warmup_frac: [" + ", ".join(["0.01"] * 1000) + "]\n", "1,000,000 runs"),
    ("base: {task: recall, model: linear}\nseeds: [true]\n", "seeds.0"),
    ("base: {task: recall, model: linear}\nseeds: [99999999999]\n", "seeds must be"),
    (b"base: {task: recall, model: linear}\nname: caf\xe9\n", "not UTF-8"),
    ("# padding\n" * 120_000, "bytes; a spec may have at most"),
], ids=["alias-bomb", "million-point-grid", "boolean-seed", "huge-seed", "latin-1", "huge-file"])
def test_sweep_specs_are_bounded_before_expansion(tmp_path, text, message):
    start = time.perf_counter()
    res = invoke("sweep", _spec(tmp_path, text), "--status", "--store", tmp_path / "st.db")
    assert_refused(res, message)
    assert len(res.output) < 2000 and time.perf_counter() - start < 30


# ---- one error path -----------------------------------------------------------------------------

def test_stores_that_are_not_evalsuite_stores_are_refused_untouched(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(4096))
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    before = md5(other)
    for store in (junk, other):
        for args in (["report", "--store", store, "-o", tmp_path / "r.html"], [*RUN, "--store", store],
                     ["reproduce", "--verdicts-only", "--store", store]):
            res = invoke(*args)
            assert_refused(res, str(store.name))
    assert md5(other) == before and sorted(p.name for p in tmp_path.iterdir()) == ["junk.db", "other.db"]


def test_store_paths_that_cannot_be_stores(tmp_path):
    assert_refused(invoke(*RUN, "--store", ""), "--store: empty path")
    assert_refused(invoke(*RUN, env={"EVALSUITE_STORE": str(tmp_path)}), "$EVALSUITE_STORE:", "is a folder")
    assert_refused(invoke("report", "--store", tmp_path / "none.db"), "no results store")


def test_reading_never_modifies_the_store(tmp_path):
    store = synthetic_store(tmp_path / "store.db")
    with sqlite3.connect(store.path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = md5(store.path)
    assert invoke("report", "--store", store.path, "-o", tmp_path / "r.html").exit_code == 0
    assert invoke("reproduce", "--verdicts-only", "--store", store.path, "-o", tmp_path / "v.html").exit_code == 0
    assert md5(store.path) == before


def test_schema_is_marked_checked_and_migrated(tmp_path):
    old = tmp_path / "v1.db"
    with sqlite3.connect(old) as conn:  # a store written before the schema was marked (no pid, host, warnings)
        conn.executescript("""
            CREATE TABLE runs (run_id TEXT PRIMARY KEY, task TEXT NOT NULL, model TEXT NOT NULL, feature_map TEXT,
              seed INTEGER NOT NULL, status TEXT NOT NULL, config TEXT NOT NULL, metrics TEXT NOT NULL DEFAULT '{}',
              error TEXT, env TEXT NOT NULL DEFAULT '{}', started_at REAL NOT NULL, finished_at REAL);
            CREATE TABLE steps (run_id TEXT, step INTEGER, name TEXT, value REAL, PRIMARY KEY (run_id, step, name));
            INSERT INTO runs VALUES ('r0', 'recall', 'linear', 'elu1', 0, 'done', '{"seed": 0}', '{}', NULL, '{}', 1, 2);
        """)
    store = Store(old)
    assert [r.status for r in store.runs()] == ["done"]  # read as it is
    synthetic_store(old, n=1)  # the first write migrates
    with sqlite3.connect(old) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert len(store.runs()) == 2
    with sqlite3.connect(old) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer evalsuite"):
        Store(old)


BROKEN = {"syntax.py": "def oops(:\n", "imports.py": "import no_such_module_here\n"}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_plugin_file_is_one_line(tmp_path, name):
    (tmp_path / name).write_text(BROKEN[name])
    res = invoke(*RUN, "--feature-map", f"{tmp_path / name}:Map", "--store", tmp_path / "s.db")
    assert_refused(res, name, "failed to import", "SyntaxError" if "syntax" in name else "ModuleNotFoundError")


def test_an_unwritable_out_is_refused_up_front(tmp_path):
    (tmp_path / "blocked").write_text("a file where a folder should be")
    res = invoke(*RUN, "--store", tmp_path / "s.db", "--out", tmp_path / "blocked" / "reports")
    assert_refused(res, "--out")
    assert not (tmp_path / "s.db").exists()
    res = invoke("sample", "--task", "recall", "--out", tmp_path / "blocked" / "x.jsonl")
    assert_refused(res, "--out")


def test_analyze_on_a_failed_run_says_it_failed(tmp_path):
    store = Store(tmp_path / "s.db")
    config = resolve("recall", "linear", preset="tiny")
    store.finish(RunRecord(run_id=config.run_id, config=config.as_dict(), status="failed", error="RuntimeError: boom"))
    res = invoke("analyze", "sharpness", "--run", config.run_id[:6], "--store", store.path)
    assert_refused(res, "is failed (RuntimeError: boom)", "only finished runs")
    assert "--force" not in res.output


def test_debug_shows_the_traceback(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"x" * 100)
    res = CliRunner().invoke(main, ["--debug", "report", "--store", str(junk)])
    assert isinstance(res.exception, StoreError)  # raised, not turned into a message
    assert_refused(invoke("report", "--store", junk), "not an evalsuite store")


def test_os_errors_become_one_line(tmp_path, monkeypatch):
    from evalsuite.reports import builder

    synthetic_store(tmp_path / "s.db")

    def fail(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "r.html"))

    monkeypatch.setattr(builder, "write", fail)
    res = invoke("report", "--store", tmp_path / "s.db", "-o", tmp_path / "r.html")
    assert_refused(res, "Permission denied", "r.html")


# ---- threads ------------------------------------------------------------------------------------

def test_threads_are_divided_without_overriding_an_explicit_setting(monkeypatch):
    from evalsuite.executors import get_executor
    from evalsuite.executors.local import cpu_count

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert get_executor("local", workers=2, device="cpu").threads == max(1, cpu_count() // 2)
    assert get_executor("local", workers=2, device="cpu", threads=3).threads == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert get_executor("local", workers=2, device="cpu").threads is None  # the workers inherit it


def test_run_threads_option(tmp_path):
    before = torch.get_num_threads()
    try:
        res = invoke(*RUN, "--threads", "1", "--store", tmp_path / "s.db", "--no-report")
        assert res.exit_code == 0 and "1 thread;" in res.output
        (row,) = Store(tmp_path / "s.db").runs()
        assert row.env["threads"] == 1
    finally:
        torch.set_num_threads(before)
    assert_refused(invoke(*RUN, "--threads", "0"), "--threads")


def test_sweep_threads_reach_the_workers(tmp_path):
    spec = _spec(tmp_path, "base: {task: recall, model: softmax, preset: tiny}\n")
    res = invoke("sweep", spec, "--store", tmp_path / "s.db", "--threads", "1", "--no-report", "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert [r.env["threads"] for r in Store(tmp_path / "s.db").runs()] == [1]


def test_sigterm_stops_a_sweep_and_its_workers(tmp_path):
    spec = _spec(tmp_path, "base: {task: recall, model: linear, preset: tiny}\n"
                           "set: {train.num_train: 4096, train.epochs: 200, train.target_accuracy: 1.0}\n"
                           "seeds: [0, 1, 2]\n")
    store_path = tmp_path / "s.db"
    proc = subprocess.Popen([sys.executable, "-m", "evalsuite.cli", "sweep", str(spec), "--store", str(store_path),
                             "--workers", "2", "--no-report", "--device", "cpu"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "OMP_NUM_THREADS": "1"})

    def workers():
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        return len(out)

    deadline = time.time() + 120
    while time.time() < deadline and workers() < 2:
        time.sleep(0.2)
    time.sleep(3)  # the workers are training
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 130, out

    def group_alive():
        try:
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    deadline = time.time() + 30  # workers are terminated, not waited for (their runs would take minutes)
    while time.time() < deadline and group_alive():
        time.sleep(0.2)
    assert not group_alive(), subprocess.run(["ps", "-o", "pid,stat,cmd", "-g", str(proc.pid)], capture_output=True,
                                             text=True).stdout
    assert sorted(r.status for r in Store(store_path).runs()) == ["interrupted"] * 3


def test_a_store_another_process_is_creating_is_not_foreign(tmp_path):
    """Two sweeps start on one new store: one sees the other's tables appear one by one."""
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY)")  # the first table of evalsuite's schema, alone
    Store(path)  # accepted: every table is one of evalsuite's
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(StoreError, match="another program"):
        Store(path)
