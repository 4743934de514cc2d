"""The comparison's figures, written as PNG (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # headless: CI and servers have no display
import matplotlib.pyplot as plt  # noqa: E402

from eval.compare.ablation_tables import sweep_runs  # noqa: E402
from eval.compare.error_analysis import Availability  # noqa: E402
from eval.compare.pairs import ComparedRuns, run_means  # noqa: E402
from eval.scoring.formatting import column_name, short_lm  # noqa: E402
from eval.scoring.stats import mean_interval  # noqa: E402

MARKERS = "osD^vP*X"


def f1_vs_calls(grid: ComparedRuns, path: Path) -> Path:
    """One point per run: Answer F1 (bootstrap 95% interval of the run's mean) against calls/question."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = {m: f"C{i % 10}" for i, m in enumerate(grid.variants)}
    markers = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(grid.columns)}
    for (method, column), run in sorted(grid.runs.items()):
        m = run_means(run)
        low, high = mean_interval([100 * r.answer_f1 for r in run.question_records], grid.resamples, grid.seed)
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


def f1_em_vs_h(grid: ComparedRuns, path: Path) -> Path:
    """Figure 6: Answer F1 and EM against the read budget H, one line per (dataset, LM) column."""
    sweep = sweep_runs(grid)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    budgets = sorted({h for by_h in sweep.values() for h in by_h})
    for i, (column, by_h) in enumerate(sorted(sweep.items())):
        hs = sorted(by_h)
        means = [run_means(by_h[h]) for h in hs]
        for ax, key in zip(axes, ("answer_f1", "em")):
            ax.plot(hs, [m[key] for m in means], marker=MARKERS[i % len(MARKERS)], label=column_name(column))
    for ax, name in zip(axes, ("Answer F1", "EM")):
        ax.set_xticks(budgets)
        ax.set_xlabel("H (paragraph reads)")
        ax.set_ylabel(name)
        ax.set_title(f"{name} against H")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="best")
    return _save(fig, path)


def evidence_bars(rows: list[Availability], path: Path) -> Path:
    """Per run, its errors split by whether every gold paragraph had been read."""
    return stacked_bars([run_label(r.run) for r in rows],
                        [([r.all_gold_read for r in rows], "C2", "all gold paragraphs read"),
                         ([r.errors - r.all_gold_read for r in rows], "C3", "gold paragraph missing")],
                        "wrong answers (no exact match)", "Evidence availability of errors", path)


def availability_shares(rows: list[tuple[str, float, float, float]], path: Path) -> Path:
    """Figure 3: per run (label), the share of ALL questions answered exactly, wrong with every
    supporting paragraph read, and wrong with one missing."""
    return stacked_bars([r[0] for r in rows], [([100 * r[1] for r in rows], "C0", "exact match"),
                                               ([100 * r[2] for r in rows], "C2", "error, complete evidence"),
                                               ([100 * r[3] for r in rows], "C3", "error, incomplete evidence")],
                        "% of all questions", "Evidence availability (Figure 3)", path, top=100)


def run_label(run) -> str:
    """A run's bar label: method, dataset and LM on three lines."""
    return f"{run.variant}\n{run.dataset}\n{short_lm(run.lm)}"


def stacked_bars(labels: list[str], layers: list[tuple[list[float], str, str]], ylabel: str, title: str, path: Path,
                 top: float | None = None) -> Path:
    """One bar per label, its layers (values, color, legend label) stacked bottom up."""
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(labels) + 2), 4.5))
    x = list(range(len(labels)))
    bottom = [0] * len(labels)
    for values, color, label in layers:
        ax.bar(x, values, bottom=bottom if any(bottom) else None, color=color, label=label)
        bottom = [a + b for a, b in zip(bottom, values)]
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel(ylabel)
    if top is not None:
        ax.set_ylim(0, top)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

