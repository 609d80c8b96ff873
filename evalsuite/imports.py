"""Runs that come from outside the store (a report's embedded data): read within bounds and checked
as the suite checks its own, before anything is judged or written.

A report is read only if it is a regular file of at most ``MAX_REPORT_BYTES``, its embedded data
expands to at most ``MAX_DATA_BYTES`` (a gzip bomb stops at the limit), it says a schema this
version reads (``REPORT_SCHEMA``; a report written before reports said one is schema 1), and every
run in it is one the suite could have stored: its record has exactly the fields of a run record,
a status the suite writes, a configuration that resolves and hashes to its id, and metrics that
are finite and inside their bounds (``records.metric_problem``). A run id that appears twice with
different contents is refused, naming both. Every problem is one ``UserError`` naming the file
and the run.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalsuite.errors import UserError
from evalsuite.records import RunRecord, Verdict, metric_problem

REPORT_SCHEMA = 2          # 1: reports before they said it; 2: runs carry their learning curves
MAX_REPORT_BYTES = 64 << 20
MAX_DATA_BYTES = 256 << 20


class ImportRefused(UserError):
    """A report (or its data) that the suite will not read."""


def read_report(path: str | os.PathLike, option: str = "--verdicts-from") -> str:
    """The text of a report file, refused unless it is a regular file within ``MAX_REPORT_BYTES``
    that decodes as UTF-8 (a FIFO would block the read forever, /dev/zero would never end)."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise ImportRefused(f"{option}: cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ImportRefused(f"{option}: {path} is not a regular file (a pipe, socket or device); give a report's .html file")
    if info.st_size > MAX_REPORT_BYTES:
        raise ImportRefused(f"{option}: {path} is {info.st_size / 2**20:,.0f} MiB; a report is read up to "
                            f"{MAX_REPORT_BYTES >> 20} MiB")
    with open(path, "rb") as f:
        raw = f.read(MAX_REPORT_BYTES + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportRefused(f"{option}: {path} is not UTF-8 text ({exc.reason} at byte {exc.start}): not an evalsuite "
                            "report") from None


def gunzip(data: bytes, option: str, path) -> bytes:
    """``data`` decompressed, stopping at ``MAX_DATA_BYTES`` (refused past it); a truncated or damaged
    stream is refused, not read in part."""
    out, d = bytearray(), zlib.decompressobj(wbits=31)
    try:
        chunk = d.decompress(data, MAX_DATA_BYTES + 1)
        out += chunk
        while d.unconsumed_tail and len(out) <= MAX_DATA_BYTES:
            out += d.decompress(d.unconsumed_tail, MAX_DATA_BYTES + 1 - len(out))
    except zlib.error as exc:
        raise ImportRefused(f"{option}: {path}: its embedded data is not valid gzip ({exc})") from None
    if len(out) > MAX_DATA_BYTES:
        raise ImportRefused(f"{option}: {path}: its embedded data expands past {MAX_DATA_BYTES >> 20} MiB; refused")
    if not d.eof:
        raise ImportRefused(f"{option}: {path}: its embedded data is truncated (the gzip stream ends early)")
    return bytes(out)


def decode_base64(text: str, option: str, path) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImportRefused(f"{option}: {path}: its embedded data is not valid base64 ({exc})") from None


def parse_json(text: str | bytes, option: str, path) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ImportRefused(f"{option}: {path}: its embedded data is not valid JSON ({exc})") from None


def check_data(data: Any, option: str, path) -> dict:
    """The embedded data's shape and schema: a mapping with ``runs`` a list (and ``probes``,
    ``verdicts``, ``members`` where given, of their kinds)."""
    if not isinstance(data, dict):
        raise ImportRefused(f"{option}: {path}: its embedded data is a {type(data).__name__}, not a mapping with runs")
    schema = data.get("schema", 1)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise ImportRefused(f"{option}: {path}: schema {schema!r} is not a report schema")
    if schema > REPORT_SCHEMA:
        raise ImportRefused(f"{option}: {path} was written by a newer evalsuite (report schema {schema}; this one reads "
                            f"up to {REPORT_SCHEMA}); upgrade evalsuite")
    for name, kind in (("runs", list), ("probes", list), ("verdicts", list), ("members", dict), ("segments", list)):
        value = data.get(name)
        if name == "runs" and not isinstance(value, list):
            raise ImportRefused(f"{option}: {path}: its runs are {type(value).__name__}, not a list of run records")
        if value is not None and not isinstance(value, kind):
            raise ImportRefused(f"{option}: {path}: its {name} are a {type(value).__name__}, not a {kind.__name__}")
    return data


def runs(raw: list, option: str, path) -> list[RunRecord]:
    """Each embedded run as a ``RunRecord``, checked as the suite checks its own (module docstring)."""
    from evalsuite.config import RunConfig, path_run_id, run_id
    from evalsuite.resolve import check_stored

    out: dict[str, tuple[int, RunRecord, dict]] = {}
    for i, item in enumerate(raw):
        where = f"{option}: {path}: run {i + 1}"
        if not isinstance(item, dict):
            raise ImportRefused(f"{where} is a {type(item).__name__}, not a run record")
        where += f" ({str(item.get('run_id'))[:40]!r})"
        try:
            record = RunRecord.model_validate(item)
        except ValidationError as err:
            e = err.errors()[0]
            raise ImportRefused(f"{where}: {'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}") from None
        try:
            config = RunConfig.from_dict(record.config)
            check_stored(config)
        except Exception as exc:  # noqa: BLE001 - any reason the configuration does not resolve
            raise ImportRefused(f"{where}: its configuration does not resolve ({type(exc).__name__}: {exc})") from None
        ids = {run_id(record.config)} | ({path_run_id(record.config)} if record.config.get("plugins") else set())
        if record.run_id not in ids or config.run_id != run_id(record.config):  # path id: a plug-in run stored
            # before plug-ins were identified by content (issue 63)
            raise ImportRefused(f"{where}: its id is not its configuration's hash ({run_id(record.config)})")
        for name, value in record.metrics.items():
            if (problem := metric_problem(name, value)) is not None:
                raise ImportRefused(f"{where}: {problem}")
        body = record.model_dump(mode="json")
        if record.run_id in out:
            j, _, other = out[record.run_id]
            if other != body:
                raise ImportRefused(f"{option}: {path}: runs {j + 1} and {i + 1} share the id {record.run_id} with "
                                    "different contents; refused (which one is right cannot be told)")
            continue
        out[record.run_id] = (i, record, body)
    return [r for _, r, _ in out.values()]


def verdicts(raw: list | None, option: str, path) -> list[Verdict]:
    try:
        return [Verdict.model_validate(v) for v in raw or []]
    except ValidationError as err:
        e = err.errors()[0]
        raise ImportRefused(f"{option}: {path}: a verdict: {'.'.join(map(str, e['loc']))}: {e['msg']}") from None


def segments(raw: list | None, option: str, path) -> list:
    """The segments a reproduce report embeds (``evalsuite.segments.SegmentRecord``), ids unique."""
    from evalsuite.segments import SegmentRecord

    try:
        out = [SegmentRecord.model_validate(s) for s in raw or []]
    except ValidationError as err:
        e = err.errors()[0]
        raise ImportRefused(f"{option}: {path}: a segment: {'.'.join(map(str, e['loc']))}: {e['msg']}") from None
    ids = [s.segment_id for s in out]
    if len(set(ids)) != len(ids):
        raise ImportRefused(f"{option}: {path}: two segments share an id; refused (which one is right cannot be told)")
    return out


def members(raw: dict | None, known: set[str], option: str, path) -> dict[str, list[str]]:
    out = {}
    for name, ids in (raw or {}).items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ImportRefused(f"{option}: {path}: the members of {name!r} are not a list of run ids")
        stray = [i for i in ids if i not in known]
        if stray:
            raise ImportRefused(f"{option}: {path}: {name!r} lists run {stray[0]}, which the report does not hold")
        out[str(name)] = ids
    return out


def merge(reports: list[tuple[str, dict]]) -> dict:
    """Several reports' embedded data (``reports.builder.read_embedded``, in the order given) as one,
    for ``--verdicts-from A --verdicts-from B`` (and ``--rebuild-store``, which seeds one store from
    several committed reports). A run held by more than one keeps the copy with a learning curve,
    else the first report's; ``conflicts`` counts the runs whose copies differ otherwise (the same
    configuration trained on another machine can differ in its last digits). An experiment's members,
    verdict and shown outcome come from the first report that names it. Segments from several stores
    are listed in the order they started and numbered again from 1 (a store numbers its own: two
    reports' ids would collide); one segment embedded twice (the same start and command) is one.
    Probes: every distinct row."""
    import pandas as pd

    if len(reports) == 1:
        return {**reports[0][1], "conflicts": 0}
    runs: dict[str, RunRecord] = {}
    conflicts = 0
    members: dict[str, list[str]] = {}
    verdicts: dict[str, Verdict] = {}
    shown: dict[str, str] = {}
    segments: dict[tuple, Any] = {}
    for _, data in reports:
        for r in data["runs"]:
            kept = runs.get(r.run_id)
            if kept is None:
                runs[r.run_id] = r
                continue
            if kept.model_dump(mode="json", exclude={"history"}) != r.model_dump(mode="json", exclude={"history"}):
                conflicts += 1
            if not kept.history and r.history:
                runs[r.run_id] = r
        for name, ids in data["members"].items():
            members.setdefault(name, ids)
        for v in data["verdicts"]:
            verdicts.setdefault(v.name, v)
        for name, outcome in data["shown"].items():
            shown.setdefault(name, outcome)
        for s in data["segments"]:
            segments.setdefault((s.started_at, s.command), s)
    ordered = sorted(segments.values(), key=lambda s: s.started_at)
    probes = [d["probes"] for _, d in reports if len(d["probes"])]
    return {"runs": list(runs.values()), "members": members, "verdicts": list(verdicts.values()), "shown": shown,
            "segments": [s.model_copy(update={"segment_id": i}) for i, s in enumerate(ordered, 1)],
            "probes": pd.concat(probes, ignore_index=True).drop_duplicates(ignore_index=True) if probes
            else pd.DataFrame(), "schema": min(d["schema"] for _, d in reports), "conflicts": conflicts}
