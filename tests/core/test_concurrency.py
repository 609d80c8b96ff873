"""One store, many writers: claims are one transaction that skips runs a live process holds,
``interrupt`` touches only the caller's own claims, a claim from another host lives as long as its
heartbeat, and two sweep drivers on one store train every run exactly once (a run killed
mid-training once more), counted by a plug-in feature map that logs every model it is built into."""
import collections
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite import store as store_mod
from evalsuite.store import Store

PLUGIN = Path(__file__).parent / "plugins" / "counting_map.py"


def config(seed: int) -> dict:
    return {"task": {"name": "recall"}, "model": {"name": "linear", "feature_map": None}, "seed": seed}


def _set(path, run_id, **cols):
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in cols)} WHERE run_id = ?", (*cols.values(), run_id))
    conn.close()


def test_a_claim_skips_runs_held_by_live_processes_and_takes_dead_ones(tmp_path):
    store = Store(tmp_path / "s.db")
    ids = {f"r{i}": config(i) for i in range(5)}
    assert store.claim(ids)["claimed"] == list(ids)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _set(store.path, "r0", pid=os.getppid())                       # a live process on this host
    _set(store.path, "r1", pid=dead.pid)                            # a process that is gone
    _set(store.path, "r2", host="elsewhere", heartbeat=time.time())  # another host, refreshed just now
    _set(store.path, "r3", host="elsewhere", heartbeat=time.time() - store_mod.HEARTBEAT_TTL - 1)  # it stopped
    _set(store.path, "r4", status="done")
    again = store.claim(ids)
    assert again == {"claimed": ["r1", "r3"], "held": ["r0", "r2"], "done": ["r4"]}
    assert store.claim({"r4": config(4)}, redo_done=True)["claimed"] == ["r4"]
    assert [s["status"].value for s in store.statuses(["r0", "r2"])] == ["running", "running"]


def test_interrupt_touches_only_this_processes_claims(tmp_path):
    store = Store(tmp_path / "s.db")
    store.claim({"mine": config(0), "theirs": config(1)})
    _set(store.path, "theirs", pid=os.getppid())
    store.interrupt(["mine", "theirs"], "SIGTERM")
    assert {s["run_id"]: s["status"].value for s in store.statuses(["mine", "theirs"])} == \
        {"mine": "interrupted", "theirs": "running"}


def test_the_heartbeat_refreshes_this_processes_claims(tmp_path):
    store = Store(tmp_path / "s.db")
    store.claim({"a": config(0)})
    _set(store.path, "a", heartbeat=0.0)
    from evalsuite.heartbeat import Heartbeat

    with Heartbeat(store, ["a"], every=0.05):
        time.sleep(0.5)
    beat = sqlite3.connect(store.path).execute("SELECT heartbeat FROM runs WHERE run_id = 'a'").fetchone()[0]
    assert time.time() - beat < 5


def test_run_of_a_configuration_live_elsewhere_says_so_or_waits(tmp_path):
    from evalsuite.pipeline import RunningElsewhere, run_one
    from evalsuite.resolve import resolve

    cfg = resolve("recall", "softmax", preset="tiny", seed=0)
    store = Store(tmp_path / "s.db")
    store.claim({cfg.run_id: cfg.as_dict()})
    _set(store.path, cfg.run_id, pid=os.getppid())
    with pytest.raises(RunningElsewhere, match="--wait"):
        run_one(cfg, device="cpu", store=store)


SPEC = f"""
base: {{task: recall, model: linear, preset: tiny, model.feature_map: "{PLUGIN}:CountingElu"}}
set: {{train.epochs: 4}}
seeds: [0, 1, 2, 3]
"""


def _driver(spec, store, log):
    env = {**os.environ, "EVALSUITE_COUNT_LOG": str(log), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "evalsuite.cli", "sweep", str(spec), "--store", str(store),
                             "--workers", "1", "--group", "off", "--no-report"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_two_drivers_on_one_store_train_each_run_once_and_a_killed_one_once_more(tmp_path):
    spec, store, log = tmp_path / "spec.yaml", tmp_path / "s.db", tmp_path / "trainings.log"
    spec.write_text(SPEC)
    a, b = _driver(spec, store, log), _driver(spec, store, log)
    drivers = {a.pid, b.pid}

    def trainings_log() -> list[tuple[int, int]]:
        """(seed, pid) of each model built in a worker (a driver builds models too, to validate points)"""
        lines = log.read_text().split("\n") if log.exists() else []
        pairs = [tuple(map(int, line.split())) for line in lines if line]
        return [(seed, pid) for seed, pid in pairs if pid not in drivers]

    deadline = time.time() + 120
    while time.time() < deadline and not trainings_log():
        time.sleep(0.2)  # the first model is built in a worker: a run is training
    conn = sqlite3.connect(store)
    holders = {pid for (pid,) in conn.execute("SELECT DISTINCT pid FROM runs WHERE status = 'running'")}
    conn.close()
    assert len(holders) == 1  # one driver claimed every run; the other skipped them
    (killed,) = holders
    victim = a if a.pid == killed else b
    victim.send_signal(signal.SIGTERM)
    for p in (a, b):
        p.communicate(timeout=120)
    rest = _driver(spec, store, log)  # reruns what the killed driver left
    drivers.add(rest.pid)
    out, _ = rest.communicate(timeout=300)
    assert rest.returncode == 0, out
    rows = sqlite3.connect(store).execute("SELECT seed, status FROM runs").fetchall()
    assert sorted(rows) == [(s, "done") for s in range(4)], out
    per_build = 2  # the tiny preset's two linear layers build one map each
    counts = collections.Counter(seed for seed, _ in trainings_log())
    trainings = {s: n / per_build for s, n in counts.items()}
    assert all(n in (1, 2) for n in trainings.values()) and sorted(trainings) == [0, 1, 2, 3], trainings
    assert sum(n == 2 for n in trainings.values()) == 1, trainings  # the run killed mid-training, and only it
