"""scikit-learn `MLPClassifier` (binary; hidden activation relu, tanh, logistic or identity) -> ReluNetwork.

For two classes scikit-learn ends in one logistic unit: class 1 iff its pre-activation (the logit)
is > 0, which is the ReluNetwork's output. Identity layers compose with their neighbours; tanh and
logistic stay smooth units. The import is checked against `predict_proba`.
"""

from __future__ import annotations

from typing import Any

from ....errors import ModelFormatError
from ...activations import parse
from ...network import ReluNetwork
from ..affine_chain import Op, affine, build_network, check_import, smooth
from .common import on_matrix

_HIDDEN = ("relu", "tanh", "logistic", "identity")


def load_sklearn_mlp(est: Any) -> ReluNetwork:
    name = type(est).__name__
    if not hasattr(est, "coefs_"):
        raise ModelFormatError(f"{name} is not fitted")
    if len(getattr(est, "classes_", ())) != 2 or getattr(est, "out_activation_", None) != "logistic":
        raise ModelFormatError(
            f"{name}: only binary classifiers are supported (this one has {len(getattr(est, 'classes_', ()))} classes)"
        )
    if est.activation not in _HIDDEN:
        raise ModelFormatError(f"{name}: hidden activation {est.activation!r} is not supported")
    names = [str(c) for c in est.feature_names_in_] if hasattr(est, "feature_names_in_") else None
    ops: list[Op] = []
    for k, (w, b) in enumerate(zip(est.coefs_, est.intercepts_)):
        where = f"{name}: layer {k}"
        if k:
            ops += _unit(est.activation, where)
        ops.append(affine(w.T, b, where))
    network = build_network(ops, est.coefs_[0].shape[0], name, input_names=names, metadata={"format": "sklearn"})
    network.output_semantics = "softmax2"  # predict_proba's column 1 is the sigmoid of the logit
    check_import(network, None, "scikit-learn", lambda X: (X, on_matrix(est.predict_proba, X)))
    return network


def _unit(activation: str, where: str) -> list[Op]:
    if activation == "identity":
        return []
    if activation == "relu":
        return [Op("relu", where)]
    return [smooth(parse(activation), where)]
