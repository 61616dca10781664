"""Results of individual-fairness questions: sound shares, counterexamples, a labelled estimate.

`Result`'s JSON form is a stable, documented schema (README, "JSON result schema"); add keys,
never rename them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .base import HEADLINE_UNDECIDED, Verdict, interval_exit_code, statistical_block

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd


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
        """The shared statistical block (`value`, `low`, `high`, ...) beside the names this block
        had first (`unfair`, `ci_low`, `ci_high`)."""
        shared = statistical_block(self.unfair, self.ci_low, self.ci_high, self.confidence, self.samples, self.method)
        return asdict(self) | shared

    @property
    def sampled(self) -> bool:
        """Whether samples made the interval (without any, it is the exact share)."""
        return self.samples > 0 and self.ci_low < self.ci_high


@dataclass
class TreeMeasure:
    """The tree engines' answer in their own terms: sound bounds on M_fair (or M_robust: the share
    of confident inputs without a counterexample; they meet when the computation converges) and
    the sizes it is measured on (counts, or volumes for real features)."""

    lower: float
    upper: float
    confident_size: float
    unfair_size: float


def _measure_figure(name: str) -> Any:
    """A `Result` property: its tree measure's figure `name`, None without a measure."""
    return property(lambda self: None if self.measure is None else getattr(self.measure, name))


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
    measure: TreeMeasure | None = None
    #: Engine-specific figures (boxes processed, throughput, ...), for benchmarks and curious users.
    stats: dict[str, Any] = field(default_factory=dict)
    feature_names: list[str] = field(default_factory=list)
    #: Category names of coded features (feature -> names by code), for people reading counterexamples.
    categories: dict[str, list[str]] = field(default_factory=dict)
    #: Each feature's [min, max] in the domain, for plots of where counterexamples lie.
    feature_ranges: dict[str, list[float]] = field(default_factory=dict)
    #: What an epsilon-twin may do: "other_protected_value" (fairness) or "robustness".
    epsilon_semantics: str | None = None
    #: Complete runs: the decision and its evidence ("proof", "counterexample", or what stayed open).
    decision: dict[str, Any] | None = None
    #: Partitioned runs: one row per partition (bounds, verdict, time, counterexample).
    partitions: list[dict[str, Any]] | None = None
    #: Exact engines: True when the shares are exact (undecided 0 by computation, not by luck of
    #: the bounds); False when they are sound bounds whose gap is `undecided`.
    exact: bool | None = None
    #: The measure of the shares: "uniform" (grid counts and volume), "independent" (the data's
    #: marginals), "empirical" (the data's rows) or "rows" (the rows given)
    population: str = "uniform"
    #: Why the run ended: "done" (nothing left open), "time limit", "interrupted", "box budget" or
    #: "memory limit" (`engines.boxes.budget`).
    stopped: str = ""

    @classmethod
    def about(cls, prop: Any, **fields: Any) -> Result:
        """A result on the property `prop` (`properties.IndividualFairness`): its protected features,
        epsilons and feature names filled in (unless `fields` gives them), with `fields`."""
        named = {"protected": prop.protected_names, "epsilon": prop.epsilon_by_name, "feature_names": prop.domain.names}
        return cls(**(named | fields))

    # the measure's figures as the JSON names them (None for engines that do not measure)
    measure_lower = _measure_figure("lower")
    measure_upper = _measure_figure("upper")
    confident_size = _measure_figure("confident_size")
    unfair_size = _measure_figure("unfair_size")

    @property
    def statistical_first(self) -> bool:
        """Whether reports lead with the statistical answer: the proofs left more than
        `HEADLINE_UNDECIDED` of the domain undecided, and samples gave an interval."""
        return self.undecided > HEADLINE_UNDECIDED and self.statistical is not None and self.statistical.sampled

    def statistical_exit_code(self, max_unfair_share: float) -> int:
        """The exit code of the statistical answer checked against a tolerated unfair share: 0 when
        the whole interval is at most `max_unfair_share`, 1 when all of it is above, 2 otherwise.
        Without an interval, the sound shares are the interval. (`exit_code` follows the proofs.)"""
        s = self.statistical
        low, high = (s.ci_low, s.ci_high) if s is not None else (self.falsified, self.falsified + self.undecided)
        return interval_exit_code(low, high, max_unfair_share, higher_is_fair=False)

    def column_names(self) -> list[str]:
        """Feature names for tables of inputs (x0, x1, ... when the domain had none)."""
        if self.feature_names:
            return list(self.feature_names)
        width = len(self.counterexamples[0].x) if self.counterexamples else 0
        return [f"x{i}" for i in range(width)]

    def to_frame(self) -> pd.DataFrame:
        """The sound shares as a pandas DataFrame: rows certified, falsified, undecided; columns
        share (of the domain) and size (share times the domain's size)."""
        import pandas as pd

        shares = {"certified": self.certified, "falsified": self.falsified, "undecided": self.undecided}
        return pd.DataFrame({"share": shares, "size": {k: v * self.domain_size for k, v in shares.items()}})

    def value_name(self, feature: str, value: float) -> str | float:
        """A feature's value as people read it: the category's name for coded categories."""
        names = (getattr(self, "categories", None) or {}).get(feature)  # (a partly built result has none)
        if names is not None and float(value).is_integer() and 0 <= int(value) < len(names):
            name: str = names[int(value)]
            return name
        return value

    def distinct_counterexamples(self) -> list[Counterexample]:
        """Each unordered pair once (engines may report (x, x') and (x', x))."""
        seen, out = set(), []
        for c in self.counterexamples:
            key = frozenset((tuple(c.x), tuple(c.x_prime)))
            if key not in seen:
                seen.add(key)
                out.append(c)
        return out

    def counterexamples_frame(self) -> pd.DataFrame:
        """One row per counterexample: the input's features, the twin's (suffix `_prime`), both outputs;
        categories by name."""
        import pandas as pd

        names = self.column_names()
        rows = [
            {n: self.value_name(n, v) for n, v in zip(names, c.x)}
            | {f"{n}_prime": self.value_name(n, v) for n, v in zip(names, c.x_prime)}
            | {"output": c.output, "output_prime": c.output_prime}
            for c in self.counterexamples
        ]
        return pd.DataFrame(rows, columns=names + [f"{n}_prime" for n in names] + ["output", "output_prime"])

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
            "population": self.population,
            "stopped": self.stopped,
        }
        if self.categories:
            out["categories"] = {k: list(v) for k, v in self.categories.items()}
        if self.feature_ranges:
            out["feature_ranges"] = {k: list(v) for k, v in self.feature_ranges.items()}
        for key in ("epsilon_semantics", "decision", "partitions", "exact"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.measure is not None:
            m = self.measure
            out.update(
                measure_lower=m.lower, measure_upper=m.upper, confident_size=m.confident_size, unfair_size=m.unfair_size
            )
        return out

    def __str__(self) -> str:
        s = self.statistical
        statistical = ""
        if s is not None and s.sampled:
            statistical = (
                f"unfair share (statistical, {100 * s.confidence:g}% CI, not a proof): {100 * s.unfair:.4f}% "
                f"[{100 * s.ci_low:.4f}%, {100 * s.ci_high:.4f}%], {s.samples} samples"
            )
        proofs = (
            f"{'proofs: ' if statistical else ''}certified fair: {100 * self.certified:.4f}%  proven unfair: "
            f"{100 * self.falsified:.4f}%  undecided: {100 * self.undecided:.4f}%  (of {self.domain_size:.6g})"
            + ({True: "  [exact]", False: "  [sound bounds]"}.get(self.exact, "") if self.exact is not None else "")
        )
        lines = [
            f"verdict: {self.verdict} ({self.engine}, {self.elapsed_s:.2f} s)",
            f"model: {self.model}",
            f"protected: {', '.join(self.protected)}"
            + (f"; epsilon: {self.epsilon}" if self.epsilon else "")
            + (f"; population: {self.population}" if self.population != "uniform" else ""),
        ]
        lines += [statistical, proofs] if self.statistical_first else [proofs] + ([statistical] if statistical else [])
        if self.measure is not None:
            lines.append(f"measure in [{self.measure.lower:.6f}, {self.measure.upper:.6f}]")
        lines.append(f"counterexamples: {len(self.counterexamples)}")
        return "\n".join(lines)
