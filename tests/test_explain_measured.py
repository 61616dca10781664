"""`explain` under a domain population (uniform, independent): against a brute-force oracle on a
small discrete domain, each rule's mass is exact, its proven-unfair share never exceeds the true
unfair mass of its region and equals it where the boxes are fully decided, and a fair rule called
proven holds no unfair input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.errors import PropertyError
from faircert.models.linear import ColumnEncoding, LinearModel

CATEGORIES = ["A", "B", "C", "D"]


@pytest.fixture(scope="module")
def case():
    """Features a in 0..9, b in 0..5, c in A..D, s protected (0/1): 240 inputs besides s; a linear
    model whose decision s flips in a band of its score; data rows drawn unevenly."""
    rng = np.random.default_rng(0)
    n = 400
    data = pd.DataFrame(
        {
            "a": rng.integers(0, 10, n),
            "b": np.minimum(rng.geometric(0.4, n) - 1, 5),
            "c": rng.choice(CATEGORIES, n, p=[0.4, 0.3, 0.2, 0.1]),
            "s": rng.integers(0, 2, n),
        }
    )
    model = LinearModel(
        np.array([0.5, -0.4, 1.0, 0.7, 1.5]),
        -2.5,
        (ColumnEncoding("a"), ColumnEncoding("b"), ColumnEncoding("c", "onehot", ("B", "D")), ColumnEncoding("s")),
    )
    grid = pd.DataFrame(
        list(itertools.product(range(10), range(6), CATEGORIES)), columns=["a", "b", "c"]
    )  # every input, its protected value aside
    labels = [model.predict(grid.assign(s=s)) for s in (0, 1)]
    return data, model, grid, labels[0] != labels[1]


def _weights(data: pd.DataFrame, grid: pd.DataFrame, population: str) -> np.ndarray:
    """Each input's probability: uniform, or the product of the data's marginals."""
    if population == "uniform":
        return np.full(len(grid), 1 / len(grid))
    out = np.ones(len(grid))
    for column in grid.columns:
        share = data[column].value_counts(normalize=True)
        out *= grid[column].map(share).fillna(0.0).to_numpy()
    return out


@pytest.mark.parametrize("population", ["uniform", "independent"])
def test_rules_proven_shares_against_the_oracle(case, population):
    data, model, grid, unfair = case
    weights = _weights(data, grid, population)
    result = faircert.explain(model, data, "s", population=population, samples=2000, time_limit=60, seed=1)
    assert result.population == population and result.rules and result.fair_rules
    assert result.stats["proven_unfair"] == pytest.approx(weights[unfair].sum(), abs=1e-12)  # exact engine
    assert result.stats["boxes_verified"] >= len(result.rules) + 1
    for rule in result.rules + result.fair_rules:
        inside = rule.mask(grid)
        assert rule.share == pytest.approx(weights[inside].sum(), abs=1e-12)
        true_unfair = weights[inside & unfair].sum()
        # sound: never above the truth; the linear engine decides every box, so it is the truth
        assert rule.proven_unfair_share <= true_unfair + 1e-12
        assert rule.proven_unfair_share == pytest.approx(true_unfair, abs=1e-12)
        assert set(c.feature for c in rule.conditions) <= {"a", "b", "c"}  # never the protected one
    for rule in result.rules:  # the drawn points say where: most of each rule's mass is unfair
        assert rule.proven_unfair_share >= 0.5 * rule.share
    for rule in result.fair_rules:
        if rule.evidence == "proven":
            assert not (rule.mask(grid) & unfair).any()
    payload = result.to_dict()
    assert all(isinstance(r["proven_unfair_share"], float) for r in payload["rules"])
    # the whole domain's re-checked twins, counted under each rule
    inside = result.stats["counterexamples_in_rules"]
    assert len(inside) == len(result.rules) and 0 < max(inside) <= result.stats["counterexamples"]


def test_a_rule_proven_share_is_a_lower_bound_when_boxes_stay_open(case, monkeypatch):
    """Boxes left out (beyond the cap) or undecided only lower the proven share: with one box per
    rule at most, a rule over several category runs keeps the share of its largest box."""
    from faircert.subgroups import measured

    data, model, grid, unfair = case
    monkeypatch.setattr(measured, "MAX_BOXES", 1)
    result = faircert.explain(model, data, "s", population="uniform", samples=2000, time_limit=60, seed=1)
    weights = _weights(data, grid, "uniform")
    lowered = 0
    for rule in result.rules:
        true_unfair = weights[rule.mask(grid) & unfair].sum()
        assert rule.proven_unfair_share <= true_unfair + 1e-12
        lowered += rule.proven_unfair_share < true_unfair - 1e-12
    assert lowered >= 1  # some rule's category set spans several runs of codes
    for rule in result.fair_rules:  # a region not wholly verified is never called proven fair
        runs = [c for c in rule.conditions if c.values is not None and len(c.values) > 1]
        if runs:
            assert rule.evidence == "empirical" or not (rule.mask(grid) & unfair).any()


def test_bad_populations_and_samples_are_clear_errors(case):
    data, model, _, _ = case
    with pytest.raises(PropertyError, match="unknown population 'everyone'"):
        faircert.explain(model, data, "s", population="everyone")
    with pytest.raises(PropertyError, match="samples must be an integer of at least 20"):
        faircert.explain(model, data, "s", population="uniform", samples=3)


def test_the_command_line_writes_the_proven_shares(case, tmp_path, capsys):
    """`faircert explain --population uniform`: the JSON follows the schema, each rule with its
    proven-unfair share; the console and the HTML show them."""
    import json
    from importlib import resources

    from faircert.cli import main

    jsonschema = pytest.importorskip("jsonschema")
    data = case[0]
    model_file = tmp_path / "lin.json"
    model_file.write_text(
        json.dumps(
            {
                "weights": [0.5, -0.4, 1.5],
                "intercept": -2.5,
                "features": ["a", "b", "s"],
            }
        )
    )
    data[["a", "b", "s"]].to_csv(tmp_path / "d.csv", index=False)
    argv = ["explain", str(model_file), "--data", str(tmp_path / "d.csv"), "--protected", "s"]
    argv += ["--population", "uniform", "--samples", "1000", "--json", str(tmp_path / "e.json")]
    assert main(argv + ["--html", str(tmp_path / "e.html")]) == 1
    payload = json.loads((tmp_path / "e.json").read_text())
    schema = json.loads(resources.files("faircert").joinpath("schemas/explain.schema.json").read_text())
    jsonschema.validate(payload, schema)
    assert payload["population"] == "uniform" and payload["rows"] == 1000
    # the oracle: a and b uniform over 0..9 and 0..5; unfair where s flips the score's sign
    score = 0.5 * np.arange(10)[:, None] - 0.4 * np.arange(6)[None, :] - 2.5
    flips = (score <= 0) & (score + 1.5 > 0)
    assert payload["stats"]["proven_unfair"] == pytest.approx(flips.mean(), abs=1e-12)
    for rule in payload["rules"]:
        assert 0 < rule["proven_unfair_share"] <= rule["share"]
    assert "proven_unfair_share" in capsys.readouterr().err  # the note on what the shares are
    assert "proven unfair share" in (tmp_path / "e.html").read_text()


@pytest.mark.parametrize("kind", ["trees", "network"])
@pytest.mark.parametrize("population", ["uniform", "independent"])
def test_tree_and_network_pipelines_against_the_oracle(case, kind, population):
    """The tree-ensemble and network engines too: each rule's proven share never exceeds the true
    unfair mass of its region (and meets it where the boxes are decided), a proven fair rule holds
    no unfair input."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    data, _, grid, _ = case
    noise = np.random.default_rng(1).normal(0, 0.5, len(data))
    y = (0.5 * data.a - 0.4 * data.b + data.c.isin(["B", "D"]) + 1.5 * data.s - 2.5 + noise > 0).astype(int)
    classifier = (
        GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0)
        if kind == "trees"
        else MLPClassifier((8,), max_iter=2000, random_state=0)
    )
    prep = ColumnTransformer([("c", OneHotEncoder(), ["c"]), ("n", StandardScaler(), ["a", "b", "s"])])
    pipe = Pipeline([("p", prep), ("m", classifier)]).fit(data, y)
    unfair = pipe.predict(grid.assign(s=0)) != pipe.predict(grid.assign(s=1))
    weights = _weights(data, grid, population)
    result = faircert.explain(pipe, data, "s", population=population, samples=1500, time_limit=60)
    assert result.rules and result.stats["proven_unfair"] <= weights[unfair].sum() + 1e-12
    for rule in result.rules + result.fair_rules:
        inside = rule.mask(grid)
        assert rule.share == pytest.approx(weights[inside].sum(), abs=1e-12)
        assert rule.proven_unfair_share <= weights[inside & unfair].sum() + 1e-12
        if result.stats["undecided"] == 0:
            assert rule.proven_unfair_share == pytest.approx(weights[inside & unfair].sum(), abs=1e-12)
        if rule.evidence == "proven":
            assert not (inside & unfair).any()


def test_boxes_past_the_time_limit_prove_nothing(case, monkeypatch):
    """Once the time limit is spent (here: right after the whole domain), the rules' boxes are not
    verified: their proven shares are 0, no fair rule is proven, and the skipped boxes are counted."""
    from faircert.subgroups import measured

    verify = measured._Boxes.verify

    def then_spent(self, domain, always=False):
        out = verify(self, domain, always)
        self.pace.limit = 0.0
        return out

    monkeypatch.setattr(measured._Boxes, "verify", then_spent)
    data, model, grid, unfair = case
    result = faircert.explain(model, data, "s", population="uniform", samples=2000, time_limit=60, seed=1)
    assert result.stats["boxes_verified"] == 1 and result.stats["boxes_skipped"] >= len(result.rules)
    assert result.stats["proven_unfair"] == pytest.approx(unfair.mean(), abs=1e-12)
    assert all(r.proven_unfair_share == 0.0 for r in result.rules + result.fair_rules)
    assert all(r.evidence == "empirical" for r in result.fair_rules)


@pytest.mark.parametrize(
    "takes",
    [lambda given: 0.7 + given, lambda given: max(given, 2.5) + 0.1],
    ids=["setup", "least-work"],
)
def test_a_box_starts_only_when_it_can_end_by_the_time_limit(case, monkeypatch, takes):
    """The clock is read before each box, and a box is given the time left less the most a box was
    seen to run past the time it was given (its setup), and starts only where the shortest box seen
    would end in time: on a clock of the boxes' own (each box takes 0.7 s of setup plus the time it
    is given, or at least 2.5 s of work and 0.1 s of setup), every box after the first ends by the time
    limit, and the boxes that could not are skipped."""
    from faircert.requests import verify as requests_verify
    from faircert.subgroups import measured

    now = [0.0]

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return now[0]

    limits = []
    pace = measured._Pace.__init__

    def recorded(self, limit, start):
        limits.append(limit)
        pace(self, limit, start)

    real = requests_verify.run_verify
    boxes = []

    def with_setup(request, progress):
        out = real(request, progress)
        now[0] += takes(request.options.time_limit)
        boxes.append((request.options.time_limit, now[0]))
        return out

    monkeypatch.setattr(measured, "time", Clock)
    monkeypatch.setattr(measured._Pace, "__init__", recorded)
    monkeypatch.setattr(requests_verify, "run_verify", with_setup)
    data, model, _, _ = case
    result = faircert.explain(model, data, "s", population="uniform", samples=500, time_limit=10, seed=1)
    limit = limits[0]
    assert 9 < limit <= 10 and len(boxes) >= 3  # the whole domain, then some of the rules' boxes
    assert all(end <= limit + 1e-9 for _, end in boxes[1:])
    assert all(given >= measured.MIN_BOX_S for given, _ in boxes)
    assert result.stats["boxes_skipped"] >= 1 and result.stats["boxes_verified"] == len(boxes)
