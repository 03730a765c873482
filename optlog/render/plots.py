"""Plots as SVG, drawn with matplotlib (Agg), byte-for-byte deterministic.

Determinism: a fixed `svg.hashsalt` (the ids of clip paths and glyphs derive from it), text kept as
text (`svg.fonttype: none`, no embedded glyph paths that vary with the font cache), and no date or
creator in the metadata. matplotlib is imported only when a report draws a plot.
"""

from __future__ import annotations

from typing import Any

SALT = "optlog"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({
        "svg.hashsalt": SALT,
        "svg.fonttype": "none",
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "figure.dpi": 100,
        "path.simplify": False,
    })
    return plt


def _save(fig: Any, path: str) -> None:
    import io

    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches=None)
    text = buf.getvalue()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def throughput_vs_concurrency(path: str, title: str, metric: str, series: dict[str, list[tuple[float, float]]]) -> None:
    """One line per config: x concurrency (log2), y the metric's median."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    try:
        for i, (name, pts) in enumerate(series.items()):
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            ax.plot(xs, ys, marker="o", label=name, color=f"C{i % 10}")
            for x, y in (pts if sum(len(v) for v in series.values()) <= 24 else []):
                ax.annotate(f"{y:,.0f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
        if any(p[0] > 0 for pts in series.values() for p in pts):
            ax.set_xscale("log", base=2)
        xt = sorted({p[0] for pts in series.values() for p in pts})
        ax.set_xticks(xt)
        ax.set_xticklabels([f"{x:g}" for x in xt])
        ax.set_xlabel("concurrency")
        ax.set_ylabel(metric.replace("_", " ") + " (tok/s)" if "token" in metric or metric.startswith("output") else metric)
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.legend(title="config", loc="upper left")  # a fixed place: "best" costs seconds on big data
        fig.tight_layout()
        _save(fig, path)
    finally:
        plt.close(fig)


def per_user_vs_per_gpu(path: str, title: str, series: dict[str, list[tuple[float, float, Any]]]) -> None:
    """The trade-off curve: x output tok/s per user, y output tok/s per GPU; points labelled by
    concurrency."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    try:
        for i, (name, pts) in enumerate(series.items()):
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name, color=f"C{i % 10}")
            for x, y, c in (pts if sum(len(v) for v in series.values()) <= 24 else []):
                ax.annotate(f"c={c}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xlabel("output tok/s per user")
        ax.set_ylabel("output tok/s per GPU")
        ax.set_title(title)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(title="config", loc="upper right")
        fig.tight_layout()
        _save(fig, path)
    finally:
        plt.close(fig)
