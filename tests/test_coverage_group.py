"""Group rates sampled cell by cell (`engines.group.stratified`) hold at their stated level: every
rate and every metric at once, over 100 seeds, on small populations whose exact rates are
enumerated; under independent marginals (tiny cells included) and under a Bayesian network whose
protected attributes are not roots. The conditional draws themselves follow the exact posterior."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from test_coverage import SEEDS, allowed_misses

from faircert.engines.group import stratified
from faircert.engines.group.stratified import Labeller, estimate_stratified
from faircert.metrics import METRICS
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.options import GroupQuestion
from faircert.population.conditional import ConditionalSampler
from faircert.population.discrete import DiscretePopulation, Variable
from faircert.population.learn import learn_population
from faircert.population.spec import PopulationSpec
from faircert.results import GroupProbability

DELTA = 0.1
METRIC_NAMES = ("di", "sp", "eo")


def _table(rng: np.random.Generator, *shape: int) -> np.ndarray:
    t = rng.random(shape) + 0.2
    return t / t.sum(axis=-1, keepdims=True)


def _network() -> DiscretePopulation:
    """A network whose protected attributes s and r both have parents (a -> s, (a, b) -> r, s -> r),
    with the label y a child of the features: no protected value is drawn forward from a root."""
    rng = np.random.default_rng(5)
    variables = [
        Variable("a", (0, 1, 2), (), (), _table(rng, 3)),
        Variable("b", (0, 1), (), ("a",), _table(rng, 3, 2)),
        Variable("s", (0, 1), (), ("a",), _table(rng, 3, 2)),
        Variable("r", (0, 1, 2), (), ("b", "s"), _table(rng, 2, 2, 3)),
        Variable("c", (0, 1, 2, 3), (), ("s", "b"), _table(rng, 2, 2, 4)),
        Variable("y", (0, 1), (), ("c", "a"), _table(rng, 4, 3, 2)),
    ]
    return DiscretePopulation({v.name: v for v in variables}, ("s", "r"), "y")


def _independent() -> DiscretePopulation:
    """Independent marginals learned from rows (fitted again on each label value for EO), with a
    protected cell (s=0, r=0) of about 0.4% of the population."""
    rng = np.random.default_rng(2)
    n = 3000
    frame = pd.DataFrame(
        {
            "s": rng.choice([0, 1], n, p=[0.4, 0.6]),
            "r": rng.choice([0, 1, 2], n, p=[0.01, 0.39, 0.6]),
            "a": rng.integers(0, 3, n),
            "b": rng.integers(0, 2, n),
            "c": rng.integers(0, 4, n),
        }
    )
    frame["y"] = (frame.a + frame.c + rng.integers(0, 3, n) > 4).astype(int)
    return learn_population(frame, ["s", "r", "a", "b", "c"], ["s", "r"], PopulationSpec("independent"), label="y")


#: The model: a linear score over every feature (the protected ones included).
MODEL = LinearModel(
    np.array([0.8, -0.5, 0.6, 0.4, 0.5]),
    -1.7,
    tuple(ColumnEncoding(c) for c in ("s", "r", "a", "b", "c")),
)


def _exact(pop: DiscretePopulation, evidence: dict[str, int]) -> float:
    """P[yhat = 1 | evidence], enumerated."""
    labeller = Labeller.of(MODEL, pop)
    rows = [(asg, p) for asg, p in pop.joint() if all(asg[k] == v for k, v in evidence.items())]
    codes = {n: np.array([asg[n] for asg, _ in rows]) for n in pop.variables}
    values = {n: labeller.values[n][codes[n]] for n in labeller.names}
    positive = MODEL.predict(values).astype(bool)
    mass = np.array([p for _, p in rows])
    return float(mass[positive].sum() / mass.sum())


def _truth(question: GroupQuestion) -> dict[str, float]:
    """Every rate the estimate reports ("<key> <group>"), and every metric, exactly."""
    pop = question.population
    out: dict[str, float] = {}
    groups, conditional = [], {}
    for combo in itertools.product(range(3), range(2)):
        cell = {"r": combo[0], "s": combo[1]}
        rate = _exact(pop, cell)
        name = pop.group_name({"s": cell["s"], "r": cell["r"]})
        groups.append(GroupProbability(name, rate, rate, 0.0))
        for y in (0, 1):
            sub, evidence = (pop.by_label[str(y)], cell) if pop.by_label else (pop, {**cell, "y": y})
            given = _exact(sub, evidence)
            conditional.setdefault(f"Y={y}", []).append(GroupProbability(name, given, given, 0.0))
    for g in groups:
        out[g.name] = g.low
    for key, rates in conditional.items():
        for g in rates:
            out[f"{key} {g.name}"] = g.low
    for name in METRIC_NAMES:
        m = METRICS[name].interval(groups, conditional)
        out[name] = m.low
    return out


def _covers(result, truth: dict[str, float]) -> bool:
    rates = {g.name: (g.low, g.high) for g in result.groups}
    for key, given in result.conditional.items():
        rates.update({f"{key} {g.name}": (g.low, g.high) for g in given})
    rates.update({k: (m.low, m.high) for k, m in result.metrics.items()})
    assert set(rates) == set(truth)
    return all(lo <= truth[k] <= hi for k, (lo, hi) in rates.items())


@pytest.fixture
def quick(monkeypatch):
    """Small looks, so that 100 seeds take seconds and every run reaches several looks."""
    monkeypatch.setattr(stratified, "FIRST", 100)


@pytest.mark.parametrize("population", ["independent", "network"])
def test_stratified_rates_and_metrics_cover_at_once(quick, population):
    pop = _independent() if population == "independent" else _network()
    question = GroupQuestion(pop, ("s", "r"), "y", METRIC_NAMES)
    truth = _truth(question)
    misses, looks = 0, []
    for seed in range(SEEDS):
        result = estimate_stratified(MODEL, question, None, seed, DELTA, target=0.25)
        misses += not _covers(result, truth)
        looks.append(max(result.stats["draws"].values()))
    assert misses <= allowed_misses(1 - DELTA), misses
    assert np.median(looks) >= stratified.grid(3)  # the allocation took several further looks


def test_shared_draws_of_a_forest_under_independent_marginals_cover_at_once(quick):
    """A forest under independent marginals: each population's cells (the groups, and the groups
    given each label value) share one stream of draws, labelled under every cell's protected values
    at once; every rate and metric still holds together at the stated level over 100 seeds, and the
    shared counts are those of labelling each cell's draws apart."""
    pytest.importorskip("sklearn")
    pytest.importorskip("numba")
    from test_group_trees import _enumerated, _forest_request

    request = _forest_request()
    ir, question = request.ir, request.question
    pop = question.population
    codes = {p: {label: i for i, label in enumerate(pop.variables[p].labels)} for p in ("s", "r")}
    cells, _ = stratified.strata(question, 0)
    truth = {}
    for c in cells:
        sub = pop.by_label[c.key[2:]] if c.key else pop
        name = f"{c.key} {c.probability().name}".strip()
        truth[name] = _enumerated(ir, sub, {p: codes[p][v] for p, v in c.group.items()})
    named = {c.probability().name: c for c in cells if not c.key}
    groups = [GroupProbability(c.group, truth[n], truth[n], 0.0) for n, c in named.items()]
    conditional: dict[str, list] = {}
    for c in cells:
        if c.key:
            rate = truth[f"{c.key} {c.probability().name}"]
            conditional.setdefault(c.key, []).append(GroupProbability(c.group, rate, rate, 0.0))
    for name in METRIC_NAMES:
        truth[name] = METRICS[name].interval(groups, conditional).low
    misses, looks = 0, []
    for seed in range(SEEDS):
        result = estimate_stratified(ir, question, None, seed, DELTA, target=0.1)
        assert result.stats["shared_streams"] == 3
        misses += not _covers(result, truth)
        looks.append(max(result.stats["draws"].values()))
    assert misses <= allowed_misses(1 - DELTA), misses
    assert np.median(looks) >= stratified.grid(3)

    labeller = Labeller.of(ir, pop)
    stream = next(s for s in stratified.streams_of(cells, labeller) if s.settings is not None)
    assert stream.settings is not None
    draws = stream.sampler.sample(np.random.default_rng(1), 5000)
    shared = labeller.positives_in(draws, stream.fixed, stream.settings)
    for cell, count in zip(stream.cells, shared):
        alone = {**draws, **{f: np.full(5000, cell.sampler.evidence[f]) for f in stream.fixed}}
        assert count == labeller.positives(alone)


def test_cells_of_a_network_draw_alone():
    """Where the protected attributes have edges to the other variables, no stream is shared."""
    question = GroupQuestion(_network(), ("s", "r"), "y", METRIC_NAMES)
    cells, _ = stratified.strata(question, 0)
    assert all(s.settings is None for s in stratified.streams_of(cells, Labeller.of(MODEL, question.population)))
    assert not stratified.isolated(question.population, ("s", "r"))
    assert stratified.isolated(_independent(), ("s", "r"))


def test_a_tiny_cell_gets_its_own_draws(quick):
    """The cell of 0.4% is drawn as often as the others at the first look, and more where it
    decides a metric: its draws do not follow its mass."""
    question = GroupQuestion(_independent(), ("s", "r"), "y", ("di", "sp"))
    result = estimate_stratified(MODEL, question, None, 0, DELTA, target=0.1)
    tiny = next(g for g in result.groups if g.group == {"s": "0", "r": "0"})
    assert tiny.size < 0.01
    assert result.stats["draws"]["s=0, r=0"] >= stratified.FIRST
    assert all(m.high - m.low <= 0.1 for m in result.metrics.values())


def test_allocation_draws_where_the_metrics_are_decided(quick):
    """The cells at the extremes of the rates decide DI and SP; a cell in the middle does not, and
    keeps its first look."""
    question = GroupQuestion(_network(), ("s", "r"), None, ("di", "sp"))
    truth = _truth(GroupQuestion(question.population, ("s", "r"), "y", METRIC_NAMES))
    result = estimate_stratified(MODEL, question, None, 0, DELTA, target=0.05)
    rates = {g.name: truth[g.name] for g in result.groups}
    ordered = sorted(rates, key=rates.get)
    draws = result.stats["draws"]
    assert draws[ordered[0]] > stratified.FIRST and draws[ordered[-1]] > stratified.FIRST
    assert min(draws[ordered[0]], draws[ordered[-1]]) > max(draws[n] for n in ordered[2:-2])
    assert result.stats["stopped"] == "target width"
    assert all(m.high - m.low <= 0.05 for m in result.metrics.values())


def test_stopped_at_its_deadline_the_first_looks_still_cover(quick):
    """With no time left after the first look of every cell, the intervals are wide and as valid."""
    question = GroupQuestion(_network(), ("s", "r"), "y", METRIC_NAMES)
    truth = _truth(question)
    misses = 0
    for seed in range(SEEDS):
        result = estimate_stratified(MODEL, question, 0.0, seed, DELTA)
        assert set(result.stats["draws"].values()) == {stratified.FIRST}
        assert result.stats["stopped"] == "budget"
        misses += not _covers(result, truth)
    assert misses <= allowed_misses(1 - DELTA), misses


def test_conditional_draws_follow_the_exact_posterior():
    """Evidence on non-root variables (s, r and the label y): the draws' frequencies of the hidden
    ancestors and of the rest match the posterior enumerated from the joint, and P[evidence] is
    exact."""
    pop = _network()
    evidence = {"s": 1, "r": 2, "y": 0}
    sampler = ConditionalSampler(pop, evidence)
    joint = sum(p for asg, p in pop.joint() if all(asg[k] == v for k, v in evidence.items()))
    assert sampler.mass == pytest.approx(joint, rel=1e-12)
    n = 200_000
    codes = sampler.sample(np.random.default_rng(0), n)
    for name in ("a", "b", "c"):
        exact = pop.marginal(name, evidence)
        seen = np.bincount(codes[name], minlength=len(exact)) / n
        assert np.all(np.abs(seen - exact) <= 5 * np.sqrt(exact * (1 - exact) / n) + 1e-12), name
    assert all(np.all(codes[k] == v) for k, v in evidence.items())


def test_allocation_draws_a_cell_tied_at_a_metrics_end():
    """Two cells tied at the lowest rate hold DI's low end together: shrinking either alone moves
    nothing there, yet one of them is drawn next (the widest metric is where the draws go)."""
    n = stratified.grid(0)

    def cell(name: str, rate: float, low: float, high: float) -> stratified.Stratum:
        return stratified.Stratum("", {"g": name}, 0.3, None, None, 1, round(rate * n), low, high)  # type: ignore[arg-type]

    cells = [cell("a", 0.055, 0.03, 0.08), cell("b", 0.055, 0.03, 0.08), cell("c", 0.205, 0.2, 0.21)]
    run = stratified.Sampling(cells, None, DELTA, ("di", "sp"), None)  # type: ignore[arg-type]
    chosen = run.next_stream()
    assert chosen is not None and chosen.cells[0] in cells[:2]
