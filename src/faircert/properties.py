"""Properties: what is asked of a model, checked against the domain before any engine runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from .domain import Domain
from .errors import PropertyError


@dataclass(frozen=True)
class IndividualFairness:
    """Labels must not change when the protected features take any other values.

    `epsilon[i]` lets non-protected feature i of the twin move by at most that much (0 = equal).
    `kappa`, where given, restricts the measure to inputs whose own confidence exceeds it.
    `robustness` asks the same of *all* features within epsilon (no protected feature).
    `population`, where given (`population.marginals.Marginals`), replaces the uniform measure of
    the domain: the shares become probabilities under it.
    """

    domain: Domain
    protected: tuple[int, ...]
    epsilon: np.ndarray = field(default=None)  # type: ignore[arg-type]
    kappa: float | None = None
    robustness: bool = False
    population: Any = None

    @property
    def protected_names(self) -> list[str]:
        return [self.domain.features[i].name for i in self.protected]

    @property
    def epsilon_by_name(self) -> dict[str, float]:
        return {self.domain.features[i].name: float(e) for i, e in enumerate(self.epsilon) if e > 0}

    @property
    def free(self) -> list[int]:
        """Indices of the features that are measured (all but the protected ones)."""
        return [i for i in range(len(self.domain)) if i not in self.protected]


@dataclass(frozen=True)
class UnfairSamples:
    """Testing mode: `n` inputs drawn uniformly from the exact region where `prop` fails, each with a
    twin the model labels differently."""

    prop: IndividualFairness
    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 1:
            raise PropertyError(f"the number of counterexamples must be >= 1, got {self.n}")


@overload
def split_names(names: str | Iterable[str] | None) -> list[str]: ...
@overload
def split_names(names: str | int | Iterable[str | int] | None) -> list[str | int]: ...
def split_names(names: str | int | Iterable[str | int] | None) -> list[Any]:
    """Names given as "a,b", an iterable, or None (no names)."""
    if names is None:
        return []
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    refused = PropertyError(f"protected features are given by name or position, got {names!r}")
    if isinstance(names, bool):
        raise refused
    if isinstance(names, (int, np.integer)):
        return [int(names)]  # one feature by its position
    try:
        return list(names)
    except TypeError:
        raise refused from None


def individual_fairness(
    domain: Domain,
    protected: str | Iterable[str | int] | None = None,
    epsilon: Mapping[str, float] | float | None = None,
    epsilon_rate: float | None = None,
    kappa: float | None = None,
    robustness: bool = False,
) -> IndividualFairness:
    """Validate the user's choices against the domain and build the property."""
    names = split_names(protected) or domain.protected_names
    if not names and not robustness:
        raise PropertyError("no protected feature given (use --protected NAME or mark one in the domain)")
    if robustness and split_names(protected):
        raise PropertyError("robustness treats every feature alike; do not name protected features with it")
    idx = tuple(sorted({domain.index(n) for n in names})) if not robustness else ()
    for i in idx:
        f = domain.features[i]
        if f.kind == "real":
            raise PropertyError(f"protected feature {f.name!r} is real-valued; protected features must be discrete")
        if f.size < 2:
            raise PropertyError(f"protected feature {f.name!r} has one value ({f.min}); it cannot change")
    eps = np.zeros(len(domain))
    if epsilon_rate is not None:
        if not np.isfinite(epsilon_rate) or not 0 <= epsilon_rate <= 1:
            raise PropertyError(
                f"epsilon rate must lie in [0, 1] (a share of each feature's range), got {epsilon_rate}"
            )
        for i, f in enumerate(domain.features):
            width = f.max - f.min
            if f.kind == "categorical":  # codes have no distance: categorical tolerances stay 0
                continue
            eps[i] = np.floor(epsilon_rate * width) if f.is_discrete else epsilon_rate * width
    if isinstance(epsilon, (int, float)):
        eps[:] = float(epsilon)
    elif epsilon:
        for name, value in epsilon.items():
            i = domain.index(name)
            value = float(value)
            if not np.isfinite(value) or value < 0:
                raise PropertyError(f"epsilon for {name!r} must be a finite number >= 0, got {value}")
            if i in idx:
                raise PropertyError(f"epsilon on protected feature {name!r}: protected features vary freely already")
            if value > 0 and domain.features[i].kind == "categorical":
                raise PropertyError(
                    f"epsilon on categorical feature {name!r}: its codes have no distance (a "
                    "tolerance would treat them as numbers); give it no epsilon"
                )
            # a feature with one value cannot move: its tolerance is 0, exactly the same property
            eps[i] = value if domain.features[i].min < domain.features[i].max else 0.0
    eps[list(idx)] = 0.0
    if kappa is not None and not (np.isfinite(kappa) and 0.5 <= kappa < 1.0):
        raise PropertyError(
            f"kappa must lie in [0.5, 1) (a binary prediction's confidence is at least 0.5; 0.5 "
            f"measures every input), got {kappa}"
        )
    if robustness and not np.any(eps > 0):
        raise PropertyError(
            "robustness with epsilon 0 on every feature holds trivially; give --epsilon NAME=VAL or "
            "an --epsilon-rate whose tolerances do not all round down to 0"
        )
    return IndividualFairness(domain, idx, eps, kappa, robustness)


@dataclass(frozen=True)
class RowAudit:
    """Per-row individual fairness: for each row x (domain codes, one row per line of `rows`), is
    there an x' taking another protected combination, within epsilon of x on each epsilon-feature
    (inside the domain) and equal to x elsewhere, that the model labels differently?"""

    prop: IndividualFairness
    rows: np.ndarray
    #: A fingerprint of the model the rows are audited against (what a checkpoint must match).
    model_id: str = ""

    def __post_init__(self) -> None:
        rows = np.asarray(self.rows)  # float32 rows hold their values exactly (`data.encode_table`)
        rows = rows if rows.dtype == np.float32 else np.asarray(rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != len(self.prop.domain):
            raise PropertyError(
                f"rows must have one column per domain feature ({len(self.prop.domain)}), got shape {rows.shape}"
            )
        if not self.prop.protected:
            raise PropertyError("a per-row audit needs a protected feature (robustness is not audited per row)")
        object.__setattr__(self, "rows", rows)
