"""Statistical intervals hold at their stated level: on small cases with an exact truth, over many
seeds, each interval misses the truth no more often than a one-sided binomial test at its level
allows. The levels are lower than the defaults so that under-coverage would show in 100 seeds."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from faircert.domain import Domain, Feature
from faircert.engines.network import refine, settle
from faircert.engines.network.refine import Refinement
from faircert.engines.network.sampling import Sampler
from faircert.models.network import ReluNetwork
from faircert.population.marginals import Marginals
from faircert.properties import individual_fairness

SEEDS = 100
#: the chance that a test fails although every interval holds at its level
FALSE_ALARM = 1e-3


def allowed_misses(level: float, seeds: int = SEEDS) -> int:
    """The most misses an interval at `level` may have over `seeds` runs before the test rejects it."""
    return int(binom.isf(FALSE_ALARM, seeds, 1 - level))


def test_the_allowed_misses_reject_an_interval_below_its_level():
    """At level 0.9, 100 seeds: 10 misses expected, 20 allowed; an interval that holds only 70% of
    the time misses about 30 times, and is rejected almost always."""
    assert allowed_misses(0.9) == 20
    assert binom.sf(allowed_misses(0.9), SEEDS, 0.3) > 0.95


# ----- networks: settled boxes exact, points sampled in the open boxes ----------------------------
N = 32
DOMAIN = Domain(
    (
        Feature("a", "integer", 0, N - 1),
        Feature("b", "integer", 0, N - 1),
        Feature("s", "integer", 0, 1),
        Feature("c", "integer", 0, N - 1),
    )
)


def _network() -> ReluNetwork:
    rng = np.random.default_rng(1)
    w1 = rng.normal(size=(16, 4)) / 8
    w1[:, 2] *= 8  # the protected input weighs much: the unfair share is large
    b1 = rng.normal(size=16)
    return ReluNetwork([w1, rng.normal(size=(1, 16))], [b1, np.zeros(1)])


def _unfair_grid(net: ReluNetwork) -> tuple[np.ndarray, np.ndarray]:
    """Every point of the non-protected grid, and whether its two protected values disagree."""
    grid = np.array(list(itertools.product(range(N), repeat=3)), dtype=float)
    a, b = np.insert(grid, 2, 0, axis=1), np.insert(grid, 2, 1, axis=1)
    return grid, net.predict(a) != net.predict(b)


@pytest.fixture(scope="module")
def refined():
    """A refinement stopped after a few boxes, with most of the domain left open."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(refine, "ROWS_PER_STEP", 2000)
        patch.setattr(settle, "EXACT_POINTS", 0)  # no whole-domain enumeration: boxes stay open
        patch.setattr(settle, "EXACT_PER_INPUT", 1)
        net = _network()
        runs = {}
        for population in ("uniform", "independent"):
            prop = individual_fairness(DOMAIN, "s")
            if population == "independent":
                rng = np.random.default_rng(4)
                codes = np.stack([rng.binomial(N - 1, p, 500) for p in (0.3, 0.6, 0.5, 0.8)], axis=1)
                prop = replace(prop, population=Marginals.from_codes(codes))
            run = Refinement(net, prop, 0, None)
            run.refine(None, 0.0, max_boxes=6)
            runs[population] = run
        yield net, runs


def _truth(net: ReluNetwork, prop) -> float:
    grid, unfair = _unfair_grid(net)
    if prop.population is None:
        return float(unfair.mean())
    marginals = prop.population
    weight = np.ones(len(grid))
    for j, column in zip((0, 1, 3), grid.T):
        p = dict(zip(marginals.values[j], marginals.counts[j] / marginals.rows))
        weight *= np.array([p.get(v, 0.0) for v in column])
    return float(weight[unfair].sum() / weight.sum())


@pytest.mark.parametrize("population", ["uniform", "independent"])
@pytest.mark.parametrize("level", [0.9, 0.99])
def test_the_stratified_network_estimate_covers_the_truth(refined, population, level):
    net, runs = refined
    run = runs[population]
    truth = _truth(net, run.prop)
    cert, fal, und = run.shares()
    assert und > 0.5  # the estimate has most of the domain to sample
    lo, hi, mass = run.undecided_boxes()
    settled_unfair = float(run.totals.sums["unfair"]) / run.pb.domain_size
    misses = 0
    for seed in range(SEEDS):
        sampler = Sampler(run.pb, np.random.default_rng(seed), level, halfwidth=0.02, min_samples=2000, chunk=2000)
        est = sampler.estimate(lo, hi, mass, settled_unfair, None, run.chunk)
        misses += not est.ci_low <= truth <= est.ci_high
    assert misses <= allowed_misses(level), (misses, truth)


def test_an_estimate_cut_short_by_its_deadline_still_covers(refined):
    """At a deadline already passed, the estimate stops at its least sample: a wider interval, as
    valid."""
    net, runs = refined
    run = runs["uniform"]
    truth = _truth(net, run.prop)
    lo, hi, mass = run.undecided_boxes()
    settled_unfair = float(run.totals.sums["unfair"]) / run.pb.domain_size
    misses, widths = 0, []
    for seed in range(SEEDS):
        sampler = Sampler(run.pb, np.random.default_rng(seed), 0.9, halfwidth=1e-6, min_samples=500, chunk=500)
        est = sampler.estimate(lo, hi, mass, settled_unfair, time.perf_counter() - 1.0, run.chunk)
        assert est.samples == 500
        misses += not est.ci_low <= truth <= est.ci_high
        widths.append(est.ci_high - est.ci_low)
    assert misses <= allowed_misses(0.9)
    assert np.mean(widths) > 0.02  # few samples: the interval says so by its width


# ----- group rates: sequential sampling, simultaneous over every rate -----------------------------
WEIGHTS = {"sex": {"M": 0.6}, "race": {"A": -0.4, "B": 0.3}, "age": 0.25, "edu": 0.3}
INTERCEPT = -1.8


def _linear_population(tiny: bool):
    """A linear model under the data's independent marginals, and its exact rate per protected
    group, enumerated over the product of the marginals; with `tiny`, a protected cell holds about
    1% of the population."""
    from faircert.models.linear import ColumnEncoding, LinearModel
    from faircert.options import GroupOptions
    from faircert.requests.group import GroupAsked, prepare_group

    rng = np.random.default_rng(2)
    n = 2000
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n, p=[0.4, 0.6]),
            "race": rng.choice(["A", "B", "C"], n, p=[0.03, 0.37, 0.6] if tiny else [0.3, 0.3, 0.4]),
            "age": rng.integers(0, 8, n),
            "edu": rng.integers(0, 5, n),
        }
    )
    model = LinearModel(
        np.array([0.6, -0.4, 0.3, 0.25, 0.3]),
        INTERCEPT,
        (
            ColumnEncoding("sex", "onehot", ("M",)),
            ColumnEncoding("race", "onehot", ("A", "B")),
            ColumnEncoding("age"),
            ColumnEncoding("edu"),
        ),
    )
    protected = ["sex", "race"] if tiny else ["sex"]
    request = prepare_group(model, frame, GroupAsked(protected), "independent", {}, GroupOptions())
    marginals = {c: frame[c].value_counts(normalize=True) for c in frame.columns}
    truth: dict[tuple, list[float]] = {}
    for values in itertools.product(*(m.index for m in marginals.values())):
        row = dict(zip(frame.columns, values))
        p = np.prod([marginals[c][v] for c, v in row.items()])
        score = INTERCEPT + sum(w.get(row[c], 0.0) if isinstance(w, dict) else w * row[c] for c, w in WEIGHTS.items())
        key = tuple(row[c] for c in protected)
        both = truth.setdefault(key, [0.0, 0.0])
        both[0] += p * (score > 0)
        both[1] += p
    rates = {", ".join(f"{c}={v}" for c, v in zip(protected, key)): k / m for key, (k, m) in truth.items()}
    return request, rates


@pytest.mark.parametrize("tiny", [False, True], ids=["groups", "tiny-cells"])
def test_sampled_group_rates_cover_every_rate_at_once(tiny):
    from faircert.engines.sampling.sequential import estimate_group

    request, truth = _linear_population(tiny)
    exact = request.engine.run(request.ir, request.question, request.options, None)
    assert all(g.low - 1e-9 <= truth[g.name] <= g.high + 1e-9 for g in exact.groups)  # the truth is right
    delta = 0.1
    misses = 0
    for seed in range(SEEDS):
        # a cell of 1% gets a hundredth of the draws: a wider target keeps the test fast
        sampled = estimate_group(request.ir, request.question, None, seed, delta, target_width=0.3 if tiny else 0.08)
        misses += not all(g.low <= truth[g.name] <= g.high for g in sampled.groups)
    assert misses <= allowed_misses(1 - delta), misses


# ----- tree ensembles: boxes settled exactly, points sampled in the open ones ---------------------
def test_the_tree_estimate_covers_the_truth(monkeypatch):
    from sklearn.ensemble import RandomForestClassifier

    from faircert.engines.trees import open as open_boxes
    from faircert.engines.trees.quantify import quantify
    from faircert.engines.trees.run import TreeOptions
    from faircert.models.io import load_model

    monkeypatch.setattr(open_boxes, "EVAL_CHUNK", 4096)  # the least sample (20,000) in small steps
    n = 20
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [rng.integers(0, n, 3000), rng.integers(0, n, 3000), rng.integers(0, 2, 3000), rng.integers(0, n, 3000)]
    )
    y = (X[:, 0] + 0.5 * X[:, 1] + 5 * X[:, 2] + rng.normal(0, 4, 3000) > 18).astype(int)
    forest = RandomForestClassifier(8, max_depth=5, random_state=0).fit(X.astype(float), y)
    ir = load_model(forest)
    domain = Domain(tuple(Feature(f"x{j}", "integer", 0, 1 if j == 2 else n - 1) for j in range(4)))
    grid = np.array(list(itertools.product(range(n), repeat=3)), dtype=float)
    truth = float(
        np.mean(forest.predict(np.insert(grid, 2, 0, axis=1)) != forest.predict(np.insert(grid, 2, 1, axis=1)))
    )
    q = quantify(ir, individual_fairness(domain, "x2"), None, None, TreeOptions(method="refinement", max_boxes=20))
    lower, upper = q.bounds
    assert not q.complete and lower <= 1 - truth <= upper and upper - lower > 0.3  # much is left to sample
    level, misses = 0.9, 0
    for seed in range(SEEDS):
        est = open_boxes.estimate_unfair_share(ir, q, level, 0.0, seed)
        misses += not est.ci_low <= truth <= est.ci_high
    assert misses <= allowed_misses(level), (misses, truth)


# ----- twins under a Bayesian network: population draws, each decided on the model ----------------
def test_the_bayesnet_twin_estimate_covers_the_truth():
    """`verify --population bayesnet`'s estimate of P[x has an unfair twin]: draws from a network
    whose protected attribute has a parent and a child, the Wilson interval at its level, against
    the probability enumerated over the network's joint."""
    from scipy.stats import norm

    from faircert.engines.network.sampling import wilson
    from faircert.engines.probability.twins import sampled_twins
    from faircert.population.discrete import DiscretePopulation, Variable

    rng = np.random.default_rng(3)

    def table(*shape: int) -> np.ndarray:
        t = rng.random(shape) + 0.2
        return t / t.sum(axis=-1, keepdims=True)

    variables = [
        Variable("a", (0, 1, 2, 3), (), (), table(4)),
        Variable("s", (0, 1), (), ("a",), table(4, 2)),
        Variable("b", (0, 1, 2), (), ("s", "a"), table(2, 4, 3)),
    ]
    pop = DiscretePopulation({v.name: v for v in variables}, ("s",))
    domain = Domain((Feature("a", "integer", 0, 3), Feature("s", "integer", 0, 1), Feature("b", "integer", 0, 2)))
    prop = individual_fairness(domain, "s")
    net = ReluNetwork(
        [np.array([[0.7, -1.5, 0.4], [-0.3, 0.9, 0.8]]), np.array([[1.0, -1.2]])],
        [np.array([-0.8, 0.1]), np.array([0.05])],
    )
    truth = 0.0
    for asg, p in pop.joint():
        x = np.array([[asg["a"], s, asg["b"]] for s in (0, 1)], dtype=float)
        truth += p * (len(set(net.logit(x) > 0)) > 1)
    assert 0.1 < truth < 0.9
    level, misses = 0.9, 0
    z = float(norm.ppf(0.5 + level / 2))
    for seed in range(SEEDS):
        _, unfair, _ = sampled_twins(net, prop, pop, seed, draws=2000)
        low, high = wilson(float(unfair.sum()), len(unfair), z)
        misses += not low <= truth <= high
    assert misses <= allowed_misses(level), (misses, truth)
