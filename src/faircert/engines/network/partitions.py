"""Fairify's partitions: every non-protected discrete feature with more than MS values is cut into
consecutive chunks of MS values (the last one shorter); real features and protected ones are not
cut. Chunk counts are ceil((max - min + 1) / MS) per feature (inclusive integer ranges)."""

from __future__ import annotations

import itertools

import numpy as np

from ...errors import PropertyError
from .problem import Problem

#: Largest partition grid a run accepts (each partition costs at least one bounded box).
MAX_PARTITIONS = 1_000_000


def partition_count(pb: Problem, size: int) -> int:
    width = pb.hi - pb.lo + 1
    chunks = np.where(pb.discrete & (width > size), np.ceil(width / size), 1.0)
    return int(np.prod(chunks))


def partition_grid(pb: Problem, size: int, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Bounds (K, d) of the partitions of the free features, the first feature varying slowest."""
    limit = MAX_PARTITIONS if limit is None else limit
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise PropertyError(f"partition size must be an integer >= 1, got {size!r}")
    count = partition_count(pb, int(size))
    if count > limit:
        raise PropertyError(
            f"partition size {size} cuts the domain into {count} partitions (limit {limit}); "
            f"use a larger partition size"
        )
    per_feature = []
    for lo, hi, disc in zip(pb.lo, pb.hi, pb.discrete):
        if disc and hi - lo + 1 > size:
            starts = np.arange(lo, hi + 1, size)
            per_feature.append([(s, min(s + size - 1, hi)) for s in starts])
        else:
            per_feature.append([(lo, hi)])
    cells = list(itertools.product(*per_feature))
    bounds = np.array(cells, dtype=np.float64).reshape(len(cells), pb.d, 2)
    return bounds[:, :, 0].copy(), bounds[:, :, 1].copy()
