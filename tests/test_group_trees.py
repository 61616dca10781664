"""Tree ensembles under independent marginals get sound group rates from the tree-population count:
each group's rate, and each rate given the label (equalized odds), equals the rate enumerated over
the product of the marginals with the group fixed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from faircert.engines.group.stratified import Labeller
from faircert.options import GroupOptions
from faircert.requests.group import GroupAsked, prepare_group


def _forest_request(population: str = "independent"):
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame(
        {
            "s": rng.integers(0, 2, n),
            "r": rng.choice([0, 1, 2], n, p=[0.1, 0.3, 0.6]),
            "a": rng.integers(0, 20, n),
            "b": rng.normal(0, 1, n).round(0),
        }
    )
    df["y"] = ((df.a + 5 * df.s + 3 * df.b + rng.normal(0, 3, n)) > 12).astype(int)
    forest = RandomForestClassifier(10, max_depth=5, random_state=0).fit(df[["s", "r", "a", "b"]], df.y)
    asked = GroupAsked(["s", "r"], "y", ("di", "sp", "eo"))
    return prepare_group(forest, df, asked, population, {}, GroupOptions(time_limit=60))


def _enumerated(ir, pop, evidence: dict[str, int]) -> float:
    labeller = Labeller.of(ir, pop)
    rows = [(asg, p) for asg, p in pop.joint() if all(asg[k] == v for k, v in evidence.items())]
    X = np.stack([labeller.values[n][np.array([asg[n] for asg, _ in rows])] for n in labeller.names], axis=1)
    mass = np.array([p for _, p in rows])
    return float(mass[ir.predict(X.astype(float)) == 1].sum() / mass.sum())


def test_forest_rates_under_independent_marginals_are_counted():
    request = _forest_request()
    assert request.engine.name == "tree-population-group"
    result = request.engine.run(request.ir, request.question, request.options, None)
    pop = request.question.population
    codes = {p: {label: i for i, label in enumerate(pop.variables[p].labels)} for p in ("s", "r")}
    checked = 0
    for key, groups in [("", result.groups), *result.conditional.items()]:
        sub = pop.by_label[key[2:]] if key else pop
        for g in groups:
            truth = _enumerated(request.ir, sub, {p: codes[p][v] for p, v in g.group.items()})
            # learned from rows: each marginal is a fraction of the row count, up to the smoothing
            # of the per-label fits, which the bounds absorb
            assert g.low - 1e-12 <= truth <= g.high + 1e-12 and g.high - g.low < 1e-5, (key, g)
            checked += 1
    assert checked == 18 and result.stopped == "done"
    assert 0.1 < result.metrics["sp"].low <= result.metrics["sp"].high < 0.5


def test_a_bayesian_network_is_left_to_the_bounding_engine():
    """The count needs independent inputs: under a learned network the groups' rates are bounded
    by the probability engine (and sampled beside it)."""
    request = _forest_request("bayesnet")
    assert request.engine.name == "probability-bounds"


@pytest.mark.parametrize("bad", ["s", "b"])
def test_an_input_that_is_not_a_number_is_left_to_the_bounding_engine(bad):
    from faircert.engines.group import trees

    request = _forest_request()
    pop = request.question.population
    variable = pop.variables[bad]
    pop.variables[bad] = type(variable)(
        bad, tuple(f"v{i}" for i in range(variable.card)), (), variable.parents, variable.cpt
    )
    assert not trees.accepts(request.ir, request.question)


def test_an_ensemble_over_the_leaf_cap_goes_to_the_region_refinement(monkeypatch):
    import faircert.engines.group.trees as trees

    leaves = sum(int(t.is_leaf.sum()) for t in _forest_request().ir.trees)
    monkeypatch.setattr(trees, "MAX_LEAVES", leaves - 1)
    assert _forest_request().engine.name == "tree-regions-group"
    monkeypatch.setattr(trees, "MAX_LEAVES", leaves)
    assert _forest_request().engine.name == "tree-population-group"
