"""Reliability round 4 (issue 59): each case the hostile-input round found, as a test that failed on
the code before it. Silent wrong results; stuck, orphaned or doubled work; unbounded inputs;
tracebacks instead of one ``Error:`` line."""
import base64
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalsuite import reproduce as rep
from evalsuite.cli import main
from evalsuite.records import RunRecord
from evalsuite.reports import builder
from evalsuite.store import HEARTBEAT_TTL, HOST, Store
from tests.reproduce.synthetic import CASES, NO_PROBES, as_stored

TINY = ["--preset", "tiny", "--device", "cpu"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(res, *needles):
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert any(ln.startswith("Error:") for ln in lines) and "Traceback" not in res.output, res.output
    for needle in needles:
        assert needle in res.output, res.output


# ---- 1. a plug-in's global state never reaches another configuration ---------------------------
STATEFUL = '''
import torch
from evalsuite.models.feature_maps import FeatureMap

torch.set_default_dtype(torch.float64)  # global state, changed at import
torch.set_grad_enabled(False)


class Leaky(FeatureMap):
    def forward(self, x):
        return torch.relu(x)
'''


@pytest.mark.slow
def test_a_state_changing_plugin_beside_built_in_maps_changes_none_of_their_results(tmp_path):
    """A sweep on one worker: the plug-in's unit first, then built-in relu and squared relu. Each
    built-in run equals the same run trained alone, and records that no plug-in ran in its worker
    before it (before the fix they ran in the plug-in's worker and were stored at other figures,
    or failed under the grad switch)."""
    (tmp_path / "leaky.py").write_text(STATEFUL)
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent(f"""
        base: {{task: recall, model: linear, preset: tiny}}
        points:
          - {{model.feature_map: "{tmp_path / 'leaky.py'}:Leaky"}}
          - {{model.feature_map: relu}}
          - {{model.feature_map: squared_relu}}
        base_point: false
    """))
    def cli(*args):  # a process of its own: the plug-in's import changes the importing process too
        return subprocess.run([sys.executable, "-m", "evalsuite.cli", *map(str, args)], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    res = cli("sweep", spec, "--workers", "1", "--device", "cpu", "--store", tmp_path / "a.db")
    assert res.returncode in (0, 1), res.stdout + res.stderr
    swept = {r.config["model"]["feature_map"]: r for r in Store(tmp_path / "a.db").runs()}
    for name in ("relu", "squared_relu"):
        r = swept[name]
        assert r.ok and r.env["worker_ran_before"] == [], (name, r.env.get("worker_ran_before"))
        alone = cli("run", "--task", "recall", "--model", "linear", "--feature-map", name, *TINY,
                    "--store", tmp_path / f"{name}.db", "--no-report")
        assert alone.returncode == 0, alone.stdout + alone.stderr
        clean = Store(tmp_path / f"{name}.db").runs()[0]
        assert clean.run_id == r.run_id and clean.metrics["accuracy"] == r.metrics["accuracy"], name


def test_runs_stored_beside_a_plugin_before_isolation_are_marked_for_rerun(tmp_path):
    """A store written before workers were isolated: the built-in runs that started after a plug-in
    run of their sweep get a warning (rerun them); the plug-in's own runs and runs that record
    their worker do not."""
    import sqlite3

    from evalsuite.store_file import PLUGIN_NEIGHBOUR

    store = Store(tmp_path / "s.db")
    plug = {"task": {"name": "recall"}, "model": {"name": "linear", "feature_map": "/x/leaky.py:Leaky"}, "seed": 0,
            "plugins": {"/x/leaky.py": "ab"}}
    built = {"task": {"name": "recall"}, "model": {"name": "linear", "feature_map": "relu"}, "seed": 0}
    isolated = {**built, "seed": 1}
    for i, (rid, config, env) in enumerate([("p", plug, {}), ("b", built, {}), ("i", isolated, {"worker_pid": 7})]):
        store.start(rid, config, env)
        store.finish(RunRecord(run_id=rid, config=config, status="done", metrics={"accuracy": 0.5}, env=env,
                               started_at=100.0 + i))
    store.add_sweep("sw", "mixed", {}, ["p", "b", "i"])
    with sqlite3.connect(tmp_path / "s.db") as conn:  # as a store of schema 3 was
        conn.execute("PRAGMA user_version = 3")
    store.add_sweep("sw2", "touch", {}, [])  # the next write migrates it
    warned = {r.run_id: r.warnings for r in store.runs()}
    assert warned["b"] == [PLUGIN_NEIGHBOUR.format(plugin="p")] and warned["p"] == [] and warned["i"] == []


# ---- 2. an interrupted rebuild leaves nothing, and says so ----------------------------------------
def _report(tmp_path, name="delta-vs-linear", compact=True, **write):
    runs = as_stored(CASES[name][0], name)
    verdict = rep.get(name).judge(runs, NO_PROBES, "cpu")
    return builder.write(runs, tmp_path / "r.html", verdicts=[verdict], compact=compact, **write), runs


def test_an_interrupted_rebuild_leaves_no_store_and_the_same_command_rebuilds(tmp_path, monkeypatch):
    from evalsuite.errors import Interrupted
    from evalsuite.reproduce import runner

    report, runs = _report(tmp_path)
    store = tmp_path / "s" / "evalsuite.db"
    real = runner.import_runs

    def stopped(store_, runs_, probes):
        real(store_, runs_[:5], probes)
        raise Interrupted()
    monkeypatch.setattr(runner, "import_runs", stopped)
    res = invoke("reproduce", "delta-vs-linear", "--verdicts-from", report, "--rebuild-store", store)
    assert res.exit_code == 130 and "no store was written" in res.output, res.output
    assert not store.exists() and list(store.parent.iterdir()) == []
    monkeypatch.setattr(runner, "import_runs", real)
    res = invoke("reproduce", "delta-vs-linear", "--verdicts-from", report, "--rebuild-store", store)
    assert res.exit_code == 0 and len(Store(store).runs()) == len(runs), res.output


# ---- 3. imported runs are checked as the suite checks its own ----------------------------------
def _tamper(path: Path, change) -> Path:
    """Rewrite a compact report's embedded data with ``change(data)``."""
    text = path.read_text()
    m = re.search(r'(<script type="application/gzip" id="evalsuite-data" data-encoding="base64">)(.*?)(</script>)', text, re.S)
    data = json.loads(gzip.decompress(base64.b64decode(m.group(2))))
    change(data)
    body = base64.b64encode(gzip.compress(json.dumps(data).encode())).decode()
    out = path.with_name("tampered.html")
    out.write_text(text[:m.start(2)] + body + text[m.end(2):])
    return out


def _set(index, path, value):
    def change(data):
        node = data["runs"][index]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


@pytest.mark.parametrize("change, needle", [
    (_set(0, ["metrics", "accuracy"], -5.0), "accuracy is -5, outside [0, 1]"),
    (_set(0, ["metrics", "accuracy"], 7.5), "accuracy is 7.5, outside [0, 1]"),
    (_set(0, ["metrics", "loss"], float("nan")), "loss is nan, not a finite number"),
    (_set(0, ["metrics", "val_accuracy"], float("inf")), "val_accuracy is inf"),
    (_set(0, ["run_id"], "../../x"), "its id is not its configuration's hash"),
    (_set(0, ["run_id"], ""), "its id is not its configuration's hash"),
    (lambda d: next(r for r in d["runs"] if r["config"]["model"]["name"] == "softmax")["config"]["model"]
     .update(feature_map="elu1"), "its configuration does not resolve"),
    (_set(0, ["config", "model", "name"], "nosuchmixer"), "its configuration does not resolve"),
    (_set(0, ["status"], "exploded"), "status"),
    (_set(0, ["extra"], 1), "Extra inputs are not permitted"),
    (lambda d: d["runs"][0].pop("config"), "config: Field required"),
    (lambda d: d["runs"].append({**d["runs"][0], "metrics": {**d["runs"][0]["metrics"], "accuracy": 0.123}}),
     "share the id"),
    (lambda d: d.update(runs=None), "its runs are NoneType"),
    (lambda d: d.update(runs={"a": 1}), "its runs are dict"),
    (lambda d: d.update(schema=99), "written by a newer evalsuite"),
    (lambda d: d["members"].update({"delta-vs-linear": ["nope"]}), "which the report does not hold"),
], ids=["negative", "above-one", "nan", "inf", "path-id", "empty-id", "softmax-with-a-map", "unknown-model", "status", "extra-field",
        "missing-field", "duplicate", "runs-null", "runs-dict", "newer-schema", "stray-member"])
def test_an_imported_run_is_checked_as_the_suites_own(tmp_path, change, needle):
    report, _ = _report(tmp_path, members={"delta-vs-linear": []})
    res = invoke("reproduce", "delta-vs-linear", "--verdicts-from", _tamper(report, change),
                 "--rebuild-store", tmp_path / "s.db")
    refused(res, needle)
    assert not (tmp_path / "s.db").exists()


def test_every_report_says_its_schema():
    from evalsuite.imports import REPORT_SCHEMA

    assert builder.embedded_json(builder.render([], compact=True))["schema"] == REPORT_SCHEMA


# ---- 4. duplicate keys, a plug-in that exits, literal id prefixes -------------------------------
def test_a_spec_with_a_repeated_key_is_refused_naming_it(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("base: {task: recall, model: linear, preset: tiny}\ngrid:\n  train.lr: [0.001, 0.003, 0.01]\n"
                    "grid:\n  train.lr: [0.001]\n")
    refused(invoke("sweep", spec, "--store", tmp_path / "x.db"), "the key 'grid' appears twice")
    assert not (tmp_path / "x.db").exists()


def test_a_plugin_that_exits_at_import_is_an_import_error(tmp_path):
    (tmp_path / "quits.py").write_text("import sys\nsys.exit(0)\n")
    res = invoke("run", "--task", "recall", "--model", "linear", "--feature-map", f"{tmp_path / 'quits.py'}:X",
                 *TINY, "--store", tmp_path / "x.db")
    refused(res, "failed to import: SystemExit")
    assert not (tmp_path / "x.db").exists()


def test_id_prefixes_are_text_not_patterns(tmp_path):
    store = Store(tmp_path / "s.db")
    config = {"task": {"name": "recall"}, "model": {"name": "linear"}, "seed": 0}
    store.start("abc123", config, {})
    store.finish(RunRecord(run_id="abc123", config=config, status="done", metrics={"accuracy": 0.5}))
    refused(invoke("show", "%", "--store", tmp_path / "s.db"), "matches no run")
    refused(invoke("show", "_bc", "--store", tmp_path / "s.db"), "matches no run")
    assert invoke("show", "abc", "--store", tmp_path / "s.db").exit_code == 0


# ---- 5. workers die with their driver ------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")
def test_a_killed_sweep_driver_takes_its_workers_with_it(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("base: {task: recall, model: linear, preset: tiny}\nset: {train.epochs: 400}\n")
    driver = subprocess.Popen([sys.executable, "-m", "evalsuite.cli", "sweep", str(spec), "--workers", "1",
                               "--device", "cpu", "--store", str(tmp_path / "s.db")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    workers, deadline = [], time.monotonic() + 120
    while time.monotonic() < deadline and not workers:
        time.sleep(0.5)
        workers = [c for c in _children(driver.pid) if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")
                   and "resource_tracker" not in Path(f"/proc/{c}/cmdline").read_text(errors="replace")]
    assert workers, "no worker started"
    time.sleep(3)  # the worker is training
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.5)
    assert not any(_alive(w) for w in workers), "the worker outlived its driver"


# ---- 6. liveness survives pid reuse; --wait is bounded --------------------------------------------
def _claimed(tmp_path, pid: int, heartbeat: float) -> Store:
    import sqlite3

    store = Store(tmp_path / "s.db")
    config = {"task": {"name": "recall"}, "model": {"name": "linear"}, "seed": 0}
    store.start("r1", config, {})
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("UPDATE runs SET pid = ?, host = ?, heartbeat = ? WHERE run_id = 'r1'", (pid, HOST, heartbeat))
    return store


def test_a_claim_whose_heartbeat_stopped_is_stale_whatever_its_pid(tmp_path):
    """After a restart (or in a container, where every driver is pid 1) the dead claimer's pid may
    belong to a live process: the heartbeat decides."""
    store = _claimed(tmp_path, os.getppid(), time.time() - HEARTBEAT_TTL - 10)  # a live pid, an old heartbeat
    assert store.runs()[0].status.value == "stale"
    assert store.claim({"r1": store.runs()[0].config})["claimed"] == ["r1"]


def test_run_wait_is_bounded_and_says_what_it_waits_for(tmp_path):
    from evalsuite.resolve import resolve

    config = resolve("recall", "linear", preset="tiny")
    store = _claimed(tmp_path, os.getppid(), time.time())
    import sqlite3
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("UPDATE runs SET run_id = ?, config = ? WHERE run_id = 'r1'",
                     (config.run_id, json.dumps(config.as_dict())))
    res = invoke("run", "--task", "recall", "--model", "linear", *TINY, "--store", tmp_path / "s.db", "--wait",
                 "--wait-minutes", "0.01")
    refused(res, "gave up after 0.01 min", f"process {os.getppid()} on {socket.gethostname()}")
    assert "its claim refreshed" in res.output
    assert store.runs()[0].status.value == "running"  # left to its live holder


# ---- 7. every input bounded before work ------------------------------------------------------------
def test_a_huge_layer_count_is_refused_at_once(tmp_path):
    start = time.monotonic()
    refused(invoke("run", "--task", "recall", "--model", "linear", *TINY, "--set", "model.n_layers=100000",
                   "--store", tmp_path / "x.db"), "model.n_layers")
    assert time.monotonic() - start < 20 and not (tmp_path / "x.db").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_pipes_and_devices_are_refused_as_reports_and_stores(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for args, needle in ((["reproduce", "copy", "--verdicts-from", fifo], "not a regular file"),
                         (["reproduce", "copy", "--verdicts-from", "/dev/zero"], "not a regular file"),
                         (["runs", "--store", fifo], "not a regular file")):
        out = subprocess.run([sys.executable, "-m", "evalsuite.cli", *map(str, args)], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 2 and needle in out.stderr, (args, out.stderr)


def test_a_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    from evalsuite import imports

    monkeypatch.setattr(imports, "MAX_DATA_BYTES", 1 << 20)
    bomb = base64.b64encode(gzip.compress(b"[" + b" " * (4 << 20) + b"]")).decode()
    page = tmp_path / "bomb.html"
    page.write_text(f'<script type="application/gzip" id="evalsuite-data" data-encoding="base64">{bomb}</script>')
    refused(invoke("reproduce", "copy", "--verdicts-from", page), "expands past 1 MiB")


# ---- 8. one Error: line, never a traceback -------------------------------------------------------
def _page(tmp_path, body: str, name="p.html", kind="application/json", raw: bytes | None = None) -> Path:
    path = tmp_path / name
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(f'<html><script type="{kind}" id="evalsuite-data">{body}</script></html>')
    return path


@pytest.mark.parametrize("make, needle", [
    (lambda t: _page(t, "{not json"), "not valid JSON"),
    (lambda t: _page(t, "", raw=b"\xff\xfe<html>"), "not UTF-8"),
    (lambda t: _page(t, "", raw=b'<script type="application/json" id="evalsuite-data">{"runs": []}'), "never ends"),
    (lambda t: _page(t, '{"runs": null}'), "its runs are NoneType"),
    (lambda t: _page(t, "<p>hello</p>", name="other.html", kind="text/plain"), "not an evalsuite report"),
    (lambda t: _page(t, "", raw=b'<script type="application/gzip" id="evalsuite-data" data-encoding="base64">'
                     + base64.b64encode(gzip.compress(b'{"runs": []}' * 50)[:30]) + b"</script>"), "truncated"),
], ids=["json", "utf8", "no-end", "runs-null", "not-a-report", "truncated-gzip"])
def test_a_bad_report_is_one_error_line(tmp_path, make, needle):
    refused(invoke("reproduce", "copy", "--verdicts-from", make(tmp_path)), needle)


@pytest.mark.parametrize("suffix, text", [
    (".yaml", "base: " + "[" * 5000 + "]" * 5000 + "\n"),
    (".toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
], ids=["yaml", "toml"])
def test_a_spec_nested_thousands_deep_is_one_error_line(tmp_path, suffix, text):
    spec = tmp_path / f"s{suffix}"
    spec.write_text(text)
    refused(invoke("sweep", spec, "--store", tmp_path / "x.db"), "nested 5000 levels deep")


def test_a_set_value_nested_thousands_deep_is_one_error_line(tmp_path):
    refused(invoke("run", "--task", "recall", "--model", "linear", *TINY, "--set", "task.segments=" + "[" * 60000,
                   "--store", tmp_path / "x.db"), "nests 60000 levels")


# ---- cosmetic ------------------------------------------------------------------------------------
def test_an_empty_store_file_says_so_and_reading_a_damaged_store_leaves_nothing_beside_it(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    refused(invoke("runs", "--store", empty), "is an empty file (0 bytes)")
    damaged = tmp_path / "d.db"
    Store(damaged).add_sweep("s", "s", {}, [])
    data = bytearray(damaged.read_bytes())
    data[100:4096] = b"\x00" * (4096 - 100)  # the first page's schema, zeroed
    damaged.write_bytes(bytes(data))
    for leftover in ("d.db-wal", "d.db-shm"):
        (tmp_path / leftover).unlink(missing_ok=True)
    res = invoke("runs", "--store", damaged)
    assert res.exit_code == 2 and "Error:" in res.output, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.db", "empty.db"]


def test_too_few_epochs_for_one_step_are_refused(tmp_path):
    refused(invoke("run", "--task", "recall", "--model", "linear", *TINY, "--set", "train.epochs=1e-300",
                   "--store", tmp_path / "x.db"), "less than one")


def test_an_interruption_before_any_run_started_says_nothing_was_recorded(tmp_path, monkeypatch):
    from evalsuite import sweep as sweeps

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sweeps, "expand", interrupted)
    spec = tmp_path / "s.yaml"
    spec.write_text("base: {task: recall, model: linear, preset: tiny}\n")
    res = invoke("sweep", spec, "--store", tmp_path / "x.db")
    assert res.exit_code == 130 and "before any run started; nothing was recorded" in res.output, res.output


def _slow_worker(go):  # a worker whose start-up (torch's import, under load) outlasts its driver
    import time as _time

    from evalsuite.executors.base import die_with_parent

    deadline = _time.monotonic() + 60
    while not os.path.exists(go) and _time.monotonic() < deadline:
        _time.sleep(0.05)
    die_with_parent()
    _time.sleep(60)


DRIVER = """
import multiprocessing as mp, sys, time
sys.path.insert(0, {root!r})
from tests.core.test_reliability import _slow_worker
if __name__ == "__main__":
    worker = mp.get_context("spawn").Process(target=_slow_worker, args=({go!r},))
    worker.start()
    print(worker.pid, flush=True)
    time.sleep(120)
"""


@pytest.mark.slow
def test_a_worker_whose_driver_died_before_it_armed_still_ends(tmp_path):
    """The driver is killed while its worker is still starting (before ``die_with_parent`` runs):
    the worker, re-parented by then, still ends once it arms (it compares against the process that
    spawned it, not its parent at that moment)."""
    root = str(Path(__file__).resolve().parents[2])
    go = tmp_path / "go"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER.format(root=root, go=str(go))], stdout=subprocess.PIPE,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    pid = int(driver.stdout.readline())
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    time.sleep(1.0)
    assert _alive(pid), "the worker should outlive its driver until it arms"
    go.touch()  # now it arms, its driver long gone
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    alive = _alive(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the worker outlived its driver"
