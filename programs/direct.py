"""Direct (ReAct-style): one LM call per turn writes a thought and an action; no lists, no final call.

Each turn is the shared ReAct turn (programs/react.py): the question, what the environment offers
(the unread titles; corpus: the search results) and the last result, nothing of earlier turns. In
the corpus setting (B.3) the turn also writes what its action should establish, the result it
expects and how it will judge progress (output fields, kept in the turn's recorded reasoning), and
it sees the two paragraphs read most recently. Scored on the FIRST valid submit: the shared loop
stops there, so a later submit never happens. Pool: at most H turns in all, reads and the submit
included, and every result says how many are left (eir_dspy/environment.py). Corpus: 12 turns, at
most H reads. No valid submit scores 0. SSR proposes with this policy; Reflexion's trials add the
reflections.
"""

from __future__ import annotations

import dspy

from eir_dspy.acceptance import JSON_ONLY
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.episode import run_episode
from eir_dspy.paragraphs import Paragraph
from programs import names
from programs.method_program import MethodProgram
from programs.options import Options
from programs.react import DirectPolicy, episode_result, episode_trajectory
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import CORPUS, DEFAULT_BUDGET, POOL, most_turns, new_environment, turn_limit
from programs.token_bound import PoolTokens, Prompts, TokenBound, echo, turn_texts
from programs.trajectory_record import Trajectory
from signatures import DirectSearchTurn, DirectTurn


def max_calls(budget: int, setting: str, options: Options) -> int:
    """`forward` below: max_turns=turn_limit(corpus, H), so H turns in all in the pool (reads and the
    submit), 12 in the corpus; one `action` call per turn, no final call."""
    return most_turns(setting, budget, budget)


def max_tokens(budget: int, setting: str, options: Options, pool: PoolTokens, cap: int,
               prompts: Prompts) -> TokenBound:
    """`forward` below (the pool: programs/token_bound.py): H `action` calls
    (`turn`), each question + unread titles (all of them) + last result: the opening on turn 1, later
    the longer of a rejection and a read's result (each paragraph read once: the k-th largest on one
    turn each), each with the budget note, plus the previous output quoted (E = echo(cap): a read's
    requested title that matched none, a submit's unread citations). Nothing else of earlier turns is shown.
    Completions: H x cap."""
    turns = most_turns(setting, budget, budget)
    last = turn_texts(budget, budget).last_results(pool, turns)
    prompt = sum(prompts.call("turn", question=pool.question, unread_titles=pool.unread_titles,
                              last_result=last[k - 1] + (echo(cap) if k > 1 else 0))
                 for k in range(1, turns + 1))
    return TokenBound(prompt, max_calls(budget, setting, options) * cap)


class Direct(MethodProgram):
    acceptance = JSON_ONLY  # the paper: Direct requires JSON only (eir_dspy/acceptance.py)

    def __init__(self, budget: int = DEFAULT_BUDGET, context: RunContext | None = None) -> None:
        """`context`: the run's (programs/run_context.py)."""
        super().__init__(context)
        self.budget = budget
        self.turn = dspy.Predict(DirectTurn)
        self.search_turn = dspy.Predict(DirectSearchTurn)
        self.turns = {POOL: self.turn, CORPUS: self.search_turn}  # the turn each setting takes

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (),
                corpus: CorpusIndex | None = None) -> MethodResult:
        env = new_environment(paragraphs, corpus, futile_searches=self.context.futile_searches)
        policy = DirectPolicy(self.turns[env.setting], strict=self.context.strict)
        with dspy.context(adapter=self.adapter):  # every call by Direct's rule
            episode = run_episode(question, env, policy, self.budget, max_turns=turn_limit(corpus, self.budget))
        trajectory = Trajectory(method=names.DIRECT, **episode_trajectory(episode))
        return MethodResult(**episode_result(episode), trajectory=trajectory)
