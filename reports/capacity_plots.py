"""The argmax capacity plots (``sections/capacity_argmax.py``): capacity against the state's size
on log-log axes with both laws drawn, and trained models' accuracy against D over the probe's n*
at their (d_k, d_v), beside the probe's own curve."""
from __future__ import annotations

import pandas as pd

from .plots import MARKERS, _axes, to_uri


def capacity_against_d(points: pd.DataFrame, laws: pd.DataFrame, *, title: str, fmt: str = "png") -> str:
    """n* against d (d_k = d_v = d; the squared-error control at d_key = d) on log-log axes, one
    marker per ``series`` with its seeds' range as an error bar (``lo``, ``hi``), and each law of
    ``laws`` (columns d, n, law) as a line: the argmax law d^2 / (2 ln n) against squared error's d.
    One axes per vocabulary the trained probes ran at (``panel``; the calibration and the control
    with the first), so that no axes holds more series than the plotting rules allow."""
    panels = list(dict.fromkeys(points["panel"])) if "panel" in points and len(points) else [None]
    fig, axes = _axes(len(panels), 6.4, 3.8)
    for ax, panel in zip(axes, panels):
        part_all = points if panel is None else points[points["panel"] == panel]
        for i, (name, part) in enumerate(part_all.groupby("series", sort=True)):
            part = part.sort_values("d")
            err = [part.n - part.lo, part.hi - part.n]
            ax.errorbar(part.d, part.n, yerr=err, marker=MARKERS[i % len(MARKERS)], ms=6, lw=1, capsize=2, label=name)
        for style, (name, part) in zip(("--", ":"), laws.groupby("law", sort=False)):
            ax.plot(part.d, part.n, color="black", ls=style, lw=1, label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set(title=title + (f": {panel}" if panel else ""), xlabel="state side d (d_k = d_v = d; the control: d_key)",
               ylabel="pairs held n* (read back at >= 0.9)")
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return to_uri(fig, fmt)


def accuracy_over_probe(trained: pd.DataFrame, probe: pd.DataFrame, *, title: str, fmt: str = "png") -> str:
    """Accuracy against D / n*_probe (log 2), one axes per memory (``label``), one line per trained
    ``series`` (filled at the base budget, hollow at longer ones: ``long``), the probe's own accuracy
    against n / n* in grey and each D's floor dotted red, the 0.9 that defines n* dashed: curves that
    fall on the probe's when a trained model holds what the probe holds at its state."""
    labels = sorted(trained.label.unique())
    fig, axes = _axes(len(labels), 6.4, 3.3)
    for ax, label in zip(axes, labels):
        part_all = trained[trained.label == label]
        for i, (name, part) in enumerate(part_all[~part_all.long].groupby("series", sort=True)):
            part = part.sort_values("ratio")
            (line,) = ax.plot(part.ratio, part.accuracy, marker=MARKERS[i % len(MARKERS)], lw=1.2, label=name)
            hollow = part_all[part_all.long & (part_all.series == name)]
            ax.plot(hollow.ratio, hollow.accuracy, marker=MARKERS[i % len(MARKERS)], ls="none", mfc="none",
                    color=line.get_color(), label="_nolegend_")
            ax.plot(part.ratio, part["floor"], color=line.get_color(), ls=":", lw=0.8,  # its own floor at each D
                    label="floor of each (no-memory reader), dotted" if i == 0 else "_nolegend_")
        for j, (_, p) in enumerate(probe[probe.label == label].groupby("state", sort=True)):
            p = p.groupby("ratio").accuracy.mean().reset_index()
            ax.plot(p.ratio, p.accuracy, color="grey", lw=2, alpha=0.6,
                    label="the probe at each state (one memory layer)" if j == 0 else "_nolegend_")
        ax.axhline(0.9, color="black", lw=0.6, ls="--", label="_nolegend_")
        ax.set_xscale("log", base=2)
        ax.set_ylim(-0.02, 1.04)
        ax.set(title=f"{title}: {label}", ylabel="accuracy")
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1].set_xlabel("pairs in context / the probe's n* at the same (d_k, d_v)  (hollow: longer budgets; "
                        "dashed: 0.9)")
    return to_uri(fig, fmt)
