"""Turning data columns into finite variables: categories kept, continuous columns binned.

A column of text, booleans, or at most `max_bins` distinct numbers keeps its values (exact). Other
numeric columns are cut into at most `max_bins` bins, equal-width or quantile (where ties collapse
quantiles, the widest bins are halved until there are `max_bins`; bins without data are dropped).
Inside a bin the column takes the data's own values with their frequencies (`bin_value="data"`,
the default: the population is then the finite distribution the data shows), or one value, the
mean of the bin's data or its midpoint; the edges and values are recorded so the result states
what was used. A protected column is never binned implicitly: pass `bins={name: k or edges}`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DataError

METHODS = ("quantile", "width")
BIN_VALUES = ("data", "mean", "midpoint")
#: A binned column keeps its data's values inside the bins up to this many distinct values; beyond,
#: each bin takes the mean of its data (the result's notes say which).
MAX_DATA_VALUES = 4096


@dataclass
class Column:
    """One finite variable made from a data column: its states and each row's state code."""

    name: str
    states: tuple  # the value each state stands for (a category or a number)
    labels: tuple[str, ...]  # how each state is shown
    codes: np.ndarray  # per row, the index of its state
    edges: tuple[float, ...] | None = None  # bin edges when binned (len(states) + 1)
    #: With the data's values inside bins: per bin, (its distinct values, their frequencies in it).
    within: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...] | None = None


def discretise(
    frame: Any,
    columns: Sequence[str],
    *,
    protected: Sequence[str] = (),
    max_bins: int = 10,
    method: str = "quantile",
    bin_value: str = "data",
    bins: Mapping[str, int | Sequence[float]] | None = None,
) -> list[Column]:
    """Finite variables for `columns` of `frame` (rows with a missing value must be removed first)."""
    if method not in METHODS:
        raise DataError(f"binning method must be one of {', '.join(METHODS)}, got {method!r}")
    if bin_value not in BIN_VALUES:
        raise DataError(f"bin value must be one of {', '.join(BIN_VALUES)}, got {bin_value!r}")
    if not isinstance(max_bins, (int, np.integer)) or max_bins < 1:
        raise DataError(f"max bins must be a positive integer, got {max_bins!r}")
    bins = dict(bins or {})
    have = [str(c) for c in frame.columns]
    for name in list(columns) + list(bins):
        if name not in have:
            raise DataError(f"unknown column {name!r}; the data has: {', '.join(have)}")
    out = []
    for name in columns:
        series = frame[frame.columns[have.index(name)]]
        out.append(_column(name, series, name in protected, max_bins, method, bin_value, bins.get(name)))
    return out


def _column(
    name: str,
    series: Any,
    protected: bool,
    max_bins: int,
    method: str,
    bin_value: str,
    spec: int | Sequence[float] | None,
) -> Column:
    numeric = _numeric(series)
    if numeric is None:
        if spec is not None:
            raise DataError(f"column {name!r} is not numeric and cannot be binned")
        values = series.to_numpy(dtype=object)
        states = tuple(sorted({_plain(v) for v in values}, key=lambda v: (str(type(v)), str(v))))
        lookup = {s: i for i, s in enumerate(states)}
        codes = np.array([lookup[_plain(v)] for v in values], dtype=np.int64)
        return Column(name, states, tuple(str(s) for s in states), codes)
    unique = np.unique(numeric)
    if spec is None and len(unique) <= max_bins:
        states = tuple(_plain(v) for v in unique)
        codes = np.searchsorted(unique, numeric)
        return Column(name, states, tuple(f"{s:g}" if isinstance(s, float) else str(s) for s in states), codes)
    if spec is None and protected:
        raise DataError(
            f"protected column {name!r} is continuous ({len(unique)} distinct values); "
            f"bin it explicitly, e.g. bins={{'{name}': 4}} (or --bins {name}=4), or give bin edges"
        )
    edges = _edges(numeric, spec if spec is not None else max_bins, method, name)
    codes = np.clip(np.searchsorted(edges, numeric, side="right") - 1, 0, len(edges) - 2)
    used = np.unique(codes)
    # keep only bins holding data, so every state has a value; remap codes densely
    remap = np.full(len(edges) - 1, -1)
    remap[used] = np.arange(len(used))
    kept_edges = [edges[k] for k in used] + [edges[used[-1] + 1]]
    codes = remap[codes]
    values, within = [], []
    for j, k in enumerate(used):
        inside = numeric[codes == j]
        values.append(0.5 * (edges[k] + edges[k + 1]) if bin_value == "midpoint" else float(inside.mean()))
        distinct, counts = np.unique(inside, return_counts=True)
        within.append((tuple(_plain(v) for v in distinct), tuple(float(c) for c in counts / counts.sum())))
    labels = tuple(f"[{edges[k]:g}, {edges[k + 1]:g}" + ("]" if k == len(edges) - 2 else ")") for k in used)
    keep = bin_value == "data" and len(unique) <= MAX_DATA_VALUES  # else each bin takes its data's mean
    return Column(
        name,
        tuple(values),
        labels,
        codes.astype(np.int64),
        tuple(float(e) for e in kept_edges),
        tuple(within) if keep else None,
    )


def _edges(x: np.ndarray, spec: int | Sequence[float], method: str, name: str) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    if isinstance(spec, (int, np.integer)):
        if spec < 1:
            raise DataError(f"column {name!r}: the number of bins must be >= 1, got {spec}")
        if method == "width" or lo == hi:
            edges = np.linspace(lo, hi, int(spec) + 1)
        else:
            edges = np.unique(np.quantile(x, np.linspace(0, 1, int(spec) + 1)))
            # heavy ties (a column that is mostly 0) collapse quantiles: split the widest bins in half
            while lo < hi and len(edges) - 1 < spec:
                k = int(np.argmax(np.diff(edges)))
                edges = np.insert(edges, k + 1, 0.5 * (edges[k] + edges[k + 1]))
        edges[0], edges[-1] = lo, hi
        return np.unique(edges) if len(np.unique(edges)) > 1 else np.array([lo, hi])
    edges = np.asarray(sorted(float(e) for e in spec), dtype=np.float64)
    if len(edges) < 2 or len(np.unique(edges)) != len(edges):
        raise DataError(f"column {name!r}: bin edges must be at least two distinct numbers")
    if lo < edges[0] or hi > edges[-1]:
        raise DataError(
            f"column {name!r}: data range [{lo:g}, {hi:g}] is outside the bin edges [{edges[0]:g}, {edges[-1]:g}]"
        )
    return edges


def _numeric(series: Any) -> np.ndarray | None:
    """The column as float64, or None if it holds text, booleans or categories."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(series.dtype) or isinstance(series.dtype, pd.CategoricalDtype):
        return None
    if pd.api.types.is_numeric_dtype(series.dtype):
        return series.to_numpy(dtype=np.float64)
    try:
        return series.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        return None


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v
