"""Table 19 (totals) on hand-built records: sums over each run's questions, per-LM and overall totals."""

import pytest

from eval.analyze import totals
from eval.analyze.report import Context
from eval.runs.logged_runs import LoggedRun


def rec(calls, prompt, completion, cost, searches=1, reads=2, turns=3, rejected=0):
    return {"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": cost,
            "searches": searches, "reads": reads, "turns": turns, "rejected_actions": rejected}


def logged(label, lm, records, setting="corpus"):
    return LoggedRun(run_id=f"r-{label}-{lm}", experiment_id="0", name=f"{label} / hotpotqa / {lm}", variant=label,
                     dataset="hotpotqa", lm=lm, budget=6, start_time=0, metrics={}, records=tuple(records),
                     label=label, setting=setting)


RUNS = [
    logged("eir_corpus", "openai/gpt-4.1-mini", [rec(13, 1000, 100, 0.01), rec(9, 800, 80, 0.02, rejected=2)]),
    logged("direct_corpus", "openai/gpt-4.1-mini", [rec(12, 500, 50, 0.005)]),
    # Trial 1 of the oracle run below: its calls are counted there, so it stays out of the totals.
    logged("reflexion_first_corpus", "openai/gpt-4.1-mini", [rec(12, 400, 40, 0.004)]),
    logged("reflexion_oracle_corpus", "openai/gpt-4.1-mini", [rec(30, 2000, 200, 0.03)]),
    logged("eir_corpus", "local/qwen", [rec(13, 1000, 100, None)]),  # a local model: no price
]


def rows(report):
    lines = [line for line in report.tables["table19_totals.md"].splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return head, [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]


def test_table19_sums_each_run_and_totals_per_lm_and_overall(tmp_path):
    report = totals.analyze(RUNS, Context(out=tmp_path), tmp_path)
    head, table = rows(report)
    assert head == ["method", "dataset", "LM", "setting", "questions", "calls", "prompt tokens", "completion tokens",
                    "cost (USD)", "searches", "reads", "turns", "rejected turns"]
    by = {(r["method"], r["LM"]): r for r in table}
    eir = by[("eir_corpus", "gpt-4.1-mini")]
    assert [eir[c] for c in head[4:]] == ["2", "22", "1,800", "180", "0.0300", "2", "4", "6", "2"]
    assert by[("eir_corpus", "qwen")]["cost (USD)"] == "unknown"
    # GPT: eir 22 + direct 12 + oracle 30 calls (first trial left out); tokens and cost likewise.
    gpt = by[("total", "gpt-4.1-mini")]
    assert [gpt[c] for c in ("questions", "calls", "prompt tokens", "cost (USD)")] == ["4", "64", "4,300", "0.0650"]
    assert ("total", "qwen") not in by  # one run of that LM: its row is its total
    overall = by[("total", "all runs")]
    assert [overall[c] for c in ("questions", "calls", "cost (USD)")] == ["5", "77", "unknown"]
    assert report.metrics["calls/total/all/openai/gpt-4.1-mini/corpus"] == 64
    assert report.metrics["prompt_tokens/eir_corpus/hotpotqa/openai/gpt-4.1-mini/corpus"] == 1800
    assert report.metrics["cost_usd/total/all/openai/gpt-4.1-mini/corpus"] == pytest.approx(0.065)
    assert "cost_usd/total/all/all runs/corpus" not in report.metrics  # unknown is not 0
    assert any("reflexion_first" in n for n in report.notes)
    assert not any("corpus-setting" in n for n in report.notes)


def test_table19_names_pool_runs(tmp_path):
    report = totals.analyze([logged("eir", "openai/gpt-4.1-mini", [rec(8, 10, 1, 0.0)], setting="pool")],
                            Context(out=tmp_path), tmp_path)
    assert any("Table 19 is over its corpus-setting runs" in n for n in report.notes)
    _, table = rows(report)
    assert [r["method"] for r in table] == ["eir"]
