"""Checked conversions of untrusted tree-model fields (from JSON, UBJSON or model text) to arrays.

A field of the wrong type, a non-finite number, an integer out of range or a count beyond the
resource limits is a `ModelFormatError` naming the field; nothing is coerced silently.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import MAX_TREE_DEPTH, MAX_TREE_NODES, check_at_most, quoted
from ..trees import Tree


def int_array(value: Any, what: str, low: int = -(2**31), high: int = 2**31 - 1) -> np.ndarray:
    """A list (or numpy array) of integers in [low, high]."""
    array = _array(value, what)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.int64)  # UBJSON may store integral values as floats
    if array.dtype.kind not in "iu":
        raise ModelFormatError(f"{what} must be a list of integers")
    if array.size and (array.min() < low or array.max() > high):
        raise ModelFormatError(f"{what} holds an integer outside {low}..{high}")
    return array.astype(np.int64)


def float_array(value: Any, what: str) -> np.ndarray:
    """A list (or numpy array) of finite numbers."""
    array = _array(value, what)
    if array.dtype.kind not in "iuf":
        raise ModelFormatError(f"{what} must be a list of numbers")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ModelFormatError(f"{what} holds a value that is not a finite number (nan or inf)")
    return array


def _array(value: Any, what: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, list):
        check_at_most(f"the length of {what}", len(value), MAX_TREE_NODES)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise ModelFormatError(f"{what} must be a list of numbers")
        if any(isinstance(v, int) and abs(v) > 2**63 - 1 for v in value):
            raise ModelFormatError(f"{what} holds an integer too large to read")
        array = np.array(value) if value else np.zeros(0, dtype=np.int64)
    else:
        raise ModelFormatError(f"{what} must be a list, got {quoted(value)}")
    if array.ndim != 1:
        raise ModelFormatError(f"{what} must be a flat list")
    check_at_most(f"the length of {what}", array.size, MAX_TREE_NODES)
    return array


def whole_number(value: Any, what: str, low: int = 0, high: int = 2**31 - 1) -> int:
    """An integer field, also when written as text ("13") or as an integral float, within [low, high]."""
    try:
        number = float(value) if isinstance(value, str) and len(value) < 40 else value
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or not math.isfinite(number)
            or number != int(number)
        ):
            raise ValueError
    except (ValueError, OverflowError):
        raise ModelFormatError(f"{what} must be a whole number, got {quoted(value)}") from None
    if not low <= number <= high:
        raise ModelFormatError(f"{what} must lie in {low}..{high}, got {quoted(value)}")
    return int(number)


def checked_tree(
    feature: np.ndarray, threshold: np.ndarray, left: np.ndarray, right: np.ndarray, value: np.ndarray, where: str
) -> Tree:
    """A Tree from node arrays, with its structure and depth checked (errors name `where`)."""
    try:
        tree = Tree(feature, threshold, left, right, value)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{where}: {exc}") from None
    check_at_most("the tree depth", tree.depth, MAX_TREE_DEPTH, where)
    return tree
