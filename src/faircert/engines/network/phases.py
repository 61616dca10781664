"""Neuron splitting: proving boxes fair by branching on the phases of unstable ReLUs.

A box the bounds leave open is cut into subdomains by fixing one unstable neuron of one twin to
active (pre-activation >= 0) or inactive (<= 0). On a subdomain that neuron's bounds become
[max(l, 0), u] or [l, min(u, 0)], so its relaxation is exact, and every later layer is re-bounded
by back-substitution (full CROWN) over the box with those bounds. The bounds hold on the subdomain,
and the subdomains of a box cover it.

A subdomain is closed when every twin's logit is provably positive on it, or every one provably
negative. Without epsilon that is fairness point by point, so each subdomain may close on either
side; with epsilon the box stands for the epsilon-window, whose twins must all keep one sign, so
every subdomain must close on the same side. The neuron to split is the one whose relaxation costs
the bounds most (its upper relaxation's intercept times the back-substituted coefficient, as in
BaBSR). A box with more than `max_domains` subdomains, or a subdomain with nothing left to split,
is left to the caller (the MILP).
"""

from __future__ import annotations

import numpy as np

from .symbolic import TwinNet, bound_twins, crown_with_losses, tighten

MAX_DOMAINS = 64  # subdomains per box before it is left to the MILP
BATCH = 512  # subdomains bounded at once


def prove_by_phases(
    net: TwinNet, lo: np.ndarray, hi: np.ndarray, tol: float, same_side: bool, max_domains: int = MAX_DOMAINS
) -> np.ndarray:
    """Which boxes [lo, hi] (B, d) are proven fair: on each subdomain every twin's logit above
    `tol` or every one below -`tol` (on one side for the whole box with `same_side`)."""
    B = lo.shape[0]
    proven = np.zeros(B, dtype=bool)
    if not B or not net.weights or not net.relu_only:  # phases are ReLUs' on and off
        return proven
    base = bound_twins(net, lo, hi, tight=True, keep_hidden=True)
    assert base.hidden is not None  # asked for with keep_hidden
    # open subdomains: their box, the phases fixed so far (+1 active, -1 inactive, 0 free) and bounds
    box = np.arange(B)
    phases = [np.zeros(l.shape, dtype=np.int8) for l, _ in base.hidden]
    lower, upper = base.lower, base.upper
    count = np.ones(B, dtype=np.int64)
    sides = np.zeros((B, 2), dtype=bool)  # the sides (positive, negative) a box's subdomains closed on
    failed = np.zeros(B, dtype=bool)
    while box.size:
        pos = np.all(lower > tol, axis=1)
        neg = np.all(upper < -tol, axis=1)
        np.logical_or.at(sides[:, 0], box[pos], True)
        np.logical_or.at(sides[:, 1], box[neg], True)
        keep = ~(pos | neg) & ~failed[box]
        box, lower, upper = box[keep], lower[keep], upper[keep]
        phases = [p[keep] for p in phases]
        if not box.size:
            break
        pre = [
            (np.where(p > 0, np.maximum(l[box], 0.0), l[box]), np.where(p < 0, np.minimum(u[box], 0.0), u[box]))
            for p, (l, u) in zip(phases, base.hidden)
        ]
        new_lower, new_upper, losses, pre = _bounds(net, lo[box], hi[box], pre)
        lower, upper = np.maximum(lower, new_lower), np.minimum(upper, new_upper)
        decided = np.all(lower > tol, axis=1) | np.all(upper < -tol, axis=1)
        layer, twin, neuron, score = _choice(losses, pre)
        stuck = ~decided & (score <= 0)
        failed[box[stuck]] = True
        split = ~decided & ~stuck
        room = count[box] + 1 <= max_domains
        failed[box[split & ~room]] = True
        split &= room & ~failed[box]
        np.add.at(count, box[split], 1)
        rows = np.flatnonzero(split)
        children = []
        for sign in (1, -1):
            child = [p[rows].copy() for p in phases]
            for k in np.unique(layer[rows]):
                at = layer[rows] == k
                child[k][np.flatnonzero(at), twin[rows][at], neuron[rows][at]] = sign
            children.append(child)
        done = decided
        box = np.concatenate([box[done], box[rows], box[rows]])
        lower = np.concatenate([lower[done], lower[rows], lower[rows]])
        upper = np.concatenate([upper[done], upper[rows], upper[rows]])
        phases = [np.concatenate([p[done], a, b]) for p, a, b in zip(phases, *children)]
    proven = ~failed
    if same_side:
        proven &= ~(sides[:, 0] & sides[:, 1])
    return proven


def _bounds(net: TwinNet, lo: np.ndarray, hi: np.ndarray, pre: list[tuple[np.ndarray, np.ndarray]]):
    """Twin logit bounds (S, T) over boxes with the given pre-activation bounds (S, T, n_k), each
    hidden neuron's relaxation loss (S, T, n_k) and the tightened pre-activation bounds."""
    S, T = lo.shape[0], net.n_twins
    mid, rad = (lo + hi) * 0.5, (hi - lo) * 0.5
    midm, radm = np.repeat(mid, T, axis=0), np.repeat(rad, T, axis=0)
    rowsm = [np.repeat(t.held(*t.span(lo, hi)), T, axis=0) for t in net.tables]
    flat = [(l.reshape(S * T, -1), u.reshape(S * T, -1)) for l, u in pre]
    tighten(net, flat, midm, radm, rowsm)
    low, up, losses = crown_with_losses(net, flat, midm, radm, rowsm)
    shaped = [(l.reshape(S, T, -1), u.reshape(S, T, -1)) for l, u in flat]
    return low.reshape(S, T), up.reshape(S, T), [x.reshape(S, T, -1) for x in losses], shaped


def _choice(losses: list[np.ndarray], pre) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per subdomain, the (layer, twin, neuron) of the unstable ReLU that costs the bounds most."""
    S = losses[0].shape[0]
    best = np.full(S, -np.inf)
    layer, twin, neuron = (np.zeros(S, dtype=np.int64) for _ in range(3))
    for k, (loss, (l, u)) in enumerate(zip(losses, pre)):
        score = np.where((l < 0) & (u > 0), loss, -np.inf).reshape(S, -1)
        j = np.argmax(score, axis=1)
        s = score[np.arange(S), j]
        better = s > best
        best = np.where(better, s, best)
        layer[better] = k
        twin[better], neuron[better] = np.divmod(j[better], loss.shape[2])
    return layer, twin, neuron, best
