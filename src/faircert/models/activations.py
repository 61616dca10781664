"""Smooth hidden activations of a network: tanh, sigmoid, GELU, SiLU and ELU.

ReLU is the IR's default and piecewise-linear units (leaky ReLU, identity, ReLU6, hard tanh) are
rewritten into ReLUs exactly by the importers (`affine_chain`); what is left here are the units
whose bounds need curves. Each is described by what sound bounding needs: the function, its
derivative, the points where the derivative stops being monotone (inflections, kinks) and a bound
on the second derivative between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import erf, expit

from ..errors import ModelFormatError

_SQRT2 = math.sqrt(2.0)
_PHI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + erf(z / _SQRT2))


def _gelu_d(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + erf(z / _SQRT2)) + z * _PHI * np.exp(-0.5 * z * z)


def _silu_d(z: np.ndarray) -> np.ndarray:
    s = expit(z)
    return s * (1.0 + z * (1.0 - s))


@dataclass(frozen=True)
class Activation:
    """One smooth unit; `alpha` is ELU's scale (ELU(z) = alpha (e^z - 1) for z < 0)."""

    name: str
    alpha: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in SMOOTH:
            raise ModelFormatError(f"activation {self.name!r} is not supported (supported: {', '.join(SMOOTH)})")
        if self.name == "elu" and not (math.isfinite(self.alpha) and self.alpha >= 0.0):
            raise ModelFormatError(f"ELU with alpha={self.alpha} is not supported (alpha must be >= 0)")

    def __str__(self) -> str:
        return f"elu(alpha={self.alpha:g})" if self.name == "elu" else self.name

    def __call__(self, z: np.ndarray) -> np.ndarray:
        if self.name == "tanh":
            return np.tanh(z)
        if self.name == "sigmoid":
            return expit(z)
        if self.name == "gelu":
            return _gelu(z)
        if self.name == "silu":
            return z * expit(z)
        return np.where(z > 0, z, self.alpha * np.expm1(np.minimum(z, 0.0)))

    def derivative(self, z: np.ndarray) -> np.ndarray:
        if self.name == "tanh":
            t = np.tanh(z)
            return 1.0 - t * t
        if self.name == "sigmoid":
            s = expit(z)
            return s * (1.0 - s)
        if self.name == "gelu":
            return _gelu_d(z)
        if self.name == "silu":
            return _silu_d(z)
        return np.where(z > 0, 1.0, self.alpha * np.exp(np.minimum(z, 0.0)))

    @property
    def breaks(self) -> tuple[float, ...]:
        """Points between which the derivative is monotone (it may jump at a kink)."""
        return _BREAKS[self.name]

    @property
    def curvature(self) -> float:
        """An upper bound on |f''| away from the breaks."""
        return self.alpha if self.name == "elu" else _CURVATURE[self.name]

    def interval(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sound range of the unit over [lo, hi] (ends may be infinite), padded outward for rounding:
        every unit here is increasing, or decreasing then increasing around one minimum."""
        with np.errstate(invalid="ignore", over="ignore"):
            f_lo, f_hi = self._at(lo), self._at(hi)
        low, high = np.minimum(f_lo, f_hi), np.maximum(f_lo, f_hi)
        if self.name in _MINIMUM:
            at, value = _MINIMUM[self.name]
            low = np.where((lo <= at) & (at <= hi), value, low)
        pad = 1e-12 * (1.0 + np.abs(low)), 1e-12 * (1.0 + np.abs(high))
        return low - pad[0], high + pad[1]

    def _at(self, z: np.ndarray) -> np.ndarray:
        """The unit at z, with its limits at +-inf."""
        finite = np.where(np.isfinite(z), z, 0.0)
        out = self(finite)
        lim_neg = {"tanh": -1.0, "sigmoid": 0.0, "gelu": 0.0, "silu": 0.0, "elu": -self.alpha}[self.name]
        lim_pos = 1.0 if self.name in ("tanh", "sigmoid") else np.inf
        return np.where(np.isneginf(z), lim_neg, np.where(np.isposinf(z), lim_pos, out))


SMOOTH = ("tanh", "sigmoid", "gelu", "silu", "elu")
# tanh and sigmoid change convexity at 0; GELU at +-sqrt(2) (f'' = phi(z) (2 - z^2)); SiLU where
# 2 + z (1 - 2 sigmoid(z)) = 0, near +-2.3994 (taken wider: the pieces must hold no sign change of
# f'' inside, and a break where there is none only costs a sample); ELU has its kink at 0.
# (Inflections and minima found with scipy's brentq to 1e-15.)
_BREAKS: dict[str, tuple[float, ...]] = {
    "tanh": (0.0,),
    "sigmoid": (0.0,),
    "gelu": (-_SQRT2, _SQRT2),
    "silu": (-2.3993572805155, -2.3993572805154, 2.3993572805154, 2.3993572805155),
    "elu": (0.0,),
}
# max |f''|: tanh 4/(3 sqrt 3) = 0.770 at atanh(1/sqrt 3); sigmoid 0.0962; GELU 2 phi(0) = 0.798
# at 0; SiLU 1/2 at 0; ELU alpha (on z < 0).
_CURVATURE = {"tanh": 0.7699, "sigmoid": 0.0963, "gelu": 0.798, "silu": 0.5001}
# the one minimum of the non-monotone units: (where, value rounded down)
_MINIMUM = {"gelu": (-0.7517915246935645, -0.1699713), "silu": (-1.278464542761074, -0.2784646)}


def parse(name: str, alpha: float = 1.0) -> Activation:
    """The unit of a framework's name (`logistic` and `swish` included)."""
    key = {"logistic": "sigmoid", "swish": "silu"}.get(name.lower(), name.lower())
    return Activation(key, alpha if key == "elu" else 1.0)
