"""Weights verified on load (a SHA-256 recorded with the run; one error naming the file for any
damage) and outputs that never replace what they should not (weights, store folders, devices,
symlinks refused as outputs and written through by atomic writes)."""
import math
import os

import pytest
import torch

from evalsuite import files
from evalsuite.errors import UserError
from evalsuite.pipeline import load_trained, run_one
from evalsuite.resolve import resolve
from evalsuite.store import Store, WeightsError, sha256_of


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("w") / "s.db")
    cfg = resolve("recall", "softmax", preset="tiny", overrides={"train.epochs": 0.25}, seed=0)
    record = run_one(cfg, device="cpu", store=store)
    return store, record


def test_the_weights_hash_is_recorded_and_a_clean_load_passes(trained):
    store, record = trained
    row = store.get(record.run_id)
    assert row.metrics["weights_sha256"] == sha256_of(store.weights_path(record.run_id))
    _, model, _ = load_trained(store, record.run_id)
    assert sum(p.numel() for p in model.parameters()) > 0


def _damage(path, how):
    good = path.read_bytes()
    state = torch.load(path, weights_only=True)
    if how == "garbage":
        path.write_bytes(os.urandom(4096))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif how == "nan":
        torch.save({k: torch.full_like(v, math.nan) if v.is_floating_point() else v for k, v in state.items()}, path)
    elif how == "wrong shape":
        torch.save({k: v[..., :1] if v.dim() else v for k, v in state.items()}, path)
    elif how == "missing key":
        torch.save(dict(list(state.items())[1:]), path)
    return good


@pytest.mark.parametrize("how", ["garbage", "empty", "truncated", "nan", "wrong shape", "missing key"])
@pytest.mark.parametrize("recorded", [True, False], ids=["hash recorded", "no hash (older run)"])
def test_damaged_weights_give_one_error_naming_the_file(trained, how, recorded, monkeypatch):
    store, record = trained
    path = store.weights_path(record.run_id)
    good = _damage(path, how)
    try:
        if not recorded:  # a run from before hashes: the load itself must catch the damage
            real = store.get
            monkeypatch.setattr(store, "get", lambda rid, **kw: real(rid, **kw).model_copy(
                update={"metrics": {k: v for k, v in real(rid).metrics.items() if k != "weights_sha256"}}))
        with pytest.raises(WeightsError) as err:
            load_trained(store, record.run_id)
        message = str(err.value)
        assert str(path) in message and "\n" not in message and "weights_only" not in message
    finally:
        path.write_bytes(good)


def test_outputs_refuse_weights_store_folders_and_devices_and_write_through_symlinks(trained, tmp_path):
    store, record = trained
    weights = store.weights_path(record.run_id)
    for target, said in ((weights, "weights"), (store.path.parent / "incoming" / "x.html", "incoming/"),
                         ("/dev/null", "not a regular file")):
        with pytest.raises(UserError, match=said):
            files.check_output(target, "-o", store=store.path)
    copy = tmp_path / "w.pt"
    copy.write_bytes(weights.read_bytes())
    with pytest.raises(UserError, match="weights file"):
        files.check_output(copy, "-o")  # a weights file anywhere
    real, link = tmp_path / "real.html", tmp_path / "link.html"
    real.write_text("old")
    link.symlink_to(real)
    with pytest.raises(UserError, match="symbolic link"):
        files.check_output(link, "-o")  # an output option never follows nor replaces a link
    files.write_text(link, "new")  # a file evalsuite names itself is written through the link
    assert link.is_symlink() and real.read_text() == "new"
    long = tmp_path / ("r" * 250 + ".html")  # a legal name: the temporary one must stay legal too
    files.write_text(long, "x")
    assert long.read_text() == "x"


def test_a_run_the_store_cannot_take_is_kept_in_the_journal_and_recorded_next_time(tmp_path, monkeypatch):
    import sqlite3

    from evalsuite.pipeline import NotRecorded

    store = Store(tmp_path / "s.db")
    store.add_sweep("x", "x", {}, [])  # the store exists
    cfg = resolve("recall", "softmax", preset="tiny", overrides={"train.epochs": 0.25}, seed=1)

    def full(self, record):
        raise sqlite3.OperationalError("database or disk is full")

    real = Store.finish
    monkeypatch.setattr(Store, "finish", full)
    with pytest.raises(NotRecorded, match="the run finished .*kept in .*incoming"):
        run_one(cfg, device="cpu", store=store)
    incoming = tmp_path / "incoming"
    assert (incoming / f"{cfg.run_id}.json").exists() and (incoming / f"{cfg.run_id}.pt").exists()
    monkeypatch.setattr(Store, "finish", real)
    import evalsuite.pipeline as pipeline

    monkeypatch.setattr(pipeline, "run_unit", lambda *a, **k: pytest.fail("trained again"))
    again = run_one(cfg, device="cpu", store=store)  # recovered from the journal, not retrained
    assert again.ok and again.cached and store.weights_path(cfg.run_id).exists()
    assert not any(incoming.iterdir())


def test_a_write_that_fails_without_a_file_name_is_named_and_leaves_nothing(tmp_path):
    """A full disk fails the write or the flush with an OSError that names no file ("No space left
    on device"); the error a user sees names the output, and no temporary file is left beside it."""
    import errno

    from evalsuite import files
    from evalsuite.cli.common import os_message

    def full(f):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "report.html"
    with pytest.raises(OSError) as caught:
        files.atomic_write(target, full)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert os_message(caught.value) == f"No space left on device: {target}"
    assert list(tmp_path.iterdir()) == []


def test_a_store_error_names_the_store(tmp_path, monkeypatch):
    import sqlite3

    from click.testing import CliRunner

    from evalsuite.cli import main
    from evalsuite.store import Store

    from evalsuite.records import RunRecord

    path = tmp_path / "s.db"
    Store(path).finish(RunRecord(run_id="r1", config={"task": {"name": "recall"}, "model": {"name": "linear"}, "seed": 0},
                                 status="done", metrics={}))

    def full(self, *a, **k):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Store, "runs", full)
    res = CliRunner().invoke(main, ["runs", "--store", str(path)])
    assert res.exit_code == 2 and f"the results store ({path}) cannot be used: database or disk is full" in res.output
