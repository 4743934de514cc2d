"""Token bounds: the most prompt and completion tokens one question can cost a method, read off its code.

The unit is eir_dspy/accounting/tokens.py's: o200k_base tokens, a request's prompt counted with
`chat_prompt_tokens` and a reply with `count_tokens` (what a simulated OpenAI-compatible endpoint reports).
Each program file's `max_tokens(budget, setting, options, pool, cap, prompts)`, beside its `max_calls`,
walks its calls in the order its code makes them and adds up:

- completions: every call's reply is at most `cap` tokens (the run's --max-tokens), so max_calls x cap;
- each call's prompt (`Prompts.call`): the fixed part the run's adapter renders for that predictor
  (DecodingAdapter, a dspy.JSONAdapter: system message with field descriptions, JSON-schema notes and
  instructions, a compiled program's demos, the field markers, the output-format line), rendered once
  with every input empty, plus a bound on each input and JOIN tokens per input. An input is one of:
  * the question's own text (`PoolTokens`: the question, the titles, each paragraph as a read result
    and as evidence shows it), counted once per question;
  * a fixed text of the code (a budget note, a rejection, a placeholder), rendered by the code that writes
    it (`TurnTexts`);
  * an earlier output shown again (a list entry, a quoted title, a reflection, SSR's steps): at most
    RERENDER tokens per token it had as output, and an output has at most `cap` tokens (`echo`).

RERENDER = 2 is a stated slack, not a proof: an entry rendered as a list line ("R3 [open] ...", "C2
[supported] ... (Title#1)") or a problem quoting it ("citation ('Title', 1) is not a sentence you have
read") takes at most about 1.75 tokens per output token for the shortest entries, and about 1 for ordinary
text. Outputs built to defeat it (hundreds of one-character depends_on ids each quoted in a problem; text of
rare characters that json.dumps re-escapes as \\uXXXX) could exceed it; no model writes those on purpose.
JOIN = 2 covers the tokens a junction of two separately counted texts can add (measured at most 2 over the
dev files' texts). The rules are written for the pool (BOUNDED_SETTINGS): the corpus setting's prompts
show search results and paragraphs of the index that no question's text fixes, so programs/registry.py
`Method.max_tokens` is None there.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import dspy

from eir_dspy.accounting.tokens import chat_prompt_tokens, count_many, count_tokens
from eir_dspy.accounting.unusable import SHORT_ERROR_CHARS, UnusableOutput
from eir_dspy.environment import PoolEnvironment, budget_note, read_text, render_sentences
from eir_dspy.episode import NO_ACTION_TEXT, Action, Episode, action_problem
from eir_dspy.evidence import EvidenceStore
from eir_dspy.lm.decoding import DecodingAdapter
from eir_dspy.paragraphs import Paragraph
from programs.react import submit_problem
from programs.setting import POOL

BOUNDED_SETTINGS = (POOL,)  # the settings whose prompts a question's own text bounds
RERENDER = 2  # an earlier output shown in a later prompt: at most this many tokens per token it had as output
JOIN = 2  # tokens a junction of two separately counted texts may add
# An unusable output's explanation quotes at most SHORT_ERROR_CHARS characters of the error: at most 2
# tokens each (ASCII is at most 1; o200k_base splits only rare characters into more).
DETAIL_TOKENS = 2 * SHORT_ERROR_CHARS
UNUSABLE_CAUSES = ("not_json", "not_json_only", "missing_field", "wrong_type", "unusable")


@dataclass(frozen=True)
class TokenBound:
    """At most this many prompt and completion tokens (o200k_base) for one question."""

    prompt: int
    completion: int

    def __add__(self, other: TokenBound) -> TokenBound:
        return TokenBound(self.prompt + other.prompt, self.completion + other.completion)

    @property
    def total(self) -> int:
        return self.prompt + self.completion


def echo(cap: int) -> int:
    """The most tokens one earlier output (at most `cap` tokens) takes shown again in a later prompt."""
    return RERENDER * cap


# ---------------------------------------------------------------- one question's text


@dataclass(frozen=True)
class PoolTokens:
    """One question's texts in tokens, as the pool setting's prompts show them."""

    question: int
    titles: tuple[int, ...]  # each title alone
    reads: tuple[int, ...]  # each paragraph as a read's result shows it, with no budget note (`read_text`)
    blocks: tuple[int, ...]  # each paragraph as evidence renders it: "## title", its numbered sentences

    @classmethod
    def of(cls, question: str, paragraphs: Sequence[Paragraph]) -> PoolTokens:
        return cls.of_many([(question, paragraphs)])[0]

    @classmethod
    def of_many(cls, questions: Iterable[tuple[str, Sequence[Paragraph]]]) -> list[PoolTokens]:
        """Each (question, paragraphs)'s PoolTokens, every text encoded once in one batch."""
        questions = [(q, tuple(ps)) for q, ps in questions]
        texts: list[str] = []
        for question, paragraphs in questions:
            texts.append(question)
            for p in paragraphs:
                # The read's header in its longer form (the requested title, from an output, is an echo).
                texts += [p.title, read_text(Paragraph(p.title, (), 0), "", requested=""), f"## {p.title}",
                          render_sentences(p)]
        counts = iter(count_many(texts))
        out = []
        for _, paragraphs in questions:
            question = next(counts)
            titles, reads, blocks = [], [], []
            for _ in paragraphs:
                title, head, block_head, sentences = next(counts), next(counts), next(counts), next(counts)
                titles.append(title)
                reads.append(head + sentences + JOIN)
                blocks.append(block_head + 1 + sentences + JOIN)  # "\n" between the title line and the sentences
            out.append(cls(question, tuple(titles), tuple(reads), tuple(blocks)))
        return out

    @property
    def unread_titles(self) -> int:
        """The unread titles as the catalogue shows them (one a line, any subset of the pool), or that all are read."""
        joined = sum(self.titles) + len(self.titles) + JOIN  # each title and its line break
        return max(joined, text_tokens(PoolEnvironment(()).catalogue()["unread_titles"]))

    @property
    def known(self) -> int:
        """Every title, one a line (PoolEnvironment.render_known)."""
        return sum(self.titles) + len(self.titles) + JOIN

    def evidence(self, paragraphs: int) -> int:
        """Evidence holding at most `paragraphs` of the pool's paragraphs (EvidenceStore.render): the
        largest blocks, a blank line between two."""
        k = min(paragraphs, len(self.blocks))
        if k <= 0:
            return text_tokens(EvidenceStore().render())
        return sum(heapq.nlargest(k, self.blocks)) + (k - 1) * (1 + JOIN)

    @property
    def pool(self) -> int:
        """The whole pool rendered as evidence (Full Pool's call)."""
        return self.evidence(len(self.blocks))

    def largest_reads(self, k: int) -> list[int]:
        """The `k` largest read results (distinct paragraphs), largest first."""
        return heapq.nlargest(k, self.reads)


@functools.cache
def text_tokens(text: str) -> int:
    """A fixed text's tokens (cached: the code's texts repeat)."""
    return count_tokens(text)


# ---------------------------------------------------------------- the adapter's fixed part


class Prompts:
    """The prompts of one built program's predictors as the run's adapter renders them.

    `call(name, **inputs)` is the most tokens a request of predictor `name` (as `named_predictors` names
    it) takes when each input field holds at most the given tokens; it must be given exactly the
    signature's input fields, so a field added to a signature fails every bound that does not count it.
    The fixed part (instructions, demos, field markers) is rendered once per predictor. The rendered
    text does not depend on the decoding mode (only the request's response_format does)."""

    def __init__(self, program: dspy.Module, decoding: str = "free") -> None:
        self.adapter = DecodingAdapter(decoding)
        self.predictors = dict(program.named_predictors())
        self._fixed: dict[str, int] = {}

    def fixed(self, name: str) -> int:
        if name not in self._fixed:
            predictor = self.predictors[name]
            empty = {field: "" for field in predictor.signature.input_fields}
            self._fixed[name] = chat_prompt_tokens(self.adapter.format(predictor.signature, predictor.demos, empty))
        return self._fixed[name]

    def call(self, name: str, **inputs: int) -> int:
        fields = set(self.predictors[name].signature.input_fields)
        if set(inputs) != fields:
            missing, extra = sorted(fields - set(inputs)), sorted(set(inputs) - fields)
            raise ValueError(f"the token bound of {name!r} does not match its signature: "
                             f"missing {missing}, unknown {extra}")
        return self.fixed(name) + sum(inputs.values()) + JOIN * len(inputs)


# ---------------------------------------------------------------- the turn loop's fixed texts


@dataclass(frozen=True)
class TurnTexts:
    """The fixed texts of a pool turn's `last_result` (eir_dspy/environment.py, eir_dspy/episode.py), in tokens."""

    note: int  # the longest budget note
    opening: int  # the first turn's result
    rejected: int  # "Turn N was rejected: <the longest rejection text>" (and the note where the turn is limited)
    read_extra: int  # what a read's result adds to the paragraph's own: the note, and `notes` (EIR's discard notice)

    def last_results(self, pool: PoolTokens, turns: int) -> list[int]:
        """The most each of `turns` turns' last result shows but for an echo of the output before it: the
        opening on turn 1; later, a read's result or a rejection. An episode reads each paragraph at most
        once, so the k-th largest read result goes with one turn each (the order of turns adds nothing)."""
        reads = pool.largest_reads(turns - 1)
        return [self.opening] + [self.result(reads[k] if k < len(reads) else 0) for k in range(turns - 1)]

    def result(self, read: int) -> int:
        """A turn's result in a trajectory (Reflexion's reflection) when it read a paragraph of `read` tokens
        (0: it read none), but for an echo."""
        return max(read + self.read_extra if read else 0, self.rejected, text_tokens("submitted"))


def longest_note(budget: int, turn_limit: int | None) -> int:
    """The most tokens budget_note (eir_dspy/environment.py) writes at read budget `budget`."""
    turns = turn_limit if turn_limit is not None else budget + 1
    notes = {budget_note(SimpleNamespace(turn_limit=turn_limit, reads_left=budget - reads), done)
             for reads in range(budget + 1) for done in range(-1, turns + 1)}
    return max(text_tokens(n) for n in notes)


def rejection_tokens(budget: int, turn_limit: int | None, extra: tuple[str, ...] = ()) -> int:
    """The longest text a rejected pool turn is given (its own part: not "Turn N was rejected: "), as the
    code writes it: the loop's budget rules, the pool's, a Direct-style submit's, an unusable output's
    explanation (its detail at most DETAIL_TOKENS), no action; `extra`: the policy's own."""
    turns = turn_limit if turn_limit is not None else budget + 1
    env = PoolEnvironment(())
    episode = Episode(question="", env=env, budget=budget, turn_limit=turn_limit)
    episode.turn, episode.reads = turns, budget
    texts = [NO_ACTION_TEXT, *extra]
    for action in (Action("read"), Action("search"), Action("submit", answer=""),
                   Action("submit", answer="x", citations=(("", 0),))):
        for problem in (action_problem(action, episode), env.problem(action, episode), submit_problem(action, episode)):
            if problem is not None:
                texts.append(problem.text)
    unusable = max(text_tokens(UnusableOutput("action", cause, "").explanation + " ()") for cause in UNUSABLE_CAUSES)
    return max(max(text_tokens(t) for t in texts), unusable + DETAIL_TOKENS)


@functools.cache
def turn_texts(budget: int, turn_limit: int | None, notes: tuple[str, ...] = (), rejections: tuple[str, ...] = ()) -> TurnTexts:
    """The fixed texts of a pool turn at read budget `budget`: a Direct-style turn (`turn_limit` = its
    turns: every result but a read's ends with the budget note) or EIR's (None). `notes`: what a policy
    may append to a read's result (a line each); `rejections`: its own rejection texts."""
    note = longest_note(budget, turn_limit)
    limited = turn_limit is not None
    turns = turn_limit if limited else budget + 1
    noted = (JOIN + note) if limited else 0  # `PoolEnvironment.last_result`: " " and the note
    opening = text_tokens(PoolEnvironment.opening) + noted
    rejected = text_tokens(f"Turn {turns} was rejected: ") + JOIN + rejection_tokens(budget, turn_limit, rejections) + noted
    read_extra = note + JOIN + sum(text_tokens("\n" + n) + JOIN for n in notes)
    return TurnTexts(note, opening, rejected, read_extra)
