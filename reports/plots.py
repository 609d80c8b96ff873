"""Plots for the reports, returned as data: URIs (PNG by default, SVG for publication).

Every figure passes the plotting rules when it is drawn (``plot_rules``, checked in ``to_uri``):
at most eight series per axes (builders facet), legends outside the data, a floor on every
accuracy axis, log axes only over data that span them.
"""
from __future__ import annotations

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from evalsuite.records import TARGET_ACCURACY

from .plot_rules import (  # noqa: F401 - the rules are part of this module's interface
    MARKERS, MAX_SERIES, NO_FLOOR, PlotRuleWarning, _series, enforce, overlaps, place_legends, violations)

sns.set_theme(style="whitegrid", context="notebook", font_scale=0.85)
TARGET = TARGET_ACCURACY
DPI = 80


PNG_COLORS = 128  # a palette PNG is a third to a quarter of the size; plots have few colours


def to_uri(fig, fmt: str = "png") -> str:
    enforce(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI, bbox_inches="tight", metadata=None if fmt == "png" else {"Date": None})
    plt.close(fig)
    data = buf.getvalue()
    if fmt == "png":
        from PIL import Image  # matplotlib's own dependency

        image = Image.open(io.BytesIO(data)).convert("RGB").quantize(colors=PNG_COLORS, method=Image.Quantize.MEDIANCUT)
        small = io.BytesIO()
        image.save(small, format="PNG", optimize=True)
        data = small.getvalue()
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def facets(levels, size: int = MAX_SERIES) -> list[list]:
    """``levels`` in groups of at most ``size`` (one axes each), as even as they go."""
    levels = list(levels)
    k = max(1, math.ceil(len(levels) / size))
    per = math.ceil(len(levels) / k) if levels else 0
    return [levels[i:i + per] for i in range(0, len(levels), per)] or [[]]


def _axes(n: int, width: float, height: float):
    """``n`` axes stacked vertically (a facet each), sharing the y axis."""
    fig, axes = plt.subplots(n, 1, figsize=(width, height * n), sharey=True, squeeze=False)
    return fig, list(axes[:, 0])


def _sd_bands(ax, df: pd.DataFrame, x: str, y: str, hue: str) -> None:
    """Each series' spread over seeds, +- 1 sd shaded in its colour: from the ``{y}_std`` column a
    summary row carries (its seeds' sd), else from the rows that share an x (one per seed)."""
    colours = {label: h.get_color() for h, label in zip(*ax.get_legend_handles_labels()) if hasattr(h, "get_color")}
    for name, part in df.groupby(hue):
        if name not in colours:
            continue
        if f"{y}_std" in part and part[f"{y}_std"].notna().any():
            g = part.groupby(x).agg(mean=(y, "mean"), sd=(f"{y}_std", "mean")).reset_index()
        else:
            g = part.groupby(x)[y].agg(["mean", "std"]).reset_index().rename(columns={"std": "sd"})
        g = g.dropna(subset=["sd"]).sort_values(x)
        if len(g) >= 2 and (g.sd > 0).any():
            ax.fill_between(g[x], g["mean"] - g.sd, g["mean"] + g.sd, color=colours[name], alpha=0.15, lw=0,
                            label="_nolegend_")


def _floor_lines(ax, df: pd.DataFrame, x: str, hue: str, floor: str | None) -> None:
    """Each series' floor dotted in grey, labelled once."""
    if not floor:
        return
    if floor not in df or not df[floor].notna().any():
        ax.text(0.01, 0.01, NO_FLOOR, transform=ax.transAxes, fontsize=6.5, color="#cf222e")
        return
    for i, (_, part) in enumerate(df.dropna(subset=[floor]).groupby(hue)):
        part = part.groupby(x)[floor].mean().reset_index().sort_values(x)
        ax.plot(part[x], part[floor], color="grey", lw=0.9, ls=":", label="floor (no-memory reader)" if i == 0 else None)


def _integers(values: pd.Series) -> bool:
    """An axis of whole numbers (pairs, lengths, widths), which gets whole-number ticks."""
    v = pd.to_numeric(values, errors="coerce").dropna()
    return bool(len(v)) and bool(((v - v.round()).abs() < 1e-9).all())


def lines(df: pd.DataFrame, x: str, y: str, hue: str, *, title: str, xlabel: str, ylabel: str = "accuracy",
          logx: bool = False, target: bool = True, knees: dict | None = None, floor: str | None = None,
          fmt: str = "png") -> str:
    """One line per ``hue`` (mean over duplicates, a marker each), faceted into axes of at most
    ``MAX_SERIES`` series; the target line dashed, knees as markers, and with ``floor`` (a column)
    each series' floor dotted in grey, labelled once."""
    groups = facets(sorted(df[hue].unique(), key=str))
    fig, axes = _axes(len(groups), 5.2, 3.3)
    for k, (ax, group) in enumerate(zip(axes, groups)):
        part = df[df[hue].isin(group)]
        sns.lineplot(data=part, x=x, y=y, hue=hue, style=hue, hue_order=group, style_order=group, markers=MARKERS[:len(group)],
                     dashes=False, errorbar=None, ax=ax)
        _sd_bands(ax, part, x, y, hue)
        _floor_lines(ax, part, x, hue, floor)
        if target:
            ax.axhline(TARGET, color="grey", lw=0.9, ls="--", label=f"{TARGET}")
            ax.set_ylim(-0.02, 1.04)
        for label, (kx, ky) in (knees or {}).items():
            if label not in group:
                continue
            ax.plot([kx], [ky], marker="v", ms=10, color="black", zorder=5)
            ax.annotate(f"knee {kx:g}", (kx, ky), textcoords="offset points", xytext=(4, -14), fontsize=8)
        if logx:
            ax.set_xscale("log", base=2)
        elif _integers(part[x]):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # pairs, lengths, widths: never 15.5 and 16.5
        ax.set(title=title + (f" ({k + 1} of {len(groups)})" if len(groups) > 1 else ""), xlabel=xlabel, ylabel=ylabel)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return to_uri(fig, fmt)


def frontier(df: pd.DataFrame, front: pd.DataFrame, *, title: str, fmt: str = "png",
             long: pd.DataFrame | None = None) -> str:
    """Accuracy against state size (log scale), one line per ``series`` (faceted into axes of at
    most ``MAX_SERIES``), the Pareto frontier dashed on each, and the task's floor (``floor``
    column, the mean over the points) dotted. ``long``: the same points at 4x the budget (same
    columns), drawn hollow in their series' colour and joined to their base point by a dotted line."""
    long = long if long is not None else pd.DataFrame(columns=["series", "state", "accuracy"])
    groups = facets(sorted(df.series.unique(), key=str))
    fig, axes = _axes(len(groups), 6.4, 3.8)
    for k, (ax, group) in enumerate(zip(axes, groups)):
        for i, name in enumerate(group):
            part = df[df.series == name].sort_values("state")
            marker = MARKERS[i % len(MARKERS)]
            (line,) = ax.plot(part.state, part.accuracy, marker=marker, lw=1.2, label=name)
            for r in long[long.series == name].itertuples():
                ax.plot([r.state], [r.accuracy], marker=marker, ls="none", mfc="none", color=line.get_color(),
                        label="_nolegend_")
                base = part[part.state == r.state].accuracy
                if len(base):
                    ax.plot([r.state, r.state], [float(base.iloc[0]), r.accuracy], color=line.get_color(), lw=0.6,
                            ls=":", label="_nolegend_")
        if len(long[long.series.isin(group)]):
            ax.plot([], [], marker="o", ls="none", mfc="none", color="grey", label="4x the budget (hollow)")
        ax.step(front["state"], front["accuracy"], where="post", color="black", lw=1.2, ls="--", label="Pareto frontier")
        ax.axhline(TARGET, color="grey", lw=0.9, ls=":", label=f"{TARGET}")
        if "floor" in df and df["floor"].notna().any():
            level = float(df["floor"].mean())
            ax.axhline(level, color="#cf222e", lw=0.9, ls=":", label=f"floor {level:.3f} (no-memory reader)")
        else:
            ax.text(0.01, 0.01, NO_FLOOR, transform=ax.transAxes, fontsize=6.5, color="#cf222e")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.04)
        ax.set(title=title + (f" ({k + 1} of {len(groups)})" if len(groups) > 1 else ""),
               xlabel="state (floats per sequence, the mixers' as Zoology counts them)", ylabel="accuracy")
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return to_uri(fig, fmt)


def heatmap(matrix: pd.DataFrame, *, title: str, xlabel: str, ylabel: str, vmin=None, vmax=None,
            cmap: str = "viridis", annotate: bool = True, center=None, fmt: str = "png") -> str:
    size = max(3.0, min(7.0, 0.45 * max(matrix.shape)))
    fig, ax = plt.subplots(figsize=(size + 1.2, size * 0.8))
    sns.heatmap(matrix, vmin=vmin, vmax=vmax, cmap=cmap, center=center, ax=ax, square=False,
                annot=annotate and matrix.size <= 120, fmt=".2f", annot_kws={"fontsize": 7}, cbar_kws={"shrink": 0.8})
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return to_uri(fig, fmt)


def bars(df: pd.DataFrame, x: str, y: str, hue: str, *, title: str, ylabel: str, logy: bool = False,
         fmt: str = "png") -> str:
    """Bars of ``y`` per ``x``, one colour per ``hue``, faceted into axes of at most ``MAX_SERIES`` hues."""
    groups = facets(sorted(df[hue].unique(), key=str))
    fig, axes = _axes(len(groups), 5.2, 3.2)
    for k, (ax, group) in enumerate(zip(axes, groups)):
        sns.barplot(data=df[df[hue].isin(group)], x=x, y=y, hue=hue, hue_order=group, errorbar=None, ax=ax)
        if logy:
            ax.set_yscale("log")
        ax.set(title=title + (f" ({k + 1} of {len(groups)})" if len(groups) > 1 else ""), xlabel="", ylabel=ylabel)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    fig.tight_layout()
    return to_uri(fig, fmt)


def attention_row(weights: list[float], *, answer: int, reach: int, query: int, title: str, fmt: str = "png") -> str:
    """One graded query's weights over its context; the answer's positions shaded."""
    fig, ax = plt.subplots(figsize=(5.2, 2.6))
    ax.bar(range(len(weights)), weights, width=1.0, color="#4c72b0")
    ax.axvspan(answer - 0.5, min(answer + reach, query + 1) - 0.5, color="#dd8452", alpha=0.35,
               label="answer (+ conv reach)")
    ax.axvline(query, color="black", lw=0.8, ls=":", label="query")
    ax.set(title=title, xlabel="context position", ylabel="weight")
    ax.legend(fontsize=7, frameon=False)
    return to_uri(fig, fmt)


def training_curves(history: list[dict], floor: float | None = None, fmt: str = "png") -> str | None:
    """A run's small curves (the runs table's rows): validation accuracy with the target dashed and
    the task's floor dotted, and the losses."""
    if not history:
        return None
    steps = [h["step"] for h in history]
    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(7.5, 2.4))
    ax_acc.plot(steps, [h.get("val_accuracy") for h in history], marker=".")
    ax_acc.axhline(TARGET, color="grey", lw=0.8, ls="--")
    if floor is None:
        ax_acc.text(0.01, 0.01, NO_FLOOR, transform=ax_acc.transAxes, fontsize=6.5, color="#cf222e")
    else:
        ax_acc.axhline(floor, color="#cf222e", lw=0.8, ls=":")
        ax_acc.annotate(f"floor {floor:.3f}", (steps[0], floor), textcoords="offset points", xytext=(2, 3), fontsize=7,
                        color="#cf222e")
    ax_acc.set(xlabel="step", ylabel="val accuracy", ylim=(-0.02, 1.02))
    ax_loss.plot(steps, [h.get("train_loss") for h in history], marker=".", label="train")
    ax_loss.plot(steps, [h.get("val_loss") for h in history], marker=".", label="validation")
    ax_loss.set(xlabel="step", ylabel="loss")
    ax_loss.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return to_uri(fig, fmt)


def overlaid_curves(panels: dict, floors: dict, *, rows: str, cols: str, fmt: str = "png") -> str | None:
    """A sweep's learning curves in one figure: a panel per value of ``cols`` (sharing the y axis),
    a line per value of ``rows`` in each: the validation accuracy at each evaluated step, mean over
    the seeds the pivot read (its chosen rate), a band of +- 1 sd where two or more seeds reach that
    step; each panel's floor dotted. ``panels``: col -> {row: [history, ...]}; ``floors``: col -> floor."""
    panels = {c: {r: hs for r, hs in by_row.items() if any(hs)} for c, by_row in panels.items()}
    panels = {c: by_row for c, by_row in panels.items() if by_row}
    labels = sorted({r for by_row in panels.values() for r in by_row}, key=str)
    if not panels or len(labels) > MAX_SERIES:  # more lines than one axes reads: each run's curve is in its row
        return None
    colours = dict(zip(labels, sns.color_palette("tab10", max(len(labels), 1))))
    n = len(panels)
    per_row = min(n, 4)
    fig, axes = plt.subplots(math.ceil(n / per_row), per_row, figsize=(3.1 * per_row + 1.8, 2.7 * math.ceil(n / per_row)),
                             sharey=True, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (col, by_row) in zip(axes.flat, panels.items()):
        for row, histories in by_row.items():
            points = pd.DataFrame([p for h in histories for p in h or [] if p.get("val_accuracy") is not None])
            g = points.groupby("step").val_accuracy.agg(["mean", "std"]).fillna(0.0)  # one seed at a step: no band
            ax.plot(g.index, g["mean"], lw=1.3, color=colours[row], label=str(row))
            ax.fill_between(g.index, g["mean"] - g["std"], g["mean"] + g["std"], color=colours[row], alpha=0.18, lw=0)
        if (floor := floors.get(col)) is not None:
            ax.axhline(floor, color="#cf222e", lw=0.8, ls=":", label=f"floor {floor:.3f}")
        else:
            ax.text(0.01, 0.01, NO_FLOOR, transform=ax.transAxes, fontsize=6.5, color="#cf222e")
        ax.axhline(TARGET, color="grey", lw=0.8, ls="--", label=f"target {TARGET:g}")
        ax.set(title=f"{cols} = {col}", xlabel="step", ylim=(-0.02, 1.04))
        ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    for ax in axes[:, 0]:
        ax.set_ylabel("val accuracy")
    seen: dict[str, object] = {}  # one legend entry per row, from whichever panel drew it
    for ax in axes.flat[:n]:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            if not name.startswith(("floor", "target")):  # reference lines, drawn in every panel
                seen.setdefault(name, handle)
    fig.legend(list(seen.values()), list(seen.keys()), title=rows, loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False, fontsize=8, title_fontsize=8)
    fig.tight_layout()
    return to_uri(fig, fmt)


def run_curve(history: list[dict], *, floor: float | None, target: float, title: str, fmt: str = "png") -> str | None:
    """One run's validation accuracy against steps, its task's floor and the target drawn and
    labelled (the plateau at the floor is the pattern a recall curve is read by), and its losses."""
    if not history:
        return None
    steps = [h["step"] for h in history]
    fig, (ax, ax_loss) = plt.subplots(1, 2, figsize=(8.4, 2.9), gridspec_kw={"width_ratios": [3, 2]})
    ax.plot(steps, [h.get("val_accuracy") for h in history], marker=".", label="validation accuracy")
    ax.axhline(target, color="#1a7f37", lw=0.9, ls="--")
    ax.annotate(f"target {target:g}", (steps[0], target), textcoords="offset points", xytext=(2, -11), fontsize=7,
                color="#1a7f37")
    if floor is not None:
        ax.axhline(floor, color="#cf222e", lw=0.9, ls=":")
        ax.annotate(f"floor {floor:.3f} (no memory)", (steps[0], floor), textcoords="offset points", xytext=(2, 3),
                    fontsize=7, color="#cf222e")
    ax.set(xlabel="step", ylabel="validation accuracy", ylim=(-0.02, 1.04), title=title)
    ax_loss.plot(steps, [h.get("train_loss") for h in history], marker=".", label="train")
    ax_loss.plot(steps, [h.get("val_loss") for h in history], marker=".", label="validation")
    ax_loss.set(xlabel="step", ylabel="loss", title="loss")
    ax_loss.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return to_uri(fig, fmt)


def collapse(df: pd.DataFrame, *, title: str, fmt: str = "png", long: pd.DataFrame | None = None) -> str:
    """Accuracy against D / d' (log 2), one line per ``series`` (distinct markers, legend outside the
    axes), and the law accuracy = min(1, d' / D) dashed: curves that fall together on it when a
    fixed state holds d' pairs. ``long``: the same points at 4x the budget (same columns), drawn
    hollow in their series' colour and joined to their base point by a thin line: a point that
    moves is budget, not capacity."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    long = long if long is not None else pd.DataFrame(columns=["series", "ratio", "accuracy"])
    for i, (name, part) in enumerate(df.groupby("series", sort=True)):
        part = part.sort_values("ratio")
        (line,) = ax.plot(part.ratio, part.accuracy, marker=MARKERS[i % len(MARKERS)], lw=1.2, label=name)
        for r in long[long.series == name].itertuples():
            ax.plot([r.ratio], [r.accuracy], marker=MARKERS[i % len(MARKERS)], ls="none", mfc="none",
                    color=line.get_color(), label="_nolegend_")
            base = part[part.ratio == r.ratio].accuracy
            if len(base):
                ax.plot([r.ratio, r.ratio], [float(base.iloc[0]), r.accuracy], color=line.get_color(), lw=0.6,
                        ls=":", label="_nolegend_")
    if len(long):
        ax.plot([], [], marker="o", ls="none", mfc="none", color="grey", label="4x the budget (hollow)")
    if "floor" in df and df["floor"].notna().any():
        fl = df.dropna(subset=["floor"]).groupby("ratio")["floor"].mean().reset_index()
        ax.plot(fl.ratio, fl["floor"], color="#cf222e", ls=":", lw=1, label="floor (no-memory reader)")
    else:
        ax.text(0.01, 0.01, NO_FLOOR, transform=ax.transAxes, fontsize=6.5, color="#cf222e")
    lo, hi = float(df.ratio.min()), float(df.ratio.max())
    xs = [lo * (hi / lo) ** (k / 50) for k in range(51)] if hi > lo else [lo]
    ax.plot(xs, [min(1.0, 1 / x) for x in xs], color="black", ls="--", lw=1, label="law: min(1, d'/D)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.02, 1.04)
    ax.set(title=title, xlabel="pairs in context / key-side state size (D / d')", ylabel="accuracy")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return to_uri(fig, fmt)


def retrieved_against_d(df: pd.DataFrame, *, title: str, fmt: str = "png") -> str:
    """Pairs retrieved past d' against d', one marker per ``series``, the line retrieved = d' dashed."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (name, part) in enumerate(df.groupby("series", sort=True)):
        ax.plot(part.d_prime, part.retrieved, marker=MARKERS[i % len(MARKERS)], ls="none", ms=8, label=name)
    top = float(max(df.d_prime.max(), df.retrieved.max())) * 1.15
    ax.plot([0, top], [0, top], color="black", ls="--", lw=1, label="retrieved = d'")
    ax.set(xlim=(0, top), ylim=(0, top), title=title, xlabel="d' (key-side state size)",
           ylabel="pairs retrieved past d'")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return to_uri(fig, fmt)


def _middle(label: str, most: int) -> str:
    """``label`` within ``most`` characters, cut in the middle: a cell's label ends with what tells it
    from its neighbours (its D, its width), so the end stays."""
    if len(label) <= most:
        return label
    keep = most - 3
    return label[:keep - keep // 2] + "..." + label[-(keep // 2):]


def verdict_cells(cells: list[dict], *, fmt: str = "png") -> str | None:
    """A verdict's small figure: one row per cell it read, each seed's test accuracy at the chosen
    rate (filled), at 4x the budget (hollow), the mean (a bar) and the task's floor (a red tick)."""
    if not cells:
        return None
    n = len(cells)
    fig, ax = plt.subplots(figsize=(3.0, 0.6 + 0.24 * n))  # with its labels about 450 px: shown at its own size
    ys, shown = list(range(n))[::-1], set()

    def once(label: str) -> str | None:  # each legend entry once
        return None if label in shown or shown.add(label) else label

    for y, cell in zip(ys, cells):
        base, long = list(cell["seeds"].values()), list(cell["long"].values())
        ax.scatter(base, [y + 0.08] * len(base), s=14, color="#0969da", zorder=3,
                   label=once("seed (chosen rate)"))
        if long:
            ax.scatter(long, [y - 0.12] * len(long), s=16, facecolors="none", edgecolors="#8250df", zorder=3,
                       label=once("seed at 4x budget"))
        if base:
            ax.plot([sum(base) / len(base)] * 2, [y - 0.3, y + 0.3], color="#0969da", lw=1.2)
        if cell.get("floor") is not None:
            ax.plot([cell["floor"]] * 2, [y - 0.35, y + 0.35], color="#cf222e", lw=1.6,
                    label=once("floor (no-memory reader)"))
    ax.set_yticks(ys, [_middle(c["label"], 40) for c in cells], fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.6, n - 0.4)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("test accuracy", fontsize=8)
    ax.legend(fontsize=7.5, frameon=False, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, borderaxespad=0.2)
    return to_uri(fig, fmt)
