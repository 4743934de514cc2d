"""Evaluation: data loaders, metrics, statistics and the run command."""
