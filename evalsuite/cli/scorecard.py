"""`evalsuite scorecard MAP`: one feature map measured on what a fixed state loses, beside the
baselines the package ships (``evalsuite.scorecard``)."""
from __future__ import annotations

import json
import re
import sys

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


def check_map(ref: str) -> None:
    """A usable map, before any work: it loads, is a feature map, and builds the scorecard's model."""
    from evalsuite.models.feature_maps import get
    from evalsuite.scorecard import measure

    hint = "a registered name (`evalsuite list feature-maps`) or path/to/file.py:Class"
    try:
        fmap = get(ref, measure.MQAR_STATE)
    except Exception as exc:  # a name, file or class that does not load
        raise common.BadInput(f"MAP: {ref!r} cannot be scored: {' '.join(str(exc).split())} ({hint})") from None
    if not fmap.nonnegative:
        raise common.BadInput(f"MAP: {ref!r} is not nonnegative (phi(q).phi(k) can be below 0), so linear attention "
                              f"cannot normalise by it; the scorecard scores maps that can")
    try:
        measure.mqar_configs(ref, seeds=(0,), rates=measure.MQAR_RATES[:1])[0].model.build(256)
    except Exception as exc:  # a map the model refuses
        raise common.BadInput(f"MAP: {ref!r} cannot be scored: {' '.join(str(exc).split())}") from None


@main.command("scorecard")
@click.argument("feature_map", metavar="MAP")
@click.option("--quick", is_flag=True,
              help="a smoke: one seed and a few steps per probe and run (about a minute): checks that the map runs "
                   "through every measurement; its figures are not results")
@click.option("--json", "as_json", is_flag=True, help="print the map's figures, the baselines' and each comparison as JSON")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="the HTML page [default: scorecard-MAP.html in the store's reports/ folder]")
@click.option("--baselines", "baselines_path", default=None, type=click.Path(exists=True, dir_okay=False),
              help="a baselines file [default: the package's, made by `python -m evalsuite.scorecard.baselines`]")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64), help="MQAR runs trained at once")
@click.option("--again", is_flag=True, help="measure again rather than reuse this map's stored scorecard "
                                            "(its MQAR runs are still read from the store)")
@common.store_option
@common.device_option
def scorecard(feature_map, quick, as_json, output, baselines_path, workers, again, store_path, device):
    """Score a feature map (MAP: a registered name or path/to/file.py:Class) beside elu+1, DPFP,
    Performer, Taylor (Based) and softmax: its capacity (the squared-error and argmax probes at
    (d_k, d_v) = (8, 8) and (16, 16); MQAR accuracy where the state binds, three seeds), the
    interference of its keys, the sharpness of its weights and its cost. Writes one HTML page;
    about 10 minutes on 2 cores, `--quick` about one. A second call reads the stored scorecard."""
    from evalsuite import files
    from evalsuite.environment import resolve_device
    from evalsuite.reports import scorecard as page
    from evalsuite.scorecard.card import load_baselines
    from evalsuite.scorecard.score import cached, describe, score

    try:
        resolve_device(device)
    except ValueError as exc:
        raise common.BadInput(str(exc)) from None
    check_map(feature_map)
    try:
        baselines = load_baselines(baselines_path)
    except (OSError, ValueError) as exc:
        raise common.BadInput(f"--baselines: not a baselines file: {exc}") from None
    store = common.open_store(store_path)
    label = describe(feature_map)[0]
    slug = re.sub(r"[^A-Za-z0-9_.@-]+", "-", label)
    path = files.check_output(output or store.path.parent / "reports" / f"scorecard-{slug}{'-quick' * quick}.html",
                              "--output", store=store.path)
    echo = (lambda m: click.echo(m, err=True)) if as_json else click.echo
    card = None if again else cached(feature_map, store, quick=quick)
    if card is not None:
        echo(f"{label}: the stored scorecard (measured in {card.seconds:.0f} s; --again measures it again)")
    else:
        card = score(feature_map, store, quick=quick, workers=workers, device=device, echo=echo)
    files.write_text(path, page.render(card, baselines))
    if as_json:
        json.dump(page.as_json(card, baselines), sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        click.echo(f"scorecard: {path}")
