"""The files a run writes and reads back, each a leaf module (it imports nothing else of eval):
question_record (one line of a results file), results_file (a run's results.jsonl and its lock),
program_file (a compiled program)."""
