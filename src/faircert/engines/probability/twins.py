"""Individual fairness under a discrete population (a Bayesian network learned from data): sound
bounds on P[x has an unfair twin] for any classifier the interval evaluators read (ReLU networks,
tree ensembles, pipelines compiled to either), beside a sampled estimate and counterexamples drawn
from the population.

The bounds refine boxes of the population's CDF space, as the group rates do
(`models.twin_setup`): a box is proven fair when every twin's label is decided and equal, proven
unfair when two twins' labels surely differ. The shares are probabilities: `falsified` is the
lower bound, `certified` one minus the upper bound.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from scipy.stats import norm

from ...errors import PropertyError
from ...options import VerifyOptions
from ...population.discrete import DiscretePopulation
from ...progress import Progress
from ...results import Counterexample, Result, StatisticalEstimate
from ..boxes.budget import DONE, STOPS
from ..network.sampling import wilson
from .models import twin_setup
from .refine import RefineOptions, refine

#: Draws from the population for counterexamples and the estimate, and the share of the time
#: limit kept for them (at least 0.1 s, at most 10 s).
DRAWS = 20_000
DRAW_SHARE = 0.1


def _labels_and_outputs(model: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's label and the output reports show (a network's logit, another model's P[y = 1])."""
    if hasattr(model, "logit"):
        out = model.logit(X)
        return out > 0, out
    return model.predict(X).astype(bool), model.predict_proba(X)


def sampled_twins(
    model: Any, prop: Any, pop: DiscretePopulation, seed: int, draws: int = DRAWS
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, np.ndarray]]]:
    """`draws` inputs x drawn from `pop` in `prop.domain`'s codes, whether each has an unfair twin
    (the model itself decides), and every (row, twin) pair decided otherwise."""
    import pandas as pd

    from ...data import encode_table

    missing = [n for n in prop.domain.names if n not in pop.variables]
    if missing:
        raise PropertyError(
            f"the population has no variable for domain feature(s) {missing[:5]}; it has: "
            f"{', '.join(list(pop.variables)[:20])}"
        )
    codes = pop.sample_codes(np.random.default_rng(seed), draws)
    frame = pd.DataFrame({n: np.asarray(pop.variables[n].states, dtype=object)[codes[n]] for n in prop.domain.names})
    X = encode_table(frame.infer_objects(), prop.domain)
    label, _ = _labels_and_outputs(model, X)
    protected = list(prop.protected)
    unfair = np.zeros(len(X), dtype=bool)
    pairs = []
    for combo in itertools.product(*[prop.domain.features[i].values() for i in protected]):
        twin = X.copy()
        twin[:, protected] = combo
        differs = _labels_and_outputs(model, twin)[0] != label
        unfair |= differs
        pairs += [(int(j), twin[j]) for j in np.flatnonzero(differs)]
    return X, unfair, pairs


def sampled_counterexamples(
    model: Any, X: np.ndarray, pairs: list[tuple[int, np.ndarray]], limit: int
) -> list[Counterexample]:
    """Up to `limit` of the sampled pairs, with the model's outputs on both."""
    pairs = pairs[:limit]
    if not pairs:
        return []
    x = X[[j for j, _ in pairs]]
    xp = np.array([t for _, t in pairs])
    _, out = _labels_and_outputs(model, x)
    _, out_p = _labels_and_outputs(model, xp)
    return [Counterexample(a.tolist(), b.tolist(), float(o), float(p)) for a, b, o, p in zip(x, xp, out, out_p)]


def answer(
    model: Any,
    prop: Any,
    loaded: Any,
    pop: DiscretePopulation,
    options: VerifyOptions,
    progress: Progress | None = None,
) -> Result:
    """The verify result under `pop`: bounds on P[x has an unfair twin] for the model as loaded
    (`loaded`, compiled here for the population's variables), then draws from `pop` checked on
    `model` (over `prop.domain`'s codes) for counterexamples and an estimate."""
    from ...models.binding import bind_to_population

    start = time.perf_counter()
    bound, coded = bind_to_population(loaded, pop)
    setup = twin_setup(bound, coded, list(prop.protected_names))
    left = None
    if options.time_limit is not None:  # compiling counts, and the draws keep their share
        reserve = float(np.clip(DRAW_SHARE * options.time_limit, 0.1, 10.0))
        left = max(options.time_limit - (time.perf_counter() - start) - reserve, 0.05)
    b = refine(
        setup.marginals,
        setup.evaluate,
        1,
        lambda low, high: None,
        lambda low, high: np.ones(1),
        RefineOptions(time_limit=left, memory_limit=options.memory_limit, progress=progress),
    )
    low, high = float(b.low[0]), float(b.high[0])
    if b.boxes == 0 and low == 0:  # every box proven fair: the upper bound's slack is only rounding
        high = 0.0
    X, unfair, pairs = sampled_twins(model, prop, pop, options.seed)
    z = float(norm.ppf(0.5 + options.confidence / 2))
    ci_low, ci_high = wilson(float(unfair.sum()), len(unfair), z)
    estimate = StatisticalEstimate(
        float(unfair.mean()), float(ci_low), float(ci_high), options.confidence, len(unfair), method="population draws"
    )
    cexs = sampled_counterexamples(model, X, pairs, options.max_counterexamples)
    verdict = "fair" if high == 0 else "unfair" if low > 0 or cexs else "unknown"
    stats = {
        "boxes_open": b.boxes,
        "box_evaluations": b.evaluations,
        "iterations": b.iterations,
        "stopped": b.exhausted or "converged",
        "population": pop.describe(),
    }
    return Result(
        verdict=verdict,
        certified=1.0 - high,
        falsified=low,
        undecided=max(0.0, high - low),
        domain_size=1.0,
        counterexamples=cexs,
        statistical=estimate if high - low > 1e-9 else None,
        elapsed_s=time.perf_counter() - start,
        engine="population-twins",
        model=getattr(model, "source", "") or type(model).__name__,
        protected=prop.protected_names,
        stats=stats,
        feature_names=prop.domain.names,
        epsilon_semantics="other_protected_value",
        exact=high == low,
        stopped=b.exhausted if b.exhausted in STOPS else DONE,  # "tight": as far as refining goes
    )
