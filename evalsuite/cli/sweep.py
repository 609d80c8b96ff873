"""`evalsuite sweep`: run a grid from a spec file, resumably."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsuite.cli import common, main


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@common.executor_options
@click.option("--retry-failed", is_flag=True, help="run failed and diverged points again")
@click.option("--status", "show_status", is_flag=True, help="show done, running, interrupted, failed and left; run nothing")
@click.option("--report/--no-report", default=True, show_default=True, help="write the sweep's HTML report at the end")
def sweep(spec, executor, workers, address, device, store_path, threads, group, retry_failed, show_status, report):
    """Run the grid in SPEC (YAML or TOML); running it again resumes (finished runs are skipped)."""
    from evalsuite import sweep as sweeps
    from evalsuite.executors import get_executor

    store = common.open_store(store_path)
    points = sweeps.expand(sweeps.load_spec(spec))
    if show_status:
        if store.path.exists():
            sweeps.ingest_incoming(store)
        state = sweeps.status(points, store)
        click.echo(f"{len(points)} runs: " + ", ".join(f"{len(v)} {k}" for k, v in state.items()))
        for p in state["failed"]:
            row = store.get(p.run_id)
            click.echo(f"  failed  {p.run_id}  {sweeps.describe(p.axes)}: {row.first_error_line(100)}")
        for p in state["running"]:
            click.echo(f"  running {p.run_id}  {sweeps.describe(p.axes)} (by a live process)")
        for p in state["interrupted"]:
            click.echo(f"  interrupted {p.run_id}  {sweeps.describe(p.axes)} (interrupted, or its process is gone: "
                       f"rerun the sweep to run it again)")
        return
    common.device_name(device)
    get_executor(executor, workers=workers, device=device, address=address, threads=threads, group=group)  # refuse bad options first
    summary = sweeps.run_sweep(spec, store=store, executor=executor, workers=workers, device=device, threads=threads,
                               retry_failed=retry_failed, address=address, group=group, echo=click.echo)
    if report:
        from evalsuite.reports import builder

        _, run_ids = store.sweep_runs(summary["sweep_id"])
        runs = store.runs(run_ids)
        try:
            path = builder.write(runs, store.path.parent / "reports" / f"sweep-{summary['sweep_id']}.html",
                                 title=f"evalsuite sweep {Path(spec).stem}: {len(runs)} runs", probes=store.probes())
            click.echo(f"report   {path}")
        except OSError as exc:
            click.echo(f"warning  report not written: {common.os_message(exc)}", err=True)
    if summary["failed"]:
        sys.exit(1)
