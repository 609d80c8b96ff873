"""A run's progress bar on a terminal, and the expected run time it prints once the first steps
are timed."""
from __future__ import annotations

EXPECT_AFTER = 100  # steps timed before the expected run time is printed


def expected_line(left: int, timed: int, seconds: float, step: int) -> str:
    """What is left, in time, at the pace of the last ``timed`` steps (their evaluations included)."""
    rest = left * seconds / max(timed, 1)
    when = f"{rest / 60:.1f} min" if rest >= 90 else f"{rest:.0f} s"
    return (f"expected: about {when} more for the {left:,} steps left of the budget ({timed / max(seconds, 1e-9):.0f} "
            f"steps/s over steps {step - timed + 1}-{step}; reaching the target stops it sooner)")


def progress_bar(total: int, show: bool, desc: str, initial: int = 0):
    from tqdm.auto import tqdm

    # a terminal nobody sized (a pseudo-terminal reporting 0 x 0: `script`, `docker exec`, some IDE
    # consoles) makes tqdm hide the bar (its row is "below the screen") and squeeze it to nothing:
    # after the expected time, nothing more was printed for minutes. Such a terminal gets a fixed size.
    sized = _terminal_sized()
    return tqdm(total=total, initial=initial, disable=not show, desc=desc, leave=True,  # stays on screen
                dynamic_ncols=sized, **({} if sized else {"ncols": 100, "nrows": 24}))


def _terminal_sized() -> bool:
    """Whether stderr's terminal reports a size (the bar then follows its width)."""
    import os
    import sys

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return size.columns > 0 and size.lines > 0
