"""The expected run time printed after the first timed steps: what is left at the measured pace."""
from evalsuite.train.loop import expected_line


def test_expected_time_is_the_steps_left_at_the_measured_pace():
    line = expected_line(left=1_775, timed=100, seconds=10.0, step=100)  # 10 steps/s: 177.5 s left
    assert "about 3.0 min more for the 1,775 steps" in line and "10 steps/s over steps 1-100" in line
    assert "about 45 s more" in expected_line(left=450, timed=100, seconds=10.0, step=100)
