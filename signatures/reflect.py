"""Reflexion's reflection: after a failed trial, a short diagnosis and plan for the next one."""

from __future__ import annotations

import dspy


class Reflect(dspy.Signature):
    """You tried to answer a multi-hop question by reading paragraphs and did not succeed.
    In two or three sentences, diagnose what went wrong (a paragraph you missed, a wrong hop, a
    misread fact, a long answer) and write a plan for the next attempt."""

    question: str = dspy.InputField()
    titles: str = dspy.InputField(desc="the paragraphs in the pool")
    trajectory: str = dspy.InputField(desc="your failed attempt: thought, action, result per turn")
    reflection: str = dspy.OutputField()
