"""Pairing runs, the comparison family, and the tables built from it (no MLflow involved)."""

from dataclasses import replace

import pytest

from eval.compare.error_analysis import evidence_availability, question_diff
from eval.compare.pairs import QuestionSetMismatch, compare, place_runs
from eval.compare.tables import comparisons_csv, support_table, table1, table9
from eval.runs.logged_runs import LoggedRun, SelectionError


def record(qid: str, em: float, f1: float | None = None, calls: int = 2, read_gold: bool = True) -> dict:
    return {"id": qid, "question": f"question {qid}?", "gold": f"gold {qid}", "prediction": "x" if em else "y",
            "answer_f1": em if f1 is None else f1, "em": em, "support_f1": 0.5, "calls": calls,
            "prompt_tokens": 100 * calls, "completion_tokens": 10 * calls, "cost_usd": 0.0,
            "evidence_titles": ["G"] if read_gold else ["D"], "gold_titles": ["G"],
            "gold_read_share": 1.0 if read_gold else 0.0}


def run(method: str, ems: list[int], dataset: str = "hotpotqa", lm: str = "local/m", calls: int = 2,
        start: int = 0, ids: list[str] | None = None, **kw) -> LoggedRun:
    ids = ids or [f"q{i}" for i in range(len(ems))]
    return LoggedRun(f"{method}-{dataset}-{lm}-{start}", "0", f"{method} / {dataset} / {lm} / H=6", method, dataset, lm,
                     6, start, {}, tuple(record(i, e, calls=calls, **kw) for i, e in zip(ids, ems)))


def test_reference_is_compared_with_each_baseline_per_column_and_holm_spans_each_baselines_columns():
    ref = [1] * 12 + [0] * 8
    runs = [run("eir", ref), run("direct", [0] * 12 + [0] * 8, calls=6), run("full_pool", ref, calls=1),
            run("eir", [1] * 10, dataset="2wiki"), run("direct", [1] * 10, dataset="2wiki")]
    grid = compare(runs, "eir", resamples=2000)
    assert grid.columns == [("2wiki", "local/m"), ("hotpotqa", "local/m")]
    assert grid.methods == ["eir", "direct", "full_pool"]
    assert [(c.variant, c.column[0]) for c in grid.comparisons] == [("direct", "2wiki"), ("direct", "hotpotqa"),
                                                                    ("full_pool", "hotpotqa")]
    direct = grid.comparison("direct", ("hotpotqa", "local/m"))
    assert (direct.em.b, direct.em.c) == (0, 12) and direct.em.p == pytest.approx(2 / 2**12)
    assert direct.f1.diff == pytest.approx(60.0)  # points: reference minus baseline
    # Holm within Direct's two columns (Table 6: one family per baseline); 2wiki's identical runs have p = 1.
    assert direct.em_holm.adjusted == pytest.approx(2 * 2 / 2**12) and direct.em_holm.significant
    assert (direct.family, direct.family_size) == ("eir_vs_baselines:eir vs direct", 2)
    assert grid.comparison("full_pool", ("hotpotqa", "local/m")).family_size == 1  # its own group (Appendix G)
    assert direct.verdict == "below"
    same = grid.comparison("full_pool", ("hotpotqa", "local/m"))
    assert same.em.p == 1.0 and same.f1_holm.adjusted == 1.0 and same.verdict == ""
    assert grid.family == "eir_vs_baselines"


def test_runs_on_different_questions_are_refused_unless_intersection_is_asked():
    eir = run("eir", [1, 1, 0, 0])
    direct = run("direct", [1, 0, 0], ids=["q0", "q1", "q9"])
    with pytest.raises(QuestionSetMismatch, match=r"4 questions.*3 questions.*2 only in the first \(e.g. q2, q3\), "
                                                  r"1 only in the second \(e.g. q9\).*--intersection.*2 shared"):
        compare([eir, direct], "eir")
    grid = compare([eir, direct], "eir", intersection=True, resamples=500)
    assert grid.comparisons[0].ids == ("q0", "q1") and (grid.comparisons[0].em.b, grid.comparisons[0].em.c) == (0, 1)
    with pytest.raises(QuestionSetMismatch, match="share no questions"):
        compare([eir, run("direct", [1], ids=["z"])], "eir", intersection=True)


def test_missing_reference_and_duplicate_runs_are_reported():
    with pytest.raises(SelectionError, match="no run of the reference method 'eir'.*'direct'"):
        compare([run("direct", [1])], "eir")
    placed, notes = place_runs([run("eir", [1], start=1), run("eir", [0], start=5)])
    assert placed[("eir", ("hotpotqa", "local/m"))].start_time == 5  # the newest is kept
    assert len(notes) == 1 and "eir-hotpotqa-local/m-1" in notes[0] and "--runs" in notes[0]
    grid = compare([run("eir", [1]), run("direct", [1], dataset="2wiki")], "eir")
    assert grid.comparisons == [] and "no eir run in that column" in grid.notes[0]


def test_table1_marks_a_significantly_worse_baseline_and_shows_calls():
    runs = [run("eir", [1] * 12 + [0] * 8, calls=8), run("direct", [0] * 20, calls=6)]
    text = table1(compare(runs, "eir", resamples=2000))
    lines = text.splitlines()
    assert "hotpotqa · m F1" in lines[0] and "calls/q" in lines[0]
    assert [c.strip() for c in lines[2].split("|")[1:4]] == ["eir", "60.0", "8.00"]
    assert "0.0*" in lines[3] and "6.00" in lines[3]
    assert "Holm within each baseline's 1 comparisons over the columns (family 'eir_vs_baselines', one Holm family " \
           "per baseline)" in text and "n=20" in text


def test_table9_averages_columns_and_gives_ratios_to_the_reference():
    runs = [run("eir", [1, 1, 0, 0], calls=8), run("eir", [1, 1, 1, 1], dataset="2wiki", calls=8),
            run("full_pool", [1, 0, 0, 0], calls=1), run("full_pool", [1, 1, 1, 0], dataset="2wiki", calls=1)]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table9(compare(runs, "eir", resamples=200)).splitlines()[2:] if line.startswith("| ")}
    assert rows["eir"][:5] == ["2/2", "75.0", "75.0", "8.00", "880"]
    assert rows["full_pool"][:5] == ["2/2", "50.0", "50.0", "1.00", "110"]
    assert rows["full_pool"][6:] == ["0.67×", "0.12×", "0.12×", "n/a"]  # a local model costs 0: no cost ratio


def test_support_table_reports_support_em_and_joint_where_records_have_them():
    hotpot = run("eir", [1, 0])
    for r, (sp_em, joint_em, joint_f1) in zip(hotpot.records, [(1.0, 1.0, 0.9), (0.0, 0.0, 0.2)]):
        r.update(sp_em=sp_em, joint_em=joint_em, joint_f1=joint_f1)
    musique = run("eir", [1, 1], dataset="musique")
    for r in musique.records:
        r.update(sp_em=1.0, joint_em=None, joint_f1=None)
    old = run("direct", [0, 0])  # records made before sp_em existed
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): [c.strip() for c in line.split("|")[3:-1]]
            for line in support_table(compare([hotpot, musique, old], "eir", resamples=100)).splitlines()[2:]
            if line.startswith("| ")}
    assert rows[("hotpotqa · m", "eir")] == ["2", "50.0", "50.0", "50.0", "55.0"]
    assert rows[("musique · m", "eir")] == ["2", "50.0", "100.0", "–", "–"]
    assert rows[("hotpotqa · m", "direct")] == ["2", "50.0", "–", "–", "–"]


def test_csv_has_one_row_per_comparison_with_the_run_ids():
    grid = compare([run("eir", [1, 0]), run("direct", [0, 0])], "eir", resamples=100)
    lines = comparisons_csv(grid).strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("family,reference,baseline,dataset,lm,n,f1_diff")
    assert lines[1].startswith("eir_vs_baselines,eir,direct,hotpotqa,local/m,2,50.0,")
    assert lines[1].endswith("eir-hotpotqa-local/m-0,direct-hotpotqa-local/m-0,eir_vs_baselines:eir vs direct,1")


def test_evidence_availability_splits_errors_by_gold_read():
    r = run("eir", [1, 0, 0, 0], read_gold=False)
    records = list(r.records)
    records[1] = {**records[1], "evidence_titles": ["G"], "gold_read_share": 1.0}  # this error read the gold paragraph
    a = evidence_availability(LoggedRun(**{**r.__dict__, "records": tuple(records)}))
    assert (a.errors, a.all_gold_read) == (3, 1) and a.share_read == pytest.approx(1 / 3)


def test_question_diff_lists_each_sides_wins_with_answers_and_evidence():
    a = run("eir", [1, 1, 0, 0])
    b = run("direct", [0, 1, 1, 0], read_gold=False)
    text = question_diff(a, b)
    assert "Exact in both: 1; in neither: 1; only eir: 1; only direct: 1." in text
    only_eir = text.split("### Only eir right (1)")[1].split("###")[0]
    assert "**q0** question q0?" in only_eir and "gold: gold q0" in only_eir
    assert "eir: 'x' (F1 1.00); read: G" in only_eir and "direct: 'y' (F1 0.00); read: D" in only_eir
    assert "**q2**" in text.split("### Only direct right (1)")[1]


def test_a_pair_served_by_different_llama_cpp_builds_is_compared_with_a_note_naming_both():
    def served(logged: LoggedRun, build: str) -> LoggedRun:
        return replace(logged, records=tuple({**r, "served_by": build} for r in logged.records))

    eir, direct = run("eir", [1, 0]), run("direct", [0, 0])
    same = compare([served(eir, "wheel b11549 avx2"), served(direct, "wheel b11549 avx2")], "eir", resamples=200)
    assert not any("engines" in n for n in same.notes)
    mixed = compare([served(eir, "wheel b11549 avx2"), served(direct, "binary b11434 avx512")], "eir", resamples=200)
    assert len(mixed.comparisons) == 1  # still compared, and said so
    assert [n for n in mixed.notes if "engines" in n] == [
        "eir vs direct on hotpotqa / local/m: served by different engines (wheel b11549 avx2 vs binary b11434 avx512); "
        "greedy outputs differ between builds, so this pair also compares engines"]
