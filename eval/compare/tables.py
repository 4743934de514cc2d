"""The paper-style tables of a comparison, as markdown (readable in a terminal and in MLflow)."""

from __future__ import annotations

import csv
import io
import math
from statistics import mean

from eval.compare.pairs import Column, ComparedRuns, run_means
from eval.scoring.formatting import DASH, column_name, fmt_p, interval, markdown
from eval.scoring.health import warnings_for
from eval.scoring.run_metrics import RUN_ROW_KEYS, summarize

BELOW, ABOVE = "*", "+"
RATIOS = ("answer_f1", "calls", "tokens", "cost_usd")  # Table 9's ratios to the reference, in column order


def table1(grid: ComparedRuns) -> str:
    """Rows: methods; per (dataset, LM) column: Answer F1 and calls/question."""
    head = ["method"]
    for column in grid.columns:
        head += [f"{column_name(column)} F1", "calls/q"]
    rows = []
    for method in grid.methods:
        row = [method]
        for column in grid.columns:
            run = grid.run(method, column)
            if run is None:
                row += ["–", "–"]
                continue
            m = run_means(run)
            mark = {"below": BELOW, "above": ABOVE}.get(_verdict(grid, method, column), "")
            ref = grid.run(grid.reference, column)
            n = f" (n={int(m['n'])})" if ref is None or len(run.records) != len(ref.records) else ""
            row += [f"{m['answer_f1']:.1f}{mark}{n}", f"{m['calls']:.2f}"]
        rows.append(row)
    ns = ", ".join(f"{column_name(c)}: n={len(grid.run(grid.reference, c).records)}" for c in grid.columns
                   if grid.run(grid.reference, c))
    note = (f"{BELOW} / {ABOVE}: Answer F1 significantly below / above {grid.reference} in the same column "
            f"(paired bootstrap, Holm {_holm_groups(grid)}, alpha {grid.alpha}). Questions: {ns}.")
    return markdown(head, rows) + "\n\n" + note


def comparison_details(grid: ComparedRuns) -> str:
    """Every comparison of every family, with the Holm family it was adjusted in."""
    head = ["family (size)", "column", "A", "B", "n", "ΔF1 (A − B) [95% CI]", "p", "p Holm",
            "EM b / c", "McNemar p", "p Holm"]
    rows = []
    for c in grid.comparisons:
        rows.append([f"{c.family} ({c.size_text})", column_name(c.column), c.reference, c.variant, str(len(c.ids)),
                     interval(c.f1), fmt_p(c.f1.p),
                     fmt_p(c.f1_holm.adjusted) + (" ✓" if c.f1_holm.significant else ""),
                     f"{c.em.b} / {c.em.c}", fmt_p(c.em.p),
                     fmt_p(c.em_holm.adjusted) + (" ✓" if c.em_holm.significant else "")])
    note = (f"Bootstrap: {grid.resamples:,} resamples of the paired questions, seed {grid.seed}, percentile "
            f"interval. McNemar: exact two-sided; b = only B exact, c = only A exact. "
            f"✓: significant at {grid.alpha} after Holm within the comparison's family, separately for F1 and EM "
            "(size: its comparisons; 'k of m': the paper's family holds m, the m − k not formed here count as p = 1)."
            + (" Compared on the questions both runs share (--intersection)." if grid.intersection else ""))
    return markdown(head, rows) + "\n\n" + note if rows else f"(no runs to compare with {grid.reference})"


def table9(grid: ComparedRuns) -> str:
    """Averages over the (dataset, LM) columns, and ratios to the reference over the columns both have."""
    head = ["method", "columns", "Answer F1", "EM", "calls/q", "tokens/q", "cost/q (USD)",
            "F1 ratio", "calls ratio", "tokens ratio", "cost ratio"]
    rows = []
    for method in grid.methods:
        cols = [c for c in grid.columns if grid.run(method, c)]
        means = [run_means(grid.run(method, c)) for c in cols]
        shared = [c for c in cols if grid.run(grid.reference, c)]
        mine = [m for c, m in zip(cols, means) if c in shared]
        ref = [run_means(grid.run(grid.reference, c)) for c in shared]
        rows.append([method, f"{len(cols)}/{len(grid.columns)}",
                     f"{mean(m['answer_f1'] for m in means):.1f}", f"{mean(m['em'] for m in means):.1f}",
                     f"{mean(m['calls'] for m in means):.2f}", f"{mean(m['tokens'] for m in means):,.0f}",
                     _money(mean(m['cost_usd'] for m in means)),
                     *(_x(_ratio(mine, ref, k)) for k in RATIOS)])
    note = (f"Plain means over the columns each method ran in; ratios are method / {grid.reference} over the "
            "columns both ran in (n/a where the reference's value is 0, e.g. the cost of a local model).")
    return markdown(head, rows) + "\n\n" + note


def support_table(grid: ComparedRuns) -> str:
    """Per run, the supporting-fact and joint scores the official scorers also report."""
    keys = [("support_f1", "Support F1"), ("sp_em", "Support EM"), ("joint_em", "Joint EM"), ("joint_f1", "Joint F1")]
    rows = []
    for column in grid.columns:
        for method in grid.variants:
            run = grid.run(method, column)
            if run is not None:
                m = run_means(run)
                rows.append([column_name(column), method, str(len(run.records)),
                             *(f"{m[k]:.1f}" if k in m else "–" for k, _ in keys)])
    note = ("Means over each run's questions (0-100). Joint EM/F1 are HotpotQA's (answer x support); "
            "2Wiki's official joint also needs evidence triples and MuSiQue has none, so they are '–' there.")
    return markdown(["column", "method", "n", *(name for _, name in keys)], rows) + "\n\n" + note


def runs_table(grid: ComparedRuns) -> str:
    """Per run (every variant placed, in every column it ran in): its scores, calls, reads and the
    behaviour that says whether they mean much (RUN_ROW_KEYS), and the codes of its warnings
    (eval.scoring.health; the lines themselves are in degenerate_runs.md)."""
    rows = []
    for column in grid.columns:
        for variant in grid.variants:
            run = grid.run(variant, column)
            if run is None:
                continue
            m = summarize(run.question_records)
            warnings = warnings_for(run.name or run.variant, run.question_records, method=run.config.method,
                                    max_tokens=run.config.lm.max_tokens)
            rows.append([column_name(column), variant, str(len(run.records)),
                         *(fmt.format(m[k]) if k in m else DASH for k, _, fmt in RUN_ROW_KEYS),
                         ", ".join(w.code for w in warnings) or DASH])
    head = ["column", "variant", "n", *(name for _, name, _ in RUN_ROW_KEYS), "warnings"]
    note = ("Means over each run's questions; scores 0-100. rejected: share of all turns rejected; no submit: share "
            "of episodes (Reflexion: trials) that ended without a valid submit (EIR answers in a final call after "
            "its episode, so for EIR it is no failure); fallbacks/q: pool reads whose title named no unread "
            "paragraph, so the pool read its first unread one instead; s/q: each question's own time. "
            f"{DASH}: the run has none (Full Pool: no episodes). warnings: the codes of the run's degenerate-run "
            "warnings (docs/experiments.md, Degenerate runs).")
    return markdown(head, rows) + "\n\n" + note


def comparisons_csv(grid: ComparedRuns) -> str:
    """One row per comparison; `reference` is A and `baseline` B of the pair (f1_diff = A − B); `family` is the
    named family, `holm_family` the part of it the p-values were adjusted in, of `family_size` comparisons
    (`formed` of them here)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["family", "reference", "baseline", "dataset", "lm", "n", "f1_diff", "f1_ci_low", "f1_ci_high",
                "f1_p", "f1_p_holm", "f1_significant", "mcnemar_b", "mcnemar_c", "mcnemar_p", "mcnemar_p_holm",
                "mcnemar_significant", "family_size", "reference_run", "baseline_run", "holm_family", "formed"])
    for c in grid.comparisons:
        w.writerow([c.family_name, c.reference, c.variant, *c.column, len(c.ids), c.f1.diff, c.f1.low, c.f1.high,
                    c.f1.p, c.f1_holm.adjusted, c.f1_holm.significant, c.em.b, c.em.c, c.em.p, c.em_holm.adjusted,
                    c.em_holm.significant, c.family_size, grid.run(c.reference, c.column).run_id,
                    grid.run(c.variant, c.column).run_id, c.family, c.formed])
    return out.getvalue()


def _holm_groups(grid: ComparedRuns) -> str:
    """How Table 1's family was adjusted, in words."""
    family = grid.named(grid.family)
    found = grid.of_family(grid.family)
    sizes = "/".join(sorted({c.size_text for c in found})) or "0"
    if family and family.per_pair:
        return (f"within each baseline's {sizes} comparisons over the columns (family '{grid.family}', one Holm "
                "family per baseline)")
    if family and family.per_column:
        return f"within each column's {sizes} comparisons (family '{grid.family}', one Holm family per column)"
    return f"over the {sizes} comparisons of family '{grid.family}'"


def _verdict(grid: ComparedRuns, method: str, column: Column) -> str:
    found = grid.comparison(method, column)
    return found.verdict if found else ""


def _ratio(mine: list[dict], ref: list[dict], key: str) -> float:
    """The mean of `key` over the method's columns / the reference's over the same columns."""
    if not mine:
        return float("nan")
    den = mean(m[key] for m in ref)
    return mean(m[key] for m in mine) / den if den else float("nan")


def _x(ratio: float) -> str:
    return "n/a" if math.isnan(ratio) else f"{ratio:.2f}×"


def _money(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4f}"
