"""`evalsuite report`: one self-contained HTML file for a store, a sweep, or runs chosen by id."""
from __future__ import annotations

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


@main.command()
@click.argument("run_ids", nargs=-1)
@common.store_option
@click.option("-o", "--output", default="results/report.html", show_default=True, type=click.Path(),
              help="the HTML file to write (never the store or one of its files)")
@click.option("--plot-format", default="png", show_default=True, type=click.Choice(["png", "svg"]),
              help="png (small) or svg (for publication) for the summary plots")
@click.option("--open", "open_after", is_flag=True, help="open the report in the default browser")
@click.option("--sweep", "sweep_id", default=None, help="only the runs of this sweep (id or unique prefix)")
@common.compact_option
def report(run_ids, store_path, output, plot_format, open_after, sweep_id, compact):
    """Write a self-contained HTML report of every run in the store, of one sweep (--sweep), or of
    the runs RUN_IDS names (ids or unique prefixes). Reads the store without modifying it."""
    from evalsuite import files
    from evalsuite.reports import builder

    if run_ids and sweep_id:
        raise common.BadInput("RUN_IDS, --sweep: choose one (the runs named, or a sweep's)")
    store = common.open_store(store_path, must_exist=True)
    files.check_output(output, "--output", store=store.path)
    if run_ids:
        try:
            run_ids = list(dict.fromkeys(store.find(r) for r in run_ids))
        except KeyError as exc:
            raise common.BadInput(f"RUN_IDS: {exc.args[0]}") from None
    else:
        run_ids = common.sweep_run_ids(store, sweep_id)
    runs = store.runs(run_ids)
    click.echo(f"report   drawing {len(runs)} run{'s' * (len(runs) != 1)}{' (compact)' if compact else ''}: a plot per "
               f"section{'' if compact else ' and a curve per run'}, about a second for every few runs", err=True)
    path = builder.write(runs, output, title=f"evalsuite report: {len(runs)} run{'s' * (len(runs) != 1)}", probes=store.probes(),
                         plot_format=plot_format, compact=compact)
    click.echo(f"report   {path} ({path.stat().st_size / 2**20:.1f} MiB, {len(runs)} runs)")
    if open_after:
        click.launch(str(path.resolve()))
