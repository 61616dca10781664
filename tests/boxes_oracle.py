"""Brute-force oracle for individual fairness of networks on small integer domains."""

from __future__ import annotations

import itertools

import numpy as np

from faircert.domain import Domain
from faircert.models.network import ReluNetwork


def random_network(rng: np.random.Generator, n_in: int, hidden: list[int], scale: float = 1.0) -> ReluNetwork:
    sizes = [n_in] + hidden + [1]
    w = [rng.normal(size=(sizes[k + 1], sizes[k])) * scale for k in range(len(sizes) - 1)]
    b = [rng.normal(size=sizes[k + 1]) * scale for k in range(len(sizes) - 1)]
    return ReluNetwork(w, b)


def unfair_points(net: ReluNetwork, dom: Domain, protected: list[int], eps: dict[int, int] | None = None) -> int:
    """Number of free grid points x with a twin pair that the model labels differently: x under
    protected values v and x' (free features within eps of x) under other values v' != v; without
    protected features (robustness) x' under the same (no) values."""
    eps = eps or {}
    free = [i for i in range(len(dom)) if i not in protected]
    values = [dom.features[i].values() for i in range(len(dom))]
    full = np.array(list(itertools.product(*values)), dtype=float)
    labels = dict(zip(map(tuple, full), net.logit(full) > 0))
    combos = list(itertools.product(*(values[i] for i in protected)))

    def label(xf, pv) -> bool:
        point = [0.0] * len(dom)
        for i, v in zip(free, xf):
            point[i] = v
        for i, v in zip(protected, pv):
            point[i] = v
        return bool(labels[tuple(float(t) for t in point)])

    count = 0
    for x in itertools.product(*(values[i] for i in free)):
        ranges = [
            range(max(v - eps.get(i, 0), dom.features[i].min), min(v + eps.get(i, 0), dom.features[i].max) + 1)
            for i, v in zip(free, x)
        ]
        own = {pv: label(x, pv) for pv in combos}
        count += any(
            own[pv] != label(xp, qv)
            for xp in itertools.product(*ranges)
            for pv in combos
            for qv in combos
            if qv != pv or len(combos) == 1
        )
    return count
