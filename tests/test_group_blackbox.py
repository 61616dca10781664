"""`group` on a classifier no IR holds: exact over the data's rows, sampled under a population."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.domain import Domain, Feature
from faircert.engines.group.blackbox import answer
from faircert.models.blackbox import BlackBoxModel
from faircert.options import GroupOptions, GroupQuestion
from faircert.population.discrete import DiscretePopulation, Variable


class Rule:
    """A classifier known only by its predictions: positive iff x == 2, or x == 1 for s == 'm'."""

    classes_ = np.array([0, 1])
    feature_names_in_ = np.array(["s", "x"], dtype=object)

    def predict(self, frame):
        x, s = np.asarray(frame["x"], dtype=float), np.asarray(frame["s"])
        return ((x == 2) | ((x == 1) & (s == "m"))).astype(int)


def _population() -> DiscretePopulation:
    s = Variable("s", ("f", "m"), ("f", "m"), (), [0.4, 0.6])
    x = Variable("x", (0, 1, 2), ("0", "1", "2"), ("s",), [[0.5, 0.3, 0.2], [0.3, 0.3, 0.4]])
    return DiscretePopulation({"s": s, "x": x}, ("s",))


def _truth(pop: DiscretePopulation) -> dict[str, float]:
    """P[yhat = 1 | s] by enumerating the joint distribution."""
    rule, mass, pos = Rule(), {"f": 0.0, "m": 0.0}, {"f": 0.0, "m": 0.0}
    for codes, p in pop.joint():
        s, x = pop.variables["s"].states[codes["s"]], pop.variables["x"].states[codes["x"]]
        mass[s] += p
        pos[s] += p * rule.predict({"s": np.array([s]), "x": np.array([x])})[0]
    return {s: pos[s] / mass[s] for s in mass}


def _black_box() -> BlackBoxModel:
    domain = Domain((Feature("s", "categorical", 0, 1, categories=("f", "m")), Feature("x", "integer", 0, 2)))
    model, _ = BlackBoxModel.of(Rule(), domain)
    return model


def test_sampled_intervals_cover_the_exact_rates_and_di():
    pop = _population()
    truth = _truth(pop)  # f: 0.2, m: 0.7
    assert truth["f"] == pytest.approx(0.2) and truth["m"] == pytest.approx(0.7)
    di = min(truth.values()) / max(truth.values())
    model, question = _black_box(), GroupQuestion(pop, ("s",))
    covered = 0
    for seed in range(100):
        options = GroupOptions(time_limit=0.01, seed=seed, method="sampling", delta=0.05)
        result = answer(model, question, options)
        est = result.estimate
        assert result.engine == "blackbox-group-sampling" and est is not None and est.stats["samples"] >= 10_000
        # nothing is proven of a black box: the sound bounds stay [0, 1]
        assert all((g.low, g.high) == (0.0, 1.0) for g in result.groups) and result.verdict == "unknown"
        rates = {g.group["s"]: g for g in est.groups}
        inside = all(rates[s].low <= truth[s] <= rates[s].high for s in truth)
        covered += inside and est.metrics["di"].low <= di <= est.metrics["di"].high
    assert covered >= 95  # all intervals hold together with confidence 0.95 (a union bound: more)


def test_statistical_blocks_name_the_engine_and_the_samples():
    result = answer(_black_box(), GroupQuestion(_population(), ("s",)), GroupOptions(time_limit=0.2, seed=1))
    out = result.to_dict()
    block = out["metrics"]["di"]["statistical"]
    assert set(block) == {"value", "low", "high", "confidence", "samples", "method"}
    assert block["confidence"] == pytest.approx(0.99) and block["samples"] == result.estimate.stats["samples"]
    assert block["low"] <= 0.2 / 0.7 <= block["high"]
    assert out["engine"] == "blackbox-group-sampling" and (
        out["metrics"]["di"]["low"],
        out["metrics"]["di"]["high"],
    ) == (0, 1)
    assert any("black box" in a and "statistical" in a for a in out["approximations"])


def test_a_knn_gets_exact_rates_over_the_data_rows_and_a_sample_under_a_learned_population():
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.random(400), "s": rng.integers(0, 2, 400), "c": rng.integers(0, 3, 400)})
    y = ((frame.a > 0.5) | (frame.s == 1)).astype(int)
    knn = KNeighborsClassifier(3).fit(frame, y)
    data = frame.assign(y=y)
    result = faircert.group(knn, data, protected="s", label="y")
    own = pd.Series(knn.predict(frame)).groupby(frame.s).mean()
    assert result.engine == "blackbox-empirical" and "KNeighborsClassifier" in result.stats["black_box"]
    assert {g.group["s"]: (g.low, g.high) for g in result.groups} == {str(k): (v, v) for k, v in own.items()}
    sampled = faircert.group(knn, data, protected="s", label="y", population="independent", time_limit=2)
    assert sampled.engine == "blackbox-group-sampling" and sampled.estimate is not None
    assert sampled.estimate.stats["samples"] >= 10_000 and sampled.to_dict()["metrics"]["di"]["statistical"]
