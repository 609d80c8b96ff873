"""The plotting rules every report figure is checked against when it is drawn (``violations``,
from matplotlib's own extents and artists), and what mends a figure that breaks one (``enforce``):
at most ``MAX_SERIES`` data series per axes (builders facet instead), no legend over its axes or
title (moved outside when it would be), an accuracy axis always draws its task's floor, and a log
axis only where the data span at least ``LOG_SPAN`` (else it is drawn linear). A rule a figure
still breaks is a ``PlotRuleWarning`` (an error under the tests)."""
from __future__ import annotations

import math
import warnings

from evalsuite.records import TARGET_ACCURACY

MAX_SERIES = 8      # data series on one axes; more are faceted
LOG_SPAN = 8.0      # a log axis needs data spanning a factor of 8 or more (three doublings; a decade qualifies)
REFERENCE_LABELS = ("floor", "target", "law", "Pareto", "retrieved = d'", "knee", "4x the budget", f"{TARGET_ACCURACY}")


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]  # one per series of an axes
NO_FLOOR = "floor not recorded for these runs (made before floors were)"


class PlotRuleWarning(UserWarning):
    """A figure breaks one of the plotting rules (module docstring)."""


def _boxes_overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def overlaps(fig) -> list[str]:
    """What the plotting rules forbid, from matplotlib's own extents after a draw: a legend over
    its axes (the data) or over the axes' title."""
    if not any(ax.get_legend() is not None for ax in fig.axes):
        return []  # nothing to check: no draw
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for i, ax in enumerate(fig.axes):
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        if _boxes_overlap(box, ax.get_window_extent(renderer)):
            found.append(f"axes {i}: the legend overlaps the axes")
        if ax.get_title() and _boxes_overlap(box, ax.title.get_window_extent(renderer)):
            found.append(f"axes {i}: the legend overlaps the title")
    return found


def place_legends(fig) -> None:
    """Move every legend that overlaps its axes or title outside, to the right of the axes."""
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        handles, labels = ax.get_legend_handles_labels()
        if not handles:
            continue
        ax.legend(handles, labels, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0)


def _series(ax) -> list[str]:
    """The data series' labels of ``ax`` (reference lines such as the floor and the target excluded)."""
    return [lab for lab in ax.get_legend_handles_labels()[1] if not lab.startswith(REFERENCE_LABELS)]


def _has_floor(ax) -> bool:
    labelled = [a.get_label() for a in [*ax.lines, *ax.collections]]
    return any(str(lab).startswith("floor") for lab in labelled) or any("floor" in t.get_text() for t in ax.texts)


def _data_values(ax, axis: str) -> list[float]:
    """The positive data values along ``axis`` (x or y) of the axes' lines, markers and bars (lines
    in axes coordinates, such as ``axhline``, are not data)."""
    out: list[float] = []
    for line in ax.lines:
        if line.get_transform() != ax.transData:
            continue
        out += [float(v) for v in (line.get_xdata() if axis == "x" else line.get_ydata())]
    for coll in ax.collections:
        offsets = coll.get_offsets()
        if len(offsets):
            out += [float(v) for v in offsets[:, 0 if axis == "x" else 1]]
    for patch in ax.patches:
        if hasattr(patch, "get_height"):
            out.append(float(patch.get_height() if axis == "y" else patch.get_x()))
    return [v for v in out if v > 0 and math.isfinite(v)]


def _narrow_log_axes(ax) -> list[str]:
    found = []
    for axis in ("x", "y"):
        if getattr(ax, f"get_{axis}scale")() != "log":
            continue
        values = _data_values(ax, axis)
        if values and max(values) / min(values) < LOG_SPAN:
            found.append(axis)
    return found


def violations(fig) -> list[str]:
    """Every plotting rule ``fig`` breaks as drawn (module docstring); empty when it reads."""
    found = overlaps(fig)
    for i, ax in enumerate(fig.axes):
        n = len(_series(ax))
        if n > MAX_SERIES:
            found.append(f"axes {i}: {n} series on one axes (at most {MAX_SERIES}: facet instead)")
        if "accuracy" in (ax.get_ylabel() + " " + ax.get_xlabel()).lower() and not _has_floor(ax):
            found.append(f"axes {i}: an accuracy axis without its task's floor")
        for axis in _narrow_log_axes(ax):
            found.append(f"axes {i}: a log {axis} axis over data spanning less than {LOG_SPAN:g}x")
    return found


def enforce(fig) -> list[str]:
    """Mend what can be mended (legends moved outside, narrow log axes drawn linear), then warn of
    what is left; returns what is left."""
    if overlaps(fig):
        place_legends(fig)
    for ax in fig.axes:
        for axis in _narrow_log_axes(ax):
            getattr(ax, f"set_{axis}scale")("linear")
            label = getattr(ax, f"get_{axis}label")()
            getattr(ax, f"set_{axis}label")(label.replace(" (log scale)", ""))  # the label no longer says log
    left = violations(fig)
    for problem in left:
        title = next((ax.get_title() for ax in fig.axes if ax.get_title()), "untitled")
        warnings.warn(f"plot {title!r}: {problem}", PlotRuleWarning, stacklevel=3)
    return left


