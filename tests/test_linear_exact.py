"""Exact individual fairness of separable models, against brute force on small domains."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from boxes_oracle import random_network

import faircert
from faircert.domain import Domain, Feature
from faircert.engines.linear import count
from faircert.engines.linear.separable import SeparableScore
from faircert.engines.registry import find_engine
from faircert.models.linear import LinearModel
from faircert.models.network import ReluNetwork
from faircert.properties import individual_fairness


def _brute_unfair_share(w, b, dom: Domain, protected: list[str]) -> Fraction:
    """Share of the free grid with twins on both sides of 0, in exact rational arithmetic."""
    idx = [dom.index(p) for p in protected]
    free = [i for i in range(len(dom)) if i not in idx]
    wf = [Fraction(float(v)) for v in w]
    combos = list(itertools.product(*(dom.features[i].values() for i in idx)))
    unfair = total = 0
    for x in itertools.product(*(dom.features[i].values() for i in free)):
        base = Fraction(float(b)) + sum(wf[i] * int(v) for i, v in zip(free, x))
        scores = [base + sum(wf[i] * int(v) for i, v in zip(idx, c)) for c in combos]
        unfair += max(scores) > 0 >= min(scores)
        total += 1
    return Fraction(unfair, total)


def _random_case(seed: int, integer_weights: bool):
    rng = np.random.default_rng(seed)
    feats = [Feature("s", "integer", 0, int(rng.integers(1, 3))), Feature("r", "binary", 0, 1)]
    feats += [Feature(f"x{i}", "integer", -int(rng.integers(0, 3)), int(rng.integers(0, 4))) for i in range(4)]
    feats.append(Feature("one", "integer", 2, 2))  # a feature with a single value
    dom = Domain(tuple(feats))
    if integer_weights:  # ties at the interval's ends are everywhere
        w, b = rng.integers(-3, 4, len(feats)).astype(float), float(rng.integers(-3, 4))
    else:
        w, b = rng.normal(size=len(feats)), float(rng.normal())
    return LinearModel.plain(w, b, names=dom.names), w, b, dom


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("integer_weights", [True, False])
@pytest.mark.parametrize("protected", [["s"], ["s", "r"]])
def test_shares_equal_brute_force_exactly(seed, integer_weights, protected):
    model, w, b, dom = _random_case(seed, integer_weights)
    result = faircert.verify(model, dom, protected=protected, time_limit=10)
    truth = _brute_unfair_share(w, b, dom, protected)
    assert result.engine == "linear-exact" and result.exact is True and result.undecided == 0
    assert result.falsified == float(truth) and result.certified == 1 - float(truth)
    assert result.verdict == ("unfair" if truth > 0 else "fair")
    assert result.stats["counts"]["unfair_at_least"] == result.stats["counts"]["unfair_at_most"]
    if truth > 0:
        assert result.counterexamples
    for c in result.counterexamples:  # pairs from the exact set, re-checked: the free features agree
        assert [c.x[i] for i in range(2, len(dom))] == [c.x_prime[i] for i in range(2, len(dom))]
        assert (model.decision_function(np.array([c.x]))[0] > 0) != (
            model.decision_function(np.array([c.x_prime]))[0] > 0
        )


def test_ties_are_decided_exactly_where_float_sums_cannot():
    """0.1 + 0.2 > 0.3 in float64 but not in the model's real arithmetic on its parameters."""
    dom = Domain((Feature("s", "binary", 0, 1), Feature("a", "binary", 0, 1), Feature("b", "binary", 0, 1)))
    w = [-0.3, 0.1, 0.2]  # score(s=1, a=1, b=1) = 0.1 + 0.2 - 0.3: exactly 2^-54-ish, not 0
    result = faircert.verify(LinearModel.plain(w, 0.0, names=dom.names), dom, protected="s")
    truth = _brute_unfair_share(w, 0.0, dom, ["s"])
    assert result.exact and result.falsified == float(truth)
    assert result.stats["near_ties_rechecked"] >= 1


def test_histograms_bound_the_truth_when_the_halves_are_too_large(monkeypatch):
    monkeypatch.setattr(count, "_mitm_fits", lambda classes: False)
    for seed in range(6):
        model, w, b, dom = _random_case(seed, integer_weights=False)
        result = faircert.verify(model, dom, protected="s", time_limit=10)
        truth = float(_brute_unfair_share(w, b, dom, ["s"]))
        assert result.exact is False and result.stats["method"] == "histogram"
        assert result.falsified - 1e-12 <= truth <= result.falsified + result.undecided + 1e-12
        assert result.undecided < 0.05


def test_real_features_are_bounded_soundly_and_tightly():
    """One real feature: the unfair length per grid point is a closed form."""
    dom = Domain((Feature("s", "binary", 0, 1), Feature("k", "integer", 0, 3), Feature("t", "real", -1.0, 2.0)))
    w, b = np.array([0.7, -0.4, 1.3]), 0.1
    result = faircert.verify(LinearModel.plain(w, b, names=dom.names), dom, protected="s")
    low, high = -max(0.0, w[0]), -min(0.0, w[0])  # free score in (low, high]
    truth = 0.0
    for k in range(4):  # length of t with b + w1 k + w2 t in (low, high], over the domain
        a, c = (low - b - w[1] * k) / w[2], (high - b - w[1] * k) / w[2]
        truth += max(0.0, min(c, 2.0) - max(a, -1.0)) / 3.0 / 4.0
    assert result.engine == "linear-exact" and result.exact is False
    assert result.falsified - 1e-12 <= truth <= result.falsified + result.undecided + 1e-12
    assert result.undecided < 1e-4


def test_a_pipeline_over_raw_columns_matches_enumeration_of_the_pipeline():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {
            "job": rng.choice(["a", "b", "c"], n),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.integers(18, 30, n),
            "hours": rng.integers(1, 9, n),
        }
    )
    y = ((df["age"] > 23) ^ (df["sex"] == "M") ^ (rng.random(n) < 0.2)).astype(int)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["job", "sex"]), ("num", StandardScaler(), ["age", "hours"])])
    model = Pipeline([("prep", prep), ("clf", LogisticRegression())]).fit(df, y)
    result = faircert.verify(model, df, protected="sex")
    grid = pd.DataFrame(
        list(itertools.product(["a", "b", "c"], ["F", "M"], range(18, 30), range(1, 9))),
        columns=["job", "sex", "age", "hours"],
    )
    labels = model.predict(grid).reshape(3, 2, 12, 8)
    truth = float(np.mean(labels[:, 0] != labels[:, 1]))
    assert result.engine == "linear-exact" and result.exact and result.falsified == pytest.approx(truth, abs=1e-15)


def test_only_separable_networks_with_discrete_moving_features_take_the_exact_engine():
    dom = Domain((Feature("s", "binary", 0, 1), Feature("a", "integer", 0, 4), Feature("b", "integer", 0, 4)))
    mixing = random_network(np.random.default_rng(0), 3, [4])
    assert SeparableScore.of(mixing, dom) is None
    assert find_engine(mixing, individual_fairness(dom, "s")).name == "network-boxes"
    linear = ReluNetwork([np.array([[1.0, 0.5, -0.5]])], [np.array([0.2])])
    assert find_engine(linear, individual_fairness(dom, "s")).name == "linear-exact"
    assert find_engine(linear, individual_fairness(dom, "s", epsilon={"a": 1})).name == "linear-exact"
    real = Domain((Feature("s", "binary", 0, 1), Feature("a", "real", 0, 4), Feature("b", "integer", 0, 4)))
    assert find_engine(linear, individual_fairness(real, "s", epsilon={"a": 1})).name == "network-boxes"
    assert find_engine(linear, individual_fairness(dom, "s", kappa=0.6)).name == "network-boxes"


def test_a_one_hidden_layer_of_single_column_units_is_separable():
    """Units that each read one column (the compiled one-hot steps) give a table per feature."""
    dom = Domain((Feature("s", "binary", 0, 1), Feature("a", "integer", 0, 5)))
    W1 = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    b1 = np.array([-2.0, -4.0, 0.0, 0.5])
    net = ReluNetwork([W1, np.array([[1.0, -2.0, -1.5, 1.0]])], [b1, np.array([-0.2])])
    score = SeparableScore.of(net, dom)
    X = np.array(list(itertools.product(range(2), range(6))), dtype=float)
    assert np.allclose(score.scores(X), net.logit(X), atol=1e-12)
    for x in X:  # the network in rational arithmetic, unit by unit
        pre = [Fraction(float(b)) + sum(Fraction(float(w)) * int(v) for w, v in zip(row, x)) for row, b in zip(W1, b1)]
        exact = Fraction(-0.2) + sum(
            Fraction(float(w)) * max(p, Fraction(0)) for w, p in zip([1.0, -2.0, -1.5, 1.0], pre)
        )
        assert score.exact(x) == exact
        assert abs(float(exact) - score.scores(x[None])[0]) <= score.rounding


def _population_case(seed: int):
    rng = np.random.default_rng(seed)
    dom = Domain(
        (
            Feature("s", "binary", 0, 1),
            Feature("a", "integer", 0, 4),
            Feature("b", "integer", -2, 2),
            Feature("t", "real", 0.0, 1.0),
        )
    )
    n = 40
    frame = pd.DataFrame(
        {
            "s": rng.integers(0, 2, n),
            "a": rng.integers(0, 5, n),
            "b": rng.integers(-2, 3, n),
            "t": np.round(rng.uniform(0, 1, n), 2),
        }
    )
    w, b = rng.normal(size=4), float(rng.normal())
    return LinearModel.plain(w, b, names=dom.names), w, b, dom, frame


@pytest.mark.parametrize("seed", range(6))
def test_independent_population_probabilities_equal_the_product_of_the_data_marginals(seed):
    model, w, b, dom, frame = _population_case(seed)
    result = faircert.verify(model, dom, protected="s", population="independent", data=frame)
    marg = {c: frame[c].value_counts(normalize=False) for c in ("a", "b", "t")}
    truth = Fraction(0)
    for (va, ca), (vb, cb), (vt, ct) in itertools.product(*(m.items() for m in marg.values())):
        base = (
            Fraction(float(b))
            + Fraction(float(w[1])) * int(va)
            + Fraction(float(w[2])) * int(vb)
            + Fraction(float(w[3])) * Fraction(float(vt))
        )
        scores = [base + Fraction(float(w[0])) * s for s in (0, 1)]
        truth += Fraction(ca * cb * ct) * (max(scores) > 0 >= min(scores))
    truth /= len(frame) ** 3
    assert result.population == "independent" and result.exact and result.undecided == 0
    assert result.falsified == float(truth)
    for c in result.counterexamples:  # drawn from the data's values
        assert c.x[1] in set(frame["a"]) and c.x[3] in set(frame["t"])


def test_populations_are_refused_where_they_are_not_answered():
    model, w, b, dom, frame = _population_case(0)
    with pytest.raises(faircert.errors.PropertyError, match="unknown population 'markov' for verify"):
        faircert.verify(model, dom, protected="s", population="markov", data=frame)
    net = random_network(np.random.default_rng(0), 4, [4])
    with pytest.raises(faircert.errors.PropertyError, match="'bayesnet' is answered with epsilon 0, without kappa"):
        faircert.verify(net, dom, protected="s", population="bayesnet", data=frame, kappa=0.7)
    with pytest.raises(faircert.errors.PropertyError, match="is taken from data"):
        faircert.verify(model, dom, protected="s", population="independent")


def test_the_empirical_population_is_the_audit_of_the_data_rows():
    model, w, b, dom, frame = _population_case(1)
    result = faircert.verify(model, frame, protected="s", population="empirical")
    direct = faircert.audit(model, frame, protected="s")
    assert result.population == "empirical" and result.verdicts == direct.verdicts and result.n_rows == len(frame)


@pytest.mark.parametrize("seed", range(10))
def test_relaxed_shares_equal_brute_force(seed):
    from boxes_oracle import unfair_points

    rng = np.random.default_rng(seed)
    dom = Domain(
        (
            Feature("a", "integer", 0, 5),
            Feature("s", "categorical", 0, int(rng.integers(1, 3))),
            Feature("b", "integer", -3, 3),
            Feature("c", "integer", 0, 3),
        )
    )
    w = rng.integers(-3, 4, 4).astype(float) if seed % 2 else rng.normal(size=4)
    net = ReluNetwork([w[None, :]], [np.array([float(rng.integers(-2, 3)) if seed % 2 else rng.normal()])])
    eps = {"a": int(rng.integers(1, 3)), "b": 1}
    result = faircert.verify(net, dom, protected="s", epsilon=eps)
    truth = unfair_points(net, dom, [1], {0: eps["a"], 2: 1}) / (6 * 7 * 4)
    assert result.engine == "linear-exact" and result.stats["method"] == "relaxed enumeration"
    if result.exact:
        assert result.falsified == pytest.approx(truth, abs=1e-15) and result.undecided == 0
    else:  # a twin's score exactly at 0 (integer weights) is left in the gap
        assert seed % 2 and result.falsified <= truth + 1e-12 <= result.falsified + result.undecided + 2e-12
    for c in result.counterexamples:
        assert c.x[1] != c.x_prime[1] and abs(c.x[0] - c.x_prime[0]) <= eps["a"] and c.x[3] == c.x_prime[3]
        assert (net.logit(np.array([c.x]))[0] > 0) != (net.logit(np.array([c.x_prime]))[0] > 0)
    if truth > 0:
        assert result.counterexamples


def test_relaxed_shares_of_a_large_domain_are_tight_bounds(monkeypatch):
    from boxes_oracle import unfair_points

    from faircert.engines.linear import relaxed

    rng = np.random.default_rng(5)
    dom = Domain(
        (
            Feature("a", "integer", 0, 5),
            Feature("s", "binary", 0, 1),
            Feature("b", "integer", -3, 3),
            Feature("c", "integer", 0, 9),
        )
    )
    net = ReluNetwork([rng.normal(size=(1, 4))], [rng.normal(size=1)])
    exact = faircert.verify(net, dom, protected="s", epsilon={"a": 1})
    monkeypatch.setattr(relaxed, "MITM_SIZE", 10)  # the fixed part goes to the histogram
    result = faircert.verify(net, dom, protected="s", epsilon={"a": 1})
    truth = unfair_points(net, dom, [1], {0: 1}) / (6 * 7 * 10)
    assert exact.exact and exact.falsified == pytest.approx(truth, abs=1e-15)
    assert result.exact is False and result.stats["fixed_part"] == "histogram"
    assert result.falsified - 1e-12 <= truth <= result.falsified + result.undecided + 1e-12
    assert result.undecided < 1e-6


def test_relaxed_probabilities_under_the_data_marginals_equal_brute_force():
    model, w, b, dom, frame = _population_case(3)
    frame = frame.drop(columns="t")
    dom = Domain(dom.features[:3])
    model = LinearModel.plain(w[:3], b, names=dom.names)
    result = faircert.verify(model, dom, protected="s", population="independent", data=frame, epsilon={"a": 1})
    wf = [Fraction(float(v)) for v in w[:3]]
    truth = Fraction(0)
    for (va, ca), (vb, cb) in itertools.product(frame["a"].value_counts().items(), frame["b"].value_counts().items()):

        def score(a, bb, s):
            return Fraction(float(b)) + wf[0] * s + wf[1] * a + wf[2] * bb

        unfair = any(
            (score(va, vb, s) > 0) != (score(a2, vb, s2) > 0)
            for s in (0, 1)
            for s2 in (0, 1)
            if s2 != s
            for a2 in range(max(0, va - 1), min(4, va + 1) + 1)
        )
        truth += Fraction(ca * cb) * unfair
    truth /= len(frame) ** 2
    assert result.exact and result.falsified == pytest.approx(float(truth), abs=1e-15)
