"""AdaBoost, Bagging and Voting over scikit-learn trees as tree ensembles: the same labels and
probabilities as scikit-learn, and per-row verdicts equal to brute force."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.domain import Domain, Feature
from faircert.errors import UnsupportedModelError
from faircert.models.io import load_model

ensemble = pytest.importorskip("sklearn.ensemble")
tree = pytest.importorskip("sklearn.tree")

DOM = Domain(
    (
        Feature("a", "integer", 0, 6),
        Feature("s", "binary", 0, 1),
        Feature("b", "integer", -3, 3),
        Feature("c", "integer", 0, 4),
    )
)
EPS = {"a": 2, "b": 1}


def _data(n: int = 800, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({f.name: rng.integers(f.min, f.max + 1, n) for f in DOM.features})
    score = X.a - 2 * X.b * X.s + X.c * (X.a > 3) + rng.normal(0, 1.5, n)
    return X, np.where(score > 3, "yes", "no")


def _models() -> dict:
    DT, ET = tree.DecisionTreeClassifier, tree.ExtraTreeClassifier
    return {
        "adaboost stumps": ensemble.AdaBoostClassifier(n_estimators=30, random_state=0),
        "adaboost depth 3": ensemble.AdaBoostClassifier(DT(max_depth=3), n_estimators=15, random_state=0),
        "bagging": ensemble.BaggingClassifier(DT(max_depth=6), n_estimators=12, random_state=0),
        "bagging feature subsets": ensemble.BaggingClassifier(
            ET(), n_estimators=12, max_features=2, bootstrap_features=True, random_state=0
        ),
        "bagging tiny samples": ensemble.BaggingClassifier(DT(), n_estimators=20, max_samples=3, random_state=2),
        "soft voting": ensemble.VotingClassifier(
            [
                ("forest", ensemble.RandomForestClassifier(8, max_depth=4, random_state=0)),
                ("tree", DT(max_depth=3)),
                ("bag", ensemble.BaggingClassifier(DT(max_depth=3), n_estimators=4, random_state=0)),
            ],
            voting="soft",
            weights=[2, 1, 1.5],
        ),
        "hard voting": ensemble.VotingClassifier(
            [("t1", DT(max_depth=3)), ("t2", DT(max_depth=5, random_state=1)), ("t3", ET(random_state=0))],
            voting="hard",
            weights=[1, 2, 1.5],
        ),
    }


def _fitted(name: str):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _models()[name].fit(X, y)


@pytest.mark.parametrize("name", sorted(_models()))
def test_labels_and_probabilities_equal_scikit_learn(name):
    model = _fitted(name)
    ir = load_model(model)
    rng = np.random.default_rng(1)
    P = pd.DataFrame(rng.uniform(-4, 8, (4000, 4)), columns=DOM.names)
    assert np.array_equal(ir.predict(P.to_numpy()), (model.predict(P) == "yes").astype(int))
    if name != "hard voting":  # scikit-learn gives no probabilities for hard votes
        assert np.allclose(ir.predict_proba(P.to_numpy()), model.predict_proba(P)[:, 1], rtol=0, atol=1e-12)


def _brute(predict, rows: np.ndarray) -> list[str]:
    out = []
    for x in rows:
        axes = [
            [1 - x[1]]
            if j == 1
            else range(int(max(f.min, x[j] - EPS.get(f.name, 0))), int(min(f.max, x[j] + EPS.get(f.name, 0))) + 1)
            for j, f in enumerate(DOM.features)
        ]
        twins = np.array(list(itertools.product(*axes)), dtype=float)
        out.append("unfair" if np.any(predict(twins) != predict(x[None])[0]) else "fair")
    return out


@pytest.mark.parametrize("name", ["adaboost stumps", "bagging feature subsets", "soft voting", "hard voting"])
def test_row_verdicts_equal_brute_force(name):
    model = _fitted(name)
    rows, _ = _data(60, seed=3)
    result = faircert.audit(model, rows, DOM, protected="s", epsilon=EPS)

    def predict(X):
        return (model.predict(pd.DataFrame(X, columns=DOM.names)) == "yes").astype(int)

    assert result.engine == "rows-trees"
    assert result.verdicts == _brute(predict, rows.to_numpy(dtype=float))
    assert {"fair", "unfair"} <= set(result.verdicts)


def test_shares_over_the_domain_equal_brute_force():
    model = _fitted("adaboost depth 3")
    result = faircert.verify(model, DOM, protected="s", time_limit=60)
    grid = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    labels = (model.predict(pd.DataFrame(grid, columns=DOM.names)) == "yes").reshape(7, 2, 7, 5)
    truth = float(np.mean(labels[:, 0] != labels[:, 1]))
    assert result.undecided == 0 and result.falsified == pytest.approx(truth)


def test_what_no_sum_of_leaves_expresses_is_refused_with_the_reason():
    X, y = _data()
    DT = tree.DecisionTreeClassifier
    soft = ensemble.VotingClassifier(
        [("gb", ensemble.GradientBoostingClassifier(n_estimators=5)), ("t", DT())], voting="soft"
    ).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="soft voting over GradientBoostingClassifier.*sigmoid"):
        load_model(soft)
    hard = ensemble.VotingClassifier([("f", ensemble.RandomForestClassifier(3)), ("t", DT())], voting="hard")
    with pytest.raises(UnsupportedModelError, match="hard voting over RandomForestClassifier"):
        load_model(hard.fit(X, y))
    lin = pytest.importorskip("sklearn.linear_model")
    with pytest.raises(UnsupportedModelError, match="BaggingClassifier over LogisticRegression"):
        load_model(ensemble.BaggingClassifier(lin.LogisticRegression(), n_estimators=3).fit(X, y))
