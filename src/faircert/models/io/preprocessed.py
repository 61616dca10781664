"""A model trained on encoded inputs, with the fitted scikit-learn preprocessing that encoded them.

Keras, ONNX, PyTorch, .nnet, XGBoost and LightGBM files say nothing about how raw columns became
their inputs. Given the preprocessor (a ColumnTransformer, a Pipeline of transformers, or one
transformer) the pair is one PipelineModel from raw columns to label, read exactly as a
scikit-learn Pipeline ending in the same estimator would be (see `sklearn/pipeline.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ..pipeline import EncodedFeature, PipelineModel
from .sklearn.pipeline import SUPPORTED_STEPS, _apply, _input_names, _sparse_output


def load_preprocessed(preprocessor: Any, estimator: Any) -> PipelineModel:
    """The IR of `estimator` (a ReluNetwork or TreeEnsemble over encoded inputs) after `preprocessor`."""
    from ..network import ReluNetwork
    from ..trees import TreeEnsemble

    if not isinstance(estimator, (ReluNetwork, TreeEnsemble)):
        raise ModelFormatError(
            f"a preprocessor goes before a network or a tree ensemble trained on encoded columns, "
            f"not a {type(estimator).__name__}; a scikit-learn Pipeline includes its own "
            "preprocessing: pass it without one"
        )
    kind = type(preprocessor).__name__
    if kind not in SUPPORTED_STEPS:
        raise ModelFormatError(
            f"the preprocessor must be fitted scikit-learn preprocessing ({', '.join(SUPPORTED_STEPS)}), not a {kind}"
        )
    steps = preprocessor.steps if kind == "Pipeline" else [("preprocessor", preprocessor)]
    if hasattr(steps[-1][1], "predict"):
        raise ModelFormatError(
            f"the preprocessor ends in a model ({type(steps[-1][1]).__name__}); pass only the "
            "preprocessing steps, or the whole Pipeline as the model"
        )
    columns = _input_names(preprocessor)
    features = _apply(preprocessor, [EncodedFeature(c) for c in columns], "preprocessor")
    width = estimator.n_inputs if isinstance(estimator, ReluNetwork) else estimator.n_features
    if width != len(features):
        raise ModelFormatError(f"the preprocessor gives {len(features)} features but the model reads {width}")
    if (
        isinstance(estimator, TreeEnsemble)
        and "xgb" in estimator.source.lower()
        and _sparse_output([step for _, step in steps])
    ):
        raise ModelFormatError(
            "the preprocessor outputs a sparse matrix, whose zeros XGBoost reads as missing "
            "values; refit it with sparse_threshold=0 (or OneHotEncoder(sparse_output=False))"
        )
    return PipelineModel(
        columns,
        tuple(features),
        estimator,
        f"{estimator.source} after {kind}",
        _reference(preprocessor, estimator),
        named=getattr(preprocessor, "feature_names_in_", None) is not None,
    )


def _reference(preprocessor: Any, estimator: Any):
    """The estimator's (labels, margin) on the preprocessor's own encoding of raw rows."""
    from ..network import ReluNetwork

    def reference(raw):
        z = preprocessor.transform(raw)
        z = np.asarray(z.toarray() if hasattr(z, "toarray") else z, dtype=np.float64)
        if isinstance(estimator, ReluNetwork):
            margin = estimator.logit(z)
            return (margin > 0).astype(np.int64), margin
        return estimator.predict(z), estimator.predict_proba(z) - 0.5

    return reference
