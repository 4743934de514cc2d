"""Degenerate-run warnings (eval.scoring.health) on hand-built records: each fires with its counts and
main cause, and a healthy run of every method gets none."""

import json
from collections import Counter
from itertools import count

import pytest

import eval.summary as summary
from eval.scoring import health
from eval.scoring.health import warnings_for
from eval.scoring.run_metrics import TABLE_KEYS, behaviour, format_table, summarize
from programs.registry import METHODS
from tests.fixtures.pool import ACT, ALBUM, BAND
from tests.fixtures.pool import record_of as pool_record_of
from tests.scripted import act

IDS = count(1)


def read_turn(n, title="t"):
    return {"turn": n, "action": {"kind": "read", "title": title}, "accepted": True, "feedback": "read",
            "read_title": title, "title_fallback": False}


def fallback_turn(n, asked, read):
    """A pool read of `asked` that matched no unread title, so the pool read `read` instead."""
    return {**read_turn(n, asked), "read_title": read, "title_fallback": True}


def submit_turn(n, answer="a"):
    return {"turn": n, "action": {"kind": "submit", "answer": answer}, "accepted": True, "feedback": "submitted"}


def rejected_turn(n, cause):
    return {"turn": n, "action": None, "accepted": False, "feedback": "rejected", "rejection_cause": cause}


def call(role, completion_tokens=20):
    return {"role": role, "model": "m", "prompt_tokens": 100, "completion_tokens": completion_tokens,
            "latency_s": 0.1, "cache_hit": False, "cost_usd": None}


def record(method="eir", turns=(), prediction="an answer", reads=None, submitted=True, final_parsed=True,
           calls=None, error=None, trials=None):
    """A record as eval.runs.execute writes it, from an episode's turn dicts (or Reflexion's trials, as
    (turns, submitted) pairs); `reads` defaults to the accepted read turns, `title_fallbacks` counts
    the turns marked as one."""
    if trials is not None:
        trajectory = {"method": "reflexion", "trials": [
            {"trial": i + 1, "turns": list(ts), "submitted": "a" if sub else None, "forced_end": not sub}
            for i, (ts, sub) in enumerate(trials)], "stopped_at": len(trials)}
        turns, submitted = [t for ts, _ in trials for t in ts], trials[-1][1]
    elif method == "full_pool":
        trajectory = {"method": "full_pool", "final_parsed": final_parsed}
    else:
        trajectory = {"method": method, "turns": list(turns), "submitted": "a" if submitted else None,
                      "forced_end": not submitted, **({"final_parsed": final_parsed} if method == "eir" else {})}
    if error is not None:
        trajectory = None
    rejected = [t["rejection_cause"] for t in turns if not t["accepted"]]
    read = sum(1 for t in turns if t["accepted"] and t["action"]["kind"] == "read")
    episode = trajectory is not None and method != "full_pool"
    return {"id": f"q{next(IDS)}", "prediction": prediction, "answer_f1": 0.5, "em": 0.0, "support_f1": 0.5,
            "calls": len(calls or []), "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None,
            "cache_hits": 0, "seconds": 1.0, "turns": len(turns), "rejected_actions": len(rejected),
            "rejections_by_cause": dict(Counter(rejected)), "reads": read if reads is None else reads,
            "title_fallbacks": sum(1 for t in turns if t.get("title_fallback")),
            "searches": 0, "gold_read_share": 0.5, "forced_end": (not submitted) if episode else None,
            "submitted_before_budget": submitted and episode, "error": error,
            "trajectory": trajectory, "lm_calls": calls or []}


def healthy(method):
    if method == "full_pool":
        return record("full_pool", reads=0, calls=[call("final")])
    if method == "reflexion":
        return record(trials=[([read_turn(1), read_turn(2), submit_turn(3)], True)], calls=[call("action")] * 3)
    turns = [read_turn(1), rejected_turn(2, "not_json"), read_turn(3), submit_turn(4)]
    return record(method, turns, calls=[call("action")] * 4 + ([call("final")] if method == "eir" else []))


@pytest.mark.parametrize("method", ["eir", "direct", "ssr", "reflexion", "full_pool"])
def test_a_healthy_run_of_every_method_gets_no_warning(method):
    records = [healthy(method) for _ in range(5)]
    assert warnings_for(method, records, max_tokens=256) == []
    assert health.render([]) == ""


def test_most_turns_rejected_names_the_share_the_counts_and_the_main_cause():
    first = [rejected_turn(i, "invalid_citation") for i in range(1, 8)] + [rejected_turn(8, "not_json"),
                                                                              read_turn(9), read_turn(10)]
    second = [rejected_turn(i, "invalid_citation") for i in range(1, 6)] + [rejected_turn(6, "missing_field")] + \
        [read_turn(7), read_turn(8), read_turn(9), submit_turn(10)]
    found = warnings_for("eir", [record("eir", first), record("eir", second)])
    assert [w.text for w in found] == ["eir: 70% of turns rejected (14 of 20; main cause invalid_citation: 12)"]
    w = found[0]
    assert (w.code, w.count, w.total, w.cause, w.cause_count) == ("rejected_turns", 14, 20, "invalid_citation", 12)
    # Its counts are the summary table's: 14 / 20 is the rejected share it shows.
    assert summarize([record("eir", first), record("eir", second)])["rejected_action_rate"] == pytest.approx(0.7)


def test_half_the_turns_rejected_is_not_most():
    turns = [rejected_turn(1, "not_json"), read_turn(2), rejected_turn(3, "not_json"), submit_turn(4)]
    assert warnings_for("eir", [record("eir", turns)]) == []


def test_direct_that_never_submits_gets_both_warnings_with_their_causes():
    records = [record("direct", [read_turn(i) for i in range(1, 7)], prediction="", submitted=False)
               for _ in range(10)]
    texts = [w.text for w in warnings_for("direct", records)]
    assert texts == ["direct: 10 of 10 episodes ended without a submission (main cause read on every turn: 10)",
                     "direct: every answer is empty (10 of 10; main cause no submission: 10)"]
    assert behaviour(records)["no_submission_rate"] == 1.0


def test_episodes_without_a_submission_name_how_their_last_turn_ended():
    rejected_last = [read_turn(1), read_turn(2), rejected_turn(3, "no_reads_left")]
    records = [record("ssr", rejected_last, submitted=False) for _ in range(2)] + \
        [record("ssr", [rejected_turn(1, "not_json"), rejected_turn(2, "not_json")], submitted=False),
         record("ssr", [read_turn(1), submit_turn(2)])]
    found = {w.code: w for w in warnings_for("ssr", records)}
    assert found["no_submission"].text == ("ssr: 3 of 4 episodes ended without a submission "
                                           "(main cause last turn rejected (no_reads_left): 2)")


def test_eir_and_full_pool_are_not_scored_on_a_submission():
    records = [record("eir", [read_turn(1), read_turn(2)], submitted=False) for _ in range(3)]
    assert warnings_for("eir", records) == []  # its final call answers after a forced end


def test_reflexion_counts_each_trial_as_an_episode():
    failed = ([read_turn(1), read_turn(2)], False)
    records = [record(trials=[failed, failed, ([read_turn(1), submit_turn(2)], True)]) for _ in range(2)] + \
        [record(trials=[failed, failed], prediction="")]
    found = {w.code: w for w in warnings_for("reflexion_oracle", records)}
    assert found["no_submission"].text == ("reflexion_oracle: 6 of 8 episodes ended without a submission "
                                           "(main cause read on every turn: 6)")
    assert (found["no_submission"].count, found["no_submission"].total) == (6, 8)
    assert "empty_answers" not in found  # 1 of 3 is not most


def test_almost_no_reads_names_the_reads_a_question_and_why_none_were_read():
    records = [record("eir", [submit_turn(1)]), record("eir", [submit_turn(1)]),
               record("eir", [read_turn(1), submit_turn(2)]), record("eir", [rejected_turn(1, "not_json")] * 3,
                                                                     submitted=False)]
    found = warnings_for("eir", records)
    few = next(w for w in found if w.code == "few_reads")
    assert few.text == ("eir: almost no paragraphs read (0.2 a question; 3 of 4 questions read none, "
                        "main cause submitted without reading: 2)")
    assert (few.count, few.total) == (3, 4)


def test_few_reads_is_a_low_mean_or_most_questions_unread():
    def run(reads):
        return [record("direct", [read_turn(1), submit_turn(2)], reads=n) for n in reads]

    assert warnings_for("direct", run([0, 2, 2])) == []  # 1.3 a question, 1 of 3 unread
    assert [w.text for w in warnings_for("direct", run([0, 1, 1]))] == [
        "direct: almost no paragraphs read (0.7 a question; 1 of 3 questions read none, "
        "main cause submitted without reading: 1)"]
    assert [(w.count, w.total) for w in warnings_for("direct", run([0, 0, 0, 6, 6]))] == [(3, 5)]  # 2.4 a question


def test_full_pool_reads_nothing_by_construction():
    records = [record("full_pool", reads=0) for _ in range(4)]
    assert warnings_for("full_pool", records) == []


def test_failed_questions_are_left_out_of_reads_and_named_as_the_cause_of_empty_answers():
    ok = record("eir", [read_turn(1), read_turn(2), submit_turn(3)])
    failed = [record("eir", prediction="", error="RuntimeError: boom") for _ in range(3)]
    texts = [w.text for w in warnings_for("eir", [ok, *failed])]
    assert texts == ["eir: 3 of 4 answers are empty (main cause question failed: 3)"]


def test_empty_answers_from_an_unreadable_final_call():
    turns = [read_turn(1), submit_turn(2)]
    records = [record("eir", turns, prediction="", final_parsed=False) for _ in range(2)] + [record("eir", turns)]
    assert [w.text for w in warnings_for("eir", records)] == [
        "eir: 2 of 3 answers are empty (main cause final answer unreadable: 2)"]


def test_answers_cut_at_the_token_limit_need_the_limit():
    turns = [read_turn(1), submit_turn(2)]
    cut = [call("action"), call("action", 256), call("final", 256)]
    records = [record("eir", turns, prediction="", final_parsed=False, calls=cut) for _ in range(3)] + \
        [record("eir", turns, calls=[call("action"), call("action"), call("final")])]
    texts = [w.text for w in warnings_for("eir", records, max_tokens=256)]
    assert texts == ["eir: 3 of 4 answers are empty (main cause cut at the token limit: 3)",
                     "eir: 3 of 4 answering calls stopped at the 256-token limit (6 of 12 calls in all)"]
    # Without the run's limit the cut is not looked for, and the empty answers keep their other cause.
    assert [w.text for w in warnings_for("eir", records)] == [
        "eir: 3 of 4 answers are empty (main cause final answer unreadable: 3)"]
    assert warnings_for("eir", records, max_tokens=512) == warnings_for("eir", records)


def test_a_turn_method_s_answering_call_is_its_last_turn():
    records = [record("direct", [read_turn(1), submit_turn(2)], calls=[call("action"), call("action", 64)])
               for _ in range(2)]
    found = warnings_for("direct", records, max_tokens=64)
    assert [(w.code, w.count, w.total) for w in found] == [("cut_at_limit", 2, 2)]


def test_the_method_comes_from_the_records_unless_given():
    records = [record("direct", [read_turn(i) for i in range(1, 7)], submitted=False) for _ in range(2)]
    assert [w.code for w in warnings_for("some label", records)] == ["no_submission"]
    assert warnings_for("some label", records, method="eir") == []
    assert warnings_for("x", []) == []


def test_render_prints_one_warning_line_each():
    records = [record("direct", [read_turn(i) for i in range(1, 7)], prediction="", submitted=False)]
    assert health.render(warnings_for("direct", records)) == (
        "warning: direct: 1 of 1 episodes ended without a submission (main cause read on every turn: 1)\n"
        "warning: direct: every answer is empty (1 of 1; main cause no submission: 1)\n")


def test_eir_whose_list_updates_are_mostly_discarded_is_warned_with_the_main_cause():
    def discarded(n, cause):
        return dict(read_turn(n), discarded_cause=cause)

    mostly = [record(turns=[discarded(1, "invalid_citation"), discarded(2, "invalid_citation"),
                            discarded(3, "wrong_type"), submit_turn(4)]) for _ in range(2)]
    [w] = warnings_for("eir", mostly)
    assert w.code == "discarded_updates" and (w.count, w.total) == (6, 8)
    assert w.text == "eir: 75% of accepted turns had their list updates discarded (6 of 8; main cause invalid_citation: 4)"
    half = [record(turns=[discarded(1, "invalid_citation"), read_turn(2), discarded(3, "wrong_type"), submit_turn(4)])]
    assert warnings_for("eir", half) == []  # exactly half is not most
    assert warnings_for("direct", [record(method="direct", turns=[discarded(1, "x"), submit_turn(2)])]) == []


def test_most_reads_title_fallbacks_names_the_counts_the_share_and_the_main_cause():
    # q1 asks again for A (read on turn 1; "a" is A to the pool's matching) and for a title not in the pool;
    # q2 asks twice for titles not in the pool, then reads C by its own title.
    first = [read_turn(1, "A"), fallback_turn(2, "a", "B"), fallback_turn(3, "Nowhere", "C"), submit_turn(4)]
    second = [fallback_turn(1, "Nowhere", "A"), fallback_turn(2, "Elsewhere", "B"), read_turn(3, "C"), submit_turn(4)]
    records = [record("eir", first), record("eir", second)]
    [w] = warnings_for("eir", records)
    assert (w.code, w.count, w.total, w.cause, w.cause_count) == ("title_fallbacks", 4, 6, "title not in the pool", 3)
    assert w.text == ("eir: 4 of 6 reads (67%) were title fallbacks: the agent asked for titles it had already read "
                      "or that are not in the pool, so the pool read its first unread paragraph instead "
                      "(main cause title not in the pool: 3)")
    # The counts are the tables': 2 fallbacks a question, 3 reads.
    metrics = summarize(records)
    assert metrics["title_fallbacks_per_question"] == 2.0 and metrics["reads_per_question"] == 3.0
    # A title read earlier in the episode is the main cause when most fallbacks ask for one.
    again = [read_turn(1, "A"), fallback_turn(2, "A", "B"), fallback_turn(3, "A", "C"), submit_turn(4)]
    [w] = warnings_for("direct", [record("direct", again)])
    assert (w.count, w.total, w.cause, w.cause_count) == (2, 3, "title already read", 2)


def test_half_the_reads_falling_back_is_not_most_and_runs_without_a_count_are_not_looked_at():
    half = [read_turn(1, "A"), fallback_turn(2, "A", "B"), read_turn(3, "C"), fallback_turn(4, "x", "D"),
            submit_turn(5)]
    assert warnings_for("eir", [record("eir", half)]) == []
    mostly = [fallback_turn(1, "x", "A"), fallback_turn(2, "y", "B"), submit_turn(3)]
    assert [w.code for w in warnings_for("eir", [record("eir", mostly)])] == ["title_fallbacks"]
    # A record without the count (title_fallbacks None: not a pool record) adds neither fallbacks nor reads.
    uncounted = {**record("eir", mostly), "title_fallbacks": None}
    assert warnings_for("eir", [uncounted]) == []
    assert "title_fallbacks_per_question" not in behaviour([uncounted])
    assert warnings_for("eir", [uncounted, record("eir", half)]) == []  # 2 of 4 reads counted
    # Full Pool reads the whole pool: its reads and fallbacks are never looked at.
    assert warnings_for("x", [record("eir", mostly)], method="full_pool") == []


def test_reflexion_counts_the_fallbacks_and_reads_of_every_trial():
    failed = ([fallback_turn(1, "x", "A"), fallback_turn(2, "y", "B")], False)
    records = [record(trials=[failed, ([read_turn(1, "A"), submit_turn(2)], True)]) for _ in range(2)]
    [w] = warnings_for("reflexion_oracle", records)
    assert (w.code, w.count, w.total) == ("title_fallbacks", 4, 6)
    assert w.text.startswith("reflexion_oracle: 4 of 6 reads (67%) were title fallbacks")


def test_a_real_pool_episode_s_fallbacks_are_warned_with_their_causes():
    """Direct on the Tinted Windows pool (eval.runs.execute's record, scripted LM): it reads the album,
    asks for it again and then for a title not in the pool; the pool reads the band and the act instead."""
    replies = [act("read", ALBUM), act("read", ALBUM), act("read", "Nowhere"),
               act("submit", answer="Tulsa", citations=[(BAND, 1)])]
    row, _ = pool_record_of(METHODS["direct"].build(6, {}), replies)
    assert (row["reads"], row["title_fallbacks"]) == (3, 2)
    assert [t.get("read_title") for t in row["trajectory"]["turns"][:3]] == [ALBUM, BAND, ACT]
    [w] = warnings_for("direct", [row])
    assert (w.code, w.count, w.total) == ("title_fallbacks", 2, 3)
    assert w.text.endswith("instead (main cause title already read: 1)")  # a tie: the first cause by name


def test_the_run_tables_show_fallbacks_a_question():
    assert ("title_fallbacks_per_question", "fallbacks/q", "{:.2f}") in TABLE_KEYS
    turns = [read_turn(1, "A"), fallback_turn(2, "A", "B"), fallback_turn(3, "x", "C"), submit_turn(4)]
    head, _, row = format_table(summarize([record("eir", turns), record("eir", turns[:1] + turns[3:])]), "eir"
                                ).splitlines()
    cells = dict(zip([c.strip() for c in head.split(" | ")], [c.strip() for c in row.split(" | ")]))
    assert cells["fallbacks/q"] == "1.00" and cells["reads/q"] == "2.00"
    older = {**record("eir", turns), "title_fallbacks": None}  # a record without the count: "-"
    head, _, row = format_table(summarize([older]), "eir").splitlines()
    assert dict(zip([c.strip() for c in head.split(" | ")], [c.strip() for c in row.split(" | ")]))["fallbacks/q"] == "-"


def test_eval_summary_prints_fallbacks_a_question_and_the_fallback_warning(tmp_path, capsys):
    run = tmp_path / "runs" / "abc123"
    run.mkdir(parents=True)
    turns = [fallback_turn(1, "x", "A"), fallback_turn(2, "y", "B"), read_turn(3, "C"), submit_turn(4)]
    lines = [{**record("eir", turns), "run_id": "abc123"} for _ in range(3)]
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary.main([str(run / "results.jsonl")])
    printed = capsys.readouterr().out.splitlines()
    head = [c.strip() for c in printed[0].split(" | ")]
    assert head.index("fallbacks/q") and printed[2].split(" | ")[head.index("fallbacks/q")].strip() == "2.00"
    assert [line for line in printed if line.startswith("warning: ")] == [
        "warning: eir: 6 of 9 reads (67%) were title fallbacks: the agent asked for titles it had already read or "
        "that are not in the pool, so the pool read its first unread paragraph instead "
        "(main cause title not in the pool: 6)"]
