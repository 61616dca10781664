"""Epsilon > 0 fairness and robustness by one box refinement (trees_dilated) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_trees_engine import TOY_DOMAIN, _small_problem, brute_force, toy_ensemble
from test_trees_joint import _xgb, two_protected_problem

from faircert.engines.trees.boxes import domain_box, normalise
from faircert.engines.trees.dilated import cell_of, find_label
from faircert.engines.trees.joint import SliceBounds
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.engines.trees.sampling import sample_unfair
from faircert.properties import individual_fairness


def _grid(lo, hi):
    axes = [np.arange(a, b) for a, b in zip(lo, hi)]
    return np.array(list(itertools.product(*axes)), dtype=float)


@pytest.mark.parametrize("box", [([0, 0, 0], [1001, 1, 101]), ([250, 2, 40], [700, 3, 60]), ([0, 0, 0], [300, 1, 50])])
def test_find_label_finds_a_point_exactly_when_one_exists(box):
    ens = toy_ensemble()
    nt = normalise(ens, TOY_DOMAIN)
    sb = SliceBounds(nt, [], domain_box(TOY_DOMAIN)[0][None])
    lo, hi = np.array([box[0]], float), np.array([box[1]], float)
    labels = ens.predict(_grid(lo[0], hi[0]))
    for want in (1, -1):
        point, resolved = find_label(ens, nt, sb, lo, hi, np.zeros(1, np.int64), np.array([want]), 1e-9)
        assert resolved.all()
        exists = bool(np.any(labels == (1 if want == 1 else 0)))
        assert np.isfinite(point[0, 0]) == exists
        if exists:  # the point is in the box, has the label, and its whole cell shares it
            assert np.all(point >= lo) and np.all(point < hi)
            assert ens.predict(point)[0] == (1 if want == 1 else 0)
            clo, chi = cell_of(nt, point)
            assert np.all(clo <= point) and np.all(point < chi)
            inside = _grid(np.maximum(clo[0], point[0] - 3), np.minimum(chi[0], point[0] + 4))
            assert np.all(ens.predict(inside) == ens.predict(point)[0])


@pytest.mark.parametrize("kappa", [None, 0.6])
def test_two_protected_features_with_epsilon(kappa):
    ir, dom = two_protected_problem(n=20, depth=3)
    prop = individual_fairness(dom, ["p", "q"], epsilon={"f2": 1, "f3": 2, "f4": 1}, kappa=kappa)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, kappa, False)
    seen = []
    q = quantify(ir, prop, progress=seen.append, options=TreeOptions(method="refinement"))
    assert q.complete and q.measured_upper == conf and q.unfair == unfair and q.conf_settled == conf
    truth = 1 - unfair / conf
    for s in seen:  # every step brackets the truth, and the bounds only tighten
        assert s.measure_lower - 1e-12 <= truth <= s.measure_upper + 1e-12
    assert [s.measure_lower for s in seen] == sorted(s.measure_lower for s in seen)
    assert [s.measure_upper for s in seen] == sorted((s.measure_upper for s in seen), reverse=True)
    x, xp, rejected = sample_unfair(ir, q, 3000, seed=0)
    assert rejected == 0 and (len(x) == 3000 or unfair == 0)
    assert np.all(ir.predict(x) != ir.predict(xp)) and np.all(np.abs(x - xp)[:, 2:] <= [1, 2, 1])


def test_robustness_time_limited_bounds_are_sound():
    X, y, dom = _small_problem(11, n_features=5)
    ir = _xgb(X, y, 3, n=30, depth=4)
    prop = individual_fairness(dom, None, epsilon=1.0, kappa=0.6, robustness=True)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.6, True)
    truth = 1 - unfair / conf
    widths = []
    for limit in (1e-6, 1e-3, 1e-2, None):
        lo, hi = quantify(ir, prop, time_limit=limit, options=TreeOptions(method="refinement")).bounds
        assert lo - 1e-12 <= truth <= hi + 1e-12
        widths.append(hi - lo)
    assert widths[-1] == pytest.approx(0.0, abs=1e-12)
