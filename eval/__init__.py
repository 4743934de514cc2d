"""Evaluation. The modules at this level are commands (`python -m eval.run`, `eval.summary`,
`eval.index`, `eval.genai_eval`; the packages `eval.compare`, `eval.analyze`, `eval.compile`,
`eval.grid` run with `-m` too); each folder holds one concern: runs/, data/, scoring/, compare/,
analyze/, compile/, grid/."""
