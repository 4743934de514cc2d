import json

import pytest

from programs.eir import EIR
from programs.run_context import RunContext
from tests.fixtures.pool import POOL, Q
from tests.scripted import field, final, run_program, turn

REQ = {"id": None, "text": "QQREQUIREMENT city of first show", "status": "open"}
CONC = {"id": None, "claim": "QQCLAIM first show in Tulsa", "status": "supported",
        "citations": [{"title": "Tinted Windows (band)", "sentence": 1}]}


def run(replies, budget=6, decoding="free"):
    return run_program(EIR(budget=budget, context=RunContext(decoding)), Q, POOL, replies)


def test_final_answer_sees_only_question_and_evidence():
    pred, ledger, engine = run([
        turn("read", "Tinted Windows (album)", reqs=[REQ]),
        turn("read", "Tinted Windows (band)"),
        turn("submit", answer="QQSUBMITTED Tulsa, Oklahoma", concls=[CONC]),
        final("Tulsa", [("Tinted Windows (band)", 1)]),
    ])
    final_prompt = engine.prompts[-1]
    assert pred.answer == "Tulsa" and pred.citations == [("Tinted Windows (band)", 1)]
    assert pred.trajectory["conclusions"][0]["claim"] == "QQCLAIM first show in Tulsa"
    for leaked in ("QQREQUIREMENT", "QQCLAIM", "QQSUBMITTED", "R1", "C1", "Act of Congress"):
        assert leaked not in final_prompt
    assert "[1] Their first show was in Tulsa." in final_prompt and Q in final_prompt
    assert ledger.by_role() == {"action": 3, "final": 1}


def test_turn_prompt_has_the_lists_and_only_unread_titles():
    _, _, engine = run([turn("read", "Act of Congress", reqs=[REQ]), turn("submit"), final("x")])
    second = engine.prompts[1]
    assert "R1 [open] QQREQUIREMENT city of first show" in second
    unread = second.rsplit("[[ ## unread_titles ## ]]", 1)[1].split("[[ ##")[0]
    assert "Act of Congress" not in unread and "Tinted Windows (album)" in unread


def test_turn_prompt_puts_stable_inputs_first_and_shows_how_to_cite_the_read_paragraph():
    pred, _, engine = run([turn("read", "Tinted Windows (band)", reqs=[REQ]),
                           turn("submit", concls=[dict(CONC, citations=[{"title": "Tinted Windows (band)", "sentence": 1}])]),
                           final("x")])
    second = engine.prompts[1]
    order = [second.rindex(f"[[ ## {name} ## ]]") for name in
             ("question", "requirements", "conclusions", "unread_titles", "last_result")]
    assert order == sorted(order)  # the question and the lists before what changes every turn
    assert 'Read "Tinted Windows (band)" (5 reads left). Cite a sentence below as ' \
           '{"title": "Tinted Windows (band)", "sentence": <its [number]>}:\n[0] Tinted Windows is a supergroup.' in second
    # the per-turn format reminder names the fields only (their types are in the system message)
    assert second.rstrip().endswith("Respond with a JSON object in the following order of fields: "
                                    "`requirement_updates`, then `conclusion_updates`, then `action`.")
    assert pred.trajectory["list_updates"] == {"applied": 2, "discarded": 0}
    assert [c["citations"] for c in pred.trajectory["conclusions"]] == [[{"title": "Tinted Windows (band)", "sentence": 1}]]


def run_rejecting(replies, budget=6):
    return run_program(EIR(budget=budget, invalid_updates="reject", context=RunContext("free")), Q, POOL, replies)


def test_pool_an_invalid_citation_discards_the_updates_but_the_read_happens_and_the_next_result_says_so():
    bad = dict(CONC, citations=[{"title": "Tinted Windows (band)", "sentence": 1}])  # not read yet
    pred, ledger, engine = run([turn("read", "Tinted Windows (album)", reqs=[REQ], concls=[bad]),
                                turn("submit"), final("x")])
    ep = pred.episode
    # 3.2 / B.1: both lists stay unchanged (the valid requirement too), the action runs, the turn is accepted.
    assert ep.reads == 1 and ep.evidence.titles == ("Tinted Windows (album)",)
    assert [t.accepted for t in ep.turns] == [True, True] and ep.turns[0].read_title == "Tinted Windows (album)"
    assert ep.turns[0].rejection_cause is None and ep.turns[0].discarded_cause == "invalid_citation"
    assert pred.trajectory["requirements"] == [] and pred.trajectory["conclusions"] == []
    assert pred.trajectory["list_updates"] == {"applied": 0, "discarded": 1}
    last = field(engine.prompts[1], "last_result")
    assert last.startswith('Read "Tinted Windows (album)" (5 reads left).')
    assert last.endswith("\nYour list updates were invalid and discarded: both lists are unchanged (the action ran): "
                         "citation ('Tinted Windows (band)', 1) is not a sentence you have read.")
    assert "Tinted Windows (album)" not in field(engine.prompts[1], "unread_titles")
    assert ledger.by_role() == {"action": 2, "final": 1}


def test_reject_rule_an_invalid_citation_rejects_the_whole_turn_and_the_next_prompt_says_why():
    bad = dict(CONC, citations=[{"title": "Tinted Windows (band)", "sentence": 1}])  # not read yet
    pred, ledger, engine = run_rejecting([turn("read", "Tinted Windows (album)", reqs=[REQ], concls=[bad]),
                                          turn("submit"), final("x")])
    ep = pred.episode
    # The read did not happen, the valid requirement was not applied either, and the turn was used.
    assert ep.reads == 0 and ep.evidence.titles == () and [t.accepted for t in ep.turns] == [False, True]
    assert ep.turns[0].rejection_cause == "invalid_citation" and ep.turns[0].read_title is None
    assert ep.turns[0].discarded_cause is None
    assert pred.trajectory["requirements"] == [] and pred.trajectory["conclusions"] == []
    assert pred.trajectory["list_updates"] == {"applied": 0, "discarded": 1}
    assert field(engine.prompts[1], "last_result") == (
        "Turn 1 was rejected: your list updates are invalid, so nothing of this turn ran (its action included): "
        "citation ('Tinted Windows (band)', 1) is not a sentence you have read")
    assert "Tinted Windows (album)" in field(engine.prompts[1], "unread_titles")
    assert ledger.by_role() == {"action": 2, "final": 1}


@pytest.mark.parametrize("position", ["1", 1.0, "Their first show was in Tulsa."])
def test_pool_a_wrongly_typed_sentence_position_discards_the_updates_and_the_read_happens(position):
    typed = dict(CONC, citations=[{"title": "Tinted Windows (band)", "sentence": position}])  # read, but not an int
    pred, ledger, engine = run([turn("read", "Tinted Windows (band)"),
                                turn("read", "Act of Congress", reqs=[REQ], concls=[typed]), turn("submit"), final("x")])
    ep = pred.episode
    assert ep.evidence.titles == ("Tinted Windows (band)", "Act of Congress")  # the second read happened
    assert [t.accepted for t in ep.turns] == [True, True, True] and ep.turns[1].discarded_cause == "wrong_type"
    assert pred.trajectory["requirements"] == [] and pred.trajectory["conclusions"] == []
    assert ledger.calls[1].unusable is None  # the output was usable: only its list part was invalid
    assert field(engine.prompts[2], "last_result").endswith(
        "\nYour list updates were invalid and discarded: both lists are unchanged (the action ran): "
        f"conclusion_updates.0.citations: Value error, sentence position {position!r} is not an integer.")


@pytest.mark.parametrize("position", ["1", 1.0])
def test_reject_rule_a_wrongly_typed_sentence_position_rejects_the_whole_turn(position):
    typed = dict(CONC, citations=[{"title": "Tinted Windows (band)", "sentence": position}])
    pred, ledger, engine = run_rejecting([turn("read", "Tinted Windows (band)"),
                                          turn("read", "Act of Congress", concls=[typed]), turn("submit"), final("x")])
    ep = pred.episode
    assert ep.reads == 1 and ep.evidence.titles == ("Tinted Windows (band)",)  # the second read did not happen
    assert [t.accepted for t in ep.turns] == [True, False, True] and ep.turns[1].rejection_cause == "wrong_type"
    assert pred.trajectory["conclusions"] == []
    assert field(engine.prompts[2], "last_result") == (
        "Turn 2 was rejected: your list updates are invalid, so nothing of this turn ran (its action included): "
        f"conclusion_updates.0.citations: Value error, sentence position {position!r} is not an integer")


def test_a_list_entry_missing_a_field_is_an_invalid_update_not_an_unusable_output():
    no_claim = {"id": None, "status": "supported", "citations": []}
    pred, ledger, _ = run([turn("read", "Act of Congress", concls=[no_claim]), turn("submit"), final("x")])
    assert pred.episode.reads == 1 and pred.episode.turns[0].discarded_cause == "missing_field"
    pred, _, _ = run_rejecting([turn("read", "Act of Congress", concls=[no_claim]), turn("submit"), final("x")])
    assert pred.episode.reads == 0 and pred.episode.turns[0].rejection_cause == "missing_field"


def test_pool_an_unknown_list_id_discards_the_updates_and_the_read_happens():
    pred, _, engine = run([turn("read", "Act of Congress", reqs=[dict(REQ, id="R7")]), turn("submit"), final("x")])
    assert pred.episode.reads == 1 and pred.episode.turns[0].discarded_cause == "unknown_list_id"
    assert "requirement id 'R7' does not exist" in field(engine.prompts[1], "last_result")


def test_reject_rule_an_unknown_list_id_rejects_the_turn():
    pred, _, engine = run_rejecting([turn("read", "Act of Congress", reqs=[dict(REQ, id="R7")]), turn("submit"),
                                     final("x")])
    assert pred.episode.reads == 0 and pred.episode.turns[0].rejection_cause == "unknown_list_id"
    assert "requirement id 'R7' does not exist" in field(engine.prompts[1], "last_result")


def test_reject_rule_rejected_updates_every_turn_run_into_the_budgets_forced_end():
    bad = dict(CONC, citations=[{"title": "Act of Congress", "sentence": 0}])  # never read
    pred, ledger, _ = run_rejecting([turn("read", "Act of Congress", concls=[bad])] * 2
                                    + [turn("submit", concls=[bad]), final("x")], budget=2)
    ep = pred.episode
    assert ep.forced_end and ep.reads == 0 and len(ep.turns) == 3 and not any(t.accepted for t in ep.turns)
    assert [t.rejection_cause for t in ep.turns] == ["invalid_citation"] * 3
    assert pred.answer == "x" and ledger.by_role() == {"action": 3, "final": 1}  # the final call still answers


def test_pool_invalid_updates_every_turn_still_read_and_submit():
    bad = dict(CONC, citations=[{"title": "Act of Congress", "sentence": 5}])  # no such sentence, ever
    pred, ledger, _ = run([turn("read", "Act of Congress", concls=[bad]), turn("read", "Tinted Windows (band)",
                                                                                concls=[bad]),
                           turn("submit", concls=[bad]), final("x")], budget=2)
    ep = pred.episode
    assert not ep.forced_end and ep.reads == 2 and all(t.accepted for t in ep.turns)
    assert [t.discarded_cause for t in ep.turns] == ["invalid_citation"] * 3
    assert pred.trajectory["list_updates"] == {"applied": 0, "discarded": 3}


def test_the_rule_follows_the_setting_unless_given():
    from eir_dspy.state import paper_invalid_updates
    assert paper_invalid_updates("pool") == "discard" and paper_invalid_updates("corpus") == "reject"
    assert EIR().policy("pool").invalid_updates_rule == "discard"
    assert EIR(invalid_updates="reject").policy("pool").invalid_updates_rule == "reject"
    with pytest.raises(ValueError, match="unknown invalid_updates .ignore.; choose one of discard, reject"):
        EIR(invalid_updates="ignore")


def test_forced_end_still_answers_and_calls_stay_within_turns_plus_one():
    titles = [p.title for p in POOL]
    replies = [turn("read", t) for t in titles] + [turn("read", titles[0])] + [final("Tulsa")]
    pred, ledger, _ = run(replies, budget=3)
    ep = pred.episode
    assert ep.forced_end and ep.reads == 3 and len(ep.turns) == 4 and ep.turns[-1].accepted is False
    assert pred.answer == "Tulsa" and pred.trajectory["submitted"] is None
    assert ledger.n_calls == len(ep.turns) + 1 == 5


def test_unparseable_turn_is_rejected_and_consumes_a_turn():
    pred, ledger, engine = run(["I think I should read the band page.", turn("submit"), final("x")], budget=2)
    ep = pred.episode
    assert [t.accepted for t in ep.turns] == [False, True]
    assert "Turn 1 was rejected: the output could not be used: it is not a JSON object" in engine.prompts[1]
    assert ep.turns[0].rejection_cause == "not_json" and ledger.calls[0].unusable == "not_json"
    assert ledger.n_calls == 3  # the rejected call is counted


def test_constrained_engine_gets_title_enums_of_unread_and_read_titles():
    _, _, engine = run([turn("read", "Act of Congress"), turn("submit"), final("x")], decoding="strict")
    first, second, last = engine.formats
    read, submit = second["schema"]["properties"]["action"]["anyOf"]
    assert read["properties"]["title"]["enum"] == ["Tinted Windows (album)", "Tinted Windows (band)"]
    assert submit["properties"]["kind"] == {"const": "submit"} and "title" not in submit["properties"]
    cites = second["schema"]["properties"]["conclusion_updates"]["items"]["properties"]["citations"]
    assert cites["items"]["properties"]["title"]["enum"] == ["Act of Congress"]
    assert first["schema"]["properties"]["conclusion_updates"]["items"]["properties"]["citations"] == {"const": []}
    assert last["schema"]["properties"]["citations"]["items"]["properties"]["title"]["enum"] == ["Act of Congress"]


def test_constrained_engine_allows_only_submit_once_reads_are_spent():
    _, _, engine = run([turn("read", "Act of Congress"), turn("submit"), final("x")], budget=1, decoding="strict")
    action = engine.formats[1]["schema"]["properties"]["action"]
    assert action["properties"]["kind"] == {"const": "submit"} and "anyOf" not in action


def test_free_decoding_sends_no_schema():
    _, _, engine = run([turn("submit"), final("x")], decoding="free")
    assert engine.formats == [None, None]


def test_schema_decoding_sends_the_signatures_own_schema_and_nothing_about_the_state():
    _, _, engine = run([turn("read", "Act of Congress"), turn("submit"), final("x")], decoding="schema")
    first, second, last = (f["schema"] for f in engine.formats)
    assert first == second  # the same schema whatever was read: no enums of titles, no submit-only turns
    assert set(first["properties"]) == {"requirement_updates", "conclusion_updates", "action"}
    assert set(first["required"]) == {"requirement_updates", "conclusion_updates", "action"}
    text = json.dumps(first)
    assert "Act of Congress" not in text and "maxLength" not in text and "maxItems" not in text
    action = first["$defs"]["EIRAction"]["properties"]
    assert action["kind"]["enum"] == ["read", "submit"] and action["title"]["type"] == "string"
    assert set(last["properties"]) == {"answer", "citations"} and "Act of Congress" not in json.dumps(last)


def test_a_missing_list_field_is_an_invalid_update_discarded_in_the_pool_and_rejecting_under_reject():
    no_conclusions = {"requirement_updates": [REQ], "action": {"kind": "read", "title": "Act of Congress"}}
    pred, ledger, engine = run([no_conclusions, turn("submit"), final("x")])
    assert pred.episode.reads == 1 and pred.episode.turns[0].discarded_cause == "missing_field"
    assert pred.trajectory["requirements"] == [] and ledger.calls[0].unusable is None
    assert field(engine.prompts[1], "last_result").endswith("conclusion_updates: the field is missing.")
    pred, _, _ = run_rejecting([no_conclusions, turn("submit"), final("x")])
    assert pred.episode.reads == 0 and pred.episode.turns[0].rejection_cause == "missing_field"


def test_a_step_with_unreadable_list_updates_never_becomes_a_demo():
    import dspy
    from dspy.teleprompt.bootstrap_trace import FailedPrediction

    from eir_dspy.state import MalformedUpdates
    from eval.compile.optimizers import _failed

    bad = dspy.Prediction(requirement_updates=[], conclusion_updates=MalformedUpdates("wrong_type", "0", "x", [1]),
                          action=None)
    assert _failed(bad) and _failed(FailedPrediction(completion_text="x"))
    assert not _failed(dspy.Prediction(requirement_updates=[], conclusion_updates=[], action=None))
