"""Results of group-fairness questions: per-group probability intervals and metrics."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..errors import PropertyError
from ..metrics import METRICS, MetricInterval, gap_interval, ratio_interval
from .audit import AuditTables
from .base import DECISION_TOLERANCE, EXIT_CODES, HEADLINE_UNDECIDED, Verdict, statistical_block

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd

#: Metrics of group fairness (`faircert.metrics`): ratios (DI: min/max over groups, higher is
#: fairer, checked as value >= threshold) and gaps (SP, EO, ...: max - min, checked as value <= threshold).
GROUP_METRICS = tuple(METRICS)

#: Why a group run ended, in the words of the other results' `stopped` (done, time limit,
#: interrupted, memory limit; and sample budget for sampling), from the engines' own words in
#: `stats["stopped"]`. Every other word there (converged, threshold decided, target width, row
#: limit) is a run that ended by itself: done.
STOPPED_FROM_STATS = {
    "budget": "time limit",
    "interrupted": "interrupted",
    "memory limit": "memory limit",
    "sample limit": "sample budget",
}


#: How a group estimate is drawn (the method of its statistical blocks).
ESTIMATE_METHOD = (
    "sequential sampling from the same population (binomial intervals, a union bound over every rate and "
    "every look): all rates and metrics hold together"
)


@dataclass
class GroupProbability:
    """P[yhat = 1 | group] as an interval (exact engines: low == high), with P[group] itself."""

    group: dict[str, Any]
    low: float
    high: float
    #: P[group] under the population (its lower bound where not exact; `size_high` its upper).
    size: float
    size_high: float | None = None

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.group.items())

    @property
    def value(self) -> float:
        """The point value (midpoint of the interval; the exact value for exact engines)."""
        return 0.5 * (self.low + self.high)

    @property
    def exact(self) -> bool:
        return self.low == self.high

    def to_dict(self) -> dict[str, Any]:
        out = {"group": dict(self.group), "name": self.name, "low": self.low, "high": self.high, "size": self.size}
        if self.size_high is not None:
            out["size_high"] = self.size_high
        return out


@dataclass
class Influence:
    """Fairness influence of a feature set S: quantity(population) - quantity(S made uniform)."""

    features: list[str]
    #: group name -> FIF on P[yhat=1 | group] (base minus perturbed, the paper's sign).
    by_group: dict[str, float]
    di: float
    sp: float
    #: group name -> P[yhat=1 | group] after the replacement.
    perturbed: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GroupDetails(TypedDict, total=False):
    """How a group answer was found (`GroupResult.build` keeps them as given)."""

    approximations: list[str] | None
    elapsed_s: float
    model: str
    protected: list[str] | None
    label: str | None
    stats: dict[str, Any] | None


@dataclass
class GroupResult(Verdict):
    """Group fairness of a classifier under a population: per-group probabilities and metrics."""

    verdict: str
    groups: list[GroupProbability]
    metrics: dict[str, MetricInterval]
    most_favoured: str
    least_favoured: str
    #: Threshold of the ratio metrics (DI, the four-fifths rule by default); gaps keep theirs in `metrics`.
    threshold: float
    engine: str
    population: str
    approximations: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    model: str = ""
    protected: list[str] = field(default_factory=list)
    label: str | None = None
    #: Per-condition group probabilities: "Y=0"/"Y=1" (equalized odds), "pcf" (mediators redistributed).
    conditional: dict[str, list[GroupProbability]] = field(default_factory=dict)
    influence: list[Influence] = field(default_factory=list)
    #: Engine-specific figures (states explored, population learning time, bins used, ...).
    stats: dict[str, Any] = field(default_factory=dict)
    #: Where the sound bounds are wide: the same question answered by sampling the same population
    #: (statistical intervals, wrong with probability at most `estimate.stats["delta"]`; not bounds).
    estimate: GroupResult | None = None
    #: The bias-audit tables of the data's rows, where asked (`audit_table=True`).
    audit: AuditTables | None = None
    #: How the engine answered, where it has more than one way (the subset-sum engine: exact tables,
    #: or score histograms once the tables outgrow their cap); "" where it has one.
    method: str = ""

    @property
    def engine_description(self) -> str:
        """The engine's registered name, with how it answered where it has more than one way."""
        return f"{self.engine} ({self.method})" if self.method else self.engine

    @property
    def exact(self) -> bool:
        return all(g.exact for g in self.groups)

    @property
    def rates(self) -> dict[str, float]:
        """Group name -> P[yhat = 1 | group] (the midpoint where only bounds are known)."""
        return {g.name: g.value for g in self.groups}

    @property
    def by_group(self) -> pd.DataFrame:
        """fairlearn-style: a pandas DataFrame with one row per group (indexed by the protected
        attributes' values, like MetricFrame.by_group) and columns low, high (bounds on
        P[yhat = 1 | group]; equal when exact) and size (P[group])."""
        import pandas as pd

        names = list(self.groups[0].group) if self.groups else list(self.protected)
        rows = [tuple(g.group.values()) for g in self.groups]
        index = (
            pd.Index([r[0] for r in rows], name=names[0])
            if len(names) == 1
            else pd.MultiIndex.from_tuples(rows, names=names)
        )
        return pd.DataFrame(
            {
                "low": [g.low for g in self.groups],
                "high": [g.high for g in self.groups],
                "size": [g.size for g in self.groups],
            },
            index=index,
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-group table (`by_group`)."""
        return self.by_group

    @property
    def stopped(self) -> str:
        """Why the run ended, in the words every result uses (`STOPPED_FROM_STATS`)."""
        return STOPPED_FROM_STATS.get(str(self.stats.get("stopped", "")), "done")

    def metric(self, name: str) -> float:
        """The point value of a metric (midpoint of its interval)."""
        m = self.metrics[name]
        return 0.5 * (m.low + m.high)

    @classmethod
    def build(
        cls,
        groups: list[GroupProbability],
        *,
        engine: str,
        population: str,
        threshold: float = 0.8,
        gap_thresholds: dict[str, float] | None = None,
        metrics: tuple[str, ...] = ("di", "sp"),
        conditional: dict[str, list[GroupProbability]] | None = None,
        **details: Unpack[GroupDetails],
    ) -> GroupResult:
        """Metrics (sound intervals), favoured groups and the verdict from per-group intervals.

        DI and SP come from `groups`; the other metrics from the conditional probabilities they need
        (`faircert.metrics`): `conditional["Y=<label value>"]` (EO, equal opportunity),
        `conditional["yhat=1"]` (predictive parity), `conditional["pcf"]`. Ratios are checked
        against `threshold`, a gap metric against `gap_thresholds[name]` when given. The verdict is
        unfair if any checked metric is proven violated, fair if all are proven satisfied, unknown
        otherwise. `details` say how the answer was found, and are kept as given.
        """
        conditional = dict(conditional or {})
        gap_thresholds = dict(gap_thresholds or {})
        if not groups:
            raise PropertyError("no protected group to compare")
        unknown = [m for m in metrics if m not in GROUP_METRICS]
        if unknown:
            raise PropertyError(f"unknown metric(s) {unknown}; choose from {', '.join(GROUP_METRICS)}")
        wanted = ["di", "sp"] + [m for m in metrics if m not in ("di", "sp")]
        out: dict[str, MetricInterval] = {name: METRICS[name].interval(groups, conditional) for name in wanted}
        for m in out.values():  # ratios are checked against `threshold`, gaps against their own
            m.threshold = threshold if m.direction == ">=" else gap_thresholds.get(m.name)
        checked = [m.check(DECISION_TOLERANCE) for m in out.values() if m.threshold is not None]
        verdict = (
            "unfair" if "unfair" in checked else "fair" if checked and all(v == "fair" for v in checked) else "unknown"
        )
        top = max(groups, key=lambda g: g.value)
        bottom = min(groups, key=lambda g: g.value)
        return cls(
            verdict=verdict,
            groups=list(groups),
            metrics=out,
            most_favoured=top.name,
            least_favoured=bottom.name,
            threshold=threshold,
            engine=engine,
            population=population,
            approximations=list(details.get("approximations") or []),
            elapsed_s=details.get("elapsed_s", 0.0),
            model=details.get("model", ""),
            protected=list(details.get("protected") or []),
            label=details.get("label"),
            conditional=conditional,
            stats=dict(details.get("stats") or {}),
        )

    @property
    def statistical_first(self) -> bool:
        """Whether reports lead with the estimate: some rate's sound bounds are wider than
        `HEADLINE_UNDECIDED`, and an estimate was sampled beside them."""
        return self.estimate is not None and max(g.high - g.low for g in self.groups) > HEADLINE_UNDECIDED

    def statistical_exit_code(self) -> int:
        """The exit code of the statistical answer: the estimate's metrics checked against the
        thresholds, or the proofs' where the bounds were tight enough to need no estimate.
        (`exit_code` follows the proofs.)"""
        return EXIT_CODES[(self.estimate or self).verdict]

    def statistical_blocks(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """The estimate of each rate (by group name) and of each metric, in the shared statistical
        shape; empty without an estimate. The intervals hold together, every rate and metric at
        once, with the stated confidence."""
        est = self.estimate
        if est is None:
            return {}, {}
        confidence = 1.0 - float(est.stats.get("delta") or 0.0)
        samples = int(est.stats.get("samples") or 0)
        method = str(est.stats.get("method") or ESTIMATE_METHOD)

        def block(value: float, low: float, high: float) -> dict[str, Any]:
            return statistical_block(value, low, high, confidence, samples, method)

        rates = {g.name: block(g.value, g.low, g.high) for g in est.groups}
        metrics = {k: block(0.5 * (m.low + m.high), m.low, m.high) for k, m in est.metrics.items()}
        return rates, metrics

    def to_dict(self) -> dict[str, Any]:
        rates, metrics = self.statistical_blocks()
        return {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "groups": [g.to_dict() | ({"statistical": rates[g.name]} if g.name in rates else {}) for g in self.groups],
            "by_group": self.rates,
            "metrics": {
                k: m.to_dict() | ({"statistical": metrics[k]} if k in metrics else {}) for k, m in self.metrics.items()
            },
            "most_favoured": self.most_favoured,
            "least_favoured": self.least_favoured,
            "threshold": self.threshold,
            "engine": self.engine,
            "method": self.method,
            "population": self.population,
            "approximations": list(self.approximations),
            "elapsed_s": self.elapsed_s,
            "model": self.model,
            "protected": list(self.protected),
            "label": self.label,
            "conditional": {k: [g.to_dict() for g in v] for k, v in self.conditional.items()},
            "influence": [i.to_dict() for i in self.influence],
            "stats": self.stats,
            "stopped": self.stopped,
            "estimate": None if self.estimate is None else self.estimate.estimate_dict(),
            "audit_tables": None if self.audit is None else self.audit.to_dict(),
        }

    def estimate_dict(self) -> dict[str, Any]:
        """A sampled answer, as the sound result's `estimate`: intervals with their error probability."""
        return {
            "kind": "statistical (sampled from the same population; intervals, not bounds)",
            "delta": self.stats.get("delta"),
            "samples": self.stats.get("samples"),
            "method": str(self.stats.get("method") or ESTIMATE_METHOD),
            "groups": [g.to_dict() for g in self.groups],
            "conditional": {k: [g.to_dict() for g in v] for k, v in self.conditional.items()},
            "metrics": {
                k: {"name": m.name, "low": m.low, "high": m.high, "detail": m.detail} for k, m in self.metrics.items()
            },
        }  # an estimate decides nothing: no verdict

    def __str__(self) -> str:
        def interval(lo: float, hi: float) -> str:
            return f"{lo:.6f}" if lo == hi else f"[{lo:.6f}, {hi:.6f}]"

        lines = [
            f"verdict: {self.verdict} ({self.engine_description}, {self.elapsed_s:.2f} s)",
            f"model: {self.model}",
            f"population: {self.population}",
            f"protected: {', '.join(self.protected)}" + (f"; label: {self.label}" if self.label else ""),
        ]
        for g in self.groups:
            size = f"{g.size:.6f}" if g.size_high is None else f"in {interval(g.size, g.size_high)}"
            lines.append(
                f"  P[yhat=1 | {g.name}] = {interval(g.low, g.high)}  (P[group] {'= ' * (g.size_high is None)}{size})"
            )
        lines.append(f"most favoured: {self.most_favoured}; least favoured: {self.least_favoured}")
        for m in self.metrics.values():
            check = ""
            if m.threshold is not None:
                check = f"  ({m.direction} {m.threshold:g}: {m.verdict})"
            lines.append(f"{m.name.upper()} = {interval(m.low, m.high)}{check}")
        for a in self.approximations:
            lines.append(f"approximation: {a}")
        if self.stopped != "done":
            lines.append(f"stopped: {self.stopped} ({self.stats.get('stopped')})")
        if self.estimate is not None:
            est = self.estimate
            sampled = [
                f"statistical answer (sampled from the same population, not a bound; the intervals hold "
                f"together with confidence {100 * (1 - est.stats.get('delta', 0)):g}%, "
                f"{est.stats.get('samples', 0):,} samples):"
            ]
            sampled += [f"  P[yhat=1 | {g.name}] in [{g.low:.4f}, {g.high:.4f}]" for g in est.groups]
            sampled += [f"  {m.name.upper()} in [{m.low:.4f}, {m.high:.4f}]" for m in est.metrics.values()]
            if self.statistical_first:  # the proofs left the rates wide: the sampled answer leads
                lines[4:4] = sampled + ["proofs (sound bounds):"]
            else:
                lines += sampled
        return "\n".join(lines)


def di_interval(groups: list[GroupProbability]) -> MetricInterval:
    """DI: min_g p_g / max_g p_g as a sound interval (`metrics.base.ratio_interval`)."""
    return ratio_interval("di", groups)


__all__ = [
    "GROUP_METRICS",
    "GroupProbability",
    "GroupResult",
    "Influence",
    "MetricInterval",
    "di_interval",
    "gap_interval",
]
