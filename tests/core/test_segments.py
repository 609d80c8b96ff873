"""A long command's segments are recorded in the store (``evalsuite.segments``): how each ended,
its wall time and the runs that finished in it, read back by `evalsuite reproduce --segments`;
one killed outright reads as killed at its last heartbeat."""
import calendar
import os
import sqlite3
import subprocess
import time

import pytest
from click.testing import CliRunner

from evalsuite.cli import main
from evalsuite.errors import Interrupted
from evalsuite import segments
from evalsuite.records import RunRecord
from evalsuite.segments import Segment, SegmentRecord
from evalsuite.store import Store


def _finished(store: Store, run_id: str, status: str = "done") -> None:
    store.finish(RunRecord(run_id=run_id, config={"task": {"name": "recall"}, "model": {"name": "linear"}, "seed": 0},
                           status=status, metrics={"accuracy": 0.5}))


@pytest.mark.parametrize("how, status", [("finished", "done"), ("left work", "ended at its limit"),
                                         ("ctrl-c", "interrupted"), ("sigterm", "interrupted"), ("error", "failed")])
def test_a_segment_records_how_it_ended(tmp_path, how, status):
    store = Store(tmp_path / "s.db")
    raised = {"ctrl-c": KeyboardInterrupt, "sigterm": Interrupted, "error": ValueError}.get(how)
    try:
        with Segment(store, 105) as seg:
            _finished(store, "a")
            _finished(store, "b", "failed")
            seg.left_work = how == "left work"
            if raised:
                raise raised()
    except BaseException as exc:  # noqa: BLE001 - what the segment let through
        assert raised and isinstance(exc, raised)
    (rec,) = segments.read(store)
    assert rec.status == status and rec.limit_minutes == 105 and rec.ended_at >= rec.started_at
    assert rec.runs == {"done": 1, "failed": 1} and rec.command.startswith("evalsuite ")


def test_runs_held_back_at_a_segments_end_are_not_counted_as_finished_in_it(tmp_path):
    """A run the segment's end held back (never started: ``HELD_BACK``) is not one that finished in
    it; one stopped mid-training at the end is (interrupted), and so is one that ran to the end."""
    store = Store(tmp_path / "s.db")
    config = {"task": {"name": "recall"}, "model": {"name": "linear"}, "seed": 0}
    with Segment(store, 30) as seg:
        _finished(store, "ran")
        for rid in ("held", "stopped"):
            store.start(rid, {**config, "seed": len(rid)}, {})
        store.interrupt(["held"], segments.HELD_BACK)
        store.interrupt(["stopped"], "the segment ended at step 3,700 of 10,000; its checkpoint is kept")
        seg.left_work = True
    (rec,) = segments.read(store)
    assert rec.runs == {"done": 1, "interrupted": 1}
    assert "2 runs finished (1 done, 1 interrupted)" in rec.line()


def test_a_killed_segment_reads_as_killed_at_its_last_heartbeat(tmp_path):
    store = Store(tmp_path / "s.db")
    sid = segments.start(store, "evalsuite reproduce jrt", 60, "0.1.0", "abc")
    _finished(store, "a")
    dead = subprocess.Popen(["true"])
    dead.wait()
    beat = time.time()
    with sqlite3.connect(store.path) as conn:  # its process gone, its last beat after the run finished
        conn.execute("UPDATE segments SET pid = ?, heartbeat = ? WHERE segment_id = ?", (dead.pid, beat, sid))
    (rec,) = segments.read(store)
    assert rec.status == "killed" and rec.ended_at == pytest.approx(beat)
    assert rec.runs == {"done": 1}  # it finished before the last beat
    # a live one (this process, beating now) is running, no end yet
    segments.start(store, "evalsuite reproduce", None, "0.1.0", None)
    assert segments.read(store)[1].status == "running" and segments.read(store)[1].ended_at is None


def test_a_segment_line_says_when_how_long_how_it_ended_and_what_ran():
    start = calendar.timegm((2026, 12, 7, 0, 0, 0))
    rec = SegmentRecord(segment_id=3, command="evalsuite reproduce jrt --segment-minutes 105", version="0.1.0",
                        git_commit="abc123", host="vm", started_at=start + 16 * 3600, ended_at=start + 17.75 * 3600,
                        status="ended at its limit", limit_minutes=105, runs={"done": 30, "failed": 2})
    assert rec.line() == ("segment 3: 2026-12-07 16:00-17:45 UTC, 105 min wall, ended at its limit (limit 105 min), "
                          "32 runs finished (30 done, 2 failed); evalsuite 0.1.0 (commit abc123), on vm: "
                          "evalsuite reproduce jrt --segment-minutes 105")


def test_reproduce_segments_lists_them_and_their_total(tmp_path):
    store = Store(tmp_path / "s.db")
    runner = CliRunner()
    _finished(store, "x")
    res = runner.invoke(main, ["reproduce", "--segments", "--store", str(store.path)])
    assert res.exit_code == 0 and "no segment recorded" in res.output
    for limit in (30, None):
        with Segment(store, limit):
            pass
    res = runner.invoke(main, ["reproduce", "--segments", "--store", str(store.path)])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines[:2]] == ["segment 1", "segment 2"] and "done (limit 30 min)" in lines[0]
    assert lines[2].startswith("total    2 segments, 0 min wall")
    bad = runner.invoke(main, ["reproduce", "jrt", "--segments", "--store", str(store.path)])
    assert bad.exit_code == 2 and "Error: --segments" in bad.output
    missing = runner.invoke(main, ["reproduce", "--segments", "--store", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and not (tmp_path / "none.db").exists()


def test_a_store_from_before_segments_has_none_and_stays_readable(tmp_path):
    store = Store(tmp_path / "s.db")
    _finished(store, "x")
    with sqlite3.connect(store.path) as conn:
        conn.execute("DROP TABLE segments")
    assert segments.read(store) == [] and [r.run_id for r in store.runs()] == ["x"]
    assert os.path.exists(store.path)


def test_reproduce_records_its_invocation_as_a_segment(tmp_path, monkeypatch):
    """The command itself records it: here its experiments' runs are replaced by one that finishes a
    run and leaves work (the segment's limit reached)."""
    from evalsuite import reproduce as rep

    store = Store(tmp_path / "s.db")

    def run_experiments(experiments, scale, store_, **kwargs):
        _finished(store_, "r1")
        return False  # work left

    monkeypatch.setattr(rep, "run_experiments", run_experiments)
    res = CliRunner().invoke(main, ["reproduce", "copy", "--segment-minutes", "5", "--store", str(store.path),
                                    "--device", "cpu", "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "segment  1 of this store" in res.output and "run the same command again to resume" in res.output
    (rec,) = segments.read(store)
    assert rec.status == "ended at its limit" and rec.limit_minutes == 5 and rec.runs == {"done": 1}


def test_segments_travel_with_the_report_into_a_rebuilt_store(tmp_path, monkeypatch):
    """A reproduction carried from one machine to the next by its committed report keeps its wall time
    per segment: the report embeds the store's segments (one still running ends at the report's time
    and says so), `--rebuild-store` writes them under their own ids with the run counts they recorded
    (the imported runs carry the time of the import, which would count them all in none), and the
    next segment in the rebuilt store continues the numbering."""
    from evalsuite import reproduce as rep
    from evalsuite.reports import builder

    store = Store(tmp_path / "s.db")
    calls = []

    def run_experiments(experiments, scale, store_, **kwargs):
        calls.append(1)
        _finished(store_, f"r{len(calls)}")
        _finished(store_, f"f{len(calls)}", "failed")
        return False

    monkeypatch.setattr(rep, "run_experiments", run_experiments)
    report = tmp_path / "r.html"
    for _ in range(2):
        res = CliRunner().invoke(main, ["reproduce", "copy", "--segment-minutes", "5", "--store", str(store.path),
                                        "--device", "cpu", "--compact", "-o", str(report)])
        assert res.exit_code == 0, res.output
    segments.start(store, "evalsuite reproduce copy (another driver)", 60, "0.1.0", None)  # running, alive
    res = CliRunner().invoke(main, ["reproduce", "copy", "--verdicts-only", "--compact", "--store", str(store.path),
                                    "-o", str(report)])
    assert res.exit_code == 0, res.output
    embedded = builder.read_embedded(report)["segments"]
    assert [s.segment_id for s in embedded] == [1, 2, 3]
    assert embedded[2].status == "still running when the report was written" and embedded[2].ended_at is not None
    assert "Segments: 3 segments," in report.read_text()
    rebuilt = tmp_path / "rebuilt" / "evalsuite.db"
    res = CliRunner().invoke(main, ["reproduce", "copy", "--verdicts-from", str(report), "--rebuild-store", str(rebuilt)])
    assert res.exit_code == 0 and "3 segments from" in res.output, res.output
    again = segments.read(Store(rebuilt))
    assert [s.line() for s in again] == [s.line() for s in embedded]  # counts as recorded, not recounted
    assert again[0].runs == {"done": 1, "failed": 1} and again[1].runs == {"done": 1, "failed": 1}
    with Segment(Store(rebuilt), 5) as seg:
        pass
    assert seg.segment_id == 4


def test_a_report_whose_segments_are_malformed_is_refused(tmp_path):
    from evalsuite.imports import ImportRefused, segments as imported

    good = {"segment_id": 1, "command": "evalsuite reproduce", "started_at": 1.0, "status": "done"}
    assert imported([good], "--verdicts-from", "r.html")[0].segment_id == 1 and imported(None, "-", "r") == []
    with pytest.raises(ImportRefused, match="a segment: started_at"):
        imported([{**good, "started_at": "noon"}], "--verdicts-from", "r.html")
    with pytest.raises(ImportRefused, match="share an id"):
        imported([good, good], "--verdicts-from", "r.html")
