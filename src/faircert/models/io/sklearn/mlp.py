"""scikit-learn `MLPClassifier` (ReLU hidden layers, binary) -> ReluNetwork.

For two classes scikit-learn ends in one logistic unit: class 1 iff its pre-activation (the logit)
is > 0, which is the ReluNetwork's output. The import is checked against `predict_proba`.
"""

from __future__ import annotations

from typing import Any

from ....errors import ModelFormatError
from ...network import ReluNetwork
from ..affine_chain import check_agreement, sample_inputs
from .common import on_matrix


def load_sklearn_mlp(est: Any) -> ReluNetwork:
    name = type(est).__name__
    if not hasattr(est, "coefs_"):
        raise ModelFormatError(f"{name} is not fitted")
    if len(getattr(est, "classes_", ())) != 2 or getattr(est, "out_activation_", None) != "logistic":
        raise ModelFormatError(
            f"{name}: only binary classifiers are supported (this one has {len(getattr(est, 'classes_', ()))} classes)"
        )
    if est.activation != "relu" and len(est.coefs_) > 1:
        raise ModelFormatError(f"{name}: hidden activation {est.activation!r} is not supported (use activation='relu')")
    names = [str(c) for c in est.feature_names_in_] if hasattr(est, "feature_names_in_") else None
    network = ReluNetwork(
        [w.T for w in est.coefs_],
        list(est.intercepts_),
        input_names=names,
        source=name,
        output_semantics="softmax2",
        metadata={"format": "sklearn"},
    )
    X = sample_inputs(network.n_inputs)
    check_agreement(network, X, on_matrix(est.predict_proba, X), "scikit-learn")
    return network
