"""Reading tabular data (CSV files, DataFrames, arrays) and inferring domains from it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .domain import Domain, Feature
from .errors import DataError, DomainError
from .limits import MAX_FEATURES, check_at_most, check_file_size, listed, quoted


def read_table(data: Any, compact: bool = False):
    """A pandas DataFrame from a CSV path, a DataFrame or a 2-D array (columns named x0, x1, ...).
    `compact` reads a CSV file in blocks and keeps each text column as a category (a code a
    cell): a large file's text then never sits in memory whole."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not os.path.isfile(path):  # False, not an error, for a name the system refuses (too long)
            raise DataError(f"data file not found: {path}")
        check_file_size(path, DataError)
        try:
            with warnings.catch_warnings():
                # a row longer than the header: pandas would drop its last fields (index_col=False; by
                # default it would read the first field as an index and shift every value a column)
                warnings.simplefilter("error", pd.errors.ParserWarning)
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)  # mixed types: refused below, in one line
                options = dict(sep=_separator(path), skipinitialspace=True, index_col=False)
                if compact:
                    frame, mixed = _joined(pd.read_csv(path, chunksize=BLOCK_ROWS, **options))
                    if mixed:  # text in some blocks, numbers in others: read again, text throughout
                        as_text = {column: str for column in mixed}
                        frame, _ = _joined(pd.read_csv(path, chunksize=BLOCK_ROWS, dtype=as_text, **options))
                else:
                    frame = pd.read_csv(path, **options)
        except pd.errors.ParserWarning:
            raise DataError(
                f"{path}: a row has more fields than the header names; name every column in the "
                "header (a separator at the end of a line makes an empty last field)"
            ) from None
        except Exception as exc:  # pandas raises several parser errors
            raise DataError(f"{path}: cannot read as CSV: {' '.join(str(exc).split())[:200]}") from None
        if frame.empty:
            raise DataError(f"{path}: no rows")
        check_at_most("the number of columns", frame.shape[1], MAX_FEATURES, str(path))
        if frame.shape[1] > WIDE:  # pandas' parser leaves each column a block of its own: a copy joins them,
            frame = frame.copy()  # so that taking many columns at once is one pass, not one per column
        _check_numbers(frame, str(path))
        return frame
    array = np.asarray(data)
    if array.ndim != 2:
        raise DataError(f"expected a table (2-D), got an array of shape {array.shape}")
    return pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])


#: Rows of a CSV file read at a time by `read_table(..., compact=True)`.
BLOCK_ROWS = 100000


def _joined(blocks: Iterable[Any]) -> tuple[Any, list[str]]:
    """One DataFrame of a CSV file's blocks, each text column a category over every block's texts,
    and the columns read as text in some blocks but as numbers (or true/false) in others: pandas
    reads such a column whole as text, and these blocks' numbers have lost their text."""
    import pandas as pd
    from pandas.api.types import union_categoricals

    parts = []
    for block in blocks:
        for column in block.columns[~_numeric_columns(block)]:
            if not pd.api.types.is_bool_dtype(block[column]):
                block[column] = block[column].astype("category")
        parts.append(block)
    if not parts:
        return pd.DataFrame(), []
    joined, mixed = {}, []
    for k, column in enumerate(parts[0].columns):
        pieces = [part.iloc[:, k] for part in parts]
        text = [isinstance(p.dtype, pd.CategoricalDtype) for p in pieces]
        if all(text):
            joined[column] = pd.Categorical(union_categoricals(pieces))
        else:
            mixed += [str(column)] if any(text) else []
            joined[column] = pd.concat(pieces, ignore_index=True)
    return pd.DataFrame(joined), mixed


def _separator(path: Path) -> str:
    """The file's column separator, sniffed from its start (then pandas' fast C parser reads it)."""
    import csv

    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        sample = handle.read(SNIFF_BYTES)
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


#: Columns from which a CSV file's table is copied into one block per type after reading.
WIDE = 1_000
#: Characters of a CSV file's start read to find its separator.
SNIFF_BYTES = 16_384

#: A cell that is a number too long for float64 to hold exactly (pandas leaves it as text).
_HUGE_NUMBER = r"\s*[+-]?\d{19,}(\.\d*)?\s*"


def _check_numbers(frame, source: str) -> None:
    """Numbers must be finite, and digits pandas could not read as a number must not pass as text."""
    numeric = _numeric_columns(frame)
    if numeric.any():  # all numeric columns at once: a wide file has 100,000 of them
        block = frame.iloc[:, np.flatnonzero(numeric)].to_numpy(dtype=np.float64)
        bad = np.flatnonzero(np.isinf(block).any(axis=0))
        if bad.size:
            column = frame.columns[np.flatnonzero(numeric)[bad[0]]]
            raise DataError(f"{source}: column {quoted(str(column))} holds a number too large (inf)")
    for column in frame.columns[~numeric]:
        series = frame[column].drop_duplicates()  # each distinct text once
        if series.astype(str).str.fullmatch(_HUGE_NUMBER).any():
            raise DataError(
                f"{source}: column {quoted(str(column))} holds a number with more digits than faircert "
                "reads (at most 18)"
            )


def _numeric_columns(frame) -> np.ndarray:
    """Which columns hold numbers (not booleans), from the dtypes alone."""
    return np.array([dtype.kind in "iuf" for dtype in frame.dtypes], dtype=bool)


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
    numeric = _numeric_columns(frame)
    bounds = _numeric_bounds(frame, numeric)
    features = []
    for j, (column, name) in enumerate(zip(frame.columns, columns)):
        if name == label:
            continue
        is_protected = name in protected
        if numeric[j]:
            lo, hi, integral = bounds[j]
            if np.isnan(lo):
                raise DataError(f"column {name!r} has no values")
            if integral:
                kind = "binary" if (lo, hi) == (0.0, 1.0) else "integer"
                features.append(Feature(name, kind, int(lo), int(hi), is_protected))
            else:
                features.append(Feature(name, "real", float(lo), float(hi), is_protected))
            continue
        series = frame[column].dropna()
        if series.empty:
            raise DataError(f"column {name!r} has no values")
        if pd.api.types.is_bool_dtype(series):
            features.append(Feature(name, "binary", 0, 1, is_protected))
            continue
        categories = tuple(sorted(str(v) for v in series.unique()))
        kind = "binary" if len(categories) == 2 else "categorical"
        features.append(Feature(name, kind, 0, len(categories) - 1, is_protected, categories))
    return Domain(tuple(features))


def _numeric_bounds(frame, numeric: np.ndarray) -> dict[int, tuple[float, float, bool]]:
    """(min, max, whether every value is whole) of each numeric column, missing values left out (nan
    bounds for a column with none), computed for all numeric columns at once."""
    idx = np.flatnonzero(numeric)
    if not idx.size:
        return {}
    block = frame.iloc[:, idx].to_numpy(dtype=np.float64)
    present = ~np.isnan(block)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: nan bounds, refused above
        lo, hi = np.nanmin(block, axis=0), np.nanmax(block, axis=0)
    integral = np.all(~present | (block == np.round(block)), axis=0) & np.isfinite(lo) & np.isfinite(hi)
    return {int(j): (lo[k], hi[k], bool(integral[k])) for k, j in enumerate(idx)}


def encode_table(frame, domain, unreadable: bool = False, compact: bool = False) -> np.ndarray:
    """The rows of a DataFrame as a float array in the domain's feature order and codes. With
    `unreadable`, a category the domain does not name and a missing or infinite value become NaN
    (the per-row audit leaves such a row alone unknown, with its reason) instead of being refused.
    With `compact`, the array is float32 where every value is a float32 exactly (codes, whole
    numbers below 2**24: most tables), half the memory of float64 for the same values."""
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    missing = [n for n in domain.names if n not in columns]
    if missing:
        raise DataError(f"the data lacks columns {listed(missing, 5)}; it has: {listed(columns)}")
    out = np.empty((len(frame), len(domain)), dtype=np.float32 if compact else np.float64)
    for j, feature in enumerate(domain.features):
        column = frame[frame.columns[columns.index(feature.name)]]
        if feature.categories is not None:
            lookup = {c: i for i, c in enumerate(feature.categories)}
            # each distinct value is named once (a large table repeats a few categories)
            positions, distinct = pd.factorize(column, use_na_sentinel=False)
            names = pd.Series(distinct, dtype=column.dtype).astype(str)
            codes = names.map(lookup)
            if codes.isna().any() and not unreadable:
                unknown = sorted(set(names[codes.isna()]))[:5]
                raise DataError(f"column {feature.name!r} has categories not in the domain: {unknown}")
            values = codes.to_numpy(dtype=np.float64, na_value=np.nan)[positions]
        else:
            try:
                values = column.to_numpy(dtype=np.float64)
            except (ValueError, TypeError, OverflowError):
                raise DataError(
                    f"column {quoted(feature.name)} must hold numbers for the domain's {feature.kind} feature"
                ) from None
        if out.dtype == np.float32 and not np.array_equal(values.astype(np.float32), values, equal_nan=True):
            out = out.astype(np.float64)  # a value float32 would round: every column in float64
        out[:, j] = values
    bad = ~np.isfinite(out)
    if unreadable:
        out[bad] = np.nan
    elif bad.any():
        rows, columns = np.flatnonzero(bad.any(axis=1)), [domain.names[j] for j in np.flatnonzero(bad.any(axis=0))]
        raise DataError(
            f"{len(rows)} of {len(out)} rows have missing or infinite values (first: row {int(rows[0])}; "
            f"columns {listed(columns, 5)}); drop or fill them first"
        )
    return out
