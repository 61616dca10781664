"""Every tree importer reproduces its library's own labels, including inputs exactly on thresholds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from faircert.errors import ModelFormatError
from faircert.models.io import load_model
from faircert.models.trees import TreeEnsemble


def _data(seed=0, n=600, d=4):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, (n, d)).astype(float)
    X[:, 1] += rng.uniform(0, 1, n)  # one real-valued column
    y = ((X[:, 0] + 0.7 * X[:, 1] - X[:, 2] + rng.normal(0, 2, n)) > 5).astype(int)
    return X, y


def _probes(ir: TreeEnsemble, seed=1):
    """Random inputs, integer inputs, and inputs exactly on (and next to) every threshold."""
    rng = np.random.default_rng(seed)
    d = ir.n_features
    ths = np.concatenate([t.threshold[~t.is_leaf] for t in ir.trees])
    near = np.concatenate(
        [
            ths,
            np.nextafter(ths, np.inf),
            np.nextafter(ths, -np.inf),
            np.nextafter(ths.astype(np.float32), np.float32(np.inf)).astype(float),
        ]
    )
    return np.vstack(
        [rng.uniform(-1, 13, (1500, d)), rng.integers(-1, 13, (1500, d)).astype(float), rng.choice(near, (3000, d))]
    )


def _agree(ir, predict, proba, X):
    assert isinstance(ir, TreeEnsemble)
    assert np.array_equal(ir.predict(X), predict(X))
    assert np.abs(ir.predict_proba(X) - proba(X)).max() < 1e-6


def test_xgboost_booster_json_and_ubj(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y = _data()
    clf = xgb.XGBClassifier(n_estimators=25, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    for src in (clf, clf.get_booster()):
        ir = load_model(src)
        P = _probes(ir)
        _agree(ir, clf.predict, lambda Z, c=clf: c.predict_proba(Z)[:, 1], P)
        margin = clf.get_booster().predict(xgb.DMatrix(P), output_margin=True)
        # float32 summation in tree order: bit-exact for most rows, within a few ulps for all
        assert np.mean(ir.score(P).astype(np.float32) == margin) > 0.8
        assert np.abs(ir.score(P) - margin).max() < 4e-6
    clf.save_model(tmp_path / "m.json")
    clf.save_model(tmp_path / "m.ubj")
    for path in (tmp_path / "m.json", tmp_path / "m.ubj"):
        ir = load_model(path)
        _agree(ir, clf.predict, lambda Z, c=clf: c.predict_proba(Z)[:, 1], _probes(ir))


def test_xgboost_rejects_multiclass_and_regression(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, _ = _data()
    multi = xgb.XGBClassifier(n_estimators=3, max_depth=2).fit(X, (X[:, 0] % 3).astype(int))
    with pytest.raises(ModelFormatError, match="classes|multi"):
        load_model(multi)
    reg = xgb.XGBRegressor(n_estimators=3, max_depth=2).fit(X, X[:, 0])
    reg.save_model(tmp_path / "r.json")
    with pytest.raises(ModelFormatError, match="not binary classification"):
        load_model(tmp_path / "r.json")


def test_lightgbm_booster_and_text_file(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    for kw in ({}, {"boosting_type": "rf", "bagging_freq": 1, "bagging_fraction": 0.7}):
        clf = lgb.LGBMClassifier(n_estimators=20, num_leaves=7, verbose=-1, random_state=0, **kw).fit(X, y)
        clf.booster_.save_model(str(tmp_path / "m.txt"))
        for src in (clf, clf.booster_, tmp_path / "m.txt"):
            ir = load_model(src)
            _agree(ir, clf.predict, lambda Z, c=clf: c.predict_proba(Z)[:, 1], _probes(ir))


def test_lightgbm_rejects_multiclass_and_regression():
    lgb = pytest.importorskip("lightgbm")
    X, _ = _data()
    with pytest.raises(ModelFormatError):
        load_model(lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(X, (X[:, 0] % 3).astype(int)))
    with pytest.raises(ModelFormatError, match="not binary classification"):
        load_model(lgb.LGBMRegressor(n_estimators=3, verbose=-1).fit(X, X[:, 0]).booster_)


def test_sklearn_tree_models():
    pytest.importorskip("sklearn")
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.tree import DecisionTreeClassifier

    X, y = _data()
    models = [
        DecisionTreeClassifier(max_depth=5, random_state=0),
        RandomForestClassifier(10, max_depth=4, random_state=0),
        ExtraTreesClassifier(10, max_depth=4, random_state=0),
        GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0),
        GradientBoostingClassifier(n_estimators=10, max_depth=2, loss="exponential", random_state=0),
    ]
    for clf in models:
        clf.fit(X, y)
        ir = load_model(clf)
        _agree(ir, clf.predict, lambda Z, c=clf: c.predict_proba(Z)[:, 1], _probes(ir))
    with pytest.raises(ModelFormatError, match="binary"):
        load_model(DecisionTreeClassifier(max_depth=2).fit(X, (X[:, 0] % 3).astype(int)))


def _forest_onnx(clf, single_column: bool):
    """A TreeEnsembleClassifier graph for a scikit-learn forest, in the two layouts converters use."""
    from onnx import TensorProto, helper

    a = {
        k: []
        for k in (
            "nodes_treeids",
            "nodes_nodeids",
            "nodes_featureids",
            "nodes_modes",
            "nodes_values",
            "nodes_truenodeids",
            "nodes_falsenodeids",
            "class_treeids",
            "class_nodeids",
            "class_ids",
            "class_weights",
        )
    }
    m = len(clf.estimators_)
    for t, est in enumerate(clf.estimators_):
        tr = est.tree_
        for k in range(tr.node_count):
            leaf = tr.children_left[k] < 0
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(k)
            a["nodes_featureids"].append(0 if leaf else int(tr.feature[k]))
            a["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            a["nodes_values"].append(0.0 if leaf else float(tr.threshold[k]))
            a["nodes_truenodeids"].append(0 if leaf else int(tr.children_left[k]))
            a["nodes_falsenodeids"].append(0 if leaf else int(tr.children_right[k]))
            if leaf:
                p = tr.value[k, 0] / tr.value[k, 0].sum()
                for c in [1] if single_column else [0, 1]:
                    a["class_treeids"].append(t)
                    a["class_nodeids"].append(k)
                    a["class_ids"].append(0 if single_column else c)
                    a["class_weights"].append(float(p[c] / m))
    node = helper.make_node(
        "TreeEnsembleClassifier",
        ["X"],
        ["label", "probabilities"],
        domain="ai.onnx.ml",
        classlabels_int64s=[0, 1],
        post_transform="NONE",
        **a,
    )
    d = clf.n_features_in_
    graph = helper.make_graph(
        [node],
        "forest",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, d])],
        [
            helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])


@pytest.mark.parametrize("single_column", [True, False])
def test_onnx_tree_ensemble_matches_reference_runtime(tmp_path, single_column):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator
    from sklearn.ensemble import RandomForestClassifier

    X, y = _data()
    clf = RandomForestClassifier(7, max_depth=4, random_state=0).fit(X, y)
    proto = _forest_onnx(clf, single_column)
    onnx.save(proto, tmp_path / "forest.onnx")
    ir = load_model(tmp_path / "forest.onnx")
    P = _probes(ir)
    label, proba = ReferenceEvaluator(proto).run(None, {"X": P.astype(np.float32)})
    assert np.array_equal(ir.predict(P), label)
    assert np.abs(ir.predict_proba(P) - proba[:, 1]).max() < 1e-5
    assert np.mean(ir.predict(P) == clf.predict(P)) > 0.999  # float32 sums may flip exact ties


def test_json_sniffing_and_bad_files(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"something": 1}))
    with pytest.raises(ModelFormatError, match="unrecognised JSON model"):
        load_model(bad)
    bad.write_text("{not json")
    with pytest.raises(ModelFormatError, match="not a readable JSON"):
        load_model(bad)
    txt = tmp_path / "m.txt"
    txt.write_text("hello")
    with pytest.raises(ModelFormatError, match="LightGBM"):
        load_model(txt)


@pytest.mark.parametrize("kind", ["xgboost", "lightgbm", "sklearn"])
def test_table_evaluation_equals_traversal(kind):
    """Trees of at most 15 splits are evaluated by table; the leaves equal plain traversal, also on
    thresholds and between float32 neighbours of them."""
    X, y = _data(seed=3)
    if kind == "xgboost":
        xgb = pytest.importorskip("xgboost")
        ir = load_model(xgb.XGBClassifier(n_estimators=20, max_depth=4, random_state=0, n_jobs=1).fit(X, y))
    elif kind == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        ir = load_model(lgb.LGBMClassifier(n_estimators=20, num_leaves=12, verbose=-1, random_state=0).fit(X, y))
    else:
        ensemble = pytest.importorskip("sklearn.ensemble")
        ir = load_model(ensemble.GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y))
    assert ir._tables() is not None
    ths = np.concatenate([t.threshold[~t.is_leaf] for t in ir.trees])
    rng = np.random.default_rng(0)
    near = rng.choice(ths, (600, X.shape[1]))
    Z = np.vstack([rng.normal(size=(600, X.shape[1])), near, np.nextafter(near, np.inf), np.nextafter(near, -np.inf)])
    by_table = ir.leaf_values(Z)
    ir._tables_cache = ()  # no table: traversal
    assert np.array_equal(by_table, ir.leaf_values(Z))


@pytest.mark.parametrize("by_table", [True, False])
def test_leaves_with_a_feature_fixed_equal_direct_evaluation(by_table):
    xgb = pytest.importorskip("xgboost")
    X, y = _data(seed=4)
    ir = load_model(xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=0, n_jobs=1).fit(X, y))
    if not by_table:
        ir._tables_cache = ()
    Z = _probes(ir)
    rows = np.arange(0, len(Z), 3)
    under = ir.leaves_with(Z, [0, 2])
    ths = np.concatenate([t.threshold[~t.is_leaf] for t in ir.trees])
    for values in ([0.0, 5.0], [ths[0], ths[-1]], [np.nextafter(ths[1], np.inf), 11.0]):
        direct = Z[rows].copy()
        direct[:, [0, 2]] = values
        assert np.array_equal(under(np.array(values), rows), ir.leaf_values(direct))
