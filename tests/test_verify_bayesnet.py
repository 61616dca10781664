"""verify under a learned Bayesian network: P[x has an unfair twin] bounded around enumeration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.errors import PropertyError
from faircert.models.linear import LinearModel
from faircert.population.learn import learn_population
from faircert.population.spec import PopulationSpec


def _data(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    x = np.clip(s * 2 + rng.integers(0, 4, n), 0, 5)  # depends on s: the network must carry it
    z = rng.integers(0, 3, n)
    return pd.DataFrame({"s": s, "x": x, "z": z})


def test_unfair_probability_contains_enumeration_of_the_learned_network():
    df = _data()
    model = LinearModel.plain([0.9, 0.45, -0.3], -1.7, ["s", "x", "z"])
    r = faircert.verify(model, df, protected="s", population="bayesnet", time_limit=30)
    pop = learn_population(df, ["x", "z"], ["s"], PopulationSpec("bayesnet")).expanded()
    truth = 0.0
    for asg, p in pop.joint():
        row = {n: pop.variables[n].states[asg[n]] for n in ("s", "x", "z")}
        decide = [model.predict(pd.DataFrame([{**row, "s": v}]))[0] for v in (0, 1)]
        truth += p * (decide[0] != decide[1])
    assert r.falsified - 1e-9 <= truth <= 1 - r.certified + 1e-9
    assert r.undecided < 1e-3
    assert r.verdict == "unfair" and r.counterexamples
    for c in r.counterexamples:  # re-checked: the twins are decided differently
        assert (c.output > 0) != (c.output_prime > 0)


def test_bayesnet_verify_refuses_what_it_cannot_answer():
    df = _data()
    model = LinearModel.plain([0.9, 0.45, -0.3], -1.7, ["s", "x", "z"])
    with pytest.raises(PropertyError, match="epsilon 0"):
        faircert.verify(model, df, protected="s", population="bayesnet", epsilon={"x": 1})
    with pytest.raises(PropertyError, match="taken from data"):
        faircert.verify(model, protected="s", population="bayesnet", domain=faircert.data.infer_domain(df))


@pytest.mark.parametrize("strict", [True, False])
def test_the_twin_interval_holds_for_both_decision_rules_with_ties(strict):
    """Integer weights put scores exactly on 0; '>' and '>=' differ there and both are bracketed."""
    from faircert.engines.linear.bayesnet import unfair_probability

    df = _data(seed=3)
    model = LinearModel.plain([1.0, 1.0, -1.0], -3.0, ["s", "x", "z"], strict=strict)
    pop = learn_population(df, ["x", "z"], ["s"], PopulationSpec("bayesnet")).expanded()
    low, high, _ = unfair_probability(model, pop, ["s"])
    truth = 0.0
    for asg, p in pop.joint():
        row = {n: pop.variables[n].states[asg[n]] for n in ("s", "x", "z")}
        decide = [model.predict(pd.DataFrame([{**row, "s": v}]))[0] for v in (0, 1)]
        truth += p * (decide[0] != decide[1])
    assert low - 1e-12 <= truth <= high + 1e-12 and high - low < 1e-8  # only the masses' rounding slack


def _truth_under_learned_network(predict, df: pd.DataFrame) -> float:
    """P[the label changes with s] under the network `verify` learns from `df`, by enumeration."""
    pop = learn_population(df, list(df.columns), ["s"], PopulationSpec("bayesnet")).expanded()
    rows, weights = [], []
    for asg, p in pop.joint():
        rows.append({n: pop.variables[n].states[asg[n]] for n in df.columns})
        weights.append(p)
    frame, weights = pd.DataFrame(rows), np.array(weights)
    decide = [np.asarray(predict(frame.assign(s=v))) for v in (0, 1)]
    return float(weights[decide[0] != decide[1]].sum())


@pytest.mark.parametrize("kind", ["forest", "network"])
def test_other_models_get_sound_bounds_around_enumeration(kind):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier

    df = _data(seed=1)
    y = ((df.x + df.z + 2 * df.s + np.random.default_rng(0).normal(0, 1, len(df))) > 4).astype(int)
    model = (
        RandomForestClassifier(8, max_depth=4, random_state=0)
        if kind == "forest"
        else MLPClassifier((8,), max_iter=2000, random_state=0)
    ).fit(df, y)
    truth = _truth_under_learned_network(model.predict, df)
    assert 0.01 < truth < 0.99
    r = faircert.verify(model, df, protected="s", population="bayesnet", time_limit=20)
    assert r.population == "bayesnet" and r.engine == "population-twins"
    assert r.falsified - 1e-9 <= truth <= 1 - r.certified + 1e-9
    assert r.undecided < 1e-9  # a small network: every box decided
    # counterexamples drawn from the network, each decided otherwise by the model itself
    assert r.verdict == "unfair" and r.counterexamples
    for c in r.counterexamples:
        pair = pd.DataFrame([c.x, c.x_prime], columns=df.columns)
        assert c.x[1:] == c.x_prime[1:] and model.predict(pair)[0] != model.predict(pair)[1]
    assert r.statistical is None  # bounds that met need no estimate


def test_a_model_that_ignores_the_protected_attribute_is_fair_under_the_network():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline

    df = _data(seed=2)
    y = (df.x > 2).astype(int)
    pipe = Pipeline(
        [
            ("drop", ColumnTransformer([("keep", "passthrough", ["x", "z"])])),
            ("clf", RandomForestClassifier(5, max_depth=3, random_state=0)),
        ]
    ).fit(df, y)
    r = faircert.verify(pipe, df, protected="s", population="bayesnet", time_limit=20)
    assert (r.certified, r.falsified, r.undecided, r.verdict) == (1.0, 0.0, 0.0, "fair")
