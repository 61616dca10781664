"""Exact epsilon-kappa fairness and robustness of tree ensembles (`TreeEnsemble`).

Answers `IndividualFairness` (with kappa, epsilon and robustness) with any-time sound bounds on the
fair measure, the exact counterexample region and uniform samples from it. `boxes` partitions the
domain by the trees' splits, `joint` and `dilated` refine it for epsilon = 0 and epsilon > 0,
`union` measures unions of boxes, `open` estimates and samples what is left undecided. Entry points:
`verify.verify_trees`, `verify.quantify`, `verify.sample_unfair`.
"""
