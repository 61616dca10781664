"""`group`'s request: the model compiled for the population it is asked under, and the question
(groups, metrics, thresholds)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..checkpoint import CHECKPOINTED
from ..checkpoint import refuse as refuse_checkpoint
from ..engines.registry import find_engine
from ..errors import PropertyError
from ..memory import STOPPED as MEMORY_STOPPED
from ..metrics import metric_names
from ..options import GroupOptions, GroupQuestion, check_metric_inputs
from ..population.spec import LEARNED_KINDS, PopulationSpec
from ..progress import Progress
from ..results import GroupResult
from .inputs import load_model, names


@dataclass(frozen=True)
class GroupAsked:
    """What `group` asks, as given: the groups, the label, the metrics and their thresholds."""

    protected: list[str]
    label: str | None = None
    metrics: Any = GroupQuestion.metrics
    mediators: Any = GroupQuestion.mediators
    threshold: float = GroupQuestion.threshold
    gap_thresholds: Mapping[str, float] = field(default_factory=dict)
    influence: Any = False
    bin_bounds: bool = False
    #: the bias-audit tables of the data's rows: None, or whether small cells leave the impact ratios
    audit_exclude_small: bool | None = None


@dataclass(frozen=True)
class GroupRequest:
    """Everything `group`'s engine reads, checked."""

    ir: Any
    question: GroupQuestion
    options: GroupOptions
    engine: Any
    #: when reading the inputs began, and the seconds learning the population and compiling the
    #: model for it took: both count in the time limit
    started: float
    spent_s: float
    compile_s: float
    #: the bias-audit tables asked for: None, or whether small cells leave the impact ratios
    audit_exclude_small: bool | None = None


def group_additions(keywords: dict[str, Any]) -> dict[str, Any]:
    """What the answer adds beside the metrics (`GroupAdditions`, taken from `keywords`), checked,
    as `GroupAsked`'s fields."""
    audit_table = keywords.pop("audit_table", False)
    small = keywords.pop("exclude_small", None)
    if small is not None and not audit_table:
        raise PropertyError("exclude_small leaves small cells out of the audit tables: ask for them (audit_table=True)")
    return {
        "gap_thresholds": dict(keywords.pop("gap_thresholds", None) or {}),
        "influence": keywords.pop("influence", False),
        "bin_bounds": keywords.pop("bin_bounds", False),
        "audit_exclude_small": bool(small) if audit_table else None,
    }


def population_of(population: Any, keywords: dict[str, Any]) -> Any:
    """The population as given, with a learned kind's knobs (`PopulationKeywords`, taken from
    `keywords`) made a spec."""
    from .keywords import PopulationKeywords

    knobs = {k: keywords.pop(k) for k in list(keywords) if k in PopulationKeywords.__optional_keys__}
    if isinstance(population, PopulationSpec):
        if knobs:
            raise PropertyError(f"give a PopulationSpec or its knobs ({', '.join(sorted(knobs))}), not both")
        return population
    if isinstance(population, str) and population in LEARNED_KINDS:
        return PopulationSpec(population, **knobs)
    return population


def prepare_group(
    model: Any,
    data: Any,
    asked: GroupAsked,
    population: Any,
    loading: dict[str, Any],
    options: GroupOptions,
    save_population: str | Path | None = None,
) -> GroupRequest:
    """Read the model, learn (or read) the population and compile the model for it."""
    from ..models.binding import bind_to_population
    from ..population.resolve import resolve_population

    started = time.perf_counter()
    metrics = metric_names(asked.metrics)
    mediators = tuple(names(asked.mediators))
    kind = population.kind if isinstance(population, PopulationSpec) else str(population)
    check_metric_inputs(metrics, asked.label, mediators, kind)
    ir = _model_or_black_box(model, data, loading)
    ir, pop, frame, learning_s = resolve_population(population, data, ir, asked.protected, asked.label)
    if save_population is not None:
        pop.save(save_population)
    pop = pop.expanded()  # a learned population's bins become variables the model reads
    compiling = time.perf_counter()
    ir, pop = bind_to_population(ir, pop)  # a pipeline reads raw columns: compile it for the population
    compile_s = time.perf_counter() - compiling
    influence = asked.influence
    question = GroupQuestion(
        pop,
        tuple(asked.protected),
        asked.label,
        metrics,
        mediators,
        asked.threshold,
        dict(asked.gap_thresholds or {}),
        influence if isinstance(influence, bool) else tuple(tuple(names(s)) for s in influence),
        asked.bin_bounds,
        frame,
        learning_s,
        getattr(ir, "source", "") or type(model).__name__,
    )
    engine = find_engine(ir, question, options.method)
    if engine.name not in CHECKPOINTED:
        refuse_checkpoint(options, engine.name)
    spent = learning_s + compile_s
    return GroupRequest(ir, question, options, engine, started, spent, compile_s, asked.audit_exclude_small)


def _model_or_black_box(model: Any, data: Any, loading: dict[str, Any]) -> Any:
    """The model's IR; a classifier no IR holds (an object or a trusted pickle, without a
    preprocessor, with data to read its columns from) as a black box, answered on its predictions."""
    from ..errors import UnsupportedModelError

    try:
        return load_model(model, **loading)
    except UnsupportedModelError as exc:
        if loading.get("preprocessor") is not None or data is None:
            raise
        from ..engines.group.blackbox import black_box
        from .inputs import estimator_object

        return black_box(estimator_object(model, bool(loading.get("trust_pickle")), exc), data, str(exc))


def run_group(request: GroupRequest, progress: Progress | None) -> GroupResult:
    """The engine, in the time left; beside sound bounds that stayed wide, a statistical estimate
    in the share of the time kept for it."""
    from ..engines.group.estimate import add_estimate, sound_share
    from .verify import after

    share = sound_share(request.engine.name, request.question.influence)
    options = after(request.options, request.spent_s)
    if options.time_limit is not None:
        options = replace(options, time_limit=options.time_limit * share)
    result = request.engine.run(request.ir, request.question, options, progress)
    # a run ended by its memory limit returns at once: no sampling after it
    if share < 1 and result.stats.get("stopped") != MEMORY_STOPPED:
        from ..population.discrete import DiscretePopulation

        discrete = isinstance(request.question.population, DiscretePopulation)
        add_estimate(request.ir, request.question, request.options, request.started, result, discrete)
    return result


def check_group_population(population: Any, data: Any) -> Any:
    """The population asked for: without one, the data's rows (as fairlearn counts them)."""
    if population is not None:
        return population
    if data is None:
        raise PropertyError(
            "no population: give data (its rows are the population, as fairlearn counts them) "
            "or name one (population=independent|bayesnet|empirical|FILE)"
        )
    return "empirical"


def finish_group(result: GroupResult, request: GroupRequest) -> GroupResult:
    """Timings and the rows a learned population dropped, stated in the result."""
    question = request.question
    result.stats.setdefault("learning_s", question.learning_s)
    result.stats.setdefault("compile_s", request.compile_s)  # counted inside the time limit, as learning is
    if question.influence and not result.influence and not any("influence" in a for a in result.approximations):
        result.approximations.append(
            f"influence not computed: the {result.engine} engine gives no influence "
            "(it is computed for linear models under a learned population)"
        )
    if request.audit_exclude_small is not None:
        result.audit = _audit_tables(request, request.audit_exclude_small)
    dropped = getattr(question.population, "info", {}).get("rows_dropped_missing", 0)
    if dropped:
        result.stats.setdefault("rows_dropped_missing", dropped)
    return result


def _audit_tables(request: GroupRequest, exclude_small: bool) -> Any:
    """The bias-audit tables of the data's rows: the model's decision on each row, by protected
    attribute and by their intersection. A row missing a protected value is counted apart in the
    tables of that attribute; a row missing a value the model reads cannot be decided: it is
    counted apart in every table (a protected value it reads) or left out (counted in the stats)."""
    import numpy as np

    from ..engines.group.empirical import decisions, margins
    from ..subgroups import audit_tables

    frame, question = request.question.data, request.question
    if frame is None:
        raise PropertyError("an audit table counts the data's rows: give the data (data= / --data DATA.csv)")
    protected = list(question.protected)
    read = _columns_read(request.ir, frame, question.label)
    readable = frame[read].notna().all(axis=1).to_numpy()
    missing_protected = frame[protected].isna().any(axis=1).to_numpy()
    if not readable.all():  # undecided for want of a protected value it reads: apart in every table
        frame = frame.copy()
        frame.loc[~readable & missing_protected, protected] = None
    selected = np.zeros(len(frame), dtype=int)
    positive, undecided = decisions(request.ir, frame[readable], question.label)
    selected[readable] = positive
    scores = np.full(len(frame), np.nan)  # the scoring rate's ranking: the decided rows' scores
    scores[readable] = margins(request.ir, frame[readable], question.label)
    kept = readable | missing_protected
    tables = audit_tables(frame[kept], selected[kept], protected, scores=scores[kept], exclude_small=exclude_small)
    tables.stats.update(rows_left_out_missing=int((~kept).sum()), rows_within_tolerance=int(np.sum(undecided)))
    return tables


def _columns_read(ir: Any, frame: Any, label: str | None) -> list[str]:
    """The data's columns the model reads (every column but the label where its names are not the
    data's)."""
    from ..models.pipeline import PipelineModel

    names = list(ir.used_columns) if isinstance(ir, PipelineModel) else ir.named_inputs()
    return [c for c in names if c in frame.columns] or [c for c in frame.columns if c != label]
