"""scikit-learn tree classifiers -> TreeEnsemble (binary classification only).

scikit-learn rounds inputs to float32 and sends x left iff x <= threshold. Decision trees and
forests predict the (mean) class-1 probability of the leaves (identity link, scale 1/m);
gradient boosting adds learning_rate * leaf values to the initial log-odds (sigmoid link).
HistGradientBoostingClassifier compares float64 inputs with its numeric thresholds (x <= t goes
left), adds its leaves' values (shrinkage included) to a baseline log-odds; categorical splits are
refused, and missing values never arise on a domain. AdaBoost, Bagging and Voting over trees:
see `votes`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....errors import ModelFormatError, UnsupportedModelError
from ...trees import Tree, TreeEnsemble
from .common import on_matrix
from .votes import VOTES, load_votes

FORESTS = ("RandomForestClassifier", "ExtraTreesClassifier")


def _tree(tree_: Any, value: np.ndarray) -> Tree:
    left = np.asarray(tree_.children_left, dtype=np.int64)
    right = np.asarray(tree_.children_right, dtype=np.int64)
    leaf = left < 0
    return Tree(
        np.where(leaf, 0, tree_.feature),
        np.where(leaf, 0.0, tree_.threshold),
        np.where(leaf, -1, left),
        np.where(leaf, -1, right),
        np.where(leaf, value, 0.0),
    )


def _class_one_probability(tree_: Any) -> np.ndarray:
    v = np.asarray(tree_.value, dtype=np.float64)[:, 0, :]
    total = v.sum(axis=1)
    return np.divide(v[:, 1], total, out=np.zeros_like(total), where=total > 0)


def _check_binary(est: Any) -> None:
    classes = getattr(est, "classes_", None)
    if classes is None:
        raise ModelFormatError(f"{type(est).__name__} is not fitted")
    if len(classes) != 2:
        raise ModelFormatError(f"only binary classifiers are supported; this model has {len(classes)} classes")
    if getattr(est, "n_outputs_", 1) != 1:
        raise ModelFormatError("multi-output classifiers are not supported")


def load_sklearn_trees(est: Any) -> TreeEnsemble:
    ir = _load(est)
    classes = est.classes_
    ir.check_against(lambda X: on_matrix(est.predict, X) == classes[1], type(est).__name__)
    return ir


def _load(est: Any) -> TreeEnsemble:
    name = type(est).__name__
    _check_binary(est)
    n = int(est.n_features_in_)
    names = [str(c) for c in est.feature_names_in_] if hasattr(est, "feature_names_in_") else None
    if name == "DecisionTreeClassifier":
        trees = [_tree(est.tree_, _class_one_probability(est.tree_))]
        return TreeEnsemble(
            trees,
            n,
            split="<=",
            input_float32=True,
            base_score=0.0,
            scale=1.0,
            link="identity",
            feature_names=names,
            source=name,
            meta={"framework": "sklearn"},
        )
    if name in FORESTS:
        trees = [_tree(t.tree_, _class_one_probability(t.tree_)) for t in est.estimators_]
        return TreeEnsemble(
            trees,
            n,
            split="<=",
            input_float32=True,
            base_score=0.0,
            scale=1.0 / len(trees),
            link="identity",
            feature_names=names,
            source=name,
            meta={"framework": "sklearn"},
        )
    if name == "GradientBoostingClassifier":
        loss = getattr(est, "loss", "log_loss")
        factor = {"log_loss": 1.0, "deviance": 1.0, "exponential": 2.0}.get(loss)
        if factor is None:
            raise ModelFormatError(f"GradientBoostingClassifier loss {loss!r} is not supported")
        base = float(est._raw_predict_init(np.zeros((1, n), dtype=np.float32))[0, 0])
        if not math.isfinite(base):
            raise ModelFormatError("GradientBoostingClassifier has a non-finite initial prediction")
        trees = [_tree(t.tree_, np.asarray(t.tree_.value, dtype=np.float64)[:, 0, 0]) for t in est.estimators_[:, 0]]
        return TreeEnsemble(
            trees,
            n,
            split="<=",
            input_float32=True,
            base_score=factor * base,
            scale=factor * float(est.learning_rate),
            link="sigmoid",
            feature_names=names,
            source=name,
            meta={"framework": "sklearn", "loss": loss},
        )
    if name == "HistGradientBoostingClassifier":
        return _hist_gradient_boosting(est, n, names)
    if name in VOTES:
        return load_votes(est, n, names, _load)
    raise UnsupportedModelError(f"unsupported scikit-learn tree model {name}")


def _hist_gradient_boosting(est: Any, n: int, names: list[str] | None) -> TreeEnsemble:
    loss = type(getattr(est, "_loss", None)).__name__
    if "Binomial" not in loss:
        raise ModelFormatError(
            f"HistGradientBoostingClassifier with loss {loss} is not supported (binary log-loss only)"
        )
    trees = []
    for (predictor,) in est._predictors:
        nodes = predictor.nodes
        if np.any(nodes["is_categorical"]):
            raise ModelFormatError(
                "HistGradientBoostingClassifier with categorical splits is not supported; one-hot "
                "encode the categories before it"
            )
        leaf = nodes["is_leaf"].astype(bool)
        left, right = nodes["left"].astype(np.int64), nodes["right"].astype(np.int64)  # stored unsigned
        trees.append(
            Tree(
                np.where(leaf, 0, nodes["feature_idx"].astype(np.int64)),
                np.where(leaf, 0.0, nodes["num_threshold"]),
                np.where(leaf, -1, left),
                np.where(leaf, -1, right),
                np.where(leaf, nodes["value"], 0.0),
            )
        )
    base = float(np.asarray(est._baseline_prediction).reshape(-1)[0])
    if not math.isfinite(base):
        raise ModelFormatError("HistGradientBoostingClassifier has a non-finite baseline")
    return TreeEnsemble(
        trees,
        n,
        split="<=",
        input_float32=False,
        base_score=base,
        scale=1.0,
        link="sigmoid",
        feature_names=names,
        source="HistGradientBoostingClassifier",
        meta={"framework": "sklearn"},
    )
