"""The boxes engine on the shared benchmark networks with exactly known answers."""

import numpy as np
import pytest

from faircert.domain import Domain
from faircert.engines.network import refine as boxes
from faircert.engines.network import settle
from faircert.engines.network.refine import verify_network
from faircert.models.io.nnet import load_nnet
from faircert.properties import individual_fairness


def header_case(path, protected):
    net = load_nnet(path)
    dom = Domain.from_bounds(net.input_lower, net.input_upper)
    return net, individual_fairness(dom, [protected])


@pytest.mark.parametrize("k,unfair", [(1, 17), (2, 15), (3, 12), (4, 14)])
def test_compas_exact_unfair_points(shared_benchmarks, k, unfair):
    net, prop = header_case(shared_benchmarks / "models" / "compas" / f"compas-{k}.nnet", 3)
    res = verify_network(net, prop, time_limit=None, max_counterexamples=1000)
    assert res.domain_size == 624
    assert res.undecided == 0
    assert round(res.falsified * 624) == unfair and res.certified == pytest.approx(1 - unfair / 624)
    assert res.verdict == "unfair" and len(res.counterexamples) == unfair
    for c in res.counterexamples:
        assert (net.logit(np.array([c.x]))[0] > 0) != (net.logit(np.array([c.x_prime]))[0] > 0)
        assert np.array_equal(np.delete(c.x, 3), np.delete(c.x_prime, 3))


def test_compas_by_bounding_and_splitting(shared_benchmarks, monkeypatch):
    monkeypatch.setattr(settle, "EXACT_POINTS", 0)
    monkeypatch.setattr(settle, "EXACT_PER_INPUT", 1)
    net, prop = header_case(shared_benchmarks / "models" / "compas" / "compas-1.nnet", 3)
    res = verify_network(net, prop, time_limit=None)
    assert res.undecided == 0 and round(res.falsified * 624) == 17
    assert res.stats["boxes_bounded"] > 0


def test_toy_network_shares(shared_benchmarks, monkeypatch):
    # 30 (x1, x3) pairs; enumeration: 5 of them are unfair (e.g. x1 = 1, x3 = 3 from the paper)
    net, prop = header_case(shared_benchmarks / "models" / "example.nnet", 1)
    x = np.array([[a, p, c] for a in range(1, 6) for c in range(6) for p in (0, 1)], float)
    lab = (net.logit(x) > 0).reshape(30, 2)
    truth = int((lab[:, 0] != lab[:, 1]).sum())
    res = verify_network(net, prop, time_limit=None)
    assert res.undecided == 0 and round(res.falsified * 30) == truth == 5
    assert any(c.x[0] == 1 and c.x[2] == 3 for c in res.counterexamples)
    # refinement path: x1 in {4, 5} (40%) is certified by the first split's bounds
    monkeypatch.setattr(settle, "EXACT_POINTS", 0)
    monkeypatch.setattr(settle, "EXACT_PER_INPUT", 0)
    run = boxes.Refinement(net, prop, 0, None)
    run.refine(None, 0.0, max_boxes=2)
    assert run.shares()[0] >= 0.4
    run = boxes.Refinement(net, prop, 0, None)
    run.refine(None, 0.0)
    assert run.shares() == pytest.approx((1 - truth / 30, truth / 30, 0.0)) and run.stopped == "done"
