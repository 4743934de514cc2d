"""Text helpers over a Direct-style episode: actions and a trajectory as text, the paragraphs read.

No action prompt shows a trajectory (Direct, SSR's proposal and Reflexion's trials see Direct's
inputs: the paper, B.3). The trajectory text is for Reflexion's reflection call, which writes about
a failed trial; SSR writes its proposals with `render_action`. The rest feeds Direct's corpus prompt
and the strict grammars."""

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


def render_trajectory(episode: Episode) -> str:
    """Every turn of a finished trial in order: thought, action, result (Reflexion's reflection input).

    Where the environment says so (the corpus: paragraphs can be long) a read shows only its one-line brief."""
    compact = episode.env.compact_trajectory
    blocks = [
        f"Turn {t.turn}\nThought: {t.reasoning or '-'}\nAction: {render_action(t.action)}\n"
        f"Result: {t.brief if compact and t.brief else t.feedback}"
        for t in episode.turns
    ]
    return "\n\n".join(blocks) if blocks else "(nothing yet)"


def recent_paragraphs(episode: Episode, n: int = 2) -> str:
    """The `n` paragraphs read most recently (a re-read counts as a read), older first, sentence by sentence."""
    titles: list[str] = []
    for t in reversed(episode.turns):
        if len(titles) == n:
            break
        if t.accepted and t.read_title and t.read_title not in titles:
            titles.append(t.read_title)
    return episode.evidence.render(titles[::-1]) if titles else "(none read yet)"


def read_paragraphs(episode: Episode) -> list[tuple[str, int]]:
    """(title, sentence count) of every paragraph read, for citation grammars."""
    counts: dict[str, int] = {}
    for r in episode.evidence.records:
        counts[r.title] = counts.get(r.title, 0) + 1
    return list(counts.items())


def can_read(episode: Episode) -> bool:
    return not episode.on_last_turn and episode.reads_left > 0 and episode.env.has_unread
