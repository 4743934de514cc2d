"""What a turn prompt shows of the environment, one rendering for EIR and the Direct-style turns
(the paper's Direct gets EIR's inputs minus the lists; SSR's proposal and Reflexion's trials get
Direct's): the titles still unread, or what the searches found; and the last result."""

from __future__ import annotations

from eir_dspy.environment import budget_note
from eir_dspy.episode import Episode


def environment_view(episode: Episode) -> dict[str, str]:
    env = episode.env
    if env.setting == "corpus":
        return {"search_results": env.render_found()}
    return {"unread_titles": "\n".join(env.unread_titles) or "(all paragraphs have been read)"}


def last_result(episode: Episode) -> str:
    """The last result as a Direct-style turn sees it.

    In the pool a turn-limited episode (Direct, SSR, Reflexion: H turns, the submit among them) is
    told its turns left with every result: a read's result says it already (eir_dspy.environment);
    the opening and a rejection get the same note here, so the last turn always says that only a
    submit counts on it. Elsewhere the last result is shown as it is: EIR is told its reads left, and
    the corpus setting keeps its own texts (eir_dspy.corpus_environment: reads left after a read)."""
    text = episode.last_feedback
    if episode.env.setting != "pool" or episode.turn_limit is None:
        return text
    previous = episode.turns[-1] if episode.turns else None
    if previous is not None and previous.accepted and previous.read_title is not None:
        return text
    return f"{text} {budget_note(episode, episode.turn - 1)}"
