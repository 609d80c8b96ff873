"""Self-contained HTML reports: Jinja2 templates, inline CSS, plots as base64 PNG, no external URLs."""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Iterable

import jinja2

SUMMARY_METRICS = ("accuracy", "loss", "steps", "wall_time_s", "parameters", "state_size")

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("evalsuite.reports", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
    undefined=jinja2.StrictUndefined,
)


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


_env.filters["fmt"] = _fmt


def _curve_png(history: list[dict]) -> str | None:
    """Validation accuracy and training loss against steps, as a data: URI."""
    if not history:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(8, 2.8), dpi=90)
    ax_acc.plot(steps, [h.get("val_accuracy") for h in history], marker=".")
    ax_acc.axhline(0.99, color="grey", lw=0.8, ls="--")
    ax_acc.set(xlabel="step", ylabel="validation accuracy", ylim=(-0.02, 1.02))
    ax_loss.plot(steps, [h.get("train_loss") for h in history], marker=".", label="train")
    ax_loss.plot(steps, [h.get("val_loss") for h in history], marker=".", label="validation")
    ax_loss.set(xlabel="step", ylabel="loss")
    ax_loss.legend(frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def render(runs: Iterable[dict], title: str = "evalsuite report") -> str:
    """``runs``: dicts with run_id, config, status, metrics, error, env, history."""
    runs = list(runs)
    for run in runs:
        run["curve"] = _curve_png(run.get("history") or [])
        run["config_json"] = json.dumps(run["config"], indent=2, sort_keys=True)
    raw = [{k: r.get(k) for k in ("run_id", "config", "status", "metrics", "error", "env")} for r in runs]
    # </script> inside the JSON must not end the script element
    raw_json = json.dumps(raw, default=str).replace("</", "<\\/")
    return _env.get_template("report.html.j2").render(
        title=title, runs=runs, metrics=SUMMARY_METRICS, raw_json=raw_json)


def write(runs: Iterable[dict], path: str | Path, title: str = "evalsuite report") -> Path:
    """Render and write atomically (a half-written report never appears at ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(runs, title), encoding="utf-8")
    tmp.replace(path)
    return path
