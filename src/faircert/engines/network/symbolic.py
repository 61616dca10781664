"""Sound bounds on the twin networks' logits over batches of input boxes (numpy, float64).

The twins of a box share every free (non-protected) input and differ only in the protected
values, which are constants; so the first layer is shared and only its bias depends on the twin.
Two bounds are computed for every (box, twin) row and intersected:

* forward symbolic intervals (ReluVal/Neurify relaxation, the one FairQuant uses), which also give
  sound pre-activation bounds for every hidden neuron;
* a backward (CROWN-style) pass for the logit over those pre-activation bounds, choosing each
  unstable neuron's relaxation by the sign of its back-substituted coefficient.

The intersection is therefore never looser than FairQuant's bounds. The backward pass also gives
the linear coefficients of the logit bounds in the inputs, used to choose split features.

Smooth hidden units (tanh, sigmoid, GELU, SiLU, ELU) take the same two passes with each neuron's
lines from `curves.lines` (sound over its pre-activation interval) in place of ReLU's relaxation.

A pipeline's encoded columns (one-hot, ordinal) can be read through lookups instead (see
`InputTables`): each such column adds one table row per grid value to the first layer. Both passes
then take, per box and per column, the min and max of a linear function over the box's rows of the
table, which is exact per column, where the network's own encoding layer would be relaxed. Their
linear forms have coefficient 0 on those columns, and a column's split score is the spread of its
rows' contribution to the bounds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...models.activations import Activation
from ...models.network import ReluNetwork
from . import arrays, curves
from .arrays import namespace

LOGIT_VALUES = 1 << 21  # hidden values computed at once by `TwinNet.logits` (16 MB in float64)


@dataclass
class Lookup:
    """A free input read through a table: row k (grid value start + k) adds table[k] to layer 1.

    Sparse tables of row minima and maxima answer a box's range of rows in two reads."""

    position: int  # among the free inputs
    start: float
    table: np.ndarray  # (K, n1)

    def __post_init__(self) -> None:
        xp = namespace(self.table)
        self.mins, self.maxs = [self.table], [self.table]
        width = 1
        while 2 * width <= self.table.shape[0]:
            self.mins.append(xp.minimum(self.mins[-1][:-width], self.mins[-1][width:]))
            self.maxs.append(xp.maximum(self.maxs[-1][:-width], self.maxs[-1][width:]))
            width *= 2

    def span(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and last row (B,) of each box's range (at least one row: a box with no grid value
        has no point to count, and an empty range would make the bounds infinite)."""
        xp = namespace(lo)
        top = self.table.shape[0] - 1
        first = xp.clip(xp.ceil(lo[:, self.position] - self.start - 1e-9), 0, top)
        last = xp.clip(xp.floor(hi[:, self.position] - self.start + 1e-9), first, top)
        return arrays.astype(xp, first, np.int64), arrays.astype(xp, last, np.int64)

    def extremes(self, first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each neuron's min and max (B, n1) over rows first..last."""
        xp = namespace(first)
        level = arrays.astype(xp, xp.floor(xp.log2(arrays.astype(xp, last - first + 1, np.float64))), np.int64)
        end = last - 2**level + 1
        shape = (first.shape[0], self.table.shape[1])
        t_min, t_max = arrays.empty(xp, shape, self.table), arrays.empty(xp, shape, self.table)
        for v in xp.unique(level):
            at, v = level == v, int(v)
            t_min[at] = xp.minimum(self.mins[v][first[at]], self.mins[v][end[at]])
            t_max[at] = xp.maximum(self.maxs[v][first[at]], self.maxs[v][end[at]])
        return t_min, t_max

    def held(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """(B, K) which rows each box holds."""
        k = arrays.arange(namespace(first), self.table.shape[0], first)
        return (k >= first[:, None]) & (k <= last[:, None])


@dataclass
class TwinNet:
    """A network seen from its free features, with one first-layer bias per twin."""

    w1: np.ndarray  # (n1, d) weights of the free inputs
    b1: np.ndarray  # (T, n1) bias per twin (bias + protected columns @ protected values)
    weights: list[np.ndarray]  # later layers (n_k, n_{k-1})
    biases: list[np.ndarray]
    #: Free inputs read through lookups.
    tables: tuple[Lookup, ...] = ()
    #: The hidden layers' smooth units (None for ReLU), one per hidden layer; empty if all ReLU.
    acts: tuple[Activation | None, ...] = ()

    @property
    def relu_only(self) -> bool:
        return not self.acts

    def act(self, k: int) -> Activation | None:
        """Hidden layer k's smooth unit (layer 0: the one after the first layer), None for ReLU."""
        return self.acts[k] if self.acts else None

    @classmethod
    def build(
        cls, network: ReluNetwork, free: list[int], protected: list[int], combos: np.ndarray, lookups: bool = False
    ) -> TwinNet:
        """The twins of `network`; with `lookups`, through its input tables where it has them."""
        if lookups and network.input_tables is not None and len(network.weights) > 2:
            return cls._from_tables(network, free, protected, combos)
        w = network.weights[0]
        b1 = network.biases[0][None, :] + combos @ w[:, protected].T if protected else network.biases[0][None, :]
        return cls(
            np.ascontiguousarray(w[:, free]),
            np.ascontiguousarray(b1),
            list(network.weights[1:]),
            list(network.biases[1:]),
            acts=network.activations,
        )

    @classmethod
    def _from_tables(cls, network: ReluNetwork, free: list[int], protected: list[int], combos: np.ndarray) -> TwinNet:
        it = network.input_tables
        assert it is not None  # `build` asks for the tables only where the network has them
        b1 = it.bias[None, :] + combos @ it.linear[:, protected].T
        tables = []
        for k, j in enumerate(it.columns):
            if j in protected:
                b1 = b1 + it.tables[k][it.rows(k, combos[:, protected.index(j)])]
            else:
                tables.append(Lookup(free.index(j), it.starts[k], it.tables[k]))
        return cls(
            np.ascontiguousarray(it.linear[:, free]),
            np.ascontiguousarray(b1),
            list(network.weights[2:]),
            list(network.biases[2:]),
            tuple(tables),
            network.activations[1:],
        )

    def to(self, put: Callable[[np.ndarray], Any]) -> TwinNet:
        """The same twins with every array moved by `put` (`arrays.Backend.put`: to a device)."""
        return TwinNet(
            put(self.w1),
            put(self.b1),
            [put(w) for w in self.weights],
            [put(b) for b in self.biases],
            tuple(Lookup(t.position, t.start, put(t.table)) for t in self.tables),
            self.acts,
        )

    @functools.cached_property
    def all_rows(self) -> np.ndarray:
        """(n1, rows of every table) the tables' rows side by side."""
        xp = namespace(self.w1)
        return xp.copy(xp.concatenate([t.table for t in self.tables]).T)

    @functools.cached_property
    def row_starts(self) -> np.ndarray:
        """Where each table's rows start in `all_rows`."""
        return np.cumsum([0] + [t.table.shape[0] for t in self.tables[:-1]])

    @property
    def n_twins(self) -> int:
        return self.b1.shape[0]

    @property
    def widths(self) -> list[int]:
        return [self.w1.shape[0]] + [w.shape[0] for w in self.weights]

    @functools.cached_property
    def single(self) -> TwinNet:
        """The same twins in float32: twice as fast, for searching pairs that are re-checked on the
        model (never for evidence)."""
        f = np.float32
        tables = tuple(Lookup(t.position, t.start, t.table.astype(f)) for t in self.tables)
        return TwinNet(
            self.w1.astype(f),
            self.b1.astype(f),
            [w.astype(f) for w in self.weights],
            [b.astype(f) for b in self.biases],
            tables,
            self.acts,
        )

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Concrete logits (n, T) of free points x (n, d) for every twin, in the weights' precision,
        in blocks of at most `LOGIT_VALUES` hidden values: memory a process touches for the first
        time is slow (a first batch of 50,000 points took far longer than the next), and a block's
        arrays fit the memory its predecessor freed."""
        xp = namespace(x)
        n, T = x.shape[0], self.n_twins
        block = max(1, LOGIT_VALUES // (T * max(self.widths)))
        if n > block:
            return xp.concatenate([self.logits(x[s : s + block]) for s in range(0, n, block)])
        z = (x.astype(self.w1.dtype, copy=False) if xp is np else x) @ self.w1.T  # a device's x is float64
        for t in self.tables:
            z += t.table[t.span(x, x)[0]]
        h = (z[:, None, :] + self.b1[None, :, :]).reshape(n * T, self.w1.shape[0])  # n may be 0
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            act = self.act(k)
            if act is None:
                h = xp.maximum(h, 0.0, out=h)
            elif xp is np:
                h = act(h).astype(h.dtype, copy=False)
            else:  # the unit's own numpy code, on the host: one definition of each unit
                h = arrays.like(act(arrays.to_numpy(h)), h)
            h = h @ w.T + b
        return h[:, 0].reshape(n, T)


@dataclass
class TwinBounds:
    """Bounds for B boxes x T twins, and each input's weight in the bounds' linear forms."""

    lower: np.ndarray  # (B, T)
    upper: np.ndarray  # (B, T)
    sens: np.ndarray  # (B, d): sum over twins of |coefficient| in the lower and upper forms
    score: np.ndarray  # (B, d): sens x width, how much each feature's range widens the bounds
    #: Linear forms valid over each box: f >= a[0].x + c[0] and -f >= a[1].x + c[1].
    form_a: np.ndarray  # (2, B, T, d)
    form_c: np.ndarray  # (2, B, T)
    #: With `keep_hidden`: pre-activation bounds (l, u) of every hidden layer, each (B, T, n_k).
    hidden: list[tuple[np.ndarray, np.ndarray]] | None = None

    def to_numpy(self) -> TwinBounds:
        """These bounds as numpy arrays (from a device; the hidden layers' bounds dropped)."""
        host = arrays.to_numpy
        return TwinBounds(
            host(self.lower), host(self.upper), host(self.sens), host(self.score), host(self.form_a), host(self.form_c)
        )

    def rows(self, at: Any) -> TwinBounds:
        """The bounds of boxes `at` (indices, on the bounds' device), hidden layers dropped."""
        return TwinBounds(
            self.lower[at], self.upper[at], self.sens[at], self.score[at], self.form_a[:, at], self.form_c[:, at]
        )

    @staticmethod
    def joined(parts: list[TwinBounds]) -> TwinBounds:
        """The bounds of consecutive batches of boxes as one (their hidden layers dropped), on
        their device."""
        if len(parts) == 1:
            return parts[0]
        cat = namespace(parts[0].lower).concatenate
        return TwinBounds(
            cat([p.lower for p in parts]),
            cat([p.upper for p in parts]),
            cat([p.sens for p in parts]),
            cat([p.score for p in parts]),
            cat([p.form_a for p in parts], axis=1),
            cat([p.form_c for p in parts], axis=1),
        )


def _conc(eq: np.ndarray, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min and max over each row's box of linear forms eq (M, d+1, n) (last row = constant)."""
    xp = namespace(eq)
    d = mid.shape[1]
    centre = xp.matmul(mid[:, None, :], eq[:, :d, :])[:, 0, :] + eq[:, d, :]
    spread = xp.matmul(rad[:, None, :], xp.abs(eq[:, :d, :]))[:, 0, :]
    return centre - spread, centre + spread


def bound_twins(
    net: TwinNet, lo: np.ndarray, hi: np.ndarray, tight: bool = False, keep_hidden: bool = False
) -> TwinBounds:
    """Sound lower/upper bounds of every twin's logit over each box [lo, hi] (B, d).

    `tight` also tightens every hidden layer's pre-activation bounds by back-substitution
    (full CROWN) before the final backward pass; worth it on deep, narrow networks.

    The arrays may be numpy's or torch tensors (`arrays`): `net`'s, lo's and hi's alike.
    """
    xp = namespace(lo)
    B, d = lo.shape
    T = net.n_twins
    memo: list = []  # smooth units' lines, computed once per layer's bounds (`_lines`)
    mid = (lo + hi) * 0.5
    rad = (hi - lo) * 0.5
    spans = [t.span(lo, hi) for t in net.tables]
    # layer 1: exact pre-activation bounds, shared linear form, per-twin constant
    c1 = mid @ net.w1.T
    r1 = rad @ xp.abs(net.w1).T
    low1, up1 = c1 - r1, c1 + r1
    if net.tables:  # each table adds its min and max over the box's rows
        t_min, t_max = xp.zeros_like(c1), xp.zeros_like(c1)
        for t, span in zip(net.tables, spans):
            a, b = t.extremes(*span)
            t_min += a
            t_max += b
        low1 += t_min
        up1 += t_max
    l = low1[:, None, :] + net.b1[None]  # (B, T, n1)
    u = up1[:, None, :] + net.b1[None]
    l = l.reshape(B * T, -1)
    u = u.reshape(B * T, -1)
    pre = [(l, u)]
    midm = xp.repeat(mid, T, axis=0)
    radm = xp.repeat(rad, T, axis=0)
    rowsm = [xp.repeat(t.held(*span), T, axis=0) for t, span in zip(net.tables, spans)]
    if net.weights:
        # the tables enter the forms as constants (their min in the lower form, max in the upper):
        # indicators per table row would keep them exact but cost a symbolic variable per row
        low = arrays.empty(xp, (B * T, d + 1, l.shape[1]), lo)
        low[:, :d, :] = net.w1.T[None]
        low[:, d, :] = xp.tile(net.b1, (B, 1))
        up = xp.copy(low)
        lu, ul = l, u  # min of the upper form, max of the lower form
        if net.tables:
            low[:, d, :] += xp.repeat(t_min, T, axis=0)
            up[:, d, :] += xp.repeat(t_max, T, axis=0)
            spread = xp.repeat(t_max - t_min, T, axis=0)
            lu, ul = l + spread, u - spread
        up, low = _relax_layer(net, 0, up, low, l, u, lu, ul, memo)
        for k, (w, b) in enumerate(zip(net.weights, net.biases)):
            c = up + low
            c *= 0.5
            r = xp.subtract(up, low, out=up)
            r *= 0.5
            del low
            M, n_rows, n_prev = c.shape
            c = (c.reshape(-1, n_prev) @ w.T).reshape(M, n_rows, -1)
            r = (r.reshape(-1, n_prev) @ xp.abs(w).T).reshape(M, n_rows, -1)
            c[:, d, :] += b
            low = c - r
            up = xp.add(c, r, out=c)
            del c, r
            l, ul = _conc(low, midm, radm)
            lu, u = _conc(up, midm, radm)
            if k == len(net.weights) - 1:
                f_low, f_up = l[:, 0], u[:, 0]
            else:
                pre.append((l, u))
                up, low = _relax_layer(net, k + 1, up, low, l, u, lu, ul, memo)
    else:
        f_low, f_up = l[:, 0], u[:, 0]
    if tight and len(pre) > 1:
        tighten(net, pre, midm, radm, rowsm, memo)
    b_low, b_up, coef, const, spreads = _backward(net, pre, midm, radm, rowsm, memo=memo)
    lower = xp.maximum(f_low, b_low).reshape(B, T)
    upper = xp.minimum(f_up, b_up).reshape(B, T)
    # both assume ReLUs, and numpy arrays
    if OPTIMISED_SLOPES and net.weights and net.relu_only and xp is np:
        lower, upper = _optimised(net, lo, hi, pre, rowsm, lower, upper)
    if RELATIONAL and T > 1 and net.weights and net.relu_only and xp is np:
        lower, upper = _relational(net, pre, lower, upper, B, T)
    sens = xp.abs(coef).reshape(2, B, T, d).sum(axis=(0, 2))
    for t, spread in zip(net.tables, spreads):  # a looked-up column widens the bounds by its spread
        p = t.position
        xp.divide(
            spread.reshape(2, B, T).sum(axis=(0, 2)), hi[:, p] - lo[:, p], out=sens[:, p], where=hi[:, p] > lo[:, p]
        )
    hidden = [(pl.reshape(B, T, -1), pu.reshape(B, T, -1)) for pl, pu in pre] if keep_hidden else None
    return TwinBounds(lower, upper, sens, sens * (hi - lo), coef.reshape(2, B, T, d), const.reshape(2, B, T), hidden)


#: Optimise the backward pass's lower relaxation slopes for boxes the fixed slopes leave undecided
#: (`slopes.optimise`, alpha-CROWN). Off: measured on FairQuant's models and the practitioner MLPs
#: it decides fewer boxes per second than splitting (`benchmarks/results/bounds.md`).
OPTIMISED_SLOPES = False


def _optimised(net: TwinNet, lo, hi, pre, rowsm, lower: np.ndarray, upper: np.ndarray):
    """The bounds of the boxes not decided by the fixed slopes, with optimised slopes."""
    from . import slopes

    T = net.n_twins
    open_ = np.flatnonzero(~(np.all(lower > 0, axis=1) | np.all(upper < 0, axis=1)))
    if not open_.size:
        return lower, upper
    rows = (open_[:, None] * T + np.arange(T)).reshape(-1)
    lower, upper = lower.copy(), upper.copy()
    lower[open_], upper[open_] = slopes.optimise(
        net,
        lo[open_],
        hi[open_],
        [(l[rows], u[rows]) for l, u in pre],
        [h[rows] for h in rowsm],
        lower[open_],
        upper[open_],
    )
    return lower, upper


#: Intersect the twins' bounds with those of their differences (`_relational`). Off: measured on
#: FairQuant's models it decides about as much as it costs (`benchmarks/results/bounds.md`).
RELATIONAL = False


def _relational(
    net: TwinNet, pre, lower: np.ndarray, upper: np.ndarray, B: int, T: int
) -> tuple[np.ndarray, np.ndarray]:
    """The twins' logit bounds intersected with those their differences give (ReluDiff-style).

    Twin t and twin 0 share every free input, so their first layers differ by the constant
    b1[t] - b1[0]. Each ReLU maps a difference d = z_t - z_0 to one between 0 and d (it is
    monotone and 1-Lipschitz), exactly d where both twins are active and 0 where both are
    inactive; later layers map the difference interval by their weights alone. Where the
    independent bounds are loose, z_t >= z_0 + min difference (and so on) decides boxes they
    leave open."""
    dl = np.broadcast_to(net.b1 - net.b1[:1], (B, T, net.b1.shape[1]))
    du = dl
    for k, (w, _) in enumerate(zip(net.weights, net.biases)):
        l, u = (x.reshape(B, T, -1) for x in pre[k])
        l0, u0 = l[:, :1], u[:, :1]
        relu = functools.partial(np.maximum, 0.0)
        rl = np.maximum(np.minimum(dl, 0.0), relu(l) - relu(u0))
        ru = np.minimum(np.maximum(du, 0.0), relu(u) - relu(l0))
        both_on = (l >= 0) & (l0 >= 0)
        both_off = (u <= 0) & (u0 <= 0)
        rl = np.where(both_on, np.maximum(rl, dl), np.where(both_off, 0.0, rl))
        ru = np.where(both_on, np.minimum(ru, du), np.where(both_off, 0.0, ru))
        centre = ((rl + ru) * 0.5) @ w.T
        radius = ((ru - rl) * 0.5) @ np.abs(w).T
        # the biases cancel; a relative margin covers the float rounding of both passes
        pad = 1e-12 * (np.abs(centre) + radius) + 1e-300
        dl, du = centre - radius - pad, centre + radius + pad
    dl, du = dl[..., 0], du[..., 0]  # (B, T): bounds of logit_t - logit_0
    low0, up0 = lower[:, :1], upper[:, :1]
    new_lower = np.maximum(lower, low0 + dl)
    new_upper = np.minimum(upper, up0 + du)
    new_lower[:, 0] = np.maximum(lower[:, 0], (lower - du).max(axis=1))
    new_upper[:, 0] = np.minimum(upper[:, 0], (upper - dl).min(axis=1))
    return new_lower, new_upper


def _relax_layer(net: TwinNet, k: int, up, low, l, u, lu, ul, memo: list | None = None):
    """Hidden layer k's units applied to the upper and lower forms of their pre-activations."""
    xp = namespace(up)
    act = net.act(k)
    if act is None:
        return _relax(up, low, l, u, lu, ul)
    sl, bl, su, bu = _lines(act, l, u, memo)
    if xp.all(sl >= 0) and xp.all(su >= 0):  # increasing lines (always, for a monotone unit)
        up *= su[:, None, :]
        low *= sl[:, None, :]
        new_up, new_low = up, low
    else:  # a line with a negative slope turns the other form's bound into this one's
        new_up = up * xp.maximum(su, 0.0)[:, None, :] + low * xp.minimum(su, 0.0)[:, None, :]
        new_low = low * xp.maximum(sl, 0.0)[:, None, :] + up * xp.minimum(sl, 0.0)[:, None, :]
    d = up.shape[1] - 1
    new_up[:, d, :] += bu
    new_low[:, d, :] += bl
    return new_up, new_low


def _relax(up, low, l, u, lu, ul, inplace=True):
    """Neurify relaxation of ReLU on the two linear forms (as in FairQuant's forward pass).

    l/u: concrete bounds of the lower/upper form's min/max; lu = min of the upper form,
    ul = max of the lower form.
    """
    xp = namespace(u)
    inactive = u <= 0
    unstable = (l < 0) & ~inactive
    chord = unstable & (lu < 0)
    su = xp.ones_like(u)
    xp.divide(u, u - lu, out=su, where=chord)
    su[inactive] = 0.0
    ou = xp.where(chord, -su * lu, 0.0)
    sl = xp.ones_like(u)
    lin = unstable & (ul > 0)
    xp.divide(ul, ul - l, out=sl, where=lin)
    sl[inactive | (unstable & ~lin)] = 0.0
    d = up.shape[1] - 1
    if inplace:
        up *= su[:, None, :]
        low *= sl[:, None, :]
    else:
        up = up * su[:, None, :]
        low = low * sl[:, None, :]
    up[:, d, :] += ou
    return up, low


def crown_with_losses(net: TwinNet, pre, midm, radm, rowsm) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """CROWN's lower and upper logit bounds (M,) given pre-activation bounds of every hidden layer,
    and what each hidden neuron's upper relaxation costs them (M, n_k) per layer: its intercept
    times the coefficient that back-substitution gives it, summed over both bounds (BaBSR's score)."""
    losses: list[np.ndarray] = []
    low, up, _, _, _ = _backward(net, pre, midm, radm, rowsm, losses)
    return low, up, losses


def _backward(net: TwinNet, pre, midm, radm, rowsm, losses: list | None = None, memo: list | None = None):
    """CROWN-style bounds of the logit given pre-activation bounds of every hidden layer, their
    linear forms, and each table's spread (2M,) in them (`losses`: see `crown_with_losses`)."""
    xp = namespace(midm)
    M = midm.shape[0]
    T = net.n_twins
    if not net.weights:  # built without tables (they need a hidden layer)
        w = xp.broadcast_to(net.w1[0], (M, net.w1.shape[1]))
        const = xp.tile(net.b1[:, 0], M // T)
        centre = xp.einsum("md,md->m", midm, w) + const
        spread = radm @ xp.abs(net.w1[0])
        return (centre - spread, centre + spread, xp.concatenate([w, -w], axis=0), xp.concatenate([const, -const]), [])
    w_out, b_out = net.weights[-1], net.biases[-1]
    lam = xp.concatenate(
        [xp.broadcast_to(w_out, (M, 1, w_out.shape[1])), xp.broadcast_to(-w_out, (M, 1, w_out.shape[1]))]
    )
    bias = b_out[:1]  # the logit's bias (1,)
    const = xp.concatenate([xp.broadcast_to(bias, (M, 1)), xp.broadcast_to(-bias, (M, 1))])
    val, lam, const, spreads = _crown(net, pre, len(pre) - 1, lam, const, midm, radm, rowsm, True, losses, memo)
    return val[:M, 0], -val[M:, 0], lam[:, 0, :], const[:, 0], [s[:, 0] for s in spreads]


def _crown(net: TwinNet, pre, top: int, lam, const, midm, radm, rowsm, spread: bool = False, losses=None, memo=None):
    """Back-substitute linear functions of hidden layer `top`'s outputs down to the inputs.

    lam (2M, K, n_top), const (2M, K): rows 0..M-1 are lower-bounded as given, rows M..2M-1 are
    the negated functions (so their lower bound is minus an upper bound). Returns the lower bounds
    (2M, K), the final linear forms in the free inputs (tables' minima in the constant) and, with
    `spread`, each table's spread (2M, K) over the rows' boxes. A `losses` list receives, layer by
    layer, what each neuron's upper relaxation intercept lowers the bounds by (M, n_k).
    """
    xp = namespace(midm)
    M = midm.shape[0]
    T = net.n_twins
    layers = [(None, None)] + list(zip(net.weights[:-1], net.biases[:-1]))
    for k in range(top, -1, -1):
        l, u = pre[k]
        act = net.act(k)
        if act is not None:
            lam, const = _back_smooth(act, l, u, lam, const, M, memo)
            if losses is not None:
                losses.insert(0, namespace(l).zeros_like(l))
        else:
            lam, const = _back_relu(l, u, lam, const, M, losses)
        if k == 0:
            const = const + xp.einsum("mkn,mn->mk", lam, xp.tile(net.b1, (2 * M // T, 1)))
            spreads = []
            if net.tables:  # every table at once: rows side by side, min and max per table
                vals = lam @ net.all_rows  # (2M, K, rows of all tables)
                outside = ~xp.concatenate([xp.concatenate(rowsm, axis=1)] * 2)[:, None, :]
                if spread:
                    high = arrays.segment_max(xp, xp.where(outside, -np.inf, vals), net.row_starts, axis=2)
                xp.copyto(vals, np.inf, where=outside)
                low = arrays.segment_min(xp, vals, net.row_starts, axis=2)
                const = const + low.sum(axis=2)
                if spread:
                    spreads = list(xp.moveaxis(high - low, 2, 0))
            lam = lam @ net.w1
        else:
            w, b = layers[k]
            const = const + lam @ b
            lam = lam @ w
    mid2 = xp.concatenate([midm, midm])[:, None, :]
    rad2 = xp.concatenate([radm, radm])[:, None, :]
    val = (lam * mid2).sum(axis=2) - (xp.abs(lam) * rad2).sum(axis=2) + const
    return val, lam, const, spreads


def _back_relu(l, u, lam, const, M: int, losses):
    """One ReLU layer of back-substitution (see `_crown`)."""
    xp = namespace(l)
    active = l >= 0
    unstable = (l < 0) & (u > 0)
    s = arrays.astype(xp, active, np.float64)
    xp.divide(u, u - l, out=s, where=unstable)
    a_low = arrays.astype(xp, xp.where(unstable, u > -l, active), np.float64)[:, None, :]
    icpt = xp.where(unstable, -s * l, 0.0)[:, None, :]
    s = s[:, None, :]
    K = lam.shape[1]
    lam2 = lam.reshape(2, M, K, -1)
    # negative coefficients take the upper relaxation (slope s, intercept), others the lower
    neg = xp.minimum(lam2, 0.0)
    const = const + xp.matmul(neg, arrays.permute(xp, icpt, (0, 2, 1))[None]).reshape(2 * M, K)
    if losses is not None:
        losses.insert(0, -(neg * icpt[None]).sum(axis=(0, 2)))
    neg *= s - a_low
    lam = xp.multiply(lam2, a_low, out=xp.empty_like(lam2))  # lam2's layout: the products below round as it does
    lam += neg
    return lam.reshape(2 * M, K, -1), const


def _lines(act: Activation, l: np.ndarray, u: np.ndarray, memo: list | None):
    """`curves.lines` of these bounds; `memo` keeps the bounds it was given (so their identity is
    theirs alone while it lives) with the lines, for the passes that meet the same bounds again."""
    if memo is not None:
        for ml, mu, found in memo:
            if ml is l and mu is u:
                return found
    if namespace(l) is np:
        found = curves.lines(act, l, u)
    else:  # the curves' own numpy code, on the host: one definition of each unit's lines
        found = tuple(arrays.like(v, l) for v in curves.lines(act, arrays.to_numpy(l), arrays.to_numpy(u)))
    if memo is not None:
        memo.append((l, u, found))
    return found


def _back_smooth(act: Activation, l, u, lam, const, M: int, memo: list | None = None):
    """One layer of smooth units: positive coefficients take the lower line, negative the upper."""
    xp = namespace(l)
    sl, bl, su, bu = _lines(act, l, u, memo)
    K = lam.shape[1]
    lam2 = lam.reshape(2, M, K, -1)
    pos, neg = xp.maximum(lam2, 0.0), xp.minimum(lam2, 0.0)
    const = const + (pos * bl[None, :, None, :] + neg * bu[None, :, None, :]).sum(axis=3).reshape(2 * M, K)
    lam = pos * sl[None, :, None, :] + neg * su[None, :, None, :]
    return lam.reshape(2 * M, K, -1), const


def tighten(net: TwinNet, pre, midm, radm, rowsm, memo: list | None = None) -> None:
    """Replace each hidden layer's pre-activation bounds by their intersection with CROWN's."""
    xp = namespace(midm)
    M = midm.shape[0]
    for k in range(1, len(pre)):
        w, b = net.weights[k - 1], net.biases[k - 1]
        lam = xp.concatenate([xp.broadcast_to(w, (M,) + tuple(w.shape)), xp.broadcast_to(-w, (M,) + tuple(w.shape))])
        const = xp.concatenate([xp.broadcast_to(b, (M, b.shape[0])), xp.broadcast_to(-b, (M, b.shape[0]))])
        val, _, _, _ = _crown(net, pre, k - 1, lam, const, midm, radm, rowsm, memo=memo)
        l, u = pre[k]
        pre[k] = (xp.maximum(l, val[:M]), xp.minimum(u, -val[M:]))


def crown_cost_ratio(net: TwinNet, d: int) -> float:
    """Cost of tightening intermediate bounds relative to the forward pass (multiply-adds)."""
    widths = net.widths
    forward = sum(widths[k] * widths[k - 1] for k in range(1, len(widths))) * (d + 1)
    back = 0
    for k in range(1, len(widths) - 1):
        back += widths[k] * (sum(widths[j] * widths[j - 1] for j in range(1, k + 1)) + widths[0] * d)
    return back / max(forward, 1)
