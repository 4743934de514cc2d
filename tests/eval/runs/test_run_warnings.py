"""Degenerate runs on the scripted LM: eval.run prints and logs the warnings (eval.scoring.health),
eval.summary prints them, and a healthy run gets none."""

import mlflow

import eval.run as run_module
import eval.summary as summary
from eval.runs import tracking
from tests.fixtures.scripted_runs import (
    ARGS,
    DIRECT_WARNINGS,
    QUESTIONS,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    nonsense,
    reply,
)
from tests.scripted import turn, use_lm

# `reply` reads by a title not in the pool, so each question's one read is a title fallback.
FALLBACK_WARNING = ("eir: 3 of 3 reads (100%) were title fallbacks: the agent asked for titles it had already read "
                    "or that are not in the pool, so the pool read its first unread paragraph instead "
                    "(main cause title not in the pool: 3)")


def reply_by_title(prompt):
    """`reply`, but its read names the question's gold paragraph, so the pool reads what was asked for."""
    out = reply(prompt)
    if out.get("action", {}).get("title") == "no such title":
        question = prompt.rsplit("[[ ## question ## ]]", 1)[1].split("[[ ##")[0].strip()
        return turn("read", next(f"{qid} gold" for qid, q, _ in QUESTIONS if q == question))
    return out


def test_a_degenerate_run_prints_its_warnings_and_logs_them_as_tags_and_metrics(workdir, monkeypatch, capsys):
    use_lm(monkeypatch, nonsense)
    out = run_module.main(ARGS + ["--method", "direct"])
    printed = capsys.readouterr().out
    table = next(i for i, line in enumerate(printed.splitlines()) if "direct/hotpotqa" in line)
    assert printed.splitlines()[table + 1:table + 5] == [f"warning: {w}" for w in DIRECT_WARNINGS]

    run = mlflow.get_run(out["run_id"])
    assert run.data.tags[tracking.DEGENERATE_TAG] == "\n".join(DIRECT_WARNINGS)
    assert run.data.tags[tracking.DEGENERATE_CODES_TAG] == "rejected_turns,few_reads,no_submission,empty_answers"
    m = run.data.metrics
    assert m["degenerate_warnings"] == 4.0
    assert (m["degenerate_rejected_turns"], m["degenerate_rejected_turns_of"]) == (18.0, 18.0)
    assert (m["degenerate_few_reads"], m["degenerate_few_reads_of"]) == (3.0, 3.0)
    assert (m["degenerate_no_submission"], m["degenerate_no_submission_of"]) == (3.0, 3.0)
    assert (m["degenerate_empty_answers"], m["degenerate_empty_answers_of"]) == (3.0, 3.0)
    assert "degenerate_cut_at_limit" not in m
    assert m["no_submission_rate"] == 1.0  # the summary's own count of the same episodes

    # eval.summary prints the same warnings under the results file's table.
    summary.main([str(workdir / "runs" / out["run_id"] / "results.jsonl")])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("warning: ")] == [f"warning: {w}" for w in DIRECT_WARNINGS]


def test_a_healthy_run_is_quiet_and_logs_zero_warnings(workdir, monkeypatch, capsys):
    use_lm(monkeypatch, reply_by_title)  # reads the gold paragraph by its title, submits; the final call answers
    out = run_module.main(ARGS)
    printed = capsys.readouterr().out
    assert "warning:" not in printed
    head, _, row = next(printed.splitlines()[i:i + 3] for i, line in enumerate(printed.splitlines())
                        if line.startswith("run ") and "fallbacks/q" in line)
    assert dict(zip(head.split(" | "), row.split(" | ")))["fallbacks/q"].strip() == "0.00"
    run = mlflow.get_run(out["run_id"])
    assert run.data.metrics["degenerate_warnings"] == 0.0
    assert tracking.DEGENERATE_TAG not in run.data.tags and tracking.DEGENERATE_CODES_TAG not in run.data.tags
    summary.main([str(workdir / "runs" / out["run_id"] / "results.jsonl")])
    assert "warning:" not in capsys.readouterr().out


def test_a_run_whose_reads_fall_back_is_warned_in_its_table_tags_and_summary(workdir, monkeypatch, capsys):
    use_lm(monkeypatch, reply)  # reads once by a title not in the pool, submits
    out = run_module.main(ARGS)
    lines = capsys.readouterr().out.splitlines()
    table = next(i for i, line in enumerate(lines) if line.startswith("run ") and "fallbacks/q" in line)
    head, row = [c.strip() for c in lines[table].split(" | ")], [c.strip() for c in lines[table + 2].split(" | ")]
    assert (row[head.index("fallbacks/q")], row[head.index("reads/q")]) == ("1.00", "1.00")
    assert lines[table + 3] == f"warning: {FALLBACK_WARNING}"

    run = mlflow.get_run(out["run_id"])
    assert run.data.tags[tracking.DEGENERATE_TAG] == FALLBACK_WARNING
    assert run.data.tags[tracking.DEGENERATE_CODES_TAG] == "title_fallbacks"
    m = run.data.metrics
    assert (m["degenerate_title_fallbacks"], m["degenerate_title_fallbacks_of"]) == (3.0, 3.0)
    assert m["title_fallbacks_per_question"] == 1.0

    summary.main([str(workdir / "runs" / out["run_id"] / "results.jsonl")])
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: ")] == [
        f"warning: {FALLBACK_WARNING}"]


def test_the_variant_run_gets_its_own_warnings(workdir, monkeypatch, capsys):
    use_lm(monkeypatch, nonsense)
    out = run_module.main(ARGS + ["--method", "reflexion", "--trials", "2"])
    printed = capsys.readouterr().out
    assert "warning: reflexion_oracle: 100% of turns rejected (36 of 36; main cause not_json: 36)" in printed
    assert "warning: reflexion_first: 100% of turns rejected (18 of 18; main cause not_json: 18)" in printed
    first = mlflow.search_runs(experiment_names=["test"], output_format="list",
                               filter_string=f"tags.`eir.variant_of` = '{out['run_id']}'")[0]
    assert first.data.tags[tracking.DEGENERATE_TAG].splitlines()[2] == (
        "reflexion_first: 3 of 3 episodes ended without a submission (main cause every turn rejected: 3)")
    assert first.data.metrics["degenerate_no_submission_of"] == 3.0
    main = mlflow.get_run(out["run_id"])
    assert main.data.metrics["degenerate_no_submission_of"] == 6.0  # two trials a question
