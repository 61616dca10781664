"""Exact tree-ensemble quantification against the paper's toy ensemble and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.ndimage import maximum_filter

from faircert.domain import Domain, Feature
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.engines.trees.sampling import sample_unfair
from faircert.engines.trees.verify import verify_trees
from faircert.errors import PropertyError
from faircert.models.trees import Tree, TreeEnsemble
from faircert.properties import individual_fairness

L = -1


def brute_force(
    ir, domain: Domain, protected: tuple[int, ...], eps: np.ndarray, kappa: float | None, robustness: bool
) -> tuple[float, float]:
    """(|X_kappa|, |X_unfair|) by enumerating every grid point and dilating label masks."""
    _, conf, unfair = brute_force_masks(ir, domain, protected, eps, kappa, robustness)
    return float(conf.sum()), float(unfair.sum())


def brute_force_masks(
    ir, domain: Domain, protected: tuple[int, ...], eps: np.ndarray, kappa: float | None, robustness: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grid points, confident mask, unfair mask) over the whole grid (masks in grid-point order)."""
    axes = [np.arange(f.min, f.max + 1) for f in domain.features]
    shape = tuple(len(a) for a in axes)
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes)).astype(float)
    label = ir.predict(grid).reshape(shape)
    conf = (ir.confidence(grid) > kappa).reshape(shape) if kappa is not None else np.ones(shape, dtype=bool)
    eps = np.floor(np.asarray(eps, dtype=float) + 1e-9).astype(int)
    unfair = np.zeros(shape, dtype=bool)
    if robustness:
        size = tuple(2 * e + 1 for e in eps)
        for lab in (0, 1):
            reach = maximum_filter((label == 1 - lab).astype(np.uint8), size=size, mode="constant") > 0
            unfair |= (label == lab) & reach
    else:
        free = [i for i in range(len(shape)) if i not in protected]
        size = tuple(2 * eps[i] + 1 if i in free else 1 for i in range(len(shape)))
        combos = list(itertools.product(*[range(shape[i]) for i in protected]))
        for lab in (0, 1):
            reach = {}
            for v in combos:
                idx = tuple(
                    slice(None) if i in free else slice(v[protected.index(i)], v[protected.index(i)] + 1)
                    for i in range(len(shape))
                )
                reach[v] = maximum_filter((label[idx] == 1 - lab).astype(np.uint8), size=size, mode="constant") > 0
            for v in combos:
                idx = tuple(
                    slice(None) if i in free else slice(v[protected.index(i)], v[protected.index(i)] + 1)
                    for i in range(len(shape))
                )
                other = np.zeros_like(reach[v])
                for w in combos:
                    if w != v:
                        other |= reach[w]
                unfair[idx] |= (label[idx] == lab) & other
    unfair &= conf
    return grid, conf.ravel(), unfair.ravel()


def _tree(nodes):
    f, t, left, right, v = zip(*nodes)
    return Tree(f, t, left, right, v)


def toy_ensemble() -> TreeEnsemble:
    """The 3-tree GBDT of the paper's Fig. 1 / Appendix B (x < t goes left)."""
    t1 = _tree([(1, 2, 1, 2, 0), (0, 300, 3, 4, 0), (0, 0, L, L, -0.02), (0, 0, L, L, -0.17), (0, 0, L, L, 0.85)])
    t2 = _tree(
        [
            (0, 600, 1, 2, 0),
            (1, 3, 3, 4, 0),
            (2, 50, 5, 6, 0),
            (0, 0, L, L, 0.7),
            (0, 0, L, L, 1.62),
            (0, 0, L, L, -0.19),
            (0, 0, L, L, 1.75),
        ]
    )
    t3 = _tree([(2, 50, 1, 2, 0), (0, 0, L, L, 0.72), (0, 0, L, L, -1.3)])
    return TreeEnsemble([t1, t2, t3], 3, split="<", input_float32=False)


TOY_DOMAIN = Domain(
    (Feature("income", "integer", 0, 1000), Feature("race", "categorical", 0, 4), Feature("age", "integer", 0, 100))
)


@pytest.mark.parametrize(
    "eps,kappa,conf,unfair,measure",
    [
        (0, 0.5, 505505, 153000, 0.697332),
        (5, 0.5, 505505, 167645, 0.668361),
        (5, 0.8, 120000, 10525, 0.912292),
        (0, 0.8, 120000, 0, 1.0),
    ],
)
def test_toy_ensemble_matches_paper_values(eps, kappa, conf, unfair, measure):
    prop = individual_fairness(TOY_DOMAIN, "race", epsilon={"income": eps, "age": eps}, kappa=kappa)
    res = verify_trees(toy_ensemble(), prop)
    assert res.confident_size == conf and res.unfair_size == unfair
    assert res.measure_lower == res.measure_upper == pytest.approx(measure, abs=5e-7)
    assert res.stats["converged"]
    assert res.verdict == ("fair" if unfair == 0 else "unfair")
    assert res.falsified == pytest.approx(unfair / conf) and res.undecided == pytest.approx(0.0, abs=1e-12)
    for c in res.counterexamples:  # re-checked pairs: race differs, others within eps, labels differ
        assert c.x[1] != c.x_prime[1] and abs(c.x[0] - c.x_prime[0]) <= eps and abs(c.x[2] - c.x_prime[2]) <= eps
        assert (c.output > 0.5) != (c.output_prime > 0.5) and max(c.output, 1 - c.output) > kappa


def _small_problem(seed: int, n_features: int = 4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, n_features)
    X = np.stack([rng.integers(0, s, 400) for s in sizes], axis=1).astype(float)
    w = rng.normal(size=n_features)
    y = ((X / sizes) @ w + rng.normal(0, 0.3, 400) > np.median((X / sizes) @ w)).astype(int)
    feats = [Feature(f"f{i}", "integer", 0, int(s) - 1) for i, s in enumerate(sizes)]
    feats[0] = Feature("p", "categorical", 0, int(sizes[0]) - 1)
    return X, y, Domain(tuple(feats))


def _models(X, y, seed):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    from faircert.models.io import load_model

    yield load_model(xgb.XGBClassifier(n_estimators=12, max_depth=3, random_state=seed, n_jobs=1).fit(X, y))
    yield load_model(
        lgb.LGBMClassifier(n_estimators=12, num_leaves=6, min_child_samples=5, verbose=-1, random_state=seed).fit(X, y)
    )
    yield load_model(RandomForestClassifier(8, max_depth=4, random_state=seed).fit(X, y))
    yield load_model(GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=seed).fit(X, y))


@pytest.mark.parametrize("method", ["regions", "refinement"])
@pytest.mark.parametrize("seed", [0, 1])
def test_random_ensembles_match_brute_force(seed, method):
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    X, y, dom = _small_problem(seed)
    for ir in _models(X, y, seed):
        for eps, kappa, robust in [(0, 0.5, False), (1, None, False), (2, 0.7, False), (1, 0.5, True), (1, 0.8, True)]:
            if robust:
                prop = individual_fairness(dom, None, epsilon=float(eps), kappa=kappa, robustness=True)
            else:
                prop = individual_fairness(dom, "p", epsilon={"f1": eps, "f2": eps, "f3": eps}, kappa=kappa)
            conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, kappa, robust)
            seen = []
            res = verify_trees(ir, prop, progress=seen.append, options=TreeOptions(method=method))
            truth = 1.0 - unfair / conf if conf else 1.0
            assert res.confident_size == conf and res.unfair_size == unfair, (type(ir), eps, kappa, robust)
            assert res.measure_lower == pytest.approx(truth, abs=1e-12) and res.stats["converged"]
            lows = [s.measure_lower for s in seen]
            for s in seen:  # every reported step brackets the truth
                assert s.measure_lower - 1e-12 <= truth <= s.measure_upper + 1e-12
            assert lows == sorted(lows)
            if unfair:
                assert res.verdict == "unfair" and res.counterexamples


def _time_limited_case():
    """A 30-tree ensemble that takes a few tens of milliseconds, with its exact measure."""
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    X, y, dom = _small_problem(3, n_features=5)
    ir = load_model(xgb.XGBClassifier(n_estimators=30, max_depth=4, random_state=0, n_jobs=1).fit(X, y))
    prop = individual_fairness(dom, "p", epsilon={"f1": 1, "f2": 1}, kappa=0.6)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.6, False)
    return ir, prop, 1 - unfair / conf


def test_time_limited_bounds_are_sound():
    ir, prop, truth = _time_limited_case()
    for limit in (1e-6, 1e-3, 3e-3, 1e-2, 3e-2):
        for method in ("auto", "regions", "refinement"):
            lo, hi = quantify(ir, prop, time_limit=limit, options=TreeOptions(method=method)).bounds
            assert lo - 1e-12 <= truth <= hi + 1e-12


def test_auto_method_keeps_the_first_phase_bounds():
    """Method auto: the region path for a third of the time, then the refinement; progress never loosens."""
    ir, prop, truth = _time_limited_case()
    seen = []
    q = quantify(ir, prop, time_limit=0.05, progress=seen.append)
    lows, highs = [s.measure_lower for s in seen], [s.measure_upper for s in seen]
    assert lows == sorted(lows) and highs == sorted(highs, reverse=True)
    assert all(lo - 1e-12 <= truth <= hi + 1e-12 for lo, hi in zip(lows, highs))
    lo, hi = q.bounds
    assert q.known[0] <= lo <= truth <= hi <= q.known[1]
    with pytest.raises(PropertyError, match="unknown method 'fastest'"):
        quantify(ir, prop, options=TreeOptions(method="fastest"))


def test_toy_ensemble_on_a_real_income_agrees_across_methods():
    ens = toy_ensemble()
    real = Domain(
        (Feature("income", "real", 0, 1000), Feature("race", "categorical", 0, 4), Feature("age", "integer", 0, 100))
    )
    prop = individual_fairness(real, "race", epsilon={"income": 5.0, "age": 5}, kappa=0.5)
    qs = [
        quantify(ens, prop, time_limit=30.0, options=TreeOptions(method=m)) for m in ("regions", "refinement", "auto")
    ]
    assert all(q.complete for q in qs)
    measures = [q.bounds[0] for q in qs]
    assert all(q.bounds[0] == pytest.approx(q.bounds[1], abs=1e-12) for q in qs)
    assert measures == pytest.approx([measures[0]] * 3, abs=1e-12) and 0.6 < measures[0] < 0.7


def test_sampling_is_uniform_over_the_exact_region():
    prop = individual_fairness(TOY_DOMAIN, "race", epsilon={"income": 5, "age": 5}, kappa=0.8)
    ens = toy_ensemble()
    q = quantify(ens, prop)
    x, xp, rejected = sample_unfair(ens, q, 20000, seed=1)
    assert rejected == 0 and len(x) == 20000
    # every sample is a distinct-checkable IDI; the region holds 10525 points, so we see most of them
    assert len({tuple(r) for r in x}) > 8000
    assert np.all(ens.predict(x) != ens.predict(xp))


@pytest.mark.parametrize("robust", [False, True])
def test_region_by_region_matches_single_pass(robust):
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    X, y, dom = _small_problem(5, n_features=4)
    ir = load_model(xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=0, n_jobs=1).fit(X, y))
    if robust:
        prop = individual_fairness(dom, None, epsilon=1.0, kappa=0.6, robustness=True)
    else:
        prop = individual_fairness(dom, "p", epsilon={"f1": 1, "f2": 2}, kappa=0.6)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.6, robust)
    q = quantify(ir, prop, options=TreeOptions(regions=6))
    assert q.stats["regions"] > 1 and q.complete
    assert q.measured_upper == conf and q.unfair == unfair and q.conf_settled == conf
    x, xp, rejected = sample_unfair(ir, q, 2000, seed=0)
    assert rejected == 0 and (len(x) == 2000 or unfair == 0)
    assert np.all(ir.predict(x) != ir.predict(xp))


@pytest.mark.parametrize("kappa,confident,unfair", [(None, 6_000_000, 3_000_001), (0.5, 3_000_000, 1_500_001)])
def test_region_path_decides_large_tie_regions_with_the_models_arithmetic(kappa, confident, unfair):
    """Two trees whose margins cancel (exactly 0, P = 0.5: class 0, not confident) on half of a
    6,000,000-point grid: every tie box has one margin, so one point decides it and the run
    converges to the hand-counted values (x0 = 1,499,999 with p = 1 is the one unfair input below
    the split: its twin x0 + 1 with p = 0 is class 1)."""
    half = 1_500_000
    t1 = _tree([(0, half, 1, 2, 0), (0, 0, L, L, -0.25), (0, 0, L, L, 0.25)])
    t2 = _tree([(1, 1, 1, 2, 0), (0, 0, L, L, 0.25), (0, 0, L, L, -0.25)])
    ir = TreeEnsemble([t1, t2], 2, split="<", input_float32=False)
    dom = Domain((Feature("x0", "integer", 0, 2 * half - 1), Feature("p", "categorical", 0, 1)))
    prop = individual_fairness(dom, "p", epsilon={"x0": 1}, kappa=kappa)
    res = verify_trees(ir, prop, options=TreeOptions(method="regions"))
    assert res.stats["converged"]
    assert res.confident_size == confident and res.unfair_size == unfair


@pytest.mark.parametrize("method", ["refinement", pytest.param("regions", marks=pytest.mark.slow)])
@pytest.mark.parametrize("eps,robust", [(0, False), (1, False), (1, True)])
def test_quantification_stops_at_the_box_memory_limit_with_sound_bounds(eps, robust, method):
    pytest.importorskip("xgboost")
    from faircert import memory

    X, y, dom = _small_problem(0)
    ir = next(_models(X, y, 0))
    if robust:
        prop = individual_fairness(dom, None, epsilon=float(eps), kappa=0.5, robustness=True)
    else:
        prop = individual_fairness(dom, "p", epsilon={"f1": eps, "f2": eps, "f3": eps}, kappa=0.5)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.5, robust)
    truth = 1 - unfair / conf
    full = verify_trees(ir, prop, options=TreeOptions(method=method))
    assert full.stats["converged"] and not full.stats["memory_limited"] and full.statistical is None
    with memory.limited(3 * 16 * len(dom.features)):  # three float64 boxes
        cut = verify_trees(ir, prop, options=TreeOptions(method=method))
    assert cut.stats["memory_limited"] and not cut.stats["converged"]
    assert cut.measure_lower <= truth <= cut.measure_upper and cut.measure_upper - cut.measure_lower > 0
    # the estimate of what is left open (the whole space on the region path) is inside the bounds
    est = cut.statistical
    assert est is not None and est.samples >= 256
    assert cut.measure_lower <= 1 - est.ci_high <= 1 - est.unfair <= 1 - est.ci_low <= cut.measure_upper
    assert est.ci_low - 0.02 <= 1 - truth <= est.ci_high + 0.02
