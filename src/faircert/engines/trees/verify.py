"""Exact epsilon-kappa fairness and robustness measures of tree ensembles, with any-time bounds.

Semantics (DESIGN.md, notes on the tree-ensemble paper): the measured population is X_kappa, the
inputs whose own confidence exceeds kappa (all inputs when kappa is not given). An input x of
X_kappa is unfair when some twin x' (fairness: any other combination of protected values and every
other feature within epsilon; robustness: every feature within epsilon) gets the other label.
M = 1 - |X_unfair| / |X_kappa|, sizes by grid counts (integer features) and volume (real ones).

Result fields: `certified` = proven share of X_kappa with no counterexample (= measure_lower),
`falsified` = proven share of X_kappa that is unfair, `undecided` = the rest; the shares are of
the best known upper bound of |X_kappa|, so each is a sound lower bound and all three are exact
once the bounds meet. Margin bounds within a small tolerance of a decision threshold (framework
rounding could decide them either way) never decide a box; a box on which the margin is one
number (every tree's reachable leaves share a value) is decided by the model's own arithmetic at
one of its points.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ... import compiled, memory
from ...models.trees import TreeEnsemble
from ...options import VerifyOptions
from ...progress import Progress
from ...properties import IndividualFairness
from ...results import Counterexample, Result, TreeMeasure
from ..boxes.workers import Parallelism
from .open import estimate_unfair_share
from .quantify import check_not_vacuous, quantify
from .resume import checkpoint_for
from .run import DEFAULTS, TreeOptions
from .sampling import piece_points, recheck, sample_unfair, twins_of

ESTIMATE_SHARE = 0.1  # of the time limit, for the statistical estimate when the bounds have not met
MIN_ESTIMATE_S = 0.5  # the estimate's least budget (its first draws take longer in a fresh process)


def _warm(ir: TreeEnsemble) -> None:
    """Compile the kernels a run may call: the ensemble's scores and points drawn in boxes."""
    from ...models import trees_compiled
    from ..sampling import compiled as sampling_kernels

    trees_compiled.warm(ir)
    sampling_kernels.warm()


def _counterexamples(ir: TreeEnsemble, x: np.ndarray, xp: np.ndarray) -> list[Counterexample]:
    """Re-checked pairs as results, with the model's outputs on both."""
    return [
        Counterexample(a.tolist(), b.tolist(), float(o), float(p))
        for a, b, o, p in zip(x, xp, ir.predict_proba(x), ir.predict_proba(xp))
    ]


def verify_trees(
    ir: TreeEnsemble,
    prop: IndividualFairness,
    time_limit: float | None = 60.0,
    seed: int = 0,
    max_counterexamples: int = 100,
    progress: Progress | None = None,
    confidence: float = 0.99,
    options: TreeOptions = DEFAULTS,
) -> Result:
    """Quantify M_fair (or M_robust) exactly; see the module docstring for what the shares mean.

    When the bounds have not met, a statistical estimate of the unfair share (at the given
    `confidence`) is added from samples of the undecided part (`open`) in the last tenth of the
    time limit (at least `MIN_ESTIMATE_S`, at most 10 s, after indexing the undecided boxes); the
    bounds get the rest, and the counterexamples drawn from the undecided part and the estimate end
    by the time limit; a run stopped by its memory limit ends at once, with the estimate's least
    sample (`MIN_ESTIMATE_S`). `options`: see `quantify` (the largest pieces kept are as many as
    the counterexamples asked for). Compiled kernels are built before the clock starts
    (`stats["kernels_compile_s"]`: the seconds that took, 0 once they are cached).
    """
    kernels_s = compiled.warm(lambda: _warm(ir))  # before the clock: a first run keeps its time limit
    t0 = time.monotonic()
    reserve = float(np.clip(ESTIMATE_SHARE * time_limit, MIN_ESTIMATE_S, 10.0)) if time_limit else 0.0
    q = quantify(
        ir,
        prop,
        max(time_limit - reserve, 0.1 * time_limit) if time_limit else None,
        progress,
        dataclasses.replace(options, keep_pieces=max(0, max_counterexamples)),
    )
    lower, upper = q.bounds
    den = q.measured_upper
    falsified = q.unfair / den if den > 0 else 0.0
    certified = lower
    converged = bool(q.complete and upper - lower <= 1e-12)
    undecided = 0.0 if converged else max(0.0, 1.0 - certified - falsified)  # not a rounding residue
    cexs, rejected = [], 0
    if q.n_pieces and max_counterexamples > 0:  # the centres of the largest pieces
        if q.unfair_boxes is not None:
            x, xp = q.unfair_boxes.largest(max_counterexamples)
        else:
            size = np.prod(q.piece_hi - q.piece_lo, axis=1)
            # ties by corner: the same pieces whichever worker, or which run before a resume, found them
            rows = np.lexsort(np.vstack([np.hstack([q.piece_lo, q.piece_hi]).T[::-1], -size]))[:max_counterexamples]
            x = piece_points(q, rows)
            xp = twins_of(q, x, q.piece_twin[rows])
        ok = recheck(ir, q, x, xp)
        rejected = int((~ok).sum())
        cexs = _counterexamples(ir, x[ok], xp[ok])
    # the draws of counterexamples and the estimate end by the time limit: with epsilon > 0 each
    # draw from an open box is a neighbourhood search, slow enough to overrun a small limit
    deadline = t0 + time_limit if time_limit else np.inf
    if not cexs and not q.complete and max_counterexamples > 0:
        # nothing proven unfair yet: unfair inputs drawn from the undecided part (each verdict by the
        # model itself) are counterexamples all the same (half the time left: the estimate has the rest)
        half = (time.monotonic() + deadline) / 2
        cexs = _counterexamples(ir, *sample_unfair(ir, q, max_counterexamples, seed, deadline=half)[:2])
    if cexs:
        verdict = "unfair"
    elif q.complete and q.unfair == 0 and lower >= 1.0:
        verdict = "fair"
    else:
        verdict = "unknown"
    names = prop.domain.names
    estimate, t_estimate = None, time.monotonic()
    if not converged:
        budget = float(np.clip(t0 + time_limit - time.monotonic(), MIN_ESTIMATE_S, 10.0)) if time_limit else 10.0
        if q.stopped == memory.STOPPED:  # a run at its memory limit ends at once: its least sample
            budget = MIN_ESTIMATE_S
        stop = np.inf if q.stopped == memory.STOPPED else deadline  # the least sample, whatever the time
        estimate = estimate_unfair_share(ir, q, confidence, budget, seed, deadline=stop)
    stats = dict(
        q.stats,
        converged=converged,
        gap=upper - lower,
        quantify_s=q.elapsed,
        estimate_s=time.monotonic() - t_estimate if estimate is not None else 0.0,
        rejected_counterexamples=rejected,
        near_tie_unfair_upper=q.unfair_upper_extra,
        kernels_compile_s=kernels_s,
    )
    return Result.about(
        prop,
        verdict=verdict,
        certified=certified,
        falsified=falsified,
        undecided=undecided,
        domain_size=q.total,
        counterexamples=cexs,
        statistical=estimate,
        elapsed_s=time.monotonic() - t0,
        engine="tree-boxes",
        model=ir.source or repr(ir),
        epsilon={names[i]: float(e) for i, e in enumerate(q.eps) if e > 0},
        measure=TreeMeasure(lower, upper, den, q.unfair),
        stats=stats,
        stopped=q.stopped,
    )


def answer(
    ir: TreeEnsemble, prop: IndividualFairness, options: VerifyOptions, progress: Progress | None = None
) -> Result:
    """Registry entry point: `verify_trees` with the command's options (its stored boxes within the
    memory limit)."""
    with memory.limited(options.memory_limit):
        result = verify_trees(
            ir,
            prop,
            time_limit=options.time_limit,
            seed=options.seed,
            max_counterexamples=options.max_counterexamples,
            progress=progress,
            confidence=options.confidence,
            options=TreeOptions(
                parallel=Parallelism.of(options.workers, options.ray_address),
                max_boxes=options.max_boxes,
                checkpoint=checkpoint_for(ir, prop, options),
                resume=bool(options.resume),
            ),
        )
    assert result.measure is not None
    check_not_vacuous(result.measure.confident_size, result.stats["converged"], prop)
    return result
