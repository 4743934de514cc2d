"""The methods' names, for code that must name one (a program's trajectory, a label an analysis selects).

A name is an eval.run --method value and the `method` of its trajectories; programs/registry.py
gives each its entry. A label is what a run's numbers are logged under: the name, except for
Reflexion, whose one run logs two results.
"""

EIR = "eir"
DIRECT = "direct"
FULL_POOL = "full_pool"
SSR = "ssr"
REFLEXION = "reflexion"

REFLEXION_ORACLE = "reflexion_oracle"  # Reflexion's main result: the trial its oracle stopped at
REFLEXION_FIRST = "reflexion_first"  # Reflexion's trial 1 alone, a result of the same run
