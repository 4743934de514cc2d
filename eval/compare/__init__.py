"""`python -m eval.compare`: runs compared as the paper does: paired variants Holm-adjusted in
families (pairs, families), the paper's tables and ablation tables, plots, and Figure 3 (error_analysis);
comparison runs it all as one MLflow comparison run, for the command and for eval.grid."""
