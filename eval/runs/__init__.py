"""One eval.run run: its condition (config), its questions executed on a thread pool (execute,
scheduler), their records, and what MLflow keeps of it (tracking, provenance, traces, logged_runs)."""
