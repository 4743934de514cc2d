"""Scores: the official per-question metrics, a run's summary, paired statistics."""
