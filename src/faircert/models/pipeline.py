"""PipelineModel: the IR of a whole preprocessing + classifier pipeline, from raw columns to label.

A pipeline reads raw columns (numbers, or categories by name) and feeds an estimator encoded
features. Each encoded feature is a function of exactly one raw column: an `Encoder` (the column
as it is, a one-hot indicator, an ordinal rank, a bin index or a bin indicator) followed by
elementwise float64 operations (scalers), applied in the order scikit-learn applies them.

Engines do not read a PipelineModel directly: `binding.bind` turns it, for a domain stated in raw columns
(categorical features as codes of their category names, numbers with bounds), into a ReluNetwork
or TreeEnsemble over the domain's features that computes the same label at every point of the
domain (see `pipeline_network` and `pipeline_trees` for what is exact and what is refused).
The bound model is compared with the original pipeline's own predictions on sampled raw rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DomainError, ModelFormatError

ENCODERS = ("identity", "equals", "rank", "bin", "bin_equals")
OPS = ("sub", "div", "mul", "add")
#: The largest grid of a discrete column whose step-function encodings are enumerated value by value.
MAX_GRID = 100_000


@dataclass(frozen=True)
class Encoder:
    """How a raw value becomes one number before any scaling.

    identity: the value itself (a number); equals: 1.0 iff the value is `category` (one-hot);
    rank: the position of the value in `categories` (ordinal); bin: the number of `edges` <= the
    value (KBinsDiscretizer's inner edges); bin_equals: 1.0 iff that number is `index`.
    `categories` are the values the encoder knows; an unknown value is rejected by the model when
    `rejects_unknown`, else encoded as `unknown` (one-hot: all indicators 0).
    """

    kind: str = "identity"
    category: Any = None
    categories: tuple = ()
    rejects_unknown: bool = False
    unknown: float = 0.0
    edges: tuple[float, ...] = ()
    index: int = 0
    #: The scikit-learn class it came from, for messages.
    origin: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ENCODERS:
            raise ModelFormatError(f"unknown encoder kind {self.kind!r}")

    @property
    def is_monotone(self) -> bool:
        """Non-decreasing in a numeric value (identity and bin indices)."""
        return self.kind in ("identity", "bin")

    def known(self, values: np.ndarray) -> np.ndarray:
        """Which raw values the encoder knows (always all of them for identity and bins)."""
        if self.kind not in ("equals", "rank"):
            return np.ones(len(values), dtype=bool)
        return np.any([matches(values, c) for c in self.categories], axis=0)

    def encode(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=object).reshape(-1)
        if self.kind == "equals":
            return matches(values, self.category).astype(np.float64)
        if self.kind == "rank":
            out = np.full(len(values), float(self.unknown))
            for i, c in enumerate(self.categories):
                out[matches(values, c)] = float(i)
            return out
        x = _numbers(values, self.origin)
        if self.kind == "identity":
            return x
        bins = np.searchsorted(np.asarray(self.edges, dtype=np.float64), x, side="right").astype(np.float64)
        return bins if self.kind == "bin" else (bins == self.index).astype(np.float64)


@dataclass(frozen=True)
class EncodedFeature:
    """One input of the estimator: `ops` applied in order to `encoder` of raw column `column`."""

    column: str
    encoder: Encoder = field(default_factory=Encoder)
    ops: tuple[tuple[str, float], ...] = ()

    def then(self, *ops: tuple[str, float]) -> EncodedFeature:
        for op, value in ops:
            if op not in OPS or not np.isfinite(value) or (op == "div" and value == 0):
                raise ModelFormatError(f"column {self.column!r}: invalid scaling step {op} {value}")
        return EncodedFeature(self.column, self.encoder, self.ops + tuple((op, float(v)) for op, v in ops))

    def value(self, raw: np.ndarray) -> np.ndarray:
        """The feature of raw values, computed in float64 in scikit-learn's order of operations."""
        z = self.encoder.encode(np.asarray(raw, dtype=object))
        for op, c in self.ops:
            z = z - c if op == "sub" else z / c if op == "div" else z * c if op == "mul" else z + c
        return z

    @property
    def is_monotone(self) -> bool:
        """Non-decreasing in the raw value: a monotone encoder and only positive factors."""
        return self.encoder.is_monotone and all(c > 0 for op, c in self.ops if op in ("div", "mul"))

    def affine(self) -> tuple[float, float]:
        """(a, b) with ops(z) = a z + b in real arithmetic."""
        a, b = 1.0, 0.0
        for op, c in self.ops:
            if op == "sub":
                b -= c
            elif op == "add":
                b += c
            elif op == "mul":
                a, b = a * c, b * c
            else:
                a, b = a / c, b / c
        return a, b


@dataclass
class PipelineModel:
    """Raw columns -> encoded features -> estimator (a ReluNetwork, TreeEnsemble or LinearModel over
    the encoded features, in order)."""

    columns: list[str]
    features: tuple[EncodedFeature, ...]
    estimator: Any
    source: str = ""
    #: The original pipeline on raw rows (a DataFrame with `columns`): (labels 0/1, margin), where a
    #: margin near 0 marks rows a rounding difference may flip. None when the original is gone.
    reference: Callable[[Any], tuple[np.ndarray, np.ndarray]] | None = None
    #: Whether the reference wants a DataFrame (fitted with column names) or a plain matrix.
    named: bool = True
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.features = tuple(self.features)
        missing = sorted({f.column for f in self.features} - set(self.columns))
        if missing:
            raise ModelFormatError(f"encoded features read unknown column(s) {missing}")

    @property
    def input_names(self) -> list[str]:
        return list(self.columns)

    @property
    def used_columns(self) -> list[str]:
        """The raw columns some encoded feature reads (a ColumnTransformer may drop others)."""
        used = {f.column for f in self.features}
        return [c for c in self.columns if c in used]

    def __str__(self) -> str:
        return f"PipelineModel({len(self.columns)} raw columns -> {len(self.features)} features, {self.source})"


def matches(values: np.ndarray, category: Any) -> np.ndarray:
    """Raw values equal to a category (the linear IR's rule: numbers as numbers, True and False as 1
    and 0, as a domain inferred from a boolean column codes them; everything else as text)."""
    from .linear import _matches

    return _matches(np.asarray(values, dtype=object), category)


def _numbers(values: np.ndarray, origin: str) -> np.ndarray:
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        bad = [v for v in values[:50] if isinstance(v, str)][:3]
        raise DomainError(
            f"{origin or 'the model'} reads numbers but the domain gives categories {bad}; "
            "declare the column numeric (no category names)"
        ) from None


def raw_values(feature: Any, codes: np.ndarray) -> np.ndarray:
    """The raw values a domain feature stands for: category names for coded categories, else numbers."""
    codes = np.asarray(codes, dtype=np.float64)
    if feature.categories is not None:
        names = np.asarray(feature.categories, dtype=object)
        return names[codes.astype(np.int64)]
    return codes.astype(np.int64).astype(object) if feature.is_discrete else codes.astype(object)


def from_linear(model: Any) -> PipelineModel:
    """A LinearModel's column encodings as a pipeline ending in its weighted sum."""
    from .linear import LinearModel

    if not model.strict:
        raise ModelFormatError(
            "this linear model is positive when its score is >= 0; verification needs the "
            "strict rule (> 0) of scikit-learn and the network engines"
        )
    features: list[EncodedFeature] = []
    for e in model.encoding:
        if e.kind == "onehot":
            features += [
                EncodedFeature(e.column, Encoder("equals", c, e.categories, origin="one-hot encoding"))
                for c in e.categories
            ]
        else:
            features.append(
                EncodedFeature(e.column).then(
                    ("sub", e.offset), ("div", e.divisor), ("mul", e.factor), ("add", e.shift)
                )
            )
    plain = LinearModel.plain(model.weights, model.intercept, source=model.source, classes=model.classes)

    def reference(raw):
        score = model.decision_function(raw)
        return (score > 0).astype(np.int64), score

    return PipelineModel(model.columns, tuple(features), plain, model.source or "linear model", reference)


#: The scaling steps a LinearModel's numeric encoding holds exactly, in its order of operations.
_LINEAR_STEPS = ("sub", "div", "mul", "add")


def to_linear(model: PipelineModel) -> Any:
    """The LinearModel of a pipeline ending in a linear model, when its encoding is one a LinearModel
    holds exactly (each column used once: as a number scaled by at most one subtraction, division,
    multiplication and addition in that order, or one-hot); else None. Group fairness of a
    LinearModel under a discrete population is exact (subset sums)."""
    from .linear import ColumnEncoding, LinearModel

    if not isinstance(model.estimator, LinearModel) or not model.estimator.strict:
        return None
    by_column: dict[str, list[int]] = {}
    for i, f in enumerate(model.features):
        by_column.setdefault(f.column, []).append(i)
    encoding, order = [], []
    for column, idx in by_column.items():
        feats = [model.features[i] for i in idx]
        if len(feats) == 1 and feats[0].encoder.kind == "identity":
            ops = [op for op, _ in feats[0].ops]
            if ops != [op for op in _LINEAR_STEPS if op in ops]:
                return None
            values = dict(feats[0].ops)
            encoding.append(
                ColumnEncoding(
                    column,
                    offset=values.get("sub", 0.0),
                    divisor=values.get("div", 1.0),
                    factor=values.get("mul", 1.0),
                    shift=values.get("add", 0.0),
                )
            )
        elif all(f.encoder.kind == "equals" and not f.ops for f in feats):
            encoding.append(ColumnEncoding(column, "onehot", tuple(f.encoder.category for f in feats)))
        else:
            return None
        order += idx
    weights = model.estimator.weights[order]
    return LinearModel(
        weights,
        model.estimator.intercept,
        tuple(encoding),
        strict=True,
        source=model.source,
        classes=model.estimator.classes,
    )
