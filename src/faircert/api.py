"""The few top-level functions a Python user calls."""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .checkpoint import CHECKPOINTED
from .checkpoint import refuse as refuse_checkpoint
from .data import infer_domain
from .domain import Domain, Feature
from .engines.registry import find_engine
from .errors import DataError, DomainError, FaircertError, PropertyError, UnsupportedModelError
from .limits import time_budget
from .memory import STOPPED as MEMORY_STOPPED
from .metrics import metric_names
from .options import (
    GroupOptions,
    GroupQuestion,
    ProgramOptions,
    ProgramQuestion,
    VerifyOptions,
    check_metric_inputs,
)
from .progress import Progress
from .properties import RowAudit, UnfairSamples, individual_fairness, split_names
from .results import Comparison, GroupResult, ProgramResult, Result
from .results.rows import RowsResult


def load_model(model: Any, trust_pickle: bool = False, preprocessor: Any = None) -> Any:
    """The IR of a model given as a path, a framework object or an IR.

    `preprocessor`: the fitted scikit-learn preprocessing (ColumnTransformer, Pipeline of transformers,
    or a pickle of one) that encoded the raw columns a network or tree ensemble was trained on; the IR
    then reads the raw columns, categories by name.
    """
    from .models.io import load_model as _load

    return _load(model, trust_pickle=trust_pickle, preprocessor=preprocessor)


def resolve_domain(domain: Any, model_ir: Any) -> Domain:
    """A Domain from a path, a Domain, a DataFrame/array to infer it from, or the model's own ranges."""
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, (str, Path)):
        if Path(domain).suffix.lower() in (".csv", ".tsv"):
            return infer_domain(domain)
        return Domain.load(domain)
    if domain is not None:
        return infer_domain(domain)
    lower = getattr(model_ir, "input_lower", None)
    upper = getattr(model_ir, "input_upper", None)
    if lower is None or upper is None:
        raise DomainError("this model declares no input ranges; pass a domain (a file, a Domain or a DataFrame)")
    names = getattr(model_ir, "input_names", None) or [f"x{i}" for i in range(len(lower))]
    return Domain(tuple(Feature(n, "integer", lo, hi) for n, lo, hi in zip(names, lower, upper)))


def verify(
    model: Any,
    domain: Any = None,
    protected: str | Iterable[str | int] | None = None,
    *,
    sensitive_features: str | Iterable[str | int] | None = None,
    epsilon: Mapping[str, float] | float | None = None,
    epsilon_rate: float | None = None,
    kappa: float | None = None,
    robustness: bool = False,
    time_limit: float | None = VerifyOptions.time_limit,
    target_undecided: float = VerifyOptions.target_undecided,
    confidence: float = VerifyOptions.confidence,
    seed: int = VerifyOptions.seed,
    max_counterexamples: int = VerifyOptions.max_counterexamples,
    workers: int | None = None,
    max_boxes: int | None = None,
    ray_address: str | None = None,
    complete: bool = False,
    partition_size: int | None = None,
    trust_pickle: bool = False,
    preprocessor: Any = None,
    rows: Any = None,
    population: str | None = None,
    data: Any = None,
    checkpoint: str | Path | None = None,
    resume: str | Path | None = None,
    checkpoint_every: float = VerifyOptions.checkpoint_every,
    memory_limit: int | str | None = None,
    progress: Progress | None = None,
    options: VerifyOptions | None = None,
) -> Result | RowsResult:
    """Quantify individual fairness (or robustness) of `model` on `domain`.

    With `rows` (a DataFrame, a CSV path or an array of raw rows), audit every row instead: is there
    a twin (another protected value, each epsilon-feature within its tolerance, every other feature
    equal) that the model decides differently? Returns a `RowsResult` (per-row verdicts, exact
    counts overall and by protected group, the flip test beside the epsilon answer); the domain,
    when not given, is inferred from the rows.

    `population` chooses the measure of the shares: "uniform" (the default: grid counts and
    volume), "independent" (each feature drawn from `data`'s rows, features independent; the
    shares become probabilities P[x has an unfair twin], exact for linear models and pipelines
    ending in one and for tree ensembles with epsilon 0 once their bounds meet, sound bounds for
    networks), "bayesnet" (a Bayesian network learned from `data`, as
    `group` learns it; epsilon 0; sound bounds of a stated width, from score histograms for linear
    models and box refinement for the others, with an estimate from draws where they stay apart)
    or "empirical" (the data's rows themselves: the per-row audit of `data`).
    `data` defaults to `domain` when that is a DataFrame or a CSV file.

    Returns sound shares of the domain proven fair (`certified`) and proven unfair (`falsified`),
    the `undecided` rest, re-checked counterexamples and a labelled statistical estimate.
    `sensitive_features` is an alias of `protected`. `preprocessor` is the fitted scikit-learn
    preprocessing a network or tree ensemble was trained behind (see `load_model`): the domain and
    the data are then raw columns. `workers` processes (or the Ray cluster at
    `ray_address`: "local", "auto" or an address; default every usable core, once a run outlasts a
    second) share the box work; `max_boxes` is a budget by
    work. `options` (a `VerifyOptions`) may hold these keywords instead (time_limit,
    target_undecided, confidence, seed, max_counterexamples, workers, max_boxes, ray_address,
    complete, partition_size, the checkpoint and memory keywords); giving both is an error.

    With `rows`, a network's box refinement or complete (partitioned) decision, or a tree
    ensemble's box refinement, `checkpoint=FILE` writes the run's state every `checkpoint_every`
    seconds and at the end, and `resume=FILE` continues a run that was killed: the rows it decided,
    the boxes it refined or the regions it decided are kept, and the rest goes as an uninterrupted
    run would (another model, domain, rows or question is refused). Under `max_boxes` a resumed
    refinement gives the uninterrupted run's shares and counterexamples.

    `memory_limit` (bytes, or text such as "2G"; default a share of the machine's memory) bounds
    the state a run keeps, per process; reaching it ends the run with its sound partial result and
    `result.stopped == "memory limit"`.

    `complete=True` decides the question instead: `fair` with a proof, `unfair` with a re-checked
    pair, `unknown` only when the time limit runs out; `result.decision` holds the decision and its
    evidence. `partition_size=MS` does Fairify's partitioned verification (implies `complete`):
    every non-protected integer feature with more than MS values is cut into chunks of MS, every
    partition is decided, and `result.partitions` lists them.
    """
    protected = _column_names(_protected(protected, sensitive_features))
    options = _options(
        verify,
        VerifyOptions,
        options,
        time_limit=time_limit,
        target_undecided=target_undecided,
        confidence=confidence,
        seed=seed,
        max_counterexamples=max_counterexamples,
        workers=workers,
        max_boxes=max_boxes,
        ray_address=ray_address,
        complete=complete,
        partition_size=partition_size,
        checkpoint=checkpoint,
        resume=resume,
        checkpoint_every=checkpoint_every,
        memory_limit=memory_limit,
    )
    with time_budget(options.time_limit):  # reading the model (in a child process) counts against it
        started = time.perf_counter()
        population = _verify_population(population, rows)
        if population == "empirical":
            rows = _population_data(data, domain, population)
        if rows is not None:
            audit = _audit_rows(
                model, domain, protected, rows, epsilon, epsilon_rate, trust_pickle, preprocessor, options, progress
            )
            audit.population = population or "rows"
            return audit
        # boxes over a network's categories split better with like categories side by side
        reorder = population in (None, "uniform", "independent") and options.partition_size is None
        try:
            ir, prop, given = _model_and_property(
                model, domain, protected, epsilon, epsilon_rate, kappa, robustness, trust_pickle, preprocessor, reorder
            )
        except UnsupportedModelError as exc:
            raise UnsupportedModelError(
                f"{exc}; the rows of a dataset can still be audited with this model as a "
                "black box (rows=DATA, --rows DATA.csv)"
            ) from None
        if population == "independent":
            prop = _with_marginals(ir, prop, _population_data(data, domain, population), options)
        if population == "bayesnet":
            refuse_checkpoint(options, "the learned-network measure")
            result = _under_bayesnet(
                model,
                ir,
                prop,
                _population_data(data, domain, population),
                trust_pickle,
                preprocessor,
                _after(options, time.perf_counter() - started),
                progress,
            )
        else:  # compiling the model counts in the time limit
            options = _after(options, time.perf_counter() - started)
            engine = find_engine(ir, prop, options.method)
            if engine.name not in CHECKPOINTED:
                refuse_checkpoint(options, engine.name)
            result = engine.run(ir, prop, options, progress)
        if result.stats.get("memory_limited"):
            result.stats.setdefault("stopped", MEMORY_STOPPED)
        result.population = population or "uniform"
        _codes_as_given(result, prop.domain, given)
        result.categories = {
            f.name: list(given[f.name].categories if f.name in given.names else f.categories)
            for f in prop.domain.features
            if f.categories is not None
        }
        result.feature_ranges = {f.name: [f.min, f.max] for f in prop.domain.features}
        return result


def _options(fn: Any, cls: type, options: Any, **keywords: Any) -> Any:
    """The run's options: `options` as given, or built from `fn`'s keywords. Both at once would
    leave one silently unused, so a keyword changed from its default beside `options` is an error."""
    if options is None:
        for name in ("checkpoint", "resume"):
            if keywords.get(name) is not None:
                keywords[name] = str(keywords[name])
        return cls(**keywords)
    defaults = inspect.signature(fn).parameters
    clash = [k for k, v in keywords.items() if not _same(v, defaults[k].default)]
    if clash:
        raise PropertyError(
            f"give options= or the keywords it holds ({', '.join(clash)}), not both: options replaces them"
        )
    return options


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # arrays and the like
        return value is default


#: The measures `verify` takes (`population=`).
VERIFY_POPULATIONS = ("uniform", "independent", "bayesnet", "empirical")


def _under_bayesnet(model, ir, prop, frame, trust_pickle, preprocessor, options, progress) -> Result:
    """P[x has an unfair twin] for x drawn from a Bayesian network learned from `frame`, epsilon 0:
    linear models (and pipelines ending in one) by score histograms, other models by sound box
    refinement of the network's CDF space."""
    from .engines.linear import bayesnet
    from .engines.linear.verify import accepts
    from .engines.probability import twins
    from .models.linear import LinearModel
    from .population.learn import learn_population
    from .population.resolve import bind_to_frame, resolve_population

    if options.method != "sound" or any(e > 0 for e in np.asarray(prop.epsilon, dtype=float)) or prop.kappa:
        raise PropertyError(
            "population 'bayesnet' is answered with epsilon 0, without kappa and without "
            "--complete; otherwise use 'uniform', 'independent' or 'empirical' (the per-row audit "
            "of the data)"
        )
    loaded = load_model(model, trust_pickle=trust_pickle, preprocessor=preprocessor)
    started = time.perf_counter()
    separable = isinstance(loaded, LinearModel) and accepts(ir, prop)
    if separable:
        linear = bind_to_frame(loaded, frame, None)
        pop = learn_population(frame, linear.columns, prop.protected_names, kind="bayesnet").expanded()
    else:
        _, pop, _, _ = resolve_population("bayesnet", frame, loaded, prop.protected_names, None)
        pop = pop.expanded()
    learning_s = time.perf_counter() - started
    left = None if options.time_limit is None else max(options.time_limit - learning_s, MIN_ENGINE_S)
    options = replace(options, time_limit=left)
    if separable:
        result = bayesnet.answer(linear, ir, prop, pop, options)
    else:
        result = twins.answer(ir, prop, loaded, pop, options, progress)
    result.stats["learning_s"] = learning_s
    return result


def _verify_population(population: str | None, rows: Any) -> str | None:
    if population is None or population == "uniform":
        return None
    if population not in VERIFY_POPULATIONS:
        raise PropertyError(
            f"unknown population {population!r} for verify; choose one of {', '.join(VERIFY_POPULATIONS)}"
        )
    if rows is not None:
        raise PropertyError("give rows or a population, not both (population 'empirical' audits the data's rows)")
    return population


def _population_data(data: Any, domain: Any, population: str) -> Any:
    """The data a population is taken from: `data`, else the domain when it is data."""
    from .data import read_table

    if data is None:
        if (
            isinstance(domain, Domain)
            or domain is None
            or (isinstance(domain, (str, Path)) and Path(domain).suffix.lower() not in (".csv", ".tsv"))
        ):
            raise PropertyError(
                f"population {population!r} is taken from data: give data= (--data DATA.csv), or "
                "the data itself as the domain"
            )
        data = domain
    return read_table(data)


def _with_marginals(ir, prop, frame, options):
    """The property measured under the data's independent marginals: exactly for separable models
    and tree ensembles (epsilon 0), by box refinement (sound bounds) for networks."""
    from dataclasses import replace

    from .data import encode_table
    from .engines.linear.verify import accepts
    from .models.network import ReluNetwork
    from .models.trees import TreeEnsemble
    from .population.marginals import Marginals

    if not (accepts(ir, prop) or isinstance(ir, (ReluNetwork, TreeEnsemble))) or options.method != "sound":
        raise PropertyError(
            "population 'independent' is answered for linear models and pipelines ending in one "
            "(exactly, without epsilon), tree ensembles (exactly, epsilon 0) and networks, not "
            "with --complete; otherwise use 'uniform' or 'empirical' (the per-row audit of the "
            "data)"
        )
    codes = encode_table(frame, prop.domain)
    outside = ~prop.domain.contains(codes)
    if outside.any():
        raise DataError(f"{int(outside.sum())} of {len(codes)} data rows lie outside the domain; widen the domain")
    return replace(prop, population=Marginals.from_codes(codes))


def _audit_rows(
    model, domain, protected, rows, epsilon, epsilon_rate, trust_pickle, preprocessor, options, progress
) -> RowsResult:
    """The per-row audit: rows read as the domain's codes, then the model kind's rows engine."""
    from .data import encode_table, read_table

    frame = read_table(rows)
    try:
        ir, prop, _ = _model_and_property(
            model,
            frame if domain is None else domain,
            protected,
            epsilon,
            epsilon_rate,
            None,
            False,
            trust_pickle,
            preprocessor,
        )
    except UnsupportedModelError:
        if preprocessor is not None:
            raise
        # a classifier no IR holds is audited as a black box: by its own predictions
        ir, prop = _black_box(
            _estimator_object(model, trust_pickle),
            frame if domain is None else domain,
            protected,
            epsilon,
            epsilon_rate,
        )
    codes = encode_table(frame, prop.domain)
    outside = ~prop.domain.contains(codes)
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        raise DataError(
            f"{int(outside.sum())} of {len(codes)} rows lie outside the domain (first: row {first}); "
            "widen the domain or leave --domain out to infer it from the rows"
        )
    from .checkpoint import fingerprint

    question = RowAudit(prop, codes, fingerprint(ir) if (options.checkpoint or options.resume) else "")
    result = find_engine(ir, question).run(ir, question, options, progress)
    result.model = getattr(ir, "source", "") or type(model).__name__
    return result


def _estimator_object(model: Any, trust_pickle: bool) -> Any:
    """The estimator itself: the object given, or the pickle the caller trusted."""
    if not isinstance(model, (str, Path)):
        return model
    from .models.io.pickled import unpickle

    return unpickle(Path(model), trust_pickle)


def _black_box(estimator, domain, protected, epsilon, epsilon_rate):
    from .models.blackbox import BlackBoxModel

    dom = resolve_domain(domain, None)
    names = [dom.names[dom.index(p)] if isinstance(p, (int, np.integer)) else p for p in split_names(protected)]
    ir, dom = BlackBoxModel.of(estimator, dom, keep=set(names) | set(dom.protected_names))
    return ir, individual_fairness(dom, names, epsilon=epsilon, epsilon_rate=epsilon_rate)


def _protected(protected: Any, sensitive_features: Any) -> Any:
    if protected is not None and sensitive_features is not None:
        raise PropertyError("give either protected or sensitive_features, not both")
    return protected if protected is not None else sensitive_features


def _column_names(protected: Any) -> Any:
    """A pandas Series or DataFrame of sensitive features names its column(s)."""
    if hasattr(protected, "to_frame") and hasattr(protected, "name"):  # a Series
        return [protected.name]
    if hasattr(protected, "columns") and hasattr(protected, "iloc"):  # a DataFrame
        return [str(c) for c in protected.columns]
    return protected


def _codes_as_given(result: Result, bound: Domain, given: Domain) -> None:
    """Counterexamples in the codes of the domain as given, where binding reordered categories."""
    for j, f in enumerate(bound.features):
        if f.categories is None or f.name not in given.names or given[f.name].categories == f.categories:
            continue
        names = given[f.name].categories
        assert names is not None  # given with categories: it differs from the bound ones
        code = {name: i for i, name in enumerate(names)}
        to_given = np.array([code[name] for name in f.categories], dtype=np.float64)
        for c in result.counterexamples:
            c.x[j], c.x_prime[j] = float(to_given[int(c.x[j])]), float(to_given[int(c.x_prime[j])])


def _model_and_property(
    model, domain, protected, epsilon, epsilon_rate, kappa, robustness, trust_pickle, preprocessor=None, reorder=False
):
    """The model's IR, the property over a domain checked against the model's inputs, and the
    domain as given (its categories' order is the one users read codes in)."""
    from .models.binding import bind_to_domain

    ir = load_model(model, trust_pickle=trust_pickle, preprocessor=preprocessor)
    dom = resolve_domain(domain, ir)
    # features named by position refer to the domain as given, before it is fitted to the model
    protected = [dom.names[dom.index(p)] if isinstance(p, (int, np.integer)) else p for p in split_names(protected)]
    # a pipeline (or a linear model) reads raw columns: compile it for this domain's features
    given = dom
    ir, dom = bind_to_domain(ir, dom, keep=set(protected) | set(dom.protected_names), reorder=reorder)
    dom.check_model(ir)
    return (
        ir,
        individual_fairness(
            dom, protected, epsilon=epsilon, epsilon_rate=epsilon_rate, kappa=kappa, robustness=robustness
        ),
        given,
    )


def export_vnnlib(
    model: Any,
    domain: Any = None,
    protected: str | Iterable[str | int] | None = None,
    out_dir: str | Path = "vnnlib",
    *,
    epsilon: Mapping[str, float] | float | None = None,
    epsilon_rate: float | None = None,
    robustness: bool = False,
    trust_pickle: bool = False,
    preprocessor: Any = None,
) -> tuple[Path, Path]:
    """Write a ReLU network's fairness (or robustness) query over `domain` as `out_dir/twin.onnx`
    (the twin network) and `out_dir/property.vnnlib` for VNN-COMP verifiers; returns both paths."""
    from .engines.network.problem import Problem
    from .engines.network.vnnlib import export
    from .models.network import ReluNetwork

    ir, prop, _ = _model_and_property(
        model, domain, protected, epsilon, epsilon_rate, None, robustness, trust_pickle, preprocessor
    )
    if not isinstance(ir, ReluNetwork):
        raise PropertyError(f"VNN-LIB export needs a ReLU network; the model is a {type(ir).__name__}")
    return export(Problem.build(ir, prop), out_dir)


def sample_counterexamples(
    model: Any,
    domain: Any = None,
    protected: str | Iterable[str | int] | None = None,
    n: int = 1000,
    *,
    epsilon: Mapping[str, float] | float | None = None,
    epsilon_rate: float | None = None,
    kappa: float | None = None,
    robustness: bool = False,
    time_limit: float | None = 600.0,
    seed: int = 0,
    trust_pickle: bool = False,
    preprocessor: Any = None,
    options: VerifyOptions | None = None,
):
    """Testing mode for tree ensembles: `n` inputs drawn uniformly from the exact unfair region, each
    with a twin the model labels differently (both re-checked on the model).

    Returns a DataFrame: the input's features (categories by name), the twin's (suffix `_prime`), and the model's
    probability of the positive label for both (`output`, `output_prime`); `frame.attrs["summary"]`
    holds the measure's bounds, the region's sizes, whether the draws are uniform over the exact
    region (`region_exact`) and the timings. `options` may hold time_limit and seed instead (not both).
    """
    options = _options(sample_counterexamples, VerifyOptions, options, time_limit=time_limit, seed=seed)
    ir, prop, _ = _model_and_property(
        model, domain, protected, epsilon, epsilon_rate, kappa, robustness, trust_pickle, preprocessor
    )
    question = UnfairSamples(prop, n)
    frame = find_engine(ir, question).run(ir, question, options, None)
    for f in prop.domain.features:  # coded categories by name, as the data had them
        if f.categories is not None:
            for column in (f.name, f"{f.name}_prime"):
                if column in frame:
                    frame[column] = [f.categories[int(v)] for v in frame[column]]
    return frame


def group(
    model: Any,
    data: Any = None,
    protected: str | Iterable[str] | None = None,
    label: str | None = None,
    population: Any = None,
    metrics: str | Iterable[str] = GroupQuestion.metrics,
    mediators: str | Iterable[str] | None = GroupQuestion.mediators,
    *,
    sensitive_features: str | Iterable[str] | None = None,
    threshold: float = GroupQuestion.threshold,
    gap_thresholds: Mapping[str, float] | None = None,
    influence: bool | Iterable[Iterable[str]] = False,
    bins: Mapping[str, Any] | None = None,
    max_bins: int = 10,
    binning: str = "quantile",
    bin_value: str = "data",
    score: str = "k2",
    max_indegree: int = 3,
    max_width: int | None = 2000,
    time_limit: float | None = GroupOptions.time_limit,
    seed: int = GroupOptions.seed,
    trust_pickle: bool = False,
    preprocessor: Any = None,
    save_population: str | Path | None = None,
    bin_bounds: bool = False,
    method: str = GroupOptions.method,
    delta: float = GroupOptions.delta,
    workers: int | None = None,
    ray_address: str | None = None,
    checkpoint: str | Path | None = None,
    resume: str | Path | None = None,
    checkpoint_every: float = GroupOptions.checkpoint_every,
    memory_limit: int | str | None = None,
    progress: Progress | None = None,
    options: GroupOptions | None = None,
) -> GroupResult:
    """Group fairness of `model` under a population: P[yhat = 1 | group] for every compound group of
    the `protected` attributes, DI (min/max over groups, checked >= `threshold`), SP, EO, PCF.

    `population` is "empirical" (the data's rows, as fairlearn counts them: the default when `data`
    is given), "independent" or "bayesnet" (learned from `data`, continuous columns binned into at
    most `max_bins` `binning` bins unless `bins` says otherwise; a network is kept to `max_width`
    configurations per elimination step by dropping its weakest edges), a saved population (.json), a
    `DiscretePopulation`, or a continuous/program population (.fr file or object), which goes to the
    sound probability-bounds engine. Linear models under discrete populations are answered exactly by
    the subset-sum engine; other models (networks, tree ensembles) by
    `faircert.engines.probability.bounds.group_bounds(model, population, protected=..., metrics=...,
    threshold=..., gap_thresholds=..., budget=...)`, given the learned
    `DiscretePopulation` when `population` names a kind. `sensitive_features` is an alias of
    `protected`; `preprocessor` is the fitted preprocessing of a network or tree ensemble trained on
    encoded columns (see `load_model`); `influence=True` adds fairness influence functions of every
    feature (or give subsets); `bin_bounds=True` adds sound bounds valid for any distribution inside the bins
    (linear models). `method="sampling"` decides DI/SP by a sequential test whose verdict is wrong
    with probability <= `delta` (for models or populations too large for the sound engines). `workers` processes (or
    Ray actors at `ray_address`) evaluate the sound bounds' trial splits. `checkpoint=FILE` writes
    the sound bounds' refinement state every `checkpoint_every` seconds and at the end, and
    `resume=FILE` continues it (the probability-bounds engine; another model, population or
    question is refused).
    """
    from .models.binding import bind_to_population
    from .population.resolve import resolve_population

    started = time.perf_counter()
    protected, data = _sensitive(_protected(protected, sensitive_features), data)
    if population is None:
        if data is None:
            raise PropertyError(
                "no population: give data (its rows are the population, as fairlearn counts them) "
                "or name one (population=independent|bayesnet|empirical|FILE)"
            )
        population = "empirical"
    metrics = metric_names(metrics)
    check_metric_inputs(metrics, label, tuple(_names(mediators)), str(population))
    options = _options(
        group,
        GroupOptions,
        options,
        time_limit=time_limit,
        seed=seed,
        method=method,
        delta=delta,
        workers=workers,
        ray_address=ray_address,
        checkpoint=checkpoint,
        resume=resume,
        checkpoint_every=checkpoint_every,
        memory_limit=memory_limit,
    )
    with time_budget(options.time_limit):
        ir = load_model(model, trust_pickle=trust_pickle, preprocessor=preprocessor)
    ir, pop, frame, learning_s = resolve_population(
        population,
        data,
        ir,
        protected,
        label,
        bins=bins,
        max_bins=max_bins,
        method=binning,
        bin_value=bin_value,
        score=score,
        max_indegree=max_indegree,
        max_width=max_width,
    )
    if save_population is not None and hasattr(pop, "save"):
        pop.save(save_population)
    if hasattr(pop, "expanded"):  # a bin's data values become a variable the model reads
        pop = pop.expanded()
    compiling = time.perf_counter()
    ir, pop = bind_to_population(ir, pop)  # a pipeline reads raw columns: compile it for the population
    compile_s = time.perf_counter() - compiling
    question = GroupQuestion(
        pop,
        tuple(protected),
        label,
        metrics,
        tuple(_names(mediators)),
        threshold,
        dict(gap_thresholds or {}),
        influence if isinstance(influence, bool) else tuple(tuple(_names(s)) for s in influence),
        bin_bounds,
        frame,
        learning_s,
        getattr(ir, "source", "") or type(model).__name__,
    )
    spec = find_engine(ir, question, options.method)
    if spec.name not in CHECKPOINTED:
        refuse_checkpoint(options, spec.name)
    sound_options = _after(options, learning_s + compile_s)
    estimating = spec.name == "probability-bounds"  # bounds that may stay wide: keep time to sample
    sampled_share = ESTIMATE_SHARE if not question.influence else INFLUENCE_SHARE  # influence samples too
    if estimating and sound_options.time_limit is not None:
        sound_options = replace(sound_options, time_limit=sound_options.time_limit * (1 - sampled_share))
    result = spec.run(ir, question, sound_options, progress)
    if estimating and max(g.high - g.low for g in result.groups) > ESTIMATE_WIDTH:
        result.estimate = _estimate(ir, question, options, started, 0.5 if question.influence else 1.0)
        if question.influence and result.estimate is not None:
            _sampled_influence(ir, question, result, options, started)
    result.stats.setdefault("learning_s", learning_s)
    result.stats.setdefault("compile_s", compile_s)  # counted inside the time limit, as learning is
    if question.influence and not result.influence and not any("influence" in a for a in result.approximations):
        result.approximations.append(
            f"influence not computed: the {result.engine} engine gives no influence "
            "(it is computed for linear models under a learned population)"
        )
    dropped = getattr(pop, "info", {}).get("rows_dropped_missing", 0)
    if dropped:
        result.stats.setdefault("rows_dropped_missing", dropped)
    return result


#: Sound bounds wider than this get a statistical estimate beside them, which takes this share of
#: the time limit (at least `MIN_ESTIMATE_S`) and is wrong with probability at most `ESTIMATE_DELTA`.
ESTIMATE_WIDTH = 0.05
ESTIMATE_SHARE = 0.2
MIN_ESTIMATE_S = 1.0
ESTIMATE_DELTA = 1e-3


def _estimate(ir: Any, question: Any, options: GroupOptions, started: float, share: float = 1.0) -> GroupResult | None:
    """The question answered by sampling the same population (None where it cannot be sampled), in
    `share` of the time left."""
    from .engines.sampling.sequential import estimate_group

    left = (
        None
        if options.time_limit is None
        else max(share * (options.time_limit - (time.perf_counter() - started)), MIN_ESTIMATE_S)
    )
    try:
        return estimate_group(ir, question, left, options.seed, ESTIMATE_DELTA)
    except FaircertError:
        return None


#: With influence asked, the share of the time limit for sampling (the estimate, then each feature
#: made uniform).
INFLUENCE_SHARE = 0.5


def _sampled_influence(ir: Any, question: Any, result: GroupResult, options: GroupOptions, started: float) -> None:
    """Fairness influence from sampled rates, where the sound bounds are too wide to rank features:
    the estimate's rates against those sampled with each feature set made uniform (an equal share
    of the time left each). Kept only when every sampled rate is tight enough to rank features."""
    from .engines.group.influence import influences, requested_subsets
    from .engines.sampling.sequential import estimate_group
    from .population.discrete import BIN_SUFFIX, DiscretePopulation

    assert result.estimate is not None  # called only beside an estimate
    pop, base = question.population, result.estimate.groups
    if not isinstance(pop, DiscretePopulation):
        result.approximations.append(
            "influence not computed: it makes features uniform in a learned or saved "
            "discrete population, and this one is not"
        )
        return
    columns = [c for c in getattr(ir, "input_names", None) or pop.variables if not c.endswith(BIN_SUFFIX)]
    subsets = requested_subsets(question.influence, pop, columns)
    left = None if options.time_limit is None else options.time_limit - (time.perf_counter() - started)
    if left is not None and left < MIN_ESTIMATE_S * len(subsets):
        result.approximations.append(
            f"influence not computed: {max(left, 0):.1f} s were left to sample {len(subsets)} feature sets"
        )
        return
    widest = [max(g.high - g.low for g in base)]

    def sampled(population: DiscretePopulation) -> list:
        each = None if left is None else left / len(subsets)
        groups = estimate_group(ir, replace(question, population=population), each, options.seed, ESTIMATE_DELTA).groups
        widest.append(max(g.high - g.low for g in groups))
        return groups

    found = influences(pop, base, sampled, subsets)
    # a FIF on SP is off by at most the widths of two rates of the base and two of the perturbed run
    error = 2 * widest[0] + 2 * max(widest[1:])
    largest = max(abs(f.sp) for f in found)
    if largest <= error:
        result.approximations.append(
            f"influence not computed: sampled, the largest influence on SP "
            f"({largest:.3g}) is within its sampling error ({error:.3g}), too close to "
            "rank features"
        )
        return
    result.influence = found
    result.approximations.append(
        f"influence estimated by sampling: each value on SP within {error:.3g}, every "
        f"rate wrong with probability <= {ESTIMATE_DELTA:g} (not a bound)"
    )


#: The least time an engine is given, even when learning the population spent the whole budget:
#: enough for a first sound answer, which then says it stopped on the budget.
MIN_ENGINE_S = 0.05


def _after(options: Any, spent_s: float) -> Any:
    """The options with the time limit less what was already spent (compiling, learning a population)."""
    from dataclasses import replace

    if options.time_limit is None or spent_s <= 0:
        return options
    return replace(options, time_limit=max(options.time_limit - spent_s, MIN_ENGINE_S))


def compare(
    models: Mapping[str, Any] | Iterable[Any],
    data: Any = None,
    protected: str | Iterable[str] | None = None,
    **group_options: Any,
) -> Comparison:
    """Group fairness of several models under the same data, groups and thresholds, side by side.

    `models` maps names to models (paths, framework objects or IRs), or lists them (named by their
    paths or positions); `group_options` are `group`'s keywords. `to_frame()` gives one row per model.
    """
    items = (
        list(models.items())
        if isinstance(models, Mapping)
        else [(str(m) if isinstance(m, (str, Path)) else f"model {i + 1}", m) for i, m in enumerate(models)]
    )
    if len(items) < 1:
        raise PropertyError("compare needs at least one model")
    results = [group(m, data, protected, **group_options) for _, m in items]
    return Comparison.of([n for n, _ in items], results)


def _names(names: str | Iterable[str] | None) -> list[str]:
    return [str(n) for n in split_names(names)]


def _sensitive(sensitive: Any, data: Any) -> tuple[list[str], Any]:
    """Protected attribute names, fairlearn-style: column names, a pandas Series or a DataFrame of
    several. A Series or DataFrame column that is not in the data (or differs from it) is added to
    the data under its name, row by row, as fairlearn's `sensitive_features` are."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a core dependency
        return _names(sensitive), data
    if isinstance(sensitive, pd.Series):
        sensitive = sensitive.to_frame(name=sensitive.name if sensitive.name is not None else "sensitive_feature")
    if not isinstance(sensitive, pd.DataFrame):
        return _names(sensitive), data
    names = [str(c) for c in sensitive.columns]
    if data is None:
        raise DataError("sensitive features given as a Series or DataFrame need the data they describe (data=...)")
    from .data import read_table

    frame = read_table(data)
    if len(sensitive) != len(frame):
        raise DataError(f"the sensitive features have {len(sensitive)} rows but the data has {len(frame)}")
    have = [str(c) for c in frame.columns]
    added = {}
    for name, column in zip(names, sensitive.columns):
        values = sensitive[column].to_numpy()
        if name not in have or not np.array_equal(frame[frame.columns[have.index(name)]].to_numpy(), values):
            added[name] = values
    if added:
        frame = frame.assign(**added)
    return names, frame


def verify_program(
    program: Any,
    epsilon: float = ProgramQuestion.epsilon,
    time_limit: float | None = ProgramOptions.time_limit,
    method: str = ProgramOptions.method,
    *,
    kind: str = ProgramQuestion.kind,
    delta: float = ProgramOptions.delta,
    bound: str = ProgramOptions.bound,
    seed: int = ProgramOptions.seed,
    query: str | None = None,
    above: float | None = None,
    tolerance: float = ProgramOptions.tolerance,
    ratio_width: float | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    checkpoint: str | Path | None = None,
    resume: str | Path | None = None,
    checkpoint_every: float = ProgramOptions.checkpoint_every,
    memory_limit: int | str | None = None,
    progress: Progress | None = None,
    options: ProgramOptions | None = None,
) -> ProgramResult:
    """Group fairness of an annotated decision program (FairSquare's `.fr` language).

    `program` is a path, program text or a parsed Program. Checks P[target | sensitive, qualified] /
    P[target | not sensitive, qualified] > 1 - epsilon (`kind="ratio"`), both ways ("parity"), or
    |P[target | sensitive] - P[target | not sensitive]| < epsilon ("difference").
    `method="sound"` refines sound probability bounds until decided or `time_limit`;
    `method="sampling"` runs a sequential test whose verdict is wrong with probability <= `delta`.
    `ratio_width` (sound) keeps refining after the verdict until the ratio's bounds are that tight.
    With `query` (an expression over the program's final variables, e.g. "x1 + x2 >= 0"), bounds
    P[query] instead: proven above / below `above` when given, else to within `tolerance` (sound only).
    `workers` processes (or Ray actors at `ray_address`) evaluate the sound refinement's trial splits.
    `checkpoint=FILE` writes the sound refinement's state every `checkpoint_every` seconds and at
    the end; `resume=FILE` continues it (another program or question is refused).
    """
    from .models.program import load_program

    options = _options(
        verify_program,
        ProgramOptions,
        options,
        time_limit=time_limit,
        seed=seed,
        method=method,
        delta=delta,
        bound=bound,
        ratio_width=ratio_width,
        tolerance=tolerance,
        workers=workers,
        ray_address=ray_address,
        checkpoint=checkpoint,
        resume=resume,
        checkpoint_every=checkpoint_every,
        memory_limit=memory_limit,
    )
    question = ProgramQuestion(epsilon=epsilon, kind=kind, query=query, above=above)
    parsed = load_program(program)
    engine = find_engine(parsed, question, options.method)
    if engine.name not in CHECKPOINTED:
        refuse_checkpoint(options, engine.name)
    return engine.run(parsed, question, options, progress)
