"""The `evalsuite` command group: one-line errors with exit 2 for bad input, signals recorded as
interruptions. Each subcommand module adds its command to ``main``."""
from __future__ import annotations

import os
import signal
import sqlite3
import sys

import click

from evalsuite.version import __version__
from evalsuite.cli.common import os_message
from evalsuite.errors import EvalsuiteError, Interrupted


class Failure(click.ClickException):
    """One ``Error:`` line with the exit status of the error behind it."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def _raise_interrupted(signum, frame):
    raise Interrupted()


class Main(click.Group):
    """The one error path: messages instead of tracebacks, at the boundary of every command."""

    def invoke(self, ctx):
        from evalsuite.store import Store

        Store.claimed_any = False  # this command's claims: what an interruption would leave
        previous = None
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # SIGTERM ends a run like Ctrl-C: recorded
            try:
                previous = signal.signal(signal.SIGTERM, _raise_interrupted)
            except ValueError:  # not the main thread
                previous = None
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (KeyboardInterrupt, Interrupted) as exc:
            what = "Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"
            if isinstance(exc, Interrupted) and exc.args:  # the command said what the interruption left
                what = "Ctrl-C or SIGTERM"
                click.echo(f"Error: interrupted by {what}; {exc.args[0]}", err=True)
            elif ctx.invoked_subcommand in ("run", "sweep", "reproduce") and not Store.claimed_any:
                click.echo(f"Error: interrupted by {what} before any run started; nothing was recorded", err=True)
            elif ctx.invoked_subcommand in ("run", "sweep", "reproduce"):
                click.echo(f"Error: interrupted by {what}; unfinished runs are recorded as interrupted "
                           f"(run the same command again to resume)", err=True)
            else:  # report, analyze, export, ...: every file is written whole or not at all
                click.echo(f"Error: interrupted by {what}; no file was left half-written", err=True)
            sys.exit(130)
        except Exception as exc:
            if ctx.meta.get("debug") or os.environ.get("EVALSUITE_DEBUG") == "1":
                raise
            if isinstance(exc, EvalsuiteError):
                raise Failure(str(exc), exc.exit_code) from None
            if isinstance(exc, OSError):
                raise Failure(os_message(exc), 2) from None
            if isinstance(exc, sqlite3.DatabaseError):
                where = f" ({ctx.meta['store']})" if ctx.meta.get("store") else ""
                raise Failure(f"--store: the results store{where} cannot be used: {exc}", 2) from None
            if isinstance(exc, MemoryError):
                raise Failure("out of memory; use smaller sizes (the message above names them)", 1) from None
            if isinstance(exc, EOFError):  # click would print only "Aborted!"
                raise Failure(f"an input ended early (a truncated file?): {exc or 'end of file'}", 2) from None
            if isinstance(exc, RecursionError):
                raise Failure("an input nests too deeply to read; inputs nest at most a few dozen levels", 2) from None
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalsuite")
@click.option("--debug", is_flag=True, help="show tracebacks instead of one-line errors")
@click.pass_context
def main(ctx, debug) -> None:
    """evalsuite: does your sequence mixer actually remember?"""
    ctx.meta["debug"] = debug
