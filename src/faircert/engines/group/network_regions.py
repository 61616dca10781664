"""Sound group rates of networks under independent marginals, by box refinement on the label.

The boxes of `regions` are bounded by the symbolic bounds of individual-fairness refinement
(`network.symbolic.bound_twins`, one "twin": the network itself, through its input tables where
it has them) over each box's hull of values, and cut on the input that widens the bounds most
(`TwinBounds.score`), where the box's mass is halved. Bounds within the tolerance of verification
(`network.problem.REL_TOL`, relative to the logits' magnitude) decide nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...models.network import ReluNetwork
from ...options import GroupOptions
from ...results import GroupResult
from ..network.problem import REL_TOL
from ..network.symbolic import TwinNet, bound_twins
from .regions import Bounds, answer_rates
from .trees import reads_independent_inputs

METHOD = (
    "box refinement on the label: each box of values bounded by the network's symbolic bounds, "
    "its mass counted where they prove the label, the heaviest undecided boxes split first"
)


def accepts(model: ReluNetwork, question: Any) -> bool:
    """Every input the network reads, every protected attribute and the label are independent
    under the population (see `trees.reads_independent_inputs`)."""
    return reads_independent_inputs(model, question)


class NetworkBounder:
    """The network's logit bounds over boxes of one rate's values (every input a column, a fixed
    one with its one value)."""

    def __init__(self, network: ReluNetwork, values: list[np.ndarray], counts: list[np.ndarray]) -> None:
        n = network.n_inputs
        every, none = list(range(n)), np.zeros((1, 0))
        self.net = TwinNet.build(network, every, [], none, lookups=True)
        plain = TwinNet.build(network, every, [], none)
        self.values = values
        self.cum = [np.concatenate([[0.0], np.cumsum(c, dtype=np.float64)]) for c in counts]
        self.tight = False
        # the logits' magnitude over the values' hull, as verification scales its tolerance
        x = np.array([float(np.abs(v).max()) for v in values])
        h = np.abs(plain.w1) @ x + np.abs(plain.b1).max(axis=0)
        for w, b in zip(plain.weights, plain.biases):
            h = np.abs(w) @ h + np.abs(b)
        self.tolerance = REL_TOL * (1.0 + float(h.max()))

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> Bounds:
        xl = np.stack([v[lo[:, j]] for j, v in enumerate(self.values)], axis=1)
        xh = np.stack([v[hi[:, j] - 1] for j, v in enumerate(self.values)], axis=1)
        b = bound_twins(self.net, xl, xh, self.tight)
        score = np.where(hi - lo >= 2, b.score, -np.inf)
        feature = np.argmax(score, axis=1)
        rows = np.arange(len(lo))
        feature = np.where(np.isfinite(score[rows, feature]), feature, -1)
        at = np.zeros(len(lo), dtype=np.int64)
        for j in np.unique(feature[feature >= 0]):
            i = np.flatnonzero(feature == j)
            c, a, z = self.cum[j], lo[i, j], hi[i, j]
            k = np.searchsorted(c, (c[a] + c[z]) / 2, "left")
            at[i] = np.clip(k, a + 1, z - 1)
        return Bounds(b.lower[:, 0], b.upper[:, 0], feature, at)


def answer(network: ReluNetwork, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: every rate the metrics read as sound any-time bounds (`regions`), on
    one BLAS thread (small batched products run faster so)."""
    from ..network.refine import one_thread

    with one_thread(None):
        return answer_rates(
            question,
            options,
            progress,
            "network-regions-group",
            network.named_inputs(),
            lambda values, counts: (
                NetworkBounder(network, values, counts),
                counts,
                [np.arange(len(c)) for c in counts],
            ),
            METHOD,
        )
