"""`evalsuite list`: tasks, models, feature maps and presets, with their parameters."""
from __future__ import annotations

import click

from evalsuite.cli.app import main
from evalsuite.cli.catalogue import KINDS as LISTABLE


@main.command(name="list")
@click.argument("what", required=False, type=click.Choice(LISTABLE))
def list_(what):
    """List tasks, models, feature maps or presets (all of them when WHAT is omitted)."""
    from evalsuite.cli import catalogue

    listing = catalogue.read()  # the built-ins, without importing torch, while their sources are unchanged
    for kind in ([what] if what else LISTABLE):
        click.echo(f"{kind}:")
        for line in (listing[kind] if listing else catalogue.live_listing(kind)):
            click.echo(f"  {line}")
