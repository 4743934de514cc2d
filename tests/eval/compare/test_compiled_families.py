"""Compiled programs across methods in eval.compare (no MLflow, no LM): the variants their runs get, the
families a grid file names for them (each compiled baseline against compiled EIR, each compiled method
against its own zero-shot run), Holm within each family only, the runs table and the warnings."""

from dataclasses import replace
from pathlib import Path

import pytest

import eval.compare.__main__ as compare_module
import eval.compare.comparison as comparison
from eval.compare.families import Family, default_families, load_families, parse_cli_family
from eval.compare.tables import runs_table
from eval.runs import tracking
from eval.runs.config import LMConfig, ProgramFile, RunConfig
from eval.runs.logged_runs import LoggedRun
from eval.scoring.stats import holm
from programs.registry import METHODS

PROGRAM = ProgramFile("gold-k2", "runs/compiled/gold-k2.json", "0" * 64)
N = 12
COMPILED = {"eir": "eir compiled=gold-k2", "direct": "direct compiled=gold-k2",
            "full_pool": "full_pool compiled=gold-k2", "ssr": "ssr compiled=gold-k2 votes=3 T=0.7",
            "reflexion_oracle": "reflexion_oracle compiled=gold-k2 trials=5",
            "reflexion_first": "reflexion_first compiled=gold-k2 trials=5"}
ZERO_SHOT = {"eir": "eir", "direct": "direct", "full_pool": "full_pool", "ssr": "ssr votes=3 T=0.7",
             "reflexion_oracle": "reflexion_oracle trials=5", "reflexion_first": "reflexion_first trials=5"}
METHOD_OF = {"reflexion_oracle": "reflexion", "reflexion_first": "reflexion"}


def config(label: str, compiled: bool) -> RunConfig:
    """The resolved condition of a run of `label` (a method's label) as eval.run labels and logs it."""
    made = RunConfig(method=METHOD_OF.get(label, label), program=PROGRAM if compiled else None,
                     lm=LMConfig(decoding="schema"), lm_name="local/m", default_decoding="schema", n=N)
    return made.with_label(label)


def test_the_variants_of_compiled_runs_of_every_method():
    """What a [[families]] table names: the label (Reflexion's two results), compiled=<name>, the options."""
    for label, variant in COMPILED.items():
        assert config(label, True).variant == variant
        assert config(label, False).variant == ZERO_SHOT[label]
    # One Reflexion run logs both labels (programs/registry.py), each with the program.
    assert [config("reflexion_oracle", True).with_label(lab).variant for lab in METHODS["reflexion"].labels] == [
        COMPILED["reflexion_oracle"], COMPILED["reflexion_first"]]
    # The corpus setting carries it in the label, before the program.
    corpus = replace(RunConfig(method="direct", setting="corpus", program=PROGRAM), lm_name="local/m")
    assert corpus.with_label("direct").variant == "direct_corpus compiled=gold-k2"


def step(n: int, title: str, read: str | None = None) -> dict:
    """An accepted pool read of `title`; `read`: the paragraph the pool read instead (a title fallback)."""
    return {"turn": n, "action": {"kind": "read", "title": title}, "accepted": True, "feedback": "read",
            "read_title": read or title, "title_fallback": read is not None}


def question(label: str, i: int, exact: bool, fallbacks: bool = False, submits: bool = True) -> dict:
    """Question i's record as eval.runs.execute writes it: two reads (each a fallback if asked) then a
    submit, unless it does not submit; Full Pool reads nothing."""
    method = METHOD_OF.get(label, label)
    turns = [step(1, "Nowhere", "A") if fallbacks else step(1, "A"), step(2, "Elsewhere", "B") if fallbacks
             else step(2, "B")]
    if submits:
        turns.append({"turn": 3, "action": {"kind": "submit", "answer": "x"}, "accepted": True, "feedback": "submitted"})
    episode = {"turns": turns, "submitted": "x" if submits else None, "forced_end": not submits}
    if method == "full_pool":
        trajectory, turns = {"method": "full_pool", "final_parsed": True}, []
    elif method == "reflexion":
        trajectory = {"method": "reflexion", "trials": [{"trial": 1, **episode}], "stopped_at": 1}
    else:
        trajectory = {"method": method, **episode, **({"final_parsed": True} if method == "eir" else {})}
    reads = sum(t["action"]["kind"] == "read" for t in turns)
    return {"id": f"q{i}", "question": f"q{i}?", "gold": "g", "prediction": ("g" if exact else "x") if submits else "",
            "answer_f1": float(exact), "em": float(exact), "support_f1": 0.5, "calls": 3, "prompt_tokens": 100,
            "completion_tokens": 10, "cost_usd": 0.0, "cache_hits": 0, "seconds": 2.0, "turns": len(turns),
            "rejected_actions": 0, "rejections_by_cause": {}, "citations": [], "citations_outside_evidence": 0,
            "title_fallbacks": sum(t.get("title_fallback", False) for t in turns), "reads": reads, "searches": 0,
            "evidence_titles": ["A", "B"][:reads], "gold_titles": ["A"], "gold_read_share": 1.0 if reads else 0.0,
            "forced_end": None if method == "full_pool" else not submits,
            "submitted_before_budget": submits and method != "full_pool", "trajectory": trajectory, "lm_calls": []}


def logged(label: str, compiled: bool, right: int, start: int, **kw) -> LoggedRun:
    """A run as eval.runs.logged_runs.load_run reads it back: its first `right` questions exact."""
    made = config(label, compiled)
    records = tuple(question(label, i, i < right, **kw) for i in range(N))
    return LoggedRun(f"run-{made.variant}", "0", made.run_name, made.variant, made.dataset, made.lm_name, made.budget,
                     start, {}, records, sweep=made.sweep, label=made.label, ablation="none", setting=made.setting,
                     decoding=made.lm.decoding, config=made)


# Questions exact per run: compiled EIR 12; the compiled baselines fewer; the zero-shot runs fewer still.
RIGHT = {("eir", True): 12, ("direct", True): 9, ("full_pool", True): 6, ("ssr", True): 0,  # SSR: below
         ("reflexion_oracle", True): 4, ("reflexion_first", True): 2, ("eir", False): 3, ("direct", False): 8,
         ("full_pool", False): 6, ("ssr", False): 2, ("reflexion_oracle", False): 4, ("reflexion_first", False): 1}


def all_runs() -> list[LoggedRun]:
    """Every method zero-shot and compiled with gold-k2; compiled Direct's reads all fall back, and compiled
    SSR submits only on q8-q11 (all four exact)."""
    special = {("direct", True): {"fallbacks": True}}
    runs = [logged(label, compiled, right, k, **special.get((label, compiled), {}))
            for k, ((label, compiled), right) in enumerate(RIGHT.items())]
    ssr = next(r for r in runs if r.variant == COMPILED["ssr"])
    ssr_records = tuple(question("ssr", i, i >= 8, submits=i >= 8) for i in range(N))
    return [replace(r, records=ssr_records) if r is ssr else r for r in runs]


BASELINES = ("direct", "full_pool", "ssr", "reflexion_oracle", "reflexion_first")
FAMILIES_TOML = "\n".join(
    ['[[families]]', 'name = "compiled_vs_eir"',
     "compare = [" + ", ".join(f'["{COMPILED[b]}", "{COMPILED["eir"]}"]' for b in BASELINES) + "]",
     "", '[[families]]', 'name = "compiled_vs_zero_shot"',
     "compare = [" + ", ".join(f'["{COMPILED[m]}", "{ZERO_SHOT[m]}"]' for m in ("eir", *BASELINES)) + "]"]) + "\n"


def test_the_compiled_grid_names_these_families():
    """grids/compiled.toml (issue 42) pairs exactly the variants these tests compare."""
    path = Path(__file__).resolve().parents[3] / "grids" / "compiled.toml"
    if not path.exists():
        pytest.skip("no grids/compiled.toml in this tree")
    assert load_families(path) == [
        Family("compiled_vs_eir", tuple((COMPILED[b], COMPILED["eir"]) for b in BASELINES)),
        Family("compiled_vs_zero_shot", tuple((COMPILED[m], ZERO_SHOT[m]) for m in ("eir", *BASELINES)))]


def test_a_grid_file_s_compiled_families_form_exactly_their_pairs_with_holm_within_each(tmp_path, monkeypatch, capsys):
    (tmp_path / "grid.toml").write_text(FAMILIES_TOML)
    families = load_families(tmp_path / "grid.toml")
    assert [f.name for f in families] == ["compiled_vs_eir", "compiled_vs_zero_shot"]
    assert families[0].pairs[0] == ("direct compiled=gold-k2", "eir compiled=gold-k2")
    assert families[1].pairs[1] == ("direct compiled=gold-k2", "direct")
    # The command line's form reads the same pair.
    assert parse_cli_family(["c", "direct compiled=gold-k2 vs eir compiled=gold-k2"]).pairs == (families[0].pairs[0],)

    runs = all_runs()
    monkeypatch.setattr(comparison, "select_runs", lambda *args, **kw: (runs, []))  # no MLflow store
    monkeypatch.setattr(tracking, "use_tracking_uri", lambda: "offline")
    out = compare_module.main(["--families", str(tmp_path / "grid.toml"), "--reference", "eir compiled=gold-k2",
                               "--resamples", "200", "--no-log", "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    grid = out["grid"]
    column = ("hotpotqa", "local/m")
    formed = [(c.family_name, c.reference, c.variant, c.column) for c in grid.comparisons]
    assert formed == [("compiled_vs_eir", COMPILED[b], COMPILED["eir"], column) for b in BASELINES] + [
        ("compiled_vs_zero_shot", COMPILED[m], ZERO_SHOT[m], column) for m in ("eir", *BASELINES)]
    assert not grid.notes  # every pair found its two runs

    # Holm within each family only (pooled over the columns: one Holm family each), for F1 and EM alike.
    for name, size in (("compiled_vs_eir", 5), ("compiled_vs_zero_shot", 6)):
        members = grid.of_family(name)
        assert {c.family for c in members} == {name} and {c.family_size for c in members} == {size}
        for stat, adjusted in (("f1", "f1_holm"), ("em", "em_holm")):
            expected = holm({c.key: getattr(c, stat).p for c in members})
            assert [getattr(c, adjusted).adjusted for c in members] == [expected[c.key].adjusted for c in members]
    # EIR compiled against zero-shot: 9 questions only the compiled run got right, McNemar p = 2/2^9, the
    # smallest of its family of six, so times 6. Pooled over all eleven comparisons it would rank second
    # (compiled reflexion_first − compiled EIR: b = 10, p = 2/2^10) and be times 10.
    eir = next(c for c in grid.of_family("compiled_vs_zero_shot") if c.reference == COMPILED["eir"])
    assert (eir.em.b, eir.em.c) == (0, 9) and eir.em.p == pytest.approx(2 / 2**9)
    assert eir.em_holm.adjusted == pytest.approx(6 * 2 / 2**9) and eir.em_holm.significant
    pooled = holm({c.key: c.em.p for c in grid.comparisons})
    assert pooled[eir.key].adjusted == pytest.approx(10 * 2 / 2**9)
    ssr = next(c for c in grid.of_family("compiled_vs_eir") if c.reference == COMPILED["ssr"])
    assert (ssr.em.b, ssr.em.c) == (8, 0) and ssr.f1.diff == pytest.approx(100 * 4 / 12 - 100)  # A − B

    # The warnings of the compiled runs, printed before the tables and written beside them.
    direct_name, ssr_name = config("direct", True).run_name, config("ssr", True).run_name
    expected = [
        f"- {direct_name}: 24 of 24 reads (100%) were title fallbacks: the agent asked for titles it had already read "
        "or that are not in the pool, so the pool read its first unread paragraph instead (main cause title not in "
        f"the pool: 24) (run run-{COMPILED['direct']})",
        f"- {ssr_name}: 8 of 12 episodes ended without a submission (main cause read on every turn: 8) "
        f"(run run-{COMPILED['ssr']})",
        f"- {ssr_name}: 8 of 12 answers are empty (main cause no submission: 8) (run run-{COMPILED['ssr']})"]
    assert printed.index("# Degenerate runs") < printed.index("# Table 1")
    assert [line for line in printed.splitlines() if line.startswith("- ")] == expected
    assert [line for line in out["files"]["degenerate_runs.md"].splitlines() if line.startswith("- ")] == expected
    assert (out["out"] / "runs.md").read_text() == out["files"]["runs.md"] and "# Runs: scores" in printed


def cells(text: str) -> dict[str, dict[str, str]]:
    """The runs table's rows by variant, each cell by its column's name."""
    lines = [line for line in text.split("\n\n")[0].splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].split("|")[1:-1]]
    return {row[1]: dict(zip(head, row)) for row in ([c.strip() for c in line.split("|")[1:-1]] for line in lines[1:])}


def test_the_runs_table_shows_each_compiled_and_zero_shot_run_with_its_behaviour():
    families = [Family("compiled_vs_zero_shot", tuple((COMPILED[m], ZERO_SHOT[m]) for m in ("eir", *BASELINES)))]
    grid = comparison.compare(all_runs(), COMPILED["eir"], families, resamples=100)
    text = runs_table(grid)
    rows = cells(text)
    assert list(rows) == [COMPILED["eir"], *sorted(set(COMPILED.values()) - {COMPILED["eir"]} | set(ZERO_SHOT.values()))]
    assert list(rows[COMPILED["eir"]]) == ["column", "variant", "n", "Answer F1", "EM", "Support F1", "calls/q",
                                           "reads/q", "rejected", "no submit", "fallbacks/q", "s/q", "warnings"]
    assert rows[COMPILED["eir"]] == {
        "column": "hotpotqa · m", "variant": COMPILED["eir"], "n": "12", "Answer F1": "100.0", "EM": "100.0",
        "Support F1": "50.0", "calls/q": "3.00", "reads/q": "2.00", "rejected": "0.000", "no submit": "0.00",
        "fallbacks/q": "0.00", "s/q": "2.0", "warnings": "–"}
    direct = rows[COMPILED["direct"]]
    assert (direct["Answer F1"], direct["fallbacks/q"], direct["warnings"]) == ("75.0", "2.00", "title_fallbacks")
    ssr = rows[COMPILED["ssr"]]
    assert (ssr["Answer F1"], ssr["no submit"], ssr["warnings"]) == ("33.3", "0.67", "no_submission, empty_answers")
    # Full Pool has no episodes: no submit has nothing to count, and it reads nothing.
    assert (rows["full_pool"]["no submit"], rows["full_pool"]["reads/q"], rows["full_pool"]["fallbacks/q"]) == (
        "–", "0.00", "0.00")
    assert rows[ZERO_SHOT["reflexion_first"]]["Answer F1"] == "8.3"


def test_default_families_leave_compiled_runs_out_of_a_zero_shot_reference_s_baselines():
    runs = all_runs()
    assert default_families(runs, "eir") == [
        Family("eir_vs_baselines", tuple(("eir", ZERO_SHOT[b]) for b in sorted(BASELINES, key=ZERO_SHOT.get)),
               per_pair=True)]
    # Compiled EIR as the reference: the runs of the same program are its baselines.
    assert default_families(runs, COMPILED["eir"]) == [
        Family("eir compiled=gold-k2_vs_baselines",
               tuple((COMPILED["eir"], COMPILED[b]) for b in sorted(BASELINES, key=COMPILED.get)), per_pair=True)]
