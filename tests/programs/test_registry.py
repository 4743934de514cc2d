"""The method registry (programs/registry.py): every method has one entry, its options are checked
with errors that name the option and the method, its variants are the ones its program reports,
and `run` gives the harness a MethodResult and nothing else."""

import inspect

import dspy
import pytest

from eir_dspy.acceptance import ACCEPTANCES
from eir_dspy.state import DISCARD, REJECT
from programs import EIR, SSR, Direct, FullPool, Reflexion, names
from programs.options import OptionsError
from programs.registry import CORPUS_METHODS, METHODS, method_named, method_of
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import SETTINGS
from tests.fixtures.pool import POOL, Q
from tests.scripted import scripted_lm

UNREADABLE = "I am not sure."  # every turn rejected, every final call unparsed: each method's whole shape


def test_every_method_has_one_entry_and_every_program_one_method():
    assert list(METHODS) == [names.EIR, names.DIRECT, names.FULL_POOL, names.SSR, names.REFLEXION]
    assert {m.program for m in METHODS.values()} == {EIR, Direct, FullPool, SSR, Reflexion}
    assert all(name == m.name for name, m in METHODS.items())
    assert CORPUS_METHODS == (names.EIR, names.DIRECT, names.SSR, names.REFLEXION)
    for m in METHODS.values():
        assert m.acceptance in ACCEPTANCES and set(m.settings) <= set(SETTINGS)
        assert type(m.build(2)) is m.program and method_of(m.build(2)) is m


def test_the_labels_and_variants_each_method_reports():
    assert {name: m.labels for name, m in METHODS.items()} == {
        "eir": ("eir",), "direct": ("direct",), "full_pool": ("full_pool",), "ssr": ("ssr",),
        "reflexion": ("reflexion_oracle", "reflexion_first")}
    assert [name for name, m in METHODS.items() if m.needs_oracle] == [names.REFLEXION]


@pytest.mark.parametrize("name", list(METHODS))
def test_each_program_returns_a_method_result_with_exactly_its_entrys_variants(name):
    entry = METHODS[name]
    program = entry.build(1, {"trials": 2} if name == names.REFLEXION else {}, RunContext(decoding="free"))
    asked = []

    def oracle(answer):
        asked.append(answer)
        return False

    with dspy.context(lm=scripted_lm(lambda prompt: UNREADABLE)):
        result = entry.run(program, Q, paragraphs=POOL, oracle=oracle)
    assert isinstance(result, MethodResult) and result.answer == "" and result.trajectory.method == name
    assert tuple(result.variants) == entry.variants
    assert all(isinstance(v, MethodResult) and v.calls is not None for v in result.variants.values())
    assert bool(asked) == entry.needs_oracle  # the oracle reaches only the method that needs it
    assert result.evidence is not None  # the sentences the answer was given from (none read: empty)
    assert (result.episode is None) == (name == names.FULL_POOL)


def test_options_name_what_is_wrong_and_which_method():
    with pytest.raises(OptionsError, match=r"'votes' is not an option of method eir \(its options: ablation, "
                                           r"invalid_updates\)"):
        METHODS["eir"].make_options({"votes": 3})
    with pytest.raises(OptionsError, match=r"'trials' is not an option of method direct \(it takes none\)"):
        METHODS["direct"].build(6, {"trials": 2})
    with pytest.raises(OptionsError, match="unknown ablation 'lists-off'; choose one of none, no-list-feedback"):
        METHODS["eir"].make_options({"ablation": "lists-off"})
    with pytest.raises(OptionsError, match="unknown invalid_updates 'drop'; choose one of discard, reject"):
        METHODS["eir"].make_options({"invalid_updates": "drop"})
    with pytest.raises(OptionsError, match="votes must be a positive integer, got 0"):
        METHODS["ssr"].make_options({"votes": 0})
    with pytest.raises(OptionsError, match="verifier_temperature must be a number, got 'hot'"):
        METHODS["ssr"].make_options({"verifier_temperature": "hot"})
    with pytest.raises(OptionsError, match="trials must be a positive integer, got True"):
        METHODS["reflexion"].make_options({"trials": True})
    # The programs check their arguments through the same options.
    with pytest.raises(OptionsError, match="votes must be a positive integer"):
        SSR(votes=0)
    with pytest.raises(OptionsError, match="trials must be a positive integer"):
        Reflexion(trials=0)
    with pytest.raises(ValueError, match="unknown method 'nope'; choose one of direct, eir, full_pool, reflexion, ssr"):
        method_named("nope")
    with pytest.raises(ValueError, match="is no registered method's program"):
        method_of(dspy.Predict("question -> answer"))


def test_options_resolve_the_papers_per_setting_defaults_and_keep_what_was_given():
    eir, ssr = METHODS["eir"], METHODS["ssr"]
    assert eir.make_options({}, "pool").as_dict() == {"ablation": "none", "invalid_updates": DISCARD}
    assert eir.make_options({}, "corpus").as_dict() == {"ablation": "none", "invalid_updates": REJECT}
    assert eir.make_options({"invalid_updates": DISCARD}, "corpus").invalid_updates == DISCARD
    assert ssr.make_options({}, "pool").as_dict() == {"verifier_temperature": 0.7, "votes": 3}  # the logged order
    assert ssr.make_options({}, "corpus").verifier_temperature == 0.0
    assert ssr.make_options({"verifier_temperature": 0.3}, "corpus").verifier_temperature == 0.3
    assert METHODS["reflexion"].make_options({}).as_dict() == {"trials": 5}
    assert METHODS["direct"].make_options({}).as_dict() == METHODS["full_pool"].make_options({}).as_dict() == {}
    # The program's own defaults are the pool's; an option left unresolved builds with them.
    assert inspect.signature(SSR.__init__).parameters["verifier_temperature"].default == 0.7
    assert ssr.build(6).verifier_temperature == 0.7 and ssr.build(6, {"verifier_temperature": 0.0}).verifier_temperature == 0


def test_full_pool_takes_no_budget_and_its_bound_ignores_h():
    with pytest.raises(TypeError, match="budget"):
        FullPool(budget=6)
    assert not METHODS["full_pool"].budgeted and all(m.budgeted for n, m in METHODS.items() if n != names.FULL_POOL)
    assert METHODS["full_pool"].max_calls(2) == METHODS["full_pool"].max_calls(10) == 1


def test_run_refuses_a_setting_the_method_lacks_and_a_result_of_another_type():
    with pytest.raises(ValueError, match="method full_pool has no corpus setting"):
        METHODS["full_pool"].run(FullPool(), Q, corpus=object())
    with pytest.raises(ValueError, match="method full_pool has no corpus setting"):
        METHODS["full_pool"].max_calls(6, "corpus")
    with pytest.raises(ValueError, match="unknown setting 'web'"):
        METHODS["eir"].max_calls(6, "web")
    with pytest.raises(ValueError, match="budget must be a positive integer"):
        METHODS["eir"].max_calls(0)

    class Plain(Direct):
        def forward(self, question, paragraphs=(), corpus=None):
            return dspy.Prediction(answer="x", citations=[])

    with pytest.raises(TypeError, match="returned a Prediction, not a MethodResult"):
        METHODS["direct"].run(Plain(), Q, paragraphs=POOL)


def test_a_method_result_fills_every_field_and_survives_dspys_copies():
    result = MethodResult(answer="Tulsa", citations=[("Band", 1)])
    assert (result.episodes, result.evidence, result.trajectory, result.variants, result.episode) == ([], None, None,
                                                                                                        {}, None)
    copied = result.copy(answer="Paris")
    assert type(copied) is MethodResult and copied.answer == "Paris" and copied.citations == [("Band", 1)]
    assert isinstance(result, dspy.Prediction)  # DSPy's optimizers, usage tracking and tracing see a Prediction
    with pytest.raises(TypeError, match="MethodResult has no field 'episode'"):
        MethodResult(episode=None)
