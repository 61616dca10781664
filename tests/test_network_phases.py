"""Neuron splitting (`network/phases.py`) against enumeration, and its place in the complete check."""

import itertools

import numpy as np
import pytest
from boxes_oracle import random_network
from test_network_complete import assert_brute_force_verdicts, small_case

from faircert.engines.network import complete
from faircert.engines.network.complete import decide_regions
from faircert.engines.network.partitions import partition_grid
from faircert.engines.network.phases import prove_by_phases
from faircert.engines.network.problem import Problem
from faircert.engines.network.symbolic import TwinNet, bound_twins


def _twins(seed: int) -> TwinNet:
    """A random 3-input network with two twins, whose first-layer biases differ a little."""
    rng = np.random.default_rng(seed)
    net = random_network(rng, 3, [8, 8, 6])
    b1 = np.stack([net.biases[0], net.biases[0] + rng.normal(0, 0.3, 8)])
    return TwinNet(net.weights[0], b1, net.weights[1:], net.biases[1:])


def _grid_logits(net: TwinNet, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Every twin's logit (points x twins) at every integer point of the box."""
    points = np.array(list(itertools.product(*[np.arange(a, b + 1) for a, b in zip(lo, hi)])), dtype=float)
    return net.logits(points)


def _case(seed: int):
    """A random twin network, 120 random integer boxes, and which of them the bounds decide."""
    net = _twins(seed)
    rng = np.random.default_rng(100 + seed)
    lo = rng.integers(-6, 4, (120, 3)).astype(float)
    hi = lo + rng.integers(0, 5, (120, 3))
    plain = bound_twins(net, lo, hi, tight=True)
    return net, lo, hi, np.all(plain.lower > 1e-9, axis=1) | np.all(plain.upper < -1e-9, axis=1)


@pytest.mark.parametrize("seed", range(6))
def test_proofs_hold_at_every_point_and_only_add_to_the_bounds(seed):
    net, lo, hi, by_bounds = _case(seed)
    for same_side in (False, True):
        proven = prove_by_phases(net, lo, hi, 1e-9, same_side, max_domains=128)
        assert np.all(proven | ~by_bounds)
        for i in np.flatnonzero(proven):
            z = _grid_logits(net, lo[i], hi[i])
            if same_side:  # one sign for every twin at every point
                assert np.all(z > 0) or np.all(z < 0)
            else:  # the twins agree at every point
                assert np.all(np.all(z > 0, axis=1) | np.all(z < 0, axis=1))


def test_splits_prove_boxes_the_bounds_leave_open():
    gained = 0
    for seed in range(6):
        net, lo, hi, by_bounds = _case(seed)
        gained += int((prove_by_phases(net, lo, hi, 1e-9, False, max_domains=128) & ~by_bounds).sum())
    assert gained >= 10


def test_a_box_out_of_subdomains_is_not_proven():
    net = _twins(0)
    lo, hi = np.full((1, 3), -6.0), np.full((1, 3), 6.0)
    assert not prove_by_phases(net, lo, hi, 1e-9, False, max_domains=1)[0]


@pytest.mark.parametrize("seed,eps", [(0, None), (3, {"b": 1}), (8, {"a": 2})])
def test_partitions_with_neuron_splits_equal_brute_force(seed, eps, monkeypatch):
    """Every box goes to the splits, then the MILP: the verdicts stay the brute-force ones."""
    for name in ("EXACT_POINTS", "PROBES", "PROBES_FIRST", "CLIMB_STEPS", "MAX_CORNER_TWINS", "MILP_DEPTH"):
        monkeypatch.setattr(complete, name, 0)
    monkeypatch.setattr(complete, "NEURON_SPLITS", True)
    net, dom, prop, _ = small_case(seed, 5, eps, effect=0.1)
    pb = Problem.build(net, prop)
    lo, hi = partition_grid(pb, 3)
    out = decide_regions(pb, lo, hi, time_limit=60)
    assert_brute_force_verdicts(pb, lo, hi, out, dom, eps)
    assert out.counts.phases_s > 0
