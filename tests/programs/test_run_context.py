"""Rules passed, not found (issue 44): a program gets its acceptance rule from its class and its decoding and
futile-search rule from the RunContext it is built with (programs/run_context.py, programs/method_program.py);
nothing it does depends on an adapter or a setting configured around it."""

import dataclasses
import json
from pathlib import Path

import dspy
import pytest

from eir_dspy import rejection
from eir_dspy.acceptance import EXTRACT, JSON_ONLY
from eir_dspy.accounting import Ledger, recording
from eir_dspy.lm import LOCAL_DEFAULT, DecodingAdapter, LMSpec
from eir_dspy.lm.local_models import DEFAULT_MODEL
from programs import EIR, SSR, Direct, FullPool, Reflexion, RunContext
from programs.eir import AnswerFromEvidence
from programs.method_program import MethodProgram
from programs.registry import METHODS
from tests.fixtures.pool import POOL, Q
from tests.scripted import act, final, run_program, scripted_lm

BAND = "Tinted Windows (band)"


def prose(reply: dict) -> str:
    return "Sure! Here it is:\n" + json.dumps(reply) + "\nDone."


def test_a_context_checks_its_rules_and_defaults_to_the_embedded_models_decoding_and_the_papers_searches():
    assert RunContext() == RunContext(LOCAL_DEFAULT, "run") and not RunContext().strict and RunContext("strict").strict
    with pytest.raises(ValueError, match="decoding must be one of strict, schema, free"):
        RunContext("grammar")
    with pytest.raises(ValueError, match="futile_searches must be one of run, reject"):
        RunContext(futile_searches="skip")
    with pytest.raises(dataclasses.FrozenInstanceError):  # a program's rules do not change under it
        RunContext().decoding = "free"


def test_a_context_for_an_lm_takes_the_specs_decoding_else_the_lms_default():
    lm = scripted_lm([])
    assert RunContext.for_lm(lm, LMSpec(DEFAULT_MODEL)).decoding == LOCAL_DEFAULT  # the embedded model's default
    assert RunContext.for_lm(lm, LMSpec(DEFAULT_MODEL, decoding="strict")).decoding == "strict"
    claude = dspy.LM("anthropic/claude-haiku-4-5")
    assert RunContext.for_lm(claude, LMSpec("anthropic/claude-haiku-4-5")).decoding == "free"  # the paper's Haiku
    assert RunContext.for_lm(claude).decoding == "free"  # an API model built by hand
    assert RunContext.for_lm(lm, futile_searches="reject").futile_searches == "reject"


def test_the_adapter_takes_its_acceptance_rule_and_checks_it():
    assert DecodingAdapter("free").acceptance == EXTRACT
    assert DecodingAdapter("schema", acceptance=JSON_ONLY).acceptance == JSON_ONLY
    with pytest.raises(ValueError, match="acceptance must be one of extract, json_only"):
        DecodingAdapter("free", acceptance="lenient")


@pytest.mark.parametrize("name", list(METHODS))
def test_each_program_builds_its_adapter_from_its_context_and_its_own_rule(name):
    context = RunContext("strict", "reject") if name != "full_pool" else RunContext("free")
    program = METHODS[name].build(2, {}, context)
    assert isinstance(program, MethodProgram) and program.context == context
    assert (program.adapter.decoding, program.adapter.acceptance) == (context.decoding, METHODS[name].acceptance)
    assert METHODS[name].build(2).context == RunContext()


def test_a_json_only_rule_applies_with_no_adapter_configured_and_over_another_one():
    with dspy.context(adapter=None):  # nothing configured (whatever an earlier eval.run in this process did)
        assert dspy.settings.adapter is None
        pred, ledger, _ = run_program(Direct(budget=1), Q, POOL, [prose(act("submit", answer="Tulsa"))])
    assert pred.episode.turns[0].rejection_cause == rejection.NOT_JSON_ONLY and pred.answer == ""
    assert ledger.calls[0].unusable == rejection.NOT_JSON_ONLY
    # An extracting adapter configured around it changes nothing: Direct's rule is its own.
    with dspy.context(adapter=DecodingAdapter("free", acceptance=EXTRACT)):
        pred, _, _ = run_program(Direct(budget=1), Q, POOL, [prose(act("submit", answer="Tulsa"))])
    assert pred.episode.turns[0].rejection_cause == rejection.NOT_JSON_ONLY
    # ... and a refusing one does not make EIR's final call refuse.
    with dspy.context(adapter=DecodingAdapter("free", acceptance=JSON_ONLY)):
        pred, _, _ = run_program(FullPool(), Q, POOL, [prose(final("Tulsa", [(BAND, 1)]))])
    assert pred.answer == "Tulsa" and pred.trajectory["final_parsed"] is True


class JsonOnlyAnswer(MethodProgram):
    """A JSON-only method whose one call is the shared final answer module (which declares no rule)."""

    acceptance = JSON_ONLY

    def __init__(self, context: RunContext | None = None) -> None:
        super().__init__(context)
        self.answer = AnswerFromEvidence(self.context)

    def forward(self, question: str, evidence: str):
        with dspy.context(adapter=self.adapter):
            return self.answer(question=question, evidence=evidence, titles=[BAND])


def test_nested_calls_follow_the_outer_methods_rule():
    text = prose(final("Tulsa", [(BAND, 1)]))
    with dspy.context(lm=scripted_lm([text, text])), recording(Ledger()):
        assert JsonOnlyAnswer()(question=Q, evidence="e").parsed is False  # refused: the outer rule is json_only
        assert FullPool()(question=Q, paragraphs=POOL).answer == "Tulsa"  # the same module under extract
    # Reflexion's reflection and SSR's verifiers are nested calls of JSON-only methods: prose is refused.
    lm = scripted_lm([act("submit", answer="no"), prose({"reflection": "QQLESSON"}), act("submit", answer="no")])
    with dspy.context(lm=lm), recording(Ledger()):
        out = Reflexion(budget=1, trials=2)(question=Q, paragraphs=POOL, oracle=lambda answer: False)
    assert out.trajectory["trials"][0]["reflection"] == "(the reflection could not be parsed)"
    assert "QQLESSON" not in lm.engine.prompts[2]
    verdict = prose({"verdict": "reject", "correction": "submit: x", "confidence": 0.9})

    def ssr_reply(prompt):
        if "Break the proposed" in prompt:
            return {"facts": "f", "justification": "j", "action": "a"}
        return verdict if "Check one step" in prompt else act("submit", answer="Tulsa", citations=[])

    pred, ledger, _ = run_program(SSR(budget=1, votes=2), Q, POOL, ssr_reply)
    assert ledger.by_role() == {"action": 1, "decompose": 1, "verify": 6}  # no refine: no verdict was read
    assert {c.unusable for c in ledger.calls if c.role == "verify"} == {rejection.NOT_JSON_ONLY}
    assert all(not j["valid"] for vote in pred.trajectory["ssr"][0]["votes"] for j in vote["judgments"])


def test_strict_grammars_follow_the_context_not_the_adapter_configured_around():
    with dspy.context(adapter=DecodingAdapter("strict")):
        _, _, free = run_program(EIR(budget=1, context=RunContext("free")), Q, POOL,
                                 [{"requirement_updates": [], "conclusion_updates": [],
                                   "action": {"kind": "submit", "answer": "x"}}, final("x")])
    _, _, strict = run_program(EIR(budget=1, context=RunContext("strict")), Q, POOL,
                               [{"requirement_updates": [], "conclusion_updates": [],
                                 "action": {"kind": "submit", "answer": "x"}}, final("x")])
    assert free.formats == [None, None]
    assert [f["name"] for f in strict.formats] == ["eir_turn", "final_answer"]


@pytest.mark.parametrize("name", list(METHODS))
def test_the_context_and_adapter_survive_copies_and_are_no_part_of_the_saved_state(name, tmp_path: Path):
    context = RunContext("strict") if name == "full_pool" else RunContext("strict", "reject")
    program = METHODS[name].build(2, {}, context)
    predictors = [n for n, _ in program.named_predictors()]
    assert predictors == [n for n, _ in METHODS[name].build(2).named_predictors()]  # no predictor added
    for copy in (program.deepcopy(), program.reset_copy()):
        assert copy.context == context and isinstance(copy.adapter, DecodingAdapter)
        assert (copy.adapter.decoding, copy.adapter.acceptance) == (context.decoding, program.acceptance)
        assert [n for n, _ in copy.named_predictors()] == predictors
    program.save(str(tmp_path / "p.json"))
    assert json.loads((tmp_path / "p.json").read_text()).keys() - {"metadata"} == set(predictors)
    loaded = METHODS[name].build(2, {}, context)
    loaded.load(str(tmp_path / "p.json"))
    assert loaded.context == context and loaded.dump_state() == program.dump_state()
