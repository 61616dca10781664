"""Input domains: ordered features with kinds, inclusive bounds and a protected flag.

Integer, binary and categorical features form a grid and are measured by counting points; real
features are measured by length (volume). A domain is written as YAML/JSON or inferred from data.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DomainError
from .limits import MAX_FEATURES, MAX_TEXT_BYTES, check_at_most, listed, loads_json, quoted, read_text

KINDS = ("binary", "integer", "real", "categorical")
#: Largest magnitude of a bound: integers up to it are exact in float64, which the engines use.
MAX_BOUND = 2.0**53
DISCRETE_KINDS = ("binary", "integer", "categorical")
MATCHES = ("names", "position")


@dataclass(frozen=True)
class Feature:
    """One input feature; bounds are inclusive."""

    name: str
    kind: str = "real"
    min: float = 0.0
    max: float = 1.0
    protected: bool = False
    #: For categorical features inferred from strings: the category label of each code.
    categories: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DomainError(f"feature {quoted(self.name)}: unknown kind {quoted(self.kind)} (expected one of "
                              f"{', '.join(KINDS)})")
        if self.kind == "binary":
            object.__setattr__(self, "min", 0 if self.min is None else self.min)
            object.__setattr__(self, "max", 1 if self.max is None else self.max)
        for bound in ("min", "max"):
            value = getattr(self, bound)
            if value is None or not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
                raise DomainError(f"feature {quoted(self.name)}: {bound} must be a number, got {quoted(value)}")
            if not (abs(value) <= MAX_BOUND):  # also false for nan; a 400-digit integer is refused, not overflowed
                raise DomainError(f"feature {quoted(self.name)}: {bound} must be a finite number of magnitude at most "
                                  f"{MAX_BOUND:.0e}, got {quoted(value)}")
        if self.min > self.max:
            raise DomainError(f"feature {quoted(self.name)}: min {self.min} > max {self.max}")
        if self.kind == "binary" and not 0 <= self.min <= self.max <= 1:
            raise DomainError(f"feature {quoted(self.name)}: binary features take values in {{0, 1}}, got "
                              f"[{self.min}, {self.max}] (use kind integer for more values)")
        if self.is_discrete:
            if float(self.min) != math.floor(self.min) or float(self.max) != math.floor(self.max):
                raise DomainError(f"feature {quoted(self.name)}: {self.kind} bounds must be integers, got [{self.min}, {self.max}]")
            object.__setattr__(self, "min", int(self.min))
            object.__setattr__(self, "max", int(self.max))
        else:
            object.__setattr__(self, "min", float(self.min))
            object.__setattr__(self, "max", float(self.max))

    @property
    def is_discrete(self) -> bool:
        return self.kind in DISCRETE_KINDS

    @property
    def size(self) -> float:
        """Number of grid points (discrete) or length (real)."""
        if self.is_discrete:
            return self.max - self.min + 1
        return self.max - self.min

    def values(self) -> np.ndarray:
        """All values of a discrete feature."""
        if not self.is_discrete:
            raise DomainError(f"feature {quoted(self.name)} is real-valued; it has no finite list of values")
        return np.arange(self.min, self.max + 1, dtype=np.int64)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "min": self.min, "max": self.max}
        if self.protected:
            out["protected"] = True
        if self.categories is not None:
            out["categories"] = list(self.categories)
        return out


@dataclass(frozen=True)
class Domain:
    """An ordered box of features."""

    features: tuple[Feature, ...] = field(default_factory=tuple)
    #: How features meet a model's named inputs: "names" (the names must be the model's, in order)
    #: or "position" (the i-th feature is the i-th input, whatever the names say)
    match: str = "names"

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(self.features))
        if self.match not in MATCHES:
            raise DomainError(f"match must be one of {', '.join(MATCHES)}, got {quoted(self.match)}")
        if not self.features:
            raise DomainError("a domain needs at least one feature")
        seen: set[str] = set()
        for f in self.features:
            if f.name in seen:
                raise DomainError(f"feature name {quoted(f.name)} appears twice")
            seen.add(f.name)

    # ----- access -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.features)

    def __iter__(self):
        return iter(self.features)

    def __getitem__(self, key: int | str) -> Feature:
        return self.features[self.index(key)] if isinstance(key, str) else self.features[key]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def lower(self) -> np.ndarray:
        return np.array([f.min for f in self.features], dtype=np.float64)

    @property
    def upper(self) -> np.ndarray:
        return np.array([f.max for f in self.features], dtype=np.float64)

    @property
    def discrete_mask(self) -> np.ndarray:
        return np.array([f.is_discrete for f in self.features], dtype=bool)

    @property
    def protected_names(self) -> list[str]:
        return [f.name for f in self.features if f.protected]

    def index(self, name: str | int) -> int:
        """Position of a feature given by name (or an in-range integer index)."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= name < len(self.features):
                raise DomainError(f"feature index {name} is out of range (the domain has {len(self.features)} features)")
            return int(name)
        for i, f in enumerate(self.features):
            if f.name == name:
                return i
        raise DomainError(f"unknown feature {quoted(name)}; the domain has: {listed(self.names)}")

    def with_protected(self, names: Iterable[str | int]) -> Domain:
        """A copy in which exactly `names` are marked protected."""
        wanted = {self.index(n) for n in names}
        return Domain(tuple(
            Feature(f.name, f.kind, f.min, f.max, i in wanted, f.categories) for i, f in enumerate(self.features)
        ), self.match)

    def check_model(self, model: Any, what: str = "the model") -> None:
        """The domain must list the model's inputs: as many, and, where the model stores the names
        it was trained with, those names in that order (features are matched by position)."""
        width = getattr(model, "n_inputs", None) or getattr(model, "n_features", None)
        if width is not None:
            self.check_width(int(width), what)
        names = getattr(model, "feature_names", None) or getattr(model, "input_names", None)
        if not names or len(names) != len(self.features) or _generic_names(names) or self.match == "position":
            return
        names = [str(n) for n in names]
        if names == self.names:
            return
        if _generic_names(self.names):
            raise DomainError(f"{what} stores its input names ({listed(names)}) but the domain's features are "
                              f"unnamed ({listed(self.names)}); name them as the model's inputs, or put "
                              "'match: position' in the domain file (Domain(..., match='position')) to match them "
                              "by position")
        unknown = [n for n in self.names if n not in names]
        if unknown:
            raise DomainError(f"{what} has no input named {', '.join(map(quoted, unknown[:5]))}; its inputs are, in "
                              f"order: {listed(names)}")
        first = next(i for i, (a, b) in enumerate(zip(self.names, names)) if a != b)
        raise DomainError(f"the domain lists {quoted(self.names[first])} as feature {first}, but input {first} of {what} "
                          f"is {quoted(names[first])}; list the features in the model's order: {listed(names)}")

    def check_width(self, n_inputs: int, what: str = "the model") -> None:
        if n_inputs != len(self.features):
            # more inputs than raw columns, some of them categories: most likely a one-hot encoding
            encoded = n_inputs > len(self.features) and any(f.categories is not None for f in self.features)
            hint = ("; if it was trained on encoded columns (one-hot, scaled), give the fitted preprocessing with "
                    "--preprocessor PREP.pkl (preprocessor= in Python) and a domain of the raw columns") if encoded else ""
            raise DomainError(
                f"the domain has {len(self.features)} features but {what} takes {n_inputs} inputs; list the "
                f"model's inputs in order (a domain inferred from data must leave out the label: "
                f"faircert domain infer DATA --label NAME){hint}"
            )

    def measure(self, exclude: Sequence[int] = ()) -> float:
        """Grid count times volume of the box, leaving out the features in `exclude`."""
        skip = set(exclude)
        return float(np.prod([f.size for i, f in enumerate(self.features) if i not in skip], dtype=np.float64))

    def contains(self, X: np.ndarray) -> np.ndarray:
        """Rows of X that lie in the domain (bounds and integrality)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        inside = np.all((X >= self.lower) & (X <= self.upper), axis=1)
        disc = self.discrete_mask
        return inside & np.all(X[:, disc] == np.round(X[:, disc]), axis=1)

    # ----- files --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"features": [f.to_dict() for f in self.features]}
        if self.match != "names":
            out["match"] = self.match
        return out

    def save(self, path: str | Path) -> None:
        from .files import write_text

        if Path(path).suffix.lower() == ".json":
            write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")
        else:
            import yaml

            write_text(path, yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None))

    @classmethod
    def from_dict(cls, data: Any, source: str = "domain") -> Domain:
        if not isinstance(data, dict) or not isinstance(data.get("features"), list):
            raise DomainError(f"{source}: expected a mapping with a 'features' list")
        check_at_most("the number of features", len(data["features"]), MAX_FEATURES, source)
        match = data.get("match", "names")
        if match not in MATCHES:
            raise DomainError(f"{source}: 'match' must be one of {', '.join(MATCHES)}, got {quoted(match)}")
        try:
            return cls(tuple(_feature(entry, i, source) for i, entry in enumerate(data["features"])), match)
        except DomainError as exc:  # a feature's own check: say which file holds it
            if str(exc).startswith(f"{source}:"):
                raise
            raise DomainError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> Domain:
        path = Path(path)
        if not path.is_file():
            raise DomainError(f"domain file not found: {path}")
        text = read_text(path, DomainError, "domain", MAX_TEXT_BYTES)
        if path.suffix.lower() == ".json":
            data = loads_json(text, str(path), DomainError)
        else:
            data = _load_yaml(text, str(path))
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_bounds(cls, lower: Sequence[float], upper: Sequence[float], names: Sequence[str] | None = None,
                    kind: str = "integer") -> Domain:
        names = list(names) if names is not None else [f"x{i}" for i in range(len(lower))]
        if not (len(lower) == len(upper) == len(names)):
            raise DomainError("bounds and names must have the same length")
        return cls(tuple(Feature(n, kind, lo, hi) for n, lo, hi in zip(names, lower, upper)))

    def __str__(self) -> str:
        rows = [f"{f.name}: {f.kind} [{f.min}, {f.max}]" + (" (protected)" if f.protected else "") for f in self.features]
        return "Domain(\n  " + "\n  ".join(rows) + "\n)"


_GENERIC_NAME = re.compile(r"(f|x|Column_|feature_|input_?)\d+")


def _generic_names(names: Sequence[Any]) -> bool:
    """Names a framework makes up for unnamed inputs (XGBoost f0, LightGBM Column_0, ...): they say
    nothing about the order, so they are not compared with the domain."""
    return all(_GENERIC_NAME.fullmatch(str(n)) for n in names)


FEATURE_KEYS = ("name", "kind", "min", "max", "protected", "categories")


def _feature(entry: Any, i: int, source: str) -> Feature:
    """One feature of a domain file, every value checked for its type (nothing is coerced)."""
    if not isinstance(entry, dict) or "name" not in entry:
        raise DomainError(f"{source}: feature #{i} must be a mapping with a 'name'")
    name = entry["name"]
    if not isinstance(name, (str, int)) or isinstance(name, bool):
        raise DomainError(f"{source}: feature #{i}: 'name' must be text, got {quoted(name)}")
    name = name if isinstance(name, str) else str(name) if abs(name) < 10**30 else quoted(name)
    unknown = [str(k) for k in entry if k not in FEATURE_KEYS]
    if unknown:
        raise DomainError(f"{source}: feature {quoted(name)} has unknown keys "
                          f"{', '.join(quoted(k) for k in sorted(unknown)[:5])} (allowed: {', '.join(FEATURE_KEYS)})")
    if "kind" not in entry:  # a forgotten kind would silently measure an integer feature by length
        raise DomainError(f"{source}: feature {quoted(name)} needs a 'kind' ({', '.join(KINDS)})")
    kind = entry["kind"]
    if not isinstance(kind, str):
        raise DomainError(f"{source}: feature {quoted(name)}: 'kind' must be one of {', '.join(KINDS)}, got "
                          f"{quoted(kind)}")
    if kind != "binary" and ("min" not in entry or "max" not in entry):
        raise DomainError(f"{source}: feature {quoted(name)} needs 'min' and 'max'")
    protected = entry.get("protected", False)
    if not isinstance(protected, bool):  # 'false' as text would read as true
        raise DomainError(f"{source}: feature {quoted(name)}: 'protected' must be true or false (unquoted), got "
                          f"{quoted(protected)}")
    cats = entry.get("categories")
    if cats is not None:
        if not isinstance(cats, list) or not all(isinstance(c, (str, int, float)) for c in cats):
            raise DomainError(f"{source}: feature {quoted(name)}: 'categories' must be a list of labels")
        cats = tuple(c if isinstance(c, str) else quoted(c) for c in cats)
    return Feature(name=name, kind=kind, min=entry.get("min", 0), max=entry.get("max", 1), protected=protected,
                   categories=cats)


def _load_yaml(text: str, source: str) -> Any:
    """YAML without aliases (`*name` references can expand a small file exponentially) or tags,
    in time linear in the file: libyaml's parser where installed, objects built here from its events."""
    import yaml

    try:
        if not hasattr(yaml, "CSafeLoader"):
            return _load_yaml_python(text, source)
        return _from_events(yaml.parse(text, Loader=yaml.CSafeLoader), source)
    except DomainError:
        raise
    except RecursionError:
        raise DomainError(f"{source}: YAML nested too deeply") from None
    except Exception as exc:  # the parser raises many types; all mean "not a domain file"
        reason = " ".join(str(exc).split())  # pyyaml's message spans lines: one line here
        raise DomainError(f"{source}: cannot parse domain file: {reason[:300]}") from None


#: Nesting a domain file never needs (a deeper file is refused before it costs anything).
MAX_YAML_DEPTH = 64


def _from_events(events: Any, source: str) -> Any:
    """Python objects from a YAML event stream, scalars resolved as PyYAML's SafeLoader does."""
    import yaml

    stack: list[Any] = []   # open collections: lists and _Mapping frames
    result: list[Any] = []

    def add(value: Any) -> None:
        top = stack[-1] if stack else None
        if top is None:
            result.append(value)
        elif isinstance(top, list):
            top.append(value)
        elif top.key is _NO_KEY:
            try:
                hash(value)
            except TypeError:
                raise DomainError(f"{source}: a mapping key must be a plain value") from None
            top.key = value
        else:
            top.items[top.key] = value
            top.key = _NO_KEY

    for event in events:
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            raise DomainError(f"{source}:{mark.line + 1}: YAML aliases (*name) are not allowed in domain files; "
                              "write the value out")
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and not tag.startswith("tag:yaml.org,2002:"):
            raise DomainError(f"{source}:{event.start_mark.line + 1}: YAML tag {quoted(tag)} is not allowed in "
                              "domain files")
        if isinstance(event, yaml.ScalarEvent):
            add(_scalar(event))
        elif isinstance(event, yaml.SequenceStartEvent):
            if len(stack) >= MAX_YAML_DEPTH:
                raise DomainError(f"{source}: YAML nested too deeply")
            stack.append([])
        elif isinstance(event, yaml.MappingStartEvent):
            if len(stack) >= MAX_YAML_DEPTH:
                raise DomainError(f"{source}: YAML nested too deeply")
            stack.append(_Mapping())
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            done = stack.pop()
            add(done if isinstance(done, list) else done.items)
    return result[0] if result else None


_NO_KEY = object()


class _Mapping:
    """A mapping being read: its items, and the key waiting for its value."""

    __slots__ = ("items", "key")

    def __init__(self) -> None:
        self.items: dict[Any, Any] = {}
        self.key: Any = _NO_KEY


def _scalar(event: Any) -> Any:
    """A scalar as SafeLoader constructs it: its implicit resolvers pick the tag of a plain value.
    Domain files repeat their words and small numbers, so each distinct scalar is resolved once."""
    key = (event.value, event.tag, event.implicit)
    cache = _scalars()
    if key in cache:
        return cache[key]
    import yaml

    resolver, constructor = _yaml_tools()
    value, tag = event.value, event.tag
    if tag is None or tag == "!":
        tag = resolver.resolve(yaml.ScalarNode, value, event.implicit)
    out = value if tag == "tag:yaml.org,2002:str" else \
        constructor.construct_object(yaml.ScalarNode(tag, value), deep=False)
    if len(cache) >= 100_000:
        cache.clear()
    cache[key] = out
    return out


@functools.cache
def _scalars() -> dict:
    """Resolved scalars (immutable values: shared between the places they appear)."""
    return {}


@functools.cache
def _yaml_tools() -> tuple[Any, Any]:
    """PyYAML's own resolver and safe constructor, made once."""
    import yaml

    return yaml.resolver.Resolver(), yaml.constructor.SafeConstructor()


def _load_yaml_python(text: str, source: str) -> Any:
    """Without libyaml: PyYAML's pure-Python SafeLoader, aliases refused while composing (errors
    become one line in `_load_yaml`)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                mark = self.peek_event().start_mark
                raise DomainError(f"{source}:{mark.line + 1}: YAML aliases (*name) are not allowed in domain files; "
                                  "write the value out")
            return super().compose_node(parent, index)

    return yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
