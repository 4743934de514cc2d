"""Why answers were wrong: was the gold evidence read (the paper's Figure 3, computed here once for
eval.compare and `eval.analyze availability`), and which questions one run got right that another did
not. The errors and the split: docs/experiments.md, "Comparing runs" (evidence_availability.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from eval.compare.pairs import records_by_id
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown, pct, short_lm


def missing_gold(record: QuestionRecord) -> int:
    """Annotated supporting paragraphs the run never read."""
    return len(set(record.gold_titles) - set(record.evidence_titles))


def em_errors(records: Iterable[QuestionRecord]) -> list[QuestionRecord]:
    """Figure 3's errors, in record order: the questions without an exact match that did not fail outright."""
    return [r for r in records if r.em < 1 and not r.error]


@dataclass(frozen=True)
class Availability:
    """Figure 3 for one run (or the pooled records of several)."""

    run: LoggedRun
    missing: tuple[int, ...]  # per EM error, the annotated supporting paragraphs never read (0: complete)
    exact: int  # questions answered exactly (failed ones aside)
    failed: int  # questions that failed outright, left out of the errors

    @property
    def errors(self) -> int:
        return len(self.missing)

    @property
    def all_gold_read(self) -> int:
        """Errors with complete evidence: every annotated supporting paragraph was read."""
        return sum(m == 0 for m in self.missing)

    @property
    def incomplete(self) -> int:
        return self.errors - self.all_gold_read

    @property
    def share_read(self) -> float:
        return self.all_gold_read / self.errors if self.errors else float("nan")


def evidence_availability(run: LoggedRun) -> Availability:
    records = run.question_records
    return Availability(run, tuple(missing_gold(r) for r in em_errors(records)),
                        exact=sum(1 for r in records if r.em >= 1 and not r.error), failed=sum(1 for r in records if r.error))


def availability_table(rows: list[Availability]) -> str:
    body = [[r.run.variant, r.run.dataset, short_lm(r.run.lm), str(len(r.run.records)), str(r.errors),
             f"{r.all_gold_read} ({pct(r.share_read, 0, '%')})",
             f"{r.errors - r.all_gold_read} ({pct(1 - r.share_read, 0, '%')})"] for r in rows]
    note = ("Errors are questions without an exact match. 'All gold read': every gold supporting paragraph was "
            "among the paragraphs the run read (Full Pool reads all of them), so the error is in reasoning, "
            "not in finding the evidence.")
    failed = [f"{r.run.name}: {r.failed}" for r in rows if r.failed]
    if failed:
        note += f" Questions that failed outright (a provider error) are left out of the errors: {'; '.join(failed)}."
    return markdown(["method", "dataset", "LM", "n", "errors", "all gold read", "gold missing"], body) + "\n\n" + note


def question_diff(a: LoggedRun, b: LoggedRun) -> str:
    """Questions exactly right in one run and not in the other, with both answers and what each read."""
    by_b = records_by_id(b)
    pairs = [(ra, by_b[ra.id]) for ra in a.question_records if ra.id in by_b]
    only_a = [(x, y) for x, y in pairs if x.em >= 1 > y.em]
    only_b = [(x, y) for x, y in pairs if y.em >= 1 > x.em]
    lines = [f"## {a.variant} vs {b.variant} on {a.dataset} / {a.lm} ({len(pairs)} shared questions)",
             f"runs: {a.run_id} ({a.name}) and {b.run_id} ({b.name})", "",
             f"Exact in both: {sum(1 for x, y in pairs if x.em >= 1 and y.em >= 1)}; "
             f"in neither: {sum(1 for x, y in pairs if x.em < 1 and y.em < 1)}; "
             f"only {a.variant}: {len(only_a)}; only {b.variant}: {len(only_b)}."]
    for title, group in ((f"Only {a.variant} right", only_a), (f"Only {b.variant} right", only_b)):
        lines += ["", f"### {title} ({len(group)})"]
        for x, y in group:
            lines += ["", f"- **{x.id}** {x.question}", f"  - gold: {x.gold}",
                      f"  - {a.variant}: {x.prediction!r} (F1 {x.answer_f1:.2f}); read: {_titles(x)}",
                      f"  - {b.variant}: {y.prediction!r} (F1 {y.answer_f1:.2f}); read: {_titles(y)}",
                      f"  - gold paragraphs: {'; '.join(x.gold_titles)}"]
    return "\n".join(lines)


def _titles(record: QuestionRecord) -> str:
    return "; ".join(record.evidence_titles) or "(nothing)"
