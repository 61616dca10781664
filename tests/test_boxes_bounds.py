"""The twin bound function: soundness on random networks and FairQuant's worked example."""

import numpy as np
import pytest
from boxes_oracle import random_network

from faircert.engines.network import symbolic
from faircert.engines.network.symbolic import TwinNet, bound_twins
from faircert.models.io.nnet import load_nnet


@pytest.mark.parametrize("extra", ["", "relational", "slopes"])
@pytest.mark.parametrize("tight", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_bounds_contain_sampled_logits_and_forms_are_valid(monkeypatch, seed, tight, extra):
    monkeypatch.setattr(symbolic, "RELATIONAL", extra == "relational")
    monkeypatch.setattr(symbolic, "OPTIMISED_SLOPES", extra == "slopes")
    rng = np.random.default_rng(seed)
    n_in = int(rng.integers(2, 6))
    net = random_network(rng, n_in, list(rng.integers(1, 9, size=rng.integers(0, 5))))
    protected = [0]
    free = list(range(1, n_in))
    combos = np.array([[0.0], [1.0], [2.5]])
    tn = TwinNet.build(net, free, protected, combos)
    lo = rng.uniform(-2, 1, size=(40, len(free)))
    hi = lo + rng.uniform(0, 2, size=lo.shape) * (rng.random(lo.shape) < 0.8)
    bd = bound_twins(tn, lo, hi, tight=tight)
    for j in range(lo.shape[0]):
        x = rng.uniform(lo[j], hi[j], size=(300, len(free)))
        full = np.repeat(x, 3, axis=0)
        full = np.column_stack([np.tile(combos[:, 0], 300), full])
        z = net.logit(full).reshape(300, 3)
        assert np.all(z >= bd.lower[j] - 1e-9) and np.all(z <= bd.upper[j] + 1e-9)
        # the linear forms bound the logit from below and above over the whole box
        low = x @ bd.form_a[0, j].T + bd.form_c[0, j]
        up = -(x @ bd.form_a[1, j].T + bd.form_c[1, j])
        assert np.all(z >= low - 1e-9) and np.all(z <= up + 1e-9)


def test_toy_network_matches_fairquant_worked_example(shared_benchmarks):
    net = load_nnet(shared_benchmarks / "models" / "example.nnet")
    tn = TwinNet.build(net, [0, 2], [1], np.array([[0.0], [1.0]]))

    def bounds(lo, hi):
        bd = bound_twins(tn, np.array([lo], float), np.array([hi], float))
        x = np.array([[a, c] for a in range(lo[0], hi[0] + 1) for c in range(lo[1], hi[1] + 1)], float)
        return bd.lower[0], bd.upper[0], tn.logits(x)

    # root: O = [-0.2, 2.643], O' = [-0.8, 2.368] (paper section 2.7): undecided
    low, up, z = bounds([1, 0], [5, 5])
    assert np.all(low >= np.array([-0.2, -0.8]) - 1e-9) and np.all(up <= np.array([2.6429, 2.3679]) + 1e-4)
    assert np.all(low <= z.min(axis=0) + 1e-12) and np.all(up >= z.max(axis=0) - 1e-12)
    assert low[0] < 0 < up[0]
    # x1 in {4, 5}: O = [1.491, 2.655], O' = [1.0, 2.359] -> both positive: certified (12/30 = 40%)
    low, up, z = bounds([4, 0], [5, 5])
    assert np.all(low >= np.array([1.4909, 1.0]) - 1e-4) and np.all(up <= np.array([2.6546, 2.3591]) + 1e-4)
    assert np.all(low <= z.min(axis=0) + 1e-12) and np.all(up >= z.max(axis=0) - 1e-12)
    assert np.all(low > 0)


def test_bounds_at_least_as_tight_as_fairquant_forward_pass():
    """Final bounds are the intersection with FairQuant's symbolic intervals, so never looser."""
    rng = np.random.default_rng(7)
    net = random_network(rng, 4, [6, 5, 4])
    tn = TwinNet.build(net, [1, 2, 3], [0], np.array([[0.0], [1.0]]))
    lo = rng.uniform(-1, 0, size=(200, 3))
    hi = lo + rng.uniform(0, 1.5, size=lo.shape)
    from faircert.engines.network import symbolic as bs

    plain = bs.bound_twins(tn, lo, hi)
    # FairQuant's forward pass alone: disable the backward pass by making it return -inf/+inf
    orig = bs._backward
    try:
        bs._backward = lambda *a, **k: (
            np.full(lo.shape[0] * 2, -np.inf),
            np.full(lo.shape[0] * 2, np.inf),
            np.zeros((4 * lo.shape[0], 3)),
            np.zeros(4 * lo.shape[0]),
            [],
        )
        fq = bs.bound_twins(tn, lo, hi)
    finally:
        bs._backward = orig
    assert np.all(plain.lower >= fq.lower) and np.all(plain.upper <= fq.upper)
    assert np.mean(plain.upper - plain.lower) < np.mean(fq.upper - fq.lower)


def test_logits_of_no_points_are_empty():
    """Sampling may hand over an empty batch once every sampled point is proven fair."""
    from faircert.domain import Domain, Feature
    from faircert.engines.network.problem import Problem
    from faircert.properties import individual_fairness

    net = random_network(np.random.default_rng(0), 3, [5, 4])
    dom = Domain((Feature("a", "integer", 0, 5), Feature("s", "binary", 0, 1), Feature("b", "integer", 0, 3)))
    pb = Problem.build(net, individual_fairness(dom, "s"))
    assert pb.twin.logits(np.zeros((0, pb.d))).shape == (0, pb.n_twins)


def test_logits_in_blocks_equal_the_network_logits(monkeypatch):
    """Large batches are computed in blocks of points; every block gives the network's own logits."""
    rng = np.random.default_rng(3)
    net = random_network(rng, 4, [7, 5])
    combos = np.array([[0.0], [1.0], [2.0]])
    tn = TwinNet.build(net, [1, 2, 3], [0], combos)
    x = rng.uniform(-2, 2, size=(1000, 3))
    monkeypatch.setattr(symbolic, "LOGIT_VALUES", 3 * 7 * 64)  # blocks of 64 points: 16 blocks, the last short
    z = tn.logits(x)
    full = np.column_stack([np.tile(combos[:, 0], 1000), np.repeat(x, 3, axis=0)])
    assert z.shape == (1000, 3)
    np.testing.assert_allclose(z, net.logit(full).reshape(1000, 3), rtol=0, atol=1e-12)


def test_the_relational_bounds_only_tighten(monkeypatch):
    """Intersected with the twins' differences, no bound gets looser, and some get tighter."""
    rng = np.random.default_rng(7)
    net = random_network(rng, 5, [12, 12])
    tn = TwinNet.build(net, [1, 2, 3, 4], [0], np.array([[0.0], [1.0]]))
    lo = rng.uniform(-1, 0.5, size=(400, 4))
    hi = lo + rng.uniform(0, 0.5, size=lo.shape)
    plain = bound_twins(tn, lo, hi)
    monkeypatch.setattr(symbolic, "RELATIONAL", True)
    both = bound_twins(tn, lo, hi)
    assert np.all(both.lower >= plain.lower) and np.all(both.upper <= plain.upper)
    assert np.any(both.lower > plain.lower + 1e-9) or np.any(both.upper < plain.upper - 1e-9)


def test_optimised_slopes_are_never_looser_and_tighten_deep_networks(monkeypatch):
    pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    net = random_network(rng, 5, [16, 12, 8])
    tn = TwinNet.build(net, [1, 2, 3, 4], [0], np.array([[0.0], [1.0]]))
    lo = rng.uniform(-1, 0.5, size=(300, 4))
    hi = lo + rng.uniform(0, 0.8, size=lo.shape)
    plain = bound_twins(tn, lo, hi)
    monkeypatch.setattr(symbolic, "OPTIMISED_SLOPES", True)
    both = bound_twins(tn, lo, hi)
    assert np.all(both.lower >= plain.lower) and np.all(both.upper <= plain.upper)
    assert np.mean((both.upper - both.lower) < (plain.upper - plain.lower) - 1e-9) > 0.2
    x = rng.uniform(lo[:, None, :], hi[:, None, :], size=(300, 200, 4))
    z = np.stack([tn.logits(x[b]) for b in range(300)])  # (B, 200, T)
    assert np.all(z >= both.lower[:, None, :] - 1e-9) and np.all(z <= both.upper[:, None, :] + 1e-9)
