"""Individual fairness of ReLU networks (`ReluNetwork`) by box refinement.

Answers `IndividualFairness` with sound certified / falsified shares: symbolic twin-network bounds
over batches of input boxes (`symbolic`), splitting (`cuts`, `grow`), exact enumeration of tiny
boxes (`exact`), Chernoff credits for boxes the bounds leave open (`tail`), sampled
counterexamples and the statistical estimate (`sampling`); the work on a chunk of open boxes
(`settle`) runs on the sharded box runner (`boxes.shards`), on one process, several, or a Ray
cluster. Entry point: `refine.verify_network`.
"""
