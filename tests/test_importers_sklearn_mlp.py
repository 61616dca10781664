"""scikit-learn MLPClassifier (binary) as a ReluNetwork: the same labels, exact verification."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.errors import ModelFormatError
from faircert.models.io import load_model

sk = pytest.importorskip("sklearn.neural_network")


def _data(n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.integers(0, 5, n), "sex": rng.integers(0, 2, n), "c": rng.integers(0, 6, n)})
    y = ((X.a + 2 * X.sex - X.c + rng.normal(0, 1, n)) > 1).astype(int)
    return X, y


def test_mlp_labels_and_fairness_match_brute_force():
    X, y = _data()
    clf = sk.MLPClassifier((8, 8), random_state=0, max_iter=500).fit(X, y)
    net = load_model(clf)
    assert net.input_names == ["a", "sex", "c"]
    grid = np.stack(np.meshgrid(np.arange(5), np.arange(2), np.arange(6), indexing="ij"), -1).reshape(-1, 3)
    frame = pd.DataFrame(grid, columns=X.columns)
    assert np.array_equal(net.logit(grid.astype(float)) > 0, clf.predict(frame) == 1)
    labels = [clf.predict(frame.assign(sex=v)) for v in (0, 1)]
    truth = float(np.mean(labels[0] != labels[1]))  # each non-protected pair appears once per sex value
    assert truth > 0
    r = faircert.verify(clf, X, protected="sex", time_limit=30)
    assert r.undecided == 0 and r.falsified == pytest.approx(truth) and r.exit_code == 1
    for c in r.counterexamples:
        assert clf.predict(pd.DataFrame([c.x, c.x_prime], columns=X.columns)).tolist() in ([0, 1], [1, 0])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_that_is_not_binary_is_refused():
    X, y = _data()
    with pytest.raises(ModelFormatError, match="only binary classifiers"):
        load_model(sk.MLPClassifier((4,), random_state=0, max_iter=300).fit(X, X.c % 3))
