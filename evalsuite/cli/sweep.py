"""`evalsuite sweep`: run a grid from a spec file, resumably."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsuite.cli import common
from evalsuite.cli.app import main

COMPACT_ABOVE = 200  # runs: a sweep's end-of-run report is compact beyond this (a full one draws a curve per run)


@main.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@common.executor_options
@click.option("--retry-failed", is_flag=True, help="run failed and diverged points again")
@click.option("--status", "show_status", is_flag=True, help="show done, running, interrupted, failed and left; run nothing")
@click.option("--report/--no-report", default=True, show_default=True, help="write the sweep's HTML report at the end")
def sweep(spec, executor, workers, address, device, store_path, threads, group, retry_failed, show_status, report):
    """Run the grid in SPEC (YAML or TOML); running it again resumes (finished runs are skipped).
    `--status` without SPEC lists every sweep the store holds, with its runs by status."""
    from evalsuite import sweep as sweeps
    from evalsuite.executors import get_executor

    if spec is None:
        if not show_status:
            raise common.BadInput("SPEC: a sweep spec file (YAML or TOML) is needed to run a sweep; "
                                  "`evalsuite sweep --status` alone lists the sweeps a store holds")
        _store_status(common.open_store(store_path, must_exist=True))
        return
    store = common.open_store(store_path)
    points = sweeps.expand(sweeps.load_spec(spec))
    if show_status:
        if store.path.exists():
            sweeps.ingest_incoming(store)
        state = sweeps.status(points, store)
        click.echo(f"{len(points)} runs: {state.counts()}")
        for p in state.failed:
            row = store.get(p.run_id)
            click.echo(f"  failed  {p.run_id}  {sweeps.describe(p.axes)}: {row.first_error_line(100)}")
        for p in state.running:
            click.echo(f"  running {p.run_id}  {sweeps.describe(p.axes)} (by a live process)")
        for p in state.interrupted:
            click.echo(f"  interrupted {p.run_id}  {sweeps.describe(p.axes)} (interrupted, or its process is gone: "
                       f"rerun the sweep to run it again)")
        return
    common.device_name(device)
    get_executor(executor, workers=workers, device=device, address=address, threads=threads, group=group)  # refuse bad options first
    import time

    began = time.perf_counter()
    summary = sweeps.run_sweep(spec, store=store, executor=executor, workers=workers, device=device, threads=threads,
                               retry_failed=retry_failed, address=address, group=group, echo=click.echo)
    _answer(store, sweeps.load_spec(spec), summary["sweep_id"])
    if report:
        from evalsuite.reports import builder

        _, run_ids = store.sweep_runs(summary["sweep_id"])
        runs = store.runs(run_ids)
        compact = len(runs) > COMPACT_ABOVE
        if compact:
            click.echo(f"report   compact ({len(runs)} runs, more than {COMPACT_ABOVE}: per-run curves and tables left "
                       f"out; `evalsuite report --sweep {summary['sweep_id']}` writes the full one)")
        try:
            path = builder.write(runs, store.path.parent / "reports" / f"sweep-{summary['sweep_id']}.html",
                                 title=f"evalsuite sweep {Path(spec).stem}: {len(runs)} runs", probes=store.probes(),
                                 compact=compact)
            click.echo(f"report   {path}")
        except OSError as exc:
            click.echo(f"warning  report not written: {common.os_message(exc)}", err=True)
    click.echo(f"wall     {time.perf_counter() - began:.0f} s in all (runs, the answer and the report; start-up before "
               "the first run not counted)")
    if summary["failed"]:
        sys.exit(1)


def _answer(store, spec, sweep_id: str) -> None:
    """The sweep's question answered at its end: a pivot of its swept variables (`runs --pivot`)."""
    from evalsuite.cli.runs import pivot
    from evalsuite.pivot import sweep_axes

    axes = sweep_axes(spec.grid)
    if axes is None or not store.path.exists():
        return
    table, _ = pivot(store, axes, sweep_id=sweep_id)
    if not table.empty:
        click.echo(f"test accuracy by {axes[0]} and {axes[1]}: mean +- sd over seeds (n), beside the floor "
                   f"(`evalsuite runs --sweep {sweep_id} --pivot {axes[0]},{axes[1]}`)")
        click.echo(table.to_string())


def _store_status(store) -> None:
    """Every sweep of ``store``: its id, name and runs by status (``left``: never started)."""
    sweeps = store.sweeps()
    if not sweeps:
        click.echo(f"no sweeps in {store.path} (runs started by `evalsuite run` are listed by `evalsuite runs`)")
        return
    width = max(len(s["name"]) for s in sweeps) + 2
    for s in sweeps:
        _, ids = store.sweep_runs(s["sweep_id"])
        counts: dict[str, int] = {}
        for row in store.statuses(ids):
            counts[row["status"].value] = counts.get(row["status"].value, 0) + 1
        left = len(ids) - sum(counts.values())
        parts = [f"{n} {k}" for k, n in sorted(counts.items())] + ([f"{left} left"] if left else [])
        click.echo(f"{s['sweep_id']}  {s['name']:<{width}}{len(ids)} runs: {', '.join(parts) or 'none'}")
