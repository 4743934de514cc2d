"""What the records hold for the analyses: a machine-readable cause for every rejected turn, the
LM calls made when each turn's action ran, and the evidence sentences the answer came from.

The loop's rules with hand-written policies (no LM), then the methods on a scripted LM through
eval.runs.execute.run_question, as eval.run records them."""

import pytest

from eir_dspy import rejection
from eir_dspy.corpus_environment import READS, TURNS, CorpusEnvironment
from eir_dspy.environment import PoolEnvironment
from eir_dspy.episode import Action, Proposal, run_episode
from eval.data.schema import Question
from eval.runs.execute import run_question
from programs import EIR, Direct, Reflexion, RunContext
from tests.fixtures.corpus_turns import act as corpus_act
from tests.fixtures.corpus_turns import eir_turn
from tests.fixtures.policies import LETTERS, Scripted
from tests.fixtures.pool import POOL_Q
from tests.scripted import act, field, final, scripted_lm, turn

BAND, ALBUM, ACT = "Tinted Windows (band)", "Tinted Windows (album)", "Act of Congress"
NOT_JSON = "I think the answer is Tulsa, so I will submit it."  # what a model writes instead of the JSON object

CORPUS_Q = Question("corpus", "Which city hosts a film festival and is a port?", "Busan", (), "bridge", (),
                    (("Busan", 0), ("Busan", 1)), "hotpotqa")


def causes(turns) -> list:
    """Each turn's cause (None for an accepted turn), from TurnRecords or their recorded dicts."""
    return [t["rejection_cause"] if isinstance(t, dict) else t.rejection_cause for t in turns]


def record_of(program, replies, q=POOL_Q, corpus=None) -> tuple[dict, object]:
    lm = scripted_lm(replies)
    record = run_question(program, lm, q, corpus)
    assert record["error"] is None, record["error_trace"]
    return record, lm.engine


# --- the loop's rules, hand-written policies ---------------------------------------------------------


def test_pool_rejections_carry_their_cause_and_accepted_turns_none():
    policy = Scripted([
        Proposal(Action("search", query="tinted windows")),  # the pool has no search
        Proposal(None, error="it is not a JSON object", cause="not_json"),  # what lm_call's UnusableOutput gives
        Proposal(None),  # parsed, but no action
        Proposal(Action("read", "A")), Proposal(Action("read", "B")),
        Proposal(Action("read", "C")),  # the budget of 2 is spent
        Proposal(Action("submit", answer="x")),
    ])
    ep = run_episode("q", PoolEnvironment(LETTERS), policy, budget=2, max_turns=7)
    assert causes(ep.turns) == [rejection.SEARCH_IN_POOL, "not_json", rejection.NO_ACTION, None, None,
                                rejection.NO_READS_LEFT, None]
    assert ep.turns[0].feedback.startswith("there is no search in the pool setting")
    assert "the read budget of 2 is used up" in ep.turns[5].feedback
    assert ep.reads == 2 and ep.submitted.answer == "x"


def test_reading_when_every_paragraph_is_read_is_all_read_and_a_spent_budget_comes_first():
    two = LETTERS[:2]
    ep = run_episode("q", PoolEnvironment(two),
                     Scripted([Proposal(Action("read", t)) for t in "ABA"] + [Proposal(Action("submit", answer="x"))]),
                     budget=6)
    assert causes(ep.turns) == [None, None, rejection.ALL_READ, None]
    assert "every paragraph has been read" in ep.turns[2].feedback and ep.reads == 2
    # Both apply (no read left, nothing unread): the budget rule is checked first.
    ep = run_episode("q", PoolEnvironment(two), Scripted([Proposal(Action("read", t)) for t in "ABA"]), budget=2)
    assert causes(ep.turns) == [None, None, rejection.NO_READS_LEFT]


def test_corpus_rejections_unknown_id_repeated_and_empty_search_and_the_last_turn(tiny_corpus):
    words = ["seoul", "capital", "korea", "film", "zebra", "crossing", "runners"]  # indexed, pairwise distinct
    proposals = [Proposal(Action("read", paragraph_id="12")),  # no search has returned 12 yet
                 Proposal(Action("search", query="busan")),
                 Proposal(Action("search", query="BUSAN")),  # the same indexed terms
                 Proposal(Action("search", query="the of and")),  # only stopwords
                 *[Proposal(Action("search", query=w)) for w in words],
                 Proposal(Action("read", paragraph_id="12"))]  # turn 12: a valid read, but only a submit may run
    assert len(proposals) == TURNS
    env = CorpusEnvironment(tiny_corpus, futile_searches="reject")  # the paper's default runs both searches
    ep = run_episode("q", env, Scripted(proposals), budget=READS, max_turns=TURNS)
    assert causes(ep.turns) == [rejection.UNKNOWN_ID, None, rejection.REPEATED_SEARCH, rejection.EMPTY_SEARCH,
                                *[None] * len(words), rejection.SUBMIT_ONLY_TURN]
    assert ep.forced_end and ep.reads == 2 and ep.evidence.titles == ()  # each rejected read cost a read
    assert "is the last turn and accepts only a submission" in ep.turns[-1].feedback


def test_corpus_read_after_the_budget_is_no_reads_left(tiny_corpus):
    proposals = [Proposal(Action("search", query="zebra")),
                 *[Proposal(Action("read", paragraph_id=i)) for i in ["4", "9"] * 4][:READS + 1],
                 Proposal(Action("submit", answer="y"))]
    ep = run_episode("q", CorpusEnvironment(tiny_corpus), Scripted(proposals), budget=READS, max_turns=TURNS)
    assert causes(ep.turns) == [None] * (READS + 1) + [rejection.NO_READS_LEFT, None]


def test_without_a_ledger_calls_made_is_zero():
    ep = run_episode("q", PoolEnvironment(LETTERS), Scripted([Proposal(Action("read", "A")), Proposal(None)]),
                     budget=1)
    assert [t.calls_made for t in ep.turns] == [0, 0]


# --- the methods on a scripted LM, as eval.run records them --------------------------------------------


def test_direct_records_not_json_invalid_citation_and_empty_answer():
    record, engine = record_of(Direct(budget=6), [
        NOT_JSON,
        act("submit", answer="Tulsa", citations=[(BAND, 1)]),  # cites a sentence not read yet
        act("submit", answer="   "),  # empty once stripped
        act("read", BAND),
        act("submit", answer="Tulsa", citations=[(BAND, 1)]),
    ])
    turns = record["trajectory"]["turns"]
    assert causes(turns) == ["not_json", rejection.INVALID_CITATION, rejection.EMPTY_ANSWER, None, None]
    assert record["rejections_by_cause"] == {"not_json": 1, "invalid_citation": 1, "empty_answer": 1}
    assert record["rejected_actions"] == 3 and record["prediction"] == "Tulsa" and record["em"] == 1.0
    assert [t["calls_made"] for t in turns] == [1, 2, 3, 4, 5] == list(range(1, len(engine.prompts) + 1))
    assert record["evidence"] == [[BAND, 0, "Tinted Windows is a supergroup."],
                                  [BAND, 1, " Their first show was in Tulsa."]]


def test_eir_records_not_json_all_read_and_calls_made_per_turn_then_the_final_call():
    # budget 5 > the pool's 3 paragraphs: a fourth read finds nothing unread (EIR: H reads + 1 turns).
    record, engine = record_of(EIR(budget=5), [
        NOT_JSON, turn("read", BAND), turn("read", ACT), turn("read", ALBUM),
        turn("read", BAND),  # every paragraph read
        turn("submit", answer="Tulsa"),
        final("Tulsa", [(BAND, 1)]),
    ])
    turns = record["trajectory"]["turns"]
    assert causes(turns) == ["not_json", None, None, None, rejection.ALL_READ, None]
    assert record["rejections_by_cause"] == {"not_json": 1, "all_read": 1}
    assert [t["calls_made"] for t in turns] == [1, 2, 3, 4, 5, 6]  # one call per turn
    assert record["calls"] == len(engine.prompts) == 7 and record["calls_by_role"] == {"action": 6, "final": 1}
    # The evidence the final call answered from, in read order (not pool order), every sentence of each paragraph.
    assert record["evidence"] == [[BAND, 0, "Tinted Windows is a supergroup."],
                                  [BAND, 1, " Their first show was in Tulsa."],
                                  [ACT, 0, "Act of Congress is a group."],
                                  [ALBUM, 0, "Tinted Windows is the debut album of Tinted Windows."]]
    assert record["evidence_titles"] == [BAND, ACT, ALBUM]


def test_eir_read_after_the_budget_is_no_reads_left():
    record, _ = record_of(EIR(budget=2), [turn("read", ALBUM), turn("read", BAND), turn("read", ACT),
                                          final("Tulsa", [(BAND, 1)])])
    assert causes(record["trajectory"]["turns"]) == [None, None, rejection.NO_READS_LEFT]
    assert record["rejections_by_cause"] == {"no_reads_left": 1} and record["forced_end"] is True
    assert [t["calls_made"] for t in record["trajectory"]["turns"]] == [1, 2, 3]
    assert [e[0] for e in record["evidence"]] == [ALBUM, BAND, BAND]  # read order; Act of Congress never read


def test_eir_that_reads_nothing_records_empty_evidence():
    record, _ = record_of(EIR(budget=2), [turn("submit", answer="x"), final("x")])
    assert record["evidence"] == [] and record["rejections_by_cause"] == {}


def test_direct_in_the_corpus_records_unknown_id_repeated_and_empty_search(tiny_corpus):
    # The rejecting rule is a named option of the run context (the paper's default runs both searches:
    # test_corpus_environment.py); the program's environments follow it.
    record, _ = record_of(Direct(context=RunContext(futile_searches="reject")), [
        corpus_act("read", pid="12"),  # not found by a search yet
        corpus_act("search", query="busan"),
        corpus_act("search", query="Busan"),  # repeated
        corpus_act("search", query="the of and"),  # no indexed word
        corpus_act("read", pid="12"),
        corpus_act("submit", answer="Busan", citations=[("Busan", 1)]),
    ], q=CORPUS_Q, corpus=tiny_corpus)
    turns = record["trajectory"]["turns"]
    assert causes(turns) == [rejection.UNKNOWN_ID, None, rejection.REPEATED_SEARCH, rejection.EMPTY_SEARCH, None, None]
    assert record["rejections_by_cause"] == {"unknown_id": 1, "repeated_search": 1, "empty_search": 1}
    assert [t["calls_made"] for t in turns] == [1, 2, 3, 4, 5, 6]
    assert record["evidence"] == [["Busan", 0, "Busan is a port city."], ["Busan", 1, " It hosts a film festival."]]


def test_eir_in_the_corpus_records_a_last_turn_that_is_not_a_submit(tiny_corpus):
    words = ["seoul", "capital", "korea", "film", "zebra", "crossing", "runners", "port", "show", "city"]
    replies = [eir_turn("search", query="busan"), eir_turn("read", pid="12")]
    replies += [eir_turn("search", query=w) for w in words] + [final("Busan", [("Busan", 1)])]
    record, _ = record_of(EIR(), replies, q=CORPUS_Q, corpus=tiny_corpus)
    turns = record["trajectory"]["turns"]
    assert len(turns) == TURNS and causes(turns) == [None] * (TURNS - 1) + [rejection.SUBMIT_ONLY_TURN]
    assert record["rejections_by_cause"] == {"submit_only_turn": 1}
    assert [t["calls_made"] for t in turns] == list(range(1, TURNS + 1)) and record["calls"] == TURNS + 1
    assert record["evidence"] == [["Busan", 0, "Busan is a port city."], ["Busan", 1, " It hosts a film festival."]]


def test_reflexion_counts_calls_made_over_the_question_and_causes_over_its_trials():
    """Trial 1: read, a bad citation, submit (wrong); a reflection; trial 2: read, submit (right)."""
    state = {"trial": 0, "calls": 0}

    def script(prompt):
        state["calls"] += 1
        if "`reflection`" in prompt:
            return {"reflection": "cite what you read"}
        if field(prompt, "last_result").startswith("(nothing yet"):  # a trial's first turn
            state["trial"] += 1
            return act("read", BAND)
        if state["trial"] == 1 and "cites sentences you have not read" not in prompt:
            return act("submit", answer="Boston", citations=[(ALBUM, 0)])  # not read in this trial
        return act("submit", answer="Boston" if state["trial"] == 1 else "Tulsa", citations=[(BAND, 1)])

    record, engine = record_of(Reflexion(budget=3, trials=2), script)
    trials = record["trajectory"]["trials"]
    assert [causes(t["turns"]) for t in trials] == [[None, rejection.INVALID_CITATION, None], [None, None]]
    # The question's calls so far, not the trial's: trial 2 starts after 3 action calls and a reflection.
    assert [[t["calls_made"] for t in tr["turns"]] for tr in trials] == [[1, 2, 3], [5, 6]]
    assert record["rejections_by_cause"] == {"invalid_citation": 1} and record["calls"] == 6 == len(engine.prompts)
    first = record["variants"]["reflexion_first"]
    assert first["rejections_by_cause"] == {"invalid_citation": 1} and first["prediction"] == "Boston"
    # Each record's evidence is its own trial's (a fresh pool per trial).
    assert first["evidence"] == record["evidence"] == [[BAND, 0, "Tinted Windows is a supergroup."],
                                                       [BAND, 1, " Their first show was in Tulsa."]]


def test_a_failed_question_records_no_evidence():
    def broken(prompt):
        raise RuntimeError("provider exploded")

    lm = scripted_lm(broken)
    record = run_question(EIR(budget=2), lm, POOL_Q)
    assert record["error"] and record["evidence"] is None and record["rejections_by_cause"] == {}


@pytest.mark.parametrize("cause", ["not_json", "missing_field", "wrong_type", "unusable"])
def test_an_unusable_output_keeps_the_accounting_cause(cause):
    ep = run_episode("q", PoolEnvironment(LETTERS), Scripted([Proposal(None, error="why", cause=cause)] * 2), budget=1)
    assert causes(ep.turns) == [cause, cause] and ep.turns[0].feedback == "why"


# --- EIR's turn-validity rule: invalid list updates reject the turn under `reject` (the corpus ------
# --- default), and are discarded with the action run under `discard` (the pool default) -----------


def test_eir_list_rejections_are_recorded_and_fall_into_table22s_columns():
    from eval.analyze.rejections import by_category

    def concl(title, sentence, cid=None):
        return {"id": cid, "claim": "c", "status": "supported", "citations": [{"title": title, "sentence": sentence}]}

    record, _ = record_of(EIR(budget=3, invalid_updates="reject"), [
        turn("read", ALBUM, concls=[concl(BAND, 1)]),  # not read yet
        turn("read", BAND),
        turn("read", ACT, concls=[concl(BAND, "1")]),  # read, but the position is a string
        turn("read", ACT, concls=[concl(BAND, 1, cid="C4")]),  # no conclusion C4
        final("Tulsa", [(BAND, 1)]),
    ])
    turns = record["trajectory"]["turns"]
    assert causes(turns) == [rejection.INVALID_CITATION, None, "wrong_type", rejection.UNKNOWN_LIST_ID]
    assert [t["read_title"] for t in turns] == [None, BAND, None, None] and record["forced_end"]
    actions, counts, other = by_category([record])
    assert (actions, dict(counts), dict(other)) == (
        4, {"invalid citation": 1, "missing field or wrong type": 1, "unknown or unfound id": 1}, {})


def test_pool_eir_discards_invalid_list_updates_and_records_why():
    def concl(title, sentence, cid=None):
        return {"id": cid, "claim": "c", "status": "supported", "citations": [{"title": title, "sentence": sentence}]}

    record, _ = record_of(EIR(budget=3), [
        turn("read", ALBUM, concls=[concl(BAND, 1)]),  # not read yet
        turn("read", BAND),
        turn("read", ACT, concls=[concl(BAND, "1")]),  # read, but the position is a string
        turn("submit", concls=[concl(BAND, 1, cid="C4")]),  # no conclusion C4
        final("Tulsa", [(BAND, 1)]),
    ])
    turns = record["trajectory"]["turns"]
    assert causes(turns) == [None] * 4 and not record["forced_end"]
    assert [t["discarded_cause"] for t in turns] == [rejection.INVALID_CITATION, None, "wrong_type",
                                                     rejection.UNKNOWN_LIST_ID]
    assert [t["read_title"] for t in turns] == [ALBUM, BAND, ACT, None]


def test_corpus_eir_rejects_a_read_whose_list_updates_cite_an_unread_sentence(tiny_corpus):
    cites_busan = {"id": None, "claim": "Busan hosts a festival", "status": "supported",
                   "citations": [{"title": "Busan", "sentence": 1}]}
    record, engine = record_of(EIR(), [
        eir_turn("search", query="busan"),
        eir_turn("read", pid="12", concls=[cites_busan]),  # Busan is not read before this turn
        eir_turn("read", pid="12", concls=[cites_busan]),  # still not: citations are checked before the turn's read
        eir_turn("submit", answer="Busan"),
        final("Busan", [("Busan", 1)]),
    ], q=CORPUS_Q, corpus=tiny_corpus)
    turns = record["trajectory"]["turns"]
    assert causes(turns) == [None, rejection.INVALID_CITATION, rejection.INVALID_CITATION, None]
    assert record["reads"] == 0 and record["evidence"] == []  # neither read ran, and no read attempt was spent
    assert field(engine.prompts[2], "last_result") == (
        "Turn 2 was rejected: your list updates are invalid, so nothing of this turn ran (its action included): "
        "citation ('Busan', 1) is not a sentence you have read")


def test_an_invalid_action_is_rejected_as_such_before_the_rest_of_its_output(tiny_corpus):
    lists = rejection.Rejection(rejection.INVALID_CITATION, "bad lists")
    ep = run_episode("q", CorpusEnvironment(tiny_corpus), Scripted([
        Proposal(Action("read", paragraph_id="12"), invalid=lists),  # unfound id: the read rule decides
        Proposal(Action("search", query="busan")),
        Proposal(Action("read", paragraph_id="12"), invalid=lists),  # a valid read: the lists reject it
        Proposal(Action("submit", answer="x")),
    ]), budget=READS, max_turns=4)
    assert causes(ep.turns) == [rejection.UNKNOWN_ID, None, rejection.INVALID_CITATION, None]
    assert ep.reads == 1 and ep.evidence.titles == ()  # only the invalid read cost a read attempt
    assert ep.turns[2].feedback == "bad lists"
