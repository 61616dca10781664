"""The exact subset-sum engine: FVGM's worked examples and brute force on random small networks."""

from __future__ import annotations

import numpy as np
import pytest

from faircert.engines.group.subset_sum import Engine, brute_force
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.population import DiscretePopulation, Variable


def bern(name: str, p: float = 0.5, parents: tuple = (), table=None) -> Variable:
    return Variable(name, (0, 1), ("0", "1"), parents, table if table is not None else [1 - p, p])


EXAMPLE = LinearModel.plain([1, 1, 1, -1], -2, ["P", "Q", "R", "S"], strict=False)  # P+Q+R-S >= 2


def test_example_2_independent():
    pop = DiscretePopulation(
        {"P": bern("P"), "Q": bern("Q", 0.4), "R": bern("R", 0.5), "S": bern("S", 0.3)}, ("P",), kind="independent"
    )
    engine = Engine(EXAMPLE, pop)
    assert engine.probability({"P": 1})[:2] == pytest.approx((0.55, 0.55), abs=1e-12)
    assert engine.probability({"P": 0})[:2] == pytest.approx((0.14, 0.14), abs=1e-12)
    assert engine.stats.exact_arithmetic


def test_example_3_bayesnet():
    q = bern("Q", parents=("P",), table=[[0.7, 0.3], [0.4, 0.6]])
    pop = DiscretePopulation({"P": bern("P"), "Q": q, "R": bern("R", 0.5), "S": bern("S", 0.3)}, ("P",))
    engine = Engine(EXAMPLE, pop)
    assert engine.probability({"P": 1})[:2] == pytest.approx((0.65, 0.65), abs=1e-12)
    assert engine.probability({"P": 0})[:2] == pytest.approx((0.105, 0.105), abs=1e-12)


def test_exact_ties_strict_and_not():
    """Integer weights make score == 0 common; '>' and '>=' must differ by exactly that mass."""
    pop = DiscretePopulation(
        {"P": bern("P"), "Q": bern("Q", 0.4), "R": bern("R", 0.5), "S": bern("S", 0.3)}, ("P",), kind="independent"
    )
    strict = LinearModel.plain([1, 1, 1, -1], -2, ["P", "Q", "R", "S"], strict=True)
    lo, hi, _ = Engine(strict, pop).probability({"P": 1})
    assert lo == hi
    assert lo == pytest.approx(brute_force(strict, pop, {"P": 1})[0], abs=1e-12)
    assert lo < 0.55


def random_population(
    rng: np.random.Generator, n: int, max_card: int = 4, max_parents: int = 2, label: bool = False
) -> DiscretePopulation:
    names = [f"v{i}" for i in range(n)]
    variables = {}
    protected = ("v0", "v1") if n > 3 else ("v0",)
    for i, name in enumerate(names):
        card = int(rng.integers(2, max_card + 1))
        if name in protected:
            parents: tuple = ()
        else:
            pool = names[:i]
            k = int(rng.integers(0, min(max_parents, len(pool)) + 1))
            parents = tuple(rng.choice(pool, size=k, replace=False)) if k else ()
        shape = tuple(variables[p].card for p in parents) + (card,)
        table = rng.dirichlet(np.ones(card), size=int(np.prod(shape[:-1], dtype=int))).reshape(shape)
        states = tuple(np.round(rng.normal(0, 2, card), 3)) if rng.random() < 0.5 else tuple(range(card))
        variables[name] = Variable(name, states, tuple(str(s) for s in states), parents, table)
    if label:
        parents = tuple(rng.choice(names, size=2, replace=False))
        shape = tuple(variables[p].card for p in parents) + (2,)
        table = rng.dirichlet(np.ones(2), size=int(np.prod(shape[:-1]))).reshape(shape)
        variables["y"] = Variable("y", (0, 1), ("0", "1"), parents, table)
    return DiscretePopulation(variables, protected, "y" if label else None)


def random_model(rng: np.random.Generator, pop: DiscretePopulation, integer: bool) -> LinearModel:
    encoding, weights = [], []
    for name, var in pop.variables.items():
        if name == "y" or rng.random() < 0.15:
            continue  # some columns unused by the model
        if rng.random() < 0.4:
            encoding.append(ColumnEncoding(name, "onehot", var.states[1:] if rng.random() < 0.5 else var.states))
        else:
            encoding.append(ColumnEncoding(name))
        weights += list(rng.integers(-3, 4, encoding[-1].width) if integer else rng.normal(0, 1, encoding[-1].width))
    intercept = float(rng.integers(-2, 3)) if integer else float(rng.normal())
    if not encoding:
        encoding, weights = [ColumnEncoding("v0")], [1.0]
    return LinearModel(np.array(weights, dtype=float), intercept, tuple(encoding), strict=bool(rng.random() < 0.5))


@pytest.mark.parametrize("seed", range(40))
def test_random_networks_match_brute_force(seed: int):
    rng = np.random.default_rng(seed)
    pop = random_population(rng, int(rng.integers(3, 7)), label=seed % 3 == 0)
    model = random_model(rng, pop, integer=seed % 2 == 0)
    engine = Engine(model, pop, max_rows=10**6)
    for group in pop.groups():
        evidences = [group] + ([{**group, "y": 0}, {**group, "y": 1}] if pop.label else [])
        for ev in evidences:
            want, size = brute_force(model, pop, ev)
            lo, hi, got_size = engine.probability(ev)
            assert got_size == pytest.approx(size, abs=1e-12)
            assert lo <= want + 1e-12 and want <= hi + 1e-12
            assert lo == pytest.approx(want, abs=1e-9) and hi == pytest.approx(want, abs=1e-9)


def test_bucketing_gives_sound_bounds():
    rng = np.random.default_rng(7)
    variables = {"a": bern("a")}
    for i in range(5):
        variables[f"x{i}"] = Variable(f"x{i}", tuple(rng.normal(size=6)), (), ("a",), rng.dirichlet(np.ones(6), 2))
    pop = DiscretePopulation(variables, ("a",))
    model = LinearModel.plain(rng.normal(size=6), 0.1, list(variables))
    small = Engine(model, pop, max_rows=40)
    for g in pop.groups():
        want = brute_force(model, pop, g)[0]
        lo, hi, _ = small.probability(g)
        assert lo <= want + 1e-12 <= hi + 2e-12
    assert small.stats.bucketed


def test_within_bin_bounds_contain_every_choice_of_bin_values():
    """Spread bins: the bounds hold whatever value inside its bin each state takes."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        variables = {"a": bern("a")}
        for i in range(3):
            edges = np.sort(rng.normal(size=5))
            table = rng.dirichlet(np.ones(4), size=2)
            mids = 0.5 * (edges[1:] + edges[:-1])
            variables[f"x{i}"] = Variable(f"x{i}", tuple(mids), (), ("a",), table, tuple(edges))
        pop = DiscretePopulation(variables, ("a",))
        model = LinearModel.plain(rng.normal(size=4), rng.normal(), list(variables))
        spread = Engine(model, pop, spread_bins=True)
        for g in pop.groups():
            lo, hi, _ = spread.probability(g)
            for _ in range(20):
                moved = dict(variables)
                for i in range(3):
                    v = variables[f"x{i}"]
                    e = np.asarray(v.edges)
                    inside = e[:-1] + rng.random(4) * np.diff(e)
                    moved[f"x{i}"] = Variable(v.name, tuple(inside), v.labels, v.parents, v.cpt, v.edges)
                p = brute_force(model, DiscretePopulation(moved, ("a",)), g)[0]
                assert lo - 1e-12 <= p <= hi + 1e-12
            point = Engine(model, pop).probability(g)[0]
            assert lo <= point <= hi and lo < hi


def test_bucketing_inside_a_connected_network_stays_sound():
    """A chain a -> x0 -> x1 -> ... is one component; its table is bucketed past max_rows."""
    rng = np.random.default_rng(5)
    variables = {"a": bern("a")}
    prev = "a"
    for i in range(5):
        card_prev = variables[prev].card
        variables[f"x{i}"] = Variable(
            f"x{i}", tuple(rng.normal(size=5)), (), (prev,), rng.dirichlet(np.ones(5), card_prev)
        )
        prev = f"x{i}"
    pop = DiscretePopulation(variables, ("a",))
    model = LinearModel.plain(rng.normal(size=6), 0.05, list(variables))
    small = Engine(model, pop, max_rows=400)
    exact = Engine(model, pop)
    for g in pop.groups():
        want = brute_force(model, pop, g)[0]
        lo, hi, _ = small.probability(g)
        assert lo - 1e-12 <= want <= hi + 1e-12 and hi - lo < 0.5
        assert exact.probability(g)[0] == pytest.approx(want, abs=1e-9)
    assert small.stats.bucketed
