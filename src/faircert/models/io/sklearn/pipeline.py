"""scikit-learn Pipelines (and ColumnTransformers) -> PipelineModel: raw columns to label.

Preprocessing read exactly: ColumnTransformer (with "passthrough", "drop" and a remainder),
nested Pipelines, OneHotEncoder, OrdinalEncoder, KBinsDiscretizer, StandardScaler, MinMaxScaler,
MaxAbsScaler, and SimpleImputer and FunctionTransformer() as the identity (the domain holds no
missing values). The final estimator is any supported classifier: linear, MLPClassifier (ReLU),
decision trees, forests and gradient boosting. Anything else is refused with one error naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ....errors import ModelFormatError, UnsupportedModelError
from ...pipeline import EncodedFeature, Encoder, PipelineModel

SUPPORTED_STEPS = (
    "ColumnTransformer",
    "Pipeline",
    "OneHotEncoder",
    "OrdinalEncoder",
    "KBinsDiscretizer",
    "StandardScaler",
    "MinMaxScaler",
    "MaxAbsScaler",
    "SimpleImputer",
    "FunctionTransformer",
    "passthrough",
    "drop",
)


def load_sklearn_pipeline(pipe: Any, load_estimator: Callable[[Any], Any]) -> PipelineModel:
    """The pipeline's IR; `load_estimator` imports its final estimator (the scikit-learn importer)."""
    steps = list(pipe.steps)
    final = steps[-1][1]
    columns = _input_names(pipe)
    features = [EncodedFeature(c) for c in columns]
    for name, step in steps[:-1]:
        features = _apply(step, features, name)
    if type(final).__name__ == "Pipeline":
        raise UnsupportedModelError("a Pipeline nested as the final step is not supported; flatten it")
    if _sparse_output([step for _, step in steps[:-1]]) and type(final).__module__.split(".")[0] == "xgboost":
        raise ModelFormatError(
            "XGBoost reads the zeros of a sparse matrix as missing values, and this pipeline's "
            "preprocessing outputs a sparse matrix; refit with the ColumnTransformer's "
            "sparse_threshold=0 (or OneHotEncoder(sparse_output=False)) so that zeros are zeros"
        )
    estimator = load_estimator(final)
    width = getattr(estimator, "n_features", None) or getattr(estimator, "n_inputs", None)
    if width != len(features):
        raise ModelFormatError(
            f"the pipeline's preprocessing gives {len(features)} features but its {type(final).__name__} reads {width}"
        )
    return PipelineModel(
        columns,
        tuple(features),
        estimator,
        f"scikit-learn Pipeline ({type(final).__name__})",
        _reference(pipe, final),
        named=getattr(pipe, "feature_names_in_", None) is not None,
    )


def _sparse_output(steps: list[Any]) -> bool:
    """Whether the preprocessing hands the estimator a sparse matrix."""
    for step in reversed(steps):
        kind = type(step).__name__
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        if kind == "Pipeline":
            return _sparse_output([inner for _, inner in step.steps])
        if kind == "ColumnTransformer":
            return bool(getattr(step, "sparse_output_", False))
        if kind == "OneHotEncoder":
            return bool(getattr(step, "sparse_output", True))
        if kind == "KBinsDiscretizer":
            return step.encode == "onehot"
        if kind in ("MaxAbsScaler", "StandardScaler", "FunctionTransformer"):
            continue  # these keep a sparse input sparse
        return False
    return False


def _input_names(pipe: Any) -> list[str]:
    names = getattr(pipe, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    n = getattr(pipe, "n_features_in_", None)
    if n is None:
        raise ModelFormatError("the pipeline is not fitted")
    return [f"x{i}" for i in range(int(n))]


def _reference(pipe: Any, final: Any):
    classes = list(final.classes_)

    def reference(raw):
        labels = (np.asarray(pipe.predict(raw)) == classes[1]).astype(np.int64)
        if hasattr(pipe, "predict_proba"):
            margin = np.asarray(pipe.predict_proba(raw), dtype=np.float64)[:, 1] - 0.5
        else:
            margin = np.asarray(pipe.decision_function(raw), dtype=np.float64).reshape(-1)
        return labels, margin

    return reference


def _apply(step: Any, features: list[EncodedFeature], name: str) -> list[EncodedFeature]:
    """The encoded features after one preprocessing step."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return features
    kind = type(step).__name__
    if kind == "Pipeline":
        for inner_name, inner in step.steps:
            features = _apply(inner, features, f"{name}/{inner_name}")
        return features
    if kind == "ColumnTransformer":
        return _column_transformer(step, features, name)
    if kind == "OneHotEncoder":
        return _onehot(step, features, name)
    if kind == "OrdinalEncoder":
        return _ordinal(step, features, name)
    if kind == "KBinsDiscretizer":
        return _bins(step, features, name)
    if kind == "StandardScaler":
        mean = step.mean_ if step.with_mean and step.mean_ is not None else None
        scale = step.scale_ if step.with_std and step.scale_ is not None else None
        return [
            f.then(
                *((("sub", float(mean[k])),) if mean is not None else ()),
                *((("div", float(scale[k])),) if scale is not None else ()),
            )
            for k, f in enumerate(features)
        ]
    if kind == "MinMaxScaler":
        if step.clip:
            raise UnsupportedModelError(f"{name!r}: MinMaxScaler(clip=True) is not supported; refit with clip=False")
        return [f.then(("mul", float(s)), ("add", float(m))) for f, s, m in zip(features, step.scale_, step.min_)]
    if kind == "MaxAbsScaler":
        return [f.then(("div", float(s))) for f, s in zip(features, step.scale_)]
    if kind == "SimpleImputer":  # the identity where nothing is missing; columns empty at fit time are dropped
        if step.add_indicator:
            raise UnsupportedModelError(f"{name!r}: SimpleImputer(add_indicator=True) is not supported")
        stats = np.asarray(step.statistics_, dtype=object)
        keep = getattr(step, "keep_empty_features", False)
        return [f for f, s in zip(features, stats) if keep or not _missing(s)]
    if kind == "FunctionTransformer" and step.func is None:
        return features
    raise UnsupportedModelError(f"{name!r}: unsupported preprocessing {kind}; supported: {', '.join(SUPPORTED_STEPS)}")


def _missing(value: Any) -> bool:
    try:
        return bool(np.isnan(float(value)))
    except (TypeError, ValueError):
        return value is None


def _column_transformer(ct: Any, features: list[EncodedFeature], name: str) -> list[EncodedFeature]:
    indices = getattr(ct, "_transformer_to_input_indices", None)
    if indices is None:
        raise ModelFormatError("this scikit-learn version's ColumnTransformer is not supported (needs >= 1.2)")
    out: list[EncodedFeature] = []
    for part, trans, _ in ct.transformers_:
        picked = [features[i] for i in indices.get(part, [])]
        if not picked or (isinstance(trans, str) and trans == "drop"):
            continue
        out.extend(_apply(trans, picked, f"{name}/{part}"))
    return out


def _raw(features: list[EncodedFeature], name: str, kind: str) -> None:
    for f in features:
        if f.encoder.kind != "identity" or f.ops:
            raise ModelFormatError(
                f"{name!r}: {kind} must read raw columns; column {f.column!r} is already encoded or scaled before it"
            )


def _no_infrequent(step: Any, name: str) -> None:
    infrequent = getattr(step, "infrequent_categories_", None)
    if infrequent is not None and any(c is not None for c in infrequent):
        raise UnsupportedModelError(
            f"{name!r}: {type(step).__name__} with infrequent-category grouping is not supported"
        )


def _plain(values: Any) -> tuple:
    return tuple(v.item() if isinstance(v, np.generic) else v for v in values)


def _onehot(step: Any, features: list[EncodedFeature], name: str) -> list[EncodedFeature]:
    _raw(features, name, "OneHotEncoder")
    _no_infrequent(step, name)
    drop = getattr(step, "drop_idx_", None)
    rejects = step.handle_unknown == "error"
    out = []
    for j, (f, cats) in enumerate(zip(features, step.categories_)):
        cats = _plain(cats)
        for k, c in enumerate(cats):
            if drop is not None and drop[j] is not None and k == drop[j]:
                continue
            out.append(EncodedFeature(f.column, Encoder("equals", c, cats, rejects, origin="OneHotEncoder")))
    return out


def _ordinal(step: Any, features: list[EncodedFeature], name: str) -> list[EncodedFeature]:
    _raw(features, name, "OrdinalEncoder")
    _no_infrequent(step, name)
    rejects = step.handle_unknown == "error"
    unknown = float(step.unknown_value) if not rejects else 0.0
    if not rejects and not np.isfinite(unknown):
        raise UnsupportedModelError(f"{name!r}: OrdinalEncoder(unknown_value=nan) is not supported; use a number")
    return [
        EncodedFeature(f.column, Encoder("rank", None, _plain(cats), rejects, unknown, origin="OrdinalEncoder"))
        for f, cats in zip(features, step.categories_)
    ]


def _bins(step: Any, features: list[EncodedFeature], name: str) -> list[EncodedFeature]:
    _raw(features, name, "KBinsDiscretizer")
    out = []
    for f, edges in zip(features, step.bin_edges_):
        inner = tuple(float(e) for e in np.asarray(edges, dtype=np.float64)[1:-1])
        if step.encode == "ordinal":
            out.append(EncodedFeature(f.column, Encoder("bin", edges=inner, origin="KBinsDiscretizer")))
        else:
            out += [
                EncodedFeature(f.column, Encoder("bin_equals", edges=inner, index=k, origin="KBinsDiscretizer"))
                for k in range(len(inner) + 1)
            ]
    return out
