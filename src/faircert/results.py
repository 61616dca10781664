"""Result objects: what engines return and reports present.

`Result` answers an individual-fairness (or robustness) question. Its JSON form is a stable,
documented schema (README, "JSON result schema"); add keys, never rename them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

VERDICTS = ("fair", "unfair", "unknown")
#: VNN-COMP words for faircert verdicts: a counterexample is `sat`, a proof is `unsat`.
VNNCOMP_WORDS = {"fair": "unsat", "unfair": "sat", "unknown": "unknown"}
EXIT_CODES = {"fair": 0, "unfair": 1, "unknown": 2}


class Verdict:
    """What every result type shares: a checked verdict, its exit code, its VNN-COMP word, JSON."""

    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def vnncomp(self) -> str:
        return VNNCOMP_WORDS[self.verdict]

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_jsonable)


@dataclass
class Counterexample:
    """A pair of inputs that the real model labels differently; both outputs are re-computed."""

    x: list[float]
    x_prime: list[float]
    output: float
    output_prime: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StatisticalEstimate:
    """A sampled estimate of the unfair share with a confidence interval (never a guarantee)."""

    unfair: float
    ci_low: float
    ci_high: float
    confidence: float
    samples: int
    method: str = "stratified"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Result(Verdict):
    """Sound shares of the domain proven fair / proven unfair / undecided, plus evidence."""

    verdict: str
    certified: float
    falsified: float
    undecided: float
    domain_size: float
    counterexamples: list[Counterexample] = field(default_factory=list)
    statistical: StatisticalEstimate | None = None
    elapsed_s: float = 0.0
    engine: str = ""
    model: str = ""
    protected: list[str] = field(default_factory=list)
    epsilon: dict[str, float] = field(default_factory=dict)
    #: Tree engines: sound bounds on M_fair / M_robust and the sizes they are measured on.
    measure_lower: float | None = None
    measure_upper: float | None = None
    confident_size: float | None = None
    unfair_size: float | None = None
    #: Engine-specific figures (boxes processed, throughput, ...), for benchmarks and curious users.
    stats: dict[str, Any] = field(default_factory=dict)
    feature_names: list[str] = field(default_factory=list)

    def column_names(self) -> list[str]:
        """Feature names for tables of inputs (x0, x1, ... when the domain had none)."""
        if self.feature_names:
            return list(self.feature_names)
        width = len(self.counterexamples[0].x) if self.counterexamples else 0
        return [f"x{i}" for i in range(width)]

    def to_dict(self) -> dict[str, Any]:
        out = {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "certified": self.certified,
            "falsified": self.falsified,
            "undecided": self.undecided,
            "domain_size": self.domain_size,
            "counterexamples": [c.to_dict() for c in self.counterexamples],
            "statistical": self.statistical.to_dict() if self.statistical else None,
            "elapsed_s": self.elapsed_s,
            "engine": self.engine,
            "model": self.model,
            "protected": list(self.protected),
            "epsilon": dict(self.epsilon),
            "feature_names": list(self.feature_names),
            "stats": self.stats,
        }
        if self.measure_lower is not None:
            out.update(measure_lower=self.measure_lower, measure_upper=self.measure_upper,
                       confident_size=self.confident_size, unfair_size=self.unfair_size)
        return out

    def __str__(self) -> str:
        lines = [
            f"verdict: {self.verdict} ({self.engine}, {self.elapsed_s:.2f} s)",
            f"model: {self.model}",
            f"protected: {', '.join(self.protected)}" + (f"; epsilon: {self.epsilon}" if self.epsilon else ""),
            f"certified fair: {100 * self.certified:.4f}%  proven unfair: {100 * self.falsified:.4f}%  "
            f"undecided: {100 * self.undecided:.4f}%  (of {self.domain_size:.6g})",
        ]
        if self.measure_lower is not None:
            lines.append(f"measure in [{self.measure_lower:.6f}, {self.measure_upper:.6f}]")
        if self.statistical:
            s = self.statistical
            lines.append(f"statistical unfair share: {100 * s.unfair:.4f}% "
                         f"({100 * s.confidence:g}% CI [{100 * s.ci_low:.4f}%, {100 * s.ci_high:.4f}%], {s.samples} samples)")
        lines.append(f"counterexamples: {len(self.counterexamples)}")
        return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# ----- group fairness ----------------------------------------------------------------------------
#: Metrics of group fairness. DI is a ratio (min/max over groups, higher is fairer, checked as
#: DI >= threshold); SP, EO and PCF are gaps (max - min, lower is fairer, checked as gap <= threshold).
GROUP_METRICS = ("di", "sp", "eo", "pcf")
#: Values within this distance of a threshold are undecided: floating point never decides a verdict.
DECISION_TOLERANCE = 1e-9


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
        out = {"group": dict(self.group), "name": self.name, "low": self.low, "high": self.high,
               "size": self.size}
        if self.size_high is not None:
            out["size_high"] = self.size_high
        return out


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

    def check(self, tolerance: float = DECISION_TOLERANCE) -> str:
        """Decide against the threshold on strict margins (DI: ratio >= t; gaps: value <= t)."""
        if self.threshold is None:
            self.verdict = ""
        elif self.name == "di":
            self.verdict = ("fair" if self.low >= self.threshold + tolerance else
                            "unfair" if self.high <= self.threshold - tolerance else "unknown")
        else:
            self.verdict = ("fair" if self.high <= self.threshold - tolerance else
                            "unfair" if self.low >= self.threshold + tolerance else "unknown")
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


@dataclass
class GroupResult(Verdict):
    """Group fairness of a classifier under a population: per-group probabilities and metrics."""

    verdict: str
    groups: list[GroupProbability]
    metrics: dict[str, MetricInterval]
    most_favoured: str
    least_favoured: str
    #: DI threshold (four-fifths rule by default); gap thresholds for SP/EO/PCF live in `metrics`.
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

    @property
    def exact(self) -> bool:
        return all(g.exact for g in self.groups)

    @property
    def by_group(self) -> dict[str, float]:
        """fairlearn-style: group name -> P[yhat = 1 | group] (the midpoint where only bounds are known)."""
        return {g.name: g.value for g in self.groups}

    @property
    def group_min(self) -> float:
        return min(g.value for g in self.groups)

    @property
    def group_max(self) -> float:
        return max(g.value for g in self.groups)

    def metric(self, name: str) -> float:
        """The point value of a metric (midpoint of its interval)."""
        m = self.metrics[name]
        return 0.5 * (m.low + m.high)

    @classmethod
    def build(cls, groups: list[GroupProbability], *, engine: str, population: str,
              threshold: float = 0.8, gap_thresholds: dict[str, float] | None = None,
              metrics: tuple[str, ...] = ("di", "sp"),
              conditional: dict[str, list[GroupProbability]] | None = None,
              approximations: list[str] | None = None, elapsed_s: float = 0.0, model: str = "",
              protected: list[str] | None = None, label: str | None = None,
              stats: dict[str, Any] | None = None) -> GroupResult:
        """Metrics (sound intervals), favoured groups and the verdict from per-group intervals.

        DI and SP come from `groups`; EO from the two `conditional["Y=<label value>"]` lists; PCF
        from `conditional["pcf"]`. DI is checked against `threshold`, a gap metric against
        `gap_thresholds[name]` when given. The verdict is unfair if any checked metric is proven
        violated, fair if all are proven satisfied, unknown otherwise.
        """
        from .errors import PropertyError

        conditional = dict(conditional or {})
        gap_thresholds = dict(gap_thresholds or {})
        if not groups:
            raise PropertyError("no protected group to compare")
        unknown = [m for m in metrics if m not in GROUP_METRICS]
        if unknown:
            raise PropertyError(f"unknown metric(s) {unknown}; choose from {', '.join(GROUP_METRICS)}")
        wanted = ["di", "sp"] + [m for m in metrics if m not in ("di", "sp")]
        out: dict[str, MetricInterval] = {}
        out["di"] = _di_interval(groups)
        out["sp"] = _gap_interval("sp", groups)
        if "eo" in wanted:
            parts = [_gap_interval("eo", v, prefix=f"{k}: ") for k, v in conditional.items() if k.startswith("Y=")]
            if len(parts) != 2:
                raise PropertyError("equalized odds needs the group probabilities given each of the two labels "
                                    "(conditional keys 'Y=<value>')")
            worst = max(parts, key=lambda m: (m.high, m.low))
            out["eo"] = MetricInterval("eo", max(m.low for m in parts), max(m.high for m in parts),
                                       detail=worst.detail)
        if "pcf" in wanted:
            if "pcf" not in conditional:
                raise PropertyError("path-specific causal fairness needs the group probabilities with mediators redistributed")
            out["pcf"] = _gap_interval("pcf", conditional["pcf"])
        out["di"].threshold = threshold
        for name, t in gap_thresholds.items():
            if name in out and name != "di":
                out[name].threshold = t
        checked = [m.check() for m in out.values() if m.threshold is not None]
        verdict = ("unfair" if "unfair" in checked else
                   "fair" if checked and all(v == "fair" for v in checked) else "unknown")
        top = max(groups, key=lambda g: g.value)
        bottom = min(groups, key=lambda g: g.value)
        return cls(verdict=verdict, groups=list(groups), metrics=out, most_favoured=top.name,
                   least_favoured=bottom.name, threshold=threshold, engine=engine, population=population,
                   approximations=list(approximations or []), elapsed_s=elapsed_s, model=model,
                   protected=list(protected or []), label=label, conditional=conditional,
                   stats=dict(stats or {}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "groups": [g.to_dict() for g in self.groups],
            "by_group": self.by_group,
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
            "most_favoured": self.most_favoured,
            "least_favoured": self.least_favoured,
            "threshold": self.threshold,
            "engine": self.engine,
            "population": self.population,
            "approximations": list(self.approximations),
            "elapsed_s": self.elapsed_s,
            "model": self.model,
            "protected": list(self.protected),
            "label": self.label,
            "conditional": {k: [g.to_dict() for g in v] for k, v in self.conditional.items()},
            "influence": [i.to_dict() for i in self.influence],
            "stats": self.stats,
        }

    def __str__(self) -> str:
        def interval(lo: float, hi: float) -> str:
            return f"{lo:.6f}" if lo == hi else f"[{lo:.6f}, {hi:.6f}]"

        lines = [f"verdict: {self.verdict} ({self.engine}, {self.elapsed_s:.2f} s)",
                 f"model: {self.model}", f"population: {self.population}",
                 f"protected: {', '.join(self.protected)}" + (f"; label: {self.label}" if self.label else "")]
        for g in self.groups:
            lines.append(f"  P[yhat=1 | {g.name}] = {interval(g.low, g.high)}  (P[group] = {g.size:.6f})")
        lines.append(f"most favoured: {self.most_favoured}; least favoured: {self.least_favoured}")
        for m in self.metrics.values():
            check = ""
            if m.threshold is not None:
                op = ">=" if m.name == "di" else "<="
                check = f"  ({op} {m.threshold:g}: {m.verdict})"
            lines.append(f"{m.name.upper()} = {interval(m.low, m.high)}{check}")
        for a in self.approximations:
            lines.append(f"approximation: {a}")
        return "\n".join(lines)


def _di_interval(groups: list[GroupProbability]) -> MetricInterval:
    """min_g p_g / max_g p_g as a sound interval; 1 when every group's probability is 0 (no disparity)."""
    min_lo = min(g.low for g in groups)
    min_hi = min(g.high for g in groups)
    max_lo = max(g.low for g in groups)
    max_hi = max(g.high for g in groups)
    low = min_lo / max_hi if max_hi > 0 else 1.0
    high = min(1.0, min_hi / max_lo) if max_lo > 0 else 1.0
    low = min(low, high)
    bottom = min(groups, key=lambda g: g.value)
    top = max(groups, key=lambda g: g.value)
    detail = f"min {bottom.name} / max {top.name}"
    if max_hi == 0:
        detail = "no group ever gets the positive decision; DI taken as 1 (no disparity)"
    return MetricInterval("di", low, high, detail=detail)


def _gap_interval(name: str, groups: list[GroupProbability], prefix: str = "") -> MetricInterval:
    """max_g p_g - min_g p_g as a sound interval."""
    if not groups:
        from .errors import PropertyError

        raise PropertyError(f"{name}: no group to compare")
    low = max(0.0, max(g.low for g in groups) - min(g.high for g in groups))
    high = max(g.high for g in groups) - min(g.low for g in groups)
    bottom = min(groups, key=lambda g: g.value)
    top = max(groups, key=lambda g: g.value)
    return MetricInterval(name, low, high, detail=f"{prefix}max {top.name} - min {bottom.name}")


# ----- programs (FairSquare-style group fairness of probabilistic programs) -----------------------
@dataclass
class ProgramResult(Verdict):
    """Group fairness of a decision program under a population: probability and ratio intervals.

    `guarantee` is "sound" (the intervals are mathematical bounds) or, for the sampling method,
    a statement of the error probability of the verdict (e.g. "P[wrong verdict] <= 1e-06").
    """

    verdict: str
    ratio_low: float
    ratio_high: float
    probabilities: dict[str, tuple[float, float]]
    epsilon: float
    method: str
    guarantee: str
    elapsed_s: float
    samples: int | None = None
    kind: str = "ratio"
    program: str = ""
    #: Why the engine stopped without a verdict ("time limit", "box budget", ...), else "".
    stopped: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> tuple[float, float]:
        return (self.ratio_low, self.ratio_high)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "ratio": {"low": _finite(self.ratio_low), "high": _finite(self.ratio_high)},
            "probabilities": {k: {"low": lo, "high": hi} for k, (lo, hi) in self.probabilities.items()},
            "epsilon": _finite(self.epsilon),
            "kind": self.kind,
            "method": self.method,
            "guarantee": self.guarantee,
            "elapsed_s": self.elapsed_s,
            "program": self.program,
            "stopped": self.stopped,
            "stats": self.stats,
        }
        if self.samples is not None:
            out["samples"] = self.samples
        return out

    def __str__(self) -> str:
        lines = [f"verdict: {self.verdict} ({self.method}, {self.guarantee}, {self.elapsed_s:.2f} s)",
                 f"program: {self.program}",
                 f"ratio in [{self.ratio_low:.6f}, {self.ratio_high:.6f}]  (fair iff > {1 - self.epsilon:g}, {self.kind})"
                 if not self.kind.startswith("probability") else f"property: {self.kind}"]
        for name, (lo, hi) in self.probabilities.items():
            lines.append(f"  P[{name}] in [{lo:.6f}, {hi:.6f}]")
        if self.samples is not None:
            lines.append(f"samples: {self.samples}")
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)


def _finite(x: float) -> float | str:
    """JSON has no infinity: an unbounded ratio end is written as the string "inf"."""
    return x if math.isfinite(x) else str(x)
