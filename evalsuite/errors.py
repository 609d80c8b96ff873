"""The errors the command line turns into one ``Error:`` line (tracebacks only with ``--debug``).

``UserError``: bad input, refused before any work starts (exit status 2); every other exception
the suite raises on purpose derives from ``EvalsuiteError`` (exit status 1), so the command line
needs one error path. A run that fails is not an exception: its record says so, and the command
exits 1.
"""
from __future__ import annotations


class EvalsuiteError(Exception):
    """Base of every error evalsuite raises on purpose."""

    exit_code = 1


class UserError(EvalsuiteError, ValueError):
    """Invalid input: the message names the parameter and what is allowed."""

    exit_code = 2


class ConfigError(UserError):
    """An invalid run configuration (``--set``, a preset, a sweep point); the message names the
    parameter and what is allowed."""


class Interrupted(BaseException):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that runs are recorded as interrupted."""


def did_you_mean(word: str, choices) -> str:
    """`` Did you mean 'x'?`` for the closest of ``choices`` (``difflib``), or an empty string."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=2, cutoff=0.6)
    return f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
