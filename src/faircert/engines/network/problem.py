"""The box-refinement problem: free features, twin combinations, measure and tolerances."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...errors import PropertyError
from ...models.network import ReluNetwork
from ...properties import IndividualFairness
from .arrays import Backend, like, namespace, to_numpy
from .symbolic import TwinBounds, TwinNet, bound_twins


class Draws(Protocol):
    """Where uniform draws in [0, 1) come from: a numpy Generator, or `settle.BoxDraws`."""

    def random(self, size: Any, /) -> Any: ...


#: Relative tolerance: bounds this close to 0 (scaled by the logit magnitude) decide nothing.
REL_TOL = 1e-9


@dataclass
class Weights:
    """A product measure over the free features: each a finite distribution (the data's values with
    their frequencies), as `population.marginals.Marginals` holds them.

    Boxes of an integer feature are disjoint ([lo, c] and [c + 1, hi]); boxes of a real feature
    share their cut ([lo, c] and [c, hi]), so a real feature's box holds the values in [lo, hi),
    and its top value only in a box reaching it from below: a data value on a cut counts once.
    A verdict covers the closed box, hence every value it is credited with."""

    values: list[np.ndarray]  # per free feature, its values in increasing order
    cum: list[np.ndarray]  # per free feature, 0 then the cumulative probabilities
    real: np.ndarray | None = None  # (d,) bool: boxes of this feature share their cuts
    bottom: np.ndarray | None = None  # (d,) the domain's range of each free feature
    top: np.ndarray | None = None

    @classmethod
    def of(
        cls,
        marginals,
        free: list[int],
        real: np.ndarray | None = None,
        bottom: np.ndarray | None = None,
        top: np.ndarray | None = None,
    ) -> Weights:
        values = [np.asarray(marginals.values[j], dtype=np.float64) for j in free]
        cum = [np.concatenate([[0.0], np.cumsum(marginals.counts[j]) / marginals.rows]) for j in free]
        return cls(values, cum, real, bottom, top)

    def _range(self, j: int, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.searchsorted(self.values[j], lo, "left")
        b = np.searchsorted(self.values[j], hi, "right")
        if self.real is not None and self.real[j]:
            top, bottom = self.top, self.bottom
            assert top is not None and bottom is not None  # given with `real`
            # [lo, hi), with the top value where the box reaches it from below (or the range is one point)
            shut = (hi >= top[j]) & ((lo < hi) | (lo <= bottom[j]))
            b = np.where(shut, b, np.searchsorted(self.values[j], hi, "left"))
        return a, b

    def mass(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Probability of each box (rows of lo, hi)."""
        out = np.ones(lo.shape[:-1])
        for j in range(len(self.values)):
            a, b = self._range(j, lo[..., j], hi[..., j])
            out *= self.cum[j][np.maximum(a, b)] - self.cum[j][a]
        return out

    def point(self, x: np.ndarray) -> np.ndarray:
        """Probability of each point (rows of x); 0 off the data's values (and, for a real feature,
        the probability its degenerate box holds: see the class)."""
        return self.mass(x, x)

    def median(self, feature: np.ndarray, lo: np.ndarray, hi: np.ndarray, mid: np.ndarray) -> np.ndarray:
        """Where to cut each range [lo, hi] (an integer feature's left part ends at the value
        returned; a real feature is cut there): so that each side holds about half the range's
        mass, strictly inside the range; `mid` where the range holds fewer than two values."""
        out = mid.copy()
        for j in np.unique(feature):
            at = np.flatnonzero(feature == j)
            a, b = self._range(j, lo[at], hi[at])
            c, v = self.cum[j], self.values[j]
            k = np.searchsorted(c, (c[a] + c[b]) / 2, "left") - 1
            if self.real is not None and self.real[j]:
                # halfway between the k-th value and the next: no data value lies on the cut
                k = np.minimum(np.clip(k, a, np.maximum(b - 2, a)), len(v) - 2)
                cut = (v[np.maximum(k, 0)] + v[k + 1]) / 2 if len(v) > 1 else mid[at]
                held = (b - a >= 2) & (cut > lo[at]) & (cut < hi[at])
                out[at] = np.where(held, cut, mid[at])
            else:
                held = b > a
                out[at] = np.where(held, np.clip(v[np.clip(k, 0, len(v) - 1)], lo[at], hi[at] - 1), mid[at])
        return out

    def sample(self, rng: Draws, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """One point per box, drawn from the measure restricted to the box (boxes of mass > 0)."""
        x = np.empty(lo.shape)
        for j in range(len(self.values)):
            a, b = self._range(j, lo[:, j], hi[:, j])
            c = self.cum[j]
            u = c[a] + rng.random(lo.shape[0]) * (c[np.maximum(a, b)] - c[a])
            k = np.clip(np.searchsorted(c, u, "right") - 1, a, np.maximum(b - 1, a))
            x[:, j] = self.values[j][np.minimum(k, len(self.values[j]) - 1)]
        return x


@dataclass
class Problem:
    """Everything the refinement needs, expressed over the free (non-protected) features."""

    network: ReluNetwork
    twin: TwinNet
    free: list[int]
    protected: list[int]
    combos: np.ndarray  # (T, n_protected) protected values of each twin
    lo: np.ndarray  # (d,) domain bounds of the free features
    hi: np.ndarray
    discrete: np.ndarray  # (d,) bool
    eps: np.ndarray  # (d,) tolerance of each free feature (floored for discrete ones)
    domain_size: float
    #: The twins as the bounds see them: through the network's input tables where it has them
    #: (`twin` is the network itself, layer by layer, for exact checks).
    bounder: TwinNet
    tol: float = 0.0
    #: The measure when it is not uniform (the data's independent marginals); None: grid counts
    #: times volume.
    weights: Weights | None = None
    #: Where the bounds and the twins' logits are computed (numpy unless a device was asked for).
    backend: Backend = field(default_factory=Backend)

    @classmethod
    def build(cls, network: ReluNetwork, prop: IndividualFairness, device: str | None = None) -> Problem:
        dom = prop.domain
        protected = list(prop.protected)
        free = prop.free
        if not free:
            raise PropertyError("every feature is protected; there is nothing left to measure")
        values = [dom.features[i].values() for i in protected]
        product = list(itertools.product(*values))
        combos = np.array(product, dtype=np.float64).reshape(len(product), len(protected))
        disc = dom.discrete_mask[free]
        eps = np.asarray(prop.epsilon, dtype=np.float64)[free]
        eps = np.where(disc, np.floor(eps + 1e-12), eps)
        weights = (
            None
            if prop.population is None
            else Weights.of(prop.population, free, ~disc, dom.lower[free], dom.upper[free])
        )
        size = (
            dom.measure(exclude=protected) if weights is None else float(weights.mass(dom.lower[free], dom.upper[free]))
        )
        if not size > 0:
            raise PropertyError("the measured part of the domain has size 0 (a real feature with min == max?)")
        backend = Backend(device)  # first: a device that cannot be used is the first error
        p = cls(
            network,
            TwinNet.build(network, free, protected, combos),
            free,
            protected,
            combos,
            dom.lower[free],
            dom.upper[free],
            disc,
            eps,
            size,
            TwinNet.build(network, free, protected, combos, lookups=True),
            weights=weights,
            backend=backend,
        )
        p.tol = REL_TOL * (1.0 + p.logit_scale())
        return p

    @property
    def d(self) -> int:
        return len(self.free)

    @property
    def n_twins(self) -> int:
        return self.combos.shape[0]

    @property
    def pairs(self) -> np.ndarray:
        """(T, T) which twin pairs (a for x, b for x') count: another protected combination for
        fairness; with no protected feature (robustness) the one twin against itself."""
        T = self.n_twins
        return np.ones((1, 1), dtype=bool) if T == 1 else ~np.eye(T, dtype=bool)

    @property
    def has_eps(self) -> bool:
        return bool(np.any(self.eps > 0))

    @functools.cached_property
    def every_discrete(self) -> bool:
        """Whether every free feature is an integer one (known on the host, wherever the boxes are)."""
        return bool(self.discrete.all())

    @functools.cached_property
    def min_real(self) -> np.ndarray:
        """How narrow a real feature's side may be split: 1e-9 of its range (of 1 at least)."""
        return 1e-9 * np.maximum(self.hi - self.lo, 1.0)

    @functools.cached_property
    def span(self) -> np.ndarray:
        """Each feature's range, never 0 (a divisor)."""
        return np.maximum(self.hi - self.lo, 1e-300)

    def logit_scale(self) -> float:
        """Magnitude of the logits' computation (sum of absolute terms at the domain's corners)."""
        x = np.abs(np.stack([self.lo, self.hi])).max(axis=0)
        h = np.abs(self.twin.w1) @ x + np.abs(self.twin.b1).max(axis=0)
        for w, b in zip(self.twin.weights, self.twin.biases):
            h = np.abs(w) @ h + np.abs(b)
        return float(h.max())

    def mass(self, lo: Any, hi: Any) -> Any:
        """Grid count times volume of each box (rows), or its probability under `weights` (computed
        on the host: the data's marginals are there), where the boxes are."""
        if self.weights is not None:
            return like(self.weights.mass(to_numpy(lo), to_numpy(hi)), lo)
        xp = namespace(lo)
        size = xp.where(self.here("discrete", lo), hi - lo + 1.0, hi - lo)
        return xp.prod(size, axis=-1)

    def here(self, name: str, ref: Any) -> Any:
        """The problem's array `name` (lo, hi, discrete, eps, min_real, span: fixed once built)
        where `ref` lives; on a device, moved there once."""
        x = getattr(self, name)
        if isinstance(ref, np.ndarray):
            return x
        copies = self.__dict__.setdefault("_device_copies", {})
        if name not in copies:
            copies[name] = self.backend.put(x)
        return copies[name]

    def point_mass(self, x: np.ndarray) -> np.ndarray:
        """What each grid point (rows of x) counts for: 1, or its probability under `weights`."""
        return np.ones(x.shape[0]) if self.weights is None else self.weights.point(x)

    @functools.cached_property
    def _on_device(self) -> tuple[TwinNet, TwinNet]:
        """The bounder and the twins with their arrays on the backend's device."""
        return self.bounder.to(self.backend.put), self.twin.to(self.backend.put)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_on_device", None)  # a worker moves the arrays to its device itself
        state.pop("_device_copies", None)
        return state

    def bound(self, lo: np.ndarray, hi: np.ndarray, tight: bool = False, host: bool = True) -> TwinBounds:
        """`bound_twins` of the bounder over boxes [lo, hi] on the backend; numpy arrays in, and
        out unless `host` is False (then the backend's arrays, left on its device)."""
        if self.backend.numpy:
            return bound_twins(self.bounder, lo, hi, tight)
        put = self.backend.put
        bd = bound_twins(self._on_device[0], put(lo), put(hi), tight)
        return bd.to_numpy() if host else bd.rows(slice(None))  # the hidden layers' bounds freed

    def logits(self, x: np.ndarray, fast: bool = False, single: bool = False) -> np.ndarray:
        """Logits (n, T) of free points x for every twin on the backend (`fast`: through the input
        tables, for estimates; `single`: float32, on the host, for candidates that are re-checked)."""
        net = self.bounder if fast else self.twin
        if self.backend.numpy or single:
            return (net.single if single else net).logits(x)
        return to_numpy(self._on_device[0 if fast else 1].logits(self.backend.put(x)))

    def window_bounds(
        self, lo: np.ndarray, hi: np.ndarray, tight: bool, host: bool = True
    ) -> tuple[TwinBounds, TwinBounds]:
        """Twin logit bounds over each box's epsilon-window (what decides fairness) and over the box
        itself (what decides its points' own labels); one and the same without epsilon. With
        `host` False they stay on the backend's device (`bound`)."""
        own = self.bound(lo, hi, tight, host)
        if not self.has_eps:
            return own, own
        return self.bound(*self.enlarge(lo, hi), tight, host), own

    def enlarge(self, lo: Any, hi: Any) -> tuple[Any, Any]:
        """The boxes every twin ranges over: [lo - eps, hi + eps] within the domain."""
        xp, eps = namespace(lo), self.here("eps", lo)
        return xp.maximum(lo - eps, self.here("lo", lo)), xp.minimum(hi + eps, self.here("hi", lo))

    def full(self, x: np.ndarray, twin: np.ndarray) -> np.ndarray:
        """Full model inputs from free points x (n, d) and twin indices (n,)."""
        out = np.empty((x.shape[0], len(self.free) + len(self.protected)))
        out[:, self.free] = x
        if self.protected:
            out[:, self.protected] = self.combos[twin]
        return out
