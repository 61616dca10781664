"""A linear model as plain JSON -> LinearModel.

    {"weights": [0.8, -1.2, 0.3], "intercept": -0.5,
     "features": ["age", "income", "sex"],           # optional; default x0, x1, ...
     "positive_if": ">",                              # optional; ">" (default) or ">="
     "encoding": [                                    # optional, instead of "features"
        {"column": "race", "onehot": ["White", "Black", "Other"]},
        {"column": "age", "offset": 38.6, "divisor": 13.6},
        {"column": "hours", "factor": 0.0102, "shift": -0.0102}]}

`"format": "faircert-linear"` may mark the file. A numeric entry encodes
`((x - offset) / divisor) * factor + shift`; a one-hot entry gives one feature per category.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import MAX_FEATURES, check_at_most, listed, loads_json, quoted, read_text
from ..linear import ColumnEncoding, LinearModel


def load_linear_json(path: str | Path) -> LinearModel:
    path = Path(path)
    data = loads_json(read_text(path, ModelFormatError, "JSON model"), str(path), ModelFormatError)
    return linear_from_dict(data, source=str(path))


def is_linear_json(data: Any) -> bool:
    """Whether parsed JSON looks like a faircert linear model."""
    return isinstance(data, dict) and (
        data.get("format") == "faircert-linear" or ("weights" in data and "intercept" in data)
    )


def linear_from_dict(data: Any, source: str = "linear model") -> LinearModel:
    if not is_linear_json(data):
        raise ModelFormatError(f"{source}: expected an object with 'weights' and 'intercept'")
    allowed = {"format", "weights", "intercept", "features", "positive_if", "encoding", "classes"}
    unknown = set(data) - allowed
    if unknown:
        raise ModelFormatError(
            f"{source}: unknown keys {listed(sorted(unknown), 5)} (allowed: "
            f"{', '.join(sorted(allowed))}; feature names go in 'features')"
        )
    weights = data["weights"]
    if not isinstance(weights, list) or not all(_number(w) for w in weights):
        raise ModelFormatError(f"{source}: 'weights' must be a list of numbers")
    check_at_most("the number of weights", len(weights), MAX_FEATURES, source)
    if not _number(data["intercept"]):
        raise ModelFormatError(f"{source}: 'intercept' must be a number")
    rule = data.get("positive_if", ">")
    if rule not in (">", ">="):
        raise ModelFormatError(f"{source}: 'positive_if' must be '>' or '>=', got {quoted(rule)}")
    if "encoding" in data and "features" in data:
        raise ModelFormatError(f"{source}: give 'features' or 'encoding', not both")
    classes = data.get("classes", [0, 1])
    if not isinstance(classes, list) or len(classes) != 2 or not all(isinstance(c, (str, int, float)) for c in classes):
        raise ModelFormatError(f"{source}: 'classes' must list the two class labels (negative, positive)")
    classes = tuple(classes)
    if "encoding" in data:
        if not isinstance(data["encoding"], list):
            raise ModelFormatError(f"{source}: 'encoding' must be a list of column encodings")
        encoding = tuple(_column(e, source) for e in data["encoding"])
        return LinearModel(
            np.asarray(weights, dtype=np.float64),
            data["intercept"],
            encoding,
            strict=rule == ">",
            source=source,
            classes=classes,
        )
    names = data.get("features")
    if names is not None and (
        not isinstance(names, list) or len(names) != len(weights) or not all(isinstance(n, str) for n in names)
    ):
        raise ModelFormatError(f"{source}: 'features' must list one name per weight ({len(weights)})")
    return LinearModel.plain(weights, data["intercept"], names, strict=rule == ">", source=source, classes=classes)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _column(entry: Any, source: str) -> ColumnEncoding:
    if not isinstance(entry, dict) or not isinstance(entry.get("column"), str):
        raise ModelFormatError(f"{source}: each encoding entry needs a 'column' name")
    column = quoted(entry["column"])
    unknown = set(entry) - {"column", "onehot", "offset", "divisor", "factor", "shift"}
    if unknown:
        raise ModelFormatError(f"{source}: encoding of {column} has unknown keys {listed(sorted(unknown), 5)}")
    if "onehot" in entry:
        if (
            not isinstance(entry["onehot"], list)
            or not entry["onehot"]
            or not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in entry["onehot"])
        ):
            raise ModelFormatError(f"{source}: 'onehot' of {column} must be a non-empty list of categories")
        return ColumnEncoding(str(entry["column"]), "onehot", tuple(entry["onehot"]))
    params = {k: entry[k] for k in ("offset", "divisor", "factor", "shift") if k in entry}
    if not all(_number(v) for v in params.values()):
        raise ModelFormatError(f"{source}: scaling of {column} must be numbers")
    return ColumnEncoding(str(entry["column"]), "numeric", (), **{k: float(v) for k, v in params.items()})
