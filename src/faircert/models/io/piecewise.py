"""Piecewise-linear units as sums of ReLUs, exact: leaky ReLU, PReLU, ReLU6, hard tanh, Clip.

A unit f(z) = const + sum_i coef_i relu(sign_i z + offset_i) after a layer z = W x + b becomes one
layer of ReLUs, piece i with weights sign_i W and bias sign_i b + offset_i, and the next layer reads
piece i through its weights times coef_i (plus its weights times const in its bias). Every engine
for ReLU networks then takes the unit, the MILP included, with no relaxation of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ModelFormatError


@dataclass(frozen=True)
class Piecewise:
    """const + sum_i coef_i relu(sign_i z + offset_i); offsets, coefs and const are scalars or one
    value per neuron."""

    name: str
    signs: tuple[float, ...]
    offsets: tuple[np.ndarray, ...]
    coefs: tuple[np.ndarray, ...]
    const: np.ndarray

    def __str__(self) -> str:
        return self.name

    def __call__(self, z: np.ndarray) -> np.ndarray:
        out = np.zeros_like(z) + self.const
        for s, o, c in zip(self.signs, self.offsets, self.coefs):
            out = out + c * np.maximum(s * z + o, 0.0)
        return out


def _arrays(*values) -> tuple[np.ndarray, ...]:
    out = tuple(np.asarray(v, dtype=np.float64).reshape(-1) for v in values)
    if not all(np.all(np.isfinite(v)) for v in out):
        raise ModelFormatError("a piecewise-linear unit has non-finite parameters")
    return out


def leaky_unit(slope) -> Piecewise:
    """max(z, 0) + slope min(z, 0) = relu(z) - slope relu(-z), for any slope (PReLU: one per neuron)."""
    (a,) = _arrays(slope)
    return Piecewise("leaky ReLU", (1.0, -1.0), _arrays(0.0, 0.0), (np.ones(1), -a), np.zeros(1))


def clip_unit(low: float | None, high: float | None, slope: float = 0.0) -> Piecewise:
    """min(max(z, low), high) (hard tanh, ReLU6, Clip; either end may be open); with `slope`, a
    leaky ReLU capped at `high` (Keras' ReLU with max_value and negative_slope, low = 0)."""
    if low is not None and high is not None and not low < high:
        raise ModelFormatError(f"a clip to [{low}, {high}] is empty or a constant")
    if low is None and high is None:
        raise ModelFormatError("a clip with neither end")
    if slope and low != 0.0:
        raise ModelFormatError("a leaky unit clipped below at a point other than 0")
    pieces: list[tuple[float, float, float]] = []  # (sign, offset, coef)
    if low is None:  # min(z, high) = high - relu(high - z)
        assert high is not None  # (checked above)
        pieces, const = [(-1.0, float(high), -1.0)], float(high)
    else:  # low + relu(z - low) - relu(z - high)
        pieces, const = [(1.0, -float(low), 1.0)], float(low)
        if high is not None:
            pieces.append((1.0, -float(high), -1.0))
        if slope:  # below low = 0: slope z = -slope relu(-z)
            pieces.append((-1.0, 0.0, -float(slope)))
    signs = tuple(p[0] for p in pieces)
    offsets = _arrays(*(p[1] for p in pieces))
    coefs = _arrays(*(p[2] for p in pieces))
    name = "ReLU6" if (low, high) == (0.0, 6.0) and not slope else "clip"
    return Piecewise(name, signs, offsets, coefs, _arrays(const)[0])


def as_relus(
    weight: np.ndarray, bias: np.ndarray, unit: Piecewise, next_weight: np.ndarray, next_bias: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W, b) then the unit then (W', b') as (W_relu, b_relu) then ReLU then (W'', b''), exactly."""
    n = weight.shape[0]
    for v in unit.offsets + unit.coefs + (unit.const,):
        if v.size not in (1, n):
            raise ModelFormatError(f"a unit with {v.size} parameters after a layer of {n} neurons")
    w = np.vstack([s * weight for s in unit.signs])
    b = np.concatenate([s * bias + np.broadcast_to(o, (n,)) for s, o in zip(unit.signs, unit.offsets)])
    w_next = np.hstack([next_weight * np.broadcast_to(c, (n,))[None, :] for c in unit.coefs])
    b_next = next_bias + next_weight @ np.broadcast_to(unit.const, (n,))
    return w, b, w_next, b_next
