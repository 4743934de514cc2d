"""EIR: one LM call per turn updates requirements and conclusions and picks the next action
(programs/eir_policy.py, on the shared loop eir_dspy/episode.py); a separate final call answers
from the question and the evidence sentences alone (AnswerFromEvidence)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import dspy

from eir_dspy.acceptance import EXTRACT
from eir_dspy.accounting import lm_call
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.episode import run_episode
from eir_dspy.paragraphs import Paragraph
from eir_dspy.state import DISCARD, INVALID_UPDATE_RULES, AgentLists, paper_invalid_updates
from programs import names
from programs.eir_policy import ABLATIONS, HIDDEN_LISTS, INVALID_UPDATES_TEXT, EIRPolicy
from programs.eir_repair import MAX_REPAIRS_PER_TURN, RepairingPolicy
from programs.method_program import MethodProgram
from programs.options import BARE, UNLESS_DEFAULT, Options, option
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import CORPUS, DEFAULT_BUDGET, POOL, most_turns, new_environment, turn_limit
from programs.token_bound import PoolTokens, Prompts, TokenBound, echo, text_tokens, turn_texts
from programs.trajectory_record import Trajectory
from signatures import EIRSearchTurn, EIRTurn, FinalAnswer
from signatures.repair import EIRDependentSearchTurn, EIRDependentTurn, RefreshRequirements, RepairConclusion
from signatures.schemas import final_answer_schema, grammar_config


class AnswerFromEvidence(dspy.Module):
    """The final answer call, shared with Full Pool and the recovery experiments.

    Its only inputs are the question and evidence sentences. This is the boundary of EIR:
    nothing from the trajectory (lists, submitted answer, reasoning) can be passed in.

    A nested module: `context` is the program's that holds it (its strict grammar follows it), and
    its call runs under that program's adapter, so it accepts by that method's rule."""

    def __init__(self, context: RunContext | None = None) -> None:
        super().__init__()
        self.context = context if context is not None else RunContext()
        self.predict = dspy.Predict(FinalAnswer)

    def forward(self, question: str, evidence: str, titles: list[str]) -> dspy.Prediction:
        """`evidence` is rendered sentences; `titles` the paragraphs they come from (for decoding only)."""
        config = grammar_config("final_answer", lambda: final_answer_schema(titles), strict=self.context.strict)
        out = lm_call("final", self.predict, question=question, evidence=evidence, config=config, on_unusable=None)
        if out is None:  # an answer that cannot be read scores as no answer
            return dspy.Prediction(answer="", citations=[], parsed=False)
        citations = [(c.title, c.sentence) for c in out.citations]
        return dspy.Prediction(answer=out.answer.strip(), citations=citations, parsed=True)


@dataclass(frozen=True)
class EIROptions(Options):
    ablation: str = option(
        "none", choices=ABLATIONS, variant=BARE,
        help="no-list-feedback (the lists are kept but never shown again, E.2); repair / repair-unapplied "
             "(dependency repair with its changes applied / discarded, E.3). docs/methods.md: Ablations")
    # None: the paper's rule for the setting (`resolved`).
    invalid_updates: str | None = option(
        None, choices=INVALID_UPDATE_RULES, variant=UNLESS_DEFAULT, shapes_program=False,
        help="what invalid list updates do to their turn: discard (lists unchanged, the action runs; the paper's "
             "pool rule, 3.2/B.1) or reject (the turn, action included; the corpus rule, H.1). Default: the paper's "
             "rule for --setting. docs/methods.md: Fidelity")

    def resolved(self, setting: str) -> EIROptions:
        return replace(self, invalid_updates=self.invalid_updates or paper_invalid_updates(setting))


def max_calls(budget: int, setting: str, options: EIROptions) -> int:
    """`forward` below: H + 1 turns in the pool (12 in the corpus: turn_limit(corpus, None)), one
    `action` call each (EIRPolicy.propose), then ALWAYS one `final` call (AnswerFromEvidence), also
    after a forced end. The repair ablations (programs/eir_repair.py RepairingPolicy.commit): after a
    turn's update, at most MAX_REPAIRS_PER_TURN `repair` calls plus one `refresh` call, on every turn
    but a submitting one and the last, and none before turn FIRST_REPAIR_TURN; `repair-unapplied` makes
    the same calls."""
    turns = most_turns(setting, budget, None)
    calls = turns + 1
    if options.ablation.startswith("repair"):
        calls += repair_turns(turns) * (MAX_REPAIRS_PER_TURN + 1)
    return calls


# The first turn a repair can follow. A conclusion may depend only on conclusions that existed before
# the update naming them (AgentLists.check), so no conclusion has a dependency before turn 2, and on
# turn 2 every one that has was written by that turn's own update, which is never repaired.
FIRST_REPAIR_TURN = 3


def repair_turns(turns: int) -> int:
    """The turns of a `turns`-turn episode that repairs can follow: FIRST_REPAIR_TURN to the one before the last."""
    return max(0, turns - FIRST_REPAIR_TURN)


def max_tokens(budget: int, setting: str, options: EIROptions, pool: PoolTokens, cap: int,
               prompts: Prompts) -> TokenBound:
    """`forward` below, call by call (the pool: programs/token_bound.py). With
    T = H + 1 turns, E = echo(cap) = RERENDER x cap, P = the two lists' empty placeholders:

    - turn k (`turn`): question + unread titles (all of them) + last result (turn 1: the opening; later
      the longer of a rejection and a read's result with the note and the discarded-updates notice, each
      paragraph read once: the k-th largest on one turn each)
      + the lists, P + E x W where W is the outputs written before (every earlier turn's, and under the
      repair ablations every earlier repair's and refresh's: each may add entries). An output's echo in
      the next result (a read's requested title, the problems of discarded updates) is covered by the
      same E: an output either writes the lists (shown in every later turn) or is quoted (in the next
      one only), never more than its cap tokens of both.
      `no-list-feedback`: turn 1 shows the empty lists, later turns "(not shown)" each and no problems,
      so its growth is only the next result's echo, E on every turn after the first;
    - repair ablations, after turns FIRST_REPAIR_TURN to T - 1 (a submitting turn makes none): MAX_REPAIRS_PER_TURN
      `repair` calls (question, evidence of the turn's k - 1 reads, the conclusions (the lists' bound),
      what changed (its claims before: within the lists' bound; now: written by this turn's output, E),
      the one conclusion (its claim and citations from one output, its depends_on perhaps from another:
      2E)) and one `refresh` (question, both lists); under `repair` each such output counts into W
      (`repair-unapplied` applies none of them, so only the turns' outputs do);
    - the `final` call (`answer.predict`): question + the evidence of min(H, pool) paragraphs (the largest).
    Completions: max_calls x cap."""
    turns = most_turns(setting, budget, None)
    rule = options.invalid_updates or paper_invalid_updates(setting)
    notice = INVALID_UPDATES_TEXT[DISCARD] + ": ." if rule == DISCARD else ""
    rejections = (INVALID_UPDATES_TEXT[rule],) if rule != DISCARD else ()
    last = turn_texts(budget, None, (notice,) if notice else (), rejections).last_results(pool, turns)
    grow, question, titles = echo(cap), pool.question, pool.unread_titles
    empty = AgentLists()
    placeholders = {"requirements": text_tokens(empty.render_requirements()),
                    "conclusions": text_tokens(empty.render_conclusions())}
    # One conclusion (render_one): its claim and citations from the output that wrote it, its depends_on
    # perhaps from an earlier one (a revision that leaves it out keeps it).
    one = text_tokens("C999 [supported]  (no citations) depends on ") + 2 * grow
    hidden = options.ablation == "no-list-feedback"
    repairs = options.ablation.startswith("repair")
    applied = options.ablation == "repair"  # repair-unapplied discards every repair and refresh
    prompt, written = 0, 0
    for k in range(1, turns + 1):
        if hidden and k > 1:
            lists = {name: text_tokens(HIDDEN_LISTS) for name in placeholders}
            shown = last[k - 1] + grow  # the requested title of a read that fell back; no list, no problem
        else:
            lists = {**placeholders, "requirements": placeholders["requirements"] + grow * written}
            shown = last[k - 1]
        prompt += prompts.call("turn", question=question, **lists, unread_titles=titles, last_result=shown)
        written += 1
        if repairs and FIRST_REPAIR_TURN <= k < turns:
            changed = sum(placeholders.values()) + grow * written + grow  # before (the lists) and now (this turn's)
            for _ in range(MAX_REPAIRS_PER_TURN):
                conclusions = sum(placeholders.values()) + grow * written
                prompt += prompts.call("repair", question=question, evidence=pool.evidence(k - 1),
                                       conclusions=conclusions, changed=changed, conclusion=one)
                written += applied
            prompt += prompts.call("refresh", question=question,
                                   requirements=placeholders["requirements"] + grow * written,
                                   conclusions=placeholders["conclusions"])
            written += applied
    prompt += prompts.call("answer.predict", question=question, evidence=pool.evidence(budget))
    return TokenBound(prompt, max_calls(budget, setting, options) * cap)


class EIR(MethodProgram):
    acceptance = EXTRACT  # the paper: EIR can extract its action from surrounding prose

    def __init__(self, budget: int = DEFAULT_BUDGET, ablation: str = "none", invalid_updates: str | None = None,
                 context: RunContext | None = None) -> None:
        """The options: EIROptions (None for `invalid_updates` takes the paper's rule for the setting
        each question runs in). `context`: the run's (programs/run_context.py)."""
        super().__init__(context)
        EIROptions(ablation, invalid_updates)  # checked
        self.budget = budget
        self.ablation = ablation
        self.invalid_updates = invalid_updates
        repairs = ablation.startswith("repair")
        self.turn = dspy.Predict(EIRDependentTurn if repairs else EIRTurn)
        self.search_turn = dspy.Predict(EIRDependentSearchTurn if repairs else EIRSearchTurn)
        if repairs:
            self.repair = dspy.Predict(RepairConclusion)
            self.refresh = dspy.Predict(RefreshRequirements)
        self.answer = AnswerFromEvidence(self.context)
        self.turns = {POOL: self.turn, CORPUS: self.search_turn}  # the turn each setting takes

    def policy(self, setting: str) -> EIRPolicy:
        """A fresh policy (empty lists) for one episode in `setting`."""
        turn = self.turns[setting]
        rule = self.invalid_updates or paper_invalid_updates(setting)
        if self.ablation.startswith("repair"):
            return RepairingPolicy(turn, self.repair, self.refresh, apply_repairs=self.ablation == "repair",
                                   invalid_updates=rule, strict=self.context.strict)
        return EIRPolicy(turn, show_lists=self.ablation != "no-list-feedback", invalid_updates=rule,
                         strict=self.context.strict)

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (),
                corpus: CorpusIndex | None = None) -> MethodResult:
        env = new_environment(paragraphs, corpus, futile_searches=self.context.futile_searches)
        policy = self.policy(env.setting)
        with dspy.context(adapter=self.adapter):  # every call, the final one too, by EIR's rule
            # Pool: H reads plus one more decision. Corpus: 12 turns; if none submits, EIR still answers.
            episode = run_episode(question, env, policy, self.budget, max_turns=turn_limit(corpus, None))
            # The boundary: only the question and the evidence sentences cross into the final call.
            final = self.answer(question=question, evidence=episode.evidence.render(),
                                titles=list(episode.evidence.titles))
        return MethodResult(
            answer=final.answer,
            citations=final.citations,
            episodes=[episode],
            evidence=episode.evidence,  # what the final call was shown
            trajectory=Trajectory(method=names.EIR, turns=[t.__dict__ for t in episode.turns], **policy.record(),
                                  submitted=episode.submitted.answer if episode.submitted else None,
                                  forced_end=episode.forced_end, final_parsed=final.parsed),
        )

