"""Equalized odds under population programs and product populations, by the sound bounds and by the
sequential test: the rates given each label value match closed forms and large Monte Carlo runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import faircert
from faircert.errors import PropertyError
from faircert.models.network import ReluNetwork
from faircert.population.continuous import Discrete, ProductPopulation, Uniform

PROGRAM = """
def popModel():
    sex = step([(0,1,0.3),(1,2,0.7)])
    age = gaussian(40, 100)
    if sex < 1:
        qualified = age > 45
    else:
        qualified = age > 35
"""
# yhat = 1 iff 0.1 age + sex - 4 > 0; the label does not enter the model (weight 0)
NET = ReluNetwork([np.array([[0.1, 0.0, 1.0]])], [np.array([-4.0])], input_names=["age", "qualified", "sex"])


def _program_truth(n=4_000_000, seed=0) -> dict:
    """Monte Carlo: P[yhat = 1 | group, Y = y] (sex is uniform in [0,1) or [1,2), age ~ N(40, 10^2))."""
    rng = np.random.default_rng(seed)
    sex = np.where(rng.random(n) < 0.3, rng.random(n), 1 + rng.random(n))
    age = rng.normal(40, 10, n)
    y = np.where(sex < 1, age > 45, age > 35)
    yhat = 0.1 * age + sex - 4 > 0
    return {(g, v): yhat[((sex < 1) == g) & (y == v)].mean() for g in (True, False) for v in (True, False)}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = tmp_path_factory.mktemp("eo") / "pop.fr"
    path.write_text(PROGRAM)
    return path


def _rates(result, key):
    return {g.group[next(iter(g.group))]: (g.low, g.high) for g in result.conditional[key]}


def test_program_population_sound_bounds_contain_the_truth(program):
    truth = _program_truth()
    r = faircert.group(
        NET, population=program, protected="sex < 1", label="qualified", metrics=["di", "sp", "eo"], time_limit=20
    )
    assert set(r.conditional) == {"Y=1", "Y=0"}
    for key, y in (("Y=1", True), ("Y=0", False)):
        for group, (low, high) in _rates(r, key).items():
            assert low - 1e-3 <= truth[(group, y)] <= high + 1e-3 and high - low <= 2e-3
    gap = abs(truth[(True, False)] - truth[(False, False)])  # Y=1: both groups are always positive
    assert r.metrics["eo"].low - 1e-3 <= gap <= r.metrics["eo"].high + 1e-3
    assert r.metrics["eo"].low > 0.2 and not r.approximations


def test_program_population_sequential_test_and_a_gap_threshold(program):
    truth = _program_truth()
    r = faircert.group(
        NET,
        population=program,
        protected="sex < 1",
        label="qualified",
        metrics=["eo"],
        method="sampling",
        time_limit=20,
        gap_thresholds={"eo": 0.1},
        seed=3,
    )
    gap = abs(truth[(True, False)] - truth[(False, False)])
    assert r.metrics["eo"].low <= gap <= r.metrics["eo"].high and r.metrics["eo"].verdict == "unfair"
    assert "delta" in r.stats and any("statistical" in a for a in r.approximations)
    # the label as a condition rather than a variable: the same groups, with the label's truth swapped
    s = faircert.group(NET, population=program, protected="sex < 1", label="age <= 45", metrics=["eo"], time_limit=10)
    assert s.conditional["Y=1"][0].low <= 0.75 and s.metrics["eo"].high > 0.2


def test_product_population_label_marginal():
    pop = ProductPopulation(
        ["x", "sex", "y"], [Uniform(0.0, 1.0), Discrete((0.0, 1.0), (0.4, 0.6)), Discrete((0.0, 1.0), (0.5, 0.5))]
    )
    net = ReluNetwork([np.array([[1.0, 0.5, 0.25]])], [np.array([-0.9])], input_names=["x", "sex", "y"])
    r = faircert.group(net, population=pop, protected="sex", label="y", metrics=["eo"], time_limit=10)
    # P[x > 0.9 - 0.5 sex - 0.25 y]: given y, the gap between sexes is 0.5 for y=0 and y=1
    rates = {k: {g.group["sex"]: (g.low, g.high) for g in v} for k, v in r.conditional.items()}
    assert rates["Y=0.0"][0.0][0] == pytest.approx(0.1, abs=2e-3) and rates["Y=1.0"][1.0][0] == pytest.approx(
        0.85, abs=2e-3
    )
    assert r.metrics["eo"].low == pytest.approx(0.5, abs=2e-3)
    with pytest.raises(PropertyError, match="not a feature of the population"):
        faircert.group(net, population=pop, protected="sex", label="income", metrics=["eo"], time_limit=1)


def test_eo_without_a_label_is_a_usage_error(program):
    with pytest.raises(PropertyError, match="name it"):
        faircert.group(NET, population=program, protected="sex < 1", metrics=["eo"], time_limit=1)
    with pytest.raises(PropertyError, match="does not assign"):
        faircert.group(NET, population=program, protected="sex < 1", label="income", metrics=["eo"], time_limit=1)


def test_cli_eo_under_a_program_population(program, tmp_path, capsys):
    from faircert.cli import main

    net_path = tmp_path / "m.json"  # the same function as NET, as a linear model with named features
    net_path.write_text(
        json.dumps({"weights": [0.1, 0.0, 1.0], "intercept": -4.0, "features": ["age", "qualified", "sex"]})
    )
    code = main(
        [
            "group",
            str(net_path),
            "--population",
            str(program),
            "--protected",
            "sex < 1",
            "--label",
            "qualified",
            "--metric",
            "eo",
            "--max-gap",
            "0.1",
            "--json",
            "-",
            "--quiet",
            "--time-limit",
            "10",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["metrics"]["eo"]["verdict"] == "unfair" and out["metrics"]["eo"]["low"] > 0.1
