"""Sound bounds on probabilities of program outcomes and of a model's decisions under a population.

Answers FairSquare-style program fairness (`verify_program`) and group fairness of any model under
a continuous, discrete or program population. Programs are evaluated over interval and affine
forms (`interp`, `intervals`, `affine`), the population's CDF space is refined (`refine`), and
ratios and metrics are decided on strict margins (`fairness`). Entry points: `bounds.program_fairness`,
`bounds.probability_result`, `bounds.group_bounds`.
"""
