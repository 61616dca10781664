"""Affine forms beside intervals: x = c + sum_s k_s e_s + [-r, r] with every symbol e_s in [-1, 1].

A symbol stands for one random input's value on the box, or for a value the program computed
non-linearly (a merge over an undecided branch, a product of two variables): such a value gets a
fresh symbol from its interval, so later linear arithmetic on it stays exact. Comparing two values
through the form of their difference keeps their correlation (e.g. two network outputs computed
from the same hidden units), which plain intervals lose. Rounding: every operation adds a generous
bound of its float error to r, and ranges are rounded outward. Rows whose interval is unbounded have
r = inf (no information).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

_EPS = 2.0**-50  # a few ulps: generous for one addition or product per coefficient
_fresh = itertools.count(1 << 20)  # ids of computed symbols (inputs use their site index)


@dataclass
class Affine:
    # arrays over the rows, or one number for a constant
    c: np.ndarray | np.float64
    k: dict[int, np.ndarray]
    r: np.ndarray | np.float64


def _mag(f: Affine) -> np.ndarray:
    total = np.abs(f.c)
    for v in f.k.values():
        total = total + np.abs(v)
    return total


def constant(v: float) -> Affine:
    return Affine(np.float64(v), {}, np.float64(0.0))


def from_interval(lo: np.ndarray, hi: np.ndarray, symbol: int | None = None) -> Affine:
    """A fresh symbol spanning [lo, hi] (r = inf where it is unbounded)."""
    finite = np.isfinite(lo) & np.isfinite(hi)
    with np.errstate(invalid="ignore", over="ignore"):
        lo0, hi0 = np.where(finite, lo, 0.0), np.where(finite, hi, 0.0)
        c = 0.5 * lo0 + 0.5 * hi0
        h = 0.5 * hi0 - 0.5 * lo0
    r = np.where(finite, _EPS * (np.abs(c) + h), np.inf)
    return Affine(c, {next(_fresh) if symbol is None else symbol: h}, r)


def add(a: Affine, b: Affine, sign: float = 1.0) -> Affine:
    c = a.c + sign * b.c
    k = dict(a.k)
    for s, v in b.k.items():
        k[s] = k[s] + sign * v if s in k else sign * v
    out = Affine(c, k, a.r + b.r)
    out.r = (out.r + _EPS * _mag(out)) * (1 + _EPS)
    return out


def scale(a: Affine, q: float, inexact: bool = False) -> Affine:
    """a * q; `inexact` when q itself is a rounded value (1 / c)."""
    if q == 0:
        return constant(0.0)
    if not np.isfinite(q):  # 1 / (a subnormal) overflows: no information
        return Affine(np.float64(0.0), {}, np.float64(np.inf))
    k = {s: v * q for s, v in a.k.items()}
    out = Affine(a.c * q, k, a.r * abs(q))
    err = (2 if inexact else 1) * _EPS * _mag(out)
    out.r = (out.r + err) * (1 + _EPS)
    return out


def neg(a: Affine) -> Affine:
    return Affine(-a.c, {s: -v for s, v in a.k.items()}, a.r)


def select(
    t: np.ndarray | np.bool_, f: np.ndarray | np.bool_, a: Affine, b: Affine, lo: np.ndarray, hi: np.ndarray
) -> Affine:
    """a's form where t, b's where f, a fresh symbol over [lo, hi] elsewhere."""
    fresh = from_interval(lo, hi)
    ((sym, h),) = fresh.k.items()
    c = np.where(t, a.c, np.where(f, b.c, fresh.c))
    r = np.where(t, a.r, np.where(f, b.r, fresh.r))
    k = {}
    for s in set(a.k) | set(b.k):
        k[s] = np.where(t, a.k.get(s, 0.0), np.where(f, b.k.get(s, 0.0), 0.0))
    k[sym] = np.where(t | f, 0.0, h)
    return Affine(c, k, r)


def bounds(a: Affine) -> tuple[np.ndarray, np.ndarray]:
    """Outward-rounded range of the form (infinite where r is)."""
    spread = a.r
    for v in a.k.values():
        spread = spread + np.abs(v)
    spread = spread * (1 + _EPS) + _EPS * np.abs(a.c)
    with np.errstate(invalid="ignore"):
        lo = np.nextafter(a.c - spread, -np.inf)
        hi = np.nextafter(a.c + spread, np.inf)
    return np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)
