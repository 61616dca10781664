"""Individual fairness of ReLU networks (`ReluNetwork`) by box refinement.

Answers `IndividualFairness` with sound certified / falsified shares: symbolic twin-network bounds
over batches of input boxes (`symbolic`), splitting (`cuts`, `grow`), exact enumeration of tiny
boxes (`exact`), Chernoff credits for boxes the bounds leave open (`tail`), sampled
counterexamples and the statistical estimate (`sampling`); on several processes or a Ray cluster
in rounds of chunks (`rounds`). Entry point: `refine.verify_network`.
"""
