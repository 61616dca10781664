"""LinearModel: the IR of linear classifiers, with the encoding from raw columns to their features.

A raw column is either numeric, encoded as one feature `((x - offset) / divisor) * factor + shift`
(identity, StandardScaler and MinMaxScaler are special cases), or categorical, one-hot encoded over
a list of categories (a dropped category is simply absent: all its indicators are 0). The encoded
features are the encodings of the columns in order. The label is positive iff
`weights . z + intercept > 0` (scikit-learn's rule), or `>= 0` when `strict` is False (FVGM's form).
Scores are defined in real arithmetic on the float64 parameters; engines bound rounding soundly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol, TypeVar

import numpy as np

from ..errors import DataError, ModelFormatError

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True)
class ColumnEncoding:
    """How one raw column becomes encoded features (1 for numeric, len(categories) for one-hot)."""

    column: str
    kind: str = "numeric"
    categories: tuple = ()
    offset: float = 0.0
    divisor: float = 1.0
    factor: float = 1.0
    shift: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("numeric", "onehot"):
            raise ModelFormatError(
                f"column {self.column!r}: encoding kind must be numeric or onehot, got {self.kind!r}"
            )
        if self.kind == "onehot" and not self.categories:
            raise ModelFormatError(f"column {self.column!r}: a one-hot encoding needs its categories")
        if self.kind == "numeric" and (self.divisor == 0 or not np.isfinite(self.divisor)):
            raise ModelFormatError(f"column {self.column!r}: scaling divisor must be finite and non-zero")
        object.__setattr__(self, "categories", tuple(self.categories))

    @property
    def width(self) -> int:
        return 1 if self.kind == "numeric" else len(self.categories)

    def encode(self, values: Sequence[Any] | np.ndarray) -> np.ndarray:
        """The encoded features of raw values, shape (n, width)."""
        raw = np.asarray(values, dtype=object).reshape(-1)
        if self.kind == "numeric":
            try:
                x = raw.astype(np.float64)
            except (TypeError, ValueError):
                bad = [v for v in raw[:50] if not _is_number(v)][:3]
                raise DataError(f"column {self.column!r} is numeric for the model but holds {bad}") from None
            return (((x - self.offset) / self.divisor) * self.factor + self.shift)[:, None]
        return np.stack([_matches(raw, c) for c in self.categories], axis=1).astype(np.float64)

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "onehot":
            return {"column": self.column, "onehot": [_plain(c) for c in self.categories]}
        out: dict[str, Any] = {"column": self.column}
        for key, default in (("offset", 0.0), ("divisor", 1.0), ("factor", 1.0), ("shift", 0.0)):
            if getattr(self, key) != default:
                out[key] = float(getattr(self, key))
        return out


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _matches(values: np.ndarray, category: Any) -> np.ndarray:
    """Raw values equal to a category: numbers compare as numbers (True and False as 1 and 0, as
    Python compares them), everything else as text."""
    import pandas as pd

    if isinstance(category, (bool, np.bool_)):  # True/False, 1/0, or the text "True"/"False"
        return _matches(values, int(category)) | (values.astype(str) == str(bool(category)))
    if isinstance(category, (int, float, np.integer, np.floating)):
        numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
        return numbers == float(category)
    return values.astype(str) == str(category)


class LinearVisitor(Protocol[T_co]):
    """An engine's code for linear models, reached through `LinearModel.accept`."""

    def linear(self, model: LinearModel) -> T_co: ...


@dataclass
class LinearModel:
    """A linear classifier over encoded features; `predict` takes raw columns."""

    weights: np.ndarray
    intercept: float
    encoding: tuple[ColumnEncoding, ...]
    strict: bool = True
    #: Where it came from (a path or a framework name) and its class labels (negative, positive).
    source: str = ""
    classes: tuple = (0, 1)
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.weights = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        self.intercept = (
            float(np.asarray(self.intercept, dtype=np.float64).reshape(-1)[0])
            if np.ndim(self.intercept)
            else float(self.intercept)
        )
        self.encoding = tuple(self.encoding)
        if not np.all(np.isfinite(self.weights)) or not np.isfinite(self.intercept):
            raise ModelFormatError("linear model weights and intercept must be finite numbers")
        names = [e.column for e in self.encoding]
        if len(set(names)) != len(names):
            raise ModelFormatError(f"a column is encoded twice: {names}")
        width = sum(e.width for e in self.encoding)
        if width != len(self.weights):
            raise ModelFormatError(
                f"the model has {len(self.weights)} weights but its encoding of {len(names)} columns "
                f"gives {width} features; give an encoding that matches the model"
            )

    @classmethod
    def plain(
        cls, weights: Sequence[float], intercept: float, names: Sequence[str] | None = None, **kwargs: Any
    ) -> LinearModel:
        """A model on numeric columns used as they are (no scaling, no one-hot)."""
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        names = list(names) if names is not None else [f"x{i}" for i in range(len(w))]
        if len(names) != len(w):
            raise ModelFormatError(f"{len(w)} weights but {len(names)} feature names")
        return cls(w, intercept, tuple(ColumnEncoding(str(n)) for n in names), **kwargs)

    @property
    def columns(self) -> list[str]:
        """The raw columns the model reads, in order."""
        return [e.column for e in self.encoding]

    @property
    def n_features(self) -> int:
        return len(self.weights)

    def named_inputs(self) -> list[str]:
        """The raw columns the model reads, in order (its encoding reads them by name)."""
        return self.columns

    def accept(self, visitor: LinearVisitor[T]) -> T:
        """Return `visitor.linear(self)`, so that an engine reaches its code for
        linear models without a type test."""
        return visitor.linear(self)

    def column_weights(self, column: str) -> np.ndarray:
        start = 0
        for e in self.encoding:
            if e.column == column:
                return self.weights[start : start + e.width]
            start += e.width
        raise DataError(f"the model does not read column {column!r}; it reads: {', '.join(self.columns)}")

    def contributions(self, column: str, values: Sequence[Any]) -> np.ndarray:
        """The score each raw value of a column adds (0 for a column the model does not read)."""
        if column not in self.columns:
            return np.zeros(len(values))
        enc = next(e for e in self.encoding if e.column == column)
        return enc.encode(values) @ self.column_weights(column)

    def contribution_magnitudes(self, column: str, values: Sequence[Any]) -> np.ndarray:
        """Sum of |w_k z_k| per value: what rounding of the contribution scales with."""
        if column not in self.columns:
            return np.zeros(len(values))
        enc = next(e for e in self.encoding if e.column == column)
        return np.abs(enc.encode(values)) @ np.abs(self.column_weights(column))

    def encode(self, raw: Any) -> np.ndarray:
        """Encoded features (n, n_features) of raw rows: a DataFrame, a mapping or an array in column order."""
        frame = _as_columns(raw, self.columns)
        return np.concatenate([e.encode(frame[e.column]) for e in self.encoding], axis=1)

    def decision_function(self, raw: Any) -> np.ndarray:
        return self.encode(raw) @ self.weights + self.intercept

    def predict(self, raw: Any) -> np.ndarray:
        """1 where the model decides the positive class, else 0."""
        score = self.decision_function(raw)
        return (score > 0 if self.strict else score >= 0).astype(np.int64)

    def sure_labels(self, frame: Any, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
        """(positive, unsure) per raw row of `frame` (a DataFrame): rows whose score lies within
        `tolerance` (relative to its terms) of 0 are decided in exact rational arithmetic, so none is
        unsure."""
        enc = self.encode(frame)
        score = enc @ self.weights + self.intercept
        scale = 1.0 + abs(self.intercept) + np.abs(enc) @ np.abs(self.weights)
        positive = score > 0 if self.strict else score >= 0
        close = np.flatnonzero(np.abs(score) <= tolerance * scale)
        exact = [self.exact_score(frame.iloc[i]) for i in close]  # rounding could decide these: no rounding
        positive[close] = [e > 0 if self.strict else e >= 0 for e in exact]
        return positive, np.zeros(len(score), dtype=bool)

    def exact_score(self, row: Any) -> Fraction:
        """The score of one raw row in exact rational arithmetic on the float64 parameters (the
        model's semantics)."""
        total = Fraction(self.intercept)
        start = 0
        for e in self.encoding:
            w = self.weights[start : start + e.width]
            start += e.width
            if e.kind == "onehot":
                hits = e.encode([row[e.column]])[0]
                total += sum((Fraction(float(wk)) for wk, h in zip(w, hits) if h), Fraction(0))
            else:
                z = (Fraction(float(row[e.column])) - Fraction(e.offset)) / Fraction(e.divisor) * Fraction(e.factor)
                total += Fraction(float(w[0])) * (z + Fraction(e.shift))
        return total

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "faircert-linear",
            "weights": self.weights.tolist(),
            "intercept": self.intercept,
            "positive_if": ">" if self.strict else ">=",
            "classes": [_plain(c) for c in self.classes],
            "encoding": [e.to_dict() for e in self.encoding],
        }


def _as_columns(raw: Any, columns: list[str]) -> dict[str, np.ndarray]:
    """Raw input as {column: values}; checks that every column the model reads is there."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a core dependency
        pd = None
    if pd is not None and isinstance(raw, pd.DataFrame):
        have = [str(c) for c in raw.columns]
        missing = [c for c in columns if c not in have]
        if missing:
            raise DataError(f"the data lacks columns {missing} that the model reads; it has: {', '.join(have)}")
        return {c: raw[raw.columns[have.index(c)]].to_numpy() for c in columns}
    if isinstance(raw, dict):
        missing = [c for c in columns if c not in raw]
        if missing:
            raise DataError(f"the input lacks columns {missing} that the model reads")
        return {c: np.atleast_1d(np.asarray(raw[c], dtype=object)) for c in columns}
    array = np.asarray(raw, dtype=object)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != len(columns):
        raise DataError(f"expected rows of {len(columns)} raw columns ({', '.join(columns)}), got shape {array.shape}")
    return {c: array[:, j] for j, c in enumerate(columns)}
