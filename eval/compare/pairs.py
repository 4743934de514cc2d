"""Paired comparisons of two variants per (dataset, LM) column, Holm-adjusted within named families.

A comparison is (A, B, column): ΔF1 = A − B (positive: A is better). McNemar's b counts questions
only B got exactly right, c those only A got right. The families say which comparisons are made
and adjusted together (eval.compare.families); by default the reference against its baselines, its budget
sweep and its ablations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import mean

from eval.compare.families import Family, FamilyError, baselines_name, default_families
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun, SelectionError
from eval.scoring.metrics import aggregate_defined
from eval.scoring.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    Adjusted,
    Bootstrap,
    McNemar,
    holm,
    mcnemar_exact,
    paired_bootstrap,
)

Column = tuple[str, str]  # (dataset, LM)


class QuestionSetMismatch(SelectionError):
    """Two runs to be paired were not run on the same questions."""


@dataclass(frozen=True)
class Comparison:
    column: Column
    variant: str  # B, the baseline side: ΔF1 = reference − variant
    reference: str  # A
    ids: tuple[str, ...]  # the paired questions
    f1: Bootstrap  # on the 0-100 scale
    em: McNemar
    f1_holm: Adjusted
    em_holm: Adjusted
    family: str  # the Holm family (per-column and per-pair families carry the column or pair in the name)
    family_size: int  # Holm's m: the comparisons in that Holm family (the paper's size when its family names one)
    family_name: str  # the named family (eval.compare.families.Family.name) it was made for
    formed: int  # the comparisons of that Holm family formed here (fewer than family_size: the rest count as p = 1)

    @property
    def size_text(self) -> str:
        """'6', or '2 of 4' when the paper's family holds comparisons not formed here."""
        return str(self.family_size) if self.formed == self.family_size else f"{self.formed} of {self.family_size}"

    @property
    def key(self) -> str:
        return comparison_key(self.reference, self.variant, self.column)

    @property
    def verdict(self) -> str:
        """'below' / 'above' when B's F1 differs from A's after Holm."""
        if not self.f1_holm.significant or self.f1.diff == 0:
            return ""
        return "below" if self.f1.diff > 0 else "above"


@dataclass
class ComparedRuns:
    """Every selected run placed by (variant, column), and the comparisons of every family."""

    reference: str
    families: list[Family]
    alpha: float
    intersection: bool
    resamples: int
    seed: int
    runs: dict[tuple[str, Column], LoggedRun]
    comparisons: list[Comparison]
    notes: list[str] = field(default_factory=list)

    @property
    def family(self) -> str:
        """The family of Table 1: the reference against its baselines."""
        return baselines_name(self.reference)

    @property
    def columns(self) -> list[Column]:
        return sorted({c for _, c in self.runs})

    @property
    def variants(self) -> list[str]:
        """Every variant placed, the reference first."""
        return _reference_first(self.reference, {m for m, _ in self.runs})

    @property
    def methods(self) -> list[str]:
        """The rows of Tables 1 and 9: the reference and its baselines (B of the baselines family)."""
        family = self.named(self.family)
        baselines = {b for a, b in family.pairs if a == self.reference} if family else set()
        return [m for m in _reference_first(self.reference, baselines | {self.reference}) if m in self.variants]

    def named(self, name: str) -> Family | None:
        return next((f for f in self.families if f.name == name), None)

    def of_family(self, name: str) -> list[Comparison]:
        """The comparisons of a named family (of all its Holm families, for a per-column or per-pair one)."""
        return [c for c in self.comparisons if c.family_name == name]

    def run(self, variant: str, column: Column) -> LoggedRun | None:
        return self.runs.get((variant, column))

    def comparison(self, variant: str, column: Column, family: str | None = None) -> Comparison | None:
        """The comparison of B = `variant` in `column` within `family` (default: the baselines family)."""
        return next((c for c in self.of_family(family or self.family) if c.variant == variant and c.column == column),
                    None)


def place_runs(runs: list[LoggedRun]) -> tuple[dict[tuple[str, Column], LoggedRun], list[str]]:
    """One run per (variant, column): the newest (runs come newest first); the rest are named in notes."""
    placed: dict[tuple[str, Column], LoggedRun] = {}
    notes = []
    for run in sorted(runs, key=lambda r: -r.start_time):
        key = (run.variant, run.column)
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
    shared = [r.id for r in reference.question_records if r.id in base_ids]
    if not shared:
        raise QuestionSetMismatch(f"{reference.name} and {baseline.name} share no questions")
    return tuple(shared)


def compare(runs: list[LoggedRun], reference: str, families: list[Family] | None = None, alpha: float = 0.05,
            intersection: bool = False, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> ComparedRuns:
    """Every family's pairs in every column where both runs exist; without `families`, the default ones
    (eval.compare.families.default_families), which need a run of the reference."""
    placed, notes = place_runs(runs)
    if families is None:
        if not any(m == reference for m, _ in placed):
            raise SelectionError(f"no run of the reference method {reference!r} among the selected runs "
                                 f"(methods: {sorted({m for m, _ in placed})}); pass --reference")
        families = default_families(placed.values(), reference)
    comparisons = []
    for family in families:
        comparisons += _family_comparisons(family, placed, notes, alpha, intersection, resamples, seed)
    return ComparedRuns(reference, families, alpha, intersection, resamples, seed, placed, comparisons, notes)


def _family_comparisons(family: Family, placed: dict[tuple[str, Column], LoggedRun], notes: list[str], alpha: float,
                        intersection: bool, resamples: int, seed: int) -> list[Comparison]:
    columns = sorted({c for _, c in placed})
    variants = {m for m, _ in placed}
    raw = []  # (holm family, column, a, b, ids, f1, em)
    for a, b in family.pairs:
        absent = [v for v in (a, b) if v not in variants]
        if absent:
            notes.append(f"family {family.name}: {a} vs {b} not compared: no run of {absent[0]!r}")
            continue
        for column in columns:
            run_a, run_b = placed.get((a, column)), placed.get((b, column))
            if run_a is None or run_b is None:
                if run_a or run_b:
                    present, missing = (a, b) if run_a else (b, a)
                    notes.append(f"{present} on {column[0]} / {column[1]}: no {missing} run in that column, "
                                 f"not compared (family {family.name})")
                continue
            if run_a.served_by != run_b.served_by:
                note = (f"{a} vs {b} on {column[0]} / {column[1]}: served by different engines ({engines(run_a)} "
                        f"vs {engines(run_b)}); greedy outputs differ between builds, so this pair also compares engines")
                notes += [note] if note not in notes else []
            ids = paired_ids(run_a, run_b, intersection)
            a_by, b_by = records_by_id(run_a), records_by_id(run_b)
            f1 = paired_bootstrap([100 * b_by[i].answer_f1 for i in ids], [100 * a_by[i].answer_f1 for i in ids],
                                  resamples, seed)
            em = mcnemar_exact([b_by[i].em >= 1 for i in ids], [a_by[i].em >= 1 for i in ids])
            raw.append((family.holm_name(column, (a, b)), column, a, b, ids, f1, em))
    # Holm within each Holm family only (one for the family, or one per column or pair), separately
    # for each metric; of the paper's size when the family names one.
    out = []
    for name in dict.fromkeys(r[0] for r in raw):
        members = [r for r in raw if r[0] == name]
        size = family.size or len(members)
        if len(members) > size:
            raise FamilyError(f"family {family.name}: {len(members)} comparisons formed in {name}, more than its "
                              f"size {size}")
        if len(members) < size:
            notes.append(f"family {name}: {len(members)} of the paper's {size} comparisons formed; Holm counts the "
                         f"other {size - len(members)} as p = 1")
        keys = [comparison_key(a, b, column) for _, column, a, b, *_ in members]
        f1_holm = holm(dict(zip(keys, (r[5].p for r in members))), alpha, size)
        em_holm = holm(dict(zip(keys, (r[6].p for r in members))), alpha, size)
        out += [Comparison(column, b, a, ids, f1, em, f1_holm[k], em_holm[k], name, size, family.name, len(members))
                for k, (_, column, a, b, ids, f1, em) in zip(keys, members)]
    return out


def engines(run: LoggedRun) -> str:
    return " + ".join(sorted(run.served_by)) or "not recorded"


def comparison_key(a: str, b: str, column: Column) -> str:
    """The name of one comparison in its Holm family."""
    return f"{a}|{b}|{column[0]}|{column[1]}"


def run_means(run: LoggedRun) -> dict[str, float]:
    """A run's headline numbers from its records: scores on 0-100, costs per question."""
    records = run.question_records
    costs = [r.cost_usd for r in records]
    return {
        "answer_f1": 100 * mean(r.answer_f1 for r in records),
        "em": 100 * mean(r.em for r in records),
        "support_f1": 100 * mean(r.support_f1 for r in records),
        # sp_em; joint_em, joint_f1 (HotpotQA); absent in older records
        **aggregate_defined([r.scores() for r in records]),
        "calls": mean(r.calls for r in records),
        "tokens": mean(r.prompt_tokens + r.completion_tokens for r in records),
        "cost_usd": mean(costs) if all(c is not None for c in costs) else float("nan"),
        "n": float(len(records)),
    }


def records_by_id(run: LoggedRun) -> dict[str, QuestionRecord]:
    """A run's records by question id (for pairing two runs' answers to the same question)."""
    return {r.id: r for r in run.question_records}


def _reference_first(reference: str, variants: set[str]) -> list[str]:
    return ([reference] if reference in variants else []) + sorted(variants - {reference})


def _examples(ids: list[str]) -> str:
    return f" (e.g. {', '.join(ids[:3])})" if ids else ""
