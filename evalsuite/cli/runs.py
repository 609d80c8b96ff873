"""`evalsuite runs`: the runs a store holds, one line each, filtered; `--json` or `--csv` for tools;
`--pivot ROWS,COLS` for a sweep's answer (accuracy mean +- sd over seeds per cell, beside the floor)."""
from __future__ import annotations

import json
import sys

import click

from evalsuite.cli import common
from evalsuite.cli.app import main
from evalsuite.pivot import PIVOTABLE
from evalsuite.records import Status

COLUMNS = ["run_id", "status", "task", "model", "preset", "T", "D", "seed", "lr", "epochs", "accuracy", "floor", "steps"]
STATUSES = [s.value for s in Status]


def listing(store, task=None, model=None, status=None, sweep_id=None) -> list[dict]:
    """The runs of ``store`` (of one sweep) matching the filters, as rows of ``COLUMNS``."""
    from evalsuite.labels import model_label
    from evalsuite.records import floor_of

    run_ids = common.sweep_run_ids(store, sweep_id)
    rows = []
    for r in store.runs(run_ids):
        label = model_label(r.config)
        if (task and r.config["task"]["name"] != task) or (model and model not in (r.config["model"]["name"], label)) \
                or (status and r.status.value != status):
            continue
        rows.append({"run_id": r.run_id, "status": r.status.value, "task": r.config["task"]["name"], "model": label,
                     "preset": r.preset, "T": r.config["task"].get("seq_len"), "D": r.config["task"].get("num_kv_pairs"),
                     "seed": r.config.get("seed"), "lr": r.config["train"].get("lr"), "epochs": r.config["train"].get("epochs"),
                     "accuracy": r.metrics.get("accuracy"), "floor": floor_of(r.metrics), "steps": r.metrics.get("steps")})
    return rows


def pivot(store, axes: tuple[str, str], task=None, model=None, sweep_id=None):
    """The finished runs of ``store`` (of one sweep, one task, one model) as a ROWS x COLS table
    (``evalsuite.pivot``): ``(table, cells)``."""
    from evalsuite import pivot as pv
    from evalsuite.labels import model_label

    records = [r for r in store.runs(common.sweep_run_ids(store, sweep_id))
               if not (task and r.task != task) and not (model and model not in (r.model, model_label(r.config)))]
    cells = pv.cells(records, axes)
    return pv.table(cells, axes), cells


@main.command("runs")
@common.store_option
@click.option("--task", default=None, help="only runs of this task (e.g. recall)")
@click.option("--model", default=None, help="only runs of this model: a registered name or a label such as linear/dpfp(nu=2)")
@click.option("--status", default=None, type=click.Choice(STATUSES), help="only runs that ended so")
@click.option("--sweep", "sweep_id", default=None, help="only the runs of this sweep (id or unique prefix)")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows instead of a table")
@click.option("--csv", "as_csv", is_flag=True, help="print CSV instead of a table")
@click.option("--pivot", "pivot_axes", default=None, metavar="ROWS,COLS",
              help=f"a table of the finished runs' test accuracy (mean +- sd over seeds, beside the floor) with ROWS "
                   f"down and COLS across, each one of: {', '.join(PIVOTABLE)} (e.g. --pivot model,D)")
def runs(store_path, task, model, status, sweep_id, as_json, as_csv, pivot_axes):
    """List the runs in a store (`list` names what can be run). Reads the store without modifying it."""
    if as_json and as_csv:
        raise common.BadInput("--json, --csv: choose one")
    axes = _axes(pivot_axes) if pivot_axes is not None else None
    if axes is not None and (as_csv or status):
        raise common.BadInput("--pivot: reads finished runs as a table; it takes --json, not --csv or --status")
    store = common.open_store(store_path, must_exist=True)
    if axes is not None:
        table, cells = pivot(store, axes, task, model, sweep_id)
        if as_json:
            click.echo(json.dumps(cells, indent=1))
        elif table.empty:
            click.echo(f"no finished runs match in {store.path}")
        else:
            click.echo(table.to_string())
            click.echo(f"test accuracy, mean +- sd over seeds (n), beside the floor, at the rate chosen by validation on "
                       f"the seeds that ran every rate (the figure over the others); [best of k]: k settings that differ "
                       f"in more than the rate share the cell, the one with the best validation accuracy shown; {store.path}")
        return
    rows = listing(store, task, model, status, sweep_id)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    import pandas as pd

    frame = pd.DataFrame(rows, columns=COLUMNS)
    if as_csv:
        frame.to_csv(sys.stdout, index=False)
        return
    if frame.empty:
        click.echo(f"no runs match in {store.path}")
        return
    frame["preset"] = frame["preset"].fillna("-")  # runs stored before presets were recorded
    click.echo(frame.to_string(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))
    click.echo(f"{len(frame)} run{'s' * (len(frame) != 1)} in {store.path}")


def _axes(text: str) -> tuple[str, str]:
    from evalsuite.errors import did_you_mean

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or parts[0] == parts[1]:
        raise common.BadInput(f"--pivot: two different axes as ROWS,COLS, each one of {', '.join(PIVOTABLE)}; got {text!r}")
    for p in parts:
        if p not in PIVOTABLE:
            raise common.BadInput(f"--pivot: unknown axis {p!r}.{did_you_mean(p, PIVOTABLE)} Allowed: {', '.join(PIVOTABLE)}")
    return parts[0], parts[1]
