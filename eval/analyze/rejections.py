"""Table 22: why actions were rejected, per run by cause category, as a share of the recorded action
turns (docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eir_dspy import rejection
from eval.analyze.report import Context, Report, run_cells, run_key
from eval.files.question_record import QuestionRecord, as_records
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown

NAME = "rejections"
PAPER = "Table 22"
SUMMARY = "rejected actions per method by cause, as a share of the recorded actions"

# Category -> the causes it holds, in the table's column order. Everything else is "other".
CATEGORIES: dict[str, frozenset[str]] = {
    # not_json_only: a JSON-only method (Direct, SSR, Reflexion) wrote text around its JSON object
    "unparseable output": frozenset({"not_json", rejection.NOT_JSON_ONLY, "unusable"}),
    # no_action: the output parsed but named no action, i.e. the action field was missing or empty
    "missing field or wrong type": frozenset({"missing_field", "wrong_type", rejection.NO_ACTION}),
    # a submit's citation, or (EIR) a list update's, of a sentence not read
    "invalid citation": frozenset({rejection.INVALID_CITATION}),
    "read with no read left": frozenset({rejection.NO_READS_LEFT}),
    # unknown: an EIR list update revising an entry that does not exist; unfound: a corpus read of an id no search returned
    "unknown or unfound id": frozenset({rejection.UNKNOWN_LIST_ID, rejection.UNKNOWN_ID}),
    "repeated search": frozenset({rejection.REPEATED_SEARCH}),
    # anything but a submit on a turn-limited trial's last turn (the corpus's, H.1; the pool's Direct family):
    # the paper counts these apart ("attempt reading or searching on the final turn", H.4)
    "non-submit on the last turn": frozenset({rejection.SUBMIT_ONLY_TURN}),
}
OTHER = "other"  # empty_answer, all_read, empty_search, search_in_pool, invalid_dependency
COLUMNS = (*CATEGORIES, OTHER)


def category(cause: str) -> str:
    return next((name for name, causes in CATEGORIES.items() if cause in causes), OTHER)


def by_category(records: list[dict | QuestionRecord]) -> tuple[int, Counter, Counter]:
    """(recorded actions, rejections by category, the causes that fell into "other"), of records or results lines."""
    actions, counts, other = 0, Counter(), Counter()
    for r in as_records(records):
        actions += r.turns
        for cause, k in (r.rejections_by_cause or {}).items():
            counts[category(cause)] += k
            if category(cause) == OTHER:
                other[cause] += k
    return actions, counts, other


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    rows, seen = [], set()
    for run in sorted(runs, key=lambda r: (r.dataset, r.lm, r.variant, -r.start_time)):
        actions, counts, other = by_category(run.question_records)
        if actions == 0:
            report.skipped(run, "no action turns recorded (Full Pool answers in one call)")
            continue
        key = run_key(run, seen)
        total = sum(counts.values())
        rows.append([*run_cells(run), str(len(run.records)), str(actions),
                     *(_cell(counts[c], actions) for c in COLUMNS), _cell(total, actions)])
        report.keyed(key, {"actions": actions, "rejected": total, "rejected_rate": total / actions})
        for c in COLUMNS:
            slug = c.replace(" ", "_")
            report.keyed(key, {f"rejected_{slug}": counts[c], f"rejected_{slug}_rate": counts[c] / actions})
        if other:
            report.notes.append(f"{run.run_id} ({run.name}): 'other' holds "
                                + ", ".join(f"{c} {k}" for c, k in sorted(other.items())))
    head = ["method", "dataset", "LM", "n", "actions", *COLUMNS, "rejected"]
    report.table(
        "table22_rejections.md", "Table 22: rejected actions by cause", markdown(head, rows),
        "Each cell: rejected actions (% of the run's actions). Actions: every action turn of every trial "
        "(reflection and final calls are not actions). Unparseable output: not JSON, text around the JSON object "
        "(methods that accept JSON only), or otherwise unusable; missing field or wrong type: includes an output "
        "that named no action and an EIR sentence position that is not an integer; invalid citation: a submit's or "
        "an EIR list update's citation of a sentence not read; unknown or unfound id: an EIR list update of an "
        "entry that does not exist, a corpus read of an id no search returned; non-submit on the last turn: a "
        "read or search on the last turn of a turn-limited trial, which accepts only a submit (the corpus "
        "setting's turn 12; in the pool, Direct's, SSR's and Reflexion's turn H); other: empty answer, read "
        "with every paragraph read, empty search, search in the distractor setting, a repair ablation's "
        "self-dependency, and older runs' undivided invalid_action.")
    return report


def _cell(k: int, n: int) -> str:
    return f"{k} ({100 * k / n:.1f}%)"
