"""Agentic SSR (Socratic Self-Refine adapted to action selection).

Each turn: propose an action with Direct's turn (the same inputs: the paper, B.3); decompose the
proposal into three steps (facts, justification, action); get `votes` verifier judgments per step at
`verifier_temperature`; refine at most one qualifying step (see programs.ssr_voting) in ONE call.
Verification always runs, so a turn costs 2 + 3 x votes calls, plus one when a step is refined.

What the three added calls see (a choice: D.1 does not say; `SSR.seen`): the question and the
sentences read in this trial, grouped by paragraph; verify and refine also see what can be acted on
now (the unread titles, or in the corpus the search results) and the turns left (`turns_left`: in
the pool the text Direct's turn gets), as they may name a new action. No earlier thought or action:
the proposal (its thought and action) is the only reasoning shown.

D.1 asks for a valid action, so a refinement or an agreed correction is used only when it could run
now (`SSRPolicy._usable`, with the loop's own rules): on the last turn, which accepts only a submit
(eir_dspy/episode.py `action_problem`), neither can turn the proposal into a read or a search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import dspy

from eir_dspy.acceptance import JSON_ONLY
from eir_dspy.accounting import lm_call
from eir_dspy.answer_text import normalize_answer
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.environment import budget_note
from eir_dspy.episode import Action, Episode, Proposal, action_problem, run_episode
from eir_dspy.paragraphs import Paragraph
from eir_dspy.turns import to_action
from programs import names
from programs.method_program import MethodProgram
from programs.options import NUMBER, POSITIVE_INT, Options, option
from programs.react import DirectPolicy, action_config, episode_result, episode_trajectory, submit_problem
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import CORPUS, DEFAULT_BUDGET, POOL, most_turns, new_environment, turn_limit
from programs.ssr_voting import Judgment, StepVote, step_to_refine
from programs.token_bound import JOIN, PoolTokens, Prompts, TokenBound, echo, longest_note, text_tokens, turn_texts
from programs.trajectory import render_action
from programs.trajectory_record import Trajectory
from signatures import DecomposeProposal, DirectSearchTurn, DirectTurn, RefineSearchStep, RefineStep, VerifySearchStep, VerifyStep
from signatures.schemas import decompose_schema, grammar_config, verify_schema
from signatures.ssr import STEPS

DEFAULT_VOTES = 3  # verifier judgments per step
# The verifier's temperature where none is given: 0.7 in the pool (D.1), greedy in the corpus setting (H.2).
VERIFIER_TEMPERATURE = {POOL: 0.7, CORPUS: 0.0}


@dataclass(frozen=True)
class SSROptions(Options):
    VARIANT_ORDER = ("votes",)  # `ssr votes=3 T=0.7`
    # None: VERIFIER_TEMPERATURE of the setting (`resolved`).
    verifier_temperature: float | None = option(
        None, kind=NUMBER, short="T", help="temperature of the verifier votes (default 0.7 in the pool, 0.0 in the corpus)")
    votes: int = option(DEFAULT_VOTES, kind=POSITIVE_INT, help=f"verifier judgments per step (default {DEFAULT_VOTES})")

    def resolved(self, setting: str) -> SSROptions:
        if self.verifier_temperature is not None:
            return self
        return replace(self, verifier_temperature=VERIFIER_TEMPERATURE[setting])


def max_calls(budget: int, setting: str, options: SSROptions) -> int:
    """SSRPolicy.propose, per turn: the `action` proposal, one `decompose`, `votes` `verify` calls for
    each of the len(STEPS) = 3 steps (verification always runs), and at most one `refine`
    (programs/ssr_voting.step_to_refine picks at most one step); the agreed-correction fallback makes
    no call. Turns as Direct's: H in the pool, 12 in the corpus."""
    return most_turns(setting, budget, budget) * (1 + 1 + len(STEPS) * options.votes + 1)


def max_tokens(budget: int, setting: str, options: SSROptions, pool: PoolTokens, cap: int,
               prompts: Prompts) -> TokenBound:
    """SSRPolicy.propose on each of the H turns (the pool: programs/token_bound.py).
    With E = echo(cap) (an earlier output shown again) and EV = the evidence of the k - 1 largest
    paragraphs (turn k has read at most k - 1):

    - `action` (`turn`, Direct's): question + unread titles + last result, as Direct's bound, whose echo
      (after turn 1) is the output whose action ran: the proposal, the refinement or a verifier's correction;
    - `decompose`: question + EV + the proposal ("Thought: ...\nAction: ...": its fixed words + E);
    - votes x 3 `verify`: question + EV + unread titles + turns left (the longest budget note) + the steps
      (the decomposition's three fields, fixed words + E) + the step's name;
    - one `refine`: the same + the agreed correction (a verifier's output, E).
    Completions: max_calls x cap."""
    turns = most_turns(setting, budget, budget)
    last = turn_texts(budget, budget).last_results(pool, turns)
    grow, question, titles = echo(cap), pool.question, pool.unread_titles
    forms = (None, Action("read"), Action("submit", citations=(("", 0),)))
    proposal = max(text_tokens(f"Thought: -\nAction: {render_action(a)}") for a in forms) + 2 * JOIN + grow
    steps = text_tokens("\n".join(f"{name}: " for name in STEPS)) + len(STEPS) * JOIN + grow
    step = max(text_tokens(name) for name in STEPS)
    left = longest_note(budget, budget)
    prompt = 0
    for k in range(1, turns + 1):
        evidence = pool.evidence(k - 1)
        prompt += prompts.call("turn", question=question, unread_titles=titles, last_result=last[k - 1] + (grow if k > 1 else 0))
        prompt += prompts.call("decompose", question=question, evidence=evidence, proposal=proposal)
        prompt += options.votes * len(STEPS) * prompts.call(
            "verify", question=question, evidence=evidence, unread_titles=titles, turns_left=left, steps=steps, step=step)
        prompt += prompts.call("refine", question=question, evidence=evidence, unread_titles=titles, turns_left=left,
                               steps=steps, step=step, correction=grow)
    return TokenBound(prompt, max_calls(budget, setting, options) * cap)


def turns_left(episode: Episode) -> str:
    """What verify and refine are told of the budget on this turn, e.g. `(1 turn left, the last: only a
    submit counts on it)`: in the pool the note Direct's turn gets with its last result; in the corpus
    the same note of its 12 turns (Direct's corpus turn is told only its reads left)."""
    return budget_note(episode, episode.turn - 1)


_ACTION = re.compile(r"^\s*(search|read|submit)\b\s*:?\s*(.*?)\s*$", re.IGNORECASE | re.DOTALL)


def parse_action_correction(text: str, episode: Episode) -> Action | None:
    """Pool: `read: <title>` (an unread title) or `submit: <answer>`. Corpus: also `search: <keywords>`,
    and `read: <paragraph id>` (an id found this trial). Anything else is unusable."""
    m = _ACTION.match(text or "")
    if not m:
        return None
    kind, rest = m.group(1).lower(), m.group(2).strip().strip("\"'")
    if not rest or kind not in episode.env.action_kinds:
        return None
    if kind == "search":
        return Action("search", query=rest)
    if kind == "read":
        return episode.env.read_named(rest)
    return Action("submit", answer=rest)


def correction_key(step: str, correction: str, episode: Episode):
    if step == "action":
        action = parse_action_correction(correction, episode)
        if action is None:
            return None
        if action.kind == "search":
            return ("search", episode.env.search_key(action.query))  # the same hits: the same correction
        if action.kind == "read":
            return ("read", action.paragraph_id or action.title)
        return ("submit", normalize_answer(action.answer))
    return normalize_answer(correction) or None


@dataclass(frozen=True)
class SSRCalls:
    """SSR's four decisions in one setting (the corpus's search actions, and its search results in
    place of the unread titles; decomposing a proposal is the same in both)."""

    turn: dspy.Predict  # Direct's own turn: the proposal
    decompose: dspy.Predict
    verify: dspy.Predict
    refine: dspy.Predict


class SSRPolicy(DirectPolicy):
    def __init__(self, program: SSR, calls: SSRCalls) -> None:
        super().__init__(calls.turn, strict=program.context.strict)
        self.program = program
        self.calls = calls
        self.log: list[dict] = []

    def propose(self, episode: Episode) -> Proposal:
        proposal = super().propose(episode)  # role "action"; an unusable proposal rejects the turn here
        entry = {"turn": episode.turn, "proposed": render_action(proposal.action), "executed": "proposal"}
        self.log.append(entry)
        seen = self.program.seen(episode)
        steps = self._decompose(episode, seen, proposal)
        if steps is None:
            entry["executed"] = "proposal (the decomposition could not be parsed, nothing to verify)"
            return proposal
        steps_text = "\n".join(f"{name}: {getattr(steps, name).strip()}" for name in STEPS)
        entry["steps"] = steps_text
        votes = [StepVote(name, tuple(self._judge(episode, seen, steps_text, name, i)
                                      for i in range(self.program.votes))) for name in STEPS]
        entry["votes"] = [v.summary() for v in votes]
        chosen = step_to_refine(votes)
        if chosen is None:
            return proposal
        entry["refined_step"] = chosen.step
        refined = self._refine(episode, seen, steps_text, chosen)
        if refined is not None and self._usable(refined.action, episode):
            entry["executed"] = "refined"
            return refined
        agreed = votes[STEPS.index("action")].agreed
        fallback = parse_action_correction(agreed.correction, episode) if agreed else None
        if fallback is not None and self._usable(fallback, episode):
            entry["executed"] = "agreed correction of the action step"
            return Proposal(fallback, reasoning=proposal.reasoning)
        entry["executed"] = "proposal (refinement gave no valid action)"
        return proposal

    def _usable(self, action: Action, episode: Episode) -> bool:
        return (episode.env.runs_as_written(action, episode) and action_problem(action, episode) is None
                and submit_problem(action, episode) is None)

    def _decompose(self, episode: Episode, seen: dict, proposal: Proposal):
        text = f"Thought: {proposal.reasoning or '-'}\nAction: {render_action(proposal.action)}"
        return lm_call("decompose", self.calls.decompose, question=episode.question, **seen,
                       proposal=text, config=grammar_config("decompose", decompose_schema, strict=self.strict),
                       on_unusable=None)

    def _judge(self, episode: Episode, seen: dict, steps_text: str, step: str, vote: int) -> Judgment:
        config = {"temperature": self.program.verifier_temperature,
                  **grammar_config("verify", verify_schema, strict=self.strict)}
        if self.program.verifier_temperature > 0:
            # Distinct rollout ids (and seeds) make the votes independent samples, not one cached answer.
            config.update(rollout_id=vote, seed=vote)
        out = lm_call("verify", self.calls.verify, question=episode.question, **seen, **episode.env.catalogue(),
                      turns_left=turns_left(episode), steps=steps_text, step=step, config=config, on_unusable=None)
        if out is None:  # an unreadable judgment does not vote
            return Judgment(None)
        correction = out.correction.strip()
        key = correction_key(step, correction, episode) if out.verdict == "reject" else None
        return Judgment(out.verdict, float(out.confidence), correction, key)

    def _refine(self, episode: Episode, seen: dict, steps_text: str, chosen: StepVote) -> Proposal | None:
        out = lm_call("refine", self.calls.refine, question=episode.question, **seen, **episode.env.catalogue(),
                      turns_left=turns_left(episode), steps=steps_text, step=chosen.step,
                      correction=chosen.agreed.correction,
                      config=action_config("refine", episode, plan=False, strict=self.strict), on_unusable=None)
        if out is None:
            return None
        return Proposal(to_action(out.action), reasoning=out.thought.strip())


class SSR(MethodProgram):
    acceptance = JSON_ONLY  # the paper is silent; SSR proposes as Direct does, so all its calls are JSON only

    def __init__(self, budget: int = DEFAULT_BUDGET, verifier_temperature: float = VERIFIER_TEMPERATURE[POOL],
                 votes: int = DEFAULT_VOTES, context: RunContext | None = None) -> None:
        """`context`: the run's (programs/run_context.py)."""
        super().__init__(context)
        SSROptions(verifier_temperature, votes)  # checked
        self.budget = budget
        self.verifier_temperature = verifier_temperature
        self.votes = votes
        self.turn = dspy.Predict(DirectTurn)  # Direct's own turn
        self.decompose = dspy.Predict(DecomposeProposal)  # both settings
        self.verify = dspy.Predict(VerifyStep)
        self.refine = dspy.Predict(RefineStep)
        # The corpus setting's variants (search actions; the search results in place of the unread titles).
        self.search_turn = dspy.Predict(DirectSearchTurn)
        self.search_verify = dspy.Predict(VerifySearchStep)
        self.search_refine = dspy.Predict(RefineSearchStep)
        # The calls each setting makes, picked once here (the attributes keep the names saved programs use).
        self.calls = {POOL: SSRCalls(self.turn, self.decompose, self.verify, self.refine),
                      CORPUS: SSRCalls(self.search_turn, self.decompose, self.search_verify, self.search_refine)}

    @staticmethod
    def seen(episode: Episode) -> dict:
        """What decompose, verify and refine see of the episode besides the question and the steps:
        the sentences read in this trial (verify and refine also get the environment view)."""
        return {"evidence": episode.evidence.render()}

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (),
                corpus: CorpusIndex | None = None) -> MethodResult:
        env = new_environment(paragraphs, corpus, futile_searches=self.context.futile_searches)
        policy = SSRPolicy(self, self.calls[env.setting])
        with dspy.context(adapter=self.adapter):  # every call, the verifiers' too, by SSR's rule
            episode = run_episode(question, env, policy, self.budget, max_turns=turn_limit(corpus, self.budget))
        return MethodResult(**episode_result(episode),
                            trajectory=Trajectory(method=names.SSR, **episode_trajectory(episode), ssr=policy.log))
