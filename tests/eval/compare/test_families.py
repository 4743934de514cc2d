"""Named Holm families: which variants are paired, Holm within each family only, and the ablation
tables (10-14) and Figure 6 built from them."""

import mlflow
import pytest

import eval.compare.__main__ as compare_module
import eval.run as run_module
from eval.compare.ablation_tables import ablation_files, table10, table11, table12, table13, table14
from eval.compare.families import Family, FamilyError, default_families, load_families, parse_cli_family
from eval.compare.pairs import compare, comparison_key
from eval.runs.logged_runs import LoggedRun
from eval.scoring.stats import holm
from tests.fixtures.logged_runs import HOTPOT, WIKI, run
from tests.fixtures.scripted_runs import (
    ARGS,
    direct_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import use_lm


def paper_grid_runs() -> list[LoggedRun]:
    return [run("eir", [0] * 8), run("direct", [0] * 8), run("eir_corpus", [0] * 8, setting="corpus"),
            run("full_pool decoding=strict", [0] * 8, decoding="strict"),
            run("eir H=4", [0] * 8, budget=4), run("eir H=8", [1] * 8, budget=8),
            run("direct H=8", [0] * 8, budget=8),
            run("eir no-list-feedback", [0] * 8, ablation="no-list-feedback"),
            run("eir repair", [1] * 8, ablation="repair"),
            run("eir repair-unapplied", [1] * 4 + [0] * 4, ablation="repair-unapplied")]


def test_default_families_follow_the_papers_tables():
    families = default_families(paper_grid_runs(), "eir")
    assert families == [
        # Not its own H or ablation runs, and only runs in its setting and decoding; one Holm family
        # per baseline over the columns (Table 6).
        Family("eir_vs_baselines", (("eir", "direct"),), per_pair=True),
        Family("h_sweep", (("eir H=4", "eir"), ("eir H=8", "eir"))),  # direct H=8 is not eir's sweep
        Family("list_feedback", (("eir", "eir no-list-feedback"),)),
        # Table 13: the repair arms against eir per column; Table 14: applied against unapplied, pooled.
        Family("repair", (("eir repair", "eir"), ("eir repair-unapplied", "eir")), per_column=True),
        Family("repair_applied", (("eir repair", "eir repair-unapplied"),)),
    ]
    assert default_families([run("eir", [1]), run("direct", [1])], "eir") == [
        Family("eir_vs_baselines", (("eir", "direct"),), per_pair=True)]
    # The corpus setting (Table 20): one Holm family per LM over the baselines.
    corpus = [run(v, [1], setting="corpus") for v in ("eir_corpus", "direct_corpus", "ssr_corpus votes=3 T=0")]
    assert default_families(corpus, "eir_corpus") == [
        Family("eir_corpus_vs_baselines", (("eir_corpus", "direct_corpus"), ("eir_corpus", "ssr_corpus votes=3 T=0")),
               per_column=True)]


def test_runs_differing_only_in_h_are_both_kept_and_compared():
    eir, eir8 = run("eir", [1, 0, 0, 0], calls=[3] * 4), run("eir H=8", [1, 1, 0, 0], budget=8, calls=[5] * 4)
    grid = compare([eir, eir8, run("direct", [0, 0, 0, 0])], "eir", resamples=500)
    assert grid.run("eir", HOTPOT) is eir and grid.run("eir H=8", HOTPOT) is eir8
    assert grid.variants == ["eir", "direct", "eir H=8"] and grid.methods == ["eir", "direct"]  # Table 1 rows
    [sweep] = grid.of_family("h_sweep")
    assert (sweep.reference, sweep.variant, sweep.family_size) == ("eir H=8", "eir", 1)
    assert sweep.f1.diff == pytest.approx(25.0)  # H=8 minus H=6
    assert [c.variant for c in grid.of_family("eir_vs_baselines")] == ["direct"]
    assert grid.comparison("eir", HOTPOT) is None  # Table 1 looks only in the baselines family


def test_holm_is_applied_within_each_family_only():
    runs = paper_grid_runs()[:2] + [run("full_pool", [0] * 8), run("eir H=8", [1] * 8, budget=8)] + [
        run(v, f, ablation=a, column=col) for col in (HOTPOT, WIKI)
        for v, f, a in (("eir repair", [1] * 8, "repair"), ("eir repair-unapplied", [1] * 4 + [0] * 4, "repair-unapplied"))]
    runs += [run("eir", [0] * 8, column=WIKI)]
    grid = compare(runs, "eir", resamples=500)
    assert sorted({c.family for c in grid.comparisons}) == [
        "eir_vs_baselines:eir vs direct", "eir_vs_baselines:eir vs full_pool", "h_sweep", "repair:2wiki/local/m",
        "repair:hotpotqa/local/m", "repair_applied"]
    for family in {c.family for c in grid.comparisons}:
        members = [c for c in grid.comparisons if c.family == family]
        for stat, adjusted in (("f1", "f1_holm"), ("em", "em_holm")):
            expected = holm({c.key: getattr(c, stat).p for c in members})
            assert all(getattr(c, adjusted).adjusted == expected[c.key].adjusted for c in members)
            assert all(c.family_size == len(members) for c in members)
    # H=8 is exact on all 8 questions, H=6 on none: McNemar p = 2 / 2^8, alone in its family.
    h8 = grid.comparison("eir", HOTPOT, "h_sweep")
    assert h8.em.p == h8.em_holm.adjusted == pytest.approx(1 / 128)
    pooled = holm({c.key: c.em.p for c in grid.comparisons})
    # Pooled, the three p = 1/128 of the nine comparisons would share 9/128: a different answer.
    assert len(grid.comparisons) == 9 and pooled[h8.key].adjusted == pytest.approx(9 / 128)
    # Repair in hotpotqa: p = 1/128 (repair vs eir) and 1/8 (unapplied vs eir, 4 discordant), Holm over these two.
    repair = {c.reference: c for c in grid.of_family("repair") if c.column == HOTPOT}
    assert repair["eir repair"].em_holm.adjusted == pytest.approx(2 / 128)
    assert repair["eir repair-unapplied"].em_holm.adjusted == pytest.approx(1 / 8)
    assert pooled[repair["eir repair"].key].adjusted != repair["eir repair"].em_holm.adjusted
    # Table 14: applied against unapplied (p = 1/8 in each column), Holm over both columns.
    applied = grid.of_family("repair_applied")
    assert [c.column for c in applied] == [WIKI, HOTPOT] and {c.em_holm.adjusted for c in applied} == {2 / 8}


def test_given_families_replace_the_defaults_and_missing_runs_are_noted():
    runs = [run("eir", [1, 0]), run("eir H=8", [1, 1], budget=8), run("eir", [1, 0], column=WIKI)]
    family = Family("mine", (("eir H=8", "eir"), ("eir H=4", "eir")))
    grid = compare(runs, "eir", [family], resamples=100)
    assert [(c.family, c.reference, c.column) for c in grid.comparisons] == [("mine", "eir H=8", HOTPOT)]
    assert any("no run of 'eir H=4'" in n for n in grid.notes)
    assert any("eir on 2wiki / local/m: no eir H=8 run in that column" in n for n in grid.notes)
    assert comparison_key("eir H=8", "eir", HOTPOT) == grid.comparisons[0].key


def test_load_families_reads_a_grid_toml_and_names_the_file_on_errors(tmp_path):
    good = tmp_path / "grid.toml"
    good.write_text('[[families]]\nname = "h_sweep"\ncompare = [["eir H=4", "eir"], ["eir H=8", "eir"]]\n\n'
                    '[[families]]\nname = "repair"\ncompare = [["eir repair", "eir"]]\nper_column = true\n')
    assert load_families(good) == [Family("h_sweep", (("eir H=4", "eir"), ("eir H=8", "eir"))),
                                   Family("repair", (("eir repair", "eir"),), per_column=True)]
    bad = tmp_path / "bad.toml"
    bad.write_text('[[families]]\nname = "h_sweep"\ncompare = [["eir H=8"]]\n')
    with pytest.raises(FamilyError, match=r"bad\.toml: \[\[families\]\] #1 \('h_sweep'\): compare must be"):
        load_families(bad)
    bad.write_text('[[families]]\nname = "x"\ncompare = [["eir", "eir"]]\n')
    with pytest.raises(FamilyError, match=r"bad\.toml.*'eir' is compared with itself"):
        load_families(bad)
    bad.write_text("[[families]\n")
    with pytest.raises(FamilyError, match=r"bad\.toml: not valid TOML"):
        load_families(bad)
    bad.write_text('[[families]]\ncompare = [["a", "b"]]\n')
    with pytest.raises(FamilyError, match=r"bad\.toml: \[\[families\]\] #1: needs name"):
        load_families(bad)
    assert parse_cli_family(["h_sweep", "eir H=8 vs eir"]) == Family("h_sweep", (("eir H=8", "eir"),))
    with pytest.raises(FamilyError, match="--family h_sweep: 'eir H=8 - eir' is not \"A vs B\""):
        parse_cli_family(["h_sweep", "eir H=8 - eir"])


def rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.split("\n\n")[0].splitlines()[2:]]


def test_table10_gives_calls_per_h_and_the_relative_increase():
    runs = [run("eir", [1, 0, 0, 0], calls=[3, 3, 4, 4]), run("eir H=4", [0] * 4, budget=4, calls=[2, 2, 3, 3]),
            run("eir H=8", [1, 1, 0, 0], budget=8, calls=[4, 5, 5, 6]),
            run("eir", [1, 1], column=WIKI, calls=[2, 2]), run("eir H=4", [1, 0], budget=4, column=WIKI, calls=[1, 2])]
    grid = compare(runs, "eir", resamples=200)
    text = table10(grid)
    assert [c.strip() for c in text.splitlines()[0].split("|")[2:4]] == ["2wiki · m", "hotpotqa · m"]
    assert rows(text) == [["H=4", "1.50", "2.50"], ["H=6", "2.00", "3.50"], ["H=8", "–", "5.00"],
                          ["relative increase H=6→H=max", "–", "+42.9% (H=8)"]]  # (5 - 3.5) / 3.5
    assert "2wiki · m: n=2" in text and "hotpotqa · m: n=4" in text
    sweep = {(r[0], r[1]): r for r in rows(table11(grid))}
    assert sweep[("hotpotqa · m", "H=8")][2:5] == ["H=6", "4", "50.0"]
    assert sweep[("hotpotqa · m", "H=8")][5].startswith("+25.0 [")
    assert "family 'h_sweep' (3 comparisons)" in table11(grid) and "200 resamples, seed 20260806" in table11(grid)
    assert table12(grid) is None and table13(grid) is None and set(ablation_files(grid)) == {"table10.md", "table11.md"}


def test_table12_shows_recall_reads_and_list_entries_of_eir_and_its_control():
    eir = run("eir", [1, 1, 0, 0], gold=[1, 0.5, 0, 0.5], reads=[2, 3, 4, 3], lists=[(2, 1)] * 4)
    control = run("eir no-list-feedback", [1, 0, 0, 0], ablation="no-list-feedback", gold=[0, 0, 0.5, 0.5],
                  reads=[1, 1, 2, 2], lists=[(1, 0)] * 4)
    text = table12(compare([eir, control], "eir", resamples=300))
    [row] = rows(text)
    assert row[:7] == ["hotpotqa · m", "eir − eir no-list-feedback", "4", "50.0 / 25.0", "50.0 / 25.0",
                       "3.00 / 1.50", "3.0 / 1.0"]
    assert row[7].startswith("+25.0 [") and "family 'list_feedback' (1 comparisons)" in text


def test_table13_is_per_column_and_table14_pools_the_columns():
    runs = [run("eir", [0, 0, 1, 1], calls=[3] * 4),
            run("eir repair", [1, 1, 1, 1], ablation="repair", calls=[6] * 4, repairs=[(2, 1)] * 4, lists=[(1, 2)] * 4),
            run("eir repair-unapplied", [1, 0, 1, 1], ablation="repair-unapplied", calls=[5] * 4,
                repairs=[(1, 1)] * 4, lists=[(1, 1)] * 4)]
    grid = compare(runs, "eir", resamples=300)
    r13, r13_unapplied = rows(table13(grid))
    assert r13[:3] == ["hotpotqa · m", "eir repair − eir", "4"] and r13[3].startswith("+50.0 [")
    assert r13[6:] == ["3.0 / 0.0", "3.00 / 0.00"]
    assert r13_unapplied[1] == "eir repair-unapplied − eir" and r13_unapplied[3].startswith("+25.0 [")
    [r14] = rows(table14(grid))
    assert r14[1] == "eir repair − eir repair-unapplied" and r14[3].startswith("+25.0 [")
    assert r14[6:] == ["3.0 / 2.0", "3.00 / 2.00"]
    assert "family 'repair:hotpotqa/local/m' (2 comparisons)" in table13(grid)
    assert "family 'repair_applied' (1 comparisons)" in table14(grid)


def test_compare_writes_the_ablation_tables_and_figure6(workdir, monkeypatch):
    use_lm(monkeypatch, direct_reply)
    run_module.main(ARGS + ["--method", "direct"])
    use_lm(monkeypatch, reply)
    for extra in ([], ["--budget", "8"], ["--ablation", "no-list-feedback"], ["--ablation", "repair"],
                  ["--ablation", "repair-unapplied"]):
        run_module.main(ARGS + extra)
    out = compare_module.main(["--experiment", "test", "--resamples", "200"])
    assert [f.name for f in out["grid"].families] == ["eir_vs_baselines", "h_sweep", "list_feedback", "repair",
                                                      "repair_applied"]
    assert {f"table{k}.md" for k in range(10, 15)} <= set(out["files"])
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(out["run_id"])}
    assert {f"table{k}.md" for k in range(10, 15)} | {"fig6_f1_em_vs_h.png"} <= names
    data = (out["out"] / "fig6_f1_em_vs_h.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert not any(name.startswith("diff_eir_vs_eir") for name in out["files"])  # diffs: baselines only
    metrics = mlflow.get_run(out["run_id"]).data.metrics
    assert metrics["family_size/h_sweep/eir H_8 vs eir/hotpotqa/local/scripted"] == 1.0
    assert metrics["family_size/repair/eir repair vs eir/hotpotqa/local/scripted"] == 2.0
    statistics = out["files"]["statistics.md"]
    assert "list_feedback (1)" in statistics and "repair:hotpotqa/local/scripted (2)" in statistics
