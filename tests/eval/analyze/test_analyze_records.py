"""Tables 21, 22 and C.2 on hand-built records (plain dicts as eval.run writes them), counted by hand."""

import pytest

from eir_dspy import rejection
from eval.analyze import calls_after_support, parse_failures, rejections
from eval.analyze.report import Context
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.stats import paired_bootstrap
from tests.fixtures.scripts import load_script

mig = load_script("run_migrations")  # the shapes older versions wrote name their method as the migrator does

LM = "local/scripted"


def logged(label, dataset, records, run_id, setting="pool"):
    return LoggedRun(run_id=run_id, experiment_id="0", name=f"{label} / {dataset}", variant=label, dataset=dataset,
                     lm=LM, budget=6, start_time=0, metrics={}, records=tuple(records), label=label, setting=setting)


def table_rows(text, *key):
    """A markdown table's rows as {key columns: {column: cell}} (the first table in `text`)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]
    return head, {tuple(r[k] for k in key): r for r in rows}


# --- Table 22: rejections --------------------------------------------------------------------------


def rej(turns, causes):
    return {"id": f"q{turns}{sorted(causes)}", "turns": turns, "rejections_by_cause": causes}


DIRECT_REJ = [rej(6, {"not_json": 1, "missing_field": 1, rejection.NO_ACTION: 1, rejection.INVALID_CITATION: 2}),
              rej(4, {"unusable": 1, rejection.NO_READS_LEFT: 1, rejection.EMPTY_ANSWER: 1}),
              rej(5, {})]
CORPUS_REJ = [rej(10, {rejection.UNKNOWN_ID: 2, rejection.REPEATED_SEARCH: 3, rejection.SUBMIT_ONLY_TURN: 1,
                       rejection.EMPTY_SEARCH: 1, "wrong_type": 1})]
FULL_POOL_REJ = [rej(0, {}), {**rej(0, {}), "id": "other"}]


def test_every_cause_has_its_category():
    expected = {"not_json": "unparseable output", "unusable": "unparseable output",
                "missing_field": "missing field or wrong type", "wrong_type": "missing field or wrong type",
                rejection.NO_ACTION: "missing field or wrong type",
                rejection.INVALID_CITATION: "invalid citation", rejection.NO_READS_LEFT: "read with no read left",
                rejection.UNKNOWN_ID: "unknown or unfound id", rejection.REPEATED_SEARCH: "repeated search",
                rejection.SUBMIT_ONLY_TURN: "non-submit on the last turn"}
    for cause in (rejection.EMPTY_ANSWER, rejection.ALL_READ, rejection.EMPTY_SEARCH, rejection.SEARCH_IN_POOL,
                  rejection.LEGACY, "some_future_cause"):
        expected[cause] = "other"
    assert {c: rejections.category(c) for c in expected} == expected


def test_table22_counts_and_shares_of_actions(tmp_path):
    runs = [logged("direct", "hotpotqa", DIRECT_REJ, "r-direct"),
            logged("direct_corpus", "musique", CORPUS_REJ, "r-corpus", setting="corpus"),
            logged("full_pool", "hotpotqa", FULL_POOL_REJ, "r-pool")]
    report = rejections.analyze(runs, Context(out=tmp_path), tmp_path)
    head, rows = table_rows(report.tables["table22_rejections.md"], "method")
    assert head == ["method", "dataset", "LM", "n", "actions", "unparseable output", "missing field or wrong type",
                    "invalid citation", "read with no read left", "unknown or unfound id", "repeated search",
                    "non-submit on the last turn", "other", "rejected"]
    # 15 actions: not_json + unusable; missing_field + no_action; 2 citations; 1 no read left; empty answer.
    assert rows[("direct",)] == {
        "method": "direct", "dataset": "hotpotqa", "LM": "scripted", "n": "3", "actions": "15",
        "unparseable output": "2 (13.3%)", "missing field or wrong type": "2 (13.3%)", "invalid citation": "2 (13.3%)",
        "read with no read left": "1 (6.7%)", "unknown or unfound id": "0 (0.0%)", "repeated search": "0 (0.0%)",
        "non-submit on the last turn": "0 (0.0%)", "other": "1 (6.7%)", "rejected": "8 (53.3%)"}
    corpus = rows[("direct_corpus",)]
    assert [corpus[c] for c in head[4:]] == ["10", "0 (0.0%)", "1 (10.0%)", "0 (0.0%)", "0 (0.0%)", "2 (20.0%)",
                                             "3 (30.0%)", "1 (10.0%)", "1 (10.0%)", "8 (80.0%)"]
    assert ("full_pool",) not in rows  # no action turns: nothing to divide by
    assert any("r-pool" in n and "no action turns" in n for n in report.notes)
    assert not any("cannot be split" in n for n in report.notes)
    key = "direct/hotpotqa/local/scripted"
    assert report.metrics[f"actions/{key}"] == 15 and report.metrics[f"rejected/{key}"] == 8
    assert report.metrics[f"rejected_invalid_citation_rate/{key}"] == pytest.approx(2 / 15)
    assert report.metrics[f"rejected_other/{key}"] == 1
    corpus_key = "direct_corpus/musique/local/scripted"
    assert report.metrics[f"rejected_non-submit_on_the_last_turn/{corpus_key}"] == 1
    assert any("r-corpus" in n and "'other' holds empty_search 1" in n for n in report.notes)  # submit_only_turn is not


# --- C.2: parse failures ---------------------------------------------------------------------------


def turn(accepted=True, cause=None, read=None, calls=None):
    return {"accepted": accepted, "rejection_cause": cause, "read_title": read, "calls_made": calls}


def submit_traj(forced, *turns, method="direct"):
    return {"method": method, "turns": list(turns), "submitted": None if forced else "x", "forced_end": forced}


def eir_traj(parsed):
    return {"method": "eir", "turns": [turn(), turn()], "submitted": "x", "forced_end": False, "final_parsed": parsed}


def rec(row):
    """A hand-built line as the record it reads as."""
    return QuestionRecord.model_validate(row)


def named(trajectory):
    """A trajectory in the shape each method writes, naming its method as that shape does (its keys)."""
    if not isinstance(trajectory, dict) or "method" in trajectory:
        return trajectory
    return {"method": mig.trajectory_method(trajectory), **trajectory}


def answered(qid, f1, em, trajectory, error=None):
    return {"id": qid, "answer_f1": f1, "em": float(em), "trajectory": named(trajectory), "error": error,
            "rejections_by_cause": {}}


def test_status_by_method_family():
    def status(row):
        return parse_failures.status(rec(row))

    assert status(answered("a", 0, 0, submit_traj(True, turn(), turn(False, "not_json")))) == "unreadable"
    assert status(answered("a", 0, 0, submit_traj(True, turn(), turn(False, rejection.NO_ACTION)))) == "unreadable"
    # Forced out after a parsed but invalid action: a wrong answer, not a parse failure.
    assert status(answered("a", 0, 0, submit_traj(True, turn(False, "not_json"), turn(False, "no_reads_left")))) \
        == "readable"
    assert status(answered("a", 0, 0, submit_traj(True, turn(False, "wrong_type"), turn()))) == "readable"
    # A read refused on the submit-only last turn was parsed: the forced end is a wrong answer, not a parse failure.
    assert status(answered("a", 0, 0, submit_traj(True, turn(), turn(False, rejection.SUBMIT_ONLY_TURN)))) \
        == "readable"
    assert status(answered("a", 0, 0, submit_traj(False, turn(False, "not_json"), turn()))) == "readable"
    # Reflexion: only its last trial answers.
    def trial(forced, cause):
        return {"trial": 1, "turns": [turn(False, cause)], "forced_end": forced}

    def reflexion(*trials):
        return {"method": "reflexion", "trials": list(trials), "stopped_at": 2}

    assert status(answered("a", 0, 0, reflexion(trial(True, "not_json"), trial(False, None)))) == "readable"
    assert status(answered("a", 0, 0, reflexion(trial(False, None), trial(True, "wrong_type")))) == "unreadable"
    assert status(answered("a", 0, 0, eir_traj(False))) == "unreadable"
    assert status(answered("a", 0, 0, {"method": "full_pool", "final_parsed": True})) == "readable"
    assert status(answered("a", 0, 0, None, error="RuntimeError: boom")) == "failed"


OK = submit_traj(False, turn(), turn())
BAD = submit_traj(True, turn(), turn(False, "missing_field"))
EIR_C2 = [answered("q1", 1.0, 1, eir_traj(True)), answered("q2", 0.0, 0, eir_traj(False)),
          answered("q3", 0.5, 0, eir_traj(True)), answered("q4", 1.0, 1, eir_traj(True)),
          answered("q5", 0.0, 0, None, error="RuntimeError: boom"), answered("q6", 0.0, 0, eir_traj(True))]
DIRECT_C2 = [answered("q1", 0.5, 0, OK), answered("q2", 1.0, 1, OK), answered("q3", 0.0, 0, BAD),
             answered("q4", 1.0, 1, OK), answered("q5", 1.0, 1, OK), answered("q6", 0.25, 0, OK),
             answered("q7", 1.0, 1, OK)]


def test_c2_unreadable_shares_and_paired_recomparison(tmp_path):
    runs = [logged("eir", "hotpotqa", EIR_C2, "r-eir"), logged("direct", "hotpotqa", DIRECT_C2, "r-direct"),
            logged("direct_corpus", "hotpotqa", DIRECT_C2, "r-corpus", setting="corpus")]  # another setting: no pair
    report = parse_failures.analyze(runs, Context(out=tmp_path, resamples=2000), tmp_path)
    _, rows = table_rows(report.tables["c2_parse_failures.md"], "method")
    assert {k: (r["n"], r["failed"], r["unreadable"], r["unreadable %"]) for k, r in rows.items()} == {
        ("eir",): ("6", "1", "1", "20.0"), ("direct",): ("7", "0", "1", "14.3"),
        ("direct_corpus",): ("7", "0", "1", "14.3")}

    # Shared q1-q6; both readable: q1, q4, q6 (q2 EIR's final call failed, q3 Direct unparseable, q5 EIR raised).
    _, pairs = table_rows(report.tables["c2_readable_comparison.md"], "EIR", "baseline")
    assert list(pairs) == [("eir", "direct")]
    row = pairs[("eir", "direct")]
    assert (row["shared"], row["both readable"]) == ("6", "3")
    # EIR − Direct, 0-100: all shared (+50 −100 +50 0 −100 −25) / 6; both readable (+50, 0, −25) / 3.
    assert row["ΔF1 all shared"] == "-20.8"
    expected = paired_bootstrap([50, 100, 25], [100, 100, 0], 2000, 0)
    assert expected.diff == pytest.approx(25 / 3)
    assert row["ΔF1 both readable [95% CI]"] == f"+8.3 [{expected.low:+.1f}, {expected.high:+.1f}]"
    assert row["EM b / c"] == "0 / 1" and row["McNemar p"] == "1.0000"  # q1: only EIR exact
    pair = "eir/hotpotqa/local/scripted/vs/direct/hotpotqa/local/scripted"
    assert report.metrics[f"kept/{pair}"] == 3 and report.metrics[f"f1_diff/{pair}"] == pytest.approx(25 / 3)
    assert report.metrics[f"unreadable_share/eir/hotpotqa/{LM}"] == pytest.approx(0.2)


def test_c2_names_its_counting_and_fence_reading_and_counts_outputs_beside_questions(tmp_path):
    # Direct: one question with an unparseable first turn that still submitted (readable as an answer, one
    # unparseable output of two), one BAD (last turn unparseable, no submit), one OK.
    recovered = answered("q9", 1.0, 1, submit_traj(False, turn(False, "not_json"), turn()))
    runs = [logged("eir", "hotpotqa", EIR_C2, "r-eir"),
            logged("direct", "hotpotqa", [recovered, DIRECT_C2[2], DIRECT_C2[0]], "r-direct")]
    report = parse_failures.analyze(runs, Context(out=tmp_path, resamples=200), tmp_path)
    head, rows = table_rows(report.tables["c2_parse_failures.md"], "method")
    assert head[-2:] == ["unparseable outputs / outputs", "% of outputs"]
    # Per question: 1 of 3 (BAD). Per output: q9's first turn and BAD's last, of 2 + 2 + 2 turns.
    assert [rows[("direct",)][c] for c in ("unreadable", "unreadable %", *head[-2:])] == ["1", "33.3", "2 / 6", "33.3"]
    # EIR: five questions with two turns and a final call each (q5 raised: none); q2's final call unparseable.
    assert [rows[("eir",)][c] for c in head[-2:]] == ["1 / 15", "6.7"]
    assert report.metrics[f"unparseable_outputs/direct/hotpotqa/{LM}"] == 2
    assert report.metrics[f"unparseable_output_share/eir/hotpotqa/{LM}"] == pytest.approx(1 / 15)
    assert report.params["counting"].startswith("per question: the output the method is scored on")
    assert report.params["json_only_fences"].startswith("text: a code fence around the JSON object is text")
    note = report.tables["c2_parse_failures.md"]
    assert "Counting (a choice" in note and "Code fences (a choice: H.4 is silent): text: " in note


def test_c2_without_a_baseline_says_so(tmp_path):
    report = parse_failures.analyze([logged("eir", "hotpotqa", EIR_C2, "r-eir")], Context(out=tmp_path), tmp_path)
    assert "no EIR-family run with a non-EIR run" in report.tables["c2_readable_comparison.md"]


def test_c2_pair_with_nothing_readable_in_common(tmp_path):
    # q2: EIR's final call failed
    pool = [answered(q, 1.0, 1, {"method": "full_pool", "final_parsed": q != "q1"}) for q in ("q1", "q2")]
    runs = [logged("eir", "hotpotqa", EIR_C2, "r-eir"), logged("full_pool", "hotpotqa", pool, "r-pool")]
    report = parse_failures.analyze(runs, Context(out=tmp_path), tmp_path)
    _, pairs = table_rows(report.tables["c2_readable_comparison.md"], "EIR", "baseline")
    row = pairs[("eir", "full_pool")]
    assert (row["shared"], row["both readable"], row["ΔF1 both readable [95% CI]"]) == ("2", "0", "–")
    assert "1 of the 1 pairs had no shared question with both outputs readable" in " ".join(report.notes)


# --- Table 21: calls after support -----------------------------------------------------------------


def calls(*roles):
    return [{"role": r} for r in roles]


def supported(qid, gold, trajectory, lm_calls, error=None):
    return {"id": qid, "gold_titles": gold, "trajectory": named(trajectory), "lm_calls": lm_calls, "error": error}


G = ["G1", "G2"]
EIR_T21 = [
    # G1 then G2 (at 3 calls): the fourth action and the final call come after.
    supported("e1", G, {"turns": [turn(read="G1", calls=1), turn(read="X", calls=2), turn(read="G2", calls=3),
                                  turn(calls=4)]}, calls("action", "action", "action", "action", "final")),
    # G2, G1 (at 2 calls), a rejected turn, the submit, the final call: 3 after.
    supported("e2", G, {"turns": [turn(read="G2", calls=1), turn(read="G1", calls=2), turn(False, "not_json", calls=3),
                                  turn(calls=4)]}, calls("action", "action", "action", "action", "final")),
    supported("e3", G, {"turns": [turn(read="G1", calls=1), turn(calls=2)]}, calls("action", "action", "final")),
    supported("e4", G, None, calls("action"), error="RuntimeError: boom"),  # raised: left out
]
REFLEXION_T21 = [
    # Trial 1 reads G1; trial 2 reads G2 at 4 calls, then G1 again at 5 (complete within trial 2) and submits:
    # 1 action after.
    supported("x1", G, {"trials": [{"turns": [turn(read="G1", calls=1), turn(calls=2)]},
                                   {"turns": [turn(read="G2", calls=4), turn(read="G1", calls=5), turn(calls=6)]}]},
              calls("action", "action", "reflect", "action", "action", "action")),
    # Trial 1 reads both (complete at 2 calls): its submit, the reflection and all of trial 2 come after.
    supported("x2", G, {"trials": [{"turns": [turn(read="G1", calls=1), turn(read="G2", calls=2), turn(calls=3)]},
                                   {"turns": [turn(read="X", calls=5), turn(calls=6)]}]},
              calls("action", "action", "action", "reflect", "action", "action")),
    # Trial 1 reads G1, trial 2 reads G2: every paragraph read over the trials, but no one trial read them all.
    supported("x3", G, {"trials": [{"turns": [turn(read="G1", calls=1), turn(calls=2)]},
                                   {"turns": [turn(read="G2", calls=4), turn(calls=5)]}]},
              calls("action", "action", "reflect", "action", "action")),
]


def after(row, trials):
    return calls_after_support.calls_after_support(rec(row), trials)


def trials_of(row):
    return calls_after_support.trials_of(rec(row))


def test_calls_after_support_for_one_record():
    assert after(EIR_T21[0], trials_of(EIR_T21[0])) == {"action": 1, "final": 1}
    assert after(EIR_T21[2], trials_of(EIR_T21[2])) is None
    assert [[t["calls_made"] for t in trial] for trial in trials_of(REFLEXION_T21[0])] == [[1, 2], [4, 5, 6]]


def test_reflexion_support_counts_within_one_trial():
    """The paper: "at least one Reflexion trial reads every paragraph". Reads do not carry over trials."""
    # x1: trial 2 read G2 then G1 itself: complete at its 5th call, not at G2 (4 calls) on top of trial 1's G1.
    assert after(REFLEXION_T21[0], trials_of(REFLEXION_T21[0])) == {"action": 1}
    # x3: G1 in trial 1 and G2 in trial 2 is every paragraph over the trials, but no trial's.
    assert after(REFLEXION_T21[2], trials_of(REFLEXION_T21[2])) is None
    # The same reads within one trial do count.
    one_trial = {**REFLEXION_T21[2], "trajectory": {"method": "reflexion", "trials": [{"turns": [
        turn(read="G1", calls=1), turn(read="G2", calls=2)]}]}}
    assert after(one_trial, trials_of(one_trial)) == {"reflect": 1, "action": 2}


def test_table21_by_hand(tmp_path):
    runs = [logged("eir", "hotpotqa", EIR_T21, "r-eir"), logged("reflexion_oracle", "hotpotqa", REFLEXION_T21, "r-x"),
            logged("full_pool", "hotpotqa", [supported("p", G, {"final_parsed": True}, calls("final"))], "r-pool")]
    report = calls_after_support.analyze(runs, Context(out=tmp_path), tmp_path)
    head, rows = table_rows(report.tables["table21_calls_after_support.md"], "method")
    assert head == ["method", "dataset", "LM", "n", "support read", "never read", "calls after/q", "action/q",
                    "final/q", "reflect/q", "% of calls"]
    # EIR: e1 2 after (1 action, 1 final), e2 3 (2 actions, 1 final), e3 never; 5 of 13 calls.
    assert [rows[("eir",)][c] for c in head[3:]] == ["3", "2", "1", "2.50", "1.50", "1.00", "0.00", "38.5"]
    # Reflexion: x1 1 action (support within trial 2); x2 3 actions and a reflection; x3 never within one
    # trial. 5 of 17 calls.
    assert [rows[("reflexion_oracle",)][c] for c in head[3:]] == ["3", "2", "1", "2.50", "2.00", "0.00", "0.50",
                                                                  "29.4"]
    assert ("full_pool",) not in rows and any("r-pool" in n for n in report.notes)
    assert any("r-eir" in n and "1 questions left out" in n for n in report.notes)
    assert report.metrics[f"calls_after_support_share/reflexion_oracle/hotpotqa/{LM}"] == pytest.approx(5 / 17)
    assert report.metrics[f"support_never_read/reflexion_oracle/hotpotqa/{LM}"] == 1
    assert report.metrics[f"support_never_read/eir/hotpotqa/{LM}"] == 1


def test_table21_note_states_the_per_trial_rule_the_counts_apply(tmp_path):
    report = calls_after_support.analyze([logged("reflexion_oracle", "hotpotqa", REFLEXION_T21, "r-x")],
                                         Context(out=tmp_path), tmp_path)
    text = report.tables["table21_calls_after_support.md"]
    # x3 read G1 in trial 1 and G2 in trial 2: "never read" under the note's rule, as in the counts.
    _, rows = table_rows(text, "method")
    assert (rows[("reflexion_oracle",)]["support read"], rows[("reflexion_oracle",)]["never read"]) == ("2", "1")
    assert "a paragraph read only in an earlier trial does not count" in text
    assert "counting as read" not in text  # the earlier note said the opposite of the rule applied
    assert "that turn's own action call excluded" in text
    assert report.params["reflexion_support"] == "within one trial"


def test_table21_notes_runs_outside_the_corpus_setting_the_paper_used(tmp_path):
    pool = calls_after_support.analyze([logged("eir", "hotpotqa", EIR_T21, "r-eir")], Context(out=tmp_path), tmp_path)
    assert any("Table 21 is over its corpus-setting runs" in n and "eir / hotpotqa" in n for n in pool.notes)
    corpus = calls_after_support.analyze([logged("eir_corpus", "hotpotqa", EIR_T21, "r-c", setting="corpus")],
                                         Context(out=tmp_path), tmp_path)
    assert not any("corpus-setting" in n for n in corpus.notes)
    assert corpus.metrics[f"support_read/eir_corpus/hotpotqa/{LM}"] == 2
