"""`evalsuite export`: every run of a store as one flat table (csv, parquet or jsonl)."""
from __future__ import annotations

import click

from evalsuite.cli import common
from evalsuite.cli.app import main

FORMATS = ["csv", "parquet", "jsonl"]


@main.command("export")
@common.store_option
@click.option("--format", "fmt", default="csv", show_default=True, type=click.Choice(FORMATS),
              help="csv; parquet (pandas' own writer, needs pyarrow or fastparquet); jsonl (one run per line)")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="file to write [default: export.FORMAT beside the store]")
@click.option("--sweep", "sweep_id", default=None, help="only the runs of this sweep (id or unique prefix)")
def export(store_path, fmt, output, sweep_id):
    """Write one row per run: id, status, seed, every config field (task.*, model.*, train.*) and
    every scalar metric. Reads the store without modifying it."""
    import pandas as pd

    from evalsuite import files
    from evalsuite.records import flat_row

    store = common.open_store(store_path, must_exist=True)
    if fmt == "parquet" and not _parquet_engine():
        raise common.BadInput("--format parquet: needs pyarrow or fastparquet (pip install pyarrow); "
                              "csv and jsonl need nothing more")
    target = files.check_output(output or store.path.parent / f"export.{fmt}", "--output", store=store.path)
    run_ids = common.sweep_run_ids(store, sweep_id)
    frame = pd.DataFrame([flat_row(r) for r in store.runs(run_ids)])
    tmp = target.with_name(f".{target.name}.tmp")
    if fmt == "csv":
        frame.to_csv(tmp, index=False)
    elif fmt == "jsonl":
        frame.to_json(tmp, orient="records", lines=True)
    else:
        frame.to_parquet(tmp, index=False)
    tmp.replace(target)
    click.echo(f"export   {target} ({len(frame)} runs, {frame.shape[1]} columns, {fmt})")


def _parquet_engine() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(m) is not None for m in ("pyarrow", "fastparquet"))
