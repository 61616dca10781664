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


def state_codes(pop: DiscretePopulation, domain: Any) -> dict[str, np.ndarray]:
    """For each of `domain`'s features, the domain code of each state of `pop`'s variable of that
    name (categories by name, numbers as they are); a state outside the domain is refused."""
    import pandas as pd

    from ...data import encode_table
    from ...errors import DataError

    missing = [n for n in domain.names if n not in pop.variables]
    if missing:
        raise PropertyError(
            f"the population has no variable for domain feature(s) {missing[:5]}; it has: "
            f"{', '.join(list(pop.variables)[:20])}"
        )
    cards = [pop.variables[n].card for n in domain.names]
    rows = max(cards, default=1)
    frame = pd.DataFrame(
        {
            n: np.asarray(pop.variables[n].states, dtype=object)[np.minimum(np.arange(rows), card - 1)]
            for n, card in zip(domain.names, cards)
        }
    )
    codes = encode_table(frame.infer_objects(), domain)
    outside = ~domain.contains(codes)
    if outside.any():
        bad = np.flatnonzero(((codes < domain.lower) | (codes > domain.upper)).any(axis=0))
        raise DataError(
            f"the population takes values of {', '.join(domain.names[j] for j in bad[:5]) or 'some feature'} "
            "outside the domain (it holds the data's values); widen the domain"
        )
    return {n: codes[:card, j] for j, (n, card) in enumerate(zip(domain.names, cards))}


def drawn_codes(pop: DiscretePopulation, codes: dict[str, np.ndarray], rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` inputs drawn from `pop` in domain codes (`codes`: `state_codes`), features in that order."""
    states = pop.sample_codes(rng, n)
    return np.stack([table[states[name]] for name, table in codes.items()], axis=1).astype(np.float64)


def region_bounds(
    model: Any, pop: DiscretePopulation, prot: list[str], allowed: dict[str, np.ndarray], options: RefineOptions
) -> tuple[tuple[float, float], tuple[float, float] | None, int]:
    """Sound bounds on P[x in R] and, with a `model`, on P[x in R and x has an unfair twin] (epsilon 0)
    for x drawn from `pop`, where R allows the states `allowed[name]` (a boolean per state) of each
    variable named (others any): ((mass low, high), (unfair low, high) or None, boxes left open)."""
    from . import intervals as iv
    from .events import stack_events
    from .models import DiscreteBoxes, twin_event

    if model is not None:
        boxes, unfair, _ = twin_event(model, pop, prot)
    else:
        boxes, unfair = DiscreteBoxes(pop, []), None
    checks = [
        (boxes.index[name], np.concatenate([[0], np.cumsum(np.asarray(ok, dtype=np.int64))]))
        for name, ok in allowed.items()
        if not np.all(ok)
    ]
    mask = boxes.mask([name for name, ok in allowed.items() if not np.all(ok)])

    def inside(klo: list, khi: list, n: int) -> iv.Bv:
        sure, maybe = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
        for j, counts in checks:
            a, b = klo[j], khi[j]
            held = counts[b + 1] - counts[a]
            sure &= held == b - a + 1
            maybe &= held > 0
        return iv.Bv(maybe, ~sure, mask, np.where(maybe & ~sure, 1.0, 0.0))

    def evaluate(lo: np.ndarray, hi: np.ndarray):
        n = len(lo)
        region = inside(*boxes.codes(lo, hi), n)
        if unfair is None:
            return stack_events([region], n)
        return stack_events([region, iv.and_(region, unfair(lo, hi))], n)

    m = 1 if unfair is None else 2
    b = refine(boxes.inputs, evaluate, m, lambda low, high: None, lambda low, high: np.ones(m), options)
    mass = (float(b.low[0]), float(b.high[0]))
    if unfair is None:
        return mass, None, b.boxes
    low, high = float(b.low[1]), float(b.high[1])
    if b.boxes == 0 and low == 0:  # every box decided and none unfair: the upper bound's slack is only rounding
        high = 0.0
    return mass, (low, high), b.boxes


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
