"""Sound lower bounds on the share of a box that its linear forms already decide.

A box stays undecided when its bounds' linear forms cross 0 inside it, yet most of its points
often lie where every twin's lower form is positive (or every upper form negative). Those points
are counted, not located: under the uniform measure on the box (grid points on integer features,
volume on real ones) the features are independent, so for a form a.x + c with mean mu over the
box, Chernoff's bound with the exact moment generating function of each feature's uniform law gives

    P(a.x + c <= tol) <= exp(-lam (mu - tol)) * prod_i E exp(-lam a_i (x_i - m_i))   for lam > 0.

Union bounds combine the twins: all T forms positive with probability >= 1 - sum of their
failure bounds; twin j positive and twin k negative with probability >= 1 - p_j - p_k. The three
events (all positive, all negative, two twins apart) are disjoint, so the shares never overlap.

Written once for numpy and torch (`arrays.namespace`): on a device the forms never leave it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import arrays
from .arrays import namespace

#: Multiples of the Gaussian-optimal lam = (mu - tol) / variance tried (measured: the optimum is
#: almost always at or just above 1; larger ones matter only where the bound is already tiny).
LAM_FACTORS = (1.0, 2.0)
#: Added to each log-bound: covers floating-point error in the sums, so the bound stays an upper one.
LOG_SLACK = 1e-9


def _log_sinh(xp: Any, z: np.ndarray) -> np.ndarray:
    """log(sinh z) for z > 0, without overflow for large z or cancellation for small z."""
    return z + xp.log(-xp.expm1(-2.0 * z)) - np.log(2.0)


def _log_mgf(u: np.ndarray, n: np.ndarray, discrete: np.ndarray, every_discrete: bool) -> np.ndarray:
    """Log of E exp(u (x - m)) for x uniform on n consecutive integers (discrete) or on an interval
    of width n (real), centred at its mean m; u >= 0 (the laws are symmetric).

    That is log(sinh(n u/2) / (n sinh(u/2))), or log(sinh(n u/2) / (n u/2)) for an interval. Where
    n u/2 is tiny, the leading term of the series, (n^2 - 1) u^2/24 (n^2 u^2/24), is used instead:
    it is the variance term of a sub-Gaussian bound on uniform laws, never below the function, so
    the Chernoff bound stays sound. `every_discrete`: whether `discrete` is all True (said by the
    caller: on a device, reading it would wait for the device).
    """
    xp = namespace(u)
    half = n * u * 0.5
    small = half < 1e-3
    big_half = xp.where(small, 1.0, half)
    if every_discrete:  # the usual case: skip the interval branch
        exact = _log_sinh(xp, big_half) - _log_sinh(xp, xp.where(small, 1.0, u * 0.5)) - xp.log(n)
    else:
        step = xp.where(discrete & ~small, u * 0.5, 1.0)
        below = xp.where(discrete, _log_sinh(xp, step) + xp.log(xp.where(discrete, n, 1.0)), xp.log(big_half))
        exact = _log_sinh(xp, big_half) - below
    series = (n * n - arrays.astype(xp, discrete, np.float64)) * (u * u / 24.0)
    return xp.where(small, series, exact)


def failure_bound(
    a: np.ndarray, t: np.ndarray, size: np.ndarray, discrete: np.ndarray, every_discrete: bool | None = None
) -> np.ndarray:
    """Upper bound on P(a.(x - m) <= -t) for x uniform on the box, for each form.

    a (..., d) coefficients; t (...) the form's mean minus the tolerance; size (..., d) the number
    of grid points (discrete) or the width (real) of each feature; 1 where t <= 0.
    `every_discrete`: whether every feature is discrete (None: read from `discrete`).
    """
    xp = namespace(a)
    every_discrete = bool(discrete.all()) if every_discrete is None else every_discrete
    size = xp.broadcast_to(size, a.shape)
    p = xp.ones(t.shape, like=t)
    rows = xp.nonzero(t > 0)  # only forms whose mean is past the tolerance can win
    a, t, size = a[rows], t[rows], size[rows]
    disc = xp.broadcast_to(discrete, a.shape)
    var = xp.einsum("nd,nd->n", a * a, xp.where(disc, size * size - 1.0, size * size)) / 12.0
    lam0 = t / xp.where(var > 0, var, 1.0)
    best = xp.zeros(t.shape, like=t)
    abs_a = xp.abs(a)
    for f in LAM_FACTORS:
        lam = lam0 * f
        g = -lam * t + _log_mgf(lam[:, None] * abs_a, size, disc, every_discrete).sum(axis=1)
        best = xp.minimum(best, g)
    # a form constant over the box decides it on its own
    p[rows] = xp.where(var > 0, xp.exp(xp.minimum(best + LOG_SLACK, 0.0)), 0.0)
    return p


def decided_shares(
    form_a: np.ndarray,
    form_c: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    discrete: np.ndarray,
    tol: float,
    fair_forms: tuple[np.ndarray, np.ndarray] | None = None,
    every_discrete: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower bounds on the shares of each box's points that are fair and unfair.

    form_a (2, B, T, d), form_c (2, B, T): f_k >= a[0].x + c[0] and -f_k >= a[1].x + c[1] over
    the box. `fair_forms`, if given, replaces them for the fair share only (with epsilon: forms
    bounding each point's whole window); the unfair share always uses the forms of the points.
    All on one backend: numpy arrays, or torch tensors on one device (`discrete` included);
    `every_discrete`: whether `discrete` is all True (None: read from it).
    """
    xp = namespace(form_a)
    every = bool(discrete.all()) if every_discrete is None else every_discrete
    if form_a.shape[1] == 0:
        return xp.zeros(0, like=form_a), xp.zeros(0, like=form_a)
    size = xp.where(discrete, hi - lo + 1.0, hi - lo)[None, :, None, :]
    mid = ((lo + hi) * 0.5)[None, :, None, :]
    own_centre = form_c + (form_a * mid).sum(axis=3)  # (2, B, T) means over the box
    p_own = failure_bound(form_a, own_centre - tol, size, discrete, every)
    if fair_forms is None:
        fa, fc, centre, p_fair = form_a, form_c, own_centre, p_own
    else:
        fa, fc = fair_forms
        centre = fc + (fa * mid).sum(axis=3)
        p_fair = failure_bound(fa, centre - tol, size, discrete, every)
    T = form_a.shape[2]
    all_side = xp.maximum(1.0 - p_fair.sum(axis=2), _min_form_share(fa, fc, centre, lo, hi, size, discrete, tol, every))
    fair = xp.clip(all_side, 0.0, None).sum(axis=0)  # all positive + all negative
    if T < 2:
        return fair, xp.zeros_like(fair)
    # twin j positive and twin k != j negative: the best pair
    pair = 1.0 - p_own[0][:, :, None] - p_own[1][:, None, :]  # (B, T, T)
    diagonal = arrays.arange(xp, T, like=pair)
    pair[:, diagonal, diagonal] = 0.0
    unfair = xp.clip(xp.amax(pair.reshape(pair.shape[0], -1), axis=1), 0.0, None)
    return fair, unfair


def _min_form_share(a, c, centre, lo, hi, size, discrete, tol, every_discrete) -> np.ndarray:
    """Lower bound on P(every twin's form > tol) from one form: the twins' forms differ little,
    so min_k f_k >= f_j + min(0, min over the box of f_k - f_j) for the twin j of highest mean
    (`centre`, (2, B, T): the forms' means over the box)."""
    xp = namespace(a)
    j = xp.argmax(centre, axis=2)[..., None]
    a_j = xp.take_along_axis(a, j[..., None], axis=2)  # (2, B, 1, d)
    c_j = xp.take_along_axis(c, j, axis=2)  # (2, B, 1)
    da, dc = a - a_j, c - c_j
    gap = dc + xp.minimum(da * lo[None, :, None, :], da * hi[None, :, None, :]).sum(axis=3)
    shift = xp.minimum(xp.amin(gap, axis=2, keepdims=True), 0.0)
    t = xp.take_along_axis(centre, j, axis=2) + shift - tol
    return 1.0 - failure_bound(a_j, t, size, discrete, every_discrete)[..., 0]
