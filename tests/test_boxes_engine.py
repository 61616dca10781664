"""The box-refinement engine against brute force on small integer domains."""

import numpy as np
import pytest
from boxes_oracle import random_network, unfair_points
from timing import wall

from faircert.domain import Domain, Feature
from faircert.engines.network import refine as boxes
from faircert.engines.network import settle
from faircert.engines.network.grow import carve
from faircert.engines.network.refine import Refinement, verify_network
from faircert.properties import individual_fairness

# domain: three free integer features and two protected ones (3 values and 2 values)
FEATURES = (
    Feature("a", "integer", 0, 9),
    Feature("p", "integer", 0, 2),
    Feature("b", "integer", -3, 5),
    Feature("c", "integer", 0, 6),
    Feature("q", "binary"),
)
PROTECTED = [1, 4]


@pytest.fixture
def no_root_enumeration(monkeypatch):
    """Force the bounding path: no whole-domain enumeration, only tiny boxes enumerated."""
    monkeypatch.setattr(settle, "EXACT_POINTS", 0)
    monkeypatch.setattr(settle, "EXACT_PER_INPUT", 1)


def case(seed: int, eps: dict | None = None):
    rng = np.random.default_rng(seed)
    net = random_network(rng, 5, [8, 6], scale=0.6)
    net.weights[0][:, 1] *= 0.3  # a mild protected effect: mostly fair, some unfair points
    dom = Domain(FEATURES)
    prop = individual_fairness(dom, ["p", "q"], epsilon=eps)
    eps_idx = {dom.index(k): int(v) for k, v in (eps or {}).items()}
    return net, dom, prop, unfair_points(net, dom, PROTECTED, eps_idx)


def check_counterexamples(res, dom, eps):
    lo, hi = dom.lower, dom.upper
    for c in res.counterexamples:
        x, xp = np.array(c.x), np.array(c.x_prime)
        assert (c.output > 0) != (c.output_prime > 0)
        assert np.all((x >= lo) & (x <= hi) & (xp >= lo) & (xp <= hi))
        free = [0, 2, 3]
        tol = np.array([eps.get(dom.features[i].name, 0) for i in free])
        assert np.all(np.abs(x[free] - xp[free]) <= tol)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_complete_run_equals_brute_force(seed, no_root_enumeration):
    net, dom, prop, truth = case(seed)
    res = verify_network(net, prop, time_limit=None)
    size = 10 * 9 * 7
    assert res.domain_size == size
    assert res.undecided == 0
    assert round(res.falsified * size) == truth
    assert res.certified == pytest.approx(1 - truth / size, abs=1e-12)
    assert res.verdict == ("unfair" if truth else "fair")
    check_counterexamples(res, dom, {})
    assert (len(res.counterexamples) > 0) == (truth > 0)


@pytest.mark.parametrize("seed", [0, 3])
def test_complete_run_with_epsilon_equals_brute_force(seed, no_root_enumeration):
    eps = {"a": 1, "c": 2}
    net, dom, prop, truth = case(seed, eps)
    res = verify_network(net, prop, time_limit=None)
    assert res.undecided == 0
    assert round(res.falsified * res.domain_size) == truth
    check_counterexamples(res, dom, eps)


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_run_stops_once_undecided_reaches_the_target(seed, no_root_enumeration):
    net, _, prop, truth = case(seed)
    for target in (0.5, 0.2, 0.05):
        res = verify_network(net, prop, time_limit=None, target_undecided=target)
        assert res.undecided <= target and res.stopped == "done"
        assert res.falsified * 630 <= truth + 1e-9 and res.certified * 630 <= 630 - truth + 1e-9


def test_a_large_domain_stops_at_the_target_before_it_is_decided():
    # 1e10 points: far from decided when a slice of refinement brings undecided below 10%
    rng = np.random.default_rng(3)
    net = random_network(rng, 4, [16, 12], scale=0.5)
    dom = Domain(tuple(Feature(f"x{i}", "integer", 0, 999) for i in range(3)) + (Feature("p", "binary"),))
    res = verify_network(net, individual_fairness(dom, ["p"]), time_limit=None, target_undecided=0.1)
    assert 0 < res.undecided <= 0.1 and res.stopped == "done" and res.elapsed_s < wall(5)


def test_whole_domain_enumeration_equals_brute_force():
    net, _, prop, truth = case(4, {"b": 1})
    res = verify_network(net, prop, time_limit=None)
    assert res.undecided == 0 and round(res.falsified * res.domain_size) == truth
    assert res.statistical.samples == 0 and res.statistical.unfair == res.falsified


@pytest.mark.parametrize("seed,eps", [(0, None), (1, None), pytest.param(2, {"a": 1}, marks=pytest.mark.slow)])
def test_partial_runs_are_sound_and_estimate_covers_truth(seed, eps, no_root_enumeration, monkeypatch):
    monkeypatch.setattr(boxes, "SAMPLE_HALFWIDTH", 0.01)
    net, dom, prop, truth = case(seed, eps)
    size = 630
    for budget in (1, 20, 80):
        run = Refinement(net, prop, seed, None)
        run.refine(None, 0.0, max_boxes=budget)
        cert, fal, und = run.shares()
        assert cert * size <= size - truth + 1e-9
        assert fal * size <= truth + 1e-9
        assert cert + fal + und == pytest.approx(1.0)
        res = run.result(None, 0.99, 100)
        st = res.statistical
        assert st.ci_low - 1e-12 <= truth / size <= st.ci_high + 1e-12
        check_counterexamples(res, dom, eps or {})


def test_carve_partitions_the_box():
    rng = np.random.default_rng(0)
    hi = np.array([9.0, 4.0, 6.0])
    pts = np.array(np.meshgrid(range(10), range(5), range(7), indexing="ij")).reshape(3, -1).T
    for _ in range(10):
        a, b = np.floor(rng.uniform(0, hi + 1)), np.floor(rng.uniform(0, hi + 1))
        glo, ghi = np.minimum(a, b)[None], np.maximum(a, b)[None]
        plo, phi = carve(np.zeros((1, 3)), hi[None], glo, ghi, np.ones(3, bool))
        boxes_lo, boxes_hi = np.concatenate([plo, glo]), np.concatenate([phi, ghi])
        inside = np.all((pts[:, None] >= boxes_lo) & (pts[:, None] <= boxes_hi), axis=2)
        assert np.all(inside.sum(axis=1) == 1)  # every grid point in exactly one piece


def test_real_features_are_measured_by_volume():
    # f = x - 0.5 + 0.2 p - 0.1 k with x real in [0, 1], k integer in {0, 1, 2}, p protected binary:
    # for each k the unfair x form an interval of length 0.2, so the unfair share is exactly 0.2
    from faircert.models.network import ReluNetwork

    net = ReluNetwork([np.array([[1.0, 0.2, -0.1]])], [np.array([-0.5])])
    dom = Domain((Feature("x", "real", 0.0, 1.0), Feature("p", "binary"), Feature("k", "integer", 0, 2)))
    prop = individual_fairness(dom, ["p"])
    res = verify_network(net, prop, time_limit=1.0)
    assert res.domain_size == 3.0
    assert res.certified <= 0.8 + 1e-9 and res.falsified <= 0.2 + 1e-9
    assert res.undecided < 1e-3
    assert res.statistical.ci_low <= 0.2 <= res.statistical.ci_high
    for c in res.counterexamples:
        assert (c.output > 0) != (c.output_prime > 0) and c.x[0] == c.x_prime[0] and c.x[2] == c.x_prime[2]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_credited_shares_of_open_boxes_stay_below_the_truth(seed, no_root_enumeration):
    # six free features 0..7 and a binary protected one: open boxes with enough features for
    # their Chernoff shares to count, and a grid small enough to enumerate
    rng = np.random.default_rng(seed)
    net = random_network(rng, 7, [12, 6], scale=0.5)
    net.weights[0][:, 6] *= 0.2
    dom = Domain(tuple(Feature(f"x{i}", "integer", 0, 7) for i in range(6)) + (Feature("p", "binary"),))
    prop = individual_fairness(dom, ["p"])
    grid = np.array(np.meshgrid(*[np.arange(8.0)] * 6, indexing="ij")).reshape(6, -1).T
    labels = [net.logit(np.column_stack([grid, np.full(len(grid), v)])) > 0 for v in (0.0, 1.0)]
    unfair = float(np.mean(labels[0] != labels[1]))
    credited = 0.0
    for budget in (10, 50, 200):
        run = Refinement(net, prop, seed, None)
        run.refine(None, 0.0, max_boxes=budget)
        cert, fal, und = run.shares()
        assert cert <= 1 - unfair + 1e-12 and fal <= unfair + 1e-12
        assert cert + fal + und == pytest.approx(1.0)
        credited = max(credited, settle.credited(run.totals.sums)[0] / run.pb.domain_size)
        st = run.result(None, 0.99, 10).statistical
        assert fal <= st.ci_low <= st.ci_high <= fal + und + 1e-12
    assert credited > 0.005  # the open boxes carried a proven-fair share
