"""`evalsuite reproduce`: the experiments behind docs/FINDINGS.md and their verdicts."""
from __future__ import annotations

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


@main.command()
@click.argument("names", nargs=-1)
@click.option("--scale", default="cpu", show_default=True, type=click.Choice(["cpu", "paper"]),
              help="cpu: sizes a 2-core machine runs, an experiment in minutes to hours (`--list`, docs/PROJECTION.md); paper: the published sizes (a GPU or a cluster)")
@click.option("--list", "list_only", is_flag=True, help="name each experiment, its source and expected run time")
@click.option("--plan", "plan_only", is_flag=True,
              help="say what the next invocation would run (each run, its expected minutes and why it is needed) "
                   "from what the store holds; trains nothing, writes nothing")
@common.executor_options
@click.option("--verdicts-only", is_flag=True, help="judge what the store holds; run nothing (the store is only read)")
@click.option("-o", "--output", default=None, type=click.Path(),
              help="reproduction report [default: reports/reproduce-SCALE.html beside the store]")
@click.option("--verdicts-from", "from_report", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="judge the runs embedded in this reproduce report (no store): re-derive a published report's "
                   "verdicts with this version's rules. Repeat it to read several reports as one (a run in more "
                   "than one keeps the copy with a learning curve, else the first report's; an experiment is "
                   "judged from the first report that names it)")
@click.option("--rebuild-store", "rebuild", default=None, type=click.Path(dir_okay=False),
              help="with --verdicts-from: also write the report's embedded runs, probes and segments into this new store "
                   "(it must not exist), where `--verdicts-only --store PATH` judges them again and a reproduction "
                   "goes on; with several reports, all of theirs (one store seeded from several committed reports)")
@click.option("--results", "results_path", default=None, type=click.Path(),
              help="also write the verdicts as Markdown here (the committed copy: docs/RESULTS.md) "
                   "[always written: reports/RESULTS-SCALE.md beside the store]")
@click.option("--segment-minutes", default=None, type=click.FloatRange(min=1),
              help="end within this many minutes: start no run after them, nor one that its configuration's "
                   "finished runs say would end past them; a run in flight at the end saves its checkpoint and stops there, "
                   "and the next invocation resumes it. "
                   "A whole reproduction runs in segments of at most two hours (120)")
@click.option("--segments", "segments_only", is_flag=True,
              help="list the segments recorded in the store (each invocation that ran something: when, its wall "
                   "time, how it ended, the runs that finished in it, the command) and their total; runs nothing")
@click.option("--smoke", is_flag=True,
              help="every sweep point once at a few steps, in its own store (smoke/evalsuite.db beside the default "
                   "one): checks that the experiments run end to end in minutes; its verdicts test the pipeline, "
                   "not the findings (no escalation, no probes)")
@click.option("--figures", "figures_dir", default=None, type=click.Path(file_okay=False),
              help="also write the report's headline figures (the capacity law's collapse plot, the frontier, the argmax "
                   "capacity against d) as "
                   "PNG files in this folder, for a Markdown page such as the README (committed: docs/figures)")
@common.compact_option
def reproduce(names, scale, list_only, plan_only, executor, workers, address, device, store_path, threads, group, verdicts_only, output,
              from_report, rebuild, results_path, segment_minutes, segments_only, smoke, figures_dir, compact):
    """Run the experiments behind docs/FINDINGS.md (all, or NAMES: an experiment or a group such as
    `frontier`) and judge each from the stored results."""
    from evalsuite import reproduce as rep

    if list_only:
        for e in rep.all_experiments():
            group = f", group {e.group}" if e.group else ""
            cpu = e.minutes["cpu"]
            cpu = (f"at cpu scale on 2 workers at most about {cpu[0]:g} min if every cell learns (early stops shorten "
                   f"it), about {cpu[1]:g} if none does (its 4x reruns; docs/PROJECTION.md)" if isinstance(cpu, tuple)
                   else f"about {cpu:g} min at cpu scale on 2 workers")
            click.echo(f"{e.name}  ({e.source}{group})\n    {e.finding}\n    expected: {cpu}; about "
                       f"{e.minutes['paper']:g} GPU-min at paper scale"
                       + (f"\n    retired (run only when named): {e.retired}" if e.retired else ""))
        return
    if segments_only:
        _segments(store_path, names, plan_only, verdicts_only, from_report, smoke, segment_minutes)
        return
    experiments = rep.select(names)
    if plan_only:
        for flag, given in (("--smoke", smoke), ("--verdicts-only", verdicts_only), ("--verdicts-from", from_report),
                            ("--rebuild-store", rebuild), ("--results", results_path), ("--figures", figures_dir),
                            ("--output", output)):
            if given:
                raise common.BadInput(f"{flag}: not with --plan (a plan runs and writes nothing)")
        from evalsuite.reproduce.plan import plan, render

        store = common.open_store(store_path)
        for line in render(*plan(experiments, scale, store), workers=workers or 1):
            click.echo(line)
        return
    # what running, judging and writing need (the report builder, matplotlib with it: about 2 s), after
    # the listing and the plan, which need none of it
    from evalsuite import files
    from evalsuite import sweep as sweeps
    from evalsuite.executors import get_executor
    from evalsuite.reports import builder
    from evalsuite.segments import read as recorded_segments

    if smoke:
        for flag, given in (("--verdicts-only", verdicts_only), ("--verdicts-from", from_report),
                            ("--results", results_path), ("--segment-minutes", segment_minutes),
                            ("--figures", figures_dir)):
            if given:
                raise common.BadInput(f"{flag}: not with --smoke (a smoke run trains a few steps a point and "
                                      "judges only those runs)")
        _smoke(experiments, scale, store_path, output, compact, executor=executor, workers=workers, device=device,
               address=address, threads=threads, group=group)
        return
    if rebuild and not from_report:
        raise common.BadInput("--rebuild-store: needs --verdicts-from REPORT (the report whose runs it holds)")
    if from_report:
        figures = _figures_folder(figures_dir, None)
        _verdicts_from(from_report, experiments, scale, results_path, names, rebuild, figures)
        return
    store = common.open_store(store_path, must_exist=verdicts_only)
    figures = _figures_folder(figures_dir, store.path)
    output = files.check_output(output or store.path.parent / "reports" / f"reproduce-{scale}.html", "--output",
                                store=store.path)
    results_paths = [files.check_output(store.path.parent / "reports" / f"RESULTS-{scale}.md", "--results", store=store.path)]
    if results_path:
        results_paths.append(files.check_output(results_path, "--results", store=store.path))
    if segment_minutes is not None and executor != "local":
        raise common.BadInput("--segment-minutes: works with --executor local only (Ray tasks cannot be held back)")
    segment_done = True
    if not verdicts_only:
        import time

        begin = time.monotonic()
        deadline = None if segment_minutes is None else begin + 60 * segment_minutes
        common.device_name(device)
        get_executor(executor, workers=workers, device=device, address=address, threads=threads, group=group)
        options = dict(store=store, executor=executor, workers=workers, device=device, address=address, threads=threads,
                       group=group, echo=click.echo, deadline=deadline)
        from evalsuite.segments import Segment

        with Segment(store, segment_minutes) as segment:
            segment_done = rep.run_experiments(
                experiments, scale, store, echo=click.echo, deadline=deadline, workers=workers or 1,
                run=lambda points, name, spec: sweeps.run_points(points, name=name, spec=spec, **options))
            segment.left_work = not segment_done
        click.echo(f"segment  {segment.segment_id} of this store (`--segments` lists them): "
                   f"{(time.monotonic() - begin) / 60:.1f} min wall"
                   + ("" if segment_done else "; ended before everything ran: run the same command again to resume"))
    verdicts = rep.verdicts(experiments, store, scale)
    width = max(len(v.name) for v in verdicts) + 1
    for v in verdicts:
        click.echo(f"{v.name:<{width}}{v.status.value.upper()}" + (f"  ({v.why})" if v.why else ""))
        for f in v.figures:
            click.echo(f"{'':<{width}}{f}")
    stored = rep.stored_runs(store)
    per_experiment = {e.name: rep.experiment_runs(e, scale, store, stored) for e in experiments}
    runs = list({r.run_id: r for rs in per_experiment.values() for r in rs}.values())
    analyses: dict[str, set[str]] = {}  # what each run's verdicts read of its analyses (a compact report keeps only that)
    for e in experiments:
        for r in per_experiment[e.name]:
            analyses.setdefault(r.run_id, set()).update(e.analyses)
    path = builder.write(runs, output, title=f"evalsuite: reproducing the literature ({scale} scale)",
                         probes=store.probes(), verdicts=verdicts, compact=compact, analyses=analyses,
                         members={name: sorted(r.run_id for r in rs) for name, rs in per_experiment.items()},
                         segments=_segments_now(recorded_segments(store)))
    click.echo(f"report   {path} ({path.stat().st_size / 2**20:.1f} MiB, {len(runs)} runs)")
    from evalsuite.reports.results_md import results_markdown

    import os

    shown_store = os.path.relpath(store.path) if store.path.is_relative_to(os.getcwd()) else str(store.path)
    text = results_markdown(verdicts, scale=scale, command=" ".join(["evalsuite reproduce", *names, f"--scale {scale}",
                                                                      f"--verdicts-only --store {shown_store}"]),
                            source=f"the results store {shown_store}")
    for target in results_paths:
        files.write_text(target, text)
        click.echo(f"results  {target}")
    _write_figures(figures, verdicts, per_experiment, store.probes())


def _segments_now(segments: list) -> list:
    """The segments as a report embeds them: one still running (another driver's, or this one's
    when the report is written inside it) ends, for the report, now, and says so."""
    import time

    now = time.time()
    return [s if s.ended_at is not None else s.model_copy(update={"ended_at": now, "status": "still running when the "
                                                                  "report was written"}) for s in segments]


def _segments(store_path, names, *others) -> None:
    """``--segments``: the store's segments, one line each, and their total wall time."""
    if names or any(others):
        raise common.BadInput("--segments: lists what the store holds; give it only --store")
    from evalsuite import segments as recorded

    store = common.open_store(store_path, must_exist=True)
    segments = recorded.read(store)
    if not segments:
        click.echo(f"no segment recorded in {store.path} (an invocation that runs something records one)")
        return
    for seg in segments:
        click.echo(seg.line())
    ended = [s.minutes for s in segments if s.minutes is not None]
    click.echo(f"total    {len(segments)} segment{'s' * (len(segments) != 1)}, {sum(ended):.0f} min wall"
               + (" (and one running)" if len(ended) < len(segments) else ""))


def _figures_folder(folder: str | None, store_path):
    """``--figures``: the folder, checked before any work starts (exit 2: a file, the store's own
    folders, not writable); None without the option."""
    if folder is None:
        return None
    from pathlib import Path

    from evalsuite import files
    from evalsuite.reports.figures import HEADLINES

    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        raise common.BadInput(f"--figures: {folder} is a file; give a folder (the figures are written into it)")
    for name in HEADLINES:
        files.check_output(path / f"{name}-figure.png", "--figures", store=store_path)
    return path


def _write_figures(folder, verdicts, runs_by_experiment, probes) -> None:
    """The headline figures of the experiments whose verdict judged its clauses (every cell it reads
    has runs, its control learned): a figure of part of a grid would read as a finding."""
    if folder is None:
        return
    from evalsuite.reports.figures import HEADLINES, headline_figures, write_figures

    heads = {name for names in HEADLINES.values() for name in names}
    complete = {v.name: runs_by_experiment.get(v.name, []) for v in verdicts if v.name in heads and v.checks}
    waiting = [v.name for v in verdicts if v.name in heads and not v.checks]
    if waiting:
        click.echo(f"figures  none drawn for {', '.join(waiting)}: its verdict has judged none of its clauses yet "
                   "(runs missing), and a figure of part of its grid would read as a finding")
    figures = headline_figures(complete, probes)
    for path, (_, title, _) in zip(write_figures(figures, folder), figures):
        click.echo(f"figure   {path} ({title})")
    if not figures:
        click.echo(f"figures  none written to {folder}: the experiments judged draw no headline figure (capacity-law, "
                   "the frontier, capacity-argmax and capacity-trained)")


def _verdicts_from(reports: tuple[str, ...], experiments, scale: str, results_path: str | None, names, rebuild: str | None,
                   figures=None) -> None:
    from pathlib import Path

    from evalsuite import files
    from evalsuite.reports import builder
    from evalsuite.reports.results_md import results_markdown
    target = files.check_output(results_path, "--results") if results_path else None
    if rebuild and Path(rebuild).expanduser().exists():
        raise common.BadInput(f"--rebuild-store: {rebuild} exists; give a new path (a store is never written over)")
    from evalsuite.imports import merge

    data = merge([(r, builder.read_embedded(r)) for r in reports])
    report = " and ".join(reports)
    given = " ".join(f"--verdicts-from {r}" for r in reports)
    shown = {v.name: v.status.value for v in data["verdicts"]} or data["shown"]
    runs_of = {e.name: _members(data, e, scale) for e in experiments}
    verdicts = [e.judge(runs_of[e.name], data["probes"], scale) for e in experiments]
    no_curve = sum(not r.history for r in data["runs"])
    if no_curve or data["conflicts"]:
        click.echo(f"runs     {len(data['runs'])} from {report}"
                   + (f"; {no_curve} without a learning curve (their report did not carry it: read, never drawn)"
                      if no_curve else "")
                   + (f"; {data['conflicts']} held by several reports with copies that differ (the copy with a curve "
                      "kept, else the first report's)" if data["conflicts"] else ""))
    width = max(len(v.name) for v in verdicts) + 1
    for v in verdicts:
        was = shown.get(v.name)
        click.echo(f"{v.name:<{width}}{v.status.value.upper()}" + (f"  (the report: {was})" if was else "")
                   + (f"  ({v.why})" if v.why else ""))
    if target:
        files.write_text(target, results_markdown(
            verdicts, scale=scale, shown=shown, shown_label="as the report showed it (the rules it was made with)",
            source=f"the runs embedded in {report}", title=f"The runs of {report} judged by this version's rules",
            command=f"evalsuite reproduce {' '.join(names)} {given}".replace("  ", " ")))
        click.echo(f"results  {target}")
    _write_figures(figures, verdicts, runs_of, data["probes"])
    if rebuild:
        store = _rebuild(Path(rebuild).expanduser(), data)
        click.echo(f"store    {store.path} ({len(data['runs'])} runs and {len(data['segments'])} segment{'s' * (len(data['segments']) != 1)} from {report}; "
                   "judge them with "
                   f"`evalsuite reproduce {' '.join(names)} --verdicts-only --store {store.path}`)".replace("  --", " --"))


def _rebuild(path, data):
    """A new store at ``path`` holding the report's runs and probes, all or nothing: it is built in
    a temporary file beside ``path`` and renamed there only once complete, so an interrupted
    rebuild leaves no store (and the same command starts it again)."""
    import os
    from pathlib import Path

    from evalsuite.errors import Interrupted
    from evalsuite.reproduce.runner import import_runs
    from evalsuite.segments import restore
    from evalsuite.store import Store

    common.open_store(str(path))  # the checks a store path gets (a folder, another program's file)
    partial = path.with_name(f".{path.name}.rebuilding-{os.getpid()}")
    try:
        store = Store(partial, option="--rebuild-store")
        import_runs(store, data["runs"], data["probes"])
        restore(store, data["segments"])
        with store.connect() as conn:  # fold the write-ahead log in, so that the one file is the store
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(partial, path)
    except BaseException as exc:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)
        if isinstance(exc, (KeyboardInterrupt, Interrupted)):
            raise Interrupted(f"the rebuild of {path} stopped before it was complete, so no store was written "
                              "(run the same command again to rebuild it)") from None
        raise
    for leftover in (Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    return Store(path, option="--rebuild-store")


def _members(data: dict, experiment, scale: str) -> list:
    """The runs a report's store judged ``experiment`` from, as the report embeds them; where it
    does not say (a report written before it did, or not by ``reproduce``), the experiment's members
    among the runs it holds (``Experiment.members``)."""
    ids = data["members"].get(experiment.name)
    if ids is None:
        return experiment.members(data["runs"], scale)
    ids = set(ids)
    return [r for r in data["runs"] if r.run_id in ids]


def _smoke(experiments, scale: str, store_path, output, compact: bool, **executor) -> None:
    import time

    from evalsuite import files
    from evalsuite import sweep as sweeps
    from evalsuite.executors import get_executor
    from evalsuite.reports import builder
    from evalsuite.reproduce import smoke
    from evalsuite.store import Store

    if store_path is None:
        store_path = str(Store(None).path.parent / "smoke" / "evalsuite.db")
    store = common.open_store(store_path)
    output = files.check_output(output or store.path.parent / "reports" / f"reproduce-{scale}-smoke.html", "--output",
                                store=store.path)
    common.device_name(executor["device"])
    get_executor(executor["executor"], **{k: v for k, v in executor.items() if k != "executor"})  # refuse bad options first
    begin = time.monotonic()
    verdicts, runs = smoke.run_smoke(experiments, scale, store, echo=click.echo, run=lambda points, name, spec: sweeps.run_points(
        points, name=name, spec=spec, store=store, echo=click.echo, **executor))
    click.echo(f"smoke    {(time.monotonic() - begin) / 60:.1f} min wall, {len(runs)} runs, "
               f"{sum(not r.ok for r in runs)} not done")
    width = max(len(v.name) for v in verdicts) + 1
    for v in verdicts:
        click.echo(f"{v.name:<{width}}{v.status.value.upper()} [{smoke.LABEL}]" + (f"  ({v.why})" if v.why else ""))
    path = builder.write(runs, output, title=f"SMOKE RUN, not results: evalsuite reproduce ({scale} scale), "
                         f"{smoke.LABEL}", probes=store.probes(), verdicts=verdicts, compact=compact)
    click.echo(f"report   {path} ({path.stat().st_size / 2**20:.1f} MiB, {len(runs)} runs; {smoke.LABEL})")
