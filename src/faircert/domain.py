"""Input domains: ordered features with kinds, inclusive bounds and a protected flag.

Integer, binary and categorical features form a grid and are measured by counting points; real
features are measured by length (volume). A domain is written as YAML/JSON or inferred from data.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DomainError, FaircertError
from .limits import (
    MAX_FEATURES,
    MAX_NESTING,
    MAX_PURE_YAML_BYTES,
    MAX_TEXT_BYTES,
    MAX_YAML_VALUES,
    LimitError,
    check_at_most,
    listed,
    loads_json,
    quoted,
    read_text,
)

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
            raise DomainError(
                f"feature {quoted(self.name)}: unknown kind {quoted(self.kind)} (expected one of {', '.join(KINDS)})"
            )
        if self.kind == "binary":
            object.__setattr__(self, "min", 0 if self.min is None else self.min)
            object.__setattr__(self, "max", 1 if self.max is None else self.max)
        for bound in ("min", "max"):
            value: Any = getattr(self, bound)
            if value is None or not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
                raise DomainError(f"feature {quoted(self.name)}: {bound} must be a number, got {quoted(value)}")
            magnitude: Any = abs(value)
            if not (magnitude <= MAX_BOUND):  # also false for nan; a 400-digit integer is refused, not overflowed
                raise DomainError(
                    f"feature {quoted(self.name)}: {bound} must be a finite number of magnitude at most "
                    f"{MAX_BOUND:.0e}, got {quoted(value)}"
                )
        if self.min > self.max:
            raise DomainError(f"feature {quoted(self.name)}: min {self.min} > max {self.max}")
        if self.kind == "binary" and not 0 <= self.min <= self.max <= 1:
            raise DomainError(
                f"feature {quoted(self.name)}: binary features take values in {{0, 1}}, got "
                f"[{self.min}, {self.max}] (use kind integer for more values)"
            )
        if self.is_discrete:
            if float(self.min) != math.floor(self.min) or float(self.max) != math.floor(self.max):
                raise DomainError(
                    f"feature {quoted(self.name)}: {self.kind} bounds must be integers, got [{self.min}, {self.max}]"
                )
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

    def index(self, name: str | int | np.integer) -> int:
        """Position of a feature given by name (or an in-range integer index)."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= name < len(self.features):
                raise DomainError(
                    f"feature index {name} is out of range (the domain has {len(self.features)} features)"
                )
            return int(name)
        for i, f in enumerate(self.features):
            if f.name == name:
                return i
        raise DomainError(f"unknown feature {quoted(name)}; the domain has: {listed(self.names)}")

    def with_protected(self, names: Iterable[str | int]) -> Domain:
        """A copy in which exactly `names` are marked protected."""
        wanted = {self.index(n) for n in names}
        return Domain(
            tuple(
                Feature(f.name, f.kind, f.min, f.max, i in wanted, f.categories) for i, f in enumerate(self.features)
            ),
            self.match,
        )

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
            raise DomainError(
                f"{what} stores its input names ({listed(names)}) but the domain's features are "
                f"unnamed ({listed(self.names)}); name them as the model's inputs, or put "
                "'match: position' in the domain file (Domain(..., match='position')) to match them "
                "by position"
            )
        unknown = [n for n in self.names if n not in names]
        if unknown:
            raise DomainError(
                f"{what} has no input named {', '.join(map(quoted, unknown[:5]))}; its inputs are, in "
                f"order: {listed(names)}"
            )
        first = next(i for i, (a, b) in enumerate(zip(self.names, names)) if a != b)
        raise DomainError(
            f"the domain lists {quoted(self.names[first])} as feature {first}, but input {first} of {what} "
            f"is {quoted(names[first])}; list the features in the model's order: {listed(names)}"
        )

    def check_width(self, n_inputs: int, what: str = "the model") -> None:
        if n_inputs != len(self.features):
            # more inputs than raw columns, some of them categories: most likely a one-hot encoding
            encoded = n_inputs > len(self.features) and any(f.categories is not None for f in self.features)
            hint = (
                (
                    "; if it was trained on encoded columns (one-hot, scaled), give the fitted preprocessing with "
                    "--preprocessor PREP.pkl (preprocessor= in Python) and a domain of the raw columns"
                )
                if encoded
                else ""
            )
            raise DomainError(
                f"the domain has {len(self.features)} features but {what} takes {n_inputs} inputs; list the "
                f"model's inputs in order (a domain inferred from data must leave out the label: "
                f"faircert domain infer DATA --label NAME){hint}"
            )

    def measure(self, exclude: Sequence[int] = ()) -> float:
        """Grid count times volume of the box, leaving out the features in `exclude`."""
        skip = set(exclude)
        with np.errstate(over="ignore"):  # a wide domain's size overflows to inf, quietly
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
            write_text(path, self.to_yaml())

    def to_yaml(self) -> str:
        """The domain as YAML, one feature a line (a flow mapping), written in time linear in its
        features (PyYAML's emitter takes minutes for 100,000); `load` reads it back as this domain."""
        lines = ["features:"]
        for f in self.features:
            items = [
                f"name: {_yaml_text(f.name)}",
                f"kind: {f.kind}",
                f"min: {_yaml_number(f.min)}",
                f"max: {_yaml_number(f.max)}",
            ]
            if f.protected:
                items.append("protected: true")
            if f.categories is not None:
                items.append(f"categories: [{', '.join(map(_yaml_text, f.categories))}]")
            lines.append(f"- {{{', '.join(items)}}}")
        if self.match != "names":
            lines.append(f"match: {self.match}")
        return "\n".join(lines) + "\n"

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
        if not os.path.isfile(path):  # False, not an error, for a name the system refuses (too long)
            raise DomainError(f"domain file not found: {path}")
        text = read_text(path, DomainError, "domain", MAX_TEXT_BYTES)
        if path.suffix.lower() == ".json":
            data = loads_json(text, str(path), DomainError)
        else:
            data = _load_yaml(text, str(path))
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_bounds(
        cls, lower: Sequence[float], upper: Sequence[float], names: Sequence[str] | None = None, kind: str = "integer"
    ) -> Domain:
        names = list(names) if names is not None else [f"x{i}" for i in range(len(lower))]
        if not (len(lower) == len(upper) == len(names)):
            raise DomainError("bounds and names must have the same length")
        return cls(tuple(Feature(n, kind, lo, hi) for n, lo, hi in zip(names, lower, upper)))

    def __str__(self) -> str:
        rows = [
            f"{f.name}: {f.kind} [{f.min}, {f.max}]" + (" (protected)" if f.protected else "") for f in self.features
        ]
        return "Domain(\n  " + "\n  ".join(rows) + "\n)"


#: Text written as a plain YAML scalar when the resolvers read it as text (not a bool, null, number).
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
#: Characters written as they are inside a double-quoted YAML scalar (printable, no line breaks).
_QUOTED_RAW = re.compile("[ !#-\\[\\]-~\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*")


def _yaml_text(text: str) -> str:
    """A string as a YAML scalar that reads back as the same string: plain where that is safe,
    otherwise double-quoted with escapes."""
    import yaml

    if _PLAIN.fullmatch(text) and _yaml_tools()[0].resolve(yaml.ScalarNode, text, (True, False)) == _YAML_STR:
        return text
    if _QUOTED_RAW.fullmatch(text):
        return f'"{text}"'
    out = []
    for ch in text:
        if _QUOTED_RAW.fullmatch(ch):
            out.append(ch)
        elif ch in '"\\':
            out.append("\\" + ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return f'"{"".join(out)}"'


def _yaml_number(value: float | int) -> str:
    """A bound as YAML 1.1 reads it back: a float keeps a '.' before its exponent (1.0e+20, not 1e+20)."""
    if isinstance(value, float):
        text = repr(value)
        return text.replace("e", ".0e") if "e" in text and "." not in text else text
    return str(int(value))


_YAML_STR = "tag:yaml.org,2002:str"


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
        raise DomainError(
            f"{source}: feature {quoted(name)} has unknown keys "
            f"{', '.join(quoted(k) for k in sorted(unknown)[:5])} (allowed: {', '.join(FEATURE_KEYS)})"
        )
    if "kind" not in entry:  # a forgotten kind would silently measure an integer feature by length
        raise DomainError(f"{source}: feature {quoted(name)} needs a 'kind' ({', '.join(KINDS)})")
    kind = entry["kind"]
    if not isinstance(kind, str):
        raise DomainError(
            f"{source}: feature {quoted(name)}: 'kind' must be one of {', '.join(KINDS)}, got {quoted(kind)}"
        )
    if kind != "binary" and ("min" not in entry or "max" not in entry):
        raise DomainError(f"{source}: feature {quoted(name)} needs 'min' and 'max'")
    protected = entry.get("protected", False)
    if not isinstance(protected, bool):  # 'false' as text would read as true
        raise DomainError(
            f"{source}: feature {quoted(name)}: 'protected' must be true or false (unquoted), got {quoted(protected)}"
        )
    cats = entry.get("categories")
    if cats is not None:
        if not isinstance(cats, list) or not all(isinstance(c, (str, int, float)) for c in cats):
            raise DomainError(f"{source}: feature {quoted(name)}: 'categories' must be a list of labels")
        cats = tuple(c if isinstance(c, str) else quoted(c) for c in cats)
    return Feature(
        name=name, kind=kind, min=entry.get("min", 0), max=entry.get("max", 1), protected=protected, categories=cats
    )


def _load_yaml(text: str, source: str) -> Any:
    """YAML without aliases (`*name` references can expand a small file exponentially) or tags,
    in time linear in the file: objects built here from the parser's events, within
    `MAX_YAML_VALUES` values and `MAX_NESTING` levels, a domain's features counted as they are read.
    libyaml's parser where installed; PyYAML's pure-Python one (far slower) reads small files only."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        size = len(text.encode("utf-8", "replace"))
        if size > MAX_PURE_YAML_BYTES:
            raise LimitError(
                f"{source}: a YAML file of {size:,} bytes, more than faircert reads without libyaml "
                f"({MAX_PURE_YAML_BYTES:,}; see faircert.limits); write the domain as JSON, or install "
                "PyYAML with libyaml (its C extension)"
            )
        loader = yaml.SafeLoader
    try:
        parser = loader(text)
        try:
            return _from_events(parser.get_event, source)
        finally:
            parser.dispose()
    except FaircertError:
        raise
    except RecursionError:
        raise DomainError(f"{source}: YAML nested too deeply") from None
    except Exception as exc:  # the parser raises many types; all mean "not a domain file"
        reason = " ".join(str(exc).split())  # pyyaml's message spans lines: one line here
        raise DomainError(f"{source}: cannot parse domain file: {reason[:300]}") from None


def _from_events(next_event: Any, source: str) -> Any:
    """Python objects from a YAML parser's events (`next_event()` gives the next), scalars resolved
    as PyYAML's SafeLoader resolves them."""
    import yaml

    scalar_event, alias_event, end_event = yaml.ScalarEvent, yaml.AliasEvent, yaml.StreamEndEvent
    sequence_start, mapping_start = yaml.SequenceStartEvent, yaml.MappingStartEvent
    closing = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    stack: list[Any] = []  # open collections: lists and _Mapping frames
    result: list[Any] = []
    features: list[Any] | None = None  # the top-level mapping's 'features' list, counted as it grows
    cache = _scalars()
    resolved = _yaml_tools()[2]
    texts: dict[str, str] = {}
    values = 0

    def add(value: Any) -> None:
        top = stack[-1] if stack else None
        if top is None:
            result.append(value)
        elif type(top) is list:
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

    while True:
        event = next_event()
        kind = type(event)
        if kind is scalar_event or kind is sequence_start or kind is mapping_start:
            tag = event.tag
            if tag is not None and tag != "!" and not tag.startswith("tag:yaml.org,2002:"):
                raise DomainError(
                    f"{source}:{event.start_mark.line + 1}: YAML tag {quoted(tag)} is not allowed in domain files"
                )
            values += 1
            if values > MAX_YAML_VALUES:
                raise LimitError(
                    f"{source}: a YAML file of more than {MAX_YAML_VALUES:,} values (scalars, lists and "
                    "mappings), more than faircert reads (see faircert.limits); write a domain this "
                    "large as JSON"
                )
            top = stack[-1] if stack else None
            if top is features and top is not None and len(top) >= MAX_FEATURES:
                raise LimitError(
                    f"{source}: the number of features is more than {MAX_FEATURES:,}, more than "
                    "faircert reads (see faircert.limits)"
                )
            if kind is scalar_event:
                value = event.value
                if tag is not None or (event.implicit[0] and (not value or value[0] in resolved)):
                    key = (value, tag, event.implicit)  # a value a resolver may read as a number, bool, null...
                    value = cache.get(key, _NO_KEY)
                    if value is _NO_KEY:
                        value = _scalar(event, key, cache)
                else:  # text: one object for each distinct text (keys repeat on every feature)
                    value = texts.setdefault(value, value)
                if type(top) is list:  # the common cases inline: a list's item, a mapping's key or value
                    top.append(value)
                elif top is not None and top.key is not _NO_KEY:
                    top.items[top.key] = value
                    top.key = _NO_KEY
                else:
                    add(value)
                continue
            if len(stack) >= MAX_NESTING:
                raise LimitError(
                    f"{source}: YAML nested more than {MAX_NESTING} levels deep; faircert reads at most "
                    "that (see faircert.limits)"
                )
            if kind is sequence_start:
                stack.append([])
                if (
                    top is not None
                    and len(stack) == 2
                    and not result
                    and type(top) is _Mapping
                    and top.key == "features"
                ):
                    features = stack[-1]
            else:
                stack.append(_Mapping())
        elif kind in closing:
            done = stack.pop()
            add(done if type(done) is list else done.items)
        elif kind is alias_event:
            mark = event.start_mark
            raise DomainError(
                f"{source}:{mark.line + 1}: YAML aliases (*name) are not allowed in domain files; write the value out"
            )
        elif kind is end_event or event is None:
            return result[0] if result else None


_NO_KEY = object()


class _Mapping:
    """A mapping being read: its items, and the key waiting for its value."""

    __slots__ = ("items", "key")

    def __init__(self) -> None:
        self.items: dict[Any, Any] = {}
        self.key: Any = _NO_KEY


def _scalar(event: Any, key: tuple, cache: dict) -> Any:
    """A scalar as SafeLoader constructs it: its implicit resolvers pick the tag of a plain value.
    Domain files repeat their words and small numbers, so each distinct scalar is resolved once
    (`key` in `cache`)."""
    import yaml

    resolver, constructor, _ = _yaml_tools()
    value, tag = event.value, event.tag
    if tag is None or tag == "!":
        tag = resolver.resolve(yaml.ScalarNode, value, event.implicit)
    out = value if tag == _YAML_STR else constructor.construct_object(yaml.ScalarNode(tag, value), deep=False)
    if len(cache) >= 100_000:
        cache.clear()
    cache[key] = out
    return out


@functools.cache
def _scalars() -> dict:
    """Resolved scalars (immutable values: shared between the places they appear)."""
    return {}


@functools.cache
def _yaml_tools() -> tuple[Any, Any, Any]:
    """PyYAML's own resolver and safe constructor, made once, and the first characters of the plain
    scalars its implicit resolvers may read as something other than text: any other plain scalar is
    text (unless a resolver for every first character was registered)."""
    import yaml

    resolver = yaml.resolver.Resolver()
    first = frozenset(resolver.yaml_implicit_resolvers)
    return resolver, yaml.constructor.SafeConstructor(), first if None not in first else _AnyCharacter()


class _AnyCharacter:
    def __contains__(self, item: object) -> bool:
        return True
