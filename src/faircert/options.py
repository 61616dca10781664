"""How a question is answered: the budget and knobs of each command, typed and checked once.

The CLI and the Python API build the same frozen dataclass, so every value is validated here and
nowhere else; engines read their settings from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Self

from .errors import PropertyError
from .metrics import needing, spelled


def check_time_limit(time_limit: float | None) -> float | None:
    """Seconds as a positive finite float, or None for no limit."""
    if time_limit is None:
        return None
    try:
        value = float(time_limit)
    except (TypeError, ValueError):
        raise PropertyError(f"time limit must be a number of seconds, got {time_limit!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise PropertyError(f"time limit must be a positive number of seconds, got {time_limit}")
    return value


def _check_open_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise PropertyError(f"{name} must lie strictly between 0 and 1, got {value}")


def _check_device(device: str | None) -> None:
    if device is not None and device not in DEVICES:
        raise PropertyError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")


def _check_count(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PropertyError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _frozen(mapping: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Budget:
    """What every command takes: a time limit (None: no limit) and the seed of its random draws."""

    time_limit: float | None = 60.0
    seed: int = 0
    #: long jobs (the engines `checkpoint.CHECKPOINTED` names): write the state to this file every
    #: `checkpoint_every` seconds and at the end; `resume` continues from such a file (and keeps
    #: writing to it unless `checkpoint` is given)
    checkpoint: str | None = None
    checkpoint_every: float = 30.0
    resume: str | None = None
    #: bytes of state the run may keep, per process (`memory`); given as text too ("2G"), and None
    #: for a share of the machine's memory: both become bytes when the options are built
    memory_limit: int | None = None

    def __post_init__(self) -> None:
        from .memory import check_limit, default_limit

        object.__setattr__(self, "time_limit", check_time_limit(self.time_limit))
        object.__setattr__(
            self, "memory_limit", default_limit() if self.memory_limit is None else check_limit(self.memory_limit)
        )
        _check_count("seed", self.seed, 0)
        if not (
            isinstance(self.checkpoint_every, (int, float))
            and math.isfinite(self.checkpoint_every)
            and self.checkpoint_every > 0
        ):
            raise PropertyError(
                f"checkpoint interval must be a positive number of seconds, got {self.checkpoint_every!r}"
            )

    @classmethod
    def of(cls, options: Budget, only: tuple[str, ...] | None = None) -> Self:
        """This command's share of another command's options: the fields both have (of them, `only`)."""
        names = {f.name for f in fields(cls)} & {f.name for f in fields(options)}
        return cls(**{name: getattr(options, name) for name in names if only is None or name in only})


#: What a command lends another that it runs on its behalf: the clock, the seed, the workers and the
#: memory (`Budget.of`), not its checkpoint files.
LENT = ("time_limit", "seed", "workers", "ray_address", "memory_limit")


#: where the network bounds may run besides numpy (torch, float64)
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class VerifyOptions(Budget):
    """Budget and reporting knobs of `verify` (individual fairness or robustness)."""

    #: stop once the undecided share is at most this
    target_undecided: float = 0.0
    #: level of the statistical interval
    confidence: float = 0.99
    max_counterexamples: int = 100
    #: processes for the box work (network refinement and partitions, the tree refinements: at
    #: epsilon 0, and at epsilon > 0 or for robustness; not the trees' region path); 1 runs in this
    #: process; None: every usable core, once a run outlasts a second
    workers: int | None = None
    #: run the box work on a Ray cluster: "local" (start one here), "auto" (the running one or
    #: RAY_ADDRESS) or an address
    ray_address: str | None = None
    #: stop after examining this many boxes (a budget by work, the same for any worker count)
    max_boxes: int | None = None
    #: decide the question (a proof or a counterexample) instead of quantifying shares
    complete: bool = False
    #: Fairify's partitioned verification: cut integer features into chunks of this many values
    #: and decide every partition (implies `complete`)
    partition_size: int | None = None
    #: where a network's box refinement runs (its bounds, its steps, its open boxes): None (numpy),
    #: or torch in float64 on "cpu" or "cuda" (the `torch` extra), in this process (by default) or
    #: in each of `workers` (spawned; on "cuda" they share the GPU and its memory)
    device: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_device(self.device)
        if self.workers is not None:
            _check_count("workers", self.workers, 1)
        if self.max_boxes is not None:
            _check_count("max boxes", self.max_boxes, 1)
        if not 0.0 <= self.target_undecided <= 1.0:
            raise PropertyError(f"target undecided share must lie in [0, 1], got {self.target_undecided}")
        _check_open_unit("confidence", self.confidence)
        _check_count("max counterexamples", self.max_counterexamples, 0)
        if self.partition_size is not None:
            _check_count("partition size", self.partition_size, 1)
            object.__setattr__(self, "complete", True)
        if self.complete and self.max_boxes is not None:
            raise PropertyError(
                "--max-boxes budgets the quantifying refinement; --complete and --partition-size "
                "run until decided or the time limit"
            )

    @property
    def method(self) -> str:
        """How the registry picks the engine: "complete" decides, "sound" quantifies."""
        return "complete" if self.complete else "sound"


@dataclass(frozen=True)
class AuditOptions(Budget):
    """Budget of `audit` (the per-row audit of a dataset)."""

    #: processes deciding chunks of rows (or Ray actors at `ray_address`); 1 runs in this process;
    #: None: every usable core, once a run outlasts a second
    workers: int | None = None
    ray_address: str | None = None
    #: the per-row budgets an `unknown` row's reason names (a re-run with more decides more rows):
    #: tree ensembles, most cells of one row's ball decided exactly (a larger ball is searched)
    max_cells: int = 20_000
    #: black boxes and networks: most twins of one row evaluated one by one; None: the kind's default
    max_twins: int | None = None
    #: networks: seconds one row's MILP may take
    milp_seconds: float = 10.0
    #: networks: where the rows' bounds are computed: None (numpy), or torch in float64 on "cpu" or
    #: "cuda" (the `torch` extra), in this process (by default) or in each of `workers`
    device: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_device(self.device)
        if self.workers is not None:
            _check_count("workers", self.workers, 1)
        _check_count("max cells", self.max_cells, 1)
        if self.max_twins is not None:
            _check_count("max twins", self.max_twins, 1)
        seconds = self.milp_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
            raise PropertyError(f"milp seconds must be a positive number, got {seconds!r}")


METHODS = ("sound", "sampling")


@dataclass(frozen=True)
class MethodOptions(Budget):
    """A budget and how to answer: "sound" (exact or sound bounds) or "sampling" (a sequential
    test whose verdict is wrong with probability at most `delta`)."""

    method: str = "sound"
    delta: float = 1e-6
    #: sound probability bounds: processes (or Ray actors at `ray_address`) evaluating the
    #: refinement's trial splits; None: every usable core, once a run outlasts a second
    workers: int | None = None
    ray_address: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.workers is not None:
            _check_count("workers", self.workers, 1)
        if self.method not in METHODS:
            raise PropertyError(f"unknown method {self.method!r}; choose 'sound' or 'sampling'")
        _check_open_unit("delta", self.delta)


@dataclass(frozen=True)
class GroupOptions(MethodOptions):
    """Budget and method of `group` (group fairness under a population)."""


SAMPLING_BOUNDS = ("binomial", "hoeffding")


@dataclass(frozen=True)
class ProgramOptions(MethodOptions):
    """Budget and method of `program` (a decision program's fairness or a probability query)."""

    #: sampling: the concentration bound of the sequential test
    bound: str = "binomial"
    #: sound: keep refining after the verdict until the ratio's bounds are this tight
    ratio_width: float | None = None
    #: sound probability queries: the bounds' target width when no threshold is given
    tolerance: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bound not in SAMPLING_BOUNDS:
            raise PropertyError(f"unknown bound {self.bound!r}; choose one of {', '.join(SAMPLING_BOUNDS)}")
        if self.ratio_width is not None and not (math.isfinite(self.ratio_width) and self.ratio_width > 0):
            raise PropertyError(f"ratio width must be a positive number, got {self.ratio_width}")
        if not (math.isfinite(self.tolerance) and self.tolerance > 0):
            raise PropertyError(f"tolerance must be a positive number, got {self.tolerance}")


def check_metric_inputs(
    metrics: tuple[str, ...], label: str | None, mediators: tuple[str, ...], population: str
) -> None:
    """What the metrics need, before any model is read: the true label (equalized odds, equal
    opportunity, predictive parity) of a learned population or the data, mediators (PCF), the
    data's rows (predictive parity)."""
    needs_label = needing(metrics, "label") + needing(metrics, "predicted")
    if needs_label and label is None and population in ("independent", "bayesnet", "empirical"):
        raise PropertyError(
            f"{spelled(needs_label)}: compared given the true label: name the label column (label=... / --label NAME)"
        )
    if needing(metrics, "mediators") and not mediators:
        raise PropertyError("path-specific causal fairness (pcf) needs the mediators (mediators=... / --mediators)")
    if needing(metrics, "predicted") and population != "empirical":
        raise PropertyError(
            f"predictive parity (pp) conditions on the model's decision, which faircert measures "
            f"over the data's rows: use population 'empirical' (the default with data), not "
            f"{population!r}"
        )


@dataclass(frozen=True)
class GroupQuestion:
    """What `group` asks: per-group positive rates of a model under `population`, and the metrics."""

    population: Any
    protected: tuple[str, ...]
    label: str | None = None
    metrics: tuple[str, ...] = ("di", "sp")
    mediators: tuple[str, ...] = ()
    #: DI threshold (four-fifths rule by default)
    threshold: float = 0.8
    gap_thresholds: Mapping[str, float] = field(default_factory=dict)
    #: False, True (every feature) or feature subsets
    influence: bool | tuple[tuple[str, ...], ...] = False
    bin_bounds: bool = False
    #: the data the population was learned from (exact engines encode it), and how long learning took
    data: Any = None
    learning_s: float = 0.0
    model_name: str = ""

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise PropertyError(f"the DI threshold must lie in (0, 1], got {self.threshold}")
        for metric, gap in (self.gap_thresholds or {}).items():
            if not 0.0 <= gap <= 1.0:
                raise PropertyError(f"the {metric.upper()} gap threshold must lie in [0, 1], got {gap}")
        object.__setattr__(self, "gap_thresholds", _frozen(self.gap_thresholds))

    def judged_by(self) -> dict[str, Any]:
        """What a `GroupResult` judges its rates by: the metrics and their thresholds."""
        return {
            "threshold": self.threshold,
            "gap_thresholds": dict(self.gap_thresholds),
            "metrics": tuple(self.metrics),
        }


@dataclass(frozen=True)
class ProgramQuestion:
    """What `program` asks: P[target | sensitive] / P[target | not sensitive] > 1 - epsilon (`kind`
    ratio, both ways for parity, the gap for difference), or with `query`, bounds on P[query]
    (decided against `above` when given)."""

    epsilon: float = 0.15
    kind: str = "ratio"
    query: str | None = None
    above: float | None = None

    def __post_init__(self) -> None:
        if self.above is not None and self.query is None:
            raise PropertyError("a threshold (above / --above) needs a probability query (--probability EXPR)")
