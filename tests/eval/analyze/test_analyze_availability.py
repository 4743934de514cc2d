"""F.1 (Table 15, Figure 3) on hand-built records: errors split by evidence availability, counted by hand."""

import math

import pytest
from scipy.stats import binomtest

from eval.analyze import availability
from eval.analyze.report import Context
from eval.compare.error_analysis import missing_gold
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun

G = ["G1", "G2", "G3", "G4"]


def rec(qid, em, gold, read):
    return {"id": qid, "em": float(em), "gold_titles": sorted(gold), "evidence_titles": list(read)}


# n = 10; 7 EM errors: 2 complete, 5 incomplete (missing 1: one; missing 2: two; missing 3+: two).
EIR_RECORDS = (
    rec("a1", 1, G[:2], G[:2]),
    rec("a2", 1, G[:2], ["X"]),  # right without the gold paragraphs: not an error, so not counted
    rec("a3", 0, G[:2], ["G1", "G2", "X"]),  # complete, with a distractor besides
    rec("a4", 0, G[:2], ["G2", "G1"]),  # complete, read in another order
    rec("a5", 0, G[:2], ["G1"]),  # missing 1
    rec("a6", 0, G[:3], ["G3", "X"]),  # missing 2
    rec("a7", 0, G[:2], ["X", "Y"]),  # missing 2
    rec("a8", 0, G[:3], []),  # missing 3
    rec("a9", 0, G, ["G4"]),  # missing 3
    rec("a10", 1, G[:2], G[:2]),
)
DIRECT_RECORDS = tuple(rec(f"d{i}", 1, G[:2], G[:2]) for i in range(3))  # no error at all
MUSIQUE_RECORDS = (rec("m1", 0, G, G[:3]), rec("m2", 0, G, G), rec("m3", 1, G[:2], []), rec("m4", 0, G[:2], G[:2]))


def logged(method, dataset, lm, records, run_id):
    return LoggedRun(run_id=run_id, experiment_id="0", name=f"{method} / {dataset} / {lm}", variant=method,
                     dataset=dataset, lm=lm, budget=6, start_time=0, metrics={}, records=tuple(records))


RUNS = [logged("eir", "hotpotqa", "local/scripted", EIR_RECORDS, "r-eir"),
        logged("direct", "hotpotqa", "local/scripted", DIRECT_RECORDS, "r-direct"),
        logged("eir", "musique", "openai/gpt-x", MUSIQUE_RECORDS, "r-musique")]


@pytest.fixture
def report(tmp_path):
    return availability.analyze(RUNS, Context(out=tmp_path), tmp_path)


def table_rows(text):
    """Table 15's rows as {(method, dataset, LM): {column: cell}}."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]
    return head, {(r["method"], r["dataset"], r["LM"]): r for r in rows}


def wilson(k, n):
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


def test_missing_gold_counts_supporting_paragraphs_never_read():
    def missing(*args):
        return missing_gold(QuestionRecord.model_validate(rec(*args)))

    assert missing("x", 0, G[:2], ["G2", "X", "G1"]) == 0
    assert missing("x", 0, G, ["G4"]) == 3
    assert missing("x", 0, G[:2], ["G1", "G1"]) == 1  # a repeated read counts once


def test_table15_counts_by_hand(report):
    head, rows = table_rows(report.tables["table15_availability.md"])
    assert head == ["method", "dataset", "LM", "n", "EM errors", "complete", "incomplete", "incomplete %",
                    "95% CI (Wilson)", "missing 1", "missing 2", "missing 3+"]
    low, high = wilson(5, 7)
    assert rows[("eir", "hotpotqa", "scripted")] == {
        "method": "eir", "dataset": "hotpotqa", "LM": "scripted", "n": "10", "EM errors": "7", "complete": "2",
        "incomplete": "5", "incomplete %": f"{100 * 5 / 7:.1f}", "95% CI (Wilson)": f"[{100 * low:.1f}, {100 * high:.1f}]",
        "missing 1": "1", "missing 2": "2", "missing 3+": "2"}
    # No error: nothing to split; the share and interval are undefined, not 0.
    direct = rows[("direct", "hotpotqa", "scripted")]
    assert [direct[k] for k in ("n", "EM errors", "complete", "incomplete", "incomplete %", "95% CI (Wilson)")] == \
           ["3", "0", "0", "0", "–", "[–, –]"]
    musique = rows[("eir", "musique", "gpt-x")]  # m1 misses one, m2 and m4 are complete
    assert [musique[k] for k in ("n", "EM errors", "complete", "incomplete", "missing 1", "missing 2", "missing 3+")] \
        == ["4", "3", "2", "1", "1", "0", "0"]
    # Rows in (dataset, LM, method) order, then the paper's pooled row.
    assert list(rows) == [("direct", "hotpotqa", "scripted"), ("eir", "hotpotqa", "scripted"), ("eir", "musique", "gpt-x"),
                          ("all runs", "all", "all")]


def test_table15_pooled_row_counts_every_runs_questions(report):
    _, rows = table_rows(report.tables["table15_availability.md"])
    # 10 + 3 + 4 questions; errors 7 + 0 + 3, incomplete 5 + 0 + 1; missing 1: 1 + 1, 2: 2, 3+: 2.
    low, high = wilson(6, 10)
    pooled = rows[("all runs", "all", "all")]
    assert [pooled[k] for k in ("n", "EM errors", "complete", "incomplete", "incomplete %", "95% CI (Wilson)",
                                "missing 1", "missing 2", "missing 3+")] == \
        ["17", "10", "4", "6", "60.0", f"[{100 * low:.1f}, {100 * high:.1f}]", "2", "2", "2"]
    assert report.metrics["incomplete/all runs/all/all"] == 6
    assert report.metrics["incomplete_share/all runs/all/all"] == pytest.approx(0.6)


def test_table15_has_no_pooled_row_for_one_run(tmp_path):
    report = availability.analyze(RUNS[:1], Context(out=tmp_path), tmp_path)
    _, rows = table_rows(report.tables["table15_availability.md"])
    assert list(rows) == [("eir", "hotpotqa", "scripted")]


def test_metrics_hold_the_counts_and_the_wilson_interval(report):
    m = report.metrics
    key = "eir/hotpotqa/local/scripted"
    assert (m[f"errors/{key}"], m[f"incomplete/{key}"]) == (7, 5)
    assert (m[f"missing_1/{key}"], m[f"missing_2/{key}"], m[f"missing_3plus/{key}"]) == (1, 2, 2)
    low, high = wilson(5, 7)
    assert m[f"incomplete_share/{key}"] == pytest.approx(5 / 7)
    assert m[f"incomplete_ci_low/{key}"] == pytest.approx(low) and m[f"incomplete_ci_high/{key}"] == pytest.approx(high)
    assert 0 < low < 5 / 7 < high < 1
    low, high = wilson(1, 3)
    assert m["incomplete_ci_low/eir/musique/openai/gpt-x"] == pytest.approx(low)
    assert m["incomplete_ci_high/eir/musique/openai/gpt-x"] == pytest.approx(high)
    assert m["errors/direct/hotpotqa/local/scripted"] == 0 and math.isnan(m["incomplete_share/direct/hotpotqa/local/scripted"])


def test_wilson_interval_of_a_share_at_the_boundaries():
    """All errors incomplete (or none): the Wilson interval stays inside [0, 1] and is not degenerate."""
    from eval.scoring.stats import proportion

    for k, n in ((0, 4), (4, 4), (1, 1)):
        p = proportion(k, n)
        low, high = wilson(k, n)
        assert (p.k, p.n, p.share) == (k, n, k / n)
        assert p.low == pytest.approx(low) and p.high == pytest.approx(high) and 0 <= p.low < p.high <= 1


def test_figure3_is_written_as_a_png(report, tmp_path):
    assert report.plots == [tmp_path / "fig3_availability.png"]
    data = (tmp_path / "fig3_availability.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_figure3_shares_are_of_all_questions(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(availability, "availability_shares", lambda rows, path: seen.setdefault("rows", rows) and path)
    availability.analyze(RUNS[:1], Context(out=tmp_path), tmp_path)
    (label, exact, complete, incomplete), = seen["rows"]
    assert label == "eir\nhotpotqa\nscripted"
    assert (exact, complete, incomplete) == pytest.approx((0.3, 0.2, 0.5))  # of the 10 questions; they sum to 1
