"""Networks under the data's independent marginals: the box refinement measures boxes by their
probability, and its sound shares contain the brute-force probability of an unfair twin."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from test_network_parallel import MEDIUM, brute_force_case

import faircert
from faircert.domain import Domain, Feature
from faircert.engines.network.problem import Weights
from faircert.engines.network.refine import verify_network
from faircert.errors import PropertyError
from faircert.population.marginals import Marginals
from faircert.properties import individual_fairness


def _marginals(dom: Domain, seed: int, n: int = 300) -> Marginals:
    """Data rows with skewed columns (most of `a` near 0), some domain values never seen."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(f.min, f.max + 1, n) for f in dom.features], axis=1).astype(float)
    codes[:, 0] = np.minimum(codes[:, 0], rng.integers(0, 4, n))
    return Marginals.from_codes(codes)


def _truth(net, prop, m: Marginals, eps_feature: int | None = None) -> float:
    """P[x has an unfair twin], x drawn from the marginals, by enumerating the grid."""
    dom, free = prop.domain, prop.free
    grid = np.array(list(itertools.product(*[dom.features[j].values() for j in free])), dtype=np.float64)
    w = np.ones(len(grid))
    for k, j in enumerate(free):
        p = dict(zip(m.values[j], m.counts[j] / m.rows))
        w *= np.array([p.get(v, 0.0) for v in grid[:, k]])
    combos = list(itertools.product(*[dom.features[j].values() for j in prop.protected]))

    def labels(x):
        out = []
        for c in combos:
            X = np.zeros((len(x), len(dom)))
            X[:, free], X[:, list(prop.protected)] = x, c
            out.append(net.logit(X) > 0)
        return np.stack(out, axis=1)

    lab = labels(grid)
    if eps_feature is None:
        bad = lab.any(axis=1) & ~lab.all(axis=1)
    else:  # some twin of x and another twin of a point within 1 on that feature disagree
        shape = [dom.features[j].size for j in free] + [len(combos)]
        pos = lab.reshape(shape)
        pad = [(0, 0)] * len(shape)
        pad[eps_feature] = (1, 1)

        def near(v):  # any within one step along the feature
            p = np.pad(v, pad)
            n = v.shape[eps_feature]
            return (
                np.take(p, range(0, n), eps_feature)
                | np.take(p, range(1, n + 1), eps_feature)
                | np.take(p, range(2, n + 2), eps_feature)
            )

        pos_near, neg_near = near(pos), near(~pos)
        T = len(combos)
        bad = np.zeros(shape[:-1], dtype=bool)
        for a in range(T):
            for b in range(T):
                if a != b:
                    bad |= (pos[..., a] & neg_near[..., b]) | (~pos[..., a] & pos_near[..., b])
        bad = bad.reshape(-1)
    return float((w * bad).sum())


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("eps", [None, {"a": 1}])
def test_shares_under_marginals_match_brute_force(seed, eps, small_chunks):
    net, dom, _ = brute_force_case(seed, MEDIUM)
    m = _marginals(dom, seed)
    prop = replace(individual_fairness(dom, ["p", "q"], epsilon=eps), population=m)
    res = verify_network(net, prop, time_limit=60)
    truth = _truth(net, prop, m, None if eps is None else 0)
    assert res.domain_size == pytest.approx(1.0)
    assert res.falsified <= truth + 1e-9 <= res.falsified + res.undecided + 2e-9
    assert res.undecided < 1e-9 and res.falsified == pytest.approx(truth, abs=1e-9)


def test_weights_measure_sample_and_cut_by_the_data():
    m = Marginals((np.array([0.0, 1.0, 5.0]), np.array([2.0, 7.0])), (np.array([6, 3, 1]), np.array([5, 5])), 10)
    w = Weights.of(m, [0, 1])
    lo, hi = np.array([[0.0, 2.0], [2.0, 0.0], [0.0, 0.0]]), np.array([[1.0, 7.0], [4.0, 9.0], [9.0, 9.0]])
    np.testing.assert_allclose(w.mass(lo, hi), [0.9, 0.0, 1.0])
    np.testing.assert_allclose(w.point(np.array([[1.0, 7.0], [2.0, 7.0]])), [0.15, 0.0])
    x = w.sample(np.random.default_rng(0), np.tile([[0.0, 0.0]], (4000, 1)), np.tile([[9.0, 9.0]], (4000, 1)))
    assert set(np.unique(x[:, 0])) <= {0.0, 1.0, 5.0} and abs(np.mean(x[:, 0] == 0.0) - 0.6) < 0.03
    # the cut halves the mass: [0, 9] of feature 0 is cut after 0 (0.6 of the mass), [1, 9] after 1
    cut = w.median(np.array([0, 0]), np.array([0.0, 1.0]), np.array([9.0, 9.0]), np.array([4.0, 5.0]))
    np.testing.assert_array_equal(cut, [0.0, 1.0])


def raw_pipeline(top_age: int, centre: float, scale: float, hidden: tuple[int, ...]):
    """A scikit-learn Pipeline trained on raw columns (one-hot sex and job, a scaled age in
    [18, top_age)) whose labels lean on sex, and its 400 rows."""
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {"sex": rng.choice(["F", "M"], n), "job": rng.choice(list("pqr"), n), "age": rng.integers(18, top_age, n)}
    )
    y = ((df.age - centre) / scale + (df.sex == "M") * 0.8 + (df.job == "q") + rng.normal(0, 0.5, n) > 0.5).astype(int)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "job"]), ("num", StandardScaler(), ["age"])])
    return Pipeline([("prep", prep), ("clf", MLPClassifier(hidden, max_iter=500, random_state=0))]).fit(df, y), df


def test_a_pipeline_network_under_independent_marginals_from_the_api():
    model, df = raw_pipeline(30, 24, 3, (8,))
    res = faircert.verify(model, df, protected="sex", population="independent", data=df, time_limit=30, workers=1)
    flipped = df.assign(sex=np.where(df.sex == "F", "M", "F"))
    # the truth: over the product of the data's marginals of job and age
    grid = pd.DataFrame(
        list(itertools.product(["F"], sorted(set(df.job)), sorted(set(df.age)))), columns=["sex", "job", "age"]
    )
    p_job, p_age = df.job.value_counts(normalize=True), df.age.value_counts(normalize=True)
    w = grid.job.map(p_job).to_numpy() * grid.age.map(p_age).to_numpy()
    other = grid.assign(sex="M")
    truth = float((w * (model.predict(grid) != model.predict(other))).sum())
    assert res.population == "independent" and res.engine == "network-boxes"
    assert res.undecided < 1e-9 and res.falsified == pytest.approx(truth, abs=1e-9)
    assert (model.predict(df) != model.predict(flipped)).any() == (truth > 0)


def test_a_pipeline_network_over_a_real_column_under_independent_marginals():
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(list("pq"), n),
            "rate": rng.choice(np.round(np.linspace(-1.5, 2.5, 17), 2), n),
        }
    )
    y = (df.rate + (df.sex == "M") * 0.8 + (df.job == "q") + rng.normal(0, 0.5, n) > 0.8).astype(int)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "job"]), ("num", StandardScaler(), ["rate"])])
    model = Pipeline([("prep", prep), ("clf", MLPClassifier((8,), max_iter=500, random_state=0))]).fit(df, y)
    res = faircert.verify(model, df, protected="sex", population="independent", data=df, time_limit=30, workers=1)
    grid = pd.DataFrame(
        list(itertools.product(["F"], sorted(set(df.job)), sorted(set(df.rate)))), columns=["sex", "job", "rate"]
    )
    w = (
        grid.job.map(df.job.value_counts(normalize=True)).to_numpy()
        * grid.rate.map(df.rate.value_counts(normalize=True)).to_numpy()
    )
    truth = float((w * (model.predict(grid) != model.predict(grid.assign(sex="M")))).sum())
    assert res.feature_ranges["rate"] == [-1.5, 2.5] and res.population == "independent"
    assert res.undecided < 1e-9 and res.falsified == pytest.approx(truth, abs=1e-9) and truth > 0
    assert res.counterexamples
    for c in res.counterexamples:  # the data's own rates
        x, xp = (
            pd.DataFrame(
                [{"sex": res.categories["sex"][int(v[0])], "job": res.categories["job"][int(v[1])], "rate": v[2]}]
            )
            for v in (c.x, c.x_prime)
        )
        assert x.rate[0] in set(df.rate) and model.predict(x)[0] != model.predict(xp)[0]


def _real_case(seed: int):
    """MEDIUM with `a` and `c` real; data values on a coarse lattice, so the cuts at midpoints, at
    quarters and at the range's ends fall on data values, and some values repeat."""
    net, dom, _ = brute_force_case(seed, MEDIUM)
    real = Domain(tuple(Feature(f.name, "real", f.min, f.max) if f.name in ("a", "c") else f for f in dom.features))
    rng = np.random.default_rng(seed)
    n = 400
    codes = np.stack([rng.integers(f.min, f.max + 1, n) for f in dom.features], axis=1).astype(float)
    codes[:, 0] = rng.choice(np.linspace(0, 39, 9), n)  # 0, 4.875, ..., 19.5, ..., 39
    codes[:, 3] = np.where(
        rng.random(n) < 0.3, 19.0, rng.choice(np.linspace(0, 19, 5), n) + 0.25 * (rng.random(n) < 0.5)
    )
    codes[:, 3] = np.minimum(codes[:, 3], 19.0)
    return net, real, Marginals.from_codes(codes)


def _truth_real(net, prop, m: Marginals) -> float:
    """P[x has an unfair twin], x drawn from the marginals: the product of the observed values."""
    free = prop.free
    grid = np.array(list(itertools.product(*[m.values[j] for j in free])), dtype=np.float64)
    w = np.ones(len(grid))
    for k, j in enumerate(free):
        p = dict(zip(m.values[j], m.counts[j] / m.rows))
        w *= np.array([p[v] for v in grid[:, k]])
    labels = []
    for c in itertools.product(*[prop.domain.features[j].values() for j in prop.protected]):
        X = np.zeros((len(grid), len(prop.domain)))
        X[:, free], X[:, list(prop.protected)] = grid, c
        labels.append(net.logit(X) > 0)
    lab = np.stack(labels, axis=1)
    return float((w * (lab.any(axis=1) & ~lab.all(axis=1))).sum())


@pytest.mark.parametrize("seed", [0, 2])
def test_real_valued_features_under_marginals_match_the_product_of_the_data_values(seed, small_chunks):
    net, dom, m = _real_case(seed)
    prop = replace(individual_fairness(dom, ["p", "q"]), population=m)
    res = verify_network(net, prop, time_limit=60)
    truth = _truth_real(net, prop, m)
    assert res.domain_size == pytest.approx(1.0)
    assert res.certified + res.falsified + res.undecided == pytest.approx(1.0)
    assert res.falsified <= truth + 1e-9 <= res.falsified + res.undecided + 2e-9
    assert res.undecided < 1e-9 and res.falsified == pytest.approx(truth, abs=1e-9) and 0 < truth < 0.5
    assert res.counterexamples
    for c in res.counterexamples:  # data values, and unfair on the network
        x = np.array(c.x)
        assert all(x[j] in m.values[j] for j in prop.free)
        assert (net.logit(x[None])[0] > 0) != (net.logit(np.array(c.x_prime)[None])[0] > 0)


def test_a_real_value_on_a_shared_cut_counts_once():
    m = Marginals((np.array([0.0, 1.0, 2.0]),), (np.array([1, 2, 1]),), 4)
    w = Weights.of(m, [0], np.array([True]), np.array([0.0]), np.array([2.0]))
    # [0, 1] and [1, 2] share 1: it counts in the box above it; the top value in the box reaching it
    np.testing.assert_allclose(
        w.mass(np.array([[0.0], [1.0], [2.0], [0.0]]), np.array([[1.0], [2.0], [2.0], [2.0]])), [0.25, 0.75, 0.0, 1.0]
    )
    # carved around a point: [0, 1], [1, 1], [1, 2] hold 0.25, 0 and 0.75
    np.testing.assert_allclose(
        w.mass(np.array([[0.0], [1.0], [1.0]]), np.array([[1.0], [1.0], [2.0]])), [0.25, 0.0, 0.75]
    )
    # a cut of a real feature lies halfway between data values, near the median of the mass; a
    # range holding one value is cut at its middle
    cut = w.median(np.array([0, 0]), np.array([0.0, 1.5]), np.array([2.0, 2.0]), np.array([1.0, 1.75]))
    np.testing.assert_array_equal(cut, [1.5, 1.75])
    one = Weights.of(
        Marginals((np.array([3.0]),), (np.array([4]),), 4), [0], np.array([True]), np.array([3.0]), np.array([3.0])
    )
    np.testing.assert_allclose(one.mass(np.array([[3.0]]), np.array([[3.0]])), [1.0])


def test_networks_are_refused_under_marginals_with_complete():
    net, dom, _ = brute_force_case(0)
    data = pd.DataFrame({f.name: np.linspace(f.min, f.max, 20).round() for f in dom.features})
    with pytest.raises(PropertyError, match="independent"):
        faircert.verify(net, dom, protected=["p", "q"], population="independent", data=data, complete=True)
