"""Wide sound bounds come with a statistical estimate beside them, named as such, near the truth."""

from __future__ import annotations

from test_pipeline import ESTIMATORS, _people, _prep, population_rate

import faircert
from faircert import api
from faircert.population.learn import learn_population


def test_an_estimate_sits_beside_wide_bounds_and_contains_the_truth(monkeypatch):
    from sklearn.pipeline import Pipeline

    monkeypatch.setattr(api, "ESTIMATE_WIDTH", -1.0)  # every bound counts as wide here
    df = _people(300)
    X = df.drop(columns="income")
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["forest"]())]).fit(X, df.income)
    r = faircert.group(pipe, df, protected="sex", population="independent", time_limit=4)
    assert r.engine == "probability-bounds" and r.estimate is not None
    assert r.to_dict()["estimate"]["kind"].startswith("statistical")
    assert "not a bound" in str(r)
    pop = learn_population(df, list(X.columns), ["sex"], kind="independent")
    for sound, sampled in zip(r.groups, r.estimate.groups):
        truth = population_rate(pipe, pop, list(X.columns), sound.group["sex"])
        assert sound.low - 1e-9 <= truth <= sound.high + 1e-9
        assert sampled.low <= truth <= sampled.high  # wrong with probability <= 1e-3


def test_tight_answers_get_no_estimate():
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = _people(300)
    X = df.drop(columns="income")
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "race"]), ("num", StandardScaler(), ["age", "edu", "hours"])])
    pipe = Pipeline([("prep", prep), ("clf", LogisticRegression(max_iter=1000))]).fit(X, df.income)
    r = faircert.group(pipe, df, protected="sex", population="independent")
    assert r.estimate is None and r.to_dict()["estimate"] is None
    assert max(g.high - g.low for g in r.groups) < 1e-3
