"""scikit-learn linear classifiers (and Pipelines ending in one) -> LinearModel.

Supported: LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Perceptron,
SVC(kernel="linear"), binary only; in a
Pipeline, preprocessing by a ColumnTransformer of OneHotEncoder / StandardScaler / MinMaxScaler /
"passthrough" / "drop", or by one such transformer over all columns. After import, the IR's scores
are compared with the estimator's own on sampled raw inputs; a mismatch is an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ModelFormatError, UnsupportedModelError
from ...linear import ColumnEncoding, LinearModel

LINEAR = ("LogisticRegression", "LinearSVC", "SGDClassifier", "SVC", "RidgeClassifier", "Perceptron")


def load_sklearn_linear(estimator: Any, check: bool = True) -> LinearModel:
    """The LinearModel of a fitted linear classifier or a Pipeline ending in one."""
    steps = list(estimator.steps) if type(estimator).__name__ == "Pipeline" else [("model", estimator)]
    final = steps[-1][1]
    coef, intercept, classes = _linear_parameters(final)
    names = _input_names(estimator, steps, coef.shape[0])
    encoding: list[ColumnEncoding] = [ColumnEncoding(n) for n in names]
    for step_name, step in steps[:-1]:
        encoding = _compose(encoding, step, step_name)
    model = LinearModel(
        coef,
        intercept,
        tuple(encoding),
        strict=True,
        source=f"scikit-learn {type(estimator).__name__}" + (f" ({type(final).__name__})" if len(steps) > 1 else ""),
        classes=classes,
    )
    if check:
        check_linear(model, estimator, names)
    return model


def _linear_parameters(est: Any) -> tuple[np.ndarray, float, tuple]:
    name = type(est).__name__
    if name not in LINEAR:
        raise UnsupportedModelError(f"unsupported final estimator {name}; linear models: {', '.join(LINEAR)}")
    if name == "SVC" and getattr(est, "kernel", None) != "linear":
        raise UnsupportedModelError(f"SVC with kernel {est.kernel!r} is not linear; only kernel='linear' is supported")
    if not hasattr(est, "coef_"):
        raise ModelFormatError(f"the {name} is not fitted")
    coef = np.asarray(est.coef_.toarray() if hasattr(est.coef_, "toarray") else est.coef_, dtype=np.float64)
    if coef.ndim == 1:  # RidgeClassifier keeps a binary model's weights as one row
        coef = coef[None, :]
    classes = tuple(v.item() if isinstance(v, np.generic) else v for v in getattr(est, "classes_", (0, 1)))
    if coef.ndim != 2 or coef.shape[0] != 1 or len(classes) != 2:
        raise ModelFormatError(f"the {name} has {len(classes)} classes; only binary classifiers are supported")
    return coef[0], float(np.asarray(est.intercept_).reshape(-1)[0]), classes


def _input_names(pipe: Any, steps: list, n_coef: int) -> list[str]:
    names = getattr(pipe, "feature_names_in_", None)
    if names is None:
        names = getattr(steps[0][1], "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    n_in = getattr(steps[0][1], "n_features_in_", n_coef)
    return [f"x{i}" for i in range(n_in)]


def _compose(encoding: list[ColumnEncoding], step: Any, step_name: str) -> list[ColumnEncoding]:
    """The encoding after `step`: raw columns stay, their transforms change."""
    kind = type(step).__name__
    columns = [e.column for e in encoding]
    if step is None or step == "passthrough":
        return encoding
    if kind == "ColumnTransformer":
        return _column_transformer(step, columns)
    if any(e.kind != "numeric" or (e.offset, e.divisor, e.factor, e.shift) != (0.0, 1.0, 1.0, 0.0) for e in encoding):
        raise ModelFormatError(
            f"step {step_name!r} ({kind}) follows another encoding step; "
            "use one ColumnTransformer (or one transformer) before the classifier"
        )
    return _transform(step, columns, step_name)


def _column_transformer(ct: Any, columns: list[str]) -> list[ColumnEncoding]:
    out: list[ColumnEncoding] = []
    indices = getattr(ct, "_transformer_to_input_indices", None)
    if indices is None:
        raise ModelFormatError("this scikit-learn version's ColumnTransformer is not supported (needs >= 1.2)")
    for name, trans, _ in ct.transformers_:
        cols = [columns[i] for i in indices.get(name, [])]
        if not cols or trans == "drop":
            continue
        if trans == "passthrough":
            out.extend(ColumnEncoding(c) for c in cols)
        else:
            out.extend(_transform(trans, cols, name))
    return out


def _transform(trans: Any, cols: list[str], name: str) -> list[ColumnEncoding]:
    kind = type(trans).__name__
    if kind == "OneHotEncoder":
        if getattr(trans, "infrequent_categories_", None) is not None and any(
            c is not None for c in trans.infrequent_categories_
        ):
            raise ModelFormatError(f"{name!r}: OneHotEncoder with infrequent-category grouping is not supported")
        drop = getattr(trans, "drop_idx_", None)
        out = []
        for j, (col, cats) in enumerate(zip(cols, trans.categories_)):
            keep = [
                c.item() if isinstance(c, np.generic) else c
                for k, c in enumerate(cats)
                if drop is None or drop[j] is None or k != drop[j]
            ]
            if keep:
                out.append(ColumnEncoding(col, "onehot", tuple(keep)))
        return out
    if kind == "StandardScaler":
        mean = trans.mean_ if getattr(trans, "with_mean", True) and trans.mean_ is not None else np.zeros(len(cols))
        scale = trans.scale_ if getattr(trans, "with_std", True) and trans.scale_ is not None else np.ones(len(cols))
        return [ColumnEncoding(c, offset=float(m), divisor=float(s)) for c, m, s in zip(cols, mean, scale)]
    if kind == "MinMaxScaler":
        if getattr(trans, "clip", False):
            raise ModelFormatError(f"{name!r}: MinMaxScaler(clip=True) is not linear; refit with clip=False")
        return [ColumnEncoding(c, factor=float(s), shift=float(m)) for c, s, m in zip(cols, trans.scale_, trans.min_)]
    raise ModelFormatError(
        f"{name!r}: unsupported preprocessing {kind}; supported: OneHotEncoder, StandardScaler, "
        "MinMaxScaler, passthrough, drop (inside a ColumnTransformer or alone)"
    )


def check_linear(model: LinearModel, estimator: Any, names: list[str], n: int = 64) -> None:
    """Compare the IR's scores with the estimator's on sampled raw inputs."""
    rng = np.random.default_rng(0)
    columns: dict[str, np.ndarray] = {}
    by_column = {e.column: e for e in model.encoding}
    for c in names:
        e = by_column.get(c)
        if e is not None and e.kind == "onehot":
            cats = np.array(list(e.categories), dtype=object)
            columns[c] = cats[rng.integers(0, len(cats), n)]
        else:
            centre = e.offset if e is not None else 0.0
            spread = abs(e.divisor) if e is not None and e.divisor != 1.0 else 1.0
            if e is not None and e.factor != 1.0:
                centre, spread = -e.shift / e.factor, 1.0 / abs(e.factor)
            columns[c] = centre + spread * rng.normal(size=n)
    if getattr(estimator, "feature_names_in_", None) is not None:
        import pandas as pd

        raw = pd.DataFrame(columns)[names]
    else:
        raw = np.stack([columns[c] for c in names], axis=1)
        if all(by_column.get(c) is None or by_column[c].kind == "numeric" for c in names):
            raw = raw.astype(np.float64)
    try:
        theirs = np.asarray(estimator.decision_function(raw), dtype=np.float64).reshape(-1)
    except Exception as exc:  # noqa: BLE001 - the estimator rejects our sampled inputs: cannot check
        raise ModelFormatError(f"cannot check the imported model against scikit-learn: {exc}") from None
    ours = model.decision_function({c: columns[c] for c in model.columns})
    scale = 1.0 + np.abs(theirs)
    if not np.all(np.abs(ours - theirs) <= 1e-7 * scale):
        worst = float(np.max(np.abs(ours - theirs)))
        raise ModelFormatError(
            f"the imported linear model disagrees with scikit-learn (max score difference {worst:.3g})"
        )
