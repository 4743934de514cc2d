"""The comparison's two figures, written as PNG (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # headless: CI and servers have no display
import matplotlib.pyplot as plt  # noqa: E402

from eval.comparison import Grid, run_means  # noqa: E402
from eval.error_analysis import Availability  # noqa: E402
from eval.stats import mean_interval  # noqa: E402
from eval.tables import column_name  # noqa: E402

MARKERS = "osD^vP*X"


def f1_vs_calls(grid: Grid, path: Path) -> Path:
    """One point per run: Answer F1 (bootstrap 95% interval of the run's mean) against calls/question."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = {m: f"C{i % 10}" for i, m in enumerate(grid.methods)}
    markers = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(grid.columns)}
    for (method, column), run in sorted(grid.runs.items()):
        m = run_means(run)
        low, high = mean_interval([100 * r["answer_f1"] for r in run.records], grid.resamples, grid.seed)
        ax.errorbar(m["calls"], m["answer_f1"], yerr=[[m["answer_f1"] - low], [high - m["answer_f1"]]],
                    fmt=markers[column], color=colors[method], capsize=3, markersize=7)
    for method, color in colors.items():
        ax.plot([], [], "o", color=color, label=method)
    for column, marker in markers.items():
        ax.plot([], [], marker, color="grey", label=column_name(column))
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())  # 2, 5, 10 rather than 2×10⁰
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("LM calls per question (log scale)")
    ax.set_ylabel("Answer F1")
    ax.set_title("Answer F1 against cost (bars: bootstrap 95% interval)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return _save(fig, path)


def evidence_bars(rows: list[Availability], path: Path) -> Path:
    """Per run, its errors split by whether every gold paragraph had been read."""
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(rows) + 2), 4.5))
    labels = [f"{r.run.method}\n{r.run.dataset}\n{r.run.lm.rsplit('/', 1)[-1]}" for r in rows]
    read = [r.all_gold_read for r in rows]
    missing = [r.errors - r.all_gold_read for r in rows]
    x = range(len(rows))
    ax.bar(x, read, color="C2", label="all gold paragraphs read")
    ax.bar(x, missing, bottom=read, color="C3", label="gold paragraph missing")
    ax.set_xticks(list(x), labels, fontsize=7)
    ax.set_ylabel("wrong answers (no exact match)")
    ax.set_title("Evidence availability of errors")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
