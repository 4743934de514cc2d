"""One eval.run run: its condition (config) and eval.run's flags that make it (flags), the whole run
started and ended (lifecycle) in steps: made ready (prepare; a resumed run's state and lock: resume),
its questions run on a thread pool (questions, scheduler; one question: execute), scored, logged and
printed (report); and what MLflow keeps of it (tracking, provenance, traces, logged_runs). Its records
and results file are eval/files/'s."""
