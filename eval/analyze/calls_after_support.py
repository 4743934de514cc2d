"""Table 21: how many calls come after the support was already read? Counted by role from each turn's
`calls_made`; for Reflexion, support counts within one trial (NOTE, and docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eval.analyze.report import Context, Report, corpus_note, run_cells, run_key
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown, number, pct

NAME = "calls-after-support"
PAPER = "Table 21"
SUMMARY = "LM calls made after every annotated supporting paragraph was first read, by call type"

RULE = "within one trial"  # Reflexion's support: one trial must read every paragraph (Table 21's caption)
NOTE = ("n: the questions analysed (not raised, with annotated support). Support read: questions on which one "
        "episode read every annotated supporting paragraph; for Reflexion, at least one trial read all of them "
        "itself (each trial starts with nothing read, so a paragraph read only in an earlier trial does not count); "
        "never read: the others. Calls after/q and the per-role columns: mean calls made after the turn whose read "
        "completed the support (that turn's own action call excluded; for Reflexion, in the first trial that "
        "completed it: the rest of that trial, its reflection and every later trial), over the questions with "
        "support read. % of calls: those calls as a share of all calls of the questions analysed.")

ROLES = ("action", "final", "reflect", "decompose", "verify", "refine", "repair", "refresh", "select")


def trials_of(record: QuestionRecord) -> list[list[dict]] | None:
    """The record's action turns, one list per trial in the order they ran (one list for a
    single-episode method), or None when the record holds no turns (Full Pool)."""
    return record.trajectory.episodes() if record.trajectory is not None else None


def calls_after_support(record: QuestionRecord, trials: list[list[dict]]) -> Counter | None:
    """The calls made after one trial had read every supporting paragraph, by role; None if no trial did."""
    for turns in trials:
        unread = set(record.gold_titles)  # each trial starts with nothing read
        for turn in turns:
            unread.discard(turn.get("read_title"))
            if not unread:
                return Counter(call["role"] for call in record.lm_calls[turn["calls_made"]:])
    return None


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"reflexion_support": RULE})
    report.notes += corpus_note("Table 21", runs)
    results = []  # (run, key, questions analysed, after-support counters, total calls)
    taken: set[str] = set()
    for run in sorted(runs, key=lambda r: (r.dataset, r.lm, r.variant, -r.start_time)):
        # Questions that raised have no trajectory; questions with no annotated support have nothing to read.
        usable = [(r, trials_of(r)) for r in run.question_records if not r.error and r.gold_titles]
        if not any(trials and any(trials) for _, trials in usable):
            report.skipped(run, "its records hold no action turns (Full Pool reads nothing turn by turn)")
            continue
        skipped = len(run.records) - len(usable)
        if skipped:
            report.notes.append(f"{run.run_id} ({run.name}): {skipped} questions left out (raised before an "
                                "episode was recorded, or no annotated supporting paragraph)")
        key = run_key(run, taken)
        after = [calls_after_support(r, trials or []) for r, trials in usable]
        results.append((run, key, len(usable), [c for c in after if c is not None],
                        sum(len(r.lm_calls) for r, _ in usable)))
    seen = {role for *_, counters, _ in results for c in counters for role in c}
    roles = [r for r in ROLES if r in seen] + sorted(seen - set(ROLES))
    rows = []
    for run, key, n, counters, calls in results:
        total = sum(sum(c.values()) for c in counters)
        mean = total / len(counters) if counters else float("nan")
        by_role = {role: sum(c[role] for c in counters) / len(counters) if counters else float("nan") for role in roles}
        share = total / calls if calls else float("nan")
        rows.append([*run_cells(run), str(n), str(len(counters)), str(n - len(counters)), number(mean, 2),
                     *(number(by_role[r], 2) for r in roles), pct(share)])
        report.keyed(key, {"support_read": len(counters), "support_never_read": n - len(counters),
                           "calls_after_support_mean": mean, "calls_after_support_share": share,
                           **{f"calls_after_support_{r}": v for r, v in by_role.items()}})
    head = ["method", "dataset", "LM", "n", "support read", "never read", "calls after/q",
            *(f"{r}/q" for r in roles), "% of calls"]
    report.table("table21_calls_after_support.md",
                 "Table 21: LM calls made after every supporting paragraph was first read", markdown(head, rows), NOTE)
    return report
