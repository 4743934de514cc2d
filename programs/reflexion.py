"""Reflexion: up to `trials` Direct trajectories, each restarting from the question and titles.

Each turn is Direct's turn plus the reflections (the paper, B.3; programs.react.DirectPolicy):
the question, the reflections, the unread titles (corpus: the search results, and the two latest
paragraphs) and the last result. Nothing carries over between trials but the reflections written
after failed ones: no source text, no earlier trajectory. The reflection call alone sees the failed
trial whole (every thought, action and result). An external controller (the `oracle`, a yes/no on
an answer, built by the runner from the reference) stops at the first trial it accepts; the model
never sees the reference or a score. One run yields two results: the oracle-stopped answer, and
trial 1 alone (`variants[names.REFLEXION_FIRST]`, with the calls and seconds trial 1 used).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import dspy

from eir_dspy.acceptance import JSON_ONLY
from eir_dspy.accounting import calls_so_far, lm_call
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.episode import Episode, run_episode
from eir_dspy.paragraphs import Paragraph
from programs import names
from programs.method_program import MethodProgram
from programs.options import POSITIVE_INT, Options, option
from programs.react import DirectPolicy, episode_result, episode_trajectory
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import CORPUS, DEFAULT_BUDGET, POOL, most_turns, new_environment, turn_limit
from programs.token_bound import JOIN, PoolTokens, Prompts, TokenBound, echo, text_tokens, turn_texts
from programs.trajectory import render_action, render_trajectory
from programs.trajectory_record import Trajectory
from signatures import Reflect, ReflexionSearchTurn, ReflexionTurn
from signatures.schemas import grammar_config, reflect_schema

DEFAULT_TRIALS = 5  # most trials per question


@dataclass(frozen=True)
class ReflexionOptions(Options):
    trials: int = option(DEFAULT_TRIALS, kind=POSITIVE_INT, help=f"most trials per question (default {DEFAULT_TRIALS})")


def max_calls(budget: int, setting: str, options: ReflexionOptions) -> int:
    """At most `trials` Direct-style trajectories (each H turns in the pool, 12 in the corpus, one
    `action` call a turn) and one `reflect` call after each failed trial but the last. Its first-trial
    result is trial 1 of the same run: no extra calls."""
    return options.trials * most_turns(setting, budget, budget) + (options.trials - 1)


def max_tokens(budget: int, setting: str, options: ReflexionOptions, pool: PoolTokens, cap: int,
               prompts: Prompts) -> TokenBound:
    """`forward` below (the pool: programs/token_bound.py), every trial run:

    - trial i, turn k (`turn`): Direct's turn bound (question, unread titles, last result with the
      previous output's echo E = echo(cap) after turn 1) + the reflections: for i = 1 the placeholder,
      else one line per earlier trial, "Attempt r: " + the reflection (an output: E, or the unparsed text);
    - after each trial but the last, `reflect`: question + every title + the trajectory, per turn
      "Turn k / Thought / Action / Result": the thought and action (the turn's output, E), and the result,
      a read of a distinct paragraph (the H largest read results, each with its note) or a rejection
      (its longest text), and the output quoted in it (E).
    Completions: max_calls x cap."""
    turns = most_turns(setting, budget, budget)
    texts = turn_texts(budget, budget)
    last = texts.last_results(pool, turns)
    grow, question, titles = echo(cap), pool.question, pool.unread_titles
    unparsed = text_tokens(_UNPARSED)
    line = text_tokens(f"Attempt {options.trials}: ") + JOIN + max(grow, unparsed) + 1  # and its line break
    block = text_tokens(f"Turn {turns}\nThought: -\nAction: {render_action(None)}\nResult: ") + 4 * JOIN + 1
    reads = pool.largest_reads(turns)
    trajectory = sum(block + 2 * grow + texts.result(reads[k] if k < len(reads) else 0) for k in range(turns))
    prompt = 0
    for trial in range(1, options.trials + 1):
        reflections = text_tokens(render_reflections([])) if trial == 1 else (trial - 1) * line
        prompt += sum(prompts.call("turn", question=question, reflections=reflections, unread_titles=titles,
                                   last_result=last[k - 1] + (grow if k > 1 else 0)) for k in range(1, turns + 1))
        if trial < options.trials:
            prompt += prompts.call("reflect", question=question, titles=pool.known, trajectory=trajectory)
    return TokenBound(prompt, max_calls(budget, setting, options) * cap)


_UNPARSED = "(the reflection could not be parsed)"


def render_reflections(reflections: list[str]) -> str:
    if not reflections:
        return "(none: this is your first attempt)"
    return "\n".join(f"Attempt {i}: {r}" for i, r in enumerate(reflections, 1))


class Reflexion(MethodProgram):
    acceptance = JSON_ONLY  # the paper: Reflexion requires JSON only, its reflections too

    def __init__(self, budget: int = DEFAULT_BUDGET, trials: int = DEFAULT_TRIALS, context: RunContext | None = None) -> None:
        """`context`: the run's (programs/run_context.py)."""
        super().__init__(context)
        ReflexionOptions(trials)  # checked
        self.budget = budget
        self.trials = trials
        self.turn = dspy.Predict(ReflexionTurn)
        self.search_turn = dspy.Predict(ReflexionSearchTurn)
        self.reflect = dspy.Predict(Reflect)
        self.turns = {POOL: self.turn, CORPUS: self.search_turn}  # the turn each setting takes

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (), corpus: CorpusIndex | None = None,
                oracle: Callable[[str], bool] | None = None) -> MethodResult:
        if oracle is None:
            raise TypeError("Reflexion needs oracle=<callable(answer) -> bool> to decide when a trial succeeded")
        with dspy.context(adapter=self.adapter):  # every call, the reflections too, by Reflexion's rule
            return self._trials(question, paragraphs, corpus, oracle)

    def _trials(self, question: str, paragraphs: tuple[Paragraph, ...], corpus: CorpusIndex | None,
                oracle: Callable[[str], bool]) -> MethodResult:
        reflections: list[str] = []
        episodes: list[Episode] = []
        log: list[dict] = []
        first = None
        t0 = time.perf_counter()
        for trial in range(1, self.trials + 1):
            # A fresh environment per trial: no earlier text, and in the corpus no earlier search results.
            env = new_environment(paragraphs, corpus, futile_searches=self.context.futile_searches)
            policy = DirectPolicy(self.turns[env.setting], reflections=render_reflections(reflections),
                                  strict=self.context.strict)
            episode = run_episode(question, env, policy, self.budget, max_turns=turn_limit(corpus, self.budget))
            episodes.append(episode)
            result = episode_result(episode)
            matched = oracle(result["answer"])
            log.append({"trial": trial, "answer": result["answer"], "matched": matched, **episode_trajectory(episode)})
            if first is None:
                first = MethodResult(**result, calls=calls_so_far(), seconds=time.perf_counter() - t0,
                                     # trial 1 as it stood before any reflection was written after it
                                     trajectory=Trajectory(method=names.REFLEXION, trials=[dict(log[0])], stopped_at=1))
            if matched or trial == self.trials:
                break
            reflections.append(self._reflect(question, episode))
            log[-1]["reflection"] = reflections[-1]
        return MethodResult(**{**result, "episodes": episodes},
                            trajectory=Trajectory(method=names.REFLEXION, trials=log, stopped_at=len(episodes)),
                            variants={names.REFLEXION_FIRST: first})

    def _reflect(self, question: str, episode: Episode) -> str:
        config = grammar_config("reflect", reflect_schema, strict=self.context.strict)
        # The failed trial's paragraphs: its pool's titles, or what its searches found.
        out = lm_call("reflect", self.reflect, question=question, titles=episode.env.render_known(),
                      trajectory=render_trajectory(episode), config=config, on_unusable=None)
        return _UNPARSED if out is None else out.reflection.strip()
