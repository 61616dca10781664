"""What every group-fairness metric is: a name, how it is checked, the conditional probabilities it
needs from an engine, and its value as a sound interval computed from the groups' intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ..errors import PropertyError

#: The conditional probabilities an engine can be asked for beside P[yhat = 1 | group]:
#: "label": P[yhat = 1 | group, Y = y] for each of the label's two values (keys "Y=<y>");
#: "mediators": P[yhat = 1 | group] with the mediators redistributed (key "pcf");
#: "predicted": P[Y = positive | yhat = 1, group] (key "yhat=1").
NEEDS = ("label", "mediators", "predicted")


class Rate(Protocol):
    """A group's probability as an interval (`results.group.GroupProbability`)."""

    low: float
    high: float

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> float: ...


@dataclass
class MetricInterval:
    """A group-fairness metric as a sound interval, and its check against a threshold if one is set."""

    name: str
    low: float
    high: float
    threshold: float | None = None
    #: "fair" (proven within the threshold), "unfair" (proven outside), "unknown", or "" if unchecked.
    verdict: str = ""
    #: Which groups (or condition) attain it, for people: e.g. "Y=1: min race=0 / max race=1".
    detail: str = ""
    #: How it is checked: ">=" (a ratio, higher is fairer) or "<=" (a gap, lower is fairer).
    direction: str = "<="

    def check(self, tolerance: float) -> str:
        """Decide against the threshold on strict margins (value >= t or value <= t)."""
        if self.threshold is None:
            self.verdict = ""
        elif self.direction == ">=":
            self.verdict = (
                "fair"
                if self.low >= self.threshold + tolerance
                else "unfair"
                if self.high <= self.threshold - tolerance
                else "unknown"
            )
        else:
            self.verdict = (
                "fair"
                if self.high <= self.threshold - tolerance
                else "unfair"
                if self.low >= self.threshold + tolerance
                else "unknown"
            )
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GroupMetric:
    """One metric. Subclasses set the attributes and write `interval`; the formula goes in the
    subclass's docstring, which `faircert group --help` and the documentation show."""

    #: Short name (`--metric NAME`, the key in a result's `metrics`).
    name: str = ""
    #: How reports title it.
    title: str = ""
    #: Other names it is known by (fairlearn's, AIF360's), lower case.
    aliases: tuple[str, ...] = ()
    #: ">=": a ratio checked against the ratio threshold (DI's four-fifths rule); "<=": a gap.
    direction: str = "<="
    #: Which conditional probabilities it needs (one of NEEDS), or "" for the groups' own rates.
    needs: str = ""
    #: Where it is listed among the metrics.
    order: int = 100

    def interval(self, groups: Sequence[Rate], conditional: Mapping[str, Sequence[Rate]]) -> MetricInterval:
        raise NotImplementedError

    def summary(self) -> str:
        """The docstring's first paragraph, on one line."""
        return " ".join((type(self).__doc__ or self.title).split("\n\n")[0].split())


def ratio_interval(name: str, groups: Sequence[Rate], prefix: str = "") -> MetricInterval:
    """min_g p_g / max_g p_g as a sound interval; 1 when every group's probability is 0 (no disparity)."""
    if not groups:
        raise PropertyError(f"{name}: no group to compare")
    min_lo = min(g.low for g in groups)
    min_hi = min(g.high for g in groups)
    max_lo = max(g.low for g in groups)
    max_hi = max(g.high for g in groups)
    low = min_lo / max_hi if max_hi > 0 else 1.0
    high = min(1.0, min_hi / max_lo) if max_lo > 0 else 1.0
    low = min(low, high)
    bottom = min(groups, key=lambda g: g.value)
    top = max(groups, key=lambda g: g.value)
    detail = f"{prefix}min {bottom.name} / max {top.name}"
    if max_hi == 0:
        detail = f"{prefix}no group ever gets the positive outcome; taken as 1 (no disparity)"
    return MetricInterval(name, low, high, detail=detail, direction=">=")


def gap_interval(name: str, groups: Sequence[Rate], prefix: str = "") -> MetricInterval:
    """max_g p_g - min_g p_g as a sound interval."""
    if not groups:
        raise PropertyError(f"{name}: no group to compare")
    low = max(0.0, max(g.low for g in groups) - min(g.high for g in groups))
    high = max(g.high for g in groups) - min(g.low for g in groups)
    bottom = min(groups, key=lambda g: g.value)
    top = max(groups, key=lambda g: g.value)
    return MetricInterval(name, low, high, detail=f"{prefix}max {top.name} - min {bottom.name}")


def condition_title(key: str) -> str:
    """A conditional's column title in reports: "| Y=1" (rates given the label), "precision"
    (P[Y = positive | yhat = 1, group]), "PCF" (mediators redistributed)."""
    return f"| {key}" if key.startswith("Y=") else "precision" if key == "yhat=1" else key.upper()


def label_keys(name: str, conditional: Mapping[str, Sequence[Rate]]) -> list[str]:
    """The two "Y=<y>" keys of `conditional`, the positive label last: 1 over 0, True over False,
    otherwise the later value in sorted order (as scikit-learn orders a classifier's classes)."""
    keys = [k for k in conditional if k.startswith("Y=")]
    if len(keys) != 2:
        raise PropertyError(
            f"{name} needs the group probabilities given each of the label's two values (conditional keys 'Y=<value>')"
        )

    def order(key: str) -> tuple[int, Any]:
        value = key[2:]
        if value.lower() in ("true", "false"):
            return 0, value.lower() == "true"
        try:
            return 0, float(value)
        except ValueError:
            return 1, value

    return sorted(keys, key=order)


def conditional_rates(name: str, conditional: Mapping[str, Sequence[Rate]], key: str, what: str) -> Sequence[Rate]:
    """`conditional[key]`, or a clear error saying what the metric needs."""
    if key not in conditional:
        raise PropertyError(f"{name} needs {what}")
    return conditional[key]
