"""`python -m eval.compare`: runs compared as the paper does: paired variants Holm-adjusted in
families (pairs, families), the paper's tables and ablation tables, plots, and Figure 3 (error_analysis)."""
