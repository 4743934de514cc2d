"""Evaluation. The modules at this level are commands (`python -m eval.run`, `eval.summary`,
`eval.index`, `eval.genai_eval`; the packages `eval.compare`, `eval.analyze`, `eval.compile`,
`eval.grid` run with `-m` too, from their __main__.py); each folder holds one concern, and imports
only the folders before it: files/ (leaf modules), data/, scoring/, runs/, compare/ and analyze/,
compile/ and grid/. tests/test_import_graph.py holds the order and refuses any cycle."""
