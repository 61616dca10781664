"""scikit-learn ensembles that combine other classifiers -> TreeEnsemble (binary classification only).

* AdaBoostClassifier (SAMME) over trees: each tree votes +w or -w for class 1 (its estimator weight
  w), decision = 2 sum(votes) / sum(w) (1 / sum(w) before scikit-learn 1.4), class 1 iff
  decision > 0, and P[y=1] = sigmoid(decision): leaf values +-w, that scale, sigmoid link.
* BaggingClassifier over trees: the mean of the trees' class-1 probabilities, each tree reading its
  own subset of the features (remapped to the full input): like a forest.
* VotingClassifier: soft voting averages the members' class-1 probabilities with the vote weights,
  a sum of leaf values where every member's probability is one (trees, forests, bagging); hard
  voting is a weighted vote of the members' labels, a sum of leaf values where every member is a
  single tree (+-its weight). Anything else is refused with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ModelFormatError, UnsupportedModelError
from ...trees import Tree, TreeEnsemble
from .common import on_matrix

SINGLE_TREES = ("DecisionTreeClassifier", "ExtraTreeClassifier")
VOTES = ("AdaBoostClassifier", "BaggingClassifier", "VotingClassifier")


def load_votes(est: Any, n: int, names: list[str] | None, load_member: Any) -> TreeEnsemble:
    """The IR of a voting ensemble; `load_member` reads a member estimator (for VotingClassifier)."""
    name = type(est).__name__
    if name == "AdaBoostClassifier":
        return _adaboost(est, n, names)
    if name == "BaggingClassifier":
        return _bagging(est, n, names)
    return _voting(est, n, names, load_member)


def _ensemble(trees: list[Tree], n: int, names, source: str, scale: float, link: str) -> TreeEnsemble:
    return TreeEnsemble(
        trees,
        n,
        split="<=",
        input_float32=True,
        base_score=0.0,
        scale=scale,
        link=link,
        feature_names=names,
        source=source,
        meta={"framework": "sklearn"},
    )


def _tree(tree_: Any, value: np.ndarray, features: np.ndarray | None = None) -> Tree:
    """A fitted tree's arrays with the given leaf values; `features` maps its inputs to the model's."""
    left = np.asarray(tree_.children_left, dtype=np.int64)
    right = np.asarray(tree_.children_right, dtype=np.int64)
    leaf = left < 0
    feature = np.where(leaf, 0, tree_.feature)
    if features is not None:
        feature = np.where(leaf, 0, np.asarray(features, dtype=np.int64)[feature])
    return Tree(
        feature,
        np.where(leaf, 0.0, tree_.threshold),
        np.where(leaf, -1, left),
        np.where(leaf, -1, right),
        np.where(leaf, value, 0.0),
    )


def _single_tree(member: Any, what: str) -> Any:
    if type(member).__name__ not in SINGLE_TREES:
        raise UnsupportedModelError(
            f"{what} over {type(member).__name__} is not supported (decision trees only: their votes are leaf values)"
        )
    return member


def _vote(member: Any, positive: Any, weight: float) -> np.ndarray:
    """Each node's vote: +weight where the tree predicts `positive` (its classes at the argmax of the
    node's class weights, first on ties, as `predict`), -weight elsewhere."""
    v = np.asarray(member.tree_.value, dtype=np.float64)[:, 0, :]
    label = np.asarray(member.classes_)[np.argmax(v, axis=1)]
    return np.where(label == positive, weight, -weight)


def _adaboost(est: Any, n: int, names) -> TreeEnsemble:
    algorithm = getattr(est, "algorithm", "SAMME")
    if algorithm not in ("SAMME", "deprecated"):
        raise UnsupportedModelError(f"AdaBoostClassifier with algorithm={algorithm!r} is not supported (SAMME is)")
    weights = np.asarray(est.estimator_weights_, dtype=np.float64)
    total = float(weights.sum())
    if not (np.all(np.isfinite(weights)) and total > 0):
        raise ModelFormatError("AdaBoostClassifier has estimator weights that do not sum to a positive number")
    positive = est.classes_[1]
    members = [_single_tree(m, "AdaBoostClassifier") for m in est.estimators_]
    trees = [_tree(m.tree_, _vote(m, positive, float(w))) for m, w in zip(members, weights)]
    votes = _ensemble(trees, n, names, "AdaBoostClassifier", 1.0, "sigmoid")
    return _ensemble(trees, n, names, "AdaBoostClassifier", _decision_scale(est, votes, total), "sigmoid")


def _decision_scale(est: Any, votes: TreeEnsemble, total: float) -> float:
    """decision_function / sum of votes: 2 / sum(w) in scikit-learn >= 1.4 (a wrong vote counts -w),
    1 / sum(w) before (it counted 0); read off the estimator, so that probabilities match too."""
    X = np.random.default_rng(0).normal(size=(64, votes.n_features)) * 3
    X = np.vstack([X, np.zeros((1, votes.n_features))])
    s = votes.score(X)
    d = np.asarray(on_matrix(est.decision_function, X), dtype=np.float64)
    for scale in (2.0 / total, 1.0 / total):
        if np.allclose(d, scale * s, rtol=1e-9, atol=1e-12):
            return scale
    raise ModelFormatError("AdaBoostClassifier: its decision function is not a weighted vote of its trees")


def _class_one(member: Any) -> np.ndarray:
    """Each node's class-1 probability; Bagging trains on encoded labels. A tree that knows one class
    only (a member without sample weights, fitted on a sample of one class) says 0 or 1 everywhere,
    as Bagging reads it."""
    classes = list(np.asarray(member.classes_))
    v = np.asarray(member.tree_.value, dtype=np.float64)[:, 0, :]
    if 1 not in classes:
        return np.zeros(v.shape[0])
    total = v.sum(axis=1)
    return np.divide(v[:, classes.index(1)], total, out=np.zeros_like(total), where=total > 0)


def _bagging(est: Any, n: int, names) -> TreeEnsemble:
    members = [_single_tree(m, "BaggingClassifier") for m in est.estimators_]
    trees = [_tree(m.tree_, _class_one(m), features) for m, features in zip(members, est.estimators_features_)]
    return _ensemble(trees, n, names, "BaggingClassifier", 1.0 / len(trees), "identity")


def _voting(est: Any, n: int, names, load_member: Any) -> TreeEnsemble:
    members = list(est.estimators_)
    weights = np.ones(len(members)) if est.weights is None else np.asarray(est._weights_not_none, dtype=np.float64)
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0) and weights.sum() > 0):
        raise ModelFormatError("VotingClassifier weights must be non-negative with a positive sum")
    trees: list[Tree] = []
    if est.voting == "hard":
        for m, w in zip(members, weights):
            _single_tree(m, "hard voting")
            trees.append(_tree(m.tree_, _vote(m, 1, float(w))))  # members learn encoded labels 0/1
        return _ensemble(trees, n, names, "VotingClassifier", 1.0, "sigmoid")
    share = weights / weights.sum()
    for m, w in zip(members, share):
        ir = load_member(m)
        if ir.link != "identity" or ir.base_score != 0.0 or not ir.input_float32 or ir.split != "<=":
            raise UnsupportedModelError(
                f"soft voting over {type(m).__name__} is not supported: its probability is a sigmoid of its "
                "margin, and an average of such probabilities is no sum of leaf values"
            )
        trees += [Tree(t.feature, t.threshold, t.left, t.right, t.value * (ir.scale * w)) for t in ir.trees]
    return _ensemble(trees, n, names, "VotingClassifier", 1.0, "identity")
