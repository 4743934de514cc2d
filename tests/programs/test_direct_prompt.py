"""Direct's prompt is EIR's minus the two lists (the paper, B.1 and B.3): the question, the unread
titles (corpus: the search results) and the last result; no trajectory, no turn counter. Asserted on
the prompts the scripted LM receives, side by side with EIR's on the same actions."""

import re

import dspy
import pytest

from eir_dspy.lm import DecodingAdapter
from eval.runs.execute import run_question
from programs import EIR, Direct
from signatures import DirectSearchTurn, DirectTurn, EIRSearchTurn, EIRTurn
from tests.scripted import act, field, final, run_program, scripted_lm, turn
from tests.programs.test_corpus_programs import act as corpus_act
from tests.programs.test_corpus_programs import eir_turn
from tests.programs.test_corpus_programs import run as run_corpus
from tests.eir_dspy.test_rejection_causes import POOL_Q
from tests.programs.test_eir import POOL, Q

BAND, ALBUM, ACT = "Tinted Windows (band)", "Tinted Windows (album)", "Act of Congress"
LISTS = ("requirements", "conclusions")


def input_fields(prompt: str) -> list[str]:
    """The input fields a JSONAdapter prompt declares, in order."""
    block = prompt.split("Your input fields are:")[1].split("Your output fields are:")[0]
    return re.findall(r"(?m)^\d+\. `(\w+)`", block)


def described(signature) -> list[tuple[str, str]]:
    return [(name, f.json_schema_extra.get("desc", "")) for name, f in signature.input_fields.items()]


@pytest.mark.parametrize("direct, eir", [(DirectTurn, EIRTurn), (DirectSearchTurn, EIRSearchTurn)])
def test_direct_signature_inputs_are_eirs_minus_the_lists(direct, eir):
    assert described(direct) == [(n, d) for n, d in described(eir) if n not in LISTS]


def test_pool_prompt_has_no_lists_no_turn_line_and_only_unread_titles():
    replies = [act("read", BAND), act("read", ACT), act("submit", answer="Tulsa", citations=[(BAND, 1)])]
    pred, _, engine = run_program(Direct(budget=6), Q, POOL, replies)
    assert [input_fields(p) for p in engine.prompts] == [["question", "unread_titles", "last_result"]] * 3
    assert [field(p, "unread_titles").splitlines() for p in engine.prompts] == [
        [ALBUM, BAND, ACT], [ALBUM, ACT], [ALBUM]]  # a title once read is gone
    for p in engine.prompts:
        assert "requirement" not in p.lower() and "conclusion" not in p.lower()
        assert "Now turn" not in p and "must submit" not in p and "[[ ## trajectory ## ]]" not in p
    # Only the last result: the band's paragraph, read on turn 1, is not in turn 3's prompt ...
    assert field(engine.prompts[2], "last_result").endswith("[0] Act of Congress is a group.")
    assert "Their first show was in Tulsa." not in engine.prompts[2]
    # ... yet the submit may cite it (read in this episode), and that answer is the one scored.
    assert pred.answer == "Tulsa" and pred.citations == [(BAND, 1)] and not pred.episode.forced_end


def test_pool_prompt_shows_what_eirs_shows_after_the_same_actions():
    shared = [("read", BAND), ("read", "no such title"), ("read", ACT)]  # the second falls back to the album
    _, _, direct = run_program(Direct(budget=6), Q, POOL, [act(k, t) for k, t in shared] + [act("submit", answer="x")])
    _, _, eir = run_program(EIR(budget=6), Q, POOL, [turn(k, t) for k, t in shared] + [turn("submit"), final("x")])
    for d, e in zip(direct.prompts, eir.prompts[:4]):
        assert [field(d, n) for n in ("question", "unread_titles", "last_result")] == \
               [field(e, n) for n in ("question", "unread_titles", "last_result")]
    assert field(direct.prompts[3], "unread_titles") == "(all paragraphs have been read)"
    assert field(direct.prompts[2], "last_result").startswith('No unread title matches "no such title"')


def test_corpus_prompt_shows_what_eirs_shows_after_the_same_actions(tiny_corpus):
    shared = [dict(kind="search", query="busan port"), dict(kind="read", pid="99"), dict(kind="read", pid="12")]
    _, _, direct = run_corpus(Direct(), tiny_corpus, [corpus_act(**a) for a in shared] + [corpus_act("submit", answer="x")])
    _, _, eir = run_corpus(EIR(), tiny_corpus, [eir_turn(**a) for a in shared] + [eir_turn("submit"), final("x")])
    assert [input_fields(p) for p in direct.prompts] == [["question", "search_results", "last_result"]] * 4
    for d, e in zip(direct.prompts, eir.prompts[:4]):
        assert [field(d, n) for n in ("question", "search_results", "last_result")] == \
               [field(e, n) for n in ("question", "search_results", "last_result")]
        assert "Now turn" not in d and "last turn" not in d and "[[ ## recent_paragraphs ## ]]" not in d
    assert "was not returned by any search" in field(direct.prompts[2], "last_result")  # the rejected read
    assert "12 | Busan (read)" in field(direct.prompts[3], "search_results")


def test_strict_grammar_offers_only_unread_titles_to_read():
    _, _, engine = run_program(Direct(budget=6), Q, POOL, [act("read", BAND), act("submit", answer="x")], "strict")
    reads = [next(o for o in f["schema"]["properties"]["action"]["anyOf"] if o["properties"]["kind"] == {"const": "read"})
             for f in engine.formats]
    assert [r["properties"]["title"] for r in reads] == [{"enum": [ALBUM, BAND, ACT]}, {"enum": [ALBUM, ACT]}]


def test_direct_still_submits_and_is_scored_as_eval_run_records_it():
    lm = scripted_lm([act("read", ALBUM), act("read", BAND),
                      act("submit", answer="Tulsa", citations=[(BAND, 1), (ALBUM, 0)])])
    with dspy.context(adapter=DecodingAdapter("free")):
        record = run_question(Direct(budget=6), lm, POOL_Q)
    assert record["error"] is None and record["prediction"] == "Tulsa"
    assert record["em"] == 1.0 and record["support_f1"] == 1.0  # the album's sentence, read two turns back, counts
