"""Dependency repair (Appendix E.3): EIR whose conclusions name the conclusions they follow from.

When a turn's accepted update changes a conclusion's claim or status, every conclusion depending on
it (directly or through others, nearest first, at most MAX_REPAIRS_PER_TURN; not those the update
wrote itself) gets one `repair` call proposing its revision, validated all-or-nothing like a turn's
update; then one `refresh` call proposes requirement updates. Not on a turn that submits or is the
last: no later prompt would read the lists. `repair` applies what is valid; `repair-unapplied`
makes the same calls and discards everything, so the two differ only in whether repairs take
effect. Within a turn, which conclusions are repaired follows from the dependencies after the
turn's own update, never from what a repair returns, so on the same outputs both make the same
calls that turn; over an episode, applied repairs change later prompts and so later turns.
"""

from __future__ import annotations

import dspy

from eir_dspy.accounting import lm_call
from eir_dspy.episode import Episode, Proposal
from eir_dspy.state import DependentConclusionUpdate
from programs.eir_policy import EIRPolicy
from signatures.schemas import grammar_config, refresh_schema, repair_schema

MAX_REPAIRS_PER_TURN = 4  # a long chain of dependents costs at most this many repair calls per turn


class RepairingPolicy(EIRPolicy):
    def __init__(self, predict: dspy.Predict, repair: dspy.Predict, refresh: dspy.Predict, apply_repairs: bool,
                 invalid_updates: str = "discard", *, strict: bool) -> None:
        super().__init__(predict, invalid_updates=invalid_updates, strict=strict)
        self.repair, self.refresh, self.apply_repairs = repair, refresh, apply_repairs
        # Per episode: repair calls made, revisions valid (applied only under `repair`), invalid or
        # unusable ones, refresh calls, and refreshes whose requirement updates were valid.
        self.repairs = {"triggers": 0, "repair_calls": 0, "valid": 0, "invalid": 0, "refresh_calls": 0,
                        "refresh_valid": 0, "capped": 0}

    @property
    def dependency_ids(self) -> list[str]:
        return list(self.lists.conclusions)

    def commit(self, proposal: Proposal, episode: Episode) -> list[str]:
        before = self.lists.states()
        notes = super().commit(proposal, episode)
        if proposal.action.kind == "submit" or episode.on_last_turn:
            return notes  # no later turn reads the lists again: a repair could change nothing
        changed = self.lists.changed_since(before)
        # A conclusion this turn's update wrote itself was written against the changed one already.
        written = {u.id for u in proposal.payload[1] if u.id} | (set(self.lists.conclusions) - set(before))
        affected = [cid for cid in self.lists.dependents(changed) if cid not in written]
        if not affected:
            return notes
        self.repairs["triggers"] += 1
        self.repairs["capped"] += max(0, len(affected) - MAX_REPAIRS_PER_TURN)
        what_changed = "\n".join(f"{cid}: was [{before[cid][1]}] {before[cid][0]}; now "
                                 f"[{self.lists.conclusions[cid].status}] {self.lists.conclusions[cid].claim}"
                                 for cid in changed)
        for cid in affected[:MAX_REPAIRS_PER_TURN]:
            self._repair(cid, what_changed, episode)
        self._refresh(episode)
        return notes

    def _repair(self, cid: str, what_changed: str, episode: Episode) -> None:
        target = self.lists.conclusions[cid]
        others = [other for other in self.lists.conclusions if other != cid]
        read = list(episode.evidence.titles)
        self.repairs["repair_calls"] += 1
        out = lm_call("repair", self.repair, on_unusable=None,
                      question=episode.question, evidence=episode.evidence.render(),
                      conclusions=self.lists.render_conclusions(), changed=what_changed,
                      conclusion=self.lists.render_one(cid),
                      config=grammar_config("repair", lambda: repair_schema(read, others), strict=self.strict))
        if out is None:
            self.repairs["invalid"] += 1
            return
        r = out.revision
        update = DependentConclusionUpdate(id=target.id, claim=r.claim, status=r.status, citations=r.citations,
                                           **({"depends_on": r.depends_on} if "depends_on" in r.model_fields_set else {}))
        problems = self.lists.check([], [update], episode.evidence)
        self.repairs["invalid" if problems else "valid"] += 1
        if not problems and self.apply_repairs:
            self.lists.apply([], [update], episode.evidence)

    def _refresh(self, episode: Episode) -> None:
        self.repairs["refresh_calls"] += 1
        out = lm_call("refresh", self.refresh, on_unusable=None,
                      question=episode.question, requirements=self.lists.render_requirements(),
                      conclusions=self.lists.render_conclusions(),
                      config=grammar_config("refresh", refresh_schema, strict=self.strict))
        if out is None:
            return
        problems = self.lists.check(out.requirement_updates, [], episode.evidence)
        if not problems:
            self.repairs["refresh_valid"] += 1
            if self.apply_repairs:
                self.lists.apply(out.requirement_updates, [], episode.evidence)

    def record(self) -> dict:
        return {**super().record(), "repairs": dict(self.repairs)}
