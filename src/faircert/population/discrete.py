"""DiscretePopulation: a distribution over finite variables as a Bayesian network.

Independent marginals are the network without edges. Each variable has states (the value each stands
for: a category or a bin's number), display labels, parents and a conditional table of shape
(*parent cardinalities, cardinality). Saved as JSON so a verification can be repeated exactly.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from ..errors import DataError, PropertyError
from .base import Population

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

FORMAT = "faircert-population"
#: The name a binned variable's bin takes once its data values are a variable of their own.
BIN_SUFFIX = " (bin)"


@dataclass
class Variable:
    """A finite variable with its conditional distribution given its parents."""

    name: str
    states: tuple
    labels: tuple[str, ...]
    parents: tuple[str, ...] = ()
    cpt: np.ndarray = None  # type: ignore[assignment]
    edges: tuple[float, ...] | None = None
    #: A bin's data values: per state, (values, their probabilities inside it); see `expanded`.
    within: tuple | None = None

    def __post_init__(self) -> None:
        self.states = tuple(self.states)
        if not all(isinstance(s, (str, bool, np.bool_)) or _finite_number(s) for s in self.states):
            raise DataError(f"variable {self.name!r}: each state must be a label or a finite number")
        if self.within is not None:
            try:
                self.within = tuple((tuple(v), tuple(float(x) for x in q)) for v, q in self.within)
            except (TypeError, ValueError):
                raise DataError(
                    f"variable {self.name!r}: 'within' must list (values, probabilities) per state"
                ) from None
            if len(self.within) != len(self.states) or any(
                len(v) != len(q)
                or not v
                or any(not np.isfinite(x) or x < 0 for x in q)
                or abs(sum(q) - 1.0) > 1e-9
                or not all(map(_finite_number, v))
                for v, q in self.within
            ):
                raise DataError(
                    f"variable {self.name!r}: 'within' needs, for each of its {len(self.states)} states, "
                    "values (finite numbers) with probabilities >= 0 that sum to 1"
                )
        self.labels = tuple(str(x) for x in self.labels) if self.labels else tuple(str(s) for s in self.states)
        self.parents = tuple(self.parents)
        if not all(isinstance(p, str) for p in self.parents):
            raise DataError(f"variable {self.name!r}: its parents must be variable names")
        self.cpt = np.asarray(self.cpt, dtype=np.float64)
        if len(self.labels) != len(self.states):
            raise DataError(f"variable {self.name!r}: {len(self.labels)} labels for {len(self.states)} states")
        if self.cpt.ndim != len(self.parents) + 1 or self.cpt.shape[-1] != len(self.states):
            raise DataError(
                f"variable {self.name!r}: table of shape {self.cpt.shape} does not fit "
                f"{len(self.parents)} parent(s) and {len(self.states)} states"
            )
        if np.any(~np.isfinite(self.cpt)) or np.any(self.cpt < 0):
            raise DataError(f"variable {self.name!r}: probabilities must be finite and >= 0")
        if not np.allclose(self.cpt.sum(axis=-1), 1.0, atol=1e-9):
            raise DataError(f"variable {self.name!r}: each row of its table must sum to 1")

    @property
    def card(self) -> int:
        return len(self.states)

    def codes(self, values: Sequence[Any] | np.ndarray) -> np.ndarray:
        """The state index of each raw value (bins by their edges, categories by equality; -1 if none)."""
        raw = np.asarray(values, dtype=object).reshape(-1)
        if self.edges is not None:
            x = np.asarray(raw, dtype=np.float64)
            edges = np.asarray(self.edges)
            idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, self.card - 1)
            return np.where((x >= edges[0]) & (x <= edges[-1]), idx, -1)
        lookup = {str(s): i for i, s in enumerate(self.states)}
        numeric = {
            float(s): i for i, s in enumerate(self.states) if isinstance(s, (int, float)) and not isinstance(s, bool)
        }
        out = np.full(len(raw), -1, dtype=np.int64)
        for j, v in enumerate(raw):
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and float(v) in numeric:
                out[j] = numeric[float(v)]
            else:
                out[j] = lookup.get(str(v), -1)
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "states": list(self.states),
            "labels": list(self.labels),
            "parents": list(self.parents),
            "table": self.cpt.tolist(),
        }
        if self.edges is not None:
            out["edges"] = list(self.edges)
        if self.within is not None:
            out["within"] = [[list(v), list(q)] for v, q in self.within]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Variable:
        from ..limits import quoted

        if not isinstance(d, dict):
            raise DataError(f"population variable {quoted(d)}: malformed (not a mapping)")
        try:
            return cls(
                str(d["name"]),
                tuple(d["states"]),
                tuple(d.get("labels") or ()),
                tuple(d.get("parents", ())),
                np.asarray(d["table"], dtype=np.float64),
                tuple(d["edges"]) if d.get("edges") is not None else None,
                d.get("within"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(
                f"population variable {quoted(d.get('name', '?'))}: malformed ({' '.join(str(exc).split())[:200]})"
            ) from None


class DiscreteVisitor(Protocol[T_co]):
    """An engine's code for discrete populations, reached through `DiscretePopulation.accept`."""

    def discrete(self, population: DiscretePopulation) -> T_co: ...


@dataclass
class DiscretePopulation(Population):
    """A Bayesian network over finite variables (independent marginals: no edges)."""

    variables: dict[str, Variable]
    protected: tuple[str, ...] = ()
    label: str | None = None
    kind: str = "bayesnet"
    #: Independent populations with a label: the same population fitted on the rows with Y = y
    #: (how equalized odds conditions an independent model on the label).
    by_label: dict[str, DiscretePopulation] = field(default_factory=dict)
    #: How it was made (data rows, binning, score, learning time), for reports.
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.variables = dict(self.variables)
        self.protected = tuple(self.protected)
        for v in self.variables.values():
            for p in v.parents:
                if p not in self.variables:
                    raise DataError(f"variable {v.name!r} has an unknown parent {p!r}")
                if self.variables[p].card != v.cpt.shape[v.parents.index(p)]:
                    raise DataError(f"variable {v.name!r}: table size for parent {p!r} does not match its states")
        for name in self.protected + ((self.label,) if self.label else ()):
            if name not in self.variables:
                raise DataError(f"the population has no variable {name!r}; it has: {', '.join(self.variables)}")
        self.order()  # raises on a cycle

    # ----- structure ------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self.variables)

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(p, v.name) for v in self.variables.values() for p in v.parents]

    def children(self, name: str) -> list[str]:
        return [v.name for v in self.variables.values() if name in v.parents]

    def order(self) -> list[str]:
        """A topological order (parents first)."""
        done: list[str] = []
        placed: set[str] = set()
        pending = list(self.variables)
        while pending:
            ready = [n for n in pending if all(p in placed for p in self.variables[n].parents)]
            if not ready:
                raise DataError(f"the population's network has a cycle among {pending}")
            for n in ready:
                done.append(n)
                placed.add(n)
            pending = [n for n in pending if n not in placed]
        return done

    def groups(self) -> list[dict[str, int]]:
        """Every compound protected group as {protected name: state index}."""
        cards = [range(self.variables[p].card) for p in self.protected]
        return [dict(zip(self.protected, combo)) for combo in itertools.product(*cards)]

    def group_name(self, group: dict[str, int]) -> dict[str, Any]:
        return {p: self.variables[p].labels[i] for p, i in group.items()}

    def describe(self) -> str:
        n_edges = len(self.edges)
        parts = [f"{self.kind} over {len(self.variables)} variables"]
        if self.kind == "bayesnet":
            parts.append(f"{n_edges} edge(s)")
        binned = [v.name.removesuffix(BIN_SUFFIX) for v in self.variables.values() if v.edges is not None]
        if binned:
            parts.append(f"binned: {', '.join(binned)}")
        return ", ".join(parts)

    # ----- edits (new populations; the original is never changed) -------------------------------
    def with_marginal(self, name: str, probs: Sequence[float] | np.ndarray) -> DiscretePopulation:
        """`name` made an independent root with the given distribution (children keep their tables)."""
        v = self.variables[name]
        dist = np.asarray(probs, dtype=np.float64)
        if dist.shape != (v.card,):
            raise DataError(f"{name!r}: expected {v.card} probabilities, got shape {dist.shape}")
        variables = dict(self.variables)
        variables[name] = replace(v, parents=(), cpt=dist / dist.sum())
        by_label = {k: p.with_marginal(name, dist) for k, p in self.by_label.items()}
        return replace(self, variables=variables, by_label=by_label)

    def restricted_to(self, keep: Iterable[str]) -> DiscretePopulation:
        """The marginal over `keep` when it is closed under parents (only barren variables dropped)."""
        kept = set(keep)
        for n in kept:
            missing = [p for p in self.variables[n].parents if p not in kept]
            if missing:
                raise DataError(f"cannot drop {missing}: they are parents of {n!r}")
        variables = {n: v for n, v in self.variables.items() if n in kept}
        return replace(
            self,
            variables=variables,
            by_label={k: p.restricted_to(kept & set(p.variables)) for k, p in self.by_label.items()},
        )

    # ----- a bin's data values as a variable of their own ------------------------------------------
    def expanded(self) -> DiscretePopulation:
        """The same distribution with every binned variable that carries its data's values (`within`)
        split in two: the bin, renamed `name + BIN_SUFFIX` (its children now read it), and `name`
        itself, a child of the bin taking the data's values with their frequencies inside each bin.
        Protected attributes and the label stay as they are (their bins are the groups)."""
        split = [
            n for n, v in self.variables.items() if v.within is not None and n not in self.protected and n != self.label
        ]
        if not split:
            return self
        rename = {n: n + BIN_SUFFIX for n in split}
        variables: dict[str, Variable] = {}
        for n, v in self.variables.items():
            parents = tuple(rename.get(p, p) for p in v.parents)
            if n not in rename:
                variables[n] = replace(v, parents=parents)
                continue
            assert v.within is not None  # what puts it in `rename`
            variables[rename[n]] = replace(v, name=rename[n], parents=parents, within=None)
            values = sorted({x for vals, _ in v.within for x in vals})
            index = {x: i for i, x in enumerate(values)}
            table = np.zeros((v.card, len(values)))
            for b, (vals, probs) in enumerate(v.within):
                for x, q in zip(vals, probs):
                    table[b, index[x]] += q
            variables[n] = Variable(
                n,
                tuple(values),
                tuple(f"{x:g}" if isinstance(x, float) else str(x) for x in values),
                (rename[n],),
                table / table.sum(axis=1, keepdims=True),
            )
        by_label = {k: p.expanded() for k, p in self.by_label.items()}
        return replace(self, variables=variables, by_label=by_label)

    def label_conditions(self, label: str, protected: list[str], asking: str) -> list:
        """The runs that give the groups' rates given each value of `label` (see
        `engines.probability.bounds.label_conditions`): with the label a variable, one run over the
        compound groups (protected x label); with populations fitted per label value, one run each."""
        protected = protected or list(self.protected)
        if label in self.variables:
            return [(self, protected + [label], label, [str(v) for v in self.variables[label].labels])]
        if not self.by_label:
            raise PropertyError(f"the population has no label {label!r}: learn it from data with that column")
        return [(sub, protected, None, [str(value)]) for value, sub in self.by_label.items()]

    def accept(self, visitor: DiscreteVisitor[T]) -> T:
        """Return `visitor.discrete(self)`, so that an engine reaches its code for
        discrete populations without a type test."""
        return visitor.discrete(self)

    def bin_of(self, name: str) -> str:
        """The variable that holds `name`'s bins once expanded (its own name otherwise)."""
        return name + BIN_SUFFIX if name + BIN_SUFFIX in self.variables else name

    # ----- sampling ---------------------------------------------------------------------------
    def sample_codes(
        self, rng: np.random.Generator, n: int, order: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """`n` ancestral samples: each variable's state index per sample (parents drawn first)."""
        codes: dict[str, np.ndarray] = {}
        for name in order or self.order():
            v = self.variables[name]
            row = np.zeros(n, dtype=np.int64)
            for p in v.parents:
                row = row * self.variables[p].card + codes[p]
            cum = np.cumsum(v.cpt.reshape(-1, v.card), axis=1)
            u = rng.random(n)[:, None] * cum[row, -1:]
            codes[name] = np.minimum((u >= cum[row]).sum(axis=1), v.card - 1)
        return codes

    # ----- brute force (small populations; tests and checks) ---------------------------------
    def joint(self) -> Iterator[tuple[dict[str, int], float]]:
        """Every full assignment (state indices) with its probability."""
        names = self.order()
        cards = [range(self.variables[n].card) for n in names]
        for combo in itertools.product(*cards):
            asg = dict(zip(names, combo))
            p = 1.0
            for n in names:
                v = self.variables[n]
                p *= v.cpt[tuple(asg[q] for q in v.parents) + (asg[n],)]
            yield asg, p

    def marginal(self, name: str, evidence: dict[str, int] | None = None) -> np.ndarray:
        """P[name | evidence] by enumerating the ancestors of `name` and the evidence (small networks)."""
        evidence = dict(evidence or {})
        needed = self._ancestors([name, *evidence])
        sub = replace(
            self,
            variables={n: v for n, v in self.variables.items() if n in needed},
            by_label={},
            protected=tuple(p for p in self.protected if p in needed),
            label=self.label if self.label in needed else None,
        )
        out = np.zeros(self.variables[name].card)
        for asg, p in sub.joint():
            if all(asg[k] == s for k, s in evidence.items()):
                out[asg[name]] += p
        total = out.sum()
        if total <= 0:
            raise DataError(f"the evidence {evidence} has probability 0 under the population")
        return out / total

    def _ancestors(self, names: Sequence[str]) -> set[str]:
        seen: set[str] = set()
        stack = list(names)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(self.variables[n].parents)
        return seen

    # ----- files ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "kind": self.kind,
            "protected": list(self.protected),
            "label": self.label,
            "variables": [v.to_dict() for v in self.variables.values()],
            "by_label": {k: p.to_dict() for k, p in self.by_label.items()},
            "info": self.info,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "population") -> DiscretePopulation:
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("variables"), list):
            raise DataError(f"{source}: not a faircert population (expected format {FORMAT!r} and a 'variables' list)")
        variables = {}
        for d in data["variables"]:
            v = Variable.from_dict(d)
            variables[v.name] = v
        protected, label = data.get("protected", []), data.get("label")
        by_label, info = data.get("by_label") or {}, data.get("info") or {}
        if not (
            isinstance(protected, list)
            and all(isinstance(p, str) for p in protected)
            and (label is None or isinstance(label, str))
            and isinstance(data.get("kind", ""), str)
            and isinstance(by_label, dict)
            and isinstance(info, dict)
            and _report_info(info)
        ):
            raise DataError(
                f"{source}: malformed population ('protected' must list names, 'label' be a name or "
                "null, 'kind' a name, 'by_label' and 'info' mappings, info's 'binning' a mapping of "
                "plain values and its 'edges_dropped' a list of {edge: [parent, child], loglik})"
            )
        by_label = {str(k): cls.from_dict(p, source) for k, p in by_label.items()}
        return cls(variables, tuple(protected), label, data.get("kind", "bayesnet"), by_label, info)

    def save(self, path: str | Path) -> None:
        from ..files import write_text
        from ..results.base import jsonable

        write_text(path, json.dumps(self.to_dict(), indent=1, default=jsonable) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> DiscretePopulation:
        path = Path(path)
        if not os.path.isfile(path):  # False, not an error, for a name the system refuses (too long)
            raise DataError(f"population file not found: {path}")
        from ..limits import loads_json, read_text

        return cls.from_dict(loads_json(read_text(path, DataError, "population"), str(path), DataError), str(path))


def _report_info(info: dict) -> bool:
    """Whether what a saved population says of how it was made has the shape reports read."""
    binning, dropped = info.get("binning", {}), info.get("edges_dropped") or []
    plain = (str, int, float, bool, type(None))
    return (
        isinstance(binning, dict)
        and all(isinstance(v, plain) for v in binning.values())
        and isinstance(info.get("label"), (str, type(None)))
        and isinstance(dropped, list)
        and all(
            isinstance(d, dict)
            and isinstance(d.get("edge"), list)
            and len(d["edge"]) == 2
            and isinstance(d.get("loglik"), (int, float))
            and not isinstance(d["loglik"], bool)
            for d in dropped
        )
    )


def _finite_number(value: Any) -> bool:
    """A data value of a binned variable: an int or float, not a bool, finite."""
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and bool(np.isfinite(value))
    )
