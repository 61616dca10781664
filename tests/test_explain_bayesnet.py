"""`explain --population bayesnet`: rules under a Bayesian network learned from the data, against a
brute-force oracle that enumerates the learned network (saved by the run itself): each rule's sound
bounds on its mass and on its unfair mass hold the truth, its proven-unfair share never exceeds the
truth, its statistical rate holds the true conditional rate, and bad input is a one-line error."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.errors import FaircertError, PropertyError
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.population import load_population

CATEGORIES = ["A", "B", "C"]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    """a in 0..7, b in 0..4 leaning on a, c in A..C, s protected (0/1) leaning on a: a network
    with edges to learn, every column with few values (nothing binned)."""
    rng = np.random.default_rng(3)
    n = 500
    s = rng.integers(0, 2, n)
    a = np.minimum(rng.integers(0, 7, n) + s, 7)
    b = np.minimum(rng.integers(0, 3, n) + (a > 4) + (a > 5), 4)
    c = np.where(a > 3, rng.choice(CATEGORIES, n, p=[0.2, 0.3, 0.5]), rng.choice(CATEGORIES, n, p=[0.6, 0.3, 0.1]))
    return pd.DataFrame({"a": a, "b": b, "c": c, "s": s})


def _linear() -> LinearModel:
    """0.5 a - 0.4 b + 1.5 s - 2.45: no score exactly at the threshold on the data's grid."""
    return LinearModel(
        np.array([0.5, -0.4, 1.5]), -2.45, (ColumnEncoding("a"), ColumnEncoding("b"), ColumnEncoding("s"))
    )


def _explained(model, columns, saved):
    """`explain` under the network learned from `columns`, saved to `saved` for the oracle."""
    return faircert.explain(
        model, columns, "s", population="bayesnet", samples=2000, time_limit=30, seed=1, save_population=str(saved)
    )


def _oracle(path, predict, values=(0, 1)) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Every input of the saved network with its probability, and whether it has an unfair twin
    (the model's labels with s at its two `values` differ)."""
    pop = load_population(path).expanded()
    names = [n for n in pop.variables if n != "s"]
    rows, weights = [], []
    for assignment, p in pop.joint():
        rows.append({n: pop.variables[n].states[assignment[n]] for n in names})
        weights.append(p)
    frame = pd.DataFrame(rows)
    unfair = predict(frame.assign(s=values[0])) != predict(frame.assign(s=values[1]))
    return frame, np.asarray(weights), np.asarray(unfair)


def _check_rules(result, frame, weights, unfair, exact: bool) -> None:
    bounds = result.stats["rule_bounds"] + result.stats["fair_rule_bounds"]
    rules = result.rules + result.fair_rules
    assert len(bounds) == len(rules) and result.rules
    for rule, bound in zip(rules, bounds):
        inside = rule.mask(frame)
        mass, unfair_mass = weights[inside].sum(), weights[inside & unfair].sum()
        low, high = bound["share"]
        assert low - 1e-12 <= mass <= high + 1e-12  # sound bounds on the rule's mass
        assert rule.share == pytest.approx(mass, abs=1e-9)  # and they meet
        u_low, u_high = bound["unfair_share"]
        assert u_low - 1e-12 <= unfair_mass <= u_high + 1e-12
        assert rule.proven_unfair_share == u_low <= unfair_mass + 1e-12  # sound
        if exact:
            assert rule.proven_unfair_share == pytest.approx(unfair_mass, abs=1e-9)
        if rule.evidence == "proven":
            assert unfair_mass == 0
        if rule.unfair_rate.estimate is not None and mass > 0:  # the statistical rate, at its level
            assert rule.unfair_rate.low - 1e-9 <= unfair_mass / mass <= rule.unfair_rate.high + 1e-9
        assert {c.feature for c in rule.conditions} <= {"a", "b", "c"}


def test_linear_rules_against_the_enumerated_network(data, tmp_path):
    """A linear model (no score exactly at the threshold): every box decides, so each rule's
    proven-unfair share is its true unfair mass under the learned network."""
    model = _linear()
    saved = tmp_path / "net.json"
    result = _explained(model, data[["a", "b", "s"]], saved)
    assert result.population == "bayesnet" and result.verdict == "unfair"
    assert load_population(saved).edges  # a network, not independent marginals
    frame, weights, unfair = _oracle(saved, model.predict)
    # the whole domain, as verify answers it (score histograms: sound bounds)
    low, high = result.stats["proven_unfair"], 1 - result.stats["certified"]
    assert low - 1e-12 <= weights[unfair].sum() <= high + 1e-12
    _check_rules(result, frame, weights, unfair, exact=True)
    assert "sound_bounds" not in result.stats
    payload = result.to_dict()
    assert all(isinstance(r["proven_unfair_share"], float) for r in payload["rules"])


def test_tree_pipeline_rules_against_the_enumerated_network(data, tmp_path):
    """A gradient-boosted pipeline reading a category by name: the network's states are bound to
    the pipeline as verify binds them; the rules' bounds hold the truth."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    noise = np.random.default_rng(1).normal(0, 0.5, len(data))
    y = (0.5 * data.a - 0.4 * data.b + data.c.isin(["B"]) + 1.5 * data.s - 2.5 + noise > 0).astype(int)
    prep = ColumnTransformer([("c", OneHotEncoder(), ["c"])], remainder="passthrough")
    trees = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0)
    pipe = Pipeline([("p", prep), ("m", trees)]).fit(data, y)
    saved = tmp_path / "net.json"
    result = faircert.explain(
        pipe, data, "s", population="bayesnet", samples=1500, time_limit=30, seed=2, save_population=str(saved)
    )
    frame, weights, unfair = _oracle(saved, pipe.predict)
    assert unfair.any()
    _check_rules(result, frame, weights, unfair, exact=result.stats["boxes_open"] == 0)


def test_a_linear_model_reading_names_against_the_enumerated_network(data, tmp_path):
    """A linear model reading a category and the protected attribute by name: the network's named
    states are coded for the interval evaluators, and every rule's proven share is the truth."""
    model = LinearModel(
        np.array([0.5, -0.4, 1.0, 0.7, 1.5]),
        -2.45,
        (
            ColumnEncoding("a"),
            ColumnEncoding("b"),
            ColumnEncoding("c", "onehot", ("B", "Z")),  # Z: a category the data never holds
            ColumnEncoding("s", "onehot", ("M",)),
        ),
    )
    named = data.assign(s=np.where(data.s == 1, "M", "F"))
    saved = tmp_path / "net.json"
    result = _explained(model, named, saved)
    assert "sound_bounds" not in result.stats
    _check_rules(result, *_oracle(saved, model.predict, ("F", "M")), exact=True)


def test_a_model_without_sound_bounds_keeps_its_statistical_rates(data, tmp_path, monkeypatch):
    """Where the interval evaluators cannot read the model, the rules carry no proven share (None,
    and the result says why), only their rates and their masses, still bounded soundly."""
    from faircert.engines.probability import models

    def unreadable(model, pop, prot):
        raise PropertyError("a model the interval evaluators cannot read")

    monkeypatch.setattr(models, "twin_event", unreadable)
    model = _linear()
    saved = tmp_path / "net.json"
    result = _explained(model, data[["a", "b", "s"]], saved)
    assert "none for this model" in result.stats["sound_bounds"]
    from faircert.report.explain import render_explain

    assert "sound bounds" in render_explain(result)
    frame, weights, unfair = _oracle(saved, model.predict)
    assert result.rules
    bounds = result.stats["rule_bounds"] + result.stats["fair_rule_bounds"]
    for rule, bound in zip(result.rules + result.fair_rules, bounds):
        assert rule.proven_unfair_share is None and bound["unfair_share"] is None
        assert rule.evidence in (None, "empirical")
        inside = rule.mask(frame)
        assert bound["share"][0] - 1e-12 <= weights[inside].sum() <= bound["share"][1] + 1e-12
        if rule.unfair_rate.estimate is not None:
            truth = weights[inside & unfair].sum() / weights[inside].sum()
            assert rule.unfair_rate.low - 1e-9 <= truth <= rule.unfair_rate.high + 1e-9


def test_learning_knobs_reach_the_network(data, tmp_path):
    model = _linear()
    saved = tmp_path / "net.json"
    faircert.explain(
        model,
        data[["a", "b", "s"]],
        "s",
        population="bayesnet",
        samples=200,
        time_limit=20,
        max_indegree=0,
        save_population=str(saved),
    )
    assert load_population(saved).edges == []  # no parents allowed: independent marginals


def test_bad_bayesnet_input_is_a_clear_error(data):
    model = _linear()
    columns = data[["a", "b", "s"]]
    with pytest.raises(PropertyError, match="answered with epsilon 0"):
        faircert.explain(model, columns, "s", population="bayesnet", epsilon={"a": 1})
    with pytest.raises(PropertyError, match="for population 'bayesnet' only"):
        faircert.explain(model, columns, "s", population="independent", max_bins=4)
    with pytest.raises(FaircertError):
        faircert.explain(model, None, "s", population="bayesnet")
    from faircert.domain import Domain, Feature

    narrow = Domain(
        (Feature("a", "integer", 0, 5), Feature("b", "integer", 0, 4), Feature("s", "binary", protected=True))
    )
    with pytest.raises(FaircertError, match="takes values of a outside the domain"):
        faircert.explain(model, columns, "s", population="bayesnet", domain=narrow)


def test_the_command_line_explains_under_a_network(data, tmp_path, capsys):
    """`faircert explain --population bayesnet --learn ...`: the JSON follows the schema; bad input
    exits 3 with a one-line error."""
    from importlib import resources

    from faircert.cli import main

    jsonschema = pytest.importorskip("jsonschema")
    model_file = tmp_path / "lin.json"
    model_file.write_text(json.dumps({"weights": [0.5, -0.4, 1.5], "intercept": -2.45, "features": ["a", "b", "s"]}))
    data[["a", "b", "s"]].to_csv(tmp_path / "d.csv", index=False)
    argv = ["explain", str(model_file), "--data", str(tmp_path / "d.csv"), "--protected", "s"]
    argv += ["--population", "bayesnet", "--samples", "600", "--time-limit", "30"]
    saved = tmp_path / "net.json"
    out = tmp_path / "e.json"
    assert main(argv + ["--learn", "max-indegree=2", "--learn", f"save={saved}", "--json", str(out)]) == 1
    payload = json.loads(out.read_text())
    schema = json.loads(resources.files("faircert").joinpath("schemas/explain.schema.json").read_text())
    jsonschema.validate(payload, schema)
    assert payload["population"] == "bayesnet" and saved.exists()
    assert all(0 < r["proven_unfair_share"] <= r["share"] + 1e-12 for r in payload["rules"])
    capsys.readouterr()
    (tmp_path / "empty.csv").write_text("a,b,s\n")
    bad = [
        argv + ["--epsilon", "a=1"],  # the network is answered at epsilon 0
        argv + ["--learn", "bin-bounds"],  # group's alone
        argv + ["--learn", "max-bins=x"],
        [*argv[:3], str(tmp_path / "empty.csv"), *argv[4:]],  # no data to learn from
        [*argv[:-4], "--population", "uniform", "--learn", "score=bic"],  # learning, without a network
    ]
    for line in bad:
        assert main(line) == 3, line
        err = capsys.readouterr().err.strip().splitlines()
        assert err and err[-1].startswith("faircert: error:"), err


def test_rules_start_only_when_they_can_end_by_the_time_limit(data, monkeypatch):
    """On a clock of the rules' own (each rule's refinement takes 0.5 s of setup plus the time it is
    given), every rule after the first ends by the time limit; those that could not are counted,
    with their mass bounded and nothing proven."""
    from faircert.engines.probability import twins
    from faircert.subgroups import measured

    now = [0.0]

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return now[0]

    real = twins.region_bounds
    calls = []

    def with_setup(model, pop, prot, allowed, options):
        out = real(model, pop, prot, allowed, options)
        now[0] += 0.5 + options.time_limit
        calls.append((model is not None, now[0]))
        return out

    monkeypatch.setattr(measured, "time", Clock)
    monkeypatch.setattr(twins, "region_bounds", with_setup)
    model = _linear()
    result = faircert.explain(model, data[["a", "b", "s"]], "s", population="bayesnet", samples=1000, time_limit=3)
    proven = [end for bounded, end in calls if bounded]
    assert proven and all(end <= 3 + 1e-9 for end in proven[1:])
    skipped = result.stats["rules_past_time_limit"]
    assert skipped == len(calls) - len(proven) >= 1
    rules = result.rules + result.fair_rules
    assert [r.proven_unfair_share for r in rules[len(proven) :]] == [0.0] * skipped


def test_network_pipeline_with_a_binned_column_against_the_enumerated_network(tmp_path):
    """A network pipeline over a continuous column the network bins (its data values inside each
    bin a variable of their own): the rules' bounds hold the truth of the enumerated network."""
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400
    s = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "a": np.round(rng.normal(40, 8, n)) + 3 * s,  # some 50 values, in 4 bins
            "b": rng.integers(0, 4, n),
            "c": rng.choice(CATEGORIES, n),
            "s": s,
        }
    )
    y = ((frame.a - 40) / 8 + 0.5 * frame.b - 1 + (frame.c == "B") + frame.s + rng.normal(0, 0.5, n) > 0).astype(int)
    prep = ColumnTransformer([("c", OneHotEncoder(), ["c"]), ("n", StandardScaler(), ["a", "b", "s"])])
    pipe = Pipeline([("p", prep), ("m", MLPClassifier((6,), max_iter=2000, random_state=0))]).fit(frame, y)
    saved = tmp_path / "net.json"
    result = faircert.explain(
        pipe, frame, "s", population="bayesnet", samples=1000, time_limit=20, max_bins=4, save_population=str(saved)
    )
    assert "a" in load_population(saved).info["bins"]  # binned, then expanded to its values
    inputs, weights, unfair = _oracle(saved, pipe.predict)
    assert unfair.any()
    _check_rules(result, inputs, weights, unfair, exact=False)
