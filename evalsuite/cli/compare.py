"""`evalsuite compare RUN RUN...`: what differs between runs (their configurations), their metrics
side by side, and with `-o FILE.png` their learning curves overlaid on one axis."""
from __future__ import annotations

import json

import click

from evalsuite.cli import common
from evalsuite.cli.app import main

METRICS = ("accuracy", "floor", "val_accuracy", "loss", "steps", "best_step", "state_size", "parameters", "wall_time_s")


def flatten(config: dict, prefix: str = "") -> dict:
    """A run's configuration as dotted keys (``model.d_model``), its lists and nested options as JSON."""
    out = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and k not in ("feature_map_options", "memory_options"):
            out.update(flatten(v, key + "."))
        else:
            out[key] = json.dumps(v, sort_keys=True, default=str) if isinstance(v, (list, dict)) else v
    return out


def _text(v) -> str:
    """One value as a table shows it: floats to 4 significant digits, counts with thousands separators."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{v:,}" if isinstance(v, int) else f"{v:.4g}"


def differences(records) -> dict[str, list]:
    """Dotted key -> each run's value, for the keys whose values are not all equal (missing: None)."""
    flat = [flatten(r.config) for r in records]
    keys = sorted(set().union(*flat))
    return {k: [f.get(k) for f in flat] for k in keys if len({json.dumps(f.get(k), default=str) for f in flat}) > 1}


@main.command("compare")
@click.argument("run_ids", nargs=-1, required=True)
@common.store_option
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="also draw the runs' validation curves overlaid on one axis into this PNG (never the store)")
@click.option("--json", "as_json", is_flag=True, help="print the differences and the metrics as JSON")
def compare(run_ids, store_path, output, as_json):
    """Compare runs (RUN_IDS: two or more ids or unique prefixes): the configuration keys that
    differ, then each metric side by side with the floor. Reads the store without modifying it."""
    from evalsuite import files
    from evalsuite.labels import model_label
    from evalsuite.records import against_floor, floor_of

    if len(run_ids) < 2:
        raise common.BadInput("RUN_IDS: give two or more runs to compare (`evalsuite show RUN` shows one)")
    if output is not None and not output.lower().endswith(".png"):
        raise common.BadInput(f"--output: a .png file for the overlaid curves, got {output!r}")
    store = common.open_store(store_path, must_exist=True)
    if output is not None:
        files.check_output(output, "--output", store=store.path)
    try:
        ids = list(dict.fromkeys(store.find(r) for r in run_ids))
    except KeyError as exc:
        raise common.BadInput(f"RUN_IDS: {exc.args[0]}") from None
    if len(ids) < 2:
        raise common.BadInput("RUN_IDS: the ids given name one run; give two or more different runs")
    records = {r.run_id: r for r in store.runs(ids)}
    records = [records[i] for i in ids]
    diff = differences(records)
    metrics = {m: [r.metrics.get(m) if m != "floor" else floor_of(r.metrics) for r in records] for m in METRICS}
    if as_json:
        click.echo(json.dumps({"runs": ids, "differences": diff, "metrics": metrics}, indent=1, default=str))
    else:
        import pandas as pd

        names = [f"{r.run_id[:8]} ({model_label(r.config)})" for r in records]
        click.echo("configuration keys that differ" + ("" if diff else ": none (the same configuration)"))
        if diff:
            click.echo(pd.DataFrame({k: [_text(v) for v in vs] for k, vs in diff.items()}, index=names).T.to_string())
        where = [against_floor(a, f) if a is not None and f is not None else "-" for a, f in
                 zip(metrics["accuracy"], metrics["floor"])]
        table = pd.DataFrame({**{k: [_text(v) for v in vs] for k, vs in metrics.items()}, "against the floor": where},
                             index=names).T
        click.echo("\nmetrics (test accuracy beside the floor: the best reader with no memory of the task)")
        click.echo(table.to_string())
        click.echo(f"\nstatus: {', '.join(f'{n}: {r.status.value}' for n, r in zip(names, records))}")
    if output is not None:
        path = _overlay(records, output)
        click.echo(f"curves   {path}" if path else "curves   none: these runs were stored without learning curves",
                   err=as_json)


def _overlay(records, output: str):
    """Every run's validation accuracy against step on one axis, each floor dotted in its colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from evalsuite import files
    from evalsuite.labels import model_label
    from evalsuite.records import floor_of

    drawn = [r for r in records if any(h.get("val_accuracy") is not None for h in r.history or [])]
    if not drawn:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for r in drawn:
        pts = [(h["step"], h["val_accuracy"]) for h in r.history if h.get("val_accuracy") is not None]
        (line,) = ax.plot(*zip(*pts), lw=1.2, label=f"{r.run_id[:8]} {model_label(r.config)}")
        if (f := floor_of(r.metrics)) is not None:
            ax.axhline(f, color=line.get_color(), lw=0.8, ls=":")
    ax.set(xlabel="step", ylabel="validation accuracy", ylim=(-0.02, 1.04),
           title="validation accuracy (dotted: each run's floor)")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = files.atomic_write(output, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
    return path
