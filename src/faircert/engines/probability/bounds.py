"""Sound any-time bounds on program-outcome probabilities (FairSquare's question, answered by
refinement in CDF coordinates with interval abstract interpretation; see `refine`).

Entry points: `program_fairness` (group fairness of a `.fr` program), `probability` (one P[phi]),
and `group_bounds` (per-group positive rates of any model IR under a product population or a
population program, returned as a `GroupResult`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ...checkpoint import Checkpoint, Parts, fingerprint, identity
from ...errors import PropertyError
from ...metrics import needing, spelled
from ...models.program import Expr, Program, load_program, parse_expression
from ...options import GroupOptions, MethodOptions, ProgramOptions
from ...population.program import site_marginals
from ...results import GroupProbability, GroupResult, ProgramResult
from ..boxes.workers import SERIAL, Parallelism
from . import intervals as iv
from .events import BoxEvaluator, stack_events
from .fairness import (
    FairnessSpec,
    conditionals,
    decide,
    fairness_events,
    outward,
    program_result,
    ratio_interval,
    weights,
)
from .interp import INTERVAL, Interpreter
from .refine import DEFAULT_REFINE, Bounds, RefineOptions, refine

_INTERVAL_RUN = Interpreter(INTERVAL)


def program_evaluator(program: Program, make_events: Callable[[dict, list], list], queries: Sequence[Expr] = ()):
    marginals = site_marginals(program)

    def events(draws: list[iv.Iv], n: int):
        notes, results, _ = _INTERVAL_RUN.run(program, draws, queries)
        return stack_events(make_events(notes, results), n)

    return marginals, BoxEvaluator(marginals, events)


def program_fairness(
    program: str | Program,
    epsilon: float = 0.15,
    kind: str = "ratio",
    time_limit: float | None = 60.0,
    ratio_width: float | None = None,
    progress=None,
    parallel: Parallelism = SERIAL,
    checkpoint: Any = None,
    memory_limit: int | None = None,
) -> ProgramResult:
    """Sound bounds on the group-fairness ratio of an annotated program, refined until decided
    (and, with `ratio_width`, until the ratio's bounds are at most that far apart)."""
    prog = load_program(program)
    prog.require("sensitiveAttribute", "fairnessTarget")
    spec = FairnessSpec(epsilon, kind)
    if ratio_width is not None and not ratio_width > 0:
        raise PropertyError(f"the ratio width must be > 0, got {ratio_width}")
    marginals, evaluate = program_evaluator(prog, lambda notes, _: fairness_events(INTERVAL, notes))

    def stop(lo, hi):
        verdict = decide(spec, lo, hi)
        if verdict is None or ratio_width is None:
            return verdict
        r_lo, r_hi = ratio_interval(*conditionals(lo, hi))
        return verdict if r_hi - r_lo <= Fraction(ratio_width) else None

    b = refine(
        marginals,
        evaluate,
        6,
        stop,
        weights,
        RefineOptions(time_limit, memory_limit, progress, parallel, checkpoint),
    )
    return _program_result(prog, spec, b)


def _program_result(prog: Program, spec: FairnessSpec, b: Bounds) -> ProgramResult:
    verdict = decide(spec, b.low, b.high) or "unknown"
    return program_result(
        prog.source,
        spec,
        b.low,
        b.high,
        verdict=verdict,
        method="sound",
        guarantee="sound",
        engine="program-bounds",
        elapsed_s=b.elapsed_s,
        stopped=(_exact_without_verdict(b) or b.exhausted) if verdict == "unknown" else "",
        stats={
            "boxes_open": b.boxes,
            "box_evaluations": b.evaluations,
            "iterations": b.iterations,
            "random_inputs": prog.n_sites,
        },
    )


def _exact_without_verdict(b: Bounds) -> str:
    if b.boxes and b.exhausted != "tight":
        return ""
    return (
        "every probability is exact but nothing is decided: a group has probability 0, or the value "
        "lies within the decision tolerance of the threshold"
    )


def probability(
    program: str | Program, query: str | Expr, time_limit: float | None = 10.0, tolerance: float = 1e-6
) -> tuple[float, float]:
    """Sound [low, high] of P[query] at the end of `program`, refined until high - low <= tolerance."""
    prog = load_program(program)
    expr = parse_expression(query) if isinstance(query, str) else query
    from ...models.program import variables_used

    missing = [n for n in variables_used(expr) if n not in prog.defined]
    if missing:
        raise PropertyError(f"the query reads {missing}, which the program does not assign on every path")
    if not tolerance > 0:
        raise PropertyError(f"tolerance must be > 0, got {tolerance}")
    marginals, evaluate = program_evaluator(prog, lambda notes, results: results, [expr])
    tol = Fraction(tolerance)
    b = refine(
        marginals,
        evaluate,
        1,
        lambda lo, hi: "done" if hi[0] - lo[0] <= tol else None,
        lambda lo, hi: np.ones(1),
        RefineOptions(time_limit),
    )
    return b.low[0], b.high[0]


def probability_result(
    program: str | Program,
    query: str,
    above: float | None = None,
    tolerance: float = 1e-4,
    time_limit: float | None = 60.0,
    parallel: Parallelism = SERIAL,
    checkpoint: Any = None,
    memory_limit: int | None = None,
) -> ProgramResult:
    """P[query] as a ProgramResult: with `above`, proven "fair" (P > above) or "unfair" (P < above);
    without, refined until its width is at most `tolerance` (verdict "unknown": nothing was asked)."""
    from ...models.program import variables_used
    from ...results import DECISION_TOLERANCE

    prog = load_program(program)
    expr = parse_expression(query)
    missing = [n for n in variables_used(expr) if n not in prog.defined]
    if missing:
        raise PropertyError(f"the query reads {missing}, which the program does not assign on every path")
    if above is not None and not 0 <= above <= 1:
        raise PropertyError(f"a probability threshold must lie in [0, 1], got {above}")
    if not tolerance > 0:
        raise PropertyError(f"tolerance must be > 0, got {tolerance}")
    marginals, evaluate = program_evaluator(prog, lambda notes, results: results, [expr])
    tol, tau = Fraction(tolerance), Fraction(DECISION_TOLERANCE)

    def verdict(lo, hi):
        if above is not None:
            if lo[0] > Fraction(above) + tau:
                return "fair"
            if hi[0] < Fraction(above) - tau:
                return "unfair"
            return None
        return "tight" if hi[0] - lo[0] <= tol else None

    b = refine(
        marginals,
        evaluate,
        1,
        verdict,
        lambda lo, hi: np.ones(1),
        RefineOptions(time_limit, memory_limit, parallel=parallel, checkpoint=checkpoint),
    )
    v = b.verdict if b.verdict in ("fair", "unfair") else "unknown"
    stopped = "" if b.verdict else b.exhausted
    return ProgramResult(
        verdict=v,
        ratio_low=float("nan"),
        ratio_high=float("nan"),
        probabilities={query: (b.low[0], b.high[0])},
        epsilon=float("nan"),
        method="sound",
        guarantee="sound",
        engine="program-bounds",
        elapsed_s=b.elapsed_s,
        kind="probability" if above is None else f"probability > {above:g}",
        program=prog.source,
        stopped=stopped,
        stats={
            "boxes_open": b.boxes,
            "box_evaluations": b.evaluations,
            "iterations": b.iterations,
            "random_inputs": prog.n_sites,
        },
    )


# ----- any model under a population ----------------------------------------------------------------
@dataclass(frozen=True)
class Stop:
    """When a group refinement or sequential test stops before its budget ends: once DI against
    `threshold` (unless `check_di` is False) and each gap given a threshold in `gap_thresholds` are
    decided, or once every group's interval is at most `target_width` wide."""

    threshold: float = 0.8
    gap_thresholds: Mapping[str, float] = field(default_factory=dict)
    target_width: float | None = None
    check_di: bool = True

    def verdict(self, groups: list) -> str | None:
        """The verdict on these groups' intervals: "unfair" or "fair" where the checked metrics
        decide it, "tight" where the groups are narrow enough, else None."""
        res = GroupResult.build(
            groups, engine="", population="", threshold=self.threshold, gap_thresholds=dict(self.gap_thresholds)
        )
        checked = [
            m.verdict for name, m in res.metrics.items() if m.threshold is not None and (self.check_di or name != "di")
        ]
        if "unfair" in checked:
            return "unfair"
        if checked and all(v == "fair" for v in checked):
            return "fair"
        if self.target_width is not None and all(g.high - g.low <= self.target_width for g in groups):
            return "tight"
        return None


#: The four-fifths rule on DI, no gap thresholds, no target width.
DEFAULT_STOP = Stop()


def group_bounds(
    model: Any,
    population: Any,
    protected: str | Sequence[str] | None = None,
    metrics: Sequence[str] = ("di", "sp"),
    stop: Stop = DEFAULT_STOP,
    budget: RefineOptions = DEFAULT_REFINE,
):
    """Per-group P[yhat = 1 | group] intervals of `model` under `population` and DI/SP intervals.

    `population` is a `ProductPopulation`, a population program (path, text or `Program`, whose final
    variables named like the model's inputs feed the model), or a `ProgramPopulation`. Groups are the
    observed values of the protected feature(s) (discrete marginals, step bars) or, for a program,
    the truth of its `sensitiveAttribute`. Refinement stops as `stop` says (the metrics decided
    against their thresholds, or every group interval narrow enough), when every box is decided, or
    when the `budget` ends (`refine.RefineOptions`: time, memory, progress, workers, checkpoint); an
    undecided DI keeps refining while the budget lasts. `stats["stopped"]` says which.
    """
    from .models import model_events

    start = time.perf_counter()
    setup = model_events(model, population, protected)
    from ...results import GroupProbability, GroupResult

    k = len(setup.groups)

    def groups_from(lo, hi) -> list[GroupProbability]:
        out = []
        for g, name in enumerate(setup.groups):
            # events 2g: group and positive, 2g+1: group and negative
            p = _cond_interval(lo[2 * g], hi[2 * g], lo[2 * g + 1], hi[2 * g + 1])
            size_lo = Fraction(lo[2 * g]) + Fraction(lo[2 * g + 1])
            size_hi = min(Fraction(1), Fraction(hi[2 * g]) + Fraction(hi[2 * g + 1]))
            out.append(GroupProbability(name, p[0], p[1], float(size_lo), float(size_hi)))
        return out

    def verdict(lo, hi):
        decided = stop.verdict(groups_from(lo, hi))
        return "unknown-tight" if decided == "tight" else decided  # else: refine while the budget lasts

    def wts(lo, hi):
        out = []
        for g in range(k):
            a = max(float(lo[2 * g] + hi[2 * g]) / 2, 1e-9)
            b = max(float(lo[2 * g + 1] + hi[2 * g + 1]) / 2, 1e-9)
            out += [1 / a + 1 / (a + b), 1 / (a + b)]
        return np.array(out)

    b = refine(
        setup.marginals,
        setup.evaluate,
        2 * k,
        verdict,
        wts,
        budget,
    )
    groups = groups_from(b.low, b.high)
    res = GroupResult.build(
        groups,
        engine="probability-bounds",
        population=setup.population,
        threshold=stop.threshold,
        gap_thresholds=dict(stop.gap_thresholds),
        metrics=tuple(m for m in metrics if m in ("di", "sp")),
        elapsed_s=time.perf_counter() - start,
        model=setup.model,
        protected=setup.protected,
        stats={
            "boxes_open": b.boxes,
            "box_evaluations": b.evaluations,
            "iterations": b.iterations,
            "stopped": stop_reason(b),
        },
    )
    unsupported = [m for m in metrics if m not in ("di", "sp")]
    if unsupported:
        res.approximations.append(f"metrics {unsupported} need the true label or mediators; not computed here")
    return res


#: Why a refinement stopped, in the words every group result uses (`stats["stopped"]`).
STOP_WORDS = {"time limit": "budget", "tight": "converged"}


def stop_reason(b: Bounds) -> str:
    """converged (every box decided, or bounds as tight as floating point allows), threshold decided,
    target width (bounds as tight as asked), budget (time limit) or memory limit."""
    if b.exhausted:
        return STOP_WORDS.get(b.exhausted, b.exhausted)
    if b.verdict == "unknown-tight":
        return "target width"
    if b.verdict is not None:
        return "threshold decided"
    return "converged"


def _cond_interval(lo_t, hi_t, lo_f, hi_f) -> tuple[float, float]:
    from .fairness import _cond, _frac

    p = _cond(_frac(lo_t), _frac(hi_t), _frac(lo_f), _frac(hi_f))
    return outward(p)


def answer_group(model: Any, question: Any, options: GroupOptions, progress=None):
    """Registry entry point: sound per-group bounds of any classifier under a population; with EO,
    the groups' bounds given each label value too (see `with_label_conditions`). With a checkpoint in
    the options, each of these refinements keeps its own part of the file."""
    parts = _parts(
        options,
        "probability-bounds",
        lambda: {
            "model": fingerprint(model),
            "population": identity(question.population),
            "question": fingerprint(
                [
                    list(question.protected),
                    question.label,
                    list(question.metrics),
                    question.threshold,
                    dict(question.gap_thresholds),
                ]
            ),
        },
    )

    def run(population, protected, metrics, time_limit, stop):
        budget = RefineOptions(
            time_limit,
            options.memory_limit,
            progress,
            Parallelism.of(options.workers, options.ray_address),
            None if parts is None else parts.next(),
        )
        result = group_bounds(
            model,
            population,
            protected=protected,
            metrics=metrics,
            stop=stop,
            budget=budget,
        )
        result.label = question.label  # the model's output, as the reports name it
        return result

    return _with_checkpoints(with_label_conditions(run, question, options.time_limit, target_width=1e-3), parts)


def _parts(options: MethodOptions, kind: str, identity: Callable[[], dict[str, str]]) -> Parts | None:
    """The checkpoint file the options ask for, shared by the job's refinements, or None."""
    checkpoint = Checkpoint.of(options, kind, identity)
    return None if checkpoint is None else Parts(checkpoint, bool(options.resume))


def _with_checkpoints(result: Any, parts: Parts | None) -> Any:
    if parts is not None:
        result.stats.update(checkpoints=parts.checkpoint.saves, checkpoint_s=parts.checkpoint.save_s)
    return result


def with_label_conditions(
    run: Callable, question: Any, limit: float | None, target_width: float, conditions: list | None = None
):
    """The groups under the question's population, and with a metric that needs the label (EO,
    equal opportunity) their rates given each label value: half the time limit goes to the groups,
    the rest to the label conditions, each refined until decided by the smallest gap threshold of
    those metrics if there is one, else `target_width` wide (or the budget).
    `run(population, protected, metrics, time_limit, stop)` answers one of these questions with a
    GroupResult, stopping as `stop` says; `conditions` are the question's
    `label_conditions` when the caller has them already."""
    conditions = label_conditions(question) if conditions is None else conditions
    gaps = dict(question.gap_thresholds)
    decided = Stop(question.threshold, gaps)
    if not conditions:
        return run(question.population, list(question.protected) or None, question.metrics, limit, decided)
    start = time.perf_counter()
    plain = tuple(m for m in question.metrics if m not in needing(question.metrics, "label"))
    res = run(
        question.population,
        list(question.protected) or None,
        plain,
        None if limit is None else limit / 2,
        decided,
    )
    conditional, stopped = {}, [res.stats.get("stopped", "")]
    for i, (population, protected, split_on, values) in enumerate(conditions):
        left = None if limit is None else max(limit - (time.perf_counter() - start), 0.05) / (len(conditions) - i)
        eo_gap = min((gaps[m] for m in needing(question.metrics, "label") if m in gaps), default=None)
        part = run(
            population,
            protected,
            ("di", "sp"),
            left,
            Stop(question.threshold, {} if eo_gap is None else {"sp": eo_gap}, target_width, check_di=False),
        )
        stopped.append(part.stats.get("stopped", ""))
        for value in values:
            groups = part.groups if split_on is None else [g for g in part.groups if str(g.group[split_on]) == value]
            conditional[f"Y={value}"] = [
                GroupProbability(
                    {k: v for k, v in g.group.items() if k != split_on}, g.low, g.high, g.size, g.size_high
                )
                for g in groups
            ]
    stats = dict(res.stats, stopped=_worst_stop(stopped))
    return GroupResult.build(
        res.groups,
        engine=res.engine,
        population=res.population,
        threshold=question.threshold,
        gap_thresholds=gaps,
        metrics=tuple(question.metrics),
        conditional=conditional,
        approximations=res.approximations,
        elapsed_s=time.perf_counter() - start,
        model=res.model,
        protected=res.protected,
        label=question.label,
        stats=stats,
    )


def label_conditions(question: Any) -> list[tuple[Any, list[str], str | None, list[str]]]:
    """The runs that give the groups' bounds given each label value, where a metric needs it and the
    learned population knows the label: (population, protected, variable to split the groups on,
    label values). Each population says how (its `label_conditions`): one run over the compound
    groups (protected x label) where the label is one of its variables, or one run per label value
    (populations fitted per value, a program restricted to each)."""
    from ...population.program import ProgramPopulation

    label = question.label
    asked = needing(question.metrics, "label")
    if not asked:
        return []
    if label is None:
        raise PropertyError(
            f"{spelled(asked)}: compared given the true label: name it (label=... / "
            "--label), a variable of the population"
        )
    pop = ProgramPopulation.given_as(question.population)
    return pop.label_conditions(label, list(question.protected), spelled(asked))


def _worst_stop(reasons: list[str]) -> str:
    """The stop reason of several runs: the first that is not a decision or convergence."""
    for reason in reasons:
        if reason not in ("converged", "threshold decided", ""):
            return reason
    return "converged" if "converged" in reasons else reasons[0]


def answer_program(program: Program, question: Any, options: ProgramOptions, progress=None) -> ProgramResult:
    """Registry entry point: a program's fairness, or with `question.query` bounds on P[query]."""
    parallel = Parallelism.of(options.workers, options.ray_address)
    parts = _parts(
        options,
        "program-bounds",
        lambda: {
            "model": identity(program),
            "question": fingerprint(
                [
                    question.epsilon,
                    question.kind,
                    question.query,
                    question.above,
                    options.tolerance,
                    options.ratio_width,
                ]
            ),
        },
    )
    part = None if parts is None else parts.next()
    if question.query is not None:
        result = probability_result(
            program,
            question.query,
            above=question.above,
            tolerance=options.tolerance,
            time_limit=options.time_limit,
            parallel=parallel,
            checkpoint=part,
            memory_limit=options.memory_limit,
        )
    else:
        result = program_fairness(
            program,
            epsilon=question.epsilon,
            kind=question.kind,
            time_limit=options.time_limit,
            ratio_width=options.ratio_width,
            progress=progress,
            parallel=parallel,
            checkpoint=part,
            memory_limit=options.memory_limit,
        )
    return _with_checkpoints(result, parts)
