"""`verify`'s request: the model compiled for the domain, the property, and the measure of its
shares; and the result finished for the user (codes as given, categories by name)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..checkpoint import CHECKPOINTED
from ..checkpoint import refuse as refuse_checkpoint
from ..data import encode_table
from ..domain import Domain
from ..engines.registry import find_engine
from ..errors import DataError, PropertyError, UnsupportedModelError
from ..memory import STOPPED as MEMORY_STOPPED
from ..models.blackbox import BlackBoxModel
from ..options import VerifyOptions
from ..progress import Progress
from ..properties import IndividualFairness
from ..results import Result
from .inputs import Individual, Question, model_and_property, population_data

#: The measures `verify` takes (`population=`); "empirical" is the per-row audit of the data.
VERIFY_POPULATIONS = ("uniform", "independent", "bayesnet", "empirical")

#: The engine that runs on a device when one is asked for (`VerifyOptions.device`).
DEVICE_ENGINE = "network-boxes"

#: The least time an engine is given, even when reading the inputs spent the whole budget:
#: enough for a first sound answer, which then says it stopped on the budget.
MIN_ENGINE_S = 0.05


def after(options: Any, spent_s: float) -> Any:
    """The options with the time limit less what was already spent (compiling, learning a population)."""
    if options.time_limit is None or spent_s <= 0:
        return options
    return replace(options, time_limit=max(options.time_limit - spent_s, MIN_ENGINE_S))


@dataclass(frozen=True)
class Learned:
    """A Bayesian network learned from data, and the linear model bound to its columns where the
    model is one (answered by score histograms)."""

    population: Any
    linear: Any
    learning_s: float


@dataclass(frozen=True)
class VerifyRequest:
    """Everything `verify`'s engine reads, checked: the options hold the time left after reading."""

    ir: Any
    prop: IndividualFairness
    given: Domain
    loaded: Any
    options: VerifyOptions
    population: str = "uniform"
    learned: Learned | None = None


def check_population(population: str | None) -> str:
    """`population` as `verify` reads it: one of `VERIFY_POPULATIONS` (uniform by default)."""
    if population is None:
        return "uniform"
    if population not in VERIFY_POPULATIONS:
        raise PropertyError(
            f"unknown population {population!r} for verify; choose one of {', '.join(VERIFY_POPULATIONS)}"
        )
    return population


def prepare_verify(
    model: Any,
    domain: Any,
    asked: Individual,
    population: str,
    data: Any,
    loading: dict[str, Any],
    options: Any,
    learning: Any = None,
    save_population: Any = None,
) -> VerifyRequest:
    """Read and check `verify`'s inputs; the time this takes comes out of the options' limit. A
    learned network follows `learning` (a `PopulationSpec`; default: its defaults) and is saved to
    `save_population` where given."""
    started = time.perf_counter()
    # boxes over a network's categories split better with like categories side by side
    reorder = population in ("uniform", "independent") and options.partition_size is None
    read = _model_or_black_box(model, domain, asked, loading, reorder)
    prop, learned = read.prop, None
    if population == "bayesnet" and isinstance(read.ir, BlackBoxModel):
        raise PropertyError(
            f"{read.ir.reason}; as a black box it is answered under 'uniform' or 'independent', or row by row "
            "(faircert audit)"
        )
    if population == "independent":
        prop = _with_marginals(read.ir, prop, population_data(data, domain, population), options)
    elif population == "bayesnet":
        refuse_checkpoint(options, "the learned-network measure")
        frame = population_data(data, domain, population)
        learned = _learn_bayesnet(read.ir, read.loaded, prop, frame, options, learning, save_population)
    spent = time.perf_counter() - started
    return VerifyRequest(read.ir, prop, read.given, read.loaded, after(options, spent), population, learned)


def _model_or_black_box(model: Any, domain: Any, asked: Individual, loading: dict[str, Any], reorder: bool) -> Question:
    """The model as an IR; a classifier no IR holds (given as an object or a trusted pickle, without a
    preprocessor) as a black box, answered statistically."""
    try:
        return model_and_property(model, domain, asked, loading, reorder)
    except UnsupportedModelError as exc:
        if loading.get("preprocessor") is not None or asked.robustness or asked.kappa is not None:
            raise
        from .audit import black_box
        from .inputs import estimator_object, resolve_domain

        ir, prop = black_box(estimator_object(model, bool(loading.get("trust_pickle")), exc), domain, asked)
        ir.reason = str(exc)  # said in the result: what made the model a black box
        return Question(ir, prop, resolve_domain(domain, None), ir)


def run_verify(request: VerifyRequest, progress: Progress | None) -> Result:
    """The engine the registry finds for the request (score histograms or the twins' box
    refinement under a learned network)."""
    ir, prop, options = request.ir, request.prop, request.options
    if request.learned is not None:
        _refuse_device(options, "the learned-network measure")
        from ..engines.linear import bayesnet
        from ..engines.probability import twins

        learned = request.learned
        if learned.linear is not None:
            return bayesnet.answer(learned.linear, ir, prop, learned.population, options)
        return twins.answer(ir, prop, request.loaded, learned.population, options, progress)
    engine = find_engine(ir, prop, options.method)
    if engine.name not in CHECKPOINTED:
        refuse_checkpoint(options, engine.name)
    if engine.name != DEVICE_ENGINE:
        _refuse_device(options, engine.name)
    return engine.run(ir, prop, options, progress)


def _refuse_device(options: VerifyOptions, what: str) -> None:
    if options.device is not None:
        raise PropertyError(f"--device runs a network's box refinement ({DEVICE_ENGINE}); this question goes to {what}")


def finish_verify(result: Result, request: VerifyRequest) -> Result:
    """The result as the user reads it: the measure named, counterexamples in the codes of the
    domain as given, categories by name, each feature's range."""
    if result.stats.get("memory_limited"):
        result.stats.setdefault("stopped", MEMORY_STOPPED)
    if request.learned is not None:
        result.stats["learning_s"] = request.learned.learning_s
    if isinstance(request.ir, BlackBoxModel):  # what made it one, in the user's words
        result.stats["black_box"] = request.ir.reason
    result.population = request.population
    domain, given = request.prop.domain, request.given
    _codes_as_given(result, domain, given)
    result.categories = {
        f.name: list((given[f.name] if f.name in given.names else f).categories or ())
        for f in domain.features
        if f.categories is not None
    }
    result.feature_ranges = {f.name: [f.min, f.max] for f in domain.features}
    return result


def _with_marginals(ir: Any, prop: IndividualFairness, frame: Any, options: VerifyOptions) -> IndividualFairness:
    """The property measured under the data's independent marginals: exactly for separable models
    and tree ensembles (epsilon 0), by box refinement (sound bounds) for networks."""
    from ..engines.linear.verify import accepts
    from ..models.network import ReluNetwork
    from ..models.trees import TreeEnsemble
    from ..population.marginals import Marginals

    if (
        not (accepts(ir, prop) or isinstance(ir, (ReluNetwork, TreeEnsemble, BlackBoxModel)))
        or options.method != "sound"
    ):
        raise PropertyError(
            "population 'independent' is answered for linear models and pipelines ending in one "
            "(exactly, without epsilon), tree ensembles (exactly, epsilon 0) and networks, not "
            "with --complete; otherwise use 'uniform' or the per-row audit of the data (faircert audit)"
        )
    codes = encode_table(frame, prop.domain)
    outside = ~prop.domain.contains(codes)
    if outside.any():
        raise DataError(f"{int(outside.sum())} of {len(codes)} data rows lie outside the domain; widen the domain")
    return replace(prop, population=Marginals.from_codes(codes))


def _learn_bayesnet(
    ir: Any,
    loaded: Any,
    prop: IndividualFairness,
    frame: Any,
    options: VerifyOptions,
    learning: Any = None,
    save_population: Any = None,
) -> Learned:
    """A Bayesian network learned from `frame`, for P[x has an unfair twin] at epsilon 0: linear
    models (and pipelines ending in one) by score histograms, other models by sound box refinement
    of the network's CDF space."""
    from ..engines.linear.verify import accepts
    from ..models.linear import LinearModel
    from ..population.learn import learn_population
    from ..population.resolve import bind_to_frame, resolve_population
    from ..population.spec import PopulationSpec

    if options.method != "sound" or any(e > 0 for e in np.asarray(prop.epsilon, dtype=float)) or prop.kappa:
        raise PropertyError(
            "population 'bayesnet' is answered with epsilon 0, without kappa and without "
            "--complete; otherwise use 'uniform', 'independent' or the per-row audit of the data "
            "(faircert audit)"
        )
    spec = PopulationSpec("bayesnet") if learning is None else learning
    started = time.perf_counter()
    linear = None
    if isinstance(loaded, LinearModel) and accepts(ir, prop):
        linear = bind_to_frame(loaded, frame, None)
        pop = learn_population(frame, linear.columns, prop.protected_names, spec)
    else:
        _, pop, _, _ = resolve_population(spec, frame, loaded, prop.protected_names, None)
    if save_population is not None:
        pop.save(save_population)
    return Learned(pop.expanded(), linear, time.perf_counter() - started)


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
