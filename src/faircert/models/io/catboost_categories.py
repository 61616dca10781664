"""CatBoost's categorical splits, each read as what it is: a fixed function of one raw column.

CatBoost reads a category by its hash (`cityhash.category_hash` of its text). A one-hot split
passes iff that hash is the split's value. A CTR split passes iff the category's target statistic,
looked up by the hash in the table the model stores (counts from training; a category it never saw
gets the prior alone), computed in float32 as CatBoost computes it, exceeds the border. Either way
the split is an indicator of its column, known for every category, seen in training or not; the
model becomes a pipeline over raw columns (floats as they are, these indicators) ending in the same
oblivious trees, exact for the domain's categories.

A CTR over a combination of columns (or of a column with a float or one-hot split), or of a kind
a binary classifier does not store (target means of a regression), is a function of several
columns: it is refused with the reason, and an object given is then answered as a black box.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ModelFormatError, UnsupportedModelError
from ..pipeline import Encoder
from .cityhash import category_hash

M64 = (1 << 64) - 1
MAGIC = 0x4906BA494954CB65
#: CTR kinds a binary classifier stores as counts, and where the counted class sits.
CTR_KINDS = ("Borders", "Buckets", "Counter", "FeatureFreq")


def combined(a: int, b: int) -> int:
    """CatBoost's hash of a projection, one element `b` (a signed 32-bit category hash) at a time."""
    return (MAGIC * ((a + MAGIC * b) & M64)) & M64


def category_text(value: Any) -> str:
    """A raw value as the text CatBoost hashes: integers (codes of an integer column) without '.0'."""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return str(int(value))
    return str(value)


def table_key(value: Any) -> int:
    """The key of a category in a one-column CTR table: its hash as a signed 32-bit number, combined."""
    h = category_hash(category_text(value))
    return combined(0, h - (1 << 32) if h >= 1 << 31 else h)


@dataclass(frozen=True)
class CategorySplit(Encoder):
    """1.0 iff a raw category passes one CatBoost split on its column (see the module docstring).

    `passing` holds the keys that pass: category hashes (one-hot) or CTR table keys; `unseen` says
    whether a key outside `keys` (a category the table does not hold) passes."""

    one_hot: bool = False
    passing: frozenset = frozenset()
    keys: frozenset = frozenset()
    unseen: bool = False

    def known(self, values: np.ndarray) -> np.ndarray:
        return np.ones(len(values), dtype=bool)  # CatBoost reads every category, seen or not

    def encode(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=object).reshape(-1)
        out = np.empty(len(values))
        for i, v in enumerate(values):
            if self.one_hot:
                out[i] = category_hash(category_text(v)) in self.passing
            else:
                k = table_key(v)
                out[i] = (k in self.passing) if k in self.keys else self.unseen
        return out


def one_hot_split(value: Any, where: str) -> CategorySplit:
    if not isinstance(value, int) or not -(1 << 31) <= value < 1 << 32:
        raise ModelFormatError(f"{where}: a one-hot split without a 32-bit category hash 'value'")
    # CatBoost writes the hash signed or unsigned; the category's hash is its unsigned form
    return CategorySplit(
        kind="equals", one_hot=True, passing=frozenset([value & 0xFFFFFFFF]), origin="CatBoost one-hot split"
    )


def ctr_split(ctr: dict, table: Any, border: float, where: str) -> CategorySplit:
    """The split `CTR > border` of a one-column CTR, from its description and its counts table."""
    counts = _counts(table, ctr, where)
    try:
        num, den, shift, scale = (
            np.float32(ctr[k]) for k in ("prior_numerator", "prior_denomerator", "shift", "scale")
        )
        index = int(ctr.get("target_border_idx", 0))
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ModelFormatError(f"{where}: a CTR without its priors, shift and scale") from None
    if not all(np.isfinite(x) for x in (num, den, shift, scale)):
        raise ModelFormatError(f"{where}: a CTR whose priors, shift or scale are not finite float32 numbers")
    width = len(next(iter(counts.values()), [0]))
    if ctr.get("ctr_type") == "Buckets" and not 0 <= index < width:
        raise ModelFormatError(f"{where}: a Buckets CTR's 'target_border_idx' {index} names no class")
    kind = ctr.get("ctr_type")
    cut = np.float32(border)

    def value(good: float, total: float) -> np.float32:  # float32 throughout, as CatBoost computes it
        return np.float32((np.float32((np.float32(good) + num) / (np.float32(total) + den)) + shift) * scale)

    denominator = table.get("counter_denominator", 0)
    if not isinstance(denominator, (int, float)) or not np.isfinite(denominator):
        raise ModelFormatError(f"{where}: a CTR counts table whose 'counter_denominator' is not a number")
    passing = set()
    for key, row in counts.items():
        if kind in ("Counter", "FeatureFreq"):
            good, total = row[0], float(denominator)
        elif kind == "Buckets":
            good, total = row[index], float(sum(row))
        else:  # Borders over a binary target: the second count is the positive class
            good, total = row[1], row[0] + row[1]
        if value(good, total) > cut:
            passing.add(key)
    return CategorySplit(
        kind="rank",
        passing=frozenset(passing),
        keys=frozenset(counts),
        unseen=bool(value(0.0, 0.0) > cut),
        origin=f"CatBoost {kind} CTR",
    )


def one_column(ctr: Any, where: str) -> int:
    """The categorical feature index a CTR reads, or the reason it is not one column's function."""
    if not isinstance(ctr, dict) or not isinstance(ctr.get("elements"), list):
        raise ModelFormatError(f"{where}: a CTR without its 'elements'")
    kind, elements = ctr.get("ctr_type"), ctr["elements"]
    if kind not in CTR_KINDS:
        raise UnsupportedModelError(f"{where}: a CatBoost {kind} CTR is not read (counts CTRs only)")
    if (
        len(elements) != 1
        or not isinstance(elements[0], dict)
        or elements[0].get("combination_element") != ("cat_feature_value")
    ):
        raise UnsupportedModelError(
            f"{where}: a CatBoost CTR over a combination of {len(elements)} features is a function of several "
            "columns, not read exactly (train with max_ctr_complexity=1 to keep every CTR on one column)"
        )
    index = elements[0].get("cat_feature_index")
    if not isinstance(index, int):
        raise ModelFormatError(f"{where}: a CTR element without a 'cat_feature_index'")
    return index


def _counts(table: Any, ctr: dict, where: str) -> dict[int, list[float]]:
    """Table key -> its counts, from CatBoost's flat `hash_map` [key, count, ...] of `hash_stride`."""
    if not isinstance(table, dict):
        raise ModelFormatError(f"{where}: no counts table for CTR {str(ctr.get('identifier'))[:80]}")
    flat, stride = table.get("hash_map"), table.get("hash_stride")
    if not isinstance(flat, list) or not isinstance(stride, int) or stride < 2 or len(flat) % stride:
        raise ModelFormatError(f"{where}: a CTR counts table whose 'hash_map' is not rows of 'hash_stride'")
    out: dict[int, list[float]] = {}
    for i in range(0, len(flat), stride):
        try:
            key, row = int(flat[i]), [float(c) for c in flat[i + 1 : i + stride]]
        except (TypeError, ValueError):
            raise ModelFormatError(f"{where}: a CTR counts table with a non-numeric entry") from None
        if not (0 <= key <= M64 and all(np.isfinite(c) and c >= 0 for c in row)):
            raise ModelFormatError(f"{where}: a CTR counts table with a bad key or count")
        out[key] = row
    kind = ctr.get("ctr_type")
    if kind == "Borders" and stride != 3:
        raise UnsupportedModelError(f"{where}: a Borders CTR over {stride - 1} target classes (binary only)")
    return out
