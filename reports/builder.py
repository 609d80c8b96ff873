"""Self-contained HTML reports: Jinja2 templates, inline CSS and JavaScript, plots as data: URIs,
the raw results embedded as JSON. Nothing refers to any URL outside the file.

A section appears when the data for it exists: summary, accuracy against width / state /
pairs / length, needle heat map, capacity, interference, sharpness, then one section per run.
"""
from __future__ import annotations

import base64
import gzip
import html
import json
import math
import re
from pathlib import Path
from typing import Iterable

import jinja2
from markupsafe import Markup
import pandas as pd

from evalsuite import files, selection
from evalsuite.labels import mixture, model_label
from evalsuite.protocol import config_key
from evalsuite.models import key_features
from evalsuite.models.state import zoology_units
from evalsuite import imports
from evalsuite.records import (METRICS, TARGET_ACCURACY, RunRecord, Status, Verdict, against_floor, convergence_note, floor_of,
                               thin_history)

from . import plots
from .index import shown_verdicts
from .sections import ReportData, sections

PLOT_FORMATS = ("png", "svg")

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("evalsuite.reports", "templates"),
    autoescape=True,  # every user-controlled string (names, config values, errors) is escaped
    undefined=jinja2.StrictUndefined,
)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    return str(value)


_env.filters["fmt"] = _fmt
_env.filters["against_floor"] = lambda acc, floor: against_floor(float(acc), float(floor))  # records.against_floor


_KEY_FEATURES: dict[str, int | None] = {}


def _key_features(model: dict) -> int | None:
    """d' of a model section (``models.key_features``), cached per section; None where the model
    cannot be built any more (a run stored by an older version)."""
    key = json.dumps(model, sort_keys=True, default=str)
    if key not in _KEY_FEATURES:
        try:
            _KEY_FEATURES[key] = key_features(model)
        except Exception:  # noqa: BLE001 - a summary never fails on one old configuration
            _KEY_FEATURES[key] = None
    return _KEY_FEATURES[key]


def summarize(runs: list[RunRecord]) -> list[dict]:
    """One row per configuration: the best learning rate by mean validation accuracy over seeds
    (``selection``: the rule the verdicts use), the mean, sample standard deviation and per-seed
    values of test accuracy at that rate beside the task's chance floor, how many of those runs
    were undertrained, and every run's status (failed and diverged counted)."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(config_key(run.config), []).append(run)
    rows = []
    for members in groups.values():
        cfg = members[0].config
        done = [r for r in members if r.ok and r.metrics.get("accuracy") is not None]
        best_lr, best = selection.at_best_rate(done)
        acc = selection.figure(best)
        statuses: dict[str, int] = {}
        for r in members:
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        anchor = best[0] if best else members[0]  # the lowest seed at the chosen rate (never picked by test accuracy)
        task, mix = cfg["task"], mixture(cfg["task"])
        rows.append({
            "anchor": anchor.run_id, "task": task["name"], "seq_len": None if mix else task.get("seq_len"),
            "pairs": None if mix else task.get("num_kv_pairs"), "mixture": mix, "model": model_label(cfg), "d_model": cfg["model"]["d_model"],
            "n_layers": cfg["model"]["n_layers"], "state_size": anchor.metrics.get("state_size"),
            "d_prime": _key_features(cfg["model"]),
            "state_zoology": (zoology_units(anchor.metrics["state_size"], cfg["model"])
                              if anchor.metrics.get("state_size") else None),
            "best_lr": best_lr, "lrs": len(selection.by_rate(done)), "accuracy": acc.mean if acc.n else None,
            "accuracy_std": acc.std, "val_accuracy": selection.figure(best, "val_accuracy").mean if best else None, "accuracy_seeds": list(acc.values), "seeds": acc.n,
            "chance": _aggregate(best, "floor") if any("floor" in r.metrics for r in best) else _aggregate(best, "context_chance"),
            "floor_reader": _aggregate(best, "floor_reader"), "epochs": cfg["train"].get("epochs"),
            "undertrained": _aggregate(best, "undertrained") or 0,
            "runs": len(members), "status": ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())),
            "failed": sum(n for s, n in statuses.items() if s != Status.DONE.value),
            "error": next((r.first_error_line() for r in members if r.error), None),
            "eval_segments": _eval_segments(task, best) if mix else None,
        })
    return sorted(rows, key=lambda r: (r["task"], r["model"], r["d_model"], r["seq_len"] or 0, r["pairs"] or 0))


def _eval_segments(task: dict, best: list[RunRecord]) -> list[dict]:
    """A mixed-shape run's accuracy on each of its eval segments (``eval_{i}_accuracy``, the figure
    a verdict at one D reads) over the seeds at the chosen rate, beside that segment's floor."""
    out = []
    for i, seg in enumerate(task.get("eval_segments") or []):
        acc = selection.figure(best, f"eval_{i}_accuracy")
        if not acc.n:
            continue
        floor = selection.figure(best, f"eval_{i}_floor")
        out.append({"index": i, "seq_len": seg.get("seq_len", task.get("seq_len")),
                    "pairs": seg.get("num_kv_pairs", task.get("num_kv_pairs")), "accuracy": acc.mean,
                    "accuracy_std": acc.std, "seeds": acc.n, "chance": floor.mean if floor.n else None})
    return out


def _aggregate(runs: list[RunRecord], name: str):
    """A metric over seeds, as the metric declares (``records.METRICS``)."""
    return METRICS[name].reduce([r.metrics.get(name) for r in runs])


def _slices(runs: list[RunRecord], best: set[str]) -> pd.DataFrame:
    """Per-slice test accuracies of the best run of each configuration (best learning rate)."""
    rows = []
    for r in runs:
        if not r.ok or r.run_id not in best:
            continue
        for s in r.metrics.get("slices") or []:
            rows.append({"task": r.config["task"]["name"], "model": model_label(r.config), "run_id": r.run_id,
                         "d_model": r.config["model"]["d_model"], **s})
    return pd.DataFrame(rows)


def _json_for_script(data) -> str:
    # "<" escaped so that no "</script>" (or "<!--") inside a string can end the element
    return json.dumps(data, default=str, allow_nan=False).replace("<", "\\u003c")


def _clean(value):
    """NaN/inf to None so the embedded JSON is valid."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


SCALAR_METRICS = ("accuracy", "val_accuracy", "floor", "floor_reader", "context_chance", "majority_rate", "loss", "steps", "budget_steps",
                  "best_step", "stopped", "undertrained", "last_quarter_gain", "wall_time_s",
                  "steps_per_s", "parameters", "state_size", "state_bytes_fp32", "seq_len")


# what a verdict reads besides the scalars: accuracies on eval segments, the 4x reruns' flags, and
# the analyses the sharpness verdict reads (so that a compact report re-derives its verdicts)
VERDICT_ANALYSES = ("retrieval_layer", "sharpness", "sharpness_by_context")


def _verdict_metrics(metrics: dict, analyses=VERDICT_ANALYSES) -> dict:
    # each eval segment's accuracy and its own floor (a mixed-D run's verdict reads both per D)
    out = {k: v for k, v in metrics.items()
           if k in SCALAR_METRICS or (k.startswith("eval_") and k.endswith(("_accuracy", "_floor")))}
    analysis = metrics.get("analysis")
    if isinstance(analysis, dict):
        kept = {k: analysis[k] for k in analyses if k in analysis}
        if kept:
            out["analysis"] = kept
    return out


# A compact report's embedded data is gzip-compressed JSON in base64 (``data-encoding="base64"`` on a
# ``type="application/gzip"`` element): a reproduction's runs repeat the same config keys thousands
# of times, so it is about a fifth of the JSON's size; the page decompresses it (DecompressionStream)
# when a run's row is opened, and ``embedded_json`` reads either form.
_DATA_TAG = re.compile(r'<script type="(application/json|application/gzip)" id="evalsuite-data"[^>]*>')


def _embed(data, compact: bool) -> str:
    text = _json_for_script(data)
    if not compact:
        return text
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode("ascii")


def embedded_json(text: str, option: str = "--verdicts-from", path="the report") -> dict:
    """The raw ``#evalsuite-data`` of a report's HTML: ``runs`` (run records as dicts), ``probes``,
    ``verdicts``, ``members`` and ``schema``, from a full report (JSON) or a compact one (gzip,
    base64), within ``imports``' bounds; ``ImportRefused`` (one line naming the file) otherwise."""
    tag = _DATA_TAG.search(text)
    if tag is None:
        raise imports.ImportRefused(f"{option}: {path} has no #evalsuite-data element: not an evalsuite report")
    end = text.find("</script>", tag.end())
    if end < 0:
        raise imports.ImportRefused(f"{option}: {path}: its embedded data never ends (no </script>): a truncated report")
    body = text[tag.end():end]  # "<" is escaped inside (``_json_for_script``)
    if tag.group(1) == "application/gzip":
        body = imports.gunzip(imports.decode_base64(body.strip(), option, path), option, path)
    elif len(body) > imports.MAX_DATA_BYTES:
        raise imports.ImportRefused(f"{option}: {path}: its embedded data is past {imports.MAX_DATA_BYTES >> 20} MiB")
    return imports.check_data(imports.parse_json(body, option, path), option, path)


def read_embedded(path: str | Path, option: str = "--verdicts-from") -> dict:
    """A report's embedded data (``#evalsuite-data``): ``runs`` (``RunRecord``, each checked as the
    suite checks its own: ``evalsuite.imports``), ``members``, ``probes`` (a DataFrame, empty
    without probes), ``verdicts`` (``Verdict``) and ``segments`` (``SegmentRecord``; none in a report
    from before they were embedded), as the report was built from."""
    text = imports.read_report(path, option)
    data = embedded_json(text, option, path)
    runs = imports.runs(data["runs"], option, path)
    return {"runs": runs, "members": imports.members(data.get("members"), {r.run_id for r in runs}, option, path),
            "probes": pd.DataFrame(data.get("probes") or []),
            "verdicts": imports.verdicts(data.get("verdicts"), option, path),
            "segments": imports.segments(data.get("segments"), option, path),
            "shown": shown_verdicts(text), "schema": data.get("schema", 1)}


def embedded_runs(runs: list[RunRecord], compact: bool = False,
                  analyses: dict[str, Iterable[str]] | None = None) -> list[dict]:
    """The run records a report embeds (``#evalsuite-data``'s ``runs``), each with its learning
    curve (``records.thin_history``: at most 64 validation passes); a compact report's keep what
    ``render`` says of ``compact`` and ``analyses``."""
    raw = _clean([{**r.model_dump(mode="json", exclude={"history"}), "history": thin_history(r.history)} for r in runs])
    if compact:
        raw = [{**r, "metrics": _verdict_metrics(r["metrics"], VERDICT_ANALYSES if analyses is None
                                                 else sorted(analyses.get(r["run_id"], ())))} for r in raw]
    return raw


def render(runs: Iterable[RunRecord], title: str = "evalsuite report", *, probes: pd.DataFrame | None = None,
           plot_format: str = "png", verdicts: list[Verdict] | None = None, compact: bool = False,
           analyses: dict[str, Iterable[str]] | None = None, members: dict[str, list[str]] | None = None,
           segments: list | None = None) -> str:
    """``runs``: run records. ``probes``: capacity-probe rows (``evalsuite.analysis.capacity_probe``
    output, several memories). ``verdicts``: a reproduction's verdicts (their section leads the
    report). ``compact``: for a report that is committed or mailed; each run keeps its row (status,
    accuracy, floor, steps) and, when opened, its scalars, flags and configuration, built by the page
    from the embedded data, its learning curve drawn from the embedded history. The embedded data keeps each run's config and
    scalar metrics, the eval-segment accuracies and the analyses a verdict reads
    (``VERDICT_ANALYSES``), not the rest of its analyses and slices (the store holds those), so a
    reproduction's compact report re-derives its verdicts from its own data (``read_embedded``); it
    is compressed (gzip, base64), and the per-head analysis tables show means per model, task,
    layer and head: a reproduction of thousands of runs stays a few MB. ``analyses``: run id -> the
    analysis keys its verdicts read (``Experiment.analyses``), all a compact report keeps of its
    analyses (a run it does not name keeps none); None: every run keeps ``VERDICT_ANALYSES``.
    ``members``: experiment name -> the ids of the runs its store judged it from (a reproduction),
    embedded so that ``--verdicts-from`` judges each experiment from exactly those runs. Every
    report, compact or not, embeds each run's learning curve (``records.thin_history``), which the
    page draws in the run's row and, for a reproduction, beside each verdict (the curves of the
    seeds of every cell it read). ``segments``: the store's segments (``evalsuite.segments.SegmentRecord``),
    listed under the verdicts and embedded, so that a reproduction carried to another machine by its
    committed report (``--rebuild-store``) keeps its wall time per segment."""
    if plot_format not in PLOT_FORMATS:
        raise ValueError(f"plot_format must be one of {PLOT_FORMATS}, got {plot_format!r}")
    runs = list(runs)
    summary = summarize(runs)
    slices = _slices(runs, {row["anchor"] for row in summary})
    # what the template shows of each run; a full report draws a curve per run (about 0.3 s each), so
    # a long one shows its progress on a terminal
    from tqdm.auto import tqdm

    inline = not compact and len(runs) <= INLINE_CURVES_MAX
    views = [_view(r, compact=compact, image=inline) for r in tqdm(runs, desc="report: runs", unit="run", leave=False,
                                                                     disable=None if len(runs) >= PROGRESS_ABOVE and inline
                                                                     else True)]
    raw = embedded_runs(runs, compact, analyses)
    data = ReportData(runs, summary, slices, probes, list(verdicts or []), compact=compact)
    built = [(section, section.build(data, plot_format)) for section in sections()]
    context = dict(
        title=title, runs=views, summary=summary, target=TARGET_ACCURACY,
        drawn_curves=not inline,
        failed=[v for v in views if v["status"] != Status.DONE.value],
        sections=[{"id": s.id, "title": s.title, "template": s.template, "data": d, "leads": s.leads} for s, d in built if d],
        raw_json=_embed({"schema": imports.REPORT_SCHEMA, "runs": raw, "members": members or {},
                         "probes": None if probes is None else _clean(probes.to_dict("records")),
                         "verdicts": [v.model_dump(mode="json") for v in verdicts or []],
                         "segments": [s.model_dump(mode="json") for s in segments or []]}, compact),
        segments=[s.line() for s in segments or []],
        segment_minutes=sum(s.minutes or 0 for s in segments or []),
        # runs finished without a learning curve: imported from a report that did not carry curves
        no_curve=sum(r.status is Status.DONE and not r.history for r in runs),
        compact=compact, scalar_metrics=SCALAR_METRICS,
    )
    return _env.get_template("report.html.j2").render(**context)


PROGRESS_ABOVE = 100  # runs in a full report before its rendering shows progress
# A full report draws each run's curve as an image (about 0.3 s a run) up to this many runs; above
# it, and in a compact report, the page draws a run's learning curve from its embedded history when
# the reader opens that run's row: a 2,000-run report is not 2,000 images nobody opens.
INLINE_CURVES_MAX = 100


def _view(r: RunRecord, compact: bool = False, image: bool = True) -> dict:
    view = {**r.model_dump(exclude={"history"}), "status": r.status.value, "label": model_label(r.config),
            "curve": plots.training_curves(r.history, floor_of(r.metrics), fmt="png") if image and not compact
            else None,  # small, many of them
            # escaped as text (quotes need no escaping inside <pre>; &#34; would double the size)
            # a compact row's configuration is built by the page from the embedded data
            "config_json": None if compact else Markup(html.escape(json.dumps(r.config, indent=2, sort_keys=True),
                                                                   quote=False)),
            "scalars": [(k, r.metrics[k]) for k in SCALAR_METRICS if k in r.metrics],
            "convergence": convergence_note(r.metrics), "errors": (r.metrics.get("analysis") or {}).get("errors")}
    if compact:
        view["env"] = None  # what each run ran on stays in the store
    return view


def write(runs: Iterable[dict], path: str | Path, title: str = "evalsuite report", **options) -> Path:
    """Render and write atomically (a half-written report never appears at ``path``); in a folder
    named ``reports`` (where run, sweep and reproduce write theirs) also rewrite its ``index.html``."""
    html = render(runs, title, **options)
    out = files.write_text(path, html)
    if out.parent.name == "reports" and out.name != "index.html":  # the suite's own report folders, not docs/
        from .index import write_index

        try:
            write_index(out.parent)
        except OSError:  # an index that cannot be written never costs the report
            pass
    return out
