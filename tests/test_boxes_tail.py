"""Chernoff shares of a box: never more than the enumerated truth, and useful where they should be."""

import itertools

import numpy as np
import pytest

from faircert.engines.network.tail import decided_shares, failure_bound


def grid(lo, hi):
    return np.array(list(itertools.product(*(range(int(a), int(b) + 1) for a, b in zip(lo, hi)))), float)


def test_failure_bound_covers_enumeration_on_integer_boxes():
    rng = np.random.default_rng(0)
    useful = 0
    for _ in range(300):
        d = int(rng.integers(1, 4))
        lo = rng.integers(-3, 3, size=d).astype(float)
        hi = lo + rng.integers(0, 7, size=d)
        a = rng.normal(size=d)
        x = grid(lo, hi)
        m = (lo + hi) / 2
        t = float(rng.uniform(-1, 2) * np.abs(a * (hi - lo)).sum() / 2 + 1e-3)
        exact = np.mean((x - m) @ a <= -t)
        bound = failure_bound(a[None], np.array([t]), (hi - lo + 1)[None], np.ones(d, bool))[0]
        assert bound >= exact - 1e-12
        useful += bound < 0.5
    assert useful > 30  # the bound is not vacuous where the mean is far past the threshold


def test_failure_bound_covers_exact_volume_on_real_intervals():
    # x uniform on [-w/2, w/2]: P(a x <= -t) = max(0, 1/2 - t / (|a| w))
    for a, w, t in [(1.0, 2.0, 0.5), (-3.0, 1.0, 1.0), (0.5, 10.0, 2.4), (2.0, 1.0, 0.9)]:
        exact = max(0.0, 0.5 - t / (abs(a) * w))
        bound = failure_bound(np.array([[a]]), np.array([t]), np.array([[w]]), np.zeros(1, bool))[0]
        assert exact - 1e-12 <= bound <= 1.0
    # a form constant over the box: decided whole; a mean at or before the threshold: nothing
    assert failure_bound(np.zeros((1, 2)), np.array([0.1]), np.ones((1, 2)), np.ones(2, bool))[0] == 0.0
    assert failure_bound(np.ones((1, 2)), np.array([0.0]), np.ones((1, 2)), np.ones(2, bool))[0] == 1.0


def test_failure_bound_on_a_sum_of_many_features_is_tight():
    # 10 features in 0..9 with unit weights: the sum has mean 45 and sd ~9.1; P(sum <= 15) ~ 5e-4
    a = np.ones((1, 10))
    bound = failure_bound(a, np.array([29.5]), np.full((1, 10), 10.0), np.ones(10, bool))[0]
    assert 5e-4 < bound < 0.02


@pytest.mark.parametrize("seed", range(4))
def test_decided_shares_never_exceed_enumerated_truth(seed):
    rng = np.random.default_rng(seed)
    B, T, d = 40, 3, 3
    lo = rng.integers(0, 4, size=(B, d)).astype(float)
    hi = lo + rng.integers(1, 6, size=(B, d))
    # lower forms L of each twin, and forms N <= -L of its negation (as the bounds give them)
    a0 = rng.normal(size=(B, 1, d)) + 0.1 * rng.normal(size=(B, T, d))  # twins of a box alike
    half_range = (np.abs(a0) * (hi - lo)[:, None, :]).sum(axis=2) / 2
    c0 = rng.uniform(-1.0, 1.0, size=(B, 1)) * half_range - np.einsum("btd,bd->bt", a0, (lo + hi) / 2)
    delta = 0.05 * rng.normal(size=(B, T, d))
    a1 = -a0 - delta
    dmin = np.minimum(delta * lo[:, None], delta * hi[:, None]).sum(axis=2)
    c1 = -c0 + dmin - 0.1 * half_range * rng.random(size=(B, T))  # -L - N >= 0 on the box
    a, c = np.stack([a0, a1]), np.stack([c0, c1])
    shift = -0.2 * half_range[None] * rng.random(size=(2, B, T))  # windows: fair forms lowered
    disc = np.ones(d, bool)
    tol = 1e-9
    for fair_forms in (None, (a, c + shift)):
        fair, unfair = decided_shares(a, c, lo, hi, disc, tol, fair_forms)
        fa, fc = (a, c) if fair_forms is None else fair_forms
        for b in range(B):
            x = grid(lo[b], hi[b])
            own = np.einsum("std,nd->snt", a[:, b], x) + c[:, b][:, None]
            win = np.einsum("std,nd->snt", fa[:, b], x) + fc[:, b][:, None]
            truly_fair = np.mean((win[0] > tol).all(1) | (win[1] > tol).all(1))
            pos, neg = own[0] > tol, own[1] > tol
            apart = [(pos[:, j] & neg[:, k]) for j in range(T) for k in range(T) if j != k]
            truly_unfair = np.mean(np.any(apart, axis=0))
            assert fair[b] <= truly_fair + 1e-12
            assert unfair[b] <= truly_unfair + 1e-12
        assert fair.max() > 0.2  # some boxes get a real share


def test_decided_shares_of_no_boxes():
    fair, unfair = decided_shares(
        np.zeros((2, 0, 2, 3)), np.zeros((2, 0, 2)), np.zeros((0, 3)), np.zeros((0, 3)), np.ones(3, bool), 0.0
    )
    assert fair.shape == unfair.shape == (0,)


def test_twins_apart_give_an_unfair_share():
    # one box 0..9 x 0..9; twin 0: f >= x0 + x1 - 2, twin 1: -f >= x0 + x1 - 3 (and loose other forms)
    lo, hi = np.zeros((1, 2)), np.full((1, 2), 9.0)
    a = np.zeros((2, 1, 2, 2))
    c = np.full((2, 1, 2), -100.0)
    a[0, 0, 0], c[0, 0, 0] = 1.0, -2.0
    a[1, 0, 1], c[1, 0, 1] = 1.0, -3.0
    fair, unfair = decided_shares(a, c, lo, hi, np.ones(2, bool), 1e-9)
    x = grid(lo[0], hi[0])
    truth = np.mean(x.sum(axis=1) > 3)
    assert fair[0] == 0.0
    assert 0.4 < unfair[0] <= truth


def test_log_mgf_matches_direct_sums_and_never_falls_below_them():
    from faircert.engines.network.tail import _log_mgf

    for n in (1, 2, 7, 100, 5000):
        k = np.arange(n) - (n - 1) / 2
        for u in (1e-9, 1e-6, 3e-4, 0.01, 0.3, 2.0, 40.0):
            direct = np.log(np.mean(np.exp(u * k - u * k.max()))) + u * k.max()  # stable log-mean-exp
            for every in (True, False):  # the all-integer branch, and the mixed one on an integer feature
                got = _log_mgf(np.array([u]), np.array([float(n)]), np.array([True]), every)[0]
                assert got >= direct - 1e-12 * max(1.0, abs(direct))
                assert got == pytest.approx(direct, rel=1e-6, abs=1e-12)
    # an interval of width w: log(sinh(u w/2) / (u w/2))
    for w, u in ((1.0, 1e-7), (2.0, 0.5), (10.0, 3.0)):
        z = u * w / 2
        got = _log_mgf(np.array([u]), np.array([w]), np.array([False]), False)[0]
        assert got == pytest.approx(np.log(np.sinh(z) / z), rel=1e-6, abs=1e-15)
