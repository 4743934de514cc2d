"""The paper's Holm families as the shipped grids name them, on hand-built runs: how many comparisons
each Holm family holds (Tables 1/6 with Appendix G, 13, 14, 20), Holm of the paper's size when some
comparisons cannot be formed, and the exact McNemar p of all-one-way discordant pairs (F.2, F.3)."""

from pathlib import Path

import pytest

import eval.grid as grid_module
from eval.compare.families import Family, FamilyError, load_families
from eval.compare.pairs import compare
from eval.scoring.stats import BOOTSTRAP_SEED, holm, mcnemar_exact
from tests.fixtures.grids import BASE, bad
from tests.fixtures.logged_runs import run

GRIDS = Path(__file__).resolve().parents[3] / "grids"
DATASETS, LMS = ("hotpotqa", "2wiki", "musique"), ("openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5")
MAIN_BASELINES = ("direct", "ssr votes=3 T=0.7", "reflexion_oracle trials=5", "reflexion_first trials=5", "full_pool")
CORPUS_BASELINES = ("direct_corpus", "ssr_corpus votes=3 T=0", "reflexion_oracle_corpus trials=5",
                    "reflexion_first_corpus trials=5")


def cells(variants, datasets=DATASETS, setting="pool", ablations=None, right=None) -> list:
    """One run of each variant in every dataset x LM column, on 12 questions: the first right[v] are
    exact (default: 12 for the first variant, 2 fewer for each next one)."""
    ablations, right = ablations or {}, right or {v: 12 - 2 * k for k, v in enumerate(variants)}
    return [run(v, [float(i < right[v]) for i in range(12)], column=(d, lm), setting=setting,
                ablation=ablations.get(v, "none"))
            for v in variants for d in datasets for lm in LMS]


def holm_families(grid) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in grid.comparisons:
        out.setdefault(c.family, []).append(c)
    return out


def test_table1_and_6_one_holm_family_of_six_per_baseline_and_full_pool_its_own():
    families = load_families(GRIDS / "paper-main.toml")
    assert families == [Family("eir_vs_baselines", tuple(("eir", b) for b in MAIN_BASELINES), per_pair=True, size=6)]
    grid = compare(cells(("eir",) + MAIN_BASELINES), "eir", families, resamples=200)
    groups = holm_families(grid)
    assert sorted(groups) == sorted(f"eir_vs_baselines:eir vs {b}" for b in MAIN_BASELINES)
    for members in groups.values():
        assert len(members) == 6 and {c.family_size for c in members} == {6} and {c.formed for c in members} == {6}
        assert len({c.column for c in members}) == 6 and len({c.variant for c in members}) == 1  # six rows, one baseline
        expected = holm({c.key: c.f1.p for c in members})
        assert [c.f1_holm.adjusted for c in members] == [expected[c.key].adjusted for c in members]
    full_pool = groups["eir_vs_baselines:eir vs full_pool"]
    assert {c.variant for c in full_pool} == {"full_pool"}  # Appendix G's own group: no other baseline in it
    assert grid.methods == ["eir", *sorted(MAIN_BASELINES)]  # Table 1's rows, one family for all of them
    assert not grid.notes  # every comparison the paper makes is formed


def test_table20_groups_of_five_per_lm_four_formed_and_the_fifth_counts_as_p_one():
    families = load_families(GRIDS / "paper-corpus.toml")
    assert families == [Family("eir_corpus_vs_baselines", tuple(("eir_corpus", b) for b in CORPUS_BASELINES),
                               per_column=True, size=5)]
    grid = compare(cells(("eir_corpus",) + CORPUS_BASELINES, datasets=("hotpotqa",), setting="corpus"), "eir_corpus",
                   families, resamples=200)
    groups = holm_families(grid)
    assert sorted(groups) == [f"eir_corpus_vs_baselines:hotpotqa/{lm}" for lm in sorted(LMS)]
    for members in groups.values():
        assert len(members) == 4 and {(c.family_size, c.formed, c.size_text) for c in members} == {(5, 4, "4 of 5")}
        for stat in ("f1", "em"):  # per metric: each has its own adjustment
            padded = holm({**{c.key: getattr(c, stat).p for c in members}, "unformed": 1.0})
            assert [getattr(c, f"{stat}_holm").adjusted for c in members] == [padded[c.key].adjusted for c in members]
    assert sum("4 of the paper's 5 comparisons formed" in n for n in grid.notes) == 2


def test_table13_four_per_column_two_formed_and_table14_the_six_pooled():
    families = {f.name: f for f in load_families(GRIDS / "paper-ablations.toml")}
    assert families["repair"] == Family("repair", (("eir repair", "eir"), ("eir repair-unapplied", "eir")),
                                        per_column=True, size=4)
    assert families["repair_applied"] == Family("repair_applied", (("eir repair", "eir repair-unapplied"),), size=6)
    ablations = {"eir repair": "repair", "eir repair-unapplied": "repair-unapplied"}
    right = {"eir": 0, "eir repair": 12, "eir repair-unapplied": 11}
    grid = compare(cells(tuple(right), ablations=ablations, right=right), "eir",
                   [families["repair"], families["repair_applied"]], resamples=200)
    groups = holm_families(grid)
    table13 = {k: v for k, v in groups.items() if k.startswith("repair:")}
    assert len(table13) == 6  # one per benchmark and LM
    for members in table13.values():
        assert {(c.family_size, c.formed) for c in members} == {(4, 2)}
        assert {c.reference for c in members} == {"eir repair", "eir repair-unapplied"}
        # 12 and 11 questions wrong -> right against eir: p = 2 * 0.5^12 and 2 * 0.5^11, times Holm's 4 and 3
        # (the two comparisons not formed sort last at p = 1); over the two formed alone it would be 2 and 1.
        adjusted = {c.reference: c.em_holm.adjusted for c in members}
        assert adjusted == {"eir repair": pytest.approx(4 * 2 * 0.5 ** 12),
                            "eir repair-unapplied": pytest.approx(3 * 2 * 0.5 ** 11)}
    [table14] = [v for k, v in groups.items() if k == "repair_applied"]
    assert len(table14) == 6 and {(c.family_size, c.formed) for c in table14} == {(6, 6)}
    assert len({c.column for c in table14}) == 6


def test_holm_of_the_papers_size_equals_holm_with_the_missing_at_p_one():
    formed = {"a": 0.01, "b": 0.04}
    padded = holm({**formed, "x": 1.0, "y": 1.0})
    sized = holm(formed, size=4)
    assert {k: v.adjusted for k, v in sized.items()} == {k: padded[k].adjusted for k in formed}
    assert sized["a"].adjusted == pytest.approx(0.04) and sized["b"].adjusted == pytest.approx(0.12)
    assert holm(formed)["a"].adjusted == pytest.approx(0.02)  # adjusting over the formed two only is smaller
    with pytest.raises(ValueError, match="family of 1 comparisons cannot hold 2"):
        holm(formed, size=1)


def test_a_family_holding_more_than_its_size_is_refused():
    family = Family("tight", (("eir", "direct"),), per_pair=True, size=1)
    with pytest.raises(FamilyError, match="family tight: 2 comparisons formed in tight:eir vs direct, more than its "
                                          "size 1"):
        compare(cells(("eir", "direct"), datasets=("hotpotqa",)), "eir", [family], resamples=50)


def test_load_families_reads_per_pair_and_size_and_refuses_bad_ones(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('[[families]]\nname = "x"\ncompare = [["a", "b"]]\nper_pair = true\nsize = 6\n')
    assert load_families(path) == [Family("x", (("a", "b"),), per_pair=True, size=6)]
    for body, message in (("per_pair = true\nper_column = true", "per_column and per_pair together"),
                          ("size = 0", "size must be a positive integer"), ("per_pair = 1", "per_pair must be true")):
        path.write_text(f'[[families]]\nname = "x"\ncompare = [["a", "b"]]\n{body}\n')
        with pytest.raises(FamilyError, match=message):
            load_families(path)


@pytest.mark.parametrize("k", [1, 174, 335])
def test_mcnemar_with_every_discordant_pair_one_way_is_two_times_half_to_the_k(k):
    # A hand-built 2x2 table (before x after): k wrong -> right, none right -> wrong, plus concordant
    # questions (7 wrong both times, 5 right both times) that the exact test ignores.
    before = [False] * k + [False] * 7 + [True] * 5
    after = [True] * k + [False] * 7 + [True] * 5
    result = mcnemar_exact(before, after)
    assert (result.b, result.c) == (0, k)
    assert result.p == pytest.approx(2 * 0.5 ** k, rel=1e-12)  # the paper's 2 * 0.5^335 and 2 * 0.5^174


def test_the_default_bootstrap_seed_is_the_papers():
    assert BOOTSTRAP_SEED == 20260806


def test_a_grid_file_takes_per_pair_and_size_and_refuses_bad_ones(tmp_path):
    ok = BASE + '[[methods]]\nmethod = "eir"\n\n[[methods]]\nmethod = "direct"\n\n[[families]]\nname = "f"\n' \
                'compare = [["eir", "direct"]]\n'
    (tmp_path / "ok.toml").write_text(ok + "per_pair = true\nsize = 6\n")
    [family] = grid_module.load_grid(tmp_path / "ok.toml").families
    assert (family["per_pair"], family["size"]) == (True, 6)
    assert "families[0].size must be a positive integer" in bad(tmp_path, ok + "size = 0\n")
    assert "per_column and per_pair together" in bad(tmp_path, ok + "per_pair = true\nper_column = true\n")
    assert "families[0].per_pair must be true or false" in bad(tmp_path, ok + 'per_pair = "yes"\n')
