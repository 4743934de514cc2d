"""One eval.run run: its condition (config) and eval.run's flags that make it (flags), the whole run
started, resumed and ended (lifecycle), its questions executed on a thread pool (execute, scheduler),
and what MLflow keeps of it (tracking, provenance, traces, logged_runs). Its records and results
file are eval/files/'s."""
