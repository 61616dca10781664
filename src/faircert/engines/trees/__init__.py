"""Exact epsilon-kappa fairness and robustness of tree ensembles (`TreeEnsemble`).

Answers `IndividualFairness` (with kappa, epsilon and robustness) with any-time sound bounds on the
fair measure, the exact counterexample region and uniform samples from it (`UnfairSamples`).
`quantify` runs the refinement, its steps sharing one `run.TreeRun` (the options: `run.TreeOptions`)
and adding up to a `run.Tally`: `boxes` partitions the domain by the trees' splits, `joint` and
`dilated` refine it for epsilon = 0 and epsilon > 0, `union` measures unions of boxes; `open`
estimates and samples what is left undecided; `sampling` turns pieces into re-checked
counterexamples and draws testing-mode samples; `verify` assembles the result; `resume` keeps the
refinements' checkpoints; `cells` counts the leaf-tuple cells an epsilon-0 refinement down to
single leaves holds (a measure of problem size). Entry points:
`verify.verify_trees` (registry: `verify.answer`), `quantify.quantify`, `sampling.sample_unfair`
(registry: `sampling.answer_samples`).
"""
