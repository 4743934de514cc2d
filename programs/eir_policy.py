"""EIR's per-turn policy on the shared episode loop: one LM call updates the two lists and picks
the action. List updates are validated all-or-nothing against the evidence read before the turn
(a citation of a sentence not read, an unknown id, an entry that does not read as its model, e.g. a
sentence position written as a string). What an invalid update does to the turn is the paper's
per-setting rule (`invalid_updates`):

- `discard` (the pool setting, sections 3.2 and B.1): both lists stay as they were, the action runs,
  and the next result says what was discarded and why;
- `reject` (the corpus setting, H.1, H.4 and Table 22): the whole turn is rejected, its action
  included, the turn is used and the next prompt says why.
"""

from __future__ import annotations

import dspy

from eir_dspy.accounting import lm_call
from eir_dspy.episode import Action, Episode, Proposal
from eir_dspy.rejection import Rejection
from eir_dspy.state import DISCARD, INVALID_UPDATE_RULES, REJECT, AgentLists
from eir_dspy.turns import to_action
from programs.setting import CORPUS, POOL
from signatures.schemas import eir_search_turn_schema, eir_turn_schema, grammar_config

ABLATIONS = ("none", "no-list-feedback", "repair", "repair-unapplied")  # Appendix E.2 and E.3
HIDDEN_LISTS = "(not shown)"  # what the list-feedback control's prompts hold in place of the lists
# What the next result says of invalid list updates under each rule (followed by the problems, where lists are shown).
INVALID_UPDATES_TEXT = {
    REJECT: "your list updates are invalid, so nothing of this turn ran (its action included)",
    DISCARD: "your list updates were invalid and discarded: both lists are unchanged (the action ran)",
}


def _pool_turn_schema(episode: Episode, dependency_ids: list[str] | None) -> dict:
    return eir_turn_schema(list(episode.env.unread_titles), list(episode.evidence.titles), episode.reads_left,
                           dependency_ids)


def _corpus_turn_schema(episode: Episode, dependency_ids: list[str] | None) -> dict:
    return eir_search_turn_schema(episode.env.unread_ids, list(episode.evidence.titles), episode.reads_left,
                                  episode.on_last_turn, dependency_ids)


# The grammar of EIR's turn output in each setting (strict decoding): the list updates citing what
# was read, and the actions valid now (corpus: search too, and submit only on the last turn).
TURN_SCHEMAS = {POOL: _pool_turn_schema, CORPUS: _corpus_turn_schema}


class EIRPolicy:
    """EIR's turn. `show_lists=False` is the list-feedback control (E.2): the updates are proposed,
    validated and kept (or discarded, or rejecting the turn) exactly as in EIR, but no later prompt
    shows the lists or what was wrong with them: the next result says only that they were invalid.
    `strict`: the program decodes under strict grammars (its run context, programs/run_context.py)."""

    def __init__(self, predict: dspy.Predict, show_lists: bool = True, invalid_updates: str = DISCARD, *,
                 strict: bool) -> None:
        if invalid_updates not in INVALID_UPDATE_RULES:
            raise ValueError(f"invalid_updates must be one of {', '.join(INVALID_UPDATE_RULES)}; got {invalid_updates!r}")
        self.predict = predict
        self.strict = strict
        self.show_lists = show_lists
        self.invalid_updates_rule = invalid_updates
        self.lists = AgentLists()
        # Turns whose non-empty list updates were applied / invalid (discarded, or rejecting the turn).
        self.updates = {"applied": 0, "discarded": 0}

    @property
    def dependency_ids(self) -> list[str] | None:
        """The ids a conclusion update may depend on; None where conclusions name no dependencies."""
        return None

    def propose(self, episode: Episode) -> Proposal:
        schema = TURN_SCHEMAS[episode.env.setting]
        out = lm_call(
            "action", self.predict,  # the same role name as every method's per-turn call
            question=episode.question,
            **episode.env.catalogue(),  # what the agent can act on: the unread titles, or the search results
            # The control's first prompt is EIR's (the lists are empty, nothing is fed back yet).
            requirements=self.lists.render_requirements() if self.shows_lists(episode) else HIDDEN_LISTS,
            conclusions=self.lists.render_conclusions() if self.shows_lists(episode) else HIDDEN_LISTS,
            last_result=episode.last_feedback,
            config=grammar_config("eir_turn", lambda: schema(episode, self.dependency_ids), strict=self.strict),
        )
        payload = (out.requirement_updates, out.conclusion_updates)
        problem = self.invalid_updates(payload, episode)
        if problem is None:
            return Proposal(to_action(out.action), payload=payload)
        if self.invalid_updates_rule == REJECT:
            return Proposal(to_action(out.action), payload=payload, invalid=problem)
        return Proposal(to_action(out.action), payload=([], []), discarded=problem)

    def invalid_updates(self, payload, episode: Episode) -> Rejection | None:
        """What is wrong with the turn's list updates, as the next result says it, or None. Citations
        are checked against the evidence read BEFORE this turn's action; the first problem's cause
        is the turn's cause."""
        problems = self.lists.check(*payload, episode.evidence)
        if not problems:
            return None
        self.updates["discarded"] += 1
        text = INVALID_UPDATES_TEXT[self.invalid_updates_rule]
        if self.show_lists:
            text += ": " + "; ".join(p.text for p in problems)
        return Rejection(problems[0].cause, text)

    def shows_lists(self, episode: Episode) -> bool:
        return self.show_lists or episode.turn == 1

    def check(self, action: Action, episode: Episode) -> Rejection | None:
        return None  # EIR's answer comes from the final call, so any submit is acceptable

    def commit(self, proposal: Proposal, episode: Episode) -> list[str]:
        # Only an accepted turn gets here: its updates passed invalid_updates against the same
        # evidence, or were discarded (the payload is then empty and the notice goes in the result).
        requirement_updates, conclusion_updates = proposal.payload
        problems = self.lists.apply(requirement_updates, conclusion_updates, episode.evidence)
        assert not problems, problems
        if requirement_updates or conclusion_updates:
            self.updates["applied"] += 1
        return [proposal.discarded.text[0].upper() + proposal.discarded.text[1:] + "."] if proposal.discarded else []

    def record(self) -> dict:
        """What the trajectory keeps of this policy's own state."""
        return {**self.lists.snapshot(), "list_updates": dict(self.updates)}
