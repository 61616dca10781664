"""Product populations: independent one-dimensional marginals (gaussian, step, uniform, discrete).

Every marginal is addressed in CDF coordinates: u in [0, 1] is uniform and the value is the quantile
Q(u). A box [u_lo, u_hi] of probability mass u_hi - u_lo maps to a value interval that is rounded
outward, so any value the box can produce lies inside it; endpoints are marked *open* when the box
reaches them only on a set of probability zero (continuous marginals), which lets a step variable
split exactly at its bar edges decide `sex < 1`. `breaks` are the CDF coordinates of bar edges and
atoms, where splitting a box separates categories exactly.

Step and discrete masses are taken as the differences of their float64 cumulative sums (normalised
to end at 1): a change below 1e-15 of the written masses.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np
from scipy.special import ndtri

from ..errors import PropertyError
from .base import Population

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# ndtri's relative error is ~1e-15; widen far beyond it.
_REL = 1e-10
_ABS = 1e-12


def _widen(
    lo: np.ndarray, hi: np.ndarray, scale: np.ndarray, rel: float = _REL, absolute: float = _ABS
) -> tuple[np.ndarray, np.ndarray]:
    pad = rel * scale + absolute
    with np.errstate(invalid="ignore"):
        lo = np.where(np.isfinite(lo), lo - pad, lo)
        hi = np.where(np.isfinite(hi), hi + pad, hi)
    return np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)


@dataclass(frozen=True)
class Cell:
    """One group of a protected feature: its values x with lo <= x <= hi (`closed`), or lo <= x < hi."""

    name: float | str
    lo: float
    hi: float
    closed: bool = True


@dataclass(frozen=True)
class Gaussian:
    """N(mean, variance); the second parameter is the variance, as in FairSquare's files."""

    mean: float
    variance: float
    name: str = ""
    #: values reach +-inf: refinement carves thin tails off first
    unbounded = True

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mean) and np.isfinite(self.variance) and self.variance > 0):
            raise PropertyError(f"gaussian {self.name!r}: needs a finite mean and a variance > 0")

    @property
    def sd(self) -> float:
        return float(np.sqrt(self.variance))

    @property
    def breaks(self) -> np.ndarray:
        return np.empty(0)

    def interval(self, ul: np.ndarray, uh: np.ndarray):
        """Outward-rounded value interval of the CDF box [ul, uh] (open ends: continuous)."""
        zl, zh = ndtri(ul), ndtri(uh)
        sd = self.sd
        with np.errstate(invalid="ignore", over="ignore"):
            lo, hi = self.mean + sd * zl, self.mean + sd * zh
        scale_l = abs(self.mean) + sd * np.abs(zl) + sd
        scale_h = abs(self.mean) + sd * np.abs(zh) + sd
        lo, _ = _widen(lo, lo, scale_l)
        _, hi = _widen(hi, hi, scale_h)
        ones = np.ones(np.shape(lo), dtype=bool)
        return lo, hi, ones, ones.copy()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.mean + self.sd * rng.standard_normal(n)

    def describe(self) -> str:
        return f"gaussian(mean={self.mean:g}, variance={self.variance:g})"


@dataclass(frozen=True)
class Step:
    """Piecewise-uniform: bar [lo, hi) holds probability `mass`; zero-mass bars are dropped."""

    bars: tuple[tuple[float, float, float], ...]
    name: str = ""
    unbounded = False
    _a: np.ndarray = field(init=False, repr=False, compare=False)
    _b: np.ndarray = field(init=False, repr=False, compare=False)
    _cum: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bars = sorted((float(a), float(b), float(m)) for a, b, m in self.bars if m > 0)
        if not bars:
            raise PropertyError(f"step {self.name!r}: needs a bar with positive mass")
        for a, b, m in bars:
            if not (np.isfinite(a) and np.isfinite(b) and a < b and np.isfinite(m)):
                raise PropertyError(f"step {self.name!r}: bar ({a}, {b}, {m}) needs finite lo < hi and mass")
        for (a0, b0, _), (a1, _, _) in zip(bars, bars[1:]):
            if a1 < b0:
                raise PropertyError(f"step {self.name!r}: bars starting at {a0} and {a1} overlap")
        cum = np.concatenate([[0.0], np.cumsum([m for _, _, m in bars])])
        if abs(cum[-1] - 1.0) > 1e-6:
            raise PropertyError(f"step {self.name!r}: masses sum to {cum[-1]:.10g}, not 1")
        cum = cum / cum[-1]
        cum[-1] = 1.0
        object.__setattr__(self, "_a", np.array([a for a, _, _ in bars]))
        object.__setattr__(self, "_b", np.array([b for _, b, _ in bars]))
        object.__setattr__(self, "_cum", cum)

    @property
    def breaks(self) -> np.ndarray:
        return self._cum[1:-1]

    def interval(self, ul: np.ndarray, uh: np.ndarray):
        cum, a, b = self._cum, self._a, self._b
        nb = len(a)
        kl = np.clip(np.searchsorted(cum, ul, side="right") - 1, 0, nb - 1)
        kh = np.clip(np.searchsorted(cum, uh, side="left") - 1, 0, nb - 1)
        width_l = cum[kl + 1] - cum[kl]
        width_h = cum[kh + 1] - cum[kh]
        lo = a[kl] + (ul - cum[kl]) / width_l * (b[kl] - a[kl])
        hi = a[kh] + (uh - cum[kh]) / width_h * (b[kh] - a[kh])
        # a + (u - c) / w * (b - a): a handful of roundings, each below 2^-53 of |a| + |b|
        lo, _ = _widen(lo, lo, np.abs(a[kl]) + np.abs(b[kl]), 2.0**-48, 0.0)
        _, hi = _widen(hi, hi, np.abs(a[kh]) + np.abs(b[kh]), 2.0**-48, 0.0)
        # exactly at a bar edge the value is exactly the edge (the float cumulative sums define the model)
        lo = np.where(ul == cum[kl], a[kl], np.clip(lo, a[kl], b[kl]))
        hi = np.where(uh == cum[kh + 1], b[kh], np.clip(hi, a[kh], b[kh]))
        ones = np.ones(np.shape(lo), dtype=bool)
        return lo, hi, ones, ones.copy()

    def cells(self) -> list[Cell]:
        """Its bars, as the groups of a protected feature."""
        return [Cell(f"[{a:g},{b:g})", float(a), float(b), closed=False) for a, b in zip(self._a, self._b)]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        k = np.clip(np.searchsorted(self._cum, u, side="right") - 1, 0, len(self._a) - 1)
        frac = (u - self._cum[k]) / (self._cum[k + 1] - self._cum[k])
        return self._a[k] + frac * (self._b[k] - self._a[k])

    def describe(self) -> str:
        return "step(" + ", ".join(f"[{a:g},{b:g}):{m:g}" for a, b, m in self.bars) + ")"


def Uniform(low: float, high: float, name: str = "") -> Step:
    """Uniform on [low, high): a one-bar step."""
    return Step(((float(low), float(high), 1.0),), name=name)


@dataclass(frozen=True)
class Discrete:
    """Finitely many values with probabilities (categorical and integer features)."""

    values: tuple[float, ...]
    probs: tuple[float, ...]
    name: str = ""
    unbounded = False
    _v: np.ndarray = field(init=False, repr=False, compare=False)
    _cum: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pairs = sorted((float(v), float(p)) for v, p in zip(self.values, self.probs) if p > 0)
        if len(self.values) != len(self.probs) or not pairs:
            raise PropertyError(f"discrete {self.name!r}: needs values and as many positive probabilities")
        vals = np.array([v for v, _ in pairs])
        if np.any(np.diff(vals) == 0) or not np.all(np.isfinite(vals)):
            raise PropertyError(f"discrete {self.name!r}: values must be finite and distinct")
        cum = np.concatenate([[0.0], np.cumsum([p for _, p in pairs])])
        if abs(cum[-1] - 1.0) > 1e-6:
            raise PropertyError(f"discrete {self.name!r}: probabilities sum to {cum[-1]:.10g}, not 1")
        cum = cum / cum[-1]
        cum[-1] = 1.0
        object.__setattr__(self, "_v", vals)
        object.__setattr__(self, "_cum", cum)

    @property
    def breaks(self) -> np.ndarray:
        return self._cum[1:-1]

    def interval(self, ul: np.ndarray, uh: np.ndarray):
        n = len(self._v)
        kl = np.clip(np.searchsorted(self._cum, ul, side="right") - 1, 0, n - 1)
        kh = np.clip(np.searchsorted(self._cum, uh, side="left") - 1, 0, n - 1)
        zeros = np.zeros(np.shape(kl), dtype=bool)
        return self._v[kl], self._v[kh], zeros, zeros.copy()

    def cells(self) -> list[Cell]:
        """Its values, as the groups of a protected feature."""
        return [Cell(float(v), float(v), float(v)) for v in self._v]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        k = np.clip(np.searchsorted(self._cum, u, side="right") - 1, 0, len(self._v) - 1)
        return self._v[k]

    def describe(self) -> str:
        return "discrete(" + ", ".join(f"{v:g}:{p:g}" for v, p in zip(self.values, self.probs)) + ")"


Marginal = Gaussian | Step | Discrete


def marginal(spec: Marginal | Mapping | Iterable, name: str = "") -> Marginal:
    """A marginal from an object or a small spec: {"gaussian": [mean, var]}, {"step": [...]},
    {"uniform": [lo, hi]}, {"discrete": {value: prob}}."""
    if isinstance(spec, (Gaussian, Step, Discrete)):
        return spec
    if isinstance(spec, Mapping) and len(spec) == 1:
        ((kind, args),) = spec.items()
        if kind == "gaussian":
            return Gaussian(float(args[0]), float(args[1]), name)
        if kind == "uniform":
            return Uniform(float(args[0]), float(args[1]), name)
        if kind == "step":
            return Step(tuple((float(a), float(b), float(m)) for a, b, m in args), name)
        if kind == "discrete":
            items = dict(args)
            return Discrete(tuple(map(float, items)), tuple(map(float, items.values())), name)
    raise PropertyError(f"feature {name!r}: cannot read marginal {spec!r}; use gaussian/uniform/step/discrete")


class ProductVisitor(Protocol[T_co]):
    """An engine's code for product populations, reached through `ProductPopulation.accept`."""

    def product(self, population: ProductPopulation) -> T_co: ...


@dataclass
class ProductPopulation(Population):
    """Independent marginals, one per feature, in the model's input order."""

    names: list[str]
    marginals: list[Marginal]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.marginals) or not self.names:
            raise PropertyError("a product population needs one marginal per feature")
        if len(set(self.names)) != len(self.names):
            raise PropertyError("a product population names each feature once")

    @classmethod
    def of(cls, features: Mapping[str, Marginal | Mapping]) -> ProductPopulation:
        return cls(list(features), [marginal(m, n) for n, m in features.items()])

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        return {name: m.sample(rng, n) for name, m in zip(self.names, self.marginals)}

    def accept(self, visitor: ProductVisitor[T]) -> T:
        """Return `visitor.product(self)`, so that an engine reaches its code for
        product populations without a type test."""
        return visitor.product(self)

    def label_conditions(self, label: str, protected: list[str], asking: str) -> list:
        """The runs that give the groups' rates given each value of `label` (see
        `engines.probability.bounds.label_conditions`): one run, the groups split by the label too.
        `asking` names the metrics, for the error when the label is not a two-valued feature."""
        if label not in self.names:
            raise PropertyError(f"the label {label!r} is not a feature of the population ({', '.join(self.names)})")
        marginal = self.marginals[self.names.index(label)]
        if not isinstance(marginal, Discrete) or len(marginal._v) != 2:
            raise PropertyError(f"{asking}: needs a label with two values; {label!r} has the marginal {marginal}")
        return [(self, protected + [label], label, [str(float(v)) for v in marginal._v])]

    def groups(self, protected: list[str]) -> list[dict[str, Cell]]:
        """Every combination of the protected features' groups (a discrete marginal's values, a step
        marginal's bars): one dict feature -> cell per group."""
        if not protected:
            raise PropertyError("name the protected feature(s) (protected=...) for a product population")
        per_feature = []
        for p in protected:
            if p not in self.names:
                raise PropertyError(f"protected feature {p!r} is not in the population ({', '.join(self.names)})")
            m = self.marginals[self.names.index(p)]
            if not isinstance(m, (Discrete, Step)):
                raise PropertyError(f"protected feature {p!r} is continuous; give it a discrete or step marginal")
            per_feature.append(m.cells())
        return [dict(zip(protected, combo)) for combo in itertools.product(*per_feature)]

    def __str__(self) -> str:
        return "independent(" + ", ".join(f"{n}~{m.describe()}" for n, m in zip(self.names, self.marginals)) + ")"
