import pytest
from pydantic import TypeAdapter, ValidationError

from eir_dspy.evidence import EvidenceStore
from eir_dspy.paragraphs import Paragraph
from eir_dspy.state import AgentLists, Citation, ConclusionUpdate, RequirementUpdate

ALPHA = Paragraph("Alpha", ("Alpha is a band.", " It formed in Tulsa."), 0)


def store_with_alpha():
    store = EvidenceStore()
    store.add_paragraph(ALPHA, turn=1)
    return store


def test_valid_updates_add_then_revise_by_id():
    lists, store = AgentLists(), store_with_alpha()
    assert lists.apply([RequirementUpdate(text="where formed")],
                       [ConclusionUpdate(claim="Alpha formed in Tulsa", citations=[Citation(title="Alpha", sentence=1)])],
                       store) == []
    assert lists.apply([RequirementUpdate(id="R1", text="where formed", status="satisfied")], [], store) == []
    assert lists.requirements["R1"].status == "satisfied"
    assert list(lists.requirements) == ["R1"]
    assert lists.conclusions["C1"].citations[0].sentence == 1


def test_revising_unknown_id_is_rejected():
    lists = AgentLists()
    problems = lists.apply([RequirementUpdate(id="R7", text="x")], [], EvidenceStore())
    assert [p.text for p in problems] == ["requirement id 'R7' does not exist"]
    assert lists.requirements == {}


def test_citing_unread_sentence_is_rejected():
    lists, store = AgentLists(), store_with_alpha()
    problems = lists.apply([], [ConclusionUpdate(claim="c", citations=[Citation(title="Alpha", sentence=2)])], store)
    assert [p.text for p in problems] == ["citation ('Alpha', 2) is not a sentence you have read"]
    problems = lists.apply([], [ConclusionUpdate(claim="c", citations=[Citation(title="Beta", sentence=0)])], store)
    assert "('Beta', 0)" in problems[0].text
    assert lists.conclusions == {}


def test_mixed_valid_and_invalid_updates_are_discarded_together():
    lists, store = AgentLists(), store_with_alpha()
    problems = lists.apply(
        [RequirementUpdate(text="a valid new requirement")],
        [ConclusionUpdate(claim="ok", citations=[Citation(title="Alpha", sentence=0)]),
         ConclusionUpdate(id="C9", claim="revises nothing")],
        store,
    )
    assert [p.text for p in problems] == ["conclusion id 'C9' does not exist"]
    assert lists.requirements == {} and lists.conclusions == {}


def test_each_problem_carries_the_rejection_cause_of_its_turn():
    from eir_dspy.rejection import INVALID_CITATION, UNKNOWN_LIST_ID, Rejection

    problems = AgentLists().check(
        [RequirementUpdate(id="R2", text="x")],
        [ConclusionUpdate(claim="c", citations=[Citation(title="Alpha", sentence=5)])], store_with_alpha())
    assert problems == [Rejection(UNKNOWN_LIST_ID, "requirement id 'R2' does not exist"),
                        Rejection(INVALID_CITATION, "citation ('Alpha', 5) is not a sentence you have read")]


@pytest.mark.parametrize("position", ["1", 1.0, True, "It formed in Tulsa."])
def test_a_sentence_position_must_be_written_as_an_integer(position):
    with pytest.raises(ValidationError, match="is not an integer"):
        TypeAdapter(list[ConclusionUpdate]).validate_python(
            [{"claim": "c", "citations": [{"title": "Alpha", "sentence": position}]}])
    update = TypeAdapter(ConclusionUpdate).validate_python(
        {"claim": "c", "citations": [{"title": "Alpha", "sentence": 1}]})
    assert update.citations == [Citation(title="Alpha", sentence=1)]
    # Elsewhere (a submit's or the final answer's citations) "1" is still read as 1.
    assert Citation.model_validate({"title": "Alpha", "sentence": "1"}).sentence == 1


def test_evidence_records_are_verbatim_and_rereading_adds_nothing():
    store = EvidenceStore()
    new = store.add_paragraph(ALPHA, turn=3)
    assert [(r.title, r.sentence_index, r.text, r.turn) for r in new] == [
        ("Alpha", 0, "Alpha is a band.", 3), ("Alpha", 1, " It formed in Tulsa.", 3)]
    assert store.add_paragraph(ALPHA, turn=4) == []
    assert len(store) == 2 and store.records[1].turn == 3
