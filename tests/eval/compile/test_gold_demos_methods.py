"""Gold demonstrations for the baselines (eval/compile/gold_scripts.py): Direct, Full Pool, Agentic
SSR and Reflexion, each recorded from its real program with no model call, and the demonstration
questions an equal budget gives every method."""

import dataclasses
import json
from pathlib import Path

import dspy
import pytest

from eir_dspy.accounting import Ledger, recording
from eir_dspy.evidence import EvidenceStore
from eir_dspy.lm import DecodingAdapter
from eir_dspy.paragraphs import Paragraph
from eval.compile.gold_demos import FEW_DISTRACTORS, TOO_MANY_READS, gold_demos
from eval.compile.gold_scripts import GOLD_DEMO_PARAMS, RECIPES
from eval.compile.optimizers import demo_questions
from eval.data.loaders import load_file
from programs.direct import Direct
from programs.reflexion import render_reflections
from programs.registry import METHODS
from signatures import DirectTurn
from tests.scripted import field, run_program

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BRIDGE, COMPARISON = load_file(FIXTURES / "hotpot_original.json", "hotpotqa")  # Lake Ogo -> Mordia -> Varn
# Six more distractors: Reflexion's failed trial reads a distractor on each of its H = 6 turns.
WIDE = dataclasses.replace(BRIDGE, id="wide", paragraphs=BRIDGE.paragraphs + tuple(
    Paragraph(f"Distractor {i}", (f"Distractor {i} is unrelated.",), 3 + i) for i in range(6)))
FACTS = [("Lake Ogo", 0), ("Mordia", 1)]


def cited(action) -> list[tuple[str, int]]:
    return [(c.title, c.sentence) for c in action.citations]


def test_direct_reads_the_gold_paragraphs_in_fact_order_then_submits_the_answer_citing_the_gold_facts():
    demos = gold_demos([BRIDGE], method="direct")
    assert set(demos) == {"turn"} and demos.questions == 1
    turns = demos["turn"]
    assert [(t.action.kind, t.action.title) for t in turns] == [("read", "Lake Ogo"), ("read", "Mordia"), ("submit", "")]
    assert turns[2].action.answer == "Varn" and cited(turns[2].action) == FACTS
    assert turns[0].thought == "I need what Lake Ogo says."
    assert turns[1].thought == "Lake Ogo says: Lake Ogo is a lake in Mordia. I still need what Mordia says."
    assert turns[2].thought == "Mordia says: Its capital is Varn. With what I have read, the answer is Varn."
    # Direct's own inputs: the turns left ride on the last result; the submit's turn sees only Mordia.
    assert turns[0].last_result.endswith("(6 turns left, counting the submit)")
    assert turns[2].last_result.startswith('Read "Mordia" (4 turns left, counting the submit).')
    assert "Lake Ogo is a lake" not in turns[2].last_result
    assert all(set(t.inputs().keys()) == set(DirectTurn.input_fields) for t in turns)


def test_direct_demos_are_the_prompts_a_scripted_model_is_shown_for_the_same_outputs():
    turns = gold_demos([BRIDGE], method="direct")["turn"]
    adapter = DecodingAdapter("free")
    replies = [json.loads(adapter.format_assistant_message_content(DirectTurn, {k: t[k] for k in DirectTurn.output_fields}))
               for t in turns]
    result, _, engine = run_program(Direct(), BRIDGE.question, BRIDGE.paragraphs, replies)
    assert result.answer == "Varn" and len(engine.prompts) == 3
    for prompt, demo in zip(engine.prompts, turns):
        for name, value in demo.inputs().items():
            assert field(prompt, name) == value.strip(), name


def test_direct_needs_a_turn_for_each_gold_paragraph_and_one_for_the_submit():
    assert dict(gold_demos([BRIDGE], budget=2, method="direct").skipped) == {TOO_MANY_READS: 1}
    assert gold_demos([BRIDGE], budget=3, method="direct").questions == 1
    assert gold_demos([BRIDGE], budget=2, method="eir").questions == 1  # EIR: H reads, then the submit


def test_full_pool_answers_from_the_whole_pool_citing_the_gold_facts():
    demos = gold_demos([BRIDGE], method="full_pool")
    assert set(demos) == {"answer.predict"}
    (final,) = demos["answer.predict"]
    pool = EvidenceStore()
    for p in BRIDGE.paragraphs:
        pool.add_paragraph(p, 0)
    assert final.evidence == pool.render() and "Tessel River" in final.evidence
    assert final.answer == "Varn" and cited(final) == FACTS


def test_ssr_decomposes_each_gold_proposal_and_its_verifiers_accept_every_step_once_per_turn():
    demos = gold_demos([BRIDGE], method="ssr")
    assert {k: len(v) for k, v in demos.items()} == {"turn": 3, "decompose": 3, "verify": 9}  # no refine demo
    decomposed = demos["decompose"]
    assert [d.facts for d in decomposed] == ["Nothing has been read yet.", "Lake Ogo is a lake in Mordia.",
                                             "Lake Ogo is a lake in Mordia. Its capital is Varn."]
    assert decomposed[0].action == "read 'Lake Ogo'" and decomposed[2].action.startswith("submit 'Varn' citing")
    assert decomposed[1].justification == "The question needs what Mordia says, and it has not been read."
    assert decomposed[1].proposal.endswith("Action: read 'Mordia'")
    verify = demos["verify"]
    assert [v.step for v in verify] == ["facts", "justification", "action"] * 3
    assert {(v.verdict, v.correction, v.confidence) for v in verify} == {("accept", "", 1.0)}
    assert [t.action.kind for t in demos["turn"]] == ["read", "read", "submit"]


def test_ssr_gold_turns_are_directs():
    ssr, direct = gold_demos([BRIDGE], method="ssr")["turn"], gold_demos([BRIDGE], method="direct")["turn"]
    assert [d.toDict() for d in ssr] == [d.toDict() for d in direct]


def test_reflexion_first_trial_is_directs_with_no_reflections_and_its_reflection_comes_from_a_failed_trial():
    demos = gold_demos([WIDE], method="reflexion")
    assert {k: len(v) for k, v in demos.items()} == {"turn": 3, "reflect": 1}
    turns = demos["turn"]
    assert {t.reflections for t in turns} == {render_reflections([])}
    assert [t.action.title for t in turns[:2]] == ["Lake Ogo", "Mordia"] and turns[2].action.answer == "Varn"
    (reflect,) = demos["reflect"]
    assert reflect.trajectory.startswith("Turn 1\nThought: Tessel River may say what the question needs.")
    assert "Lake Ogo is a lake" not in reflect.trajectory  # the failed trial read distractors only
    assert reflect.reflection.startswith('I read "Tessel River", "Distractor 0", "Distractor 1", "Distractor 2" and '
                                         '"Distractor 3" but not "Lake Ogo" and "Mordia"')
    assert "submit the answer citing their sentences before the last turn" in reflect.reflection


def test_reflexion_needs_a_distractor_for_every_turn_of_its_failed_trial():
    assert dict(gold_demos([BRIDGE], method="reflexion").skipped) == {FEW_DISTRACTORS: 1}


def test_one_demonstration_budget_gives_every_method_the_same_questions():
    first, second = (dataclasses.replace(WIDE, id=f"w{i}") for i in (1, 2))
    train = [BRIDGE, first, COMPARISON, second]  # BRIDGE and COMPARISON have too few distractors for Reflexion
    chosen, skipped = demo_questions(train, budget=6, k=2)
    assert [q.id for q in chosen] == ["w1", "w2"] and skipped == 2
    for method in RECIPES:
        demos = gold_demos(chosen, method=method)
        assert demos.questions == 2, method
        questions = {d.question for items in demos.values() for d in items}
        assert questions == {WIDE.question}, method
    with pytest.raises(ValueError, match="only 2 of the 4 training questions give a gold episode for every method"):
        demo_questions(train, budget=6, k=3)


@pytest.mark.parametrize("method", sorted(RECIPES))
def test_every_methods_demos_are_made_without_a_model_and_keyed_by_its_predictors(method, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was called")

    monkeypatch.setattr(dspy.BaseLM, "__call__", refuse)
    monkeypatch.setattr(dspy.BaseLM, "forward", refuse)
    ledger = Ledger()
    with recording(ledger):
        demos = gold_demos([WIDE], method=method)
    assert demos.questions == 1 and ledger.calls == []
    assert set(demos) <= set(dict(METHODS[method].build(6).named_predictors()))
    assert set(GOLD_DEMO_PARAMS[method]) >= {"gold_read_order"}


def test_oracle_stopped_reflexion_compiles_with_gold_demos_only(tmp_path):
    from eval.compile.__main__ import main

    with pytest.raises(SystemExit, match="compile it with --optimizer none --demos gold"):
        main(["--method", "reflexion", "--optimizer", "bootstrap", "--train", str(tmp_path / "a.jsonl"),
              "--dev", str(tmp_path / "b.jsonl")])
