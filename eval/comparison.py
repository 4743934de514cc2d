"""A reference method against each baseline, per (dataset, LM) column, with Holm over the family.

Differences are reference minus baseline (positive: the reference is better). McNemar's b counts
questions only the baseline got exactly right, c those only the reference got right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import mean

from eval.logged_runs import LoggedRun, SelectionError
from eval.metrics import aggregate_defined
from eval.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, Adjusted, Bootstrap, McNemar, holm, mcnemar_exact, \
    paired_bootstrap

Column = tuple[str, str]  # (dataset, LM)


class QuestionSetMismatch(SelectionError):
    """Two runs to be paired were not run on the same questions."""


@dataclass(frozen=True)
class Comparison:
    column: Column
    method: str  # the baseline
    reference: str
    ids: tuple[str, ...]  # the paired questions
    f1: Bootstrap  # on the 0-100 scale
    em: McNemar
    f1_holm: Adjusted
    em_holm: Adjusted

    @property
    def key(self) -> str:
        return comparison_key(self.method, self.column)

    @property
    def verdict(self) -> str:
        """'below' / 'above' when the baseline's F1 differs from the reference after Holm."""
        if not self.f1_holm.significant or self.f1.diff == 0:
            return ""
        return "below" if self.f1.diff > 0 else "above"


@dataclass
class Grid:
    """Every selected run placed by (method, column), and the family of reference comparisons."""

    reference: str
    family: str
    alpha: float
    intersection: bool
    resamples: int
    seed: int
    runs: dict[tuple[str, Column], LoggedRun]
    comparisons: list[Comparison]
    notes: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[Column]:
        return sorted({c for _, c in self.runs})

    @property
    def methods(self) -> list[str]:
        others = sorted({m for m, _ in self.runs} - {self.reference})
        return ([self.reference] if any(m == self.reference for m, _ in self.runs) else []) + others

    def run(self, method: str, column: Column) -> LoggedRun | None:
        return self.runs.get((method, column))

    def comparison(self, method: str, column: Column) -> Comparison | None:
        return next((c for c in self.comparisons if c.method == method and c.column == column), None)


def place_runs(runs: list[LoggedRun]) -> tuple[dict[tuple[str, Column], LoggedRun], list[str]]:
    """One run per (method, column): the newest (runs come newest first); the rest are named in notes."""
    placed: dict[tuple[str, Column], LoggedRun] = {}
    notes = []
    for run in sorted(runs, key=lambda r: -r.start_time):
        key = (run.method, run.column)
        if key in placed:
            notes.append(f"ignored {run.run_id} ({run.name}): a newer run {placed[key].run_id} has the same method, "
                         "dataset and LM; pass --runs to choose")
            continue
        placed[key] = run
    return placed, notes


def paired_ids(reference: LoggedRun, baseline: LoggedRun, intersection: bool) -> tuple[str, ...]:
    """The questions both runs answered, in the reference run's order; mismatched sets are refused unless asked."""
    ref_ids, base_ids = reference.ids, baseline.ids
    if ref_ids != base_ids and not intersection:
        only_ref, only_base = sorted(ref_ids - base_ids), sorted(base_ids - ref_ids)
        raise QuestionSetMismatch(
            f"{reference.name} ({reference.run_id}, {len(ref_ids)} questions) and {baseline.name} "
            f"({baseline.run_id}, {len(base_ids)} questions) were run on different questions: "
            f"{len(only_ref)} only in the first{_examples(only_ref)}, {len(only_base)} only in the second"
            f"{_examples(only_base)}. Pass --intersection to compare on the {len(ref_ids & base_ids)} shared questions.")
    shared = [r["id"] for r in reference.records if r["id"] in base_ids]
    if not shared:
        raise QuestionSetMismatch(f"{reference.name} and {baseline.name} share no questions")
    return tuple(shared)


def compare(runs: list[LoggedRun], reference: str, family: str | None = None, alpha: float = 0.05,
            intersection: bool = False, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Grid:
    placed, notes = place_runs(runs)
    if not any(m == reference for m, _ in placed):
        raise SelectionError(f"no run of the reference method {reference!r} among the selected runs "
                             f"(methods: {sorted({m for m, _ in placed})}); pass --reference")
    raw = []
    for (method, column), run in sorted(placed.items()):
        ref = placed.get((reference, column))
        if method == reference:
            continue
        if ref is None:
            notes.append(f"{method} on {column[0]} / {column[1]}: no {reference} run in that column, not compared")
            continue
        ids = paired_ids(ref, run, intersection)
        ref_by, base_by = _by_id(ref), _by_id(run)
        f1 = paired_bootstrap([100 * base_by[i]["answer_f1"] for i in ids], [100 * ref_by[i]["answer_f1"] for i in ids],
                              resamples, seed)
        em = mcnemar_exact([base_by[i]["em"] >= 1 for i in ids], [ref_by[i]["em"] >= 1 for i in ids])
        raw.append((column, method, ids, f1, em))
    keys = [comparison_key(m, c) for c, m, *_ in raw]
    f1_holm = holm(dict(zip(keys, (r[3].p for r in raw))), alpha)
    em_holm = holm(dict(zip(keys, (r[4].p for r in raw))), alpha)
    comparisons = [Comparison(c, m, reference, ids, f1, em, f1_holm[k], em_holm[k])
                   for k, (c, m, ids, f1, em) in zip(keys, raw)]
    return Grid(reference, family or f"{reference}_vs_baselines", alpha, intersection, resamples, seed, placed,
                comparisons, notes)


def comparison_key(method: str, column: Column) -> str:
    """The name of one comparison in its Holm family."""
    return f"{method}|{column[0]}|{column[1]}"


def run_means(run: LoggedRun) -> dict[str, float]:
    """A run's headline numbers from its records: scores on 0-100, costs per question."""
    records = run.records
    costs = [r["cost_usd"] for r in records]
    return {
        "answer_f1": 100 * mean(r["answer_f1"] for r in records),
        "em": 100 * mean(r["em"] for r in records),
        "support_f1": 100 * mean(r["support_f1"] for r in records),
        **aggregate_defined(records),  # sp_em; joint_em, joint_f1 (HotpotQA); absent in older records
        "calls": mean(r["calls"] for r in records),
        "tokens": mean(r["prompt_tokens"] + r["completion_tokens"] for r in records),
        "cost_usd": mean(costs) if all(c is not None for c in costs) else float("nan"),
        "n": float(len(records)),
    }


def _by_id(run: LoggedRun) -> dict[str, dict]:
    return {r["id"]: r for r in run.records}


def _examples(ids: list[str]) -> str:
    return f" (e.g. {', '.join(ids[:3])})" if ids else ""
