"""Reflexion: oracle stop, first-trial numbers, what carries over between trials, no leaked reference."""

import dspy
import pytest

from eir_dspy.accounting import Ledger, recording
from eval.data.schema import Question
from eval.runs.execute import run_question
from programs import Direct, Reflexion
from tests.fixtures.pool import POOL, Q
from tests.fixtures.prompts import input_fields
from tests.scripted import act, field, run_program, scripted_lm

BAND = "Tinted Windows (band)"
SOURCE = "Their first show was in Tulsa."


class Script:
    """Trial k submits answers[k-1] after reading the band page; reflections are numbered."""

    def __init__(self, answers):
        self.answers, self.trial, self.reflections = list(answers), 0, 0

    def __call__(self, prompt):
        if is_reflection(prompt):
            self.reflections += 1
            return {"reflection": f"QQLESSON{self.reflections} read the band page first"}
        if is_trial_start(prompt):
            self.trial += 1
            return act("read", BAND)
        return act("submit", answer=self.answers[self.trial - 1])


def is_reflection(prompt):
    return "`reflection`" in prompt  # the Reflect signature's output field


def is_trial_start(prompt):
    return field(prompt, "last_result").startswith("(nothing yet")  # the opening: a trial's first turn


def question(answer="Tulsa"):
    return Question("q1", Q, answer, (), "bridge", POOL, ((BAND, 1),), "hotpotqa")


def run(script, q, trials=5):
    lm = scripted_lm(script)
    with dspy.context(adapter=dspy.JSONAdapter()):
        record = run_question(Reflexion(budget=3, trials=trials), lm, q)
    return record, lm.engine


def test_oracle_stops_at_the_first_matching_trial_and_counts_calls_up_to_it():
    record, _ = run(Script(["Boston", "Tulsa", "never"]), question())
    assert record["prediction"] == "Tulsa" and record["em"] == 1.0 and record["error"] is None
    assert record["trajectory"]["stopped_at"] == 2
    assert record["trajectory"]["trials"][0]["reflection"] == "QQLESSON1 read the band page first"
    assert record["calls_by_role"] == {"action": 4, "reflect": 1}  # 2 turns x 2 trials + 1 reflection
    first = record["variants"]["reflexion_first"]
    assert first["prediction"] == "Boston" and first["em"] == 0.0
    assert first["calls"] == 2 and first["calls_by_role"] == {"action": 2} and first["turns"] == 2
    assert record["turns"] == 4 and record["reads"] == 2


def test_without_a_match_it_returns_the_last_trial_and_never_reflects_after_it():
    record, _ = run(Script(["a", "b", "c"]), question(), trials=3)
    assert record["prediction"] == "c" and record["trajectory"]["stopped_at"] == 3
    assert record["calls_by_role"] == {"action": 6, "reflect": 2}


def test_reflections_carry_over_and_source_text_does_not():
    _, engine = run(Script(["a", "b", "Tulsa"]), question())
    trial_starts = [p for p in engine.prompts if not is_reflection(p) and is_trial_start(p)]
    assert len(trial_starts) == 3
    assert field(trial_starts[0], "reflections").startswith("(none")
    assert "QQLESSON1" in field(trial_starts[1], "reflections") and "QQLESSON2" not in field(trial_starts[1], "reflections")
    assert "QQLESSON1" in field(trial_starts[2], "reflections") and "QQLESSON2" in field(trial_starts[2], "reflections")
    for p in trial_starts:
        assert SOURCE not in p and field(p, "unread_titles").splitlines() == [t.title for t in POOL]
    reflect_prompt = next(p for p in engine.prompts if is_reflection(p))
    assert SOURCE in field(reflect_prompt, "trajectory")  # the reflection call sees the failed trial


def test_no_prompt_ever_contains_the_reference_answer_or_a_score():
    record, engine = run(Script(["a", "b", "c", "d", "e"]), question("QQGOLDANSWER"))
    assert record["trajectory"]["stopped_at"] == 5 and len(engine.prompts) == 5 * 2 + 4
    for p in engine.prompts:
        assert "QQGOLDANSWER".lower() not in p.lower()
        assert "exact match" not in p.lower() and "f1" not in p.lower() and "score" not in p.lower()


def test_reflexion_refuses_to_run_without_an_oracle():
    with dspy.context(lm=scripted_lm([]), adapter=dspy.JSONAdapter()), recording(Ledger()):
        with pytest.raises(TypeError, match="oracle"):
            Reflexion()(question=Q, paragraphs=POOL)


def test_a_trial_turn_is_directs_turn_plus_the_reflections():
    _, engine = run(Script(["a", "Tulsa"]), question())
    turns = [p for p in engine.prompts if not is_reflection(p)]
    _, _, direct = run_program(Direct(budget=3), Q, POOL, [act("read", BAND), act("submit", answer="a")])
    direct_inputs = ["question", "unread_titles", "last_result"]
    assert [input_fields(p) for p in turns] == [["question", "reflections", "unread_titles", "last_result"]] * 4
    # Trial 1 shows exactly what Direct's prompts show after the same actions; trial 2 the same again.
    for trial in (turns[:2], turns[2:]):
        assert [[field(p, n) for n in direct_inputs] for p in trial] == [[field(p, n) for n in direct_inputs]
                                                                        for p in direct.prompts]
    assert field(turns[1], "last_result").startswith(f'Read "{BAND}" (2 turns left, counting the submit).')
    for p in turns:  # no trajectory, no list of all titles, no turn line
        assert "[[ ## trajectory ## ]]" not in p and "[[ ## titles ## ]]" not in p and "Now turn" not in p
    assert "Attempt 1: QQLESSON1" in field(turns[2], "reflections")
