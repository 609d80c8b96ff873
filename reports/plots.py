"""Plots for the reports, returned as data: URIs (PNG by default, SVG for publication)."""
from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from evalsuite.records import TARGET_ACCURACY

sns.set_theme(style="whitegrid", context="notebook", font_scale=0.85)
TARGET = TARGET_ACCURACY
DPI = 80


PNG_COLORS = 128  # a palette PNG is a third to a quarter of the size; plots have few colours


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


def to_uri(fig, fmt: str = "png") -> str:
    if overlaps(fig):
        place_legends(fig)
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


def lines(df: pd.DataFrame, x: str, y: str, hue: str, *, title: str, xlabel: str, ylabel: str = "accuracy",
          logx: bool = False, target: bool = True, knees: dict | None = None, floor: str | None = None,
          fmt: str = "png") -> str:
    """One line per ``hue`` (mean over duplicates), the 0.99 line dashed, knees as markers, and with
    ``floor`` (a column) each series' floor dotted in grey, labelled once."""
    fig, ax = plt.subplots(figsize=(5.2, 3.3))
    sns.lineplot(data=df, x=x, y=y, hue=hue, marker="o", errorbar=None, ax=ax)
    if floor and floor in df and df[floor].notna().any():
        for i, (_, part) in enumerate(df.dropna(subset=[floor]).groupby(hue)):
            part = part.groupby(x)[floor].mean().reset_index()
            ax.plot(part[x], part[floor], color="grey", lw=0.9, ls=":", label="floor (no-memory reader)" if i == 0 else None)
    if target:
        ax.axhline(TARGET, color="grey", lw=0.9, ls="--", label=f"{TARGET}")
        ax.set_ylim(-0.02, 1.04)
    for label, (kx, ky) in (knees or {}).items():
        ax.plot([kx], [ky], marker="v", ms=10, color="black", zorder=5)
        ax.annotate(f"knee {kx:g}", (kx, ky), textcoords="offset points", xytext=(4, -14), fontsize=8)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7, frameon=False, loc="best")
    return to_uri(fig, fmt)


def frontier(df: pd.DataFrame, front: pd.DataFrame, *, title: str, fmt: str = "png") -> str:
    """Accuracy against state size (log scale), one line per ``model``, the Pareto frontier dashed."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    sns.lineplot(data=df.sort_values("state"), x="state", y="accuracy", hue="model", marker="o", errorbar=None, ax=ax)
    ax.step(front["state"], front["accuracy"], where="post", color="black", lw=1.2, ls="--", label="Pareto frontier")
    ax.axhline(TARGET, color="grey", lw=0.9, ls=":", label=f"{TARGET}")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.04)
    ax.set(title=title, xlabel="state size (floats per sequence)", ylabel="accuracy")
    ax.legend(fontsize=7, frameon=False, loc="best")
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
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    sns.barplot(data=df, x=x, y=y, hue=hue, errorbar=None, ax=ax)
    if logy:
        ax.set_yscale("log")
    ax.set(title=title, xlabel="", ylabel=ylabel)
    ax.legend(fontsize=7, frameon=False)
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
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


def training_curves(history: list[dict], fmt: str = "png") -> str | None:
    if not history:
        return None
    steps = [h["step"] for h in history]
    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(7.5, 2.4))
    ax_acc.plot(steps, [h.get("val_accuracy") for h in history], marker=".")
    ax_acc.axhline(TARGET, color="grey", lw=0.8, ls="--")
    ax_acc.set(xlabel="step", ylabel="val accuracy", ylim=(-0.02, 1.02))
    ax_loss.plot(steps, [h.get("train_loss") for h in history], marker=".", label="train")
    ax_loss.plot(steps, [h.get("val_loss") for h in history], marker=".", label="validation")
    ax_loss.set(xlabel="step", ylabel="loss")
    ax_loss.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return to_uri(fig, fmt)


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


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


def collapse(df: pd.DataFrame, *, title: str, fmt: str = "png") -> str:
    """Accuracy against D / d' (log 2), one line per ``series`` (distinct markers, legend outside the
    axes), and the law accuracy = min(1, d' / D) dashed: curves that fall together on it when a
    fixed state holds d' pairs."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, (name, part) in enumerate(df.groupby("series", sort=True)):
        part = part.sort_values("ratio")
        ax.plot(part.ratio, part.accuracy, marker=MARKERS[i % len(MARKERS)], lw=1.2, label=name)
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
