"""The scorecard page: its first screen a table of the map against every baseline (better or worse
marked only where the comparison rule decides it), then one figure per question, then how each
figure was made; the page embeds the same data `evalsuite scorecard --json` prints."""
from __future__ import annotations

import json
import re

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from evalsuite.scorecard.card import METRICS, QUESTIONS, Baselines, Card, compare

from . import plots
from .builder import _env

MARKS = {"better": "\u25b2", "worse": "\u25bc"}   # the map is better / worse than this baseline


def below_floor(f, setting: str) -> bool:
    """An accuracy below the floor its setting names (the best reader with no memory of the pairs)."""
    floor = re.search(r"floor ([0-9.]+)", setting)
    return floor is not None and f is not None and f.mean is not None and f.mean < float(floor.group(1))


def shown(f, setting: str) -> str:
    """A figure as its cell shows it, "< floor" where it is below its floor."""
    return "-" if f is None else f.text() + (" < floor" if below_floor(f, setting) else "")


def table(card: Card, baselines: list[Card]) -> list[dict]:
    """One row per (metric, setting) the map or a baseline measured: the map's figure, then each
    baseline's with the comparison of the map against it."""
    rows = []
    keys = list(dict.fromkeys(card.rows() + [k for b in baselines for k in b.rows()]))
    for metric, setting in sorted(keys, key=lambda k: (QUESTIONS.index(METRICS[k[0]].question), list(METRICS).index(k[0]))):
        mine = card.figure(metric, setting)
        cells = []
        for b in baselines:
            theirs = b.figure(metric, setting)
            # two figures below the floor differ in no memory: nothing to mark between them
            mark = None if below_floor(mine, setting) and below_floor(theirs, setting) else compare(mine, theirs)
            cells.append({"text": shown(theirs, setting), "mark": mark,
                          "note": theirs.note if theirs else ""})
        m = METRICS[metric]
        rows.append({"question": m.question, "label": m.label, "setting": setting, "unit": m.unit,
                     "direction": "" if m.higher_better is None else "higher is better" if m.higher_better else "lower is better",
                     "mine": shown(mine, setting), "note": mine.note if mine else "", "cells": cells})
    return rows


def figure(cards: list[Card], question: str, fmt: str = "png") -> str | None:
    """One panel per (metric, setting) of ``question``: each map's seeds as dots and their mean as a
    bar, the floor dotted where the setting names one, a bound (a probe's grid ended first) marked."""
    rows = [{"map": c.label, "panel": f"{METRICS[f.metric].label}\n{f.setting}", "value": v, "seed": s,
             "censored": f.censored}
            for c in cards for f in c.figures if METRICS[f.metric].question == question
            for s, v in f.seeds.items() if v is not None]
    if not rows:
        return None
    df = pd.DataFrame(rows)
    panels = list(dict.fromkeys(df.panel))
    order = [c.label for c in cards]
    cols = min(3, len(panels))
    n_rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(4.2 * cols, 2.9 * n_rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        part = df[df.panel == panel]
        sns.barplot(data=part, x="map", y="value", order=order, errorbar=None, color="#c9d6e8", ax=ax)
        sns.stripplot(data=part, x="map", y="value", order=order, color="#1f3b63", size=4, jitter=0.15, ax=ax)
        if (floor := re.search(r"floor ([0-9.]+)", panel)):
            ax.axhline(float(floor.group(1)), color="grey", ls=":", lw=1)
            ax.text(len(order) - 0.5, float(floor.group(1)), "floor", fontsize=7, color="grey", ha="right", va="bottom")
        for i, name in enumerate(order):  # a bound: the probe's grid ended before the map failed
            bound = part[(part["map"] == name) & (part["censored"] != "")]  # part.map is DataFrame.map
            if not bound.empty:
                ax.set_ylim(top=max(ax.get_ylim()[1], 1.15 * part.value.max()))
                ax.text(i, bound.value.max(), "\u2265" if bound.censored.iloc[0] == "above" else "\u2264", ha="center",
                        va="bottom", fontsize=10, fontweight="bold", color="#9a6700")
        ax.set(title=panel, xlabel="", ylabel="")
        ax.title.set_fontsize(9)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    return plots.to_uri(fig, fmt)


def render(card: Card, baselines: Baselines, fmt: str = "png") -> str:
    cards = [card] + baselines.cards
    data = {"map": card.model_dump(), "baselines": baselines.model_dump()}
    return _env.get_template("scorecard.html.j2").render(
        card=card, baselines=baselines, rows=table(card, baselines.cards), marks=MARKS,
        figures=[(q, figure(cards, q, fmt)) for q in QUESTIONS],
        data=json.dumps(data, default=str).replace("</", "<\\/"))


def as_json(card: Card, baselines: Baselines) -> dict:
    """What `--json` prints: the map's card, the baselines' and each comparison the page marks."""
    return {"map": card.model_dump(), "baselines": baselines.model_dump(exclude={"cards"}),
            "cards": [b.model_dump() for b in baselines.cards],
            "comparisons": [{"metric": r["label"], "setting": r["setting"], "against": b.label, "map": r["mine"],
                             "baseline": cell["text"], "result": cell["mark"]}
                            for r in table(card, baselines.cards) for b, cell in zip(baselines.cards, r["cells"])]}
