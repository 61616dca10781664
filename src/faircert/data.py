"""Reading tabular data (CSV files, DataFrames, arrays) and inferring domains from it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .domain import Domain, Feature
from .errors import DataError, DomainError
from .limits import MAX_FEATURES, check_at_most, check_file_size, listed, quoted


def read_table(data: Any):
    """A pandas DataFrame from a CSV path, a DataFrame or a 2-D array (columns named x0, x1, ...)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.is_file():
            raise DataError(f"data file not found: {path}")
        check_file_size(path, DataError)
        try:
            frame = pd.read_csv(path, sep=None, engine="python", skipinitialspace=True)
        except Exception as exc:  # pandas raises several parser errors
            raise DataError(f"{path}: cannot read as CSV: {' '.join(str(exc).split())[:200]}") from None
        if frame.empty:
            raise DataError(f"{path}: no rows")
        check_at_most("the number of columns", frame.shape[1], MAX_FEATURES, str(path))
        _check_numbers(frame, str(path))
        return frame
    array = np.asarray(data)
    if array.ndim != 2:
        raise DataError(f"expected a table (2-D), got an array of shape {array.shape}")
    return pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])


#: A cell that is a number too long for float64 to hold exactly (pandas leaves it as text).
_HUGE_NUMBER = r"\s*[+-]?\d{19,}(\.\d*)?\s*"


def _check_numbers(frame, source: str) -> None:
    """Numbers must be finite, and digits pandas could not read as a number must not pass as text."""
    import pandas as pd

    for column in frame.columns:
        series = frame[column]
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            if np.isinf(series.to_numpy(dtype=np.float64)).any():
                raise DataError(f"{source}: column {quoted(str(column))} holds a number too large (inf)")
        elif series.astype(str).str.fullmatch(_HUGE_NUMBER).any():
            raise DataError(f"{source}: column {quoted(str(column))} holds a number with more digits than faircert "
                            "reads (at most 18)")


def _is_integral(values: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))


def infer_domain(data: Any, protected: Iterable[str] = (), label: str | None = None):
    """A domain with the data's bounds; kinds guessed per column.

    Strings become categorical codes (sorted category labels, code = position); two integer values
    {0, 1} become binary; other integral columns integer; everything else real. The label column,
    if named, is left out.
    """
    import pandas as pd

    frame = read_table(data)
    protected = [p for p in protected]
    columns = [str(c) for c in frame.columns]
    for name in protected + ([label] if label else []):
        if name not in columns:
            raise DomainError(f"unknown column {quoted(name)}; the data has: {listed(columns)}")
    features = []
    for column, name in zip(frame.columns, columns):
        if name == label:
            continue
        series = frame[column].dropna()
        if series.empty:
            raise DataError(f"column {name!r} has no values")
        is_protected = name in protected
        if pd.api.types.is_bool_dtype(series):
            features.append(Feature(name, "binary", 0, 1, is_protected))
            continue
        if not pd.api.types.is_numeric_dtype(series):
            categories = tuple(sorted(str(v) for v in series.unique()))
            kind = "binary" if len(categories) == 2 else "categorical"
            features.append(Feature(name, kind, 0, len(categories) - 1, is_protected, categories))
            continue
        values = series.to_numpy(dtype=np.float64)
        lo, hi = float(values.min()), float(values.max())
        if _is_integral(values):
            kind = "binary" if (lo, hi) == (0.0, 1.0) else "integer"
            features.append(Feature(name, kind, int(lo), int(hi), is_protected))
        else:
            features.append(Feature(name, "real", lo, hi, is_protected))
    return Domain(tuple(features))


def encode_table(frame, domain) -> np.ndarray:
    """The rows of a DataFrame as a float array in the domain's feature order and codes."""
    columns = [str(c) for c in frame.columns]
    missing = [n for n in domain.names if n not in columns]
    if missing:
        raise DataError(f"the data lacks columns {listed(missing, 5)}; it has: {listed(columns)}")
    out = np.empty((len(frame), len(domain)), dtype=np.float64)
    for j, feature in enumerate(domain.features):
        column = frame[frame.columns[columns.index(feature.name)]]
        if feature.categories is not None:
            lookup = {c: i for i, c in enumerate(feature.categories)}
            codes = column.astype(str).map(lookup)
            if codes.isna().any():
                bad = sorted(set(column.astype(str)[codes.isna()]))[:5]
                raise DataError(f"column {feature.name!r} has categories not in the domain: {bad}")
            out[:, j] = codes.to_numpy(dtype=np.float64)
        else:
            try:
                out[:, j] = column.to_numpy(dtype=np.float64)
            except (ValueError, TypeError, OverflowError):
                raise DataError(f"column {quoted(feature.name)} must hold numbers for the domain's {feature.kind} "
                                "feature") from None
    if not np.all(np.isfinite(out)):
        raise DataError("the data has missing or infinite values in the domain's columns")
    return out
