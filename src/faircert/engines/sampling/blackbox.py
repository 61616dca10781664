"""Individual fairness of a classifier known only by its predictions, over a domain or the data's
independent marginals: a statistical answer, never a proof.

Points are drawn from the measure (uniform over the domain's grid and boxes, or each feature from
the data's values), and each drawn point is decided on the model itself as the per-row audit
decides a row: every twin of a small ball, a search of a larger one. The unfair share is then a
binomial proportion with a Wilson interval; a point whose ball was searched without a flipping twin
counts either way, widening the interval. Every counterexample is a pair the model itself labels
differently. No share is ever certified or proven unfair: nothing is known of the model but its
answers.

Under a time limit the points are audited in rounds sized to the model's measured pace (`rounds`):
the per-row audit labels all its rows before it flip-tests any, so a slow model (k-nearest
neighbours on a loaded machine) given every point at once may spend the whole limit labelling and
decide none. A round cut by the limit counts its undecided points either way: they were drawn, and
leaving them out would keep those decided first (the flip test's unfair ones) and bias the share.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from statistics import NormalDist

import numpy as np

from ...errors import PropertyError
from ...models.blackbox import BlackBoxModel
from ...options import LENT, AuditOptions, VerifyOptions
from ...progress import Progress, ProgressEvent
from ...properties import IndividualFairness, RowAudit
from ...results import Counterexample, Result, StatisticalEstimate
from ..network.sampling import wilson
from ..rows.audit import UNDONE, UNFAIR, UNKNOWN
from ..rows.blackbox import answer as audit_rows

#: Points drawn from the measure at the most (the audit decides as many as the time limit allows).
POINTS = 20_000
#: Points of the first round under a time limit: few, so that even a slow model decides some.
FIRST_ROUND = 200
#: A later round is sized to take this share of the time left at the pace the rounds so far took.
ROUND_SHARE = 0.5
METHOD = (
    "black box: points drawn from the measure, each decided on the model's own predictions (every twin "
    "of a small ball; a larger ball searched, counted either way); Wilson interval"
)


def draw(prop: IndividualFairness, rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` points of the domain's codes: uniform over each feature's values (or range), or each
    feature drawn from the data's values (`prop.population`, independent marginals)."""
    out = np.empty((n, len(prop.domain)))
    marginals = prop.population
    for j, f in enumerate(prop.domain.features):
        if marginals is not None:
            values, counts = marginals.values[j], marginals.counts[j]
            out[:, j] = rng.choice(values, size=n, p=counts / counts.sum())
        elif f.is_discrete:
            out[:, j] = rng.integers(int(f.min), int(f.max) + 1, size=n)
        else:
            out[:, j] = rng.uniform(f.min, f.max, size=n)
    return out


def answer(
    model: BlackBoxModel, prop: IndividualFairness, options: VerifyOptions, progress: Progress | None = None
) -> Result:
    """Registry entry point: the unfair share estimated from points decided on the model."""
    if prop.robustness or prop.kappa is not None:
        raise PropertyError("a black-box classifier is checked for individual fairness only (no robustness or kappa)")
    t0 = time.perf_counter()
    rng = np.random.default_rng(options.seed)
    points = draw(prop, rng, POINTS)
    audit = AuditOptions.of(options, LENT)
    done = rounds(model, replace(prop, population=None), points, audit, progress)
    verdicts = np.asarray(done.verdicts)
    n = len(verdicts)  # every point of a round: one left undecided counts either way
    k = int((verdicts == UNFAIR).sum())
    open_ = int((verdicts == UNKNOWN).sum())
    z = NormalDist().inv_cdf(0.5 + options.confidence / 2)
    low, high = wilson(k, n, z)[0], wilson(k + open_, n, z)[1]
    estimate = StatisticalEstimate((k + open_ / 2) / n if n else 0.5, low, high, options.confidence, n, METHOD)
    pairs = _counterexamples(points, done, options.max_counterexamples)
    return Result.about(
        prop,
        verdict="unfair" if pairs else "unknown",
        certified=0.0,
        falsified=0.0,
        undecided=1.0,
        domain_size=prop.domain.measure(exclude=list(prop.protected)),
        counterexamples=pairs,
        statistical=estimate,
        elapsed_s=time.perf_counter() - t0,
        engine="blackbox-sampling",
        model=model.source,
        stats={
            "points_drawn": POINTS,
            "points_decided": n - open_,
            "points_open": open_,
            "points_not_reached": done.not_reached,
            "rounds": done.rounds,
        },
        stopped=done.stopped,
    )


@dataclass
class Rounds:
    """The verdicts, twins and labels of the points audited (the first `len(verdicts)` drawn)."""

    verdicts: list[str] = field(default_factory=list)
    twins: list = field(default_factory=list)
    #: each point's label and its twin's, as the audit labelled (and re-checked) them
    labels: list = field(default_factory=list)
    twin_labels: list = field(default_factory=list)
    #: points of a round the audit did not reach (counted as unknown)
    not_reached: int = 0
    rounds: int = 0
    stopped: str = "done"


def rounds(
    model: BlackBoxModel, prop: IndividualFairness, points: np.ndarray, audit: AuditOptions, progress: Progress | None
) -> Rounds:
    """Audit `points` in rounds: all at once without a time limit; under one, `FIRST_ROUND` points,
    then rounds sized to `ROUND_SHARE` of the time left at the pace measured so far, each given the
    time left, until the points or the time run out. A round is begun only with at least the time
    the shortest one took: a round has costs of its own (its rows labelled, its twins re-checked)."""
    start, out = time.perf_counter(), Rounds()
    limit = audit.time_limit
    size, shortest = (len(points) if limit is None else FIRST_ROUND), 0.0
    while len(out.verdicts) < len(points):
        left = None if limit is None else limit - (time.perf_counter() - start)
        if left is not None and (left <= 0 or (out.rounds and left < shortest)):
            out.stopped = "time limit"
            break
        at, began = len(out.verdicts), time.perf_counter()
        chunk = points[at : at + size]
        rows = audit_rows(model, RowAudit(prop, chunk), replace(audit, time_limit=left), _offset(progress, at, start))
        took = time.perf_counter() - began
        shortest = took if not out.rounds else min(shortest, took)
        undone = [v == UNKNOWN and m in UNDONE for v, m in zip(rows.verdicts, rows.methods)]
        out.verdicts += list(rows.verdicts)
        out.twins += list(rows.twins)
        out.labels += list(rows.labels)
        out.twin_labels += list(rows.twin_labels)
        out.not_reached += sum(undone)
        out.rounds += 1
        out.stopped = rows.stopped
        if rows.stopped != "done" or limit is None:
            break
        per_point = (time.perf_counter() - start) / len(out.verdicts)
        left = limit - (time.perf_counter() - start)
        size = int(min(len(points), max(FIRST_ROUND, ROUND_SHARE * left / max(per_point, 1e-9))))
    return out


def _offset(progress: Progress | None, before: int, start: float) -> Progress | None:
    """The progress of a round as points of the whole run (`before` of them in earlier rounds),
    which began at `start`."""
    if progress is None:
        return None

    def report(event: ProgressEvent) -> None:
        done = None if event.rows_done is None else before + event.rows_done
        progress(ProgressEvent(elapsed_s=time.perf_counter() - start, rows_done=done, rows=POINTS))

    return report


def _counterexamples(points: np.ndarray, done: Rounds, most: int) -> list[Counterexample]:
    """The unfair points beside their twins, with the labels the audit gave them (each twin
    re-checked on the model as the audit's result was built)."""
    chosen = [i for i, v in enumerate(done.verdicts) if v == UNFAIR and done.twins[i] is not None][:most]
    return [
        Counterexample(
            list(map(float, points[i])),
            list(map(float, done.twins[i])),
            float(done.labels[i]),
            float(done.twin_labels[i]),
        )
        for i in chosen
        if done.labels[i] != done.twin_labels[i]
    ]
