"""The recovery experiments' one new decision (Appendix F.3, F.4): which unread paragraphs to read
next, seeing only the question, the sentences already read and the unread titles."""

from __future__ import annotations

import dspy


class SelectMoreReads(dspy.Signature):
    """You are answering a multi-hop question from the paragraphs read so far, and the evidence may
    be incomplete. Choose one or two more paragraphs to read, by title, copied exactly from the
    unread titles: the ones most likely to hold a fact the answer needs that the evidence lacks."""

    question: str = dspy.InputField()
    evidence: str = dspy.InputField(desc="the sentences read so far, grouped by paragraph title")
    unread_titles: str = dspy.InputField(desc="the paragraphs not read yet, one title per line")
    titles: list[str] = dspy.OutputField(desc="one or two titles from the unread titles")


class MaybeSelectMoreReads(dspy.Signature):
    """You are answering a multi-hop question from the paragraphs read so far. If the evidence
    already holds every fact the answer needs, choose nothing (an empty list). Otherwise choose
    one or two more paragraphs to read, by title, copied exactly from the unread titles."""

    question: str = dspy.InputField()
    evidence: str = dspy.InputField(desc="the sentences read so far, grouped by paragraph title")
    unread_titles: str = dspy.InputField(desc="the paragraphs not read yet, one title per line")
    titles: list[str] = dspy.OutputField(desc="no title, or one or two titles from the unread titles")
