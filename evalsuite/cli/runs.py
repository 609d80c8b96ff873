"""`evalsuite runs`: the runs a store holds, one line each, filtered; `--json` or `--csv` for tools."""
from __future__ import annotations

import json
import sys

import click

from evalsuite.cli import common
from evalsuite.cli.app import main
from evalsuite.records import Status

COLUMNS = ["run_id", "status", "task", "model", "seed", "lr", "epochs", "accuracy", "floor", "steps"]
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
                     "seed": r.config.get("seed"), "lr": r.config["train"].get("lr"), "epochs": r.config["train"].get("epochs"),
                     "accuracy": r.metrics.get("accuracy"), "floor": floor_of(r.metrics), "steps": r.metrics.get("steps")})
    return rows


@main.command("runs")
@common.store_option
@click.option("--task", default=None, help="only runs of this task (e.g. recall)")
@click.option("--model", default=None, help="only runs of this model: a registered name or a label such as linear/dpfp(nu=2)")
@click.option("--status", default=None, type=click.Choice(STATUSES), help="only runs that ended so")
@click.option("--sweep", "sweep_id", default=None, help="only the runs of this sweep (id or unique prefix)")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows instead of a table")
@click.option("--csv", "as_csv", is_flag=True, help="print CSV instead of a table")
def runs(store_path, task, model, status, sweep_id, as_json, as_csv):
    """List the runs in a store (`list` names what can be run). Reads the store without modifying it."""
    if as_json and as_csv:
        raise common.BadInput("--json, --csv: choose one")
    store = common.open_store(store_path, must_exist=True)
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
    click.echo(frame.to_string(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))
    click.echo(f"{len(frame)} run{'s' * (len(frame) != 1)} in {store.path}")
