"""Group-fairness metrics, one per module: a module of this package that defines `METRIC` (a
`base.GroupMetric`) adds a metric everywhere (`--metric`, results, reports, the engines'
conditionals). Names and aliases resolve here."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..errors import PropertyError
from .base import NEEDS, GroupMetric, MetricInterval, gap_interval, ratio_interval


def _discover() -> dict[str, GroupMetric]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            found.append(importlib.import_module(f"{__name__}.{info.name}").METRIC)
    return {m.name: m for m in sorted(found, key=lambda m: (m.order, m.name))}


#: Short name -> metric, in listing order.
METRICS: dict[str, GroupMetric] = _discover()
#: Every name a metric is known by (its short name and its aliases) -> its short name.
ALIASES: dict[str, str] = {alias: m.name for m in METRICS.values() for alias in (m.name, *m.aliases)}
#: What `group` reports when no metric is named.
DEFAULT = ("di", "sp")


def metric_names(names: Any) -> tuple[str, ...]:
    """Metric names or aliases (a comma-separated string or a list; faircert's short names,
    fairlearn's and AIF360's function names, any case, - for _) as short names, in order, once."""
    items = names.split(",") if isinstance(names, str) else list(names or ())
    out: list[str] = []
    for item in items:
        key = str(item).strip().lower().replace("-", "_")
        if not key:
            continue
        if key not in ALIASES:
            raise PropertyError(
                f"unknown metric {str(item).strip()!r}; choose from {', '.join(METRICS)} or "
                f"another name of one: {', '.join(a for a in ALIASES if a not in METRICS)}"
            )
        if ALIASES[key] not in out:
            out.append(ALIASES[key])
    return tuple(out) or DEFAULT


def needing(metrics: Any, what: str) -> list[str]:
    """Which of `metrics` need the conditional probabilities `what` (one of `base.NEEDS`)."""
    assert what in NEEDS, what
    return [m for m in metrics if METRICS[m].needs == what]


def spelled(names: Any) -> str:
    """Metrics for a message: "equalized odds difference (eo), equal opportunity ratio (eopr)"."""
    return ", ".join(f"{METRICS[m].summary().split(':')[0].lower()} ({m})" for m in names)


__all__ = [
    "ALIASES",
    "DEFAULT",
    "METRICS",
    "NEEDS",
    "GroupMetric",
    "MetricInterval",
    "gap_interval",
    "metric_names",
    "needing",
    "ratio_interval",
    "spelled",
]
