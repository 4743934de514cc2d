"""The ReAct-style trajectory text SSR and Reflexion show the model: thought, action, result.

Direct sees none of it (only EIR's inputs minus the lists); it shares the grammar helpers below."""

from __future__ import annotations

from eir_dspy.episode import Action, Episode


def render_action(action: dict | Action | None) -> str:
    if action is None:
        return "(no valid action could be read from the output)"
    if isinstance(action, Action):
        action = {"kind": action.kind, "title": action.title, "answer": action.answer, "citations": action.citations,
                  "query": action.query, "paragraph_id": action.paragraph_id}
    if action["kind"] == "search":
        return f"search {action['query']!r}"
    if action["kind"] == "read" and action.get("paragraph_id"):
        return f"read {action['paragraph_id']}"
    if action["kind"] == "read":
        return f"read {action['title']!r}"
    cites = ", ".join(f"({t!r}, {i})" for t, i in action.get("citations") or ())
    return f"submit {action['answer']!r}" + (f" citing {cites}" if cites else "")


def render_trajectory(episode: Episode, with_status: bool = True) -> str:
    """Every earlier turn in order, then (optionally) where the agent stands now.

    The turns only ever grow at the end, so consecutive prompts share their prefix and the
    local engine's state cache evaluates only the new turn. In the corpus setting a read shows
    only its one-line brief: the prompt carries the two latest paragraphs separately.
    """
    compact = episode.env.setting == "corpus"
    blocks = [
        f"Turn {t.turn}\nThought: {t.reasoning or '-'}\nAction: {render_action(t.action)}\n"
        f"Result: {t.brief if compact and t.brief else t.feedback}"
        for t in episode.turns
    ]
    if with_status:
        blocks.append(status_line(episode))
    return "\n\n".join(blocks) if blocks else "(nothing yet)"


def status_line(episode: Episode) -> str:
    turn = episode.turn
    line = f"Now turn {turn} of {episode.max_turns}; {episode.reads_left} reads left."
    if episode.env.setting == "corpus":
        # Searching stays possible without reads left; only the last turn forces a submission.
        if episode.on_last_turn:
            line += " This is the last turn: you must submit your answer now."
        return line
    if episode.on_last_turn or episode.reads_left <= 0 or not episode.env.has_unread:
        line += " You must submit your answer now."
    return line


def recent_paragraphs(episode: Episode, n: int = 2) -> str:
    """The `n` paragraphs read most recently, sentence by sentence."""
    return episode.evidence.render(last=n) if len(episode.evidence) else "(none read yet)"


def read_paragraphs(episode: Episode) -> list[tuple[str, int]]:
    """(title, sentence count) of every paragraph read, for citation grammars."""
    counts: dict[str, int] = {}
    for r in episode.evidence.records:
        counts[r.title] = counts.get(r.title, 0) + 1
    return list(counts.items())


def can_read(episode: Episode) -> bool:
    return not episode.on_last_turn and episode.reads_left > 0 and episode.env.has_unread
