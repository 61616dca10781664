"""Sound linear bounds of a smooth activation over each neuron's pre-activation interval.

For a slope a, the lines `a z + min g` and `a z + max g`, with g(z) = f(z) - a z over [l, u], hold
f between them on the whole interval whatever a is; so the slopes are chosen for tightness
(CROWN's choice: the secant above and a tangent below where f is convex, the reverse where it is
concave, the secant for both where the interval holds an inflection) and soundness rests on the
extremes of g alone.

Those are exact up to a stated error: an extreme of g lies at an end of [l, u], at a break of the
activation, or where f'(z) = a. Between breaks f' is monotone, so f' - a changes sign at most once
per piece, and that root is bracketed: by bisection to width w 2^-ITERATIONS, or (tanh, sigmoid)
by its closed form, checked by the sign of f' - a on either side. g is flat at the root and
|f''| <= K, so g at a point within delta of it misses the extreme by at most K delta^2 / 2 (for
bisection, delta = w 2^-25: a share 2^-48 of the curve's own gap over the piece, K w^2 / 8). That
error and a relative margin for float rounding are added outward.
"""

from __future__ import annotations

import numpy as np

from ...models.activations import Activation

ITERATIONS = 24
#: Relative outward margin for the rounding of f, of the slopes' products and of the sums.
ROUNDING = 1e-12


def lines(act: Activation, l: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lower slope, lower intercept, upper slope, upper intercept) with
    sl z + bl <= f(z) <= su z + bu for every z in [l, u] (arrays of one shape, l <= u finite)."""
    l = np.asarray(l, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    width = u - l
    fl, fu = act(l), act(u)
    wide = width > 1e-9 * (1.0 + np.abs(l) + np.abs(u))
    tangent = act.derivative(0.5 * (l + u))
    secant = np.divide(fu - fl, width, out=tangent.copy(), where=wide)
    inside = np.zeros(l.shape, dtype=bool)
    for b in act.breaks:
        inside |= (l < b) & (b < u)
    convex = ~inside & (_second_sign(act, 0.5 * (l + u)) >= 0)
    concave = ~inside & ~convex
    s_low = np.where(convex, tangent, secant)
    s_up = np.where(concave, tangent, secant)
    _, b_low = _extremes(act, l, u, s_low)
    b_up, _ = _extremes(act, l, u, s_up)
    return s_low, b_low, s_up, b_up


def _second_sign(act: Activation, z: np.ndarray) -> np.ndarray:
    """The sign of f'' at z (away from breaks), from which side of each break z lies on."""
    if act.name in ("tanh", "sigmoid"):
        return -np.sign(z)
    if act.name == "elu":
        return np.where(z < 0, 1.0, 0.0)
    edge = act.breaks[-1]  # GELU and SiLU: convex between their two inflections
    return np.where(np.abs(z) < edge, 1.0, -1.0)


def _extremes(act: Activation, l: np.ndarray, u: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(max, min) of g(z) = f(z) - a z over [l, u], padded outward by their error bound."""
    ends = [l] + [np.clip(b, l, u) for b in act.breaks] + [u]
    top = np.full(l.shape, -np.inf)
    bottom = np.full(l.shape, np.inf)
    slack = np.zeros(l.shape)
    for p, q in zip(ends[:-1], ends[1:]):
        root, half = _root(act, p, q, a)
        for z in (p, q, root):
            g = act(z) - a * z
            top = np.maximum(top, g)
            bottom = np.minimum(bottom, g)
        slack = np.maximum(slack, 0.5 * act.curvature * half * half)
    scale = 1.0 + np.abs(a) * np.maximum(np.abs(l), np.abs(u)) + np.maximum(np.abs(top), np.abs(bottom))
    margin = slack + ROUNDING * scale
    return top + margin, bottom - margin


def _root(act: Activation, p: np.ndarray, q: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where f' = a on [p, q] (f' monotone there), and a bound on the distance to the true root;
    p itself (with no error) where f' - a keeps one sign. tanh and sigmoid have the root in closed
    form, kept where f' - a changes sign across it within 1e-9 (relative); the rest are bisected."""
    above = act.derivative(p) - a > 0
    at = np.flatnonzero(above != (act.derivative(q) - a > 0))  # only these pieces hold a root
    root, half = p.copy(), np.zeros(p.shape)
    if not at.size:
        return root, half
    lo, hi, a, above = p.flat[at], q.flat[at], a.flat[at], above.flat[at]
    guess = _closed_form(act, lo, hi, a)
    if guess is not None:
        step = 1e-9 * (1.0 + np.abs(guess))
        left, right = np.clip(guess - step, lo, hi), np.clip(guess + step, lo, hi)
        # the root lies in [left, right] where f' - a has p's sign at left and the other at right
        held = ((act.derivative(left) - a > 0) == above) & ((act.derivative(right) - a > 0) != above)
        root.flat[at[held]] = guess[held]
        half.flat[at[held]] = np.maximum(guess - left, right - guess)[held]
        at, lo, hi, a, above = at[~held], lo[~held], hi[~held], a[~held], above[~held]
    for _ in range(ITERATIONS if at.size else 0):
        mid = 0.5 * (lo + hi)
        same = (act.derivative(mid) - a > 0) == above
        lo = np.where(same, mid, lo)
        hi = np.where(same, hi, mid)
    root.flat[at] = 0.5 * (lo + hi)
    half.flat[at] = 0.5 * (hi - lo)
    return root, half


def _closed_form(act: Activation, lo: np.ndarray, hi: np.ndarray, a: np.ndarray) -> np.ndarray | None:
    """A guess at the root of f' = a in [lo, hi] (a piece on one side of 0), clipped to it:
    tanh' = 1 - tanh^2 gives z = +-atanh(sqrt(1 - a)); sigmoid' = s (1 - s) gives
    z = +-2 atanh(sqrt(1 - 4a)). None for the other units."""
    if act.name == "tanh":
        t = np.sqrt(np.clip(1.0 - a, 0.0, 1.0))
        scale = 1.0
    elif act.name == "sigmoid":
        t = np.sqrt(np.clip(1.0 - 4.0 * a, 0.0, 1.0))
        scale = 2.0
    else:
        return None
    with np.errstate(divide="ignore"):
        z = scale * np.arctanh(np.minimum(t, 1.0))
    return np.clip(np.where(lo + hi < 0, -z, z), lo, hi)
