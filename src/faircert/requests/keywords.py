"""The keywords the entry points share, declared once, and the options they build.

Each public function names its question's own parameters and takes the rest as
`**keywords: Unpack[...Keywords]`: the run's budget and workers, and how the model is read. The
option fields among them build the command's options dataclass, which validates them; `options=`
gives that dataclass whole instead (giving both is an error, since one would go unused).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from ..errors import PropertyError
from ..options import AuditOptions, Budget, GroupOptions, ProgramOptions, VerifyOptions
from ..progress import Progress


class InputKeywords(TypedDict, total=False):
    """How the model and the protected attributes are read."""

    #: an alias of `protected`, as fairlearn names it
    sensitive_features: Any
    #: allow pickled models (loading one runs code from the file)
    trust_pickle: bool
    #: the fitted scikit-learn preprocessing a network or tree ensemble was trained behind
    preprocessor: Any


class RunKeywords(TypedDict, total=False):
    """The run: its budget, its checkpoints, where its work runs and who hears of its progress."""

    time_limit: float | None
    seed: int
    checkpoint: str | Path | None
    resume: str | Path | None
    checkpoint_every: float
    memory_limit: int | str | None
    workers: int | None
    ray_address: str | None
    progress: Progress | None


class VerifyKeywords(RunKeywords, InputKeywords, total=False):
    target_undecided: float
    confidence: float
    max_counterexamples: int
    max_boxes: int | None
    #: where a network's box refinement bounds: "cpu" or "cuda" (torch, float64); default numpy
    device: str | None
    complete: bool
    partition_size: int | None
    options: VerifyOptions | None
    #: the per-row audit, now `faircert.audit` (kept as an alias that says so)
    rows: Any


class AuditKeywords(RunKeywords, InputKeywords, total=False):
    max_cells: int
    max_twins: int | None
    milp_seconds: float
    #: networks: where the rows' bounds are computed: "cpu" or "cuda" (torch, float64); default numpy
    device: str | None
    options: AuditOptions | None


class PopulationKeywords(TypedDict, total=False):
    """How a population is learned from data (see `population.spec.PopulationSpec`)."""

    bins: Any
    max_bins: int
    binning: str
    bin_value: str
    score: str
    max_indegree: int
    max_width: int | None
    #: write the learned population here (.json), to reuse it
    save_population: str | Path | None


class ExplainKeywords(AuditKeywords, PopulationKeywords, total=False):
    #: the domain the audit's twins stay in (default: inferred from the data)
    domain: Any
    #: the least lift of a rule over the global unfair rate, where it is found
    min_lift: float
    #: the level of each rule's interval
    confidence: float
    #: the population the rules describe: "empirical" (the data's rows), "uniform", "independent" or
    #: "bayesnet" (learned from the data as the `PopulationKeywords` say)
    population: str
    #: points drawn from a domain population, each decided exactly
    samples: int


class GroupAdditions(TypedDict, total=False):
    """What a group answer adds beside its metrics and the ratio threshold."""

    #: the most each gap metric (by name: sp, eo, ...) may be
    gap_thresholds: Mapping[str, float] | None
    #: fairness influence of every feature (True) or of the feature sets given
    influence: bool | Iterable[Iterable[str]]
    #: bounds valid for any distribution inside the bins (linear models)
    bin_bounds: bool
    #: the bias-audit tables of the data's rows
    audit_table: bool
    #: with `audit_table`: cells under 2% of the rows leave the impact ratios
    exclude_small: bool


class GroupKeywords(RunKeywords, InputKeywords, PopulationKeywords, GroupAdditions, total=False):
    method: str
    delta: float
    options: GroupOptions | None


class ProgramKeywords(RunKeywords, total=False):
    method: str
    delta: float
    bound: str
    ratio_width: float | None
    tolerance: float
    options: ProgramOptions | None


def take_options(function: str, cls: type[Budget], keywords: dict[str, Any], allowed: Any) -> Any:
    """The run's options, built from `keywords`' option fields (removed from it), or `options` as
    given; any keyword that is not one of `allowed`'s is a TypeError, as Python's own would be."""
    unknown = sorted(set(keywords) - allowed.__required_keys__ - allowed.__optional_keys__)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    fields = {f.name for f in dataclasses.fields(cls)}
    given = {name: keywords.pop(name) for name in list(keywords) if name in fields}
    options = keywords.pop("options", None)
    if options is None:
        for name in ("checkpoint", "resume"):
            if given.get(name) is not None:
                given[name] = str(given[name])
        return cls(**given)
    if given:
        raise PropertyError(
            f"give options= or the keywords it holds ({', '.join(given)}), not both: options replaces them"
        )
    if not isinstance(options, cls):
        raise PropertyError(f"options= must be a {cls.__name__}, got a {type(options).__name__}")
    return options


def take_loading(keywords: dict[str, Any]) -> dict[str, Any]:
    """How the model is read (`InputKeywords` less the protected alias), taken from `keywords`."""
    return {k: keywords.pop(k) for k in ("trust_pickle", "preprocessor") if k in keywords}
