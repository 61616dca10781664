"""Small models under independent marginals whose group rates are enumerated exactly: a ReLU
network and a forest of more leaves than the exact tree count takes, for the region engines."""

from __future__ import annotations

import itertools

import numpy as np
from boxes_oracle import random_network

from faircert.models.network import ReluNetwork
from faircert.models.trees import Tree, TreeEnsemble
from faircert.population import DiscretePopulation, Variable

ROWS = 1000


def counts_variable(name: str, states: tuple, counts: list[int]) -> Variable:
    """An independent variable whose probabilities are counts out of `ROWS` (as learned from rows)."""
    assert sum(counts) == ROWS
    return Variable(name, states, (), (), np.array(counts, dtype=float) / ROWS)


def _counts(rng: np.random.Generator, n: int, zeros: int = 0) -> list[int]:
    weights = rng.random(n) + 0.05
    weights[rng.choice(n, zeros, replace=False)] = 0.0  # values the data never holds
    counts = np.floor(weights / weights.sum() * ROWS).astype(int)
    counts[np.argmax(counts)] += ROWS - counts.sum()
    return counts.tolist()


def network_example(seed: int = 0) -> tuple[ReluNetwork, DiscretePopulation]:
    """A random network over a (10 integers), s (protected, 0/1) and b (5 uneven reals)."""
    rng = np.random.default_rng(seed)
    net = random_network(rng, 3, [8, 8])
    grid = np.array(list(itertools.product(range(10), (0, 1), (-1.5, -0.2, 0.0, 0.7, 2.3))), dtype=float)
    centre = float(np.median(net.logit(grid)))  # about half of the points positive
    biases = net.biases[:-1] + [net.biases[-1] - centre + 0.1]
    net = ReluNetwork(net.weights, biases, input_names=["a", "s", "b"])
    variables = {
        "a": counts_variable("a", tuple(range(10)), _counts(rng, 10, zeros=2)),
        "s": counts_variable("s", (0, 1), [400, 600]),
        "b": counts_variable("b", (-1.5, -0.2, 0.0, 0.7, 2.3), _counts(rng, 5)),
    }
    return net, DiscretePopulation(variables, ("s",), kind="independent", info={"rows": ROWS})


def _complete_tree(rng: np.random.Generator, depth: int, features: list[tuple[int, np.ndarray]]) -> Tree:
    """A complete tree of `depth` levels, each split on a random feature at one of its thresholds."""
    inner, n = 2**depth - 1, 2 ** (depth + 1) - 1
    feature = np.full(n, -1)
    threshold = np.zeros(n)
    left, right = np.full(n, -1), np.full(n, -1)
    for i in range(inner):
        f, thresholds = features[rng.integers(len(features))]
        feature[i], threshold[i] = f, rng.choice(thresholds)
        left[i], right[i] = 2 * i + 1, 2 * i + 2
    value = np.where(np.arange(n) >= inner, rng.normal(size=n), 0.0)
    return Tree(feature, threshold, left, right, value)


def forest_example(seed: int = 0, depth: int = 8, trees: int = 4, split: str = "<=") -> tuple:
    """A boosted ensemble of complete trees over a (0..23), s (protected, 0..2) and b (0..15, some
    values on the thresholds themselves), with its population."""
    rng = np.random.default_rng(seed)
    a_thr = np.arange(24) + rng.choice([-0.5, 0.0, 0.5], 24)  # thresholds on values and between them
    b_thr = np.arange(16) - 0.5
    s_thr = np.array([0.5, 1.0, 1.5])
    features = [(0, a_thr), (0, a_thr), (2, b_thr), (2, b_thr), (1, s_thr)]
    ir = TreeEnsemble(
        [_complete_tree(rng, depth, features) for _ in range(trees)],
        3,
        feature_names=["a", "s", "b"],
        split=split,
        input_float32=False,
    )
    variables = {
        "a": counts_variable("a", tuple(range(24)), _counts(rng, 24, zeros=3)),
        "s": counts_variable("s", (0, 1, 2), [500, 300, 200]),
        "b": counts_variable("b", tuple(range(16)), _counts(rng, 16)),
    }
    return ir, DiscretePopulation(variables, ("s",), kind="independent", info={"rows": ROWS})


def enumerated_rates(model, pop: DiscretePopulation) -> dict[str, float]:
    """P[yhat = 1 | s] for each state of s, by enumerating every point of the other inputs."""
    names = model.named_inputs()
    states = {n: np.array([float(v) for v in pop.variables[n].states]) for n in names}
    probs = {n: pop.variables[n].cpt for n in names}
    out = {}
    for k, label in enumerate(pop.variables["s"].labels):
        grids = [range(len(states[n])) if n != "s" else [k] for n in names]
        idx = np.array(list(itertools.product(*grids)))
        X = np.stack([states[n][idx[:, j]] for j, n in enumerate(names)], axis=1)
        w = np.prod([probs[n][idx[:, j]] if n != "s" else np.ones(len(idx)) for j, n in enumerate(names)], axis=0)
        positive = model.logit(X) > 0 if isinstance(model, ReluNetwork) else model.predict(X) == 1
        out[label] = float(w[positive].sum() / w.sum())
    return out
