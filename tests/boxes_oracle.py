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
    """Number of free grid points x whose set S(x) (any protected values, free features within
    eps of x) holds both labels."""
    eps = eps or {}
    free = [i for i in range(len(dom)) if i not in protected]
    values = [dom.features[i].values() for i in range(len(dom))]
    full = np.array(list(itertools.product(*values)), dtype=float)
    labels = dict(zip(map(tuple, full), net.logit(full) > 0))
    count = 0
    for x in itertools.product(*(values[i] for i in free)):
        seen = set()
        ranges = [range(max(v - eps.get(i, 0), dom.features[i].min), min(v + eps.get(i, 0), dom.features[i].max) + 1)
                  for i, v in zip(free, x)]
        for xp in itertools.product(*ranges):
            for pv in itertools.product(*(values[i] for i in protected)):
                point = [0.0] * len(dom)
                for i, v in zip(free, xp):
                    point[i] = v
                for i, v in zip(protected, pv):
                    point[i] = v
                seen.add(bool(labels[tuple(float(t) for t in point)]))
            if len(seen) == 2:
                break
        count += len(seen) == 2
    return count
