"""H.4 (final-vs-submitted) and Tables 5 and 8 (EM and support) on hand-built records, counts worked by hand."""

from __future__ import annotations

import pytest

from eval.analyze import final_vs_submitted, support
from eval.analyze.report import Context
from eval.runs.logged_runs import LoggedRun, SelectionError

RESAMPLES = 999  # a constant paired difference of d > 0 then has bootstrap p = 2 / (999 + 1) = 0.002


def run(label: str, dataset: str, records: list[dict], start: int = 0, lm: str = "local/m", **kw) -> LoggedRun:
    return LoggedRun(f"{label}-{dataset}-{start}", "0", f"{label} / {dataset}", label, dataset, lm, 6, start, {},
                     tuple(records), label=label, **kw)


def context(tmp_path) -> Context:
    return Context(out=tmp_path, resamples=RESAMPLES, seed=0)


# --- H.4: final vs submitted ---------------------------------------------------------------------

def answered(qid: str, gold: str, submitted: str | None, prediction: str, aliases: tuple = ()) -> dict:
    return {"id": qid, "question": "?", "gold": gold, "aliases": list(aliases), "type": "", "prediction": prediction,
            "trajectory": {"method": "eir", "turns": [], "submitted": submitted, "forced_end": submitted is None}}


def test_final_vs_submitted_counts_exclusions_gains_losses_and_the_f1_difference(tmp_path):
    records = [
        answered("q1", "Paris", "Paris", "Paris"),  # both exact
        answered("q2", "Barack Obama", "Obama", "Barack Obama"),  # gained; submitted F1 2/3 (P 1, R 1/2)
        answered("q3", "1990", "1990", "1991"),  # lost; final F1 0
        answered("q4", "Rome", None, "Rome"),  # forced: no accepted submit
        answered("q5", "Oslo", "  ", "Oslo"),  # empty submission
        {"id": "q6", "gold": "Bern", "aliases": [], "prediction": "", "trajectory": None, "error": "X: boom"},
        answered("q7", "yes", "no", "yes"),  # gained; yes/no earns no partial credit
    ]
    report = final_vs_submitted.analyze([run("eir", "hotpotqa", records), run("direct", "hotpotqa", records)],
                                        context(tmp_path), tmp_path)
    m = {k.rsplit("/eir/hotpotqa/local/m", 1)[0]: v for k, v in report.metrics.items()}
    assert (m["n"], m["eligible"], m["excluded_forced"], m["excluded_empty"], m["excluded_failed"]) == (7, 4, 1, 1, 1)
    # Eligible q1, q2, q3, q7. Submitted F1: (100 + 200/3 + 100 + 0) / 4; final: (100 + 100 + 0 + 100) / 4.
    assert m["f1_submitted"] == pytest.approx(200 / 3)
    assert m["f1_final"] == pytest.approx(75.0)
    assert m["f1_diff"] == pytest.approx(75.0 - 200 / 3)
    assert (m["em_submitted"], m["em_final"]) == (50.0, 75.0)
    assert (m["em_gained"], m["em_lost"]) == (2, 1)
    assert m["mcnemar_p"] == pytest.approx(1.0)  # 1 of 3 discordant: two-sided binomial p = 1
    # Per question on F1: q1 a tie (100, 100); q2 a win (+100/3); q3 a loss (100 → 0); q7 a win (+100).
    assert (m["f1_wins"], m["f1_losses"], m["f1_ties"]) == (2, 1, 1)
    assert m["f1_mean_gain"] == pytest.approx((100 / 3 + 100) / 2)
    assert m["f1_mean_loss"] == pytest.approx(100.0)
    assert any("direct" in n and "not EIR" in n for n in report.notes)
    table = report.tables["h4_final_vs_submitted.md"]
    assert "+8.3" in table and "66.7" in table and "75.0" in table
    row = [line for line in table.splitlines() if line.startswith("| eir ")][0]
    assert [c.strip() for c in row.strip(" |").split("|")][-3:] == ["2 / 1 / 1", "+66.7", "−100.0"]
    assert any("H.4 is over its corpus-setting runs" in n for n in report.notes)  # a pool run: named


def test_final_vs_submitted_uses_the_datasets_scorer_with_aliases(tmp_path):
    # 2Wiki maxes over the answer and its aliases: "New York City" is exact through the alias; the final
    # "New York" scores F1 0.8 against it (P 1, R 2/3) and is not exact: one lost.
    records = [answered("w1", "NYC", "New York City", "New York", aliases=("New York City",))]
    report = final_vs_submitted.analyze([run("eir", "2wiki", records)], context(tmp_path), tmp_path)
    m = {k.rsplit("/eir/2wiki/local/m", 1)[0]: v for k, v in report.metrics.items()}
    assert m["f1_submitted"] == pytest.approx(100.0)
    assert m["f1_final"] == pytest.approx(80.0)
    assert m["f1_diff"] == pytest.approx(-20.0)
    assert (m["em_gained"], m["em_lost"]) == (0, 1)
    assert (m["f1_wins"], m["f1_losses"], m["f1_ties"]) == (0, 1, 0) and m["f1_mean_loss"] == pytest.approx(20.0)
    assert m["f1_mean_gain"] != m["f1_mean_gain"]  # no win: the mean gain is undefined (NaN), not 0


def test_final_vs_submitted_without_eligible_questions_or_eir_runs(tmp_path):
    report = final_vs_submitted.analyze([run("eir", "hotpotqa", [answered("q1", "a", None, "a")])],
                                        context(tmp_path), tmp_path)
    assert report.metrics["eligible/eir/hotpotqa/local/m"] == 0
    assert report.metrics["excluded_forced/eir/hotpotqa/local/m"] == 1
    assert "f1_diff/eir/hotpotqa/local/m" not in report.metrics and "f1_wins/eir/hotpotqa/local/m" not in report.metrics
    assert report.tables["h4_final_vs_submitted.md"].count("–") >= 12
    with pytest.raises(SelectionError):
        final_vs_submitted.analyze([run("direct", "hotpotqa", [answered("q1", "a", "a", "a")])],
                                   context(tmp_path), tmp_path)


# --- Tables 5 and 8: answer EM and Support F1 -------------------------------------------------------

def sf1(pairs: list[tuple[str, float]], exact: tuple[str, ...] = ()) -> list[dict]:
    # Support EM: every supporting sentence cited and nothing else, i.e. Support F1 of 1. Answer EM: the
    # questions in `exact`, chosen apart from the support so that the two EMs differ.
    return [{"id": qid, "support_f1": value, "sp_em": float(value == 1.0), "em": float(qid in exact)}
            for qid, value in pairs]


def support_runs() -> list[LoggedRun]:
    return [
        # Answers exactly q2-q4, but cites exactly only q1.
        run("eir", "hotpotqa", sf1([("q1", 1.0), ("q2", 0.75), ("q3", 0.5), ("q4", 0.5)], exact=("q2", "q3", "q4")),
            start=5),
        # Direct ran q5 instead of q4: compared on q1-q3. Answers exactly q1 only.
        run("direct", "hotpotqa", sf1([("q1", 0.5), ("q2", 0.5), ("q3", 0.0), ("q5", 1.0)], exact=("q1",)), start=4),
        run("direct", "hotpotqa", sf1([("q1", 0.0)]), start=1),  # older: ignored
        # 25 points below EIR on every question.
        run("reflexion_oracle", "hotpotqa", sf1([("q1", 0.75), ("q2", 0.5), ("q3", 0.25), ("q4", 0.25)]), start=3),
        # SSR: every supporting fact on every question.
        run("ssr", "hotpotqa", sf1([("q1", 1.0), ("q2", 1.0), ("q3", 1.0), ("q4", 1.0)]), start=3),
        # Reflexion's first trial: EIR's scores exactly.
        run("reflexion_first", "hotpotqa", sf1([("q1", 1.0), ("q2", 0.75), ("q3", 0.5), ("q4", 0.5)]), start=3),
        run("eir", "2wiki", sf1([("w1", 0.5), ("w2", 1.0)]), start=2),
        run("reflexion_oracle", "2wiki", sf1([("w1", 0.5), ("w2", 1.0)]), start=2),  # equal: Δ 0
        run("eir", "hotpotqa", sf1([("q1", 0.0)]), start=9, ablation="no-list-feedback"),  # not EIR itself
        run("full_pool", "hotpotqa", sf1([("q1", 1.0)]), start=0),
    ]


def table(report, file):
    """A support table's rows as {(column, baseline): {header: cell}}."""
    lines = [line for line in report.tables[file].splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]
    return head, {(r["column"], r["baseline"]): r for r in rows}


def test_support_table5_pairs_eir_and_direct_on_shared_questions(tmp_path):
    report = support.analyze(support_runs(), context(tmp_path), tmp_path)
    key = "eir_minus_direct/pool/hotpotqa/local/m"
    # EIR on q1-q3: (100 + 75 + 50) / 3 = 75; Direct: (50 + 50 + 0) / 3 = 100/3.
    assert report.metrics[f"n/{key}"] == 3
    assert report.metrics[f"diff/{key}"] == pytest.approx(75 - 100 / 3)
    assert f"p_holm/{key}" not in report.metrics  # Holm is Table 8's
    assert "diff/eir_minus_direct/pool/2wiki/local/m" not in report.metrics  # no Direct run there
    notes = "\n".join(report.notes)
    assert "compared on the 3 they share" in notes
    assert "ignored direct-hotpotqa-1" in notes and "direct-hotpotqa-4" in notes
    assert "skipped eir-hotpotqa-9" in notes and "no-list-feedback" in notes
    assert "skipped full_pool-hotpotqa-0" in notes
    assert "2wiki · m: no direct run" in notes
    assert "+41.7" in report.tables["table5_support_eir_vs_direct.md"]


def test_support_table5_em_is_answer_exact_match_with_mcnemar_and_support_em_an_extra(tmp_path):
    report = support.analyze(support_runs(), context(tmp_path), tmp_path)
    head, rows = table(report, "table5_support_eir_vs_direct.md")
    assert head == ["column", "baseline", "n", "EIR EM", "baseline EM", "EM b / c", "EM McNemar p",
                    "EIR SF1", "baseline SF1", "Δ SF1 EIR − baseline [95% CI]", "p",
                    "EIR Support EM", "baseline Support EM", "Support EM b / c", "Support EM McNemar p"]
    row = rows[("hotpotqa · m", "direct")]
    # Answer EM on q1-q3: EIR exact on q2, q3; Direct on q1: b = 1 (only Direct), c = 2 (only EIR);
    # three discordant pairs, min 1: p = 2 × (1 + 3) / 8 = 1.
    assert [row[c] for c in head[3:7]] == ["66.7", "33.3", "1 / 2", "1.0000"]
    # Support EM on q1-q3: EIR exact on q1 only, Direct on none: b = 0, c = 1; p = 1.
    assert [row[c] for c in head[11:]] == ["33.3", "0.0", "0 / 1", "1.0000"]
    key = "eir_minus_direct/pool/hotpotqa/local/m"
    m = report.metrics
    assert (m[f"em_mcnemar_b/{key}"], m[f"em_mcnemar_c/{key}"], m[f"em_mcnemar_p/{key}"]) == (1, 2, 1.0)
    assert m[f"em_eir/{key}"] == pytest.approx(200 / 3) and m[f"em_other/{key}"] == pytest.approx(100 / 3)
    assert (m[f"support_em_mcnemar_b/{key}"], m[f"support_em_mcnemar_c/{key}"]) == (0, 1)
    assert m[f"support_em_eir/{key}"] == pytest.approx(100 / 3)
    assert report.params["em"].startswith("answer Exact Match (record em)")
    assert "EM: answer Exact Match" in report.tables["table5_support_eir_vs_direct.md"]


def test_support_table5_em_mcnemar_p_on_a_lopsided_column(tmp_path):
    # EIR answers exactly all six, Direct none: c = 6, b = 0, exact two-sided p = 2 × 0.5^6; the support
    # scores are equal, so Support EM is 0 / 0 with p = 1.
    ids = [f"q{i}" for i in range(6)]
    runs = [run("eir", "hotpotqa", sf1([(q, 0.5) for q in ids], exact=tuple(ids))),
            run("direct", "hotpotqa", sf1([(q, 0.5) for q in ids]))]
    report = support.analyze(runs, context(tmp_path), tmp_path)
    key = "eir_minus_direct/pool/hotpotqa/local/m"
    assert report.metrics[f"em_mcnemar_p/{key}"] == pytest.approx(2 * 0.5 ** 6)
    assert report.metrics[f"support_em_mcnemar_p/{key}"] == pytest.approx(1.0)
    _, rows = table(report, "table5_support_eir_vs_direct.md")
    row = rows[("hotpotqa · m", "direct")]
    assert (row["EIR EM"], row["baseline EM"], row["EM b / c"], row["EM McNemar p"]) == ("100.0", "0.0", "0 / 6",
                                                                                       "0.0312")


def test_support_table8_holm_spans_each_baselines_columns(tmp_path):
    report = support.analyze(support_runs(), context(tmp_path), tmp_path)
    hotpot, wiki = "eir_minus_reflexion_oracle/pool/hotpotqa/local/m", "eir_minus_reflexion_oracle/pool/2wiki/local/m"
    assert report.metrics[f"diff/{hotpot}"] == pytest.approx(25.0)
    assert report.metrics[f"diff/{wiki}"] == pytest.approx(0.0)
    # Every resampled mean is 25 (p = 2/1000) or 0 (p = 1). Holm over the two: 2 × 0.002, then max(0.004, 1).
    assert report.metrics[f"p/{hotpot}"] == pytest.approx(0.002)
    assert report.metrics[f"p/{wiki}"] == pytest.approx(1.0)
    assert report.metrics[f"p_holm/{hotpot}"] == pytest.approx(0.004)
    assert report.metrics[f"p_holm/{wiki}"] == pytest.approx(1.0)
    # SSR's family is its own one column here, so Holm leaves its p as it is.
    ssr = "eir_minus_ssr/pool/hotpotqa/local/m"
    assert report.metrics[f"p_holm/{ssr}"] == report.metrics[f"p/{ssr}"]
    _, rows = table(report, "table8_support_eir_vs_agents.md")
    assert rows[("hotpotqa · m", "reflexion_oracle")]["significant (α 0.05)"] == "yes"
    assert rows[("2wiki · m", "reflexion_oracle")]["significant (α 0.05)"] == "no"


def test_support_table8_has_ssr_and_first_trial_rows(tmp_path):
    report = support.analyze(support_runs(), context(tmp_path), tmp_path)
    head, rows = table(report, "table8_support_eir_vs_agents.md")
    assert "EIR EM" not in head and "Table 7" in report.tables["table8_support_eir_vs_agents.md"]  # SF1 only
    assert list(rows) == [("hotpotqa · m", "ssr"), ("2wiki · m", "reflexion_oracle"),
                          ("hotpotqa · m", "reflexion_oracle"), ("hotpotqa · m", "reflexion_first")]
    # SSR: 100 on q1-q4; EIR (100 + 75 + 50 + 50) / 4 = 68.75. Support EM: SSR exact on all four, EIR on q1:
    # b = 3 (only SSR), c = 0, p = 2 × 0.5^3.
    ssr = rows[("hotpotqa · m", "ssr")]
    assert (ssr["n"], ssr["EIR SF1"], ssr["baseline SF1"]) == ("4", "68.8", "100.0")
    assert ssr["Δ SF1 EIR − baseline [95% CI]"].startswith("-31.2")
    assert (ssr["EIR Support EM"], ssr["baseline Support EM"], ssr["Support EM b / c"],
            ssr["Support EM McNemar p"]) == ("25.0", "100.0", "3 / 0", "0.2500")
    first = rows[("hotpotqa · m", "reflexion_first")]
    assert first["Δ SF1 EIR − baseline [95% CI]"] == "+0.0 [+0.0, +0.0]" and first["Support EM b / c"] == "0 / 0"
    assert report.metrics["diff/eir_minus_reflexion_first/pool/hotpotqa/local/m"] == pytest.approx(0.0)


def test_support_places_corpus_and_decoding_labelled_runs_in_their_own_columns(tmp_path):
    runs = [run("eir_corpus", "hotpotqa", sf1([("q1", 1.0), ("q2", 0.5)]), setting="corpus"),
            run("direct_corpus", "hotpotqa", sf1([("q1", 0.5), ("q2", 0.5)]), setting="corpus"),
            run("eir decoding=free", "hotpotqa", sf1([("q1", 0.0), ("q2", 0.0)]), start=1),
            run("direct decoding=free", "hotpotqa", sf1([("q1", 0.0), ("q2", 0.5)]), start=1)]
    report = support.analyze(runs, context(tmp_path), tmp_path)
    _, rows = table(report, "table5_support_eir_vs_direct.md")
    assert set(rows) == {("hotpotqa · m · corpus", "direct"), ("hotpotqa · m", "direct")}
    assert report.metrics["diff/eir_minus_direct/corpus/hotpotqa/local/m"] == pytest.approx(25.0)
    assert report.metrics["diff/eir_minus_direct/pool/hotpotqa/local/m"] == pytest.approx(-25.0)


def test_support_reports_each_runs_mean_and_n(tmp_path):
    report = support.analyze(support_runs(), context(tmp_path), tmp_path)
    assert report.metrics["support_f1/eir/pool/hotpotqa/local/m"] == pytest.approx(68.75)  # (100+75+50+50)/4
    assert report.metrics["support_em/eir/pool/hotpotqa/local/m"] == pytest.approx(25.0)
    assert report.metrics["em/eir/pool/hotpotqa/local/m"] == pytest.approx(75.0)  # answer EM: q2-q4 of 4
    assert report.metrics["em/direct/pool/hotpotqa/local/m"] == pytest.approx(25.0)  # q1 of q1, q2, q3, q5
    assert report.metrics["n/eir/pool/hotpotqa/local/m"] == 4
    assert report.metrics["support_f1/direct/pool/hotpotqa/local/m"] == pytest.approx(50.0)  # the newer Direct
    assert "68.8" in report.tables["support_f1_runs.md"]
    with pytest.raises(SelectionError):
        support.analyze([r for r in support_runs() if r.label != "eir"], context(tmp_path), tmp_path)


def test_f1_outcomes_split_wins_losses_and_ties():
    wins, losses, ties = final_vs_submitted.f1_outcomes([50.0, 100.0, 0.0, 40.0], [75.0, 0.0, 0.0, 40.0 + 1e-12])
    assert (wins, losses, ties) == ([25.0], [100.0], 2)  # a last-bit difference is a tie


def test_final_vs_submitted_on_corpus_runs_needs_no_setting_note(tmp_path):
    records = [answered("q1", "Paris", "Paris", "Paris")]
    report = final_vs_submitted.analyze([run("eir_corpus", "hotpotqa", records, setting="corpus")],
                                        context(tmp_path), tmp_path)
    assert not any("corpus-setting" in n for n in report.notes)
    assert report.metrics["f1_ties/eir_corpus/hotpotqa/local/m"] == 1
