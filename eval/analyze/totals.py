"""Table 19: what each corpus-setting run spent, as totals over its questions (not per question; eval.compare's
Table 9 gives them per question), with per-LM and overall totals (docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze.report import POOLED, Context, Report, base_label, corpus_note, one_or_all
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown, short_lm
from programs import names

NAME = "totals"
PAPER = "Table 19"
SUMMARY = "calls, tokens, cost, searches and reads summed over each run's questions, with per-LM and overall totals"

SUMMED = ("calls", "prompt_tokens", "completion_tokens", "cost_usd", "searches", "reads", "turns", "rejected_actions")
HEAD = ["questions", "calls", "prompt tokens", "completion tokens", "cost (USD)", "searches", "reads", "turns",
        "rejected turns"]


def sums(records: list[QuestionRecord]) -> dict[str, float | None]:
    """Each quantity summed over the records; cost is None when any record's is unknown."""
    out: dict[str, float | None] = {"questions": len(records)}
    for key in SUMMED:
        values = [getattr(r, key) for r in records]
        out[key] = None if any(v is None for v in values) else sum(values)
    return out


def is_rerun_of_another(run: LoggedRun) -> bool:
    """Reflexion's first trial: its calls are the first trial's of its oracle run, counted there."""
    return base_label(run) == names.REFLEXION_FIRST


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    ordered = sorted(runs, key=lambda r: (r.setting, r.lm, r.dataset, r.variant))
    rows = [_row(run.variant, run.dataset, run.lm, run.setting, sums(run.question_records), report) for run in ordered]
    counted = [r for r in ordered if not is_rerun_of_another(r)]
    if len(counted) < len(ordered):
        report.notes.append(f"{len(ordered) - len(counted)} reflexion_first run(s) left out of the total rows: their "
                            "calls are their oracle runs' first trials")
    for lm in sorted({r.lm for r in counted}):
        of_lm = [r for r in counted if r.lm == lm]
        if len(of_lm) > 1:
            rows.append(_row("total", "all", lm, one_or_all({r.setting for r in of_lm}),
                             sums([rec for r in of_lm for rec in r.question_records]), report))
    if len({r.lm for r in counted}) > 1:
        rows.append(_row("total", "all", POOLED, one_or_all({r.setting for r in counted}),
                         sums([rec for r in counted for rec in r.question_records]), report))
    report.notes += corpus_note("Table 19", runs)
    report.table(
        "table19_totals.md", "Table 19: totals over each run's questions",
        markdown(["method", "dataset", "LM", "setting", *HEAD], rows),
        "Sums over every question of the run (failed questions included). Total rows: per LM, then over all runs; "
        "Reflexion's first-trial runs are left out of them (their calls are the oracle runs'). Cost: unknown when "
        "any call's model has no price.")
    return report


def _row(method: str, dataset: str, lm: str, setting: str, total: dict, report: Report) -> list[str]:
    report.keyed("/".join((method, dataset, lm, setting)), {k: v for k, v in total.items() if v is not None})
    cells = [_count(total[k]) for k in ("questions", "calls", "prompt_tokens", "completion_tokens")]
    cells.append("unknown" if total["cost_usd"] is None else f"{total['cost_usd']:,.4f}")
    cells += [_count(total[k]) for k in ("searches", "reads", "turns", "rejected_actions")]
    return [method, dataset, short_lm(lm), setting, *cells]


def _count(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"

