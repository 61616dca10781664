"""faircert.group and `faircert group`: importers, populations, metrics, bad input, the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import faircert
from faircert.cli import main
from faircert.engines.group.subset_sum import Engine, brute_force
from faircert.errors import DataError, ModelFormatError, PropertyError
from faircert.models.io.linear_json import load_linear_json
from faircert.models.io.sklearn.linear import load_sklearn_linear
from faircert.models.linear import LinearModel
from faircert.population import DiscretePopulation, PopulationSpec, Variable, learn_population


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 1500
    df = pd.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n, p=[0.4, 0.6]),
            "race": rng.choice(["a", "b", "c"], n),
            "age": rng.normal(40, 10, n).round(1),
            "edu": rng.integers(1, 8, n),
        }
    )
    df["y"] = ((df.age / 10 + df.edu / 2 + (df.sex == "m") + rng.normal(0, 1, n)) > 7.5).astype(int)
    return df


@pytest.fixture(scope="module")
def pipeline(frame):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    ct = ColumnTransformer(
        [("oh", OneHotEncoder(drop="if_binary"), ["sex", "race"]), ("sc", StandardScaler(), ["age", "edu"])]
    )
    return make_pipeline(ct, LogisticRegression()).fit(frame.drop(columns="y"), frame.y)


# ----- importers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["lr", "linearsvc", "sgd", "svc"])
def test_sklearn_estimators_predict_like_sklearn(kind):
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.svm import SVC, LinearSVC

    est = {
        "lr": LogisticRegression(),
        "linearsvc": LinearSVC(),
        "sgd": SGDClassifier(random_state=0),
        "svc": SVC(kernel="linear"),
    }[kind]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X @ [1, -2, 0.5, 0] + rng.normal(0, 0.5, 300) > 0).astype(int)
    est.fit(X, y)
    model = load_sklearn_linear(est)
    assert np.array_equal(model.predict(X), est.predict(X))
    assert np.allclose(model.decision_function(X), est.decision_function(X))


def test_pipeline_takes_raw_columns(pipeline, frame):
    model = load_sklearn_linear(pipeline)
    raw = frame.drop(columns="y")
    assert np.array_equal(model.predict(raw), pipeline.predict(raw))
    assert [e.kind for e in model.encoding] == ["onehot", "onehot", "numeric", "numeric"]


def test_rbf_svc_and_multiclass_are_refused():
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    X = np.random.default_rng(0).normal(size=(60, 2))
    with pytest.raises(ModelFormatError, match="not linear"):
        load_sklearn_linear(SVC().fit(X, (X[:, 0] > 0).astype(int)))
    with pytest.raises(ModelFormatError, match="binary"):
        load_sklearn_linear(LogisticRegression().fit(X, np.arange(60) % 3))


def test_linear_json_and_feature_count_mismatch(tmp_path):
    good = {
        "weights": [1.0, -2.0, 0.5],
        "intercept": 0.25,
        "encoding": [{"column": "race", "onehot": ["a", "b"]}, {"column": "age", "divisor": 10}],
    }
    (tmp_path / "m.json").write_text(json.dumps(good))
    model = faircert.load_model(tmp_path / "m.json")
    assert isinstance(model, LinearModel)
    assert model.decision_function({"race": ["a", "c"], "age": [20, 20]}).tolist() == [
        1.0 + 0.5 * 2 + 0.25,
        0.5 * 2 + 0.25,
    ]
    bad = dict(good, weights=[1.0, 2.0])
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ModelFormatError, match="2 weights but its encoding of 2 columns gives 3 features"):
        load_linear_json(tmp_path / "bad.json")


# ----- populations ----------------------------------------------------------------------------------
def test_independent_marginals_are_data_frequencies(frame):
    pop = learn_population(frame, ["race", "edu"], ["sex"], PopulationSpec("independent"))
    sex = pop.variables["sex"]
    assert dict(zip(sex.states, sex.cpt)) == pytest.approx(frame.sex.value_counts(normalize=True).to_dict())
    assert pop.variables["edu"].edges is None  # 7 values <= max_bins: kept exactly


def test_bayesnet_protected_are_roots_and_save_load_repeats(frame, tmp_path, pipeline):
    pop = learn_population(
        frame, ["race", "age", "edu"], ["sex", "race"], PopulationSpec("bayesnet", max_indegree=2), label="y"
    )
    assert pop.variables["sex"].parents == () and pop.variables["race"].parents == ()
    assert all(len(v.parents) <= 2 for v in pop.variables.values())
    pop.save(tmp_path / "pop.json")
    again = faircert.group(pipeline, frame, population=str(tmp_path / "pop.json"), metrics="di,sp,eo")
    first = faircert.group(pipeline, frame, population=pop, metrics="di,sp,eo")
    assert again.rates == first.rates
    assert again.metrics["eo"].low == first.metrics["eo"].low


def test_binning_states_its_values(frame):
    pop = learn_population(frame, ["age"], ["sex"], PopulationSpec(max_bins=4, binning="width", bin_value="midpoint"))
    age = pop.variables["age"]
    assert age.card == 4 and len(age.edges) == 5
    assert age.states == pytest.approx([0.5 * (a + b) for a, b in zip(age.edges[:-1], age.edges[1:])])


# ----- the API --------------------------------------------------------------------------------------
def test_group_matches_brute_force_and_metrics(pipeline, frame):
    result = faircert.group(pipeline, frame, sensitive_features=["sex", "race"], population="bayesnet")
    pop = learn_population(frame, ["sex", "race", "age", "edu"], ["sex", "race"], PopulationSpec("bayesnet")).expanded()
    assert pop.variables["age"].parents == ("age (bin)",)  # inside its bin, age takes the data's own values
    model = load_sklearn_linear(pipeline)
    values = []
    for g in pop.groups():
        want = brute_force(model, pop, g)[0]
        name = ", ".join(f"{k}={v}" for k, v in pop.group_name(g).items())
        assert result.rates[name] == pytest.approx(want, abs=1e-9)
        values.append(want)
    assert result.metric("di") == pytest.approx(min(values) / max(values), abs=1e-9)
    assert result.metric("sp") == pytest.approx(max(values) - min(values), abs=1e-9)
    assert result.exact and result.approximations  # age is binned and says so
    assert json.loads(result.to_json())["by_group"] == pytest.approx(result.rates)


def test_equalized_odds_is_the_worse_label_gap(pipeline, frame):
    r = faircert.group(pipeline, frame, protected="sex", label="y", population="independent", metrics="di,sp,eo")
    gaps = []
    for key in ("Y=0", "Y=1"):
        sub = frame[frame.y == int(key[-1])]
        rows = r.conditional[key]
        assert len(rows) == 2
        gaps.append(max(g.value for g in rows) - min(g.value for g in rows))
        # independent marginals on the rows with that label: the group sizes are their frequencies
        assert {g.name: g.size for g in rows} == pytest.approx(
            {f"sex={k}": v for k, v in sub.sex.value_counts(normalize=True).items()}
        )
    assert r.metric("eo") == pytest.approx(max(gaps))


def test_pcf_and_influence(pipeline, frame):
    r = faircert.group(
        pipeline, frame, protected="sex", population="bayesnet", metrics="di,sp,pcf", mediators="edu", influence=True
    )
    assert "pcf" in r.metrics and len(r.conditional["pcf"]) == 2
    assert {tuple(i.features) for i in r.influence} == {("age",), ("edu",), ("race",)}
    race = next(i for i in r.influence if i.features == ["race"])
    assert race.by_group == {k: pytest.approx(r.rates[k] - race.perturbed[k]) for k in r.rates}


def test_threshold_and_exit_codes(pipeline, frame):
    r = faircert.group(pipeline, frame, protected="sex", threshold=0.05)
    assert r.verdict == "fair" and r.exit_code == 0
    r = faircert.group(pipeline, frame, protected="sex", threshold=1.0)
    assert r.verdict == "unfair" and r.exit_code == 1


# ----- bad input ------------------------------------------------------------------------------------
def test_bad_input_errors(pipeline, frame):
    with pytest.raises(DataError, match="unknown column 'gender'"):
        faircert.group(pipeline, frame, protected="gender")
    with pytest.raises(DataError, match="continuous"):
        faircert.group(pipeline, frame, protected="age")
    r = faircert.group(pipeline, frame, protected="age", bins={"age": [0, 30, 50, 100]})
    assert len(r.groups) == 3
    with pytest.raises(PropertyError, match="label"):
        faircert.group(pipeline, frame, protected="sex", metrics="eo")
    with pytest.raises(PropertyError, match="mediators"):
        faircert.group(pipeline, frame, protected="sex", metrics="pcf")
    with pytest.raises(DataError, match="lacks|unknown column"):
        faircert.group(pipeline, frame.drop(columns="edu"), protected="sex")


def test_empty_group_is_an_error_not_a_division_by_zero():
    a = Variable("a", (0, 1, 2), ("0", "1", "2"), (), [0.5, 0.5, 0.0])
    x = Variable("x", (0, 1), ("0", "1"), ("a",), [[0.5, 0.5], [0.2, 0.8], [0.5, 0.5]])
    pop = DiscretePopulation({"a": a, "x": x}, ("a",))
    model = LinearModel.plain([1.0, 1.0], -0.5, ["a", "x"])
    with pytest.raises(DataError, match="a=2 has probability 0"):
        faircert.group(model, population=pop)


def test_model_without_names_reads_data_columns_in_order(frame):
    from sklearn.linear_model import LogisticRegression

    X = frame[["edu", "age"]].to_numpy()
    est = LogisticRegression().fit(X, frame.y)
    data = frame[["edu", "age", "sex"]]
    with pytest.raises(DataError, match="2 unnamed inputs but the data has 3"):
        faircert.group(est, data, protected="sex")
    r = faircert.group(est, frame[["edu", "age", "y"]], protected="edu", label="y")
    assert len(r.groups) == 7


def test_a_network_trained_on_encoded_columns_without_its_preprocessing_gets_a_hint(frame):
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import OneHotEncoder

    raw = frame[["sex", "race", "edu"]]
    prep = ColumnTransformer([("oh", OneHotEncoder(), ["sex", "race"])], remainder="passthrough").fit(raw)
    net = MLPClassifier((4,), max_iter=20, random_state=0).fit(prep.transform(raw), frame.y)
    with pytest.raises(DataError, match="6 unnamed inputs but the data has 3 .* --preprocessor PREP.pkl"):
        faircert.group(net, raw, protected="sex")
    r = faircert.group(net, raw, protected="sex", preprocessor=prep)
    assert len(r.groups) == 2 and r.engine == "empirical"


# ----- the continuous synthetic benchmark: discretisation error shrinks with the bins -------------------
def gaussian_population(mu: np.ndarray, sigma: float, bins: int) -> DiscretePopulation:
    """A -> X_i with X_i | A=a ~ N(mu[a, i], sigma^2), equal-width bins over mean +- 5 sigma, each bin
    taking the mean of X in it (as binning data does), with exact bin probabilities."""
    variables = {"a": Variable("a", (0, 1), ("0", "1"), (), [0.5, 0.5])}
    for i in range(mu.shape[1]):
        edges = np.linspace(mu[:, i].min() - 5 * sigma, mu[:, i].max() + 5 * sigma, bins + 1)
        z = (edges[None, :] - mu[:, i, None]) / sigma
        table = np.diff(norm.cdf(z), axis=1)
        partial_mean = mu[:, i, None] * table - sigma * np.diff(norm.pdf(z), axis=1)  # E[X; X in bin]
        values = partial_mean.sum(axis=0) / np.maximum(table.sum(axis=0), 1e-300)
        table /= table.sum(axis=1, keepdims=True)
        variables[f"x{i}"] = Variable(
            f"x{i}", tuple(values), tuple(f"{m:.3f}" for m in values), ("a",), table, tuple(edges)
        )
    return DiscretePopulation(variables, ("a",))


def exact_di(mu: np.ndarray, sigma: float, w: np.ndarray, w_a: float, b: float) -> float:
    sd = sigma * math.sqrt(float(w @ w))
    p1 = 1 - norm.cdf((-b - w_a - w @ mu[1]) / sd)
    p0 = 1 - norm.cdf((-b - w @ mu[0]) / sd)
    return min(p0, p1) / max(p0, p1)


def test_gaussian_di_converges_with_bins():
    rng = np.random.default_rng(3)
    errors = {k: [] for k in (5, 10, 20, 40)}
    for _ in range(5):
        mu = rng.uniform(0, 1, (2, 3))
        w, w_a = rng.normal(0, 5, 3), rng.normal(0, 1)
        b = -float(w @ mu.mean(axis=0)) + rng.normal(0, 0.2)
        model = LinearModel.plain(np.r_[w_a, w], b, ["a", "x0", "x1", "x2"])
        want = exact_di(mu, 0.1, w, w_a, b)
        sd = 0.1 * math.sqrt(float(w @ w))
        truth = [1 - norm.cdf((-b - w_a * s - w @ mu[s]) / sd) for s in (0, 1)]
        for k, err in errors.items():
            pop = gaussian_population(mu, 0.1, k)
            engine = Engine(model, pop)
            p = [engine.probability({"a": s})[0] for s in (0, 1)]
            err.append(abs(min(p) / max(p) - want))
            spread = Engine(model, pop, spread_bins=True)  # sound for the (truncated) continuous model
            for s in (0, 1):
                lo, hi, _ = spread.probability({"a": s})
                assert lo - 1e-6 <= truth[s] <= hi + 1e-6
    mean = {k: float(np.mean(v)) for k, v in errors.items()}
    # measured: mean |DI error| 0.13 (5 bins), 0.011 (10, the default), 0.0022 (20), 0.0005 (40): ~ quadratic
    assert mean[10] < 0.02
    assert mean[40] < mean[20] < mean[10] < mean[5]
    assert mean[40] < 0.001


# ----- the CLI --------------------------------------------------------------------------------------
def test_cli_group(tmp_path, frame, capsys):
    frame.to_csv(tmp_path / "d.csv", index=False)
    spec = {
        "weights": [0.8, -0.3, 0.2, 0.03, 0.3],
        "intercept": -3.0,
        "encoding": [
            {"column": "sex", "onehot": ["m"]},
            {"column": "race", "onehot": ["a", "b"]},
            {"column": "age"},
            {"column": "edu"},
        ],
    }
    (tmp_path / "m.json").write_text(json.dumps(spec))
    args = [str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv"), "--protected", "sex,race", "--quiet"]
    code = main(["group", *args, "--label", "y", "--metric", "di,sp,eo", "--json", str(tmp_path / "out.json")])
    out = json.loads((tmp_path / "out.json").read_text())
    assert code == {"fair": 0, "unfair": 1, "unknown": 2}[out["verdict"]]
    assert set(out["metrics"]) == {"di", "sp", "eo"} and len(out["groups"]) == 6
    assert main(["group", *args, "--threshold", "0.01"]) == 0
    assert main(["group", *args, "--threshold", "1"]) == 1
    assert main(["group", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv"), "--protected", "age"]) == 3
    assert main(["group", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv"), "--protected", "nope"]) == 3
    assert main(["group", *args, "--bins", "age"]) == 3
    assert "continuous" in capsys.readouterr().err


def test_group_results_say_why_they_stopped_in_the_words_of_every_result(pipeline, frame, monkeypatch):
    """`stopped` (JSON and console) maps the engine's own word in `stats["stopped"]`; a signal
    received during the run is said in both."""
    from faircert.commands import common

    result = faircert.group(pipeline, frame, sensitive_features=["sex"], population="independent")
    assert (result.stats["stopped"], result.stopped, result.to_dict()["stopped"]) == ("converged", "done", "done")
    assert "stopped:" not in str(result)
    for word, stopped in [("budget", "time limit"), ("sample limit", "sample budget"), ("target width", "done")]:
        result.stats["stopped"] = word
        assert result.stopped == stopped
    monkeypatch.setattr(common, "stop_requested", lambda: True)
    common.mark_interrupted(result)
    assert (result.stats["stopped"], result.to_dict()["stopped"]) == ("interrupted", "interrupted")
    assert "stopped: interrupted" in str(result)


def test_cli_pickled_pipeline_needs_trust(tmp_path, frame, pipeline):
    import joblib

    frame.to_csv(tmp_path / "d.csv", index=False)
    joblib.dump(pipeline, tmp_path / "m.joblib")
    args = [
        "group",
        str(tmp_path / "m.joblib"),
        "--data",
        str(tmp_path / "d.csv"),
        "--protected",
        "sex",
        "--quiet",
        "--json",
        str(tmp_path / "o.json"),
    ]
    assert main(args) == 3
    code = main(args + ["--trust-pickle"])
    out = json.loads((tmp_path / "o.json").read_text())
    want = faircert.group(pipeline, frame, protected="sex")
    assert out["by_group"] == pytest.approx(want.rates, abs=1e-12)
    assert code == want.exit_code


def test_sampling_method_agrees_with_the_exact_engine(pipeline, frame):
    exact = faircert.group(pipeline, frame, protected="sex", population="independent")
    sampled = faircert.group(
        pipeline, frame, protected="sex", population="independent", method="sampling", delta=1e-3, time_limit=20
    )
    assert sampled.verdict == exact.verdict
    assert "1e-03" in json.dumps(sampled.to_dict()) or "0.001" in json.dumps(sampled.to_dict())
    for name, p in exact.rates.items():
        assert sampled.rates[name] == pytest.approx(p, abs=0.05)
    with pytest.raises(PropertyError, match="unknown method"):
        faircert.group(pipeline, frame, protected="sex", method="guess")


def test_an_unknown_population_name_lists_the_choices():
    model = LinearModel.plain([1.0, -1.0], 0.0, names=["a", "s"])
    data = pd.DataFrame({"a": [0, 1, 2, 3], "s": [0, 1, 0, 1]})
    with pytest.raises(PropertyError, match="unknown population 'bayesian': choose independent, bayesnet, empirical"):
        faircert.group(model, data, protected="s", population="bayesian")
