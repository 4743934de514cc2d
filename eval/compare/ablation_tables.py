"""The ablation tables as markdown: the budget sweep (Tables 10, 11), list feedback (Table 12) and
dependency repair (Tables 13, 14). Each reads one named family of the grid (eval.compare.families) and is
made only when that family has comparisons."""

from __future__ import annotations

from statistics import mean

from eval.compare.families import H_SWEEP, LIST_FEEDBACK, REPAIR, REPAIR_APPLIED
from eval.compare.pairs import Column, ComparedRuns, Comparison, records_by_id, run_means
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import column_name, fmt_p, interval, markdown, number
from eval.scoring.run_metrics import list_entries

SIGNIFICANT = "*"
UNFORMED = " ('k of m': the paper's family holds m comparisons; the m − k not formed here count as p = 1)"


def ablation_files(grid: ComparedRuns) -> dict[str, str]:
    """The ablation tables whose family has comparisons, by file name."""
    titles = {"table10.md": ("Table 10: LM calls per question against the read budget H", table10),
              "table11.md": ("Table 11: Answer F1 of each H against the reference budget", table11),
              "table12.md": ("Table 12: list feedback against its control", table12),
              "table13.md": ("Table 13: dependency repair against EIR", table13),
              "table14.md": ("Table 14: dependency repair applied against unapplied", table14)}
    files = {}
    for name, (title, make) in titles.items():
        text = make(grid)
        if text is not None:
            files[name] = f"# {title}\n\n{text}\n"
    return files


def sweep_runs(grid: ComparedRuns) -> dict[Column, dict[int, LoggedRun]]:
    """The runs of the budget-sweep family, per column and H."""
    out: dict[Column, dict[int, LoggedRun]] = {}
    for c in grid.of_family(H_SWEEP):
        for variant in (c.reference, c.variant):
            run = grid.run(variant, c.column)
            out.setdefault(c.column, {})[run.budget] = run
    return out


def table10(grid: ComparedRuns) -> str | None:
    """Rows: H; per column: mean LM calls per question; then the relative increase from the
    reference's H to the largest H run in that column."""
    sweep = sweep_runs(grid)
    if not sweep:
        return None
    columns = sorted(sweep)
    budgets = sorted({h for by_h in sweep.values() for h in by_h})
    calls = {(col, h): run_means(run)["calls"] for col, by_h in sweep.items() for h, run in by_h.items()}
    rows = [[f"H={h}", *(f"{calls[col, h]:.2f}" if (col, h) in calls else "–" for col in columns)] for h in budgets]
    base = _reference_budget(grid, columns)
    increase = []
    for col in columns:
        top = max(sweep[col])
        if base is None or top == base or not calls.get((col, base)):
            increase.append("–")
            continue
        increase.append(f"{100 * (calls[col, top] - calls[col, base]) / calls[col, base]:+.1f}% (H={top})")
    rows.append([f"relative increase H={base}→H=max", *increase])
    ns = ", ".join(f"{column_name(col)}: n={'/'.join(sorted({str(len(r.records)) for r in sweep[col].values()}))}"
                   for col in columns)
    note = ("Mean LM calls per question, every call counted (the final answer call too). Relative increase: from "
            f"H={base} to the largest H run in the column. Questions: {ns}.")
    return markdown(["H", *map(column_name, columns)], rows) + "\n\n" + note


def table11(grid: ComparedRuns) -> str | None:
    """ΔAnswer F1 of each H against the compared H (the reference's) on the same questions."""
    found = grid.of_family(H_SWEEP)
    if not found:
        return None
    rows = [[column_name(c.column), f"H={grid.run(c.reference, c.column).budget}", f"H={grid.run(c.variant, c.column).budget}",
             str(len(c.ids)), f"{_f1(grid, c.reference, c):.1f}", *_stats(c)] for c in found]
    head = ["column", "H", "against", "n", "Answer F1", "ΔF1 [95% CI]", "p", "p Holm"]
    return markdown(head, rows) + "\n\n" + _note(grid, found, "F1 at H − F1 at the H it is compared against")


def table12(grid: ComparedRuns) -> str | None:
    """EIR against its list-feedback control: scores, evidence found, and list use (the control
    differs only in never being shown its lists again)."""
    found = grid.of_family(LIST_FEEDBACK)
    if not found:
        return None
    rows = []
    for c in found:
        a, b = _paired(grid, c.reference, c), _paired(grid, c.variant, c)
        rows.append([column_name(c.column), f"{c.reference} − {c.variant}", str(len(c.ids)),
                     _both(a, b, lambda rs: f"{100 * mean(r.answer_f1 for r in rs):.1f}"),
                     _both(a, b, lambda rs: f"{100 * mean(r.gold_read_share for r in rs):.1f}"),
                     _both(a, b, lambda rs: f"{mean(r.reads for r in rs):.2f}"),
                     _both(a, b, lambda rs: number(list_entries(rs))), *_stats(c)])
    head = ["column", "A − B", "n", "Answer F1 A / B", "gold read % A / B", "reads/q A / B",
            "list entries/episode A / B", "ΔF1 (A − B) [95% CI]", "p", "p Holm"]
    return markdown(head, rows) + "\n\n" + _note(grid, found, "A − B") + (
        " Gold read: share of the annotated supporting paragraphs read; list entries: requirements + conclusions "
        "in the final lists.")


def table13(grid: ComparedRuns) -> str | None:
    """The repair arms against EIR, Holm within each column (family `repair`)."""
    return _repair_table(grid, grid.of_family(REPAIR))


def table14(grid: ComparedRuns) -> str | None:
    """Repair applied against the same calls with their changes discarded, Holm over the columns
    (family `repair_applied`)."""
    return _repair_table(grid, grid.of_family(REPAIR_APPLIED))


def _repair_table(grid: ComparedRuns, found: list[Comparison]) -> str | None:
    if not found:
        return None
    rows = []
    for c in found:
        a, b = _paired(grid, c.reference, c), _paired(grid, c.variant, c)
        rows.append([column_name(c.column), f"{c.reference} − {c.variant}", str(len(c.ids)), *_stats(c),
                     _both(a, b, lambda rs: number(list_entries(rs))),
                     _both(a, b, lambda rs: f"{repair_calls(rs):.2f}")])
    head = ["column", "A − B", "n", "ΔF1 (A − B) [95% CI]", "p", "p Holm", "list entries/episode A / B",
            "repair calls/q A / B"]
    return markdown(head, rows) + "\n\n" + _note(grid, found, "A − B") + (
        " Repair calls: repair + refresh calls per question.")


def repair_calls(records: list[QuestionRecord]) -> float:
    return mean(r.calls_by_role.get("repair", 0) + r.calls_by_role.get("refresh", 0) for r in records)


def _stats(c: Comparison) -> list[str]:
    return [interval(c.f1), fmt_p(c.f1.p),
            fmt_p(c.f1_holm.adjusted) + (SIGNIFICANT if c.f1_holm.significant else "")]


def _note(grid: ComparedRuns, found: list[Comparison], diff: str) -> str:
    families = ", ".join(dict.fromkeys(f"'{c.family}' ({c.size_text} comparisons)" for c in found))
    return (f"ΔF1 = {diff}, Answer F1 points on the n questions both runs answered; paired bootstrap, "
            f"{grid.resamples:,} resamples, seed {grid.seed}, percentile interval. p Holm: adjusted within family "
            f"{families}{UNFORMED * any(c.formed < c.family_size for c in found)}; {SIGNIFICANT}: significant at "
            f"{grid.alpha} after adjustment.")


def _paired(grid: ComparedRuns, variant: str, c: Comparison) -> list[QuestionRecord]:
    """The run's records of the compared questions."""
    by_id = records_by_id(grid.run(variant, c.column))
    return [by_id[i] for i in c.ids]


def _f1(grid: ComparedRuns, variant: str, c: Comparison) -> float:
    return 100 * mean(r.answer_f1 for r in _paired(grid, variant, c))


def _both(a: list[QuestionRecord], b: list[QuestionRecord], fmt) -> str:
    return f"{fmt(a)} / {fmt(b)}"


def _reference_budget(grid: ComparedRuns, columns: list[Column]) -> int | None:
    return next((grid.run(grid.reference, col).budget for col in columns if grid.run(grid.reference, col)), None)
