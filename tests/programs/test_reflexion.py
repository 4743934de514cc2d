"""Reflexion: oracle stop, first-trial numbers, what carries over between trials, no leaked reference."""

import dspy
import pytest

from eir_dspy.accounting import Ledger, recording
from eval.runs.execute import run_question
from eval.data.schema import Question
from programs import Reflexion
from tests.scripted import act, field, scripted_lm
from tests.programs.test_eir import POOL, Q

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
        if field(prompt, "trajectory") == "(nothing yet)" or "Turn 1\n" not in field(prompt, "trajectory"):
            self.trial += 1
            return act("read", BAND)
        return act("submit", answer=self.answers[self.trial - 1])


def is_reflection(prompt):
    return "`reflection`" in prompt  # the Reflect signature's output field


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
    trial_starts = [p for p in engine.prompts if not is_reflection(p) and field(p, "trajectory").startswith("Now turn 1")]
    assert len(trial_starts) == 3
    assert field(trial_starts[0], "reflections").startswith("(none")
    assert "QQLESSON1" in field(trial_starts[1], "reflections") and "QQLESSON2" not in field(trial_starts[1], "reflections")
    assert "QQLESSON1" in field(trial_starts[2], "reflections") and "QQLESSON2" in field(trial_starts[2], "reflections")
    for p in trial_starts:
        assert SOURCE not in p and "Turn 1" not in field(p, "trajectory")
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
