"""GEPA's metric: the project's score plus what went wrong in this question, as text.

GEPA asks for feedback per predictor (`pred_name`); a turn predictor hears about its episode (the
rejected turns with the cause and the explanation the agent itself was shown, list updates
discarded, gold paragraphs left unread, whether it submitted), the final call about its answer
and citations against the gold. Every part comes from the prediction the program returned and
the question's gold; nothing is judged by a model.
"""

from __future__ import annotations

import dspy

from eval.compile.metric import Metric, combine, question_of

MAX_REJECTIONS_SHOWN = 4  # keeps one example's feedback short in the reflection prompt


class FeedbackMetric(Metric):
    """`(gold, pred, trace, pred_name, pred_trace) -> dspy.Prediction(score, feedback)`, GEPA's protocol."""

    def __call__(self, example, prediction, trace=None, pred_name=None, pred_trace=None):
        scores = self.scores(example, prediction)
        score = combine(scores, self.metric)
        q = question_of(example)
        lines = [f"Score {score:.2f} ({self.metric}). Answer F1 {scores['answer_f1']:.2f}: the answer was "
                 f"{getattr(prediction, 'answer', '')!r}; the correct answer is {q.answer!r}."]
        if pred_name is not None and pred_name.startswith("answer"):
            lines += citation_feedback(q, prediction, scores)
        else:
            lines += episode_feedback(q, prediction)
        return dspy.Prediction(score=score, feedback="\n".join(lines))


def citation_feedback(q, prediction, scores: dict) -> list[str]:
    cited = {tuple(c) for c in getattr(prediction, "citations", None) or []}
    gold = set(q.supporting_facts)
    lines = [f"Support F1 {scores['support_f1']:.2f}."]
    if gold - cited:
        lines.append("Gold supporting sentences not cited: " + ", ".join(f"{t} #{i}" for t, i in sorted(gold - cited)))
    if cited - gold:
        lines.append("Cited sentences that do not support the answer: "
                     + ", ".join(f"{t} #{i}" for t, i in sorted(cited - gold)))
    return lines


def episode_feedback(q, prediction) -> list[str]:
    episode = getattr(prediction, "episode", None)
    if episode is None:
        return []
    rejected = [t for t in episode.turns if not t.accepted]
    lines = _capped([f"Turn {t.turn} was rejected ({t.rejection_cause}): {t.feedback}" for t in rejected],
                    "more rejected turns")
    # Under the pool's rule the turn ran and only its list updates were dropped; under `reject` the
    # turn is among the rejected ones above.
    discarded = [t for t in episode.turns if t.accepted and t.discarded_cause]
    lines += _capped([f"Turn {t.turn}: its list updates were invalid and discarded ({t.discarded_cause}); "
                      "the action ran, the lists stayed unchanged." for t in discarded],
                     "more turns with discarded list updates")
    unread = sorted(q.gold_titles - set(episode.evidence.titles))
    if unread:
        lines.append("Paragraphs needed for the answer that were never read: " + ", ".join(unread))
    if episode.submitted is None:
        lines.append(f"The agent never submitted; the episode ended at its turn limit ({episode.max_turns}).")
    elif episode.turn < episode.max_turns:
        lines.append(f"The agent submitted at turn {episode.turn} of {episode.max_turns}.")
    return lines


def _capped(lines: list[str], more: str) -> list[str]:
    """The first MAX_REJECTIONS_SHOWN lines, then how many were left out."""
    left = len(lines) - MAX_REJECTIONS_SHOWN
    return lines[:MAX_REJECTIONS_SHOWN] + ([f"... and {left} {more}."] if left > 0 else [])
