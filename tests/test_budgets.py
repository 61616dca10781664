"""Honest budgets: every group run says why it stopped, an undecided DI keeps refining while the
budget lasts, and the time limit is honoured (population learning included)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from timing import wall

import faircert
from faircert.engines.probability.bounds import Stop, group_bounds
from faircert.engines.probability.refine import RefineOptions
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.models.network import ReluNetwork
from faircert.population.discrete import DiscretePopulation, Variable


def _population() -> DiscretePopulation:
    bern = [Variable(n, (0, 1), ("0", "1"), (), [1 - p, p]) for n, p in (("P", 0.5), ("Q", 0.4), ("R", 0.5))]
    return DiscretePopulation({v.name: v for v in bern}, ("P",))


#: positive iff P + Q + R > 1.5: P[yhat=1 | P=1] = 1 - 0.6*0.5 = 0.7, P[yhat=1 | P=0] = 0.4*0.5 = 0.2
NETWORK = ReluNetwork([np.array([[1.0, 1.0, 1.0]])], [np.array([-1.5])], input_names=["P", "Q", "R"])
TRUE_DI = 0.2 / 0.7


def test_a_decided_run_says_so_and_an_undecided_one_refines_to_the_end():
    decided = group_bounds(
        NETWORK, _population(), protected="P", budget=RefineOptions(time_limit=30), stop=Stop(threshold=0.8)
    )
    assert decided.verdict == "unfair" and decided.stats["stopped"] == "threshold decided"
    # the threshold on the true DI: refining cannot decide it, so it refines until every box is decided
    # (it used to stop, undecided, once the groups' intervals were 1e-3 wide)
    at = group_bounds(
        NETWORK, _population(), protected="P", budget=RefineOptions(time_limit=30), stop=Stop(threshold=TRUE_DI)
    )
    assert at.verdict == "unknown" and at.stats["stopped"] == "converged"
    assert at.metrics["di"].low == pytest.approx(TRUE_DI, abs=1e-12)
    assert at.metrics["di"].high == pytest.approx(TRUE_DI, abs=1e-12)


def test_a_run_out_of_time_says_budget_within_its_time_limit():
    rng = np.random.default_rng(0)
    names = [f"v{i}" for i in range(8)]
    variables = {n: Variable(n, tuple(range(6)), (), (), rng.dirichlet(np.ones(6))) for n in names}
    pop = DiscretePopulation(variables, ("v0",))
    net = ReluNetwork(
        [rng.normal(size=(30, 8)), rng.normal(size=(1, 30))], [rng.normal(size=30), np.array([0.1])], input_names=names
    )
    start = time.monotonic()
    r = group_bounds(net, pop, protected="v0", budget=RefineOptions(time_limit=1.0), stop=Stop(threshold=0.8))
    assert time.monotonic() - start < wall(1.0)
    assert r.stats["stopped"] == "budget" and r.verdict == "unknown"


def test_exact_engines_say_converged():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 200), "age": rng.integers(0, 5, 200)})
    model = LinearModel(np.array([1.0, 0.3]), -1.1, (ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("age")))
    for population in ("independent", "empirical"):
        assert faircert.group(model, df, protected="sex", population=population).stats["stopped"] == "converged"


def test_exact_subset_sums_past_their_cap_finish_quickly_with_tight_sound_bounds():
    """A chain of many-valued variables: exact sums take about a minute; past their cap the score
    histograms answer, within the time limit's rule and tight."""
    rng = np.random.default_rng(0)
    names = [f"v{i}" for i in range(10)]
    variables = {"s": Variable("s", (0, 1), (), (), [0.5, 0.5])}
    previous = "s"
    for n in names:
        variables[n] = Variable(
            n, tuple(range(12)), (), (previous,), rng.dirichlet(np.ones(12), size=variables[previous].card)
        )
        previous = n
    pop = DiscretePopulation(variables, ("s",))
    model = LinearModel.plain(rng.normal(size=11), 0.1, ["s"] + names)
    start = time.monotonic()
    r = faircert.group(model, population=pop, protected="s", time_limit=0.5)
    assert time.monotonic() - start < wall(0.5 * 1.1 + 2.0)  # the budget rule
    assert r.engine == "subset-sum" and r.method.startswith("score histograms")
    # unlimited, they come within 1e-3 (in about 1.5 s), meeting the exact subset sums' bounds (57 s),
    # [0.9732, 0.9784] and [0.8992, 0.9129]; the budgeted run's sound bounds meet them
    tight = faircert.group(model, population=pop, protected="s", time_limit=None)
    assert max(g.high - g.low for g in tight.groups) < 1e-3
    assert tight.groups[0].low <= 0.9784 and tight.groups[0].high >= 0.9732
    assert tight.groups[1].low <= 0.9129 and tight.groups[1].high >= 0.8992
    for budgeted, exact in zip(r.groups, tight.groups):
        assert budgeted.low <= exact.high and exact.low <= budgeted.high


def test_population_learning_counts_against_the_time_limit(monkeypatch):
    """The engine gets the time limit less the learning and compile time (all shown in the result)."""
    from faircert.requests import verify as requests_verify

    seen = {}
    real = requests_verify.after

    def spy(options, spent):
        seen["spent"], seen["limit"] = spent, real(options, spent).time_limit
        return real(options, spent)

    monkeypatch.setattr(requests_verify, "after", spy)
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 300), "age": rng.integers(0, 5, 300)})
    df["edu"] = (df.age + rng.integers(0, 2, 300)).astype(int)
    model = LinearModel(
        np.array([1.0, 0.3, 0.2]),
        -1.1,
        (ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("age"), ColumnEncoding("edu")),
    )
    r = faircert.group(model, df, protected="sex", population="bayesnet", time_limit=30)
    assert seen["spent"] > 0 and seen["limit"] == pytest.approx(30 - seen["spent"])
    # learning the population and compiling the model for it are both spent before the engine starts
    assert r.stats["learning_s"] + r.stats["compile_s"] == pytest.approx(seen["spent"])
