"""What a turn prompt shows of the environment, one rendering for EIR and Direct (the paper's
Direct gets EIR's inputs minus the lists): the titles still unread, or what the searches found."""

from __future__ import annotations

from eir_dspy.episode import Episode


def environment_view(episode: Episode) -> dict[str, str]:
    env = episode.env
    if env.setting == "corpus":
        return {"search_results": env.render_found()}
    return {"unread_titles": "\n".join(env.unread_titles) or "(all paragraphs have been read)"}
