"""The statistics of the explain reports: exact binomial intervals, one-sided tests, and the
Benjamini-Hochberg correction.

Intervals are Clopper-Pearson: exact, so each holds at least its stated level for any sample size
and any rate (Wilson's can fall below it for small counts near 0 or 1, where unfair rates live).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..results.explain import Rate


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The two-sided exact interval of a binomial rate from `k` successes in `n` trials."""
    if n <= 0:
        return 0.0, 1.0
    alpha = 1.0 - confidence
    low = 0.0 if k <= 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k >= n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def fisher_one_sided(k_in: int, n_in: int, k_out: int, n_out: int, greater: bool = True) -> float:
    """Fisher's exact test that the rate inside (k_in of n_in) is greater (or, `greater=False`,
    smaller) than the rate outside (k_out of n_out): the hypergeometric tail of k_in given the
    margins."""
    total, successes = n_in + n_out, k_in + k_out
    if n_in == 0 or n_out == 0:
        return 1.0
    dist = stats.hypergeom(total, successes, n_in)
    return float(dist.sf(k_in - 1) if greater else dist.cdf(k_in))


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """BH-adjusted p-values (step-up, monotone, capped at 1), in the input's order: rejecting those
    at or below q controls the false discovery rate at q."""
    m = len(p_values)
    if m == 0:
        return []
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p)
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return [float(v) for v in out]


def rate(k: int, n: int, confidence: float) -> Rate:
    """k of n as a rate with its Clopper-Pearson interval at `confidence` (no rate of no rows)."""
    low, high = clopper_pearson(k, n, confidence)
    return Rate(k / n if n else None, low, high, confidence)


def is_number(value: object) -> bool:
    """A number (not a flag, a list or text), which an option's range check may then compare."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
