"""The box-refinement problem: free features, twin combinations, measure and tolerances."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ...errors import PropertyError
from ...models.network import ReluNetwork
from ...properties import IndividualFairness
from .symbolic import TwinBounds, TwinNet, bound_twins

#: Relative tolerance: bounds this close to 0 (scaled by the logit magnitude) decide nothing.
REL_TOL = 1e-9


@dataclass
class Problem:
    """Everything the refinement needs, expressed over the free (non-protected) features."""

    network: ReluNetwork
    twin: TwinNet
    free: list[int]
    protected: list[int]
    combos: np.ndarray        # (T, n_protected) protected values of each twin
    lo: np.ndarray            # (d,) domain bounds of the free features
    hi: np.ndarray
    discrete: np.ndarray      # (d,) bool
    eps: np.ndarray           # (d,) tolerance of each free feature (floored for discrete ones)
    domain_size: float
    tol: float = 0.0
    #: The twins as the bounds see them: through the network's input tables where it has them
    #: (`twin` is the network itself, layer by layer, for exact checks).
    bounder: TwinNet | None = None

    @classmethod
    def build(cls, network: ReluNetwork, prop: IndividualFairness) -> Problem:
        dom = prop.domain
        protected = list(prop.protected)
        free = prop.free
        if not free:
            raise PropertyError("every feature is protected; there is nothing left to measure")
        values = [dom.features[i].values() for i in protected]
        combos = list(itertools.product(*values))
        combos = np.array(combos, dtype=np.float64).reshape(len(combos), len(protected))
        disc = dom.discrete_mask[free]
        eps = np.asarray(prop.epsilon, dtype=np.float64)[free]
        eps = np.where(disc, np.floor(eps + 1e-12), eps)
        size = dom.measure(exclude=protected)
        if not size > 0:
            raise PropertyError("the measured part of the domain has size 0 (a real feature with min == max?)")
        p = cls(network, TwinNet.build(network, free, protected, combos), free, protected, combos,
                dom.lower[free], dom.upper[free], disc, eps, size)
        p.tol = REL_TOL * (1.0 + p.logit_scale())
        p.bounder = TwinNet.build(network, free, protected, combos, lookups=True)
        return p

    @property
    def d(self) -> int:
        return len(self.free)

    @property
    def n_twins(self) -> int:
        return self.combos.shape[0]

    @property
    def pairs(self) -> np.ndarray:
        """(T, T) which twin pairs (a for x, b for x') count: another protected combination for
        fairness; with no protected feature (robustness) the one twin against itself."""
        T = self.n_twins
        return np.ones((1, 1), dtype=bool) if T == 1 else ~np.eye(T, dtype=bool)

    @property
    def has_eps(self) -> bool:
        return bool(np.any(self.eps > 0))

    def logit_scale(self) -> float:
        """Magnitude of the logits' computation (sum of absolute terms at the domain's corners)."""
        x = np.abs(np.stack([self.lo, self.hi])).max(axis=0)
        h = np.abs(self.twin.w1) @ x + np.abs(self.twin.b1).max(axis=0)
        for w, b in zip(self.twin.weights, self.twin.biases):
            h = np.abs(w) @ h + np.abs(b)
        return float(h.max())

    def mass(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Grid count times volume of each box (rows)."""
        size = np.where(self.discrete, hi - lo + 1.0, hi - lo)
        return np.prod(size, axis=-1)

    def window_bounds(self, lo: np.ndarray, hi: np.ndarray, tight: bool) -> tuple[TwinBounds, TwinBounds]:
        """Twin logit bounds over each box's epsilon-window (what decides fairness) and over the box
        itself (what decides its points' own labels); one and the same without epsilon."""
        own = bound_twins(self.bounder, lo, hi, tight)
        if not self.has_eps:
            return own, own
        return bound_twins(self.bounder, *self.enlarge(lo, hi), tight), own

    def enlarge(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The boxes every twin ranges over: [lo - eps, hi + eps] within the domain."""
        return np.maximum(lo - self.eps, self.lo), np.minimum(hi + self.eps, self.hi)

    def full(self, x: np.ndarray, twin: np.ndarray) -> np.ndarray:
        """Full model inputs from free points x (n, d) and twin indices (n,)."""
        out = np.empty((x.shape[0], len(self.free) + len(self.protected)))
        out[:, self.free] = x
        if self.protected:
            out[:, self.protected] = self.combos[twin]
        return out
