"""The statistical estimate of tree ensembles' unfair share where the exact bounds have not met."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_trees_engine import _small_problem, brute_force_masks

from faircert.engines.trees import open as opened
from faircert.engines.trees.boxes import normalise
from faircert.engines.trees.open import Checker, OpenBoxes, estimate_unfair_share
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.engines.trees.verify import verify_trees
from faircert.properties import individual_fairness

CASES = [(0, None, False), (0, 0.7, False), (1, 0.5, False), (2, 0.7, False), (1, None, True), (1, 0.8, True)]


def _problem(seed: int = 0):
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    X, y, dom = _small_problem(seed)
    ir = load_model(xgb.XGBClassifier(n_estimators=12, max_depth=3, random_state=seed, n_jobs=1).fit(X, y))
    return ir, dom


def _prop(dom, eps, kappa, robust):
    if robust:
        return individual_fairness(dom, None, epsilon=float(eps), kappa=kappa, robustness=True)
    return individual_fairness(dom, "p", epsilon={"f1": eps, "f2": eps, "f3": eps}, kappa=kappa)


def _unstarted(ir, prop):
    """A quantification stopped before its first step: the whole domain is open."""
    q = quantify(ir, prop, time_limit=1e-12, options=TreeOptions(method="refinement"))
    lo, hi, open_slices = q.open_boxes()
    assert not q.complete and q.conf_settled == 0 and open_slices.all() and len(lo) == 1
    return q


@pytest.mark.parametrize("eps,kappa,robust", CASES)
def test_every_input_is_classified_exactly(eps, kappa, robust):
    """The per-input verdicts (confident, unfair) equal brute force on every grid point."""
    ir, dom = _problem()
    prop = _prop(dom, eps, kappa, robust)
    grid, conf, unfair = brute_force_masks(ir, dom, prop.protected, prop.epsilon, kappa, robust)
    q = _unstarted(ir, prop)
    check = Checker(ir, normalise(ir, dom), q)
    slice_of = np.zeros(len(grid), dtype=np.int64) if robust else (grid[:, 0] - dom.features[0].min).astype(np.int64)
    got_conf, got_unfair, unknown, twin = check(grid, slice_of, np.inf)
    assert not unknown.any()
    assert np.array_equal(got_conf, conf) and np.array_equal(got_unfair, unfair)
    assert unfair.any()  # the comparison covers unfair inputs
    # each unfair input's twin is a genuine counterexample
    x, xp = grid[unfair], twin[unfair]
    assert np.all(ir.predict(x) != ir.predict(xp))
    free = slice(None) if robust else slice(1, None)
    assert np.all(np.abs(x - xp)[:, free] <= eps)
    if not robust:
        assert np.all(x[:, 0] != xp[:, 0])


def test_corner_keys_compiled_and_by_numpy_agree(monkeypatch):
    """The compiled hash of the boxes' corners is numpy's, bit for bit (a canonical order either way)."""
    pytest.importorskip("numba")
    from faircert.engines.sampling.compiled import corner_keys

    rng = np.random.default_rng(0)
    lo = np.vstack([rng.normal(size=(500, 7)) * 1e3, rng.integers(-5, 90, (500, 7))])
    lo[0, 0] = -0.0
    got = corner_keys(lo)
    monkeypatch.setenv("FAIRCERT_NO_COMPILE", "1")
    by_numpy = opened.corner_keys(lo)
    assert got.dtype == by_numpy.dtype == np.uint64 and np.array_equal(got, by_numpy)
    assert len(np.unique(got)) == len(lo)  # distinct corners, distinct keys


@pytest.mark.parametrize("tied", [False, True])
def test_draws_from_open_boxes_depend_on_the_set_of_boxes_only(monkeypatch, tied):
    """The same open boxes shuffled into other parts (as a resumed run may hold them) give the same
    inputs, in the same order, from the same generator: each in its box, in an open slice. `tied`:
    every box with the same hash, so that their bounds order them."""
    if tied:
        monkeypatch.setattr(opened, "corner_keys", lambda lo: np.zeros(len(lo), dtype=np.uint64))
    ir, dom = _problem()
    q = _unstarted(ir, _prop(dom, 0, 0.7, False))
    (dlo,), (dhi,), _ = q.open_boxes()
    n1, n2 = int(dhi[1] - dlo[1]), int(dhi[2] - dlo[2])
    # the domain cut into unit-wide boxes along features 1 and 2, box k at (k // n2, k % n2)
    lo, hi = np.tile(dlo, (n1 * n2, 1)), np.tile(dhi, (n1 * n2, 1))
    lo[:, 1], lo[:, 2] = dlo[1] + np.arange(n1 * n2) // n2, dlo[2] + np.arange(n1 * n2) % n2
    hi[:, 1], hi[:, 2] = lo[:, 1] + 1, lo[:, 2] + 1
    rng = np.random.default_rng(0)
    open_slices = rng.random((len(lo), len(q.slices))) < 0.6
    open_slices[:, 0] = True  # every box open
    shuffled = rng.permutation(len(lo))
    parts = [(lo[k], hi[k], open_slices[k]) for k in np.split(shuffled, [len(lo) // 3, len(lo) // 2])]
    one = OpenBoxes(dataclasses.replace(q, open_parts=[(lo, hi, open_slices)]))
    other = OpenBoxes(dataclasses.replace(q, open_parts=parts))
    assert one.size == other.size == open_slices.sum() * np.prod(dhi[3:] - dlo[3:])
    x, slice_of = one.draw(np.random.default_rng(5), 3000)
    again = other.draw(np.random.default_rng(5), 3000)
    assert np.array_equal(x, again[0]) and np.array_equal(slice_of, again[1])
    box = (x[:, 1] - dlo[1]) * n2 + (x[:, 2] - dlo[2])
    assert open_slices[box.astype(np.int64), slice_of].all()
    assert np.array_equal(x[:, 0], q.slices[slice_of, 0])
    steps = zip(one.draws(np.random.default_rng(5), 5000, 1000), other.draws(np.random.default_rng(5), 5000, 1000))
    for (x, slice_of), (x_again, slice_again) in steps:
        assert len(x) == 1000 and np.array_equal(x, x_again) and np.array_equal(slice_of, slice_again)


@pytest.mark.parametrize(
    "eps,kappa,robust",
    [c if c[0] < 1 or c == (1, 0.8, True) else pytest.param(*c, marks=pytest.mark.slow) for c in CASES],
)
def test_estimate_of_an_open_domain_brackets_the_truth(eps, kappa, robust):
    ir, dom = _problem(1)
    prop = _prop(dom, eps, kappa, robust)
    _, conf, unfair = brute_force_masks(ir, dom, prop.protected, prop.epsilon, kappa, robust)
    truth = unfair.sum() / conf.sum()
    q = _unstarted(ir, prop)
    est = estimate_unfair_share(ir, q, 0.999, budget_s=5.0, seed=3)
    assert est.samples >= (2_000 if eps else 20_000) and est.confidence == 0.999
    assert est.ci_low <= truth <= est.ci_high
    assert est.ci_low <= est.unfair <= est.ci_high
    assert est.ci_high - est.ci_low < 0.05 and abs(est.unfair - truth) < 0.02


@pytest.mark.slow
def test_settled_part_is_exact_and_narrows_the_interval():
    """Half of the domain settled exactly (sizes by brute force): the estimate samples only the open
    half, brackets the truth and is narrower than sampling the whole domain."""
    ir, dom = _problem(0)
    prop = _prop(dom, 1, 0.7, False)
    grid, conf, unfair = brute_force_masks(ir, dom, prop.protected, prop.epsilon, 0.7, False)
    truth = unfair.sum() / conf.sum()
    q = _unstarted(ir, prop)
    whole = estimate_unfair_share(ir, q, 0.99, budget_s=5.0, seed=0)
    cut = dom.features[1].min + (dom.features[1].max - dom.features[1].min + 1) // 2
    settled = grid[:, 1] >= cut
    lo, hi, _ = q.open_boxes()
    hi[:, 1] = cut
    half = dataclasses.replace(
        q,
        open_parts=[(lo, hi, None)],
        nonconf=float((settled & ~conf).sum()),
        conf_settled=float((settled & conf).sum()),
        unfair=float((settled & unfair).sum()),
    )
    est = estimate_unfair_share(ir, half, 0.99, budget_s=5.0, seed=0)
    assert est.ci_low <= truth <= est.ci_high
    assert est.ci_high - est.ci_low < whole.ci_high - whole.ci_low
    lo, hi = half.bounds  # clipped to the sound range
    assert 1 - hi <= est.ci_low and est.ci_high <= 1 - lo


def test_verify_adds_an_estimate_only_while_bounds_are_open():
    ir, dom = _problem(0)
    prop = _prop(dom, 1, 0.5, False)
    exact = verify_trees(ir, prop, time_limit=60)
    assert exact.stats["converged"] and exact.statistical is None
    early = verify_trees(ir, prop, time_limit=1e-12, confidence=0.95, options=TreeOptions(method="refinement"))
    est = early.statistical
    assert not early.stats["converged"] and est is not None and est.confidence == 0.95
    assert est.ci_low <= exact.falsified <= est.ci_high
    assert 1 - early.measure_upper <= est.ci_low <= est.ci_high <= 1 - early.measure_lower
    assert early.to_dict()["statistical"]["samples"] == est.samples


def _unfair_set(ir, dom, prop):
    grid, conf, unfair = brute_force_masks(ir, dom, prop.protected, prop.epsilon, prop.kappa, False)
    return {tuple(r) for r in grid[unfair].tolist()}, grid[unfair]


@pytest.mark.parametrize("kappa,compiled", [(None, True), (0.7, True), (0.7, False)])
def test_sampling_an_unfinished_region_is_uniform_over_the_exact_region(monkeypatch, kappa, compiled):
    """Epsilon 0, nothing settled: every draw is unfair and the draws spread evenly over the region
    (with the compiled kernels where numba is installed, and by numpy)."""
    from faircert.engines.trees.sampling import region_is_exact, sample_unfair

    if not compiled:
        monkeypatch.setenv("FAIRCERT_NO_COMPILE", "1")
    ir, dom = _problem(0)
    prop = _prop(dom, 0, kappa, False)
    region, points = _unfair_set(ir, dom, prop)
    q = _unstarted(ir, prop)
    assert region_is_exact(q) and len(q.piece_lo) == 0
    x, xp, rejected = sample_unfair(ir, q, 30_000, seed=2)
    assert len(x) == 30_000 and rejected == 0
    assert {tuple(r) for r in x.tolist()} <= region
    assert np.all(ir.predict(x) != ir.predict(xp)) and np.all(x[:, 0] != xp[:, 0])
    assert np.array_equal(x[:, 1:], xp[:, 1:])
    # uniform: each region point is drawn 30,000 / |region| times on average; compare per protected value
    for v in np.unique(points[:, 0]):
        share = np.mean(points[:, 0] == v)
        assert abs(np.mean(x[:, 0] == v) - share) < 4 * np.sqrt(share * (1 - share) / 30_000) + 1e-9


@pytest.mark.parametrize("eps,kappa,robust", [(1, 0.5, False), (2, None, False), (1, 0.8, True)])
def test_sampling_an_unfinished_region_with_tolerance_is_uniform_over_the_exact_region(eps, kappa, robust):
    """Epsilon > 0, nothing settled: each draw's neighbourhood is searched; the kept draws are the
    exact region's points, spread evenly, each with a genuine twin."""
    from faircert.engines.trees.sampling import region_is_exact, sample_unfair

    ir, dom = _problem(0)
    prop = _prop(dom, eps, kappa, robust)
    grid, conf, unfair = brute_force_masks(ir, dom, prop.protected, prop.epsilon, kappa, robust)
    region = {tuple(r) for r in grid[unfair].tolist()}
    q = _unstarted(ir, prop)
    assert region_is_exact(q)
    x, xp, rejected = sample_unfair(ir, q, 20_000, seed=3)
    assert len(x) == 20_000 and rejected == 0 and {tuple(r) for r in x.tolist()} <= region
    assert np.all(ir.predict(x) != ir.predict(xp))
    free = slice(None) if robust else slice(1, None)
    assert np.all(np.abs(x - xp)[:, free] <= eps)
    f1 = grid[unfair][:, 1]
    for v in np.unique(f1)[:3]:  # uniform: the share of each f1 value matches the region's (4 sigma)
        share = np.mean(f1 == v)
        assert abs(np.mean(x[:, 1] == v) - share) < 4 * np.sqrt(share * (1 - share) / 20_000) + 1e-9


def test_sampling_mixes_proven_pieces_and_open_boxes_by_size():
    """Half the region proven (pieces), half open: the draws fall in each half as often as its size."""
    from faircert.engines.trees.sampling import region_is_exact, sample_unfair

    ir, dom = _problem(1)
    prop = _prop(dom, 0, 0.5, False)
    region, points = _unfair_set(ir, dom, prop)
    q = quantify(ir, prop, time_limit=60).explicit()  # the pieces one by one, to clip them
    assert q.complete
    cut = dom.features[1].min + (dom.features[1].max - dom.features[1].min + 1) // 2
    piece_lo = q.piece_lo.copy()
    piece_lo[:, 1] = np.maximum(piece_lo[:, 1], cut)  # the proven half: pieces clipped to f1 >= cut
    keep = piece_lo[:, 1] < q.piece_hi[:, 1]
    lo, hi = np.array([f.min for f in dom.features], float), np.array([f.max + 1 for f in dom.features], float)
    hi[1] = cut
    half = dataclasses.replace(
        q,
        complete=False,
        piece_lo=piece_lo[keep],
        piece_hi=q.piece_hi[keep],
        piece_twin=q.piece_twin[keep],
        open_parts=[(lo[None], hi[None], None)],
    )
    assert region_is_exact(half)
    x, _, rejected = sample_unfair(ir, half, 20_000, seed=5)
    assert len(x) == 20_000 and rejected == 0 and {tuple(r) for r in x.tolist()} <= region
    share = np.mean(points[:, 1] < cut)
    assert 0 < share < 1
    assert abs(np.mean(x[:, 1] < cut) - share) < 4 * np.sqrt(share * (1 - share) / 20_000)


def test_twin_labels_near_the_threshold_follow_the_frameworks_float32_sum():
    """Margins 1 + 2**-25 - 1 and 1 - 2**-25 - 1: float64 gives them opposite signs, XGBoost's
    float32 running sum gives 0 to both (class 0), so no input is unfair."""
    from types import SimpleNamespace

    from faircert.engines.trees.open import Verdicts
    from faircert.models.trees import Tree, TreeEnsemble

    leaf = -1
    one = Tree([0, 0, 0], [5.0, 0, 0], [1, leaf, leaf], [2, leaf, leaf], [0.0, 1.0, 1.0])
    tiny = Tree([1, 0, 0], [1.0, 0, 0], [1, leaf, leaf], [2, leaf, leaf], [0.0, 2.0**-25, -(2.0**-25)])
    minus = Tree([0, 0, 0], [5.0, 0, 0], [1, leaf, leaf], [2, leaf, leaf], [0.0, -1.0, -1.0])
    ir = TreeEnsemble([one, tiny, minus], 2, split="<", input_float32=True, sum_float32=True)
    x = np.array([[3.0, 0.0], [3.0, 1.0]])
    assert list(ir.predict(x)) == [0, 0]
    q = SimpleNamespace(robustness=False, protected=(1,), kappa=None, slices=np.array([[0.0, 0.0], [0.0, 1.0]]))
    label, conf, unfair, _ = Verdicts(ir, q)(x, np.array([0, 1]))
    assert list(label) == [0, 0] and not unfair.any()
