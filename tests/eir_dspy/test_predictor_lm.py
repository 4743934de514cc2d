"""A predictor with its own LM (`program.set_lm`, `predictor.lm = ...`): its calls are counted and
classified from the LM that served them, for every method, and under an active DSPy trace a parse
failure is recorded as DSPy records one (FailedPrediction), for optimizers that learn from it."""

from __future__ import annotations

import threading
import time

import dspy
import pytest
from dspy.teleprompt.bootstrap_trace import FailedPrediction, bootstrap_trace_data

from eir_dspy.accounting import Ledger, lm_call, recording, serving_lms
from eir_dspy.paragraphs import Paragraph
from eval.compile.metric import example_of
from eval.compile.optimizers import Settings, compile_program
from eval.data.schema import Question
from eval.runs.execute import run_question
from programs.eir import EIR
from programs.registry import METHODS
from tests.fixtures.fuzzer import POOL_Q, Fuzzer
from tests.scripted import final, scripted_lm, turn

POOL = (Paragraph("Alpha", ("Alpha formed in Tulsa.",), 0), Paragraph("Beta", ("Beta is a city.",), 1))
Q = Question("q1", "Where did Alpha form?", "Tulsa", (), "bridge", POOL, (("Alpha", 0),), "hotpotqa")
MALFORMED = "I think I should read Alpha next."


def eir_with_own_turn_lm(turn_replies):
    """EIR whose turn predictor has its own LM; the final call uses the configured LM."""
    program = EIR(budget=2)
    program.turn.lm = scripted_lm(turn_replies, model="local/turn-model")
    return program


def test_every_call_is_counted_under_its_role_and_the_lm_that_served_it():
    program = eir_with_own_turn_lm([turn("read", "Alpha"), turn("submit")])
    configured = scripted_lm([final("Tulsa", [("Alpha", 0)])], model="local/configured")
    ledger = Ledger()
    with dspy.context(lm=configured, adapter=dspy.JSONAdapter()), recording(ledger):
        pred = program(question=Q.question, paragraphs=POOL)
    assert pred.answer == "Tulsa"
    assert [(c.role, c.model) for c in ledger.calls] == [
        ("action", "local/turn-model"), ("action", "local/turn-model"), ("final", "local/configured")]
    # The tokens are those of the prompts each engine really received (the scripted engine bills words).
    own, conf = program.turn.lm.engine.prompts, configured.engine.prompts
    assert [c.prompt_tokens for c in ledger.calls] == [len(p.split()) for p in own + conf]
    assert len(program.turn.lm.history) == 2 and len(configured.history) == 1


def test_a_malformed_output_from_the_predictors_own_lm_is_a_rejected_turn_not_a_failed_question():
    program = eir_with_own_turn_lm([MALFORMED, turn("read", "Alpha"), turn("submit")])
    program.budget = 3
    configured = scripted_lm([final("Tulsa", [("Alpha", 0)])], model="local/configured")
    with dspy.context(adapter=dspy.JSONAdapter()):
        record = run_question(program, configured, Q)
    assert record["error"] is None and record["prediction"] == "Tulsa"
    assert record["rejected_actions"] == 1 and record["rejections_by_cause"] == {"not_json": 1}
    first = record["trajectory"]["turns"][0]
    assert first["accepted"] is False and first["rejection_cause"] == "not_json"
    assert [(c["role"], c["model"], c["unusable"]) for c in record["lm_calls"]] == [
        ("action", "local/turn-model", "not_json"), ("action", "local/turn-model", None),
        ("action", "local/turn-model", None), ("final", "local/configured", None)]


def test_the_lm_is_chosen_as_dspy_predict_chooses_it():
    """The rule of dspy/predict/predict.py: the call's lm=, else the predictor's own, else the
    configured one (dspy.context included); a module's inner predictor counts. Each case is checked
    against the engine that really received the prompt."""
    reply = {"answer": "x"}
    own, ctx, call = (scripted_lm(lambda _: reply, model=f"local/{n}") for n in ("own", "context", "call"))
    bare, owned = dspy.Predict("question -> answer"), dspy.Predict("question -> answer")
    owned.lm = own
    cot = dspy.ChainOfThought("question -> answer")
    cot_reply = scripted_lm(lambda _: {"reasoning": "r", "answer": "x"}, model="local/cot")
    cot.predict.lm = cot_reply
    cases = [(bare, {}, ctx), (owned, {}, own), (owned, {"lm": call}, call), (cot, {}, cot_reply)]
    with dspy.context(lm=ctx, adapter=dspy.JSONAdapter()):
        for predictor, extra, expected in cases:
            assert serving_lms(predictor, extra) == [expected]
            ledger, before = Ledger(), len(expected.engine.prompts)
            with recording(ledger):
                lm_call("action", predictor, question="q", **extra)
            assert [c.model for c in ledger.calls] == [expected.model]
            assert len(expected.engine.prompts) == before + 1


def test_a_full_history_never_hides_a_call():
    """DSPy drops a full history's oldest entry: the new entries are still found."""
    predictor = dspy.Predict("question -> answer")
    predictor.lm = scripted_lm(lambda _: {"answer": "x"}, model="local/own")
    ledger = Ledger()
    with dspy.context(lm=scripted_lm([]), adapter=dspy.JSONAdapter(), max_history_size=2), recording(ledger):
        for _ in range(4):
            lm_call("action", predictor, question="q")
    assert len(predictor.lm.history) == 2 and [c.model for c in ledger.calls] == ["local/own"] * 4


def test_questions_in_parallel_each_count_only_their_own_calls_on_a_shared_predictor_lm():
    """A predictor's own LM is shared by the runner's threads (only the configured LM is copied per
    question): each question's ledger still holds exactly its own call."""
    def slow(prompt):
        time.sleep(0.2)  # long enough for every thread's call to overlap the others'
        return {"answer": prompt.rsplit("[[ ## question ## ]]", 1)[1].split()[0]}

    predictor = dspy.Predict("question -> answer")
    predictor.lm = scripted_lm(slow, model="local/own")
    ledgers = {name: Ledger() for name in ("a", "b", "c")}

    def one(name):
        with dspy.context(lm=scripted_lm([]), adapter=dspy.JSONAdapter()), recording(ledgers[name]):
            assert lm_call("action", predictor, question=name).answer == name

    threads = [threading.Thread(target=one, args=(name,)) for name in ledgers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {name: ledger.n_calls for name, ledger in ledgers.items()} == {"a": 1, "b": 1, "c": 1}
    assert len(predictor.lm.history) == 3


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_counts_a_set_lm_program_as_it_counts_a_configured_one(method):
    """Every predictor of the method on its own LM (`set_lm`), the configured LM unused: the same
    calls under the same roles as when the configured LM serves them, each under the own LM's model."""
    options = {"ssr": {"votes": 2, "verifier_temperature": 0.7}, "reflexion": {"trials": 2}}.get(method, {})
    runs = {}
    for own in (False, True):
        program = METHODS[method].build(2, options)
        served_by = scripted_lm(Fuzzer(7), model="local/own")
        configured = scripted_lm([], model="local/configured") if own else served_by
        if own:
            program.set_lm(served_by)
        records = []
        with dspy.context(adapter=dspy.JSONAdapter()):
            for _ in range(3):
                records.append(run_question(program, configured, POOL_Q))
        runs[own] = records
        assert all(r["error"] is None for r in records)
        assert sum(r["calls"] for r in records) == len(served_by.engine.prompts) > 0
    assert configured.engine.prompts == []
    for plain, owned in zip(runs[False], runs[True]):
        assert [(c["role"], c["unusable"]) for c in owned["lm_calls"]] == \
            [(c["role"], c["unusable"]) for c in plain["lm_calls"]]
        assert {c["model"] for c in owned["lm_calls"]} == {"local/own"}
    assert any(c["unusable"] for r in runs[True] for c in r["lm_calls"])  # the fuzzer's malformed outputs are there


def test_under_an_active_trace_a_parse_failure_is_dspys_failed_prediction():
    program = eir_with_own_turn_lm([MALFORMED, turn("read", "Alpha"), turn("submit")])
    program.budget = 3
    configured = scripted_lm([final("Tulsa", [("Alpha", 0)])], model="local/configured")
    with dspy.context(lm=configured, adapter=dspy.JSONAdapter(), trace=[]):
        pred = program(question=Q.question, paragraphs=POOL)
        trace = list(dspy.settings.trace)
    assert pred.answer == "Tulsa"
    assert [type(step[2]).__name__ for step in trace] == ["FailedPrediction", "Prediction", "Prediction", "Prediction"]
    failed_predictor, inputs, failed = trace[0]
    assert failed_predictor is program.turn and failed.completion_text == MALFORMED and failed.format_reward is None
    # The predictor's own inputs, as Predict records a step (its `config` is not an input).
    assert inputs["question"] == Q.question and "config" not in inputs and set(inputs) == set(trace[1][1])


def test_dspys_trace_bootstrapping_sees_the_failure_gepa_reflects_on():
    """bootstrap_trace_data (GEPA's trajectory capture) returns the failed step in the question's trace."""
    program = eir_with_own_turn_lm([MALFORMED, turn("submit")])
    configured = scripted_lm(lambda _: final("Tulsa", [("Alpha", 0)]), model="local/configured")
    with dspy.context(lm=configured, adapter=dspy.JSONAdapter()):
        data = bootstrap_trace_data(program, [example_of(Q)], metric=lambda e, p, t=None: 1.0, num_threads=1)
    steps = data[0]["trace"]
    failed = [s for s in steps if isinstance(s[2], FailedPrediction)]
    assert len(failed) == 1 and failed[0][0].signature.equals(program.turn.signature)
    assert failed[0][2].completion_text == MALFORMED and data[0]["prediction"].answer == "Tulsa"


def test_bootstrap_few_shot_makes_demos_of_the_parsed_steps_only():
    """BootstrapFewShot turns a passing trace into demos with `**outputs`; the failed step is left out."""
    lm = scripted_lm([MALFORMED, turn("read", "Alpha"), turn("submit"), final("Tulsa", [("Alpha", 0)])])
    ledger = Ledger()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), recording(ledger):
        compiled = compile_program(EIR(budget=3), "bootstrap", "bootstrap", [example_of(Q)], [],
                                   Settings(max_labeled_demos=0), 3, ledger)
    demos = dict((name, p.demos) for name, p in compiled.named_predictors())
    assert len(demos["turn"]) == 1 and len(demos["answer.predict"]) == 1
    assert all(set(d.keys()) >= {"requirement_updates", "conclusion_updates", "action"} for d in demos["turn"])
    assert ledger.by_role() == {"action": 3, "final": 1}


def test_the_predictors_found_for_a_call_are_dspys_and_the_call_history_is_not_searched():
    """serving_lms finds the Predicts DSPy's `named_sub_modules` finds, in its order, without walking
    the modules' call history (DSPy appends every call to each calling module's `history`)."""
    from eir_dspy.accounting.calls import _predictors

    program = eir_with_own_turn_lm([turn("read", "Alpha"), turn("submit")])
    configured = scripted_lm([final("Tulsa", [("Alpha", 0)])], model="local/configured")
    with dspy.context(lm=configured, adapter=dspy.JSONAdapter()), recording(Ledger()):
        program(question=Q.question, paragraphs=POOL)
    assert program.history and program.turn.history  # the calls went into the modules' histories
    for module in (program, program.turn, program.answer):
        assert _predictors(module) == [p for _, p in module.named_sub_modules(type_=dspy.Predict)]
    stray = dspy.Predict("question -> answer")
    program.history.append({"inside": [stray]})  # what DSPy's search would find there, this one skips
    assert stray in [p for _, p in program.named_sub_modules(type_=dspy.Predict)]
    assert stray not in _predictors(program)
