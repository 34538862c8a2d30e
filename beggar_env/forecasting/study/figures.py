"""The study's pictures, drawn in memory as PNG bytes from ``results.json`` as it holds
them: accuracy and log loss by cards played and by horizon, the reliability diagrams (all
outcomes and each), and the game lengths."""

import io
import textwrap
from pathlib import Path

import numpy as np

from .. import metrics

LOG_LOSS_SHOWN = 1.25  # the by-cards log-loss panels stop here (uniform is ln 3 = 1.10); curves above are named
LABEL_WIDTH = 44  # characters of a legend's line: the legends' room beside the panels (longer names wrap)


def palette(n):
    """``n`` distinct (colour, line style) pairs for the rows of a picture: tab20's 20 colours,
    the strong ones first, solid, then dashed, then dash-dotted (a row past them would be a
    row not drawn: refused)."""
    import matplotlib

    pairs = matplotlib.colormaps["tab20"].colors
    colours = [(colour, ls) for ls in ("-", "--", "-.") for colour in pairs[0::2] + pairs[1::2]]
    if n > len(colours):
        raise ValueError(f"{n} rows are more than a picture tells apart ({len(colours)})")
    return colours[:n]


def _style(name, colour):
    """How a forecaster's curve is drawn: the oracle dotted on top, so that Bayes (often 1.0 too) shows beneath."""
    if name == "oracle":
        return dict(color="black", ls=":", lw=2.0, zorder=5)
    color, ls = colour
    return dict(color=color, ls=ls, lw=2.2 if name.startswith("Bayes (Monte Carlo") else 1.3)


def _label(name):
    """A row's name in a legend, wrapped at :data:`LABEL_WIDTH` so that it stays beside the
    panels (a shorter name is itself)."""
    return textwrap.fill(name, LABEL_WIDTH)


def draw(results, out):
    """Pictures: accuracy and log loss against cards played, the reliability diagrams,
    and the game lengths, drawn in memory: {the file in ``out``: its PNG bytes}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    written = {}
    for n, block in results["players"].items():
        colors = palette(len(block["reports"]))
        fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
        above = []
        for report, color in zip(block["reports"], colors):
            curve, name = report["by_cards"], report["forecaster"]
            x = np.arange(len(curve["accuracy"])) * curve["bin"]
            for ax, metric in zip(axes, ("accuracy", "log_loss")):
                ax.plot(x, curve[metric], label=_label(name), **_style(name, color))
            if max(curve["log_loss"]) > LOG_LOSS_SHOWN:
                above.append(f"{name} ({min(curve['log_loss']):.1f}-{max(curve['log_loss']):.1f})")
        axes[1].set_ylim(0, LOG_LOSS_SHOWN)
        if above:
            axes[1].set_title("above the frame: " + ", ".join(above), fontsize=8)
        for ax, metric in zip(axes, ("accuracy", "log loss")):
            ax.set_xlabel("cards played so far")
            ax.set_ylabel(metric)
            ax.grid(alpha=0.3)
        fig.legend(*axes[0].get_legend_handles_labels(), fontsize=8, loc="center right")
        fig.suptitle(f"{n} players: forecasts by cards played (test positions, bins of 10 cards)")
        written[out / f"by_cards_{n}p.png"] = png(fig, rect=(0, 0, 0.82, 1))  # the legend on the right
        fig, ax = plt.subplots(figsize=(5.5, 5.5))
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        for report, color in zip(block["reports"], colors):
            curve, name = report["reliability"], report["forecaster"]
            ax.plot(curve["confidence"], curve["accuracy"], marker="o", ms=3, label=_label(name), **_style(name, color))
        ax.set(xlabel="confidence (top label)", ylabel="accuracy", title=f"{n} players: reliability (quantile bins)")
        ax.legend(fontsize=6)
        written[out / f"reliability_{n}p.png"] = png(fig)
        written[out / f"reliability_by_outcome_{n}p.png"] = _draw_outcomes(plt, colors, n, block)
        written[out / f"horizon_{n}p.png"] = _draw_horizon(plt, colors, n, block)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n, block in results["players"].items():
        counts = np.asarray(block["game_statistics"]["histogram_cards"], float)
        ax.plot(np.arange(len(counts)), counts / counts.sum(), lw=1, label=f"{n} players")
        if n == "2" and len(counts) > 60:
            peak = 36 + int(np.argmax(counts[36:61]))
            ax.annotate(
                "the loser never takes a pile:\nit plays its 26 dealt cards and is out",
                xy=(peak, counts[peak] / counts.sum()),
                xytext=(peak + 120, counts[peak] / counts.sum()),
                fontsize=8,
                arrowprops=dict(arrowstyle="->", lw=0.8),
                va="center",
            )
    ax.set(xlabel="cards played in the game", ylabel="share of games", xlim=(0, 1500), title="Game lengths")
    ax.legend()
    written[out / "game_lengths.png"] = png(fig)
    return written


def _draw_outcomes(plt, colors, n, block):
    """Each outcome's reliability: its forecast probability against how often it came true."""
    outcomes = metrics.outcome_names(int(n))
    fig, axes = plt.subplots(1, len(outcomes), figsize=(4.2 * len(outcomes), 4.4), squeeze=False)
    for ax, outcome in zip(axes[0], outcomes):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        for report, color in zip(block["reports"], colors):
            curve, name = report["calibration"]["by_outcome"][outcome], report["forecaster"]
            ax.plot(
                curve["probability"], curve["frequency"], marker="o", ms=3, label=_label(name), **_style(name, color)
            )
        ax.set(xlabel=f"forecast probability of {outcome}", ylabel="how often it came true", title=outcome)
        ax.grid(alpha=0.3)
    fig.legend(*axes[0][0].get_legend_handles_labels(), fontsize=7, loc="center right")
    fig.suptitle(f"{n} players: reliability of each outcome (quantile bins; class-wise ECE in the table)")
    return png(fig, rect=(0, 0, 0.84, 1))


def _draw_horizon(plt, colors, n, block):
    """Accuracy and log loss against the tricks still to be played (bins of powers of 2)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    above, missing, names = [], [], None
    for report, color in zip(block["reports"], colors):
        name = report["forecaster"]
        if not report["by_horizon"]:
            missing.append(name)
            continue
        curve = report["by_horizon"]["tricks"]
        names = curve["bins"]
        for ax, metric in zip(axes, ("accuracy", "log_loss")):
            values = [np.nan if v is None else v for v in curve[metric]]
            ax.plot(np.arange(len(values)), values, marker="o", ms=3, label=_label(name), **_style(name, color))
        losses = [v for v in curve["log_loss"] if v is not None]
        if losses and max(losses) > LOG_LOSS_SHOWN:
            above.append(f"{name} ({min(losses):.1f}-{max(losses):.1f})")
    axes[1].set_ylim(0, LOG_LOSS_SHOWN)
    if above:
        axes[1].set_title("above the frame: " + ", ".join(above), fontsize=8)
    bottom = 0
    if missing:  # rows read from reports of the earlier layout: no horizon
        note = "not drawn (their reports hold no horizon): " + "; ".join(missing)
        fig.text(0.01, 0.01, textwrap.fill(note, 190), fontsize=7, va="bottom")
        bottom = 0.04 * (1 + len(note) // 190)
    for ax, metric in zip(axes, ("accuracy", "log loss")):
        if names:
            ax.set_xticks(np.arange(len(names)), names)
        ax.set_xlabel("tricks still to be played (the one being played for included)")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[0].invert_xaxis()  # time runs left to right: far from the end, then the end
    axes[1].invert_xaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="center right")
    fig.suptitle(f"{n} players: forecasts by horizon (test positions)")
    return png(fig, rect=(0, bottom, 0.80, 1))


PNG_DPI = 100
PNG_COLOURS = 128  # a palette of this many colours: line plots need few, and the files shrink threefold


def png(fig, rect=None, dpi=PNG_DPI):
    """The figure as PNG bytes (closed): drawn at ``dpi``, then stored with a palette of
    :data:`PNG_COLOURS` colours and Pillow's ``optimize`` (docs/ stays small). The studies'
    own figures are stored so too."""
    import matplotlib.pyplot as plt
    from PIL import Image

    try:
        fig.tight_layout(rect=rect)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        small = image.convert("RGB").quantize(
            colors=PNG_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    packed = io.BytesIO()
    small.save(packed, format="png", optimize=True)
    return packed.getvalue()
