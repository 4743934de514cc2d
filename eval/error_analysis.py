"""Why answers were wrong: was the gold evidence read (the paper's Figure 3), and which questions
one run got right that another did not."""

from __future__ import annotations

from dataclasses import dataclass

from eval.logged_runs import LoggedRun
from eval.tables import markdown


@dataclass(frozen=True)
class Availability:
    run: LoggedRun
    errors: int  # questions without an exact match
    all_gold_read: int  # of those, the ones whose every gold paragraph was read

    @property
    def share_read(self) -> float:
        return self.all_gold_read / self.errors if self.errors else float("nan")


def evidence_availability(run: LoggedRun) -> Availability:
    wrong = [r for r in run.records if r["em"] < 1]
    return Availability(run, len(wrong), sum(1 for r in wrong if r["gold_read_share"] >= 1))


def availability_table(rows: list[Availability]) -> str:
    body = [[r.run.method, r.run.dataset, r.run.lm.rsplit("/", 1)[-1], str(len(r.run.records)), str(r.errors),
             f"{r.all_gold_read} ({_pct(r.share_read)})", f"{r.errors - r.all_gold_read} ({_pct(1 - r.share_read)})"]
            for r in rows]
    note = ("Errors are questions without an exact match. 'All gold read': every gold supporting paragraph was "
            "among the paragraphs the run read (Full Pool reads all of them), so the error is in reasoning, "
            "not in finding the evidence.")
    return markdown(["method", "dataset", "LM", "n", "errors", "all gold read", "gold missing"], body) + "\n\n" + note


def question_diff(a: LoggedRun, b: LoggedRun) -> str:
    """Questions exactly right in one run and not in the other, with both answers and what each read."""
    by_b = {r["id"]: r for r in b.records}
    pairs = [(ra, by_b[ra["id"]]) for ra in a.records if ra["id"] in by_b]
    only_a = [(x, y) for x, y in pairs if x["em"] >= 1 > y["em"]]
    only_b = [(x, y) for x, y in pairs if y["em"] >= 1 > x["em"]]
    lines = [f"## {a.method} vs {b.method} on {a.dataset} / {a.lm} ({len(pairs)} shared questions)",
             f"runs: {a.run_id} ({a.name}) and {b.run_id} ({b.name})", "",
             f"Exact in both: {sum(1 for x, y in pairs if x['em'] >= 1 and y['em'] >= 1)}; "
             f"in neither: {sum(1 for x, y in pairs if x['em'] < 1 and y['em'] < 1)}; "
             f"only {a.method}: {len(only_a)}; only {b.method}: {len(only_b)}."]
    for title, group in ((f"Only {a.method} right", only_a), (f"Only {b.method} right", only_b)):
        lines += ["", f"### {title} ({len(group)})"]
        for x, y in group:
            lines += ["", f"- **{x['id']}** {x['question']}", f"  - gold: {x['gold']}",
                      f"  - {a.method}: {x['prediction']!r} (F1 {x['answer_f1']:.2f}); read: {_titles(x)}",
                      f"  - {b.method}: {y['prediction']!r} (F1 {y['answer_f1']:.2f}); read: {_titles(y)}",
                      f"  - gold paragraphs: {'; '.join(x['gold_titles'])}"]
    return "\n".join(lines)


def _titles(record: dict) -> str:
    return "; ".join(record["evidence_titles"]) or "(nothing)"


def _pct(share: float) -> str:
    return "–" if share != share else f"{100 * share:.0f}%"
