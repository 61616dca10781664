"""Group-fairness properties over event probabilities: the events asked for, interval arithmetic on
the conditional probabilities and their ratio, and the decision on strict margins.

Events (qualified Q defaults to true; M = sensitive, H = target):
  0  H and M and Q      1  not H and M and Q
  2  H and not M and Q  3  not H and not M and Q
  4  M and Q            5  not M and Q
P[H | M, Q] = e0 / (e0 + e1) is bounded as [lo0 / (lo0 + hi1), hi0 / (hi0 + lo1)], which is tighter
than dividing by P[M and Q]'s own bounds; likewise for not M.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...errors import PropertyError
from ...results import DECISION_TOLERANCE, ProgramResult

KINDS = ("ratio", "parity", "difference")
EVENT_NAMES = (
    "target_and_sensitive",
    "not_target_and_sensitive",
    "target_and_not_sensitive",
    "not_target_and_not_sensitive",
    "sensitive",
    "not_sensitive",
)
INF = float("inf")


@dataclass(frozen=True)
class FairnessSpec:
    """P[H | M, Q] / P[H | not M, Q] > 1 - epsilon (ratio); both ways (parity); |difference| < epsilon."""

    epsilon: float = 0.15
    kind: str = "ratio"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PropertyError(f"unknown fairness form {self.kind!r}; choose from {', '.join(KINDS)}")
        if not (np.isfinite(self.epsilon) and 0 < self.epsilon < 1):
            raise PropertyError(f"epsilon must lie strictly between 0 and 1, got {self.epsilon}")


def _frac(x) -> Fraction | float:
    return x if isinstance(x, Fraction) or x == INF else Fraction(x)


def _cond(lo_t, hi_t, lo_f, hi_f) -> tuple:
    """Bounds of t / (t + f) from bounds of t and f."""
    den_lo, den_hi = lo_t + hi_f, hi_t + lo_f
    low = lo_t / den_lo if den_lo > 0 else Fraction(0)
    high = hi_t / den_hi if den_hi > 0 else Fraction(1)
    return low, min(Fraction(1), high)


def conditionals(low: list, high: list) -> tuple[tuple, tuple]:
    """Intervals of P[H | M, Q] and P[H | not M, Q]."""
    lo, hi = [_frac(x) for x in low], [_frac(x) for x in high]
    return _cond(lo[0], hi[0], lo[1], hi[1]), _cond(lo[2], hi[2], lo[3], hi[3])


def ratio_interval(pm: tuple, pn: tuple) -> tuple:
    """Interval of pm / pn; +inf where pn may be 0."""
    low = pm[0] / pn[1] if pn[1] > 0 else (INF if pm[0] > 0 else Fraction(0))
    high = pm[1] / pn[0] if pn[0] > 0 else INF
    return low, high


def decide(spec: FairnessSpec, low: list, high: list) -> str | None:
    """ "fair" / "unfair" when proven on a strict margin, else None."""
    pm, pn = conditionals(low, high)
    tol = Fraction(DECISION_TOLERANCE)
    t = Fraction(1) - Fraction(spec.epsilon)
    if spec.kind == "difference":
        eps = Fraction(spec.epsilon)
        d_lo, d_hi = pm[0] - pn[1], pm[1] - pn[0]
        if d_lo > eps + tol or d_hi < -eps - tol:
            return "unfair"
        if d_lo > -eps + tol and d_hi < eps - tol:
            return "fair"
        return None
    r_lo, r_hi = ratio_interval(pm, pn)
    if r_hi != INF and r_hi < t - tol:
        return "unfair"
    if spec.kind == "parity" and r_lo != INF and r_lo > 1 / t + tol:
        return "unfair"
    fair_low = r_lo != INF and r_lo > t + tol
    if spec.kind == "parity":
        return "fair" if fair_low and r_hi != INF and r_hi < 1 / t - tol else None
    return "fair" if fair_low or (r_lo == INF) else None


def weights(low: list, high: list) -> np.ndarray:
    """How much an undecided unit of mass in each event moves the log of the conditional probabilities."""
    mid = [max(float(a + b) / 2, 1e-9) for a, b in zip(low, high)]
    w = np.array(
        [
            1 / mid[0] + 1 / (mid[0] + mid[1]),
            1 / (mid[0] + mid[1]),
            1 / mid[2] + 1 / (mid[2] + mid[3]),
            1 / (mid[2] + mid[3]),
            1e-3,
            1e-3,
        ]
    )
    return w


def fairness_events(ops, notes: dict):
    """The six events from the annotation conditions (in any interpreter domain)."""
    m, h = notes["sensitiveAttribute"], notes["fairnessTarget"]
    q = notes.get("qualified")
    nm, nh = ops.not_(m), ops.not_(h)
    mq = m if q is None else ops.and_(m, q)
    nmq = nm if q is None else ops.and_(nm, q)
    return [ops.and_(h, mq), ops.and_(nh, mq), ops.and_(h, nmq), ops.and_(nh, nmq), mq, nmq]


def summary(low: list, high: list) -> dict:
    """name -> (low, high) floats for the events and the two conditional probabilities."""
    from .refine import _down, _up

    pm, pn = conditionals(low, high)
    out = {name: (_down(_frac(lo)), _up(_frac(hi))) for name, lo, hi in zip(EVENT_NAMES, low, high)}
    out["target_given_sensitive"] = (_down(pm[0]), _up(pm[1]))
    out["target_given_not_sensitive"] = (_down(pn[0]), _up(pn[1]))
    return out


def outward(interval: tuple) -> tuple[float, float]:
    """A (Fraction or inf) interval as floats rounded outward."""
    from .refine import _down, _up

    lo, hi = interval
    return (INF if lo == INF else _down(lo)), (INF if hi == INF else _up(hi))


def program_result(source: str, spec: FairnessSpec, low: list, high: list, **fields) -> ProgramResult:
    """A program's result from bounds (`low`, `high`) on its fairness events: the ratio's interval
    (rounded outward) and the probabilities, with `fields` (the verdict, how it was found, ...)."""
    r_lo, r_hi = outward(ratio_interval(*conditionals(low, high)))
    return ProgramResult(
        ratio_low=r_lo,
        ratio_high=r_hi,
        probabilities=summary(low, high),
        epsilon=spec.epsilon,
        kind=spec.kind,
        program=source,
        **fields,
    )
