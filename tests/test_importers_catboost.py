"""CatBoost (object, `.cbm`, JSON export) as a tree ensemble: margins equal CatBoost's raw
predictions exactly, per-row verdicts and shares equal brute force, and what is not read yet (or
is malformed) is refused with the reason."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.domain import Domain, Feature
from faircert.errors import ModelFormatError, UnsupportedModelError
from faircert.models.io import load_model

catboost = pytest.importorskip("catboost")

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
    X = pd.DataFrame({f.name: rng.integers(f.min, f.max + 1, n) for f in DOM.features}).astype(float)
    return X, (X.a - 2 * X.b * X.s + X.c * (X.a > 3) + rng.normal(0, 1.5, n) > 3).astype(int).to_numpy()


def _model(**params):
    X, y = _data()
    defaults = {
        "iterations": 40,
        "depth": 4,
        "verbose": 0,
        "random_seed": 0,
        "thread_count": 1,
        "allow_writing_files": False,
    }
    return catboost.CatBoostClassifier(**{**defaults, **params}).fit(X, y)


@pytest.mark.parametrize("params", [{}, {"boost_from_average": True, "depth": 6}, {"depth": 1, "iterations": 5}])
def test_margins_equal_catboost_raw_predictions_exactly(tmp_path, params):
    model = _model(**params)
    model.save_model(str(tmp_path / "m.cbm"))
    model.save_model(str(tmp_path / "m.json"), format="json")
    rng = np.random.default_rng(1)
    P = rng.uniform(-5, 8, (5000, 4))
    P[:1000] = np.round(P[:1000] * 2) / 2  # on and near the borders
    want = model.predict(P, prediction_type="RawFormulaVal")
    files = (tmp_path / "m.cbm", str(tmp_path / "m.json")) if not params else ()  # files cost a child each
    for source in (model, *files):
        ir = load_model(source)
        assert np.array_equal(ir.score(P), want), source
        assert np.array_equal(ir.predict(P), model.predict(P).astype(int))
    assert ir.feature_names == list(DOM.names)


def test_row_verdicts_and_shares_equal_brute_force():
    model = _model()
    rows, _ = _data(60, seed=3)
    result = faircert.audit(model, rows, DOM, protected="s", epsilon=EPS)

    def predict(X):
        return model.predict(np.asarray(X, dtype=float)).astype(int)

    truth = []
    for x in rows.to_numpy():
        axes = [
            [1 - x[1]]
            if j == 1
            else range(int(max(f.min, x[j] - EPS.get(f.name, 0))), int(min(f.max, x[j] + EPS.get(f.name, 0))) + 1)
            for j, f in enumerate(DOM.features)
        ]
        twins = np.array(list(itertools.product(*axes)), dtype=float)
        truth.append("unfair" if np.any(predict(twins) != predict(x[None])[0]) else "fair")
    assert result.engine == "rows-trees" and result.verdicts == truth
    assert {"fair", "unfair"} <= set(truth)
    shares = faircert.verify(model, DOM, protected="s", time_limit=60)
    grid = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    labels = predict(grid).reshape(7, 2, 7, 5)
    assert shares.undecided == 0 and shares.falsified == pytest.approx(float(np.mean(labels[:, 0] != labels[:, 1])))


def test_what_is_not_read_is_refused_with_the_reason(tmp_path):
    X, y = _data()
    frame = X.assign(city=np.where(X.a > 2, "x", "y"))
    cat = catboost.CatBoostClassifier(
        iterations=5, depth=2, verbose=0, cat_features=["city"], allow_writing_files=False
    ).fit(frame, y)
    assert "city" in load_model(cat).used_columns  # categorical features: a pipeline over raw columns
    cat.save_model(str(tmp_path / "cat.json"), format="json")
    data = json.loads((tmp_path / "cat.json").read_text())
    data["features_info"]["text_features"] = [{"feature_index": 0, "flat_feature_index": 5}]
    (tmp_path / "text.json").write_text(json.dumps(data))
    with pytest.raises(UnsupportedModelError, match="text features are not read"):
        load_model(tmp_path / "text.json")
    three = catboost.CatBoostClassifier(iterations=5, depth=2, verbose=0, allow_writing_files=False)
    three = three.fit(X, X.c.to_numpy() % 3)
    with pytest.raises(ModelFormatError, match="3 classes"):
        load_model(three)


def test_malformed_files_are_refused_without_a_crash(tmp_path):
    model = _model(iterations=3, depth=2)
    model.save_model(str(tmp_path / "m.cbm"))
    broken = tmp_path / "broken.cbm"
    broken.write_bytes((tmp_path / "m.cbm").read_bytes()[:200])
    with pytest.raises(ModelFormatError, match="CatBoost"):
        load_model(broken)
    model.save_model(str(tmp_path / "m.json"), format="json")
    data = json.loads((tmp_path / "m.json").read_text())
    data["oblivious_trees"][0]["leaf_values"] = data["oblivious_trees"][0]["leaf_values"][:-1]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ModelFormatError, match="tree 0: 3 leaf values for depth 2"):
        load_model(tmp_path / "bad.json")
    data["oblivious_trees"][0]["splits"][0]["border"] = "x"
    data["oblivious_trees"][0]["leaf_values"] = [0.0] * 4
    (tmp_path / "bad2.json").write_text(json.dumps(data))
    with pytest.raises(ModelFormatError, match="no finite border"):
        load_model(tmp_path / "bad2.json")
