"""Tree-ensemble quantification on real-valued features (sizes are volumes) against an exact cell oracle."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from faircert.domain import Domain, Feature
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.engines.trees.sampling import sample_unfair
from faircert.engines.trees.verify import verify_trees
from faircert.properties import individual_fairness


def _block_any(mask: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether mask has a True cell in each block [lo, hi] (inclusive index ranges, one row per block)."""
    d = mask.ndim
    csum = np.pad(mask.astype(np.int64), [(1, 0)] * d)
    for axis in range(d):
        csum = np.cumsum(csum, axis=axis)
    total = np.zeros(len(lo), dtype=np.int64)
    for corner in itertools.product((0, 1), repeat=d):
        idx = tuple(np.where(c, hi[:, k] + 1, lo[:, k]) for k, c in enumerate(corner))
        total += (-1) ** (d - sum(corner)) * csum[idx]
    return total > 0


def _cuts(t: np.ndarray) -> np.ndarray:
    """Every point where a split on thresholds t may change sides: t itself and, for models that round
    inputs to float32, the midpoints between t's float32 neighbours (a sliver between t and such a
    midpoint goes the other way)."""
    t32 = t.astype(np.float32)
    below, above = np.nextafter(t32, np.float32(-np.inf)), np.nextafter(t32, np.float32(np.inf))
    mids = [(below.astype(float) + t32) / 2, (t32.astype(float) + above) / 2]
    return np.unique(np.concatenate([t] + mids))


def real_oracle(ir, domain: Domain, protected: list[int], eps: np.ndarray, kappa: float | None):
    """(confident volume, unfair volume) over a domain of real features plus discrete protected ones.

    Between consecutive split cuts (coarse cells) the label is constant; between consecutive cuts,
    cuts +- epsilon and domain bounds (fine cells) so is the set of coarse cells an
    epsilon-neighbourhood reaches, so the unfair set is a union of fine cells, each decided at its
    midpoint. Robustness when `protected` is empty.
    """
    real = [i for i in range(len(domain)) if i not in protected]
    feats = domain.features
    ths = {i: _cuts(np.concatenate([t.threshold[(~t.is_leaf) & (t.feature == i)] for t in ir.trees])) for i in real}
    coarse, fine = [], []
    for i in real:
        a, b = feats[i].min, feats[i].max
        k = np.unique(np.concatenate([[a, b], ths[i][(ths[i] > a) & (ths[i] < b)]]))
        f = np.concatenate([k, k - eps[i], k + eps[i]])
        coarse.append(k)
        fine.append(np.unique(f[(f >= a) & (f <= b)]))
    combos = list(itertools.product(*[range(int(feats[p].min), int(feats[p].max) + 1) for p in protected])) or [()]

    def points(axes, combo):
        mids = [(c[:-1] + c[1:]) / 2 for c in axes]
        grid = np.stack(np.meshgrid(*mids, indexing="ij"), axis=-1).reshape(-1, len(real))
        x = np.zeros((len(grid), len(domain)))
        x[:, real] = grid
        x[:, protected] = combo
        return x

    shape = tuple(len(c) - 1 for c in coarse)
    coarse_label = {v: ir.predict(points(coarse, v)).reshape(shape) for v in combos}
    mids = np.stack(np.meshgrid(*[(c[:-1] + c[1:]) / 2 for c in fine], indexing="ij"), axis=-1).reshape(-1, len(real))
    vol = np.prod(np.stack(np.meshgrid(*[np.diff(c) for c in fine], indexing="ij"), axis=-1), axis=-1).ravel()
    # coarse cells [K_j, K_j+1) meeting the closed neighbourhood [m - e, m + e] (within the domain)
    lo_idx = np.stack(
        [
            np.searchsorted(c, np.maximum(c[0], mids[:, k] - eps[i]), "right") - 1
            for k, (i, c) in enumerate(zip(real, coarse))
        ],
        axis=1,
    )
    hi_idx = np.stack(
        [
            np.minimum(np.searchsorted(c, np.minimum(c[-1], mids[:, k] + eps[i]), "right") - 1, len(c) - 2)
            for k, (i, c) in enumerate(zip(real, coarse))
        ],
        axis=1,
    )
    conf_vol = unfair_vol = 0.0
    for v in combos:
        x = points(fine, v)
        label = ir.predict(x)
        conf = ir.confidence(x) > kappa if kappa is not None else np.ones(len(x), dtype=bool)
        unfair = np.zeros(len(x), dtype=bool)
        for w in combos if not protected else [w for w in combos if w != v]:
            for lab in (0, 1):
                rows = np.nonzero(label == lab)[0]
                unfair[rows] |= _block_any(coarse_label[w] == 1 - lab, lo_idx[rows], hi_idx[rows])
        conf_vol += float(vol[conf].sum())
        unfair_vol += float(vol[conf & unfair].sum())
    return conf_vol, unfair_vol


def _real_problem(seed: int, robust: bool):
    """Fairness: a protected code and three real features; robustness: three real features."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, (500, 4))
    X[:, 0] = rng.integers(0, 3, 500)
    y = (X[:, 1] + 0.5 * X[:, 2] - 0.3 * X[:, 3] + 0.8 * X[:, 0] + rng.normal(0, 1.5, 500) > 6).astype(int)
    if robust:
        return (
            X[:, :3],
            y,
            Domain((Feature("x0", "real", 0, 2), Feature("x1", "real", 0, 10), Feature("x2", "real", 0, 10))),
        )
    return (
        X,
        y,
        Domain((Feature("p", "categorical", 0, 2),) + tuple(Feature(f"x{i}", "real", 0, 10) for i in (1, 2, 3))),
    )


def _real_models(X, y, seed):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import RandomForestClassifier

    from faircert.models.io import load_model

    yield load_model(xgb.XGBClassifier(n_estimators=8, max_depth=3, random_state=seed, n_jobs=1).fit(X, y))
    yield load_model(
        lgb.LGBMClassifier(n_estimators=6, num_leaves=5, min_child_samples=10, verbose=-1, random_state=seed).fit(X, y)
    )
    yield load_model(RandomForestClassifier(4, max_depth=3, random_state=seed).fit(X, y))


@functools.cache
def _case(robust: bool, eps: float, kappa: float | None):
    """The models of the real problem with each one's property and oracle (shared by both methods)."""
    X, y, dom = _real_problem(0, robust)
    out = []
    for ir in _real_models(X, y, 0):
        if robust:
            prop = individual_fairness(dom, None, epsilon=eps, kappa=kappa, robustness=True)
        else:
            prop = individual_fairness(dom, "p", epsilon={"x1": eps, "x2": eps, "x3": eps}, kappa=kappa)
        out.append((ir, prop, real_oracle(ir, dom, list(prop.protected), np.asarray(prop.epsilon, dtype=float), kappa)))
    return out


@pytest.mark.parametrize("method", [pytest.param("regions", marks=pytest.mark.slow), "refinement"])
@pytest.mark.parametrize(
    "robust,eps,kappa",
    [
        (False, 0.0, 0.5),
        pytest.param(False, 0.7, None, marks=pytest.mark.slow),
        pytest.param(False, 1.5, 0.7, marks=pytest.mark.slow),
        (True, 0.4, 0.5),
        (True, 1.0, 0.8),
    ],
)
def test_real_domains_match_the_cell_oracle(method, robust, eps, kappa):
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    free = slice(None) if robust else slice(1, None)
    for ir, prop, (conf, unfair) in _case(robust, eps, kappa):
        seen = []
        res = verify_trees(ir, prop, progress=seen.append, options=TreeOptions(method=method))
        truth = 1.0 - unfair / conf if conf else 1.0
        # float32 thresholds: the oracle's cells end at the raw thresholds, the engine's where rounding
        # to float32 crosses them, a relative 1e-7 apart
        total = res.domain_size
        assert res.stats["converged"], (type(ir), eps)
        assert res.confident_size == pytest.approx(conf, abs=1e-6 * total), (type(ir), eps)
        assert res.unfair_size == pytest.approx(unfair, abs=1e-6 * total), (type(ir), eps)
        assert res.measure_lower == pytest.approx(truth, abs=1e-6) and res.measure_lower <= res.measure_upper
        for s in seen:
            assert s.measure_lower - 1e-6 <= truth <= s.measure_upper + 1e-6
        if unfair > 1e-6 * total:
            assert res.verdict == "unfair" and res.counterexamples
            x = np.array([c.x for c in res.counterexamples])
            xp = np.array([c.x_prime for c in res.counterexamples])
            assert np.all(ir.predict(x) != ir.predict(xp))
            assert np.all(np.abs(x - xp)[:, free] <= eps * (1 + 1e-9))


def test_time_limited_real_refinement_is_sound_and_samples_its_region():
    pytest.importorskip("xgboost")
    import xgboost as xgb

    from faircert.models.io import load_model

    X, y, dom = _real_problem(1, False)
    ir = load_model(xgb.XGBClassifier(n_estimators=8, max_depth=3, random_state=0, n_jobs=1).fit(X, y))
    prop = individual_fairness(dom, "p", epsilon={"x1": 0.5, "x2": 0.5, "x3": 0.5}, kappa=0.6)
    conf, unfair = real_oracle(ir, dom, [0], np.asarray(prop.epsilon, dtype=float), 0.6)
    truth = 1.0 - unfair / conf
    for limit in (1e-3, 1e-2, 0.1):
        lo, hi = quantify(ir, prop, time_limit=limit, options=TreeOptions(method="refinement")).bounds
        assert lo - 1e-6 <= truth <= hi + 1e-6
    q = quantify(ir, prop, options=TreeOptions(method="refinement"))
    assert q.complete and q.unfair == pytest.approx(unfair, abs=1e-6 * q.total)
    x, xp, rejected = sample_unfair(ir, q, 3000, seed=0)
    assert rejected == 0 and len(x) == 3000
    assert np.all(ir.predict(x) != ir.predict(xp)) and np.all(ir.confidence(x) > 0.6)
    assert np.all(np.abs(x - xp)[:, 1:] <= 0.5 * (1 + 1e-9)) and np.all(x[:, 0] != xp[:, 0])
