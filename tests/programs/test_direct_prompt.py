"""Direct's prompt is EIR's minus the two lists (the paper, B.1 and B.3): the question, the unread
titles (corpus: the search results, plus the two latest paragraphs) and the last result; no
trajectory, no turn counter. The last result tells Direct its turns left where EIR's tells its reads
left. Asserted on the prompts the scripted LM receives, side by side with EIR's on the same actions."""

import re

import dspy
import pytest

from eir_dspy.paragraphs import Paragraph
from eval.runs.execute import run_question
from programs import EIR, Direct, RunContext
from signatures import (
    DecomposeProposal,
    DirectSearchTurn,
    DirectTurn,
    EIRSearchTurn,
    EIRTurn,
    RefineSearchStep,
    RefineStep,
    Reflect,
    ReflexionSearchTurn,
    ReflexionTurn,
    VerifySearchStep,
    VerifyStep,
    schemas,
)
from signatures.search_turns import PLAN_FIELDS
from tests.fixtures.corpus_turns import act as corpus_act
from tests.fixtures.corpus_turns import eir_turn
from tests.fixtures.corpus_turns import run as run_corpus
from tests.fixtures.pool import POOL, POOL_Q, Q
from tests.fixtures.prompts import input_fields
from tests.scripted import act, field, final, run_program, scripted_lm, turn

BAND, ALBUM, ACT = "Tinted Windows (band)", "Tinted Windows (album)", "Act of Congress"
LISTS = ("requirements", "conclusions")


def described(signature) -> list[tuple[str, str]]:
    return [(name, f.json_schema_extra.get("desc", "")) for name, f in signature.input_fields.items()]


def test_direct_signature_inputs_are_eirs_minus_the_lists():
    assert described(DirectTurn) == [(n, d) for n, d in described(EIRTurn) if n not in LISTS]
    # The corpus turn also shows the two paragraphs read most recently (B.3), before the last result.
    corpus = [(n, d) for n, d in described(EIRSearchTurn) if n not in LISTS]
    assert described(DirectSearchTurn) == corpus[:2] + [("recent_paragraphs", "the two paragraphs you read most recently")] \
        + corpus[2:]


BUDGET_NOTE = re.compile(r" \([^()]*left[^()]*\)")  # "(5 reads left)", "(5 turns left, counting the submit)"


def without_budget(text: str) -> str:
    return BUDGET_NOTE.sub("", text)


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
        assert [field(d, n) for n in ("question", "unread_titles")] == [field(e, n) for n in ("question", "unread_titles")]
        # The same result, but the budget each is scored under: Direct's turns, EIR's reads.
        assert without_budget(field(d, "last_result")) == without_budget(field(e, "last_result"))
    assert [BUDGET_NOTE.findall(field(p, "last_result")) for p in direct.prompts] == [
        [" (6 turns left, counting the submit)"], [" (5 turns left, counting the submit)"],
        [" (4 turns left, counting the submit)"], [" (3 turns left, counting the submit)"]]
    assert [BUDGET_NOTE.findall(field(p, "last_result")) for p in eir.prompts[:4]] == [
        [], [" (5 reads left)"], [" (4 reads left)"], [" (3 reads left)"]]
    assert field(direct.prompts[3], "unread_titles") == "(all paragraphs have been read)"
    assert field(direct.prompts[2], "last_result").startswith('No unread title matches "no such title"')


def test_corpus_prompt_shows_what_eirs_shows_after_the_same_actions(tiny_corpus):
    shared = [dict(kind="search", query="busan port"), dict(kind="read", pid="99"), dict(kind="read", pid="12")]
    _, _, direct = run_corpus(Direct(), tiny_corpus, [corpus_act(**a) for a in shared] + [corpus_act("submit", answer="x")])
    _, _, eir = run_corpus(EIR(), tiny_corpus, [eir_turn(**a) for a in shared] + [eir_turn("submit"), final("x")])
    assert [input_fields(p) for p in direct.prompts] == [["question", "search_results", "recent_paragraphs",
                                                          "last_result"]] * 4
    for d, e in zip(direct.prompts, eir.prompts[:4]):
        assert [field(d, n) for n in ("question", "search_results", "last_result")] == \
               [field(e, n) for n in ("question", "search_results", "last_result")]
        assert "Now turn" not in d and "last turn" not in d and "[[ ## trajectory ## ]]" not in d
    assert "was not returned by any search" in field(direct.prompts[2], "last_result")  # the rejected read
    assert "12 | Busan (read)" in field(direct.prompts[3], "search_results")


def test_strict_grammar_offers_only_unread_titles_to_read():
    _, _, engine = run_program(Direct(budget=6, context=RunContext("strict")), Q, POOL,
                               [act("read", BAND), act("submit", answer="x")])
    reads = [next(o for o in f["schema"]["properties"]["action"]["anyOf"] if o["properties"]["kind"] == {"const": "read"})
             for f in engine.formats]
    assert [r["properties"]["title"] for r in reads] == [{"enum": [ALBUM, BAND, ACT]}, {"enum": [ALBUM, ACT]}]


def test_direct_still_submits_and_is_scored_as_eval_run_records_it():
    lm = scripted_lm([act("read", ALBUM), act("read", BAND),
                      act("submit", answer="Tulsa", citations=[(BAND, 1), (ALBUM, 0)])])
    record = run_question(Direct(budget=6, context=RunContext("free")), lm, POOL_Q)
    assert record["error"] is None and record["prediction"] == "Tulsa"
    assert record["em"] == 1.0 and record["support_f1"] == 1.0  # the album's sentence, read two turns back, counts


def test_eirs_results_still_count_its_reads_left():
    # EIR has H reads and one more decision (no turn limit): its texts are unchanged.
    letters = tuple(Paragraph(t, (f"{t} sentence.",), i) for i, t in enumerate("ABCDEFGH"))
    replies = [turn("read", t) for t in "ABCDEF"] + [turn("submit"), final("x")]
    _, _, engine = run_program(EIR(budget=6), Q, letters, replies)
    results = [field(p, "last_result") for p in engine.prompts[:7]]
    assert results[0] == "(nothing yet: choose a paragraph to read)"
    reads = [f'Read "{t}" ({n} reads left)' for t, n in zip("ABCDE", range(5, 0, -1))]
    # B.1: the one decision after the H reads
    assert [r.split(". Cite")[0] for r in results[1:]] == reads + ['Read "F" (0 reads left: your next action must be submit)']
    assert not any("turn" in r for r in results)


# The strict grammars are built apart from the signatures (signatures/schemas.py): their top-level
# fields must be the signature's output fields, in the signature's order.
READ = [("A", 2)]
GRAMMARS = [
    (DirectTurn, lambda: schemas.direct_turn_schema(["A", "B"], READ, True)),
    (ReflexionTurn, lambda: schemas.direct_turn_schema(["A", "B"], READ, True)),
    (RefineStep, lambda: schemas.direct_turn_schema(["A", "B"], READ, True)),
    (DirectSearchTurn, lambda: schemas.direct_search_turn_schema(["1"], READ, True, False)),
    (ReflexionSearchTurn, lambda: schemas.direct_search_turn_schema(["1"], READ, True, True)),
    (RefineSearchStep, lambda: schemas.direct_search_turn_schema(["1"], READ, True, False, plan=False)),
    (DecomposeProposal, schemas.decompose_schema),
    (VerifyStep, schemas.verify_schema),
    (VerifySearchStep, schemas.verify_schema),
    (Reflect, schemas.reflect_schema),
]


@pytest.mark.parametrize("signature, build", GRAMMARS, ids=[s.__name__ for s, _ in GRAMMARS])
def test_each_strict_grammar_has_its_signatures_output_fields_in_order(signature, build):
    schema = build()
    assert list(schema["properties"]) == list(signature.output_fields) == schema["required"]


def test_directs_corpus_turn_is_decoded_with_its_plan_fields(tiny_corpus):
    from eir_dspy.accounting import Ledger, recording

    lm = scripted_lm([corpus_act("search", query="busan"), corpus_act("submit", answer="Busan")])
    with dspy.context(lm=lm), recording(Ledger()):
        Direct(context=RunContext("strict"))(question=Q, corpus=tiny_corpus)
    schemas_sent = [f["json_schema"]["schema"] if "json_schema" in f else f["schema"] for f in lm.engine.formats]
    assert [list(s["properties"]) for s in schemas_sent] == [["thought", *PLAN_FIELDS, "action"]] * 2
