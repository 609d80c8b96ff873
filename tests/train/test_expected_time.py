"""The expected run time printed after the first timed steps: what is left at the measured pace."""
from evalsuite.train.loop import expected_line


def test_expected_time_is_the_steps_left_at_the_measured_pace():
    line = expected_line(left=1_775, timed=100, seconds=10.0, step=100)  # 10 steps/s: 177.5 s left
    assert "about 3.0 min more for the 1,775 steps" in line and "10 steps/s over steps 1-100" in line
    assert "about 45 s more" in expected_line(left=450, timed=100, seconds=10.0, step=100)


def test_a_terminal_that_reports_no_size_still_shows_the_bar(monkeypatch):
    """A pseudo-terminal nobody sized reports 0 x 0; tqdm then hides the bar (its row is below a
    screen of 0 lines) and only the expected time was printed. Such a terminal gets a fixed size."""
    import os

    from evalsuite.train import progress

    monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((0, 0)))
    bar = progress.progress_bar(10, True, "x")
    assert (bar.ncols, bar.nrows, bar.dynamic_ncols) == (100, 24, False)
    bar.close()
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((120, 40)))
    bar = progress.progress_bar(10, True, "x")
    assert bar.dynamic_ncols
    bar.close()
