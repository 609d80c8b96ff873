"""Limits up front and paths as users type them: `~` expanded, a parent that is a file named,
CPU workers bounded by cores, an unreachable Ray address refused before anything is claimed, and
a run's report written beside its store."""
import socket

import pytest

from evalsuite.executors import get_executor
from evalsuite.executors.local import cpu_count
from tests.core.test_hardening import RUN, assert_refused, invoke


def test_paths_expand_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    res = invoke(*RUN, "--set", "train.epochs=0.25", "--store", "~/s/evalsuite.db")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s" / "evalsuite.db").exists()
    assert list((tmp_path / "s" / "reports").glob("*.html"))  # the report beside the store, as a sweep's
    assert not (tmp_path / "~").exists()


def test_a_parent_that_is_a_file_is_named(tmp_path):
    blocker = tmp_path / "plain.txt"
    blocker.write_text("x")
    assert_refused(invoke(*RUN, "--store", blocker / "s.db"), "--store", "is a file, not a folder")
    assert_refused(invoke("sample", "--task", "recall", "--out", blocker / "x.jsonl"), "--out", "is a file, not a folder")
    assert blocker.read_text() == "x"


def test_cpu_workers_are_bounded_by_the_cores():
    with pytest.raises(Exception, match=f"at most {cpu_count()}"):
        get_executor("local", workers=cpu_count() + 1, device="cpu")


def test_an_unreachable_ray_address_is_refused_before_anything_is_claimed(tmp_path):
    pytest.importorskip("ray", reason="install the ray extra (make test does)")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = tmp_path / "s.yaml"
    spec.write_text("base: {task: recall, model: softmax, preset: tiny}\n")
    res = invoke("sweep", spec, "--executor", "ray", "--address", f"127.0.0.1:{port}", "--store", tmp_path / "s.db")
    assert_refused(res, "--address", "cannot reach")
    assert not (tmp_path / "s.db").exists()


def test_local_workers_are_bounded_by_the_memory_the_largest_run_needs(tmp_path, monkeypatch):
    from evalsuite import resources
    from evalsuite import sweep as sweeps
    from evalsuite.errors import UserError
    from evalsuite.store import Store

    spec = tmp_path / "s.yaml"
    spec.write_text("base: {task: recall, model: softmax, preset: tiny}\nseeds: [0, 1]\n")
    points = sweeps.expand(sweeps.load_spec(spec))
    from evalsuite.resolve import estimated_bytes

    need = estimated_bytes(points[0].config)
    monkeypatch.setattr(resources, "available_memory", lambda: int(1.5 * need))  # room for one run, not two
    with pytest.raises(UserError, match=r"--workers 2: the largest run needs about .* use at most 1"):
        sweeps.run_points(points, name="m", spec={}, store=Store(tmp_path / "s.db"), workers=2, echo=lambda *_: None)
    assert not (tmp_path / "s.db").exists()  # refused before anything was written
