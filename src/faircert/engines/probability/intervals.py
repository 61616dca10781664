"""Sound interval arithmetic over batches of boxes, with open/closed ends and dependency masks.

A numeric value is a batch of intervals [lo, hi] (float64 arrays, outward rounded: every operation
that can round moves the end outward by one ulp, except additions that TwoSum proves exact). An end
is *open* when it is reached with probability zero (e.g. the edge of a continuous draw's box); this
lets `sex < 1` be decided on the box whose value set is [0, 1) almost surely. A boolean is a pair
(may be true, may be false). `dep` is a bit mask of the random sites a value depends on on this box
(None: unknown), used to split only dimensions that matter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import affine as A

_INF = np.inf
_MAXF = np.finfo(np.float64).max


def _or(a, b):
    if a is None or b is None:
        return None
    return a | b


@dataclass
class Iv:
    # arrays over the rows, or one value for a constant
    lo: np.ndarray | np.float64
    hi: np.ndarray | np.float64
    lo_open: np.ndarray | np.bool_
    hi_open: np.ndarray | np.bool_
    dep: np.ndarray | np.unsignedinteger | None
    #: width of the undecided conditions this value was merged over (a guide for splitting only)
    ws: np.ndarray | float = 0.0
    #: the same value as an affine form over the inputs (None: intervals only)
    form: A.Affine | None = None


@dataclass
class Bv:
    # arrays over the rows, or one value for a constant
    may_true: np.ndarray | np.bool_
    may_false: np.ndarray | np.bool_
    dep: np.ndarray | np.unsignedinteger | None
    #: how far from decided (widths of the undecided comparisons; 0 when decided); guides splitting
    w: np.ndarray | float = 0.0
    #: |coefficient| of each symbol in the undecided comparisons' affine forms (guides splitting)
    sens: dict | None = None

    @property
    def true(self) -> np.ndarray | np.bool_:
        return ~self.may_false

    @property
    def false(self) -> np.ndarray | np.bool_:
        return ~self.may_true


def const(value: float) -> Iv:
    v = np.float64(value)
    return Iv(v, v, np.bool_(False), np.bool_(False), np.uint64(0), 0.0, A.constant(v))


def _fresh(x: Iv) -> Iv:
    x.form = A.from_interval(np.asarray(x.lo), np.asarray(x.hi))
    return x


def _down(s: np.ndarray | np.float64, exact: np.ndarray | bool) -> np.ndarray:
    with np.errstate(over="ignore"):
        out = np.where(exact, s, np.nextafter(s, -_INF))
    out = np.where(np.isnan(out), -_INF, out)
    return np.where(out == _INF, _MAXF, out)


def _up(s: np.ndarray | np.float64, exact: np.ndarray | bool) -> np.ndarray:
    with np.errstate(over="ignore"):
        out = np.where(exact, s, np.nextafter(s, _INF))
    out = np.where(np.isnan(out), _INF, out)
    return np.where(out == -_INF, -_MAXF, out)


def _two_sum_err(a, b, s):
    """Exact rounding error of s = fl(a + b) (TwoSum); nan when an operand is infinite."""
    bb = s - a
    return (a - (s - bb)) + (b - bb)


def add(a: Iv, b: Iv) -> Iv:
    with np.errstate(invalid="ignore", over="ignore"):
        sl = a.lo + b.lo
        el = _two_sum_err(a.lo, b.lo, sl)
        sh = a.hi + b.hi
        eh = _two_sum_err(a.hi, b.hi, sh)
    # an infinite end is exact as it stands; otherwise keep s only when TwoSum says it is exact
    lo = _down(sl, (el >= 0) | np.isinf(sl) & (sl < 0))
    hi = _up(sh, (eh <= 0) | np.isinf(sh) & (sh > 0))
    form = A.add(a.form, b.form) if a.form is not None and b.form is not None else None
    return Iv(
        lo,
        hi,
        a.lo_open | b.lo_open | (el != 0),
        a.hi_open | b.hi_open | (eh != 0),
        _or(a.dep, b.dep),
        a.ws + b.ws,
        form,
    )


def neg(a: Iv) -> Iv:
    return Iv(-a.hi, -a.lo, a.hi_open, a.lo_open, a.dep, a.ws, None if a.form is None else A.neg(a.form))


def sub(a: Iv, b: Iv) -> Iv:
    return add(a, neg(b))


def _prod(x, y):
    """(rounded-down, rounded-up, exact) products of interval ends; 0 * inf is 0 here (an exact zero
    times an unbounded end), and only products with an exact zero or infinite factor are exact."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = x * y
    p = np.where(np.isnan(p), 0.0, p)
    exact = (x == 0) | (y == 0) | np.isinf(x) | np.isinf(y)
    with np.errstate(over="ignore"):
        down = np.where(exact, p, np.nextafter(p, -_INF))
        up = np.where(exact, p, np.nextafter(p, _INF))
    return down, up, exact


def _scale(a: Iv, c: float, dep) -> Iv:
    """a * c for an exact constant c (the common case: weights, unit changes)."""
    if c == 0:
        return Iv(np.float64(0.0), np.float64(0.0), np.bool_(False), np.bool_(False), dep, a.ws, A.constant(0.0))
    lo, hi, lo_open, hi_open = (a.lo, a.hi, a.lo_open, a.hi_open) if c > 0 else (a.hi, a.lo, a.hi_open, a.lo_open)
    d, _, ed = _prod(lo, np.float64(c))
    _, u, eu = _prod(hi, np.float64(c))
    d = np.where(d == _INF, _MAXF, d)
    u = np.where(u == -_INF, -_MAXF, u)
    # exact ends keep their openness; rounded ends are never reached
    return Iv(d, u, lo_open | ~ed, hi_open | ~eu, dep, a.ws, None if a.form is None else A.scale(a.form, c))


def _constant(x: Iv) -> float | None:
    if np.ndim(x.lo) == 0 and x.lo == x.hi and not x.lo_open and not x.hi_open and np.isfinite(x.lo):
        return float(x.lo)
    return None


def mul(a: Iv, b: Iv) -> Iv:
    cb, ca = _constant(b), _constant(a)
    if cb is not None:
        return _scale(a, cb, a.dep)
    if ca is not None:
        return _scale(b, ca, b.dep)
    ps = [_prod(a.lo, b.lo), _prod(a.lo, b.hi), _prod(a.hi, b.lo), _prod(a.hi, b.hi)]
    lo = np.minimum(np.minimum(ps[0][0], ps[1][0]), np.minimum(ps[2][0], ps[3][0]))
    hi = np.maximum(np.maximum(ps[0][1], ps[1][1]), np.maximum(ps[2][1], ps[3][1]))
    # an end is closed only where an exact product attains it (rounded ends are never reached)
    lo_closed = np.zeros(np.shape(lo), dtype=bool)
    hi_closed = np.zeros(np.shape(hi), dtype=bool)
    for down, up, exact in ps:
        lo_closed |= exact & (down == lo)
        hi_closed |= exact & (up == hi)
    lo = np.where(lo == _INF, _MAXF, lo)
    hi = np.where(hi == -_INF, -_MAXF, hi)
    return _fresh(Iv(lo, hi, ~lo_closed, ~hi_closed, _or(a.dep, b.dep), a.ws + b.ws))


def _div_const(a: Iv, c: float) -> Iv:
    """a / c for an exact non-zero constant c."""
    lo, hi, lo_open, hi_open = (a.lo, a.hi, a.lo_open, a.hi_open) if c > 0 else (a.hi, a.lo, a.hi_open, a.lo_open)
    with np.errstate(over="ignore", under="ignore"):
        ql, qh = lo / c, hi / c
        el = (lo == 0) | np.isinf(lo)
        eh = (hi == 0) | np.isinf(hi)
        d = np.where(el, ql, np.nextafter(ql, -_INF))
        u = np.where(eh, qh, np.nextafter(qh, _INF))
    d = np.where(d == _INF, _MAXF, d)
    u = np.where(u == -_INF, -_MAXF, u)
    return Iv(
        d,
        u,
        lo_open | ~el,
        hi_open | ~eh,
        a.dep,
        a.ws,
        None if a.form is None else A.scale(a.form, 1.0 / c, inexact=True),
    )


def div(a: Iv, b: Iv) -> Iv:
    cb = _constant(b)
    if cb is not None and cb != 0:
        return _div_const(a, cb)
    has_zero = (b.lo <= 0) & (b.hi >= 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rl = np.where(has_zero, 1.0, 1.0 / np.where(has_zero, 1.0, b.hi))
        rh = np.where(has_zero, 1.0, 1.0 / np.where(has_zero, 1.0, b.lo))
    inv = Iv(_down(rl, False), _up(rh, False), np.bool_(True), np.bool_(True), b.dep, b.ws)
    q = mul(a, inv)
    lo = np.where(has_zero, -_INF, q.lo)
    hi = np.where(has_zero, _INF, q.hi)
    return _fresh(Iv(lo, hi, q.lo_open | has_zero, q.hi_open | has_zero, q.dep, q.ws))


def hull(a: Iv, b: Iv, dep=None) -> Iv:
    lo = np.minimum(a.lo, b.lo)
    hi = np.maximum(a.hi, b.hi)
    lo_open = np.where(a.lo < b.lo, a.lo_open, np.where(b.lo < a.lo, b.lo_open, a.lo_open & b.lo_open))
    hi_open = np.where(a.hi > b.hi, a.hi_open, np.where(b.hi > a.hi, b.hi_open, a.hi_open & b.hi_open))
    return Iv(lo, hi, lo_open, hi_open, dep)


def select(c: Bv, a: Iv, b: Iv) -> Iv:
    """a where c is surely true, b where surely false, their hull where c is undecided."""
    t, f = c.true, c.false
    h = hull(a, b)
    dep = None
    if a.dep is not None and b.dep is not None and c.dep is not None:
        dep = np.where(t, a.dep, np.where(f, b.dep, a.dep | b.dep | c.dep))
    lo, hi = np.where(t, a.lo, np.where(f, b.lo, h.lo)), np.where(t, a.hi, np.where(f, b.hi, h.hi))
    form = None
    if a.form is not None and b.form is not None:
        form = A.select(t, f, a.form, b.form, np.broadcast_to(lo, np.shape(t)), np.broadcast_to(hi, np.shape(t)))
    return Iv(
        lo,
        hi,
        np.where(t, a.lo_open, np.where(f, b.lo_open, h.lo_open)),
        np.where(t, a.hi_open, np.where(f, b.hi_open, h.hi_open)),
        dep,
        np.where(t, a.ws, np.where(f, b.ws, a.ws + b.ws + c.w)),
        form,
    )


def select_bool(c: Bv, a: Bv, b: Bv) -> Bv:
    t, f = c.true, c.false
    dep = None
    if a.dep is not None and b.dep is not None and c.dep is not None:
        dep = np.where(t, a.dep, np.where(f, b.dep, a.dep | b.dep | c.dep))
    return Bv(
        np.where(t, a.may_true, np.where(f, b.may_true, a.may_true | b.may_true)),
        np.where(t, a.may_false, np.where(f, b.may_false, a.may_false | b.may_false)),
        dep,
        np.where(t, a.w, np.where(f, b.w, a.w + b.w + c.w)),
        _sens_sum(a.sens, b.sens, c.sens),
    )


def _lt(a: Iv, b: Iv) -> tuple[np.ndarray | np.bool_, np.ndarray | np.bool_]:
    """(surely a < b, surely a >= b)."""
    sure = (a.hi < b.lo) | ((a.hi == b.lo) & (a.hi_open | b.lo_open))
    never = a.lo >= b.hi
    return sure, never


def _le(a: Iv, b: Iv) -> tuple[np.ndarray | np.bool_, np.ndarray | np.bool_]:
    """(surely a <= b, surely a > b)."""
    sure = a.hi <= b.lo
    never = (a.lo > b.hi) | ((a.lo == b.hi) & (a.lo_open | b.hi_open))
    return sure, never


def compare(op: str, a: Iv, b: Iv) -> Bv:
    if op == "<":
        sure, never = _lt(a, b)
    elif op == "<=":
        sure, never = _le(a, b)
    elif op == ">":
        sure, never = _lt(b, a)
    elif op == ">=":
        sure, never = _le(b, a)
    else:
        lt_sure, _ = _lt(a, b)
        gt_sure, _ = _lt(b, a)
        point = (a.lo == a.hi) & (b.lo == b.hi) & (a.lo == b.lo) & ~a.lo_open & ~a.hi_open & ~b.lo_open & ~b.hi_open
        sure, never = (point, lt_sure | gt_sure) if op == "==" else (lt_sure | gt_sure, point)
    if a.form is not None and b.form is not None:
        # the difference's affine form keeps the correlation between a and b
        diff = A.add(a.form, b.form, -1.0)
        dlo, dhi = A.bounds(diff)
        extra: dict[str, tuple[np.ndarray | bool, np.ndarray | bool]] = {
            "<": (dhi < 0, dlo >= 0),
            "<=": (dhi <= 0, dlo > 0),
            ">": (dlo > 0, dhi <= 0),
            ">=": (dlo >= 0, dhi < 0),
            "==": (False, (dlo > 0) | (dhi < 0)),
            "!=": ((dlo > 0) | (dhi < 0), False),
        }
        sure, never = sure | extra[op][0], never | extra[op][1]
    with np.errstate(invalid="ignore"):
        w = (a.hi - a.lo) + (b.hi - b.lo) + a.ws + b.ws
    undecided = ~(sure | never)
    sens = None
    if a.form is not None and b.form is not None:
        sens = {k: np.where(undecided, np.abs(v), 0.0) for k, v in diff.k.items()}
    return Bv(~never, ~sure, _or(a.dep, b.dep), np.where(undecided, w, 0.0), sens)


def _sens_sum(*parts, mask=None):
    """Sum of sensitivity dicts (None: unknown, absorbing), zeroed where `mask` is False."""
    if any(p is None for p in parts):
        return None
    out: dict = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out[k] + v if k in out else v
    if mask is not None:
        out = {k: np.where(mask, v, 0.0) for k, v in out.items()}
    return out


def and_(a: Bv, b: Bv) -> Bv:
    mt, mf = a.may_true & b.may_true, a.may_false | b.may_false
    return Bv(mt, mf, _or(a.dep, b.dep), np.where(mt & mf, a.w + b.w, 0.0), _sens_sum(a.sens, b.sens, mask=mt & mf))


def or_(a: Bv, b: Bv) -> Bv:
    mt, mf = a.may_true | b.may_true, a.may_false & b.may_false
    return Bv(mt, mf, _or(a.dep, b.dep), np.where(mt & mf, a.w + b.w, 0.0), _sens_sum(a.sens, b.sens, mask=mt & mf))


def not_(a: Bv) -> Bv:
    return Bv(a.may_false, a.may_true, a.dep, a.w, a.sens)


def to_number(b: Bv) -> Iv:
    """A boolean as 0/1."""
    lo = np.where(b.may_false, 0.0, 1.0)
    hi = np.where(b.may_true, 1.0, 0.0)
    z = np.zeros(np.shape(lo), dtype=bool)
    return _fresh(Iv(lo, hi, z, z.copy(), b.dep, b.w))


def to_bool(x: Iv) -> Bv:
    """A number as a condition: x != 0."""
    return compare("!=", x, const(0.0))


def absolute(a: Iv) -> Iv:
    return select(compare(">=", a, const(0.0)), a, neg(a))


def minimum(a: Iv, b: Iv) -> Iv:
    return select(compare("<=", a, b), a, b)


def maximum(a: Iv, b: Iv) -> Iv:
    return select(compare(">=", a, b), a, b)
