"""Optimised relaxation slopes (alpha-CROWN) for the logit bound of every twin.

The backward pass (`symbolic._crown`) relaxes an unstable ReLU from below by a line through the
origin of slope 0 or 1 (whichever the bounds favour). Any slope in [0, 1] is sound, so each box's
slopes can be chosen to maximise the bound: projected gradient ascent (Adam) on the slopes of the
final bound, the hidden layers' pre-activation bounds held fixed. Every iterate is a valid bound;
the best one per row is kept and intersected with the fixed-slope bounds.

Needs torch (the `torch` extra); without it the bounds are returned unchanged.
"""

from __future__ import annotations

import numpy as np

#: Gradient steps per batch of boxes, and the step size on the slopes.
ITERATIONS = 20
STEP = 0.1


def available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def optimise(
    net,
    lo: np.ndarray,
    hi: np.ndarray,
    hidden,
    rows_held,
    lower: np.ndarray,
    upper: np.ndarray,
    iterations: int = ITERATIONS,
) -> tuple[np.ndarray, np.ndarray]:
    """Tighter twin logit bounds (B, T) over boxes [lo, hi] (B, d) of a `symbolic.TwinNet`, given
    its hidden layers' pre-activation bounds `hidden` [(l, u) each (B*T, n_k)], each table's rows
    held by each box `rows_held` [(B*T, rows)], and the fixed-slope bounds `lower`, `upper`."""
    if not available() or not net.weights:
        return lower, upper
    import torch

    B, T = lower.shape
    M = B * T
    f64 = torch.float64
    mid = torch.as_tensor(np.repeat((lo + hi) * 0.5, T, axis=0)).repeat(2, 1)
    rad = torch.as_tensor(np.repeat((hi - lo) * 0.5, T, axis=0)).repeat(2, 1)
    pre = [(torch.as_tensor(l).repeat(2, 1), torch.as_tensor(u).repeat(2, 1)) for l, u in hidden]
    weights = [torch.as_tensor(w) for w in net.weights]
    biases = [torch.as_tensor(b) for b in net.biases]
    w1 = torch.as_tensor(net.w1)
    b1 = torch.as_tensor(np.tile(net.b1, (2 * B, 1)))
    tables = [
        (torch.as_tensor(t.table.T.copy()), torch.as_tensor(np.concatenate([h, h])))
        for t, h in zip(net.tables, rows_held)
    ]
    sign = torch.cat([torch.ones(M, dtype=f64), -torch.ones(M, dtype=f64)])
    fixed = []  # per layer: (unstable, slope of the upper line, its intercept, the slope where stable)
    slopes = []
    for l, u in pre:
        unstable = (l < 0) & (u > 0)
        active = (l >= 0).to(f64)
        s = torch.where(unstable, u / torch.where(unstable, u - l, torch.ones_like(u)), active)
        fixed.append((unstable, s, torch.where(unstable, -s * l, torch.zeros_like(l)), active))
        slopes.append((u > -l).to(f64).requires_grad_(True))  # the fixed pass's choice to start from
    opt = torch.optim.Adam(slopes, lr=STEP)
    best = torch.full((2 * M,), -np.inf, dtype=f64)
    for _ in range(iterations):
        lam = sign[:, None] * weights[-1][0][None, :]
        const = sign * biases[-1][0]
        for k in range(len(pre) - 1, -1, -1):
            unstable, s, icpt, active = fixed[k]
            a = torch.where(unstable, slopes[k].clamp(0.0, 1.0), active)
            neg = lam.clamp(max=0.0)
            const = const + (neg * icpt).sum(1)
            lam = lam.clamp(min=0.0) * a + neg * s
            if k == 0:
                const = const + (lam * b1).sum(1)
                for table, held in tables:  # each table's worst row among those the box holds
                    vals = lam @ table
                    const = const + torch.where(held, vals, torch.full_like(vals, np.inf)).min(1).values
                lam = lam @ w1
            else:
                const = const + lam @ biases[k - 1]
                lam = lam @ weights[k - 1]
        value = (lam * mid).sum(1) - (lam.abs() * rad).sum(1) + const
        best = torch.maximum(best, value.detach())
        opt.zero_grad()
        (-value.sum()).backward()
        opt.step()
        with torch.no_grad():
            for a in slopes:
                a.clamp_(0.0, 1.0)
    best = best.numpy()
    return np.maximum(lower, best[:M].reshape(B, T)), np.minimum(upper, -best[M:].reshape(B, T))
