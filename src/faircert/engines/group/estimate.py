"""A statistical estimate beside sound group bounds that stayed wide: the same question answered
by sampling the same population, and fairness influence from sampled rates where asked."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from ...errors import FaircertError
from ...options import GroupOptions
from ...results import GroupResult

#: Sound bounds wider than this get a statistical estimate beside them, which takes this share of
#: the time limit (at least `MIN_ESTIMATE_S`) and is wrong with probability at most `ESTIMATE_DELTA`.
#: The bounding engines get the smaller share: where their bounds are still wide after it, more time
#: seldom closes them on models of this size, while sampled intervals keep narrowing (as one over
#: the square root of the time).
ESTIMATE_WIDTH = 0.05
ESTIMATE_SHARE = 0.7
MIN_ESTIMATE_S = 1.0
ESTIMATE_DELTA = 1e-2
#: With influence asked, the share of the time limit for sampling (the estimate, then each feature
#: made uniform).
INFLUENCE_SHARE = 0.5


#: The engines whose sound bounds may stay wide, so that they keep time for sampling.
BOUNDING = ("probability-bounds", "tree-population-group", "tree-regions-group", "network-regions-group")


def sound_share(engine_name: str, influence: Any) -> float:
    """The share of the time limit the sound engine gets: a `BOUNDING` engine's bounds may stay
    wide, so it keeps time to sample."""
    if engine_name not in BOUNDING:
        return 1.0
    return 1 - (INFLUENCE_SHARE if influence else ESTIMATE_SHARE)


def add_estimate(
    ir: Any, question: Any, options: GroupOptions, started: float, result: GroupResult, discrete: bool
) -> None:
    """Where the sound bounds stayed wider than `ESTIMATE_WIDTH`, the estimate (and sampled
    influence, where asked, of a `discrete` population) in the time left of `options.time_limit`
    counted from `started`."""
    if max(g.high - g.low for g in result.groups) <= ESTIMATE_WIDTH:
        return
    result.estimate = _estimate(ir, question, options, started, 0.5 if question.influence else 1.0)
    if question.influence and result.estimate is not None:
        if discrete:
            _sampled_influence(ir, question, result, options, started)
        else:
            result.approximations.append(
                "influence not computed: it makes features uniform in a learned or saved "
                "discrete population, and this one is not"
            )


def _estimate(ir: Any, question: Any, options: GroupOptions, started: float, share: float) -> GroupResult | None:
    """The question answered by sampling the same population (None where it cannot be sampled), in
    `share` of the time left."""
    left = (
        None
        if options.time_limit is None
        else max(share * (options.time_limit - (time.perf_counter() - started)), MIN_ESTIMATE_S)
    )
    try:
        return sample_rates(ir, question, left, options.seed)
    except FaircertError:
        return None


def sample_rates(ir: Any, question: Any, time_limit: float | None, seed: int) -> GroupResult:
    """The question's rates sampled from its population: cell by cell from each cell's own
    conditional population where the population is discrete (`stratified`), otherwise from the
    population as a whole (`sampling.sequential`)."""
    return question.population.accept(_Sampled(ir, question, time_limit, seed))


class _Sampled:
    """`sample_rates` under each kind of population."""

    def __init__(self, ir: Any, question: Any, time_limit: float | None, seed: int) -> None:
        self.ir, self.question, self.time_limit, self.seed = ir, question, time_limit, seed

    def discrete(self, population: Any) -> GroupResult:
        from .stratified import estimate_stratified

        return estimate_stratified(self.ir, self.question, self.time_limit, self.seed, ESTIMATE_DELTA)

    def whole(self, population: Any) -> GroupResult:
        from ..sampling.sequential import estimate_group

        return estimate_group(self.ir, self.question, self.time_limit, self.seed, ESTIMATE_DELTA)

    product = program = whole


def _sampled_influence(ir: Any, question: Any, result: GroupResult, options: GroupOptions, started: float) -> None:
    """Fairness influence from sampled rates, where the sound bounds are too wide to rank features:
    the estimate's rates against those sampled with each feature set made uniform (an equal share
    of the time left each). Kept only when every sampled rate is tight enough to rank features."""
    from ...population.discrete import BIN_SUFFIX
    from .influence import influences, requested_subsets

    assert result.estimate is not None  # called only beside an estimate
    pop, base = question.population, result.estimate.groups
    columns = [c for c in getattr(ir, "input_names", None) or pop.variables if not c.endswith(BIN_SUFFIX)]
    subsets = requested_subsets(question.influence, pop, columns)
    left = None if options.time_limit is None else options.time_limit - (time.perf_counter() - started)
    if left is not None and left < MIN_ESTIMATE_S * len(subsets):
        result.approximations.append(
            f"influence not computed: {max(left, 0):.1f} s were left to sample {len(subsets)} feature sets"
        )
        return
    widest = [max(g.high - g.low for g in base)]

    def sampled(population: Any) -> list:
        each = None if left is None else left / len(subsets)
        groups = sample_rates(ir, replace(question, population=population), each, options.seed).groups
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
