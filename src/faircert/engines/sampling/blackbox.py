"""Individual fairness of a classifier known only by its predictions, over a domain or the data's
independent marginals: a statistical answer, never a proof.

Points are drawn from the measure (uniform over the domain's grid and boxes, or each feature from
the data's values), and each drawn point is decided on the model itself as the per-row audit
decides a row: every twin of a small ball, a search of a larger one. The unfair share is then a
binomial proportion with a Wilson interval; a point whose ball was searched without a flipping twin
counts either way, widening the interval. Every counterexample is a pair the model itself labels
differently. No share is ever certified or proven unfair: nothing is known of the model but its
answers.
"""

from __future__ import annotations

import time
from dataclasses import replace
from statistics import NormalDist

import numpy as np

from ...errors import PropertyError
from ...models.blackbox import BlackBoxModel
from ...options import AuditOptions, VerifyOptions
from ...progress import Progress
from ...properties import IndividualFairness, RowAudit
from ...results import Counterexample, Result, StatisticalEstimate
from ..network.sampling import wilson
from ..rows.audit import UNDONE, UNFAIR, UNKNOWN
from ..rows.blackbox import answer as audit_rows

#: Points drawn from the measure at the most (the audit decides as many as the time limit allows).
POINTS = 20_000
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
    audit = AuditOptions(
        time_limit=options.time_limit,
        seed=options.seed,
        workers=options.workers,
        ray_address=options.ray_address,
        memory_limit=options.memory_limit,
    )
    rows = audit_rows(model, RowAudit(replace(prop, population=None), points), audit, progress)
    verdicts, methods = np.asarray(rows.verdicts), rows.methods
    reached = np.array([not (v == UNKNOWN and m in UNDONE) for v, m in zip(verdicts, methods)])
    n = int(reached.sum())
    k = int(((verdicts == UNFAIR) & reached).sum())
    open_ = int(((verdicts == UNKNOWN) & reached).sum())
    z = NormalDist().inv_cdf(0.5 + options.confidence / 2)
    low, high = wilson(k, n, z)[0], wilson(k + open_, n, z)[1]
    estimate = StatisticalEstimate((k + open_ / 2) / n if n else 0.5, low, high, options.confidence, n, METHOD)
    pairs = _counterexamples(model, points, rows.twins, verdicts, options.max_counterexamples)
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
        stats={"points_drawn": POINTS, "points_decided": n, "points_open": open_},
        stopped=rows.stopped,
    )


def _counterexamples(
    model: BlackBoxModel, points: np.ndarray, twins: list, verdicts: np.ndarray, most: int
) -> list[Counterexample]:
    """The unfair points beside their twins, each pair labelled again by the model (kept only where
    the labels still differ)."""
    chosen = [i for i in np.flatnonzero(verdicts == UNFAIR) if twins[i] is not None][:most]
    if not chosen:
        return []
    x = points[chosen]
    x_prime = np.array([twins[i] for i in chosen], dtype=np.float64)
    own, other = model.predict(x), model.predict(x_prime)
    return [
        Counterexample(list(map(float, a)), list(map(float, b)), float(la), float(lb))
        for a, b, la, lb in zip(x, x_prime, own, other)
        if la != lb
    ]
