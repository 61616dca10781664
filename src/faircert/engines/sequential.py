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

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import beta

from ..errors import PropertyError

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


def sequential_test(sample: Callable[[np.random.Generator, int], np.ndarray], n_events: int,
                    decide: Callable[[list, list], str | None], delta: float = 1e-6, bound: str = "binomial",
                    time_limit: float | None = 60.0, max_samples: int = 10 ** 9, first_batch: int = 10_000,
                    max_batch: int = 2_000_000, seed: int = 0) -> SequentialOutcome:
    """Sample (n, m) event indicators until `decide` answers on the confidence intervals."""
    if not 0 < delta < 1:
        raise PropertyError(f"the error probability delta must lie strictly between 0 and 1, got {delta}")
    if bound not in BOUNDS:
        raise PropertyError(f"unknown bound {bound!r}; choose from {', '.join(BOUNDS)}")
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    counts = np.zeros(n_events, dtype=np.int64)
    n, look = 0, 0
    next_look = first_batch
    low, high = [0.0] * n_events, [1.0] * n_events
    verdict, stopped = None, ""
    while True:
        todo = next_look - n if bound == "binomial" else min(max(first_batch, n), max_batch)
        while todo > 0:
            size = min(todo, max_batch)
            counts += np.asarray(sample(rng, size), dtype=bool).sum(axis=0)
            n += size
            todo -= size
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
        if n >= max_samples:
            stopped = "sample budget"
            break
    guarantee = f"P[wrong verdict] <= {delta:g} ({bound} sequential test)"
    return SequentialOutcome(low, high, verdict, n, time.perf_counter() - start, guarantee, stopped)


def program_fairness_sampled(program, epsilon: float = 0.15, kind: str = "ratio", delta: float = 1e-6,
                             bound: str = "binomial", time_limit: float | None = 60.0, seed: int = 0):
    """Group fairness of an annotated program decided by the sequential test (a statistical guarantee)."""
    from ..models.program import load_program
    from ..results import ProgramResult
    from .prob_fairness import FairnessSpec, conditionals, decide, fairness_events, outward, ratio_interval, summary
    from .prob_interp import POINT, Interpreter, site_marginals

    prog = load_program(program)
    prog.require("sensitiveAttribute", "fairnessTarget")
    spec = FairnessSpec(epsilon, kind)
    marginals = site_marginals(prog)
    run = Interpreter(POINT)

    def sample(rng: np.random.Generator, n: int) -> np.ndarray:
        notes, _, _ = run.run(prog, [m.sample(rng, n) for m in marginals])
        return np.stack([np.broadcast_to(e, (n,)) for e in fairness_events(POINT, notes)], axis=1)

    out = sequential_test(sample, 6, lambda lo, hi: decide(spec, lo, hi), delta=delta, bound=bound,
                          time_limit=time_limit, seed=seed)
    pm, pn = conditionals(out.low, out.high)
    r_lo, r_hi = outward(ratio_interval(pm, pn))
    return ProgramResult(verdict=out.verdict or "unknown", ratio_low=r_lo, ratio_high=r_hi,
                         probabilities=summary(out.low, out.high), epsilon=spec.epsilon, method="sampling",
                         guarantee=out.guarantee, elapsed_s=out.elapsed_s, samples=out.samples, kind=spec.kind,
                         program=prog.source, stopped=out.stopped, stats={"delta": delta, "bound": bound})
