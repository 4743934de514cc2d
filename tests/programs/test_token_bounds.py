"""The methods' token bounds (programs/token_bound.py, each program file's `max_tokens`) hold against the
real programs: every method runs on real dev questions with a scripted LM whose every output is as long as
the completion cap allows and built to come back in later prompts (tests/fixtures/maximal.py), each request
counted as a simulated OpenAI-compatible endpoint counts it. The per-question sums must stay within the
bound, and the bound within a stated factor of them (a bound far above what maximal outputs reach says
little). A prompt that grows in a way its bound does not count fails here."""

import dspy
import pytest

from eir_dspy.accounting.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, chat_prompt_tokens, count_tokens
from programs.registry import METHODS
from programs.token_bound import PoolTokens, Prompts
from tests.fixtures.maximal import bound_questions, measure

CAP = 300  # each reply's tokens at most (the run's --max-tokens)
BUDGET = 6
# Every method and ablation, with the paper grid's options.
CASES = [("eir", {}), ("eir", {"ablation": "no-list-feedback"}), ("eir", {"ablation": "repair"}),
         ("eir", {"ablation": "repair-unapplied"}), ("direct", {}), ("full_pool", {}), ("ssr", {"votes": 3}),
         ("reflexion", {"trials": 5})]
# How far above the maximal case a bound may be: RERENDER = 2 on every earlier output shown again, and
# (the repair ablations) repair prompts counting the whole lists where maximal outputs change little of them.
FACTOR = {"repair": 5.0, "repair-unapplied": 5.0}
DEFAULT_FACTOR = 2.5
QUESTIONS = bound_questions()


def test_token_counts_are_o200k_with_openais_chat_overhead():
    assert count_tokens("") == 0 and count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special-token text counts as ordinary text
    messages = [{"role": "system", "content": "You answer."},
                {"role": "user", "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "world"}]}]
    assert chat_prompt_tokens(messages) == count_tokens("You answer.") + count_tokens("hello world") + \
        2 * MESSAGE_OVERHEAD + REPLY_PRIMING == 3 + 2 + 8 + 3


@pytest.mark.parametrize("method,options", CASES, ids=[f"{m}-{o.get('ablation', '')}".rstrip("-") for m, o in CASES])
def test_the_bound_holds_on_maximal_outputs(method, options):
    entry = METHODS[method]
    for dataset, question, paragraphs in QUESTIONS:
        program = entry.build(BUDGET, options)
        extra = {"oracle": lambda answer: False} if entry.needs_oracle else {}  # every trial runs
        engine = measure(program, question, paragraphs, CAP, **extra)
        bound = entry.max_tokens(BUDGET, PoolTokens.of(question, paragraphs), CAP, **options)
        prompt, completion = sum(engine.prompt_tokens), sum(engine.completion_tokens)
        where = f"{method} {options} on {dataset}"
        assert len(engine.prompt_tokens) == entry.max_calls(BUDGET, **options), f"{where}: not every call was made"
        assert prompt <= bound.prompt, f"{where}: {prompt:,} prompt tokens over the bound {bound.prompt:,}"
        assert completion <= bound.completion == entry.max_calls(BUDGET, **options) * CAP, where
        factor = FACTOR.get(options.get("ablation"), DEFAULT_FACTOR)
        assert bound.prompt <= factor * prompt, f"{where}: the bound {bound.prompt:,} is over {factor}x {prompt:,}"


def test_a_compiled_programs_demos_are_in_the_bound():
    """The fixed part is rendered from the program's own predictors, demos included."""
    _, question, paragraphs = QUESTIONS[1]
    pool = PoolTokens.of(question, paragraphs)
    direct = METHODS["direct"]
    program = direct.build(BUDGET)
    plain = direct.max_tokens(BUDGET, pool, CAP, prompts=Prompts(program))
    demo = {"question": question, "unread_titles": "\n".join(p.title for p in paragraphs),
            "last_result": "(nothing yet)", "thought": "read the first " * 40,
            "action": {"kind": "read", "title": paragraphs[0].title, "answer": "", "citations": []}}
    program.turn.demos = [dspy.Example(**demo)]
    compiled = direct.max_tokens(BUDGET, pool, CAP, prompts=Prompts(program))
    assert compiled.prompt > plain.prompt + BUDGET * 100  # the demo is in every turn's prompt
    engine = measure(program, question, paragraphs, CAP)
    assert sum(engine.prompt_tokens) <= compiled.prompt


def test_a_bound_must_name_every_input_of_its_signature():
    prompts = Prompts(METHODS["direct"].build(BUDGET))
    with pytest.raises(ValueError, match=r"missing \['last_result'\], unknown \['recent'\]"):
        prompts.call("turn", question=1, unread_titles=1, recent=1)


def test_full_pool_is_its_one_prompt_and_the_corpus_has_no_bound():
    _, question, paragraphs = QUESTIONS[0]
    pool = PoolTokens.of(question, paragraphs)
    bound = METHODS["full_pool"].max_tokens(BUDGET, pool, CAP)
    engine = measure(METHODS["full_pool"].build(BUDGET), question, paragraphs, CAP)
    assert 0 <= bound.prompt - engine.prompt_tokens[0] <= 6 * len(paragraphs) + 10  # JOIN slack per paragraph
    assert bound.completion == CAP
    for method in ("eir", "direct", "ssr", "reflexion"):
        assert METHODS[method].max_tokens(BUDGET, pool, CAP, setting="corpus") is None
