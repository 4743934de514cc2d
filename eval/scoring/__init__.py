"""Scores: the official per-question metrics (metrics), a run's metrics and table (run_metrics), its
warnings (health), paired statistics (stats), and how the reports write tables and cells (formatting)."""
