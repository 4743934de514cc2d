"""Which comparisons are Holm-adjusted together: named families of (A, B) variant pairs, ΔF1 = A − B.
The families derived from the variants present, and those a grid file or the command line names:
docs/experiments.md, "Comparing runs". Holm runs separately for each metric (F1, EM).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from eval.runs.errors import RunError
from eval.runs.logged_runs import LoggedRun
from programs.options import OptionsError, positive_int

Pair = tuple[str, str]  # (A, B): two variants (eval.runs.config.RunConfig.variant)

H_SWEEP, LIST_FEEDBACK, REPAIR, REPAIR_APPLIED = "h_sweep", "list_feedback", "repair", "repair_applied"
FAMILY_KEYS = ("name", "compare", "per_column", "per_pair", "size")


class FamilyError(RunError, ValueError):
    """A family definition that cannot be used (bad TOML, malformed pair, repeated name)."""


@dataclass(frozen=True)
class Family:
    name: str
    pairs: tuple[Pair, ...]
    per_column: bool = False  # each (dataset, LM) column is its own Holm family
    per_pair: bool = False  # each pair is its own Holm family over the columns (Table 6: one per baseline)
    size: int | None = None  # comparisons in each Holm family in the paper; those not formed here count as p = 1

    def holm_name(self, column: tuple[str, str], pair: Pair) -> str:
        """The Holm family the comparison of `pair` in `column` belongs to."""
        if self.per_column:
            return f"{self.name}:{column[0]}/{column[1]}"
        if self.per_pair:
            return f"{self.name}:{pair[0]} vs {pair[1]}"
        return self.name

    @property
    def grouping(self) -> str:
        """How it splits into Holm families, as logged: 'per column', 'per pair' or 'pooled', and the size."""
        per = "per column" if self.per_column else "per pair" if self.per_pair else "pooled"
        return per + (f", size {self.size}" if self.size else "")


def baselines_name(reference: str) -> str:
    return f"{reference}_vs_baselines"


def default_families(runs: Iterable[LoggedRun], reference: str) -> list[Family]:
    """The paper's families among `runs`; a family none of whose variants ran is left out
    (the baselines family is always there, possibly empty, as Table 1 names it). Sizes are the
    comparisons formed: the paper's sizes are in its grid files."""
    by_variant = {r.variant: r for r in runs}  # runs of one variant share label, budget, sweep, ablation
    ref = by_variant.get(reference)
    if ref is None:
        return []

    def sibling(ablation: str) -> str | None:
        """R's own ablation run: same method label, budget and program."""
        return next((v for v, r in sorted(by_variant.items())
                     if _label(r) == _label(ref) and r.budget == ref.budget and r.ablation == ablation
                     and _program(r) == _program(ref)), None)

    # R's ablations and other budgets are its own variants, not baselines.
    # Baselines ran in R's condition: same H, setting, decoding and program (a corpus, a strict-decoded
    # or a compiled run is never a baseline of a zero-shot pool EIR run decoded by default; the runs of
    # a compiled program are paired by the families a grid or --family names).
    baselines = sorted(v for v, r in by_variant.items()
                       if r.budget == ref.budget and r.ablation == "none" and _label(r) != _label(ref)
                       and r.setting == ref.setting and r.decoding == ref.decoding and _program(r) == _program(ref))
    sweep = sorted((v for v, r in by_variant.items() if _sweep(r) == _sweep(ref) and r.budget != ref.budget),
                   key=lambda v: by_variant[v].budget)
    # Pool: Table 6 adjusts each baseline's comparisons over the dataset x LM columns (Full Pool's
    # too, as Appendix G's own group); corpus (HotpotQA only): Table 20 adjusts per LM over the baselines.
    corpus = ref.setting == "corpus"
    families = [Family(baselines_name(reference), tuple((reference, b) for b in baselines),
                       per_column=corpus, per_pair=not corpus)]
    if sweep:
        families.append(Family(H_SWEEP, tuple((v, reference) for v in sweep)))
    control = sibling("no-list-feedback")
    if control:
        families.append(Family(LIST_FEEDBACK, ((reference, control),)))
    # Table 13: each repair arm against R within each column; Table 14: applied against unapplied,
    # pooled over the columns.
    repair, unapplied = sibling("repair"), sibling("repair-unapplied")
    arms = tuple((arm, reference) for arm in (repair, unapplied) if arm)
    if arms:
        families.append(Family(REPAIR, arms, per_column=True))
    if repair and unapplied:
        families.append(Family(REPAIR_APPLIED, ((repair, unapplied),)))
    return families


def load_families(path: str | Path) -> list[Family]:
    """The `[[families]]` tables of a grid TOML file:

        [[families]]
        name = "h_sweep"
        compare = [["eir H=4", "eir"], ["eir H=8", "eir"]]
        per_column = false  # optional: one Holm family per (dataset, LM) column
        per_pair = false    # optional: one Holm family per pair, over the columns
        size = 4            # optional: the paper's comparisons per Holm family (the missing count as p = 1)
    """
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise FamilyError(f"{path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise FamilyError(f"{path}: not valid TOML: {exc}") from None
    tables = data.get("families")
    if not isinstance(tables, list) or not tables:
        raise FamilyError(f"{path}: no [[families]] tables")
    families = [_from_table(t, f"{path}: [[families]] #{i}") for i, t in enumerate(tables, 1)]
    return checked(families, str(path))


def parse_cli_family(items: list[str]) -> Family:
    """`--family NAME "A vs B" ...`: one family pooled over the columns."""
    name, *pairs = items
    where = f"--family {name}"
    if not pairs:
        raise FamilyError(f'{where}: give at least one pair, e.g. --family {name} "eir H=8 vs eir"')
    split = [p.split(" vs ") for p in pairs]
    bad = [p for p, s in zip(pairs, split) if len(s) != 2 or not all(x.strip() for x in s)]
    if bad:
        raise FamilyError(f'{where}: {bad[0]!r} is not "A vs B"')
    return _family(name, [(a.strip(), b.strip()) for a, b in split], False, where)


def checked(families: list[Family], where: str) -> list[Family]:
    """Family names must be unique: each is one Holm adjustment."""
    names = [f.name for f in families]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise FamilyError(f"{where}: family {repeated[0]!r} is defined more than once")
    return families


def _from_table(table: object, where: str) -> Family:
    if not isinstance(table, dict):
        raise FamilyError(f"{where}: not a table")
    unknown = sorted(set(table) - set(FAMILY_KEYS))
    if unknown:
        raise FamilyError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(FAMILY_KEYS)})")
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise FamilyError(f'{where}: needs name = "..."')
    where = f"{where} ({name!r})"
    pairs = table.get("compare")
    if not isinstance(pairs, list) or not pairs or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) and x.strip() for x in p) for p in pairs):
        raise FamilyError(f'{where}: compare must be a non-empty list of ["A", "B"] variant pairs, got {pairs!r}')
    per_column, per_pair = table.get("per_column", False), table.get("per_pair", False)
    for key, value in (("per_column", per_column), ("per_pair", per_pair)):
        if not isinstance(value, bool):
            raise FamilyError(f"{where}: {key} must be true or false, got {value!r}")
    size = table.get("size")
    if size is not None:
        try:
            positive_int("size", size)
        except OptionsError as exc:
            raise FamilyError(f"{where}: {exc}") from None
    return _family(name, [(a, b) for a, b in pairs], per_column, where, per_pair, size)


def _family(name: str, pairs: list[Pair], per_column: bool, where: str, per_pair: bool = False,
            size: int | None = None) -> Family:
    if per_column and per_pair:
        raise FamilyError(f"{where}: per_column and per_pair together leave one comparison per Holm family; "
                          "choose one")
    same = [a for a, b in pairs if a == b]
    if same:
        raise FamilyError(f"{where}: {same[0]!r} is compared with itself")
    repeated = sorted({p for p in pairs if pairs.count(p) > 1})
    if repeated:
        raise FamilyError(f"{where}: pair {list(repeated[0])} is listed twice")
    return Family(name.strip(), tuple(pairs), per_column, per_pair, size)


def _label(run: LoggedRun) -> str:
    return run.label or run.variant  # runs built by hand may leave label and sweep empty


def _program(run: LoggedRun) -> str | None:
    """The compiled program's name a run loaded (None: zero-shot; RunConfig.program)."""
    return run.config.program.name if run.config.program else None


def _sweep(run: LoggedRun) -> str:
    return run.sweep or run.variant
