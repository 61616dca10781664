"""Statistical verification: a VeriFair-style sequential test with time-uniform confidence bounds.

Batches of independent samples are drawn; after each batch every event probability gets a
confidence interval that holds *simultaneously for all sample sizes* (adaptive concentration), so
stopping as soon as the property is decided keeps the stated error probability:
P[some interval ever misses its probability] <= delta, hence P[wrong verdict] <= delta.

Bounds (`bound=`):
- "binomial" (default): exact Clopper-Pearson intervals checked at doubling sample sizes
  n_k = n_0 2^k, with level delta_k = delta / (m (k+1)(k+2)) for each of the m events (a union bound
  over looks and events, sum_k 1/((k+1)(k+2)) = 1). Tight for small probabilities.
- "hoeffding": VeriFair's adaptive Hoeffding bound (Zhao et al. 2016), checked after every batch:
  |p_hat - p| <= sqrt((0.6 log(log_1.1(n) + 1) + log(24 m / delta) / 1.8) / n) for all n at once.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import beta

from ...errors import PropertyError
from ...interrupt import requested as stop_requested
from ...options import GroupOptions, ProgramOptions
from ...progress import ProgressEvent
from ..protocols import PerPopulation

if TYPE_CHECKING:
    from ...models.linear import LinearModel
    from ...models.network import ReluNetwork
    from ...models.trees import TreeEnsemble
    from ...population.continuous import ProductPopulation
    from ...population.discrete import DiscretePopulation
    from ...population.program import ProgramPopulation
    from ..probability.bounds import Stop
    from ..protocols import Classifier

BOUNDS = ("binomial", "hoeffding")


@dataclass
class SequentialOutcome:
    low: list[float]
    high: list[float]
    verdict: str | None
    samples: int
    elapsed_s: float
    guarantee: str
    stopped: str = ""


def _clopper_pearson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    lo = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
    hi = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    # the quantile function's own error is far below these nudges
    return np.maximum(0.0, lo * (1 - 1e-9)), np.minimum(1.0, hi * (1 + 1e-9) + 1e-15)


def _hoeffding(n: int, m: int, delta: float) -> float:
    return math.sqrt((0.6 * math.log(math.log(n, 1.1) + 1) + math.log(24 * m / delta) / 1.8) / n)


#: Samples drawn per call: a look's time is checked between calls, so that one larger than its
#: predicted cost (sampling slows down on large batches) is cut short near the time limit.
CHUNK = 50_000
#: The first look's samples; the most drawn for one look (Hoeffding) and in all.
FIRST_BATCH = 10_000
MAX_BATCH = 2_000_000
MAX_SAMPLES = 10**9


def sequential_test(
    sample: Callable[[np.random.Generator, int], np.ndarray],
    n_events: int,
    decide: Callable[[list, list], str | None],
    delta: float = 1e-6,
    bound: str = "binomial",
    time_limit: float | None = 60.0,
    seed: int = 0,
) -> SequentialOutcome:
    """Sample (n, m) event indicators until `decide` answers on the confidence intervals."""
    if not 0 < delta < 1:
        raise PropertyError(f"the error probability delta must lie strictly between 0 and 1, got {delta}")
    if bound not in BOUNDS:
        raise PropertyError(f"unknown bound {bound!r}; choose from {', '.join(BOUNDS)}")
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    counts = np.zeros(n_events, dtype=np.int64)
    n, look = 0, 0
    next_look = FIRST_BATCH
    low, high = [0.0] * n_events, [1.0] * n_events
    verdict, stopped = None, ""
    while True:
        todo = next_look - n if bound == "binomial" else min(max(FIRST_BATCH, n), MAX_BATCH)
        elapsed = time.perf_counter() - start
        if n and time_limit is not None and elapsed + todo * elapsed / n > time_limit:
            stopped = "time limit"  # the next look (twice the samples) would end past the limit
            break
        drawn, more = counts.copy(), 0
        while todo > 0:
            size = min(todo, MAX_BATCH, CHUNK)
            drawn += np.asarray(sample(rng, size), dtype=bool).sum(axis=0)
            more += size
            todo -= size
            if todo and n and time_limit is not None and time.perf_counter() - start >= time_limit:
                break  # a look cut short is not taken: the last one's intervals stand
        if todo:
            stopped = "time limit"
            break
        counts, n = drawn, n + more
        if bound == "binomial":
            alpha = delta / (n_events * (look + 1) * (look + 2))
            lo, hi = _clopper_pearson(counts, n, alpha)
            look += 1
            next_look *= 2
        else:
            eps = _hoeffding(n, n_events, delta)
            lo, hi = np.maximum(counts / n - eps, 0.0), np.minimum(counts / n + eps, 1.0)
        low, high = [float(x) for x in lo], [float(x) for x in hi]
        verdict = decide(low, high)
        if verdict is not None:
            break
        if time_limit is not None and time.perf_counter() - start >= time_limit:
            stopped = "time limit"
            break
        if stop_requested():
            stopped = "interrupted"
            break
        if n >= MAX_SAMPLES:
            stopped = "sample budget"
            break
    guarantee = f"P[wrong verdict] <= {delta:g} ({bound} sequential test)"
    return SequentialOutcome(low, high, verdict, n, time.perf_counter() - start, guarantee, stopped)


def program_fairness_sampled(
    program,
    epsilon: float = 0.15,
    kind: str = "ratio",
    delta: float = 1e-6,
    bound: str = "binomial",
    time_limit: float | None = 60.0,
    seed: int = 0,
):
    """Group fairness of an annotated program decided by the sequential test (a statistical guarantee)."""
    from ...models.program import load_program
    from ...population.program import site_marginals
    from ..probability.fairness import FairnessSpec, decide, fairness_events, program_result
    from ..probability.interp import POINT, Interpreter

    prog = load_program(program)
    prog.require("sensitiveAttribute", "fairnessTarget")
    spec = FairnessSpec(epsilon, kind)
    marginals = site_marginals(prog)
    run = Interpreter(POINT)

    def sample(rng: np.random.Generator, n: int) -> np.ndarray:
        notes, _, _ = run.run(prog, [m.sample(rng, n) for m in marginals])
        return np.stack([np.broadcast_to(e, (n,)) for e in fairness_events(POINT, notes)], axis=1)

    out = sequential_test(
        sample, 6, lambda lo, hi: decide(spec, lo, hi), delta=delta, bound=bound, time_limit=time_limit, seed=seed
    )
    return program_result(
        prog.source,
        spec,
        out.low,
        out.high,
        verdict=out.verdict or "unknown",
        method="sampling",
        guarantee=out.guarantee,
        engine="program-sequential-test",
        elapsed_s=out.elapsed_s,
        samples=out.samples,
        stopped=out.stopped,
        stats={"delta": delta, "bound": bound},
    )


class _PointLabel:
    """A model's labels (as booleans) of rows given column by column (`values`, by name; `names` in
    the model's input order): a linear model reads the named columns through its encoding, which
    reads categories by name; a network or trees read a matrix of numbers."""

    def __init__(self, names: list[str], values: dict) -> None:
        self.names, self.values = names, values

    def linear(self, model: LinearModel) -> np.ndarray:
        return model.predict({n: self.values[n] for n in self.names}).astype(bool)

    def network(self, model: ReluNetwork | TreeEnsemble) -> np.ndarray:
        # a discrete variable's states may be names, which only a linear model's encoding reads
        text = [n for n in self.names if np.asarray(self.values[n]).dtype == object]
        if text:
            raise PropertyError(f"model input {text[0]!r} has non-numeric states")
        X = np.stack([np.asarray(self.values[n], dtype=np.float64) for n in self.names], axis=1)
        return model.predict(X).astype(bool)

    trees = network


def _point_label(model: Classifier, names: list[str], values: dict) -> np.ndarray:
    return model.accept(_PointLabel(names, values))


@dataclass
class _Draws:
    """What `group_sampled` samples under a population: the groups' names, for `n` draws each
    group's (positive, negative) indicators, and the protected attributes."""

    groups: list
    sample: Callable[[np.random.Generator, int], np.ndarray]
    protected: list[str]


def _product_draws(model: Classifier, population: ProductPopulation, names: list[str], prot: list[str]) -> _Draws:
    if any(n not in population.names for n in names) and len(names) == len(population.names):
        names = list(population.names)
    cells = population.groups(prot)
    groups = [{p: c.name for p, c in g.items()} for g in cells]

    def sample(rng, n):
        values = population.sample(rng, n)
        pos = _point_label(model, names, values)
        cols = []
        for g in cells:
            inside = np.ones(n, dtype=bool)
            for p, c in g.items():
                x = values[p]
                inside &= (x >= c.lo) & ((x <= c.hi) if c.closed else (x < c.hi))
            cols += [inside & pos, inside & ~pos]
        return np.stack(cols, axis=1)

    return _Draws(groups, sample, prot)


def _program_draws(model: Classifier, population: ProgramPopulation, names: list[str], prot: list[str]) -> _Draws:
    from ...models.program import parse_expression
    from ..probability.interp import POINT, Interpreter

    population.check_features(names)
    cond = parse_expression(prot[0] if len(prot) == 1 else " and ".join(f"({p})" for p in prot)) if prot else None
    if cond is None:
        population.program.require("sensitiveAttribute")
    title = (prot[0] if len(prot) == 1 else " and ".join(prot)) if prot else "sensitiveAttribute"
    groups = [{title: True}, {title: False}]
    run = Interpreter(POINT)
    marginals = population.marginals
    given = population.given

    def sample(rng, n):
        queries = ([cond] if cond is not None else []) + ([given] if given is not None else [])
        notes, results, env = run.run(population.program, [m.sample(rng, n) for m in marginals], queries)
        g = np.broadcast_to(results[0] if cond is not None else notes["sensitiveAttribute"], (n,))
        inside = np.broadcast_to(results[-1], (n,)) if given is not None else np.ones(n, dtype=bool)
        pos = _point_label(model, names, {k: np.broadcast_to(v, (n,)) for k, v in env.items()})
        g, ng = g & inside, ~g & inside
        return np.stack([g & pos, g & ~pos, ng & pos, ng & ~pos], axis=1)

    return _Draws(groups, sample, prot)


def _discrete_draws(model: Classifier, population: DiscretePopulation, names: list[str], prot: list[str]) -> _Draws:
    order = population.order()
    prot = prot or list(population.protected)
    if not prot:
        raise PropertyError("name the protected attribute(s) (protected=...)")
    missing = [n for n in names + prot if n not in population.variables]
    if missing:
        raise PropertyError(f"the population has no variable(s) {missing}; it has: {', '.join(order)}")
    states = [
        dict(zip(prot, combo)) for combo in itertools.product(*[range(population.variables[p].card) for p in prot])
    ]
    groups = [population.group_name(g) for g in states]

    def sample(rng, n):
        codes = population.sample_codes(rng, n, order)
        values = {}
        for name in names:
            states_of = population.variables[name].states
            try:
                vals = np.array([float(x) for x in states_of])
            except (TypeError, ValueError):  # names: a linear model reads them, others refuse them
                vals = np.array(states_of, dtype=object)
            values[name] = vals[codes[name]]
        pos = _point_label(model, names, values)
        cols = []
        for st in states:
            g = np.ones(n, dtype=bool)
            for p, code in st.items():
                g &= codes[p] == code
            cols += [g & pos, g & ~pos]
        return np.stack(cols, axis=1)

    return _Draws(groups, sample, prot)


def group_sampled(
    model,
    population,
    protected: str | Sequence[str] | None = None,
    delta: float = 1e-6,
    time_limit: float | None = 60.0,
    seed: int = 0,
    stop: Stop | None = None,
):
    """Per-group positive rates and DI/SP of any model under a product or program population, decided
    by the (binomial) sequential test: a GroupResult whose verdict is wrong with probability <= delta.
    Sampling stops as `stop` says (default `probability.bounds.Stop()`: DI against the four-fifths
    rule), or at the time limit."""
    from ...population.program import ProgramPopulation
    from ...properties import split_names
    from ...results import GroupProbability, GroupResult
    from ..probability.bounds import Stop
    from ..probability.models import _feature_names, _model_name

    start = time.perf_counter()
    stop = Stop() if stop is None else stop
    population = ProgramPopulation.given_as(population)
    names = _feature_names(model)
    prot = split_names(protected)
    samplers = PerPopulation(
        model, names, prot, product=_product_draws, program=_program_draws, discrete=_discrete_draws
    )
    draws = population.accept(samplers)
    groups, sample, prot = draws.groups, draws.sample, draws.protected
    k = len(groups)

    def build(lo, hi, **extra):
        from ..probability.fairness import _cond

        out = []
        for i, name in enumerate(groups):
            p = _cond(*(float(x) for x in (lo[2 * i], hi[2 * i], lo[2 * i + 1], hi[2 * i + 1])))
            out.append(
                GroupProbability(
                    name,
                    float(p[0]),
                    float(p[1]),
                    float(lo[2 * i] + lo[2 * i + 1]),
                    float(min(1.0, hi[2 * i] + hi[2 * i + 1])),
                )
            )
        return GroupResult.build(out, threshold=stop.threshold, gap_thresholds=dict(stop.gap_thresholds), **extra)

    def decide(lo, hi):
        return stop.verdict(build(lo, hi, engine="sequential-test", population="").groups)

    out = sequential_test(sample, 2 * k, decide, delta=delta, time_limit=time_limit, seed=seed)
    res = build(
        out.low,
        out.high,
        engine="sequential-test",
        population=str(population),
        elapsed_s=time.perf_counter() - start,
        model=_model_name(model),
        protected=prot or list(groups[0]),
        approximations=[f"statistical: {out.guarantee}; {out.samples} samples"],
        stats={
            "samples": out.samples,
            "delta": delta,
            "bound": "binomial",
            "stopped": {"time limit": "budget", "sample budget": "sample limit"}.get(
                out.stopped, out.stopped or ("target width" if out.verdict == "tight" else "threshold decided")
            ),
        },
    )
    return res


def answer_group(model: Any, question: Any, options: GroupOptions, progress=None):
    """Registry entry point: group-fairness verdicts by sequential tests, wrong with probability <= delta
    in all (with EO, the groups given each label value are further tests: delta is shared among them)."""
    from ..probability.bounds import label_conditions, with_label_conditions

    conditions = label_conditions(question)
    tests = 1 + len(conditions)
    delta = options.delta / tests

    def run(population, protected, metrics, time_limit, stop):
        result = group_sampled(model, population, protected, delta, time_limit, options.seed, stop)
        result.label = question.label  # the model's output, as the reports name it
        if progress is not None:
            progress(ProgressEvent(elapsed_s=result.elapsed_s))
        return result

    result = with_label_conditions(run, question, options.time_limit, target_width=0.01, conditions=conditions)
    if tests > 1:
        result.approximations.append(
            f"statistical: P[any wrong verdict] <= {options.delta:g} over all {tests} "
            f"sequential tests (each at delta {delta:g})"
        )
    return result


def estimate_group(
    model: Any, question: Any, time_limit: float | None, seed: int, delta: float, target_width: float = 0.005
):
    """The group rates estimated by sampling, for a result whose sound bounds stay wide: no verdict
    stops the sampling, only each rate's interval reaching `target_width` or the time limit."""
    from ..probability.bounds import Stop, label_conditions, with_label_conditions

    conditions = label_conditions(question)
    share = delta / (1 + len(conditions))

    def run(population, protected, metrics, limit, stop):
        # no verdict stops an estimate: only the width of each rate
        rates = Stop(stop.threshold, target_width=stop.target_width or target_width, check_di=False)
        result = group_sampled(model, population, protected, share, limit, seed, rates)
        result.label = question.label
        return result

    result = with_label_conditions(run, question, time_limit, target_width=target_width, conditions=conditions)
    result.stats["delta"] = delta
    return result


def answer_program(program: Any, question: Any, options: ProgramOptions, progress=None):
    """Registry entry point: a program's fairness by a sequential test (wrong with probability <= delta)."""
    if question.query is not None:
        raise PropertyError("a probability query is answered by the sound method only")
    result = program_fairness_sampled(
        program,
        epsilon=question.epsilon,
        kind=question.kind,
        delta=options.delta,
        bound=options.bound,
        time_limit=options.time_limit,
        seed=options.seed,
    )
    if progress is not None:
        progress(ProgressEvent(elapsed_s=result.elapsed_s, samples=result.samples))
    return result
