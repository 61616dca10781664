"""scikit-learn Pipelines from raw columns to label: compiled exactly for a raw-column domain, verified
against brute force over the whole grid, and refused where no exact translation exists."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.cli import main
from faircert.data import infer_domain
from faircert.domain import Domain, Feature
from faircert.errors import DomainError, ModelFormatError
from faircert.models.binding import bind_to_domain, raw_frame, sample_domain
from faircert.models.io import load_model
from faircert.models.network import ReluNetwork
from faircert.models.pipeline import PipelineModel
from faircert.models.trees import TreeEnsemble

sk = pytest.importorskip("sklearn")
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    KBinsDiscretizer,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    StandardScaler,
)

warnings.filterwarnings("ignore", category=UserWarning)


def _people(n=600, seed=0, hours_real=False):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "sex": rng.choice(["Female", "Male"], n),
            "race": rng.choice(["A", "B", "C"], n),
            "age": rng.integers(18, 30, n),
            "edu": rng.integers(1, 6, n),
            "hours": rng.uniform(10, 60, n).round(3) if hours_real else rng.integers(2, 9, n),
        }
    )
    score = df.age / 12 + (df.sex == "Male") * 0.6 + df.edu / 5 + (df.race == "B") * 0.4 + rng.normal(0, 0.4, n)
    df["income"] = np.where(score > 2.6, ">50K", "<=50K")
    return df


def _prep(kbins: bool = False):
    parts = [
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]),
        ("num", StandardScaler(), ["age"]),
        ("edu", OrdinalEncoder(), ["edu"]),
    ]
    parts.append(
        (
            "h",
            KBinsDiscretizer(4, encode="onehot", strategy="uniform")
            if kbins
            else make_pipeline(SimpleImputer(), MinMaxScaler()),
            ["hours"],
        )
    )
    return ColumnTransformer(parts)


ESTIMATORS = {
    "logistic": lambda: LogisticRegression(max_iter=1000),
    "mlp": lambda: MLPClassifier((6,), max_iter=400, random_state=0),
    "forest": lambda: RandomForestClassifier(8, max_depth=6, random_state=0),
    "boosting": lambda: GradientBoostingClassifier(n_estimators=12, max_depth=3, random_state=0),
}


def population_rate(pipe, pop, columns: list[str], sex: str) -> float:
    """P[pipe says >50K | sex] under the population (its bins' data values included), by enumeration."""
    flat = pop.expanded()
    rows, weights = [], []
    for assignment, p in flat.joint():
        rows.append({c: flat.variables[c].states[assignment[c]] for c in columns})
        weights.append(p)
    frame, weights = pd.DataFrame(rows), np.array(weights)
    positive = pipe.predict(frame) == ">50K"
    members = (frame.sex == sex).to_numpy()
    return float(weights[members & positive].sum() / weights[members].sum())


def _grid(domain: Domain) -> np.ndarray:
    return np.array(list(itertools.product(*[f.values() for f in domain.features])), dtype=np.float64)


@pytest.mark.parametrize("kbins", [False, True])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_compiled_pipeline_agrees_with_the_pipeline_on_every_point(name, kbins):
    df = _people()
    pipe = Pipeline([("prep", _prep(kbins)), ("clf", ESTIMATORS[name]())]).fit(df.drop(columns="income"), df.income)
    ir, dom = bind_to_domain(load_model(pipe), infer_domain(df))
    assert dom.names == ["sex", "race", "age", "edu", "hours"]  # the label column is not read
    assert isinstance(ir, TreeEnsemble if name in ("forest", "boosting") else ReluNetwork)
    X = _grid(dom)
    frame = raw_frame(dom, X)
    for c in ("age", "edu", "hours"):
        frame[c] = frame[c].astype(np.int64)
    assert np.array_equal(ir.predict(X), (pipe.predict(frame) == ">50K").astype(int))


@pytest.mark.parametrize("name", ["logistic", "forest", "mlp"])
def test_verify_a_pipeline_on_a_raw_dataframe_matches_brute_force(name):
    df = _people()
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS[name]())]).fit(df.drop(columns="income"), df.income)
    dom = infer_domain(df).with_protected([])
    dom = Domain(tuple(f for f in dom.features if f.name != "income"))
    X = _grid(dom)
    labels = []
    for sex in (0, 1):
        Xs = X[X[:, 0] == 0].copy()
        Xs[:, 0] = sex
        frame = raw_frame(dom, Xs)
        for c in ("age", "edu", "hours"):
            frame[c] = frame[c].astype(np.int64)
        labels.append(pipe.predict(frame))
    unfair = float(np.mean(labels[0] != labels[1]))
    assert 0 < unfair < 1
    r = faircert.verify(pipe, df, protected="sex", time_limit=60)
    assert r.undecided == pytest.approx(0, abs=1e-9)
    assert r.falsified == pytest.approx(unfair) and r.certified == pytest.approx(1 - unfair)
    assert r.exit_code == 1 and r.counterexamples
    for c in r.counterexamples[:5]:  # re-checked on the pipeline itself, with category names
        pair = pd.DataFrame([c.x, c.x_prime], columns=dom.names)
        pair["sex"] = ["Female", "Male"][int(c.x[0])], ["Female", "Male"][int(c.x_prime[0])]
        pair["race"] = [["A", "B", "C"][int(v)] for v in pair["race"]]
        assert len(set(pipe.predict(pair))) == 2


def test_tree_pipeline_on_a_real_column_reproduces_float32_rounding_at_thresholds():
    df = _people(hours_real=True)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "race"]), ("num", StandardScaler(), ["hours", "age"])])
    pipe = Pipeline([("prep", prep), ("clf", GradientBoostingClassifier(n_estimators=20, random_state=0))])
    pipe.fit(df.drop(columns="income"), df.income)
    ir, dom = bind_to_domain(load_model(pipe), infer_domain(df))
    j = dom.index("hours")
    cuts = np.unique(np.concatenate([t.threshold[(~t.is_leaf) & (t.feature == j)] for t in ir.trees]))
    assert len(cuts) > 3
    hours = np.concatenate([cuts, np.nextafter(cuts, np.inf), np.nextafter(cuts, -np.inf)])
    X = sample_domain(dom, len(hours), seed=1)
    X[:, j] = hours
    frame = raw_frame(dom, X)
    frame["age"] = frame["age"].astype(np.int64)
    frame["hours"] = hours
    frame["edu"] = 0  # read by the pipeline, dropped by its ColumnTransformer: not in the compiled domain
    assert "edu" not in dom.names
    assert np.array_equal(ir.predict(X), (pipe.predict(frame) == ">50K").astype(int))


def test_what_cannot_be_compiled_exactly_is_refused_with_one_error():
    df = _people(hours_real=True)
    X, y = df.drop(columns="income"), df.income
    onehot_real = Pipeline(
        [
            (
                "p",
                ColumnTransformer(
                    [("c", OneHotEncoder(handle_unknown="ignore"), ["sex", "hours"]), ("n", "passthrough", ["age"])]
                ),
            ),
            ("m", MLPClassifier((4,), max_iter=200, random_state=0)),
        ]
    ).fit(X, y)
    with pytest.raises(DomainError, match="'hours' is real-valued.*ReLU network cannot compute exactly"):
        faircert.verify(onehot_real, df, protected="sex")
    poly = Pipeline(
        [("p", ColumnTransformer([("n", PolynomialFeatures(), ["age", "hours"])])), ("m", LogisticRegression())]
    ).fit(X, y)
    with pytest.raises(ModelFormatError, match="unsupported preprocessing PolynomialFeatures"):
        faircert.load_model(poly)
    # a step no IR reads never ends the run: the pipeline is answered as a black box, saying why
    sampled = faircert.verify(poly, df, protected="sex", time_limit=10, workers=1)
    assert sampled.engine == "blackbox-sampling" and "PolynomialFeatures" in sampled.stats["black_box"]
    strict = Pipeline(
        [
            (
                "p",
                ColumnTransformer(
                    [("c", OneHotEncoder(handle_unknown="error"), ["race"]), ("n", "passthrough", ["age", "sex"])]
                ),
            ),
            ("m", RandomForestClassifier(3, random_state=0)),
        ]
    )
    strict.fit(X.assign(sex=(X.sex == "Male").astype(int)), y)
    wider = Domain(
        (
            Feature("race", "categorical", 0, 3, categories=("A", "B", "C", "D")),
            Feature("age", "integer", 18, 29),
            Feature("sex", "binary", 0, 1),
        )
    )
    with pytest.raises(DomainError, match=r"rejects \['D'\]"):
        faircert.verify(strict, wider, protected="sex")


def test_linear_models_without_a_pipeline_are_verified_too():
    df = _people()
    X = pd.DataFrame({"sex": (df.sex == "Male").astype(int), "age": df.age, "edu": df.edu})
    clf = LogisticRegression(max_iter=1000).fit(X, df.income)
    r = faircert.verify(clf, X, protected="sex", time_limit=30)
    grid = _grid(infer_domain(X))
    flip = grid.copy()
    flip[:, 0] = 1 - flip[:, 0]
    truth = float(
        np.mean(
            clf.predict(pd.DataFrame(grid, columns=X.columns)) != clf.predict(pd.DataFrame(flip, columns=X.columns))
        )
    )
    assert r.falsified == pytest.approx(truth) and r.undecided == pytest.approx(0, abs=1e-9)


def test_pipeline_ir_names_raw_columns_and_the_cli_verifies_a_pickled_pipeline(tmp_path, capsys):
    import joblib

    df = _people()
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["forest"]())]).fit(df.drop(columns="income"), df.income)
    ir = load_model(pipe)
    assert isinstance(ir, PipelineModel) and ir.input_names == ["sex", "race", "age", "edu", "hours"]
    joblib.dump(pipe, tmp_path / "pipe.pkl")
    df.to_csv(tmp_path / "people.csv", index=False)
    code = main(
        [
            "verify",
            str(tmp_path / "pipe.pkl"),
            "--domain",
            str(tmp_path / "people.csv"),
            "--protected",
            "sex",
            "--trust-pickle",
            "--json",
            str(tmp_path / "r.json"),
            "--quiet",
        ]
    )
    assert code == 1
    import json

    result = json.loads((tmp_path / "r.json").read_text())
    direct = faircert.verify(pipe, df, protected="sex")
    assert result["falsified"] == pytest.approx(direct.falsified) and result["undecided"] == pytest.approx(0)


@pytest.mark.parametrize("name", ["mlp", "boosting"])
def test_group_fairness_of_a_pipeline_matches_enumeration_of_the_population(name):
    from faircert.population import PopulationSpec, learn_population

    df = _people(300)
    X = df.drop(columns="income")
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS[name]())]).fit(X, df.income)
    r = faircert.group(pipe, df, protected="sex", population="independent", time_limit=30)
    pop = learn_population(df, list(X.columns), ["sex"], PopulationSpec("independent"))
    truths = []
    for g in r.groups:
        truths.append(population_rate(pipe, pop, list(X.columns), g.group["sex"]))
        assert g.low - 1e-9 <= truths[-1] <= g.high + 1e-9
    di = min(truths) / max(truths)
    assert r.verdict == ("unfair" if di < 0.8 else "fair")


def test_reports_show_counterexamples_once_with_category_names(capsys):
    from faircert.report.verify import print_result, render_result
    from faircert.results.verify import Counterexample

    df = _people()
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["forest"]())]).fit(df.drop(columns="income"), df.income)
    r = faircert.verify(pipe, df, protected="sex", max_counterexamples=5)
    assert r.categories["sex"] == ["Female", "Male"] and r.categories["race"] == ["A", "B", "C"]
    c = r.counterexamples[0]
    r.counterexamples = [c, Counterexample(c.x_prime, c.x, c.output_prime, c.output)]  # both directions
    assert len(r.distinct_counterexamples()) == 1
    page = render_result(r)
    assert "Counterexamples (1 re-checked" in page and "<div class='wide'>" in page  # wide tables scroll
    assert "Female &rarr; Male" in page or "Male &rarr; Female" in page
    print_result(r)
    err = capsys.readouterr().err
    assert err.count("counterexample:") == 1 and ("sex: Female -> Male" in err or "sex: Male -> Female" in err)
    assert set(r.counterexamples_frame()["sex"]) <= {"Female", "Male"}
    assert json.loads(r.to_json())["categories"]["race"] == ["A", "B", "C"]


@pytest.mark.parametrize("framework", ["xgboost", "lightgbm"])
def test_pipelines_ending_in_xgboost_or_lightgbm_agree_on_every_point(framework):
    lib = pytest.importorskip(framework)
    df = _people()
    est = (
        lib.XGBClassifier(n_estimators=15, max_depth=3)
        if framework == "xgboost"
        else lib.LGBMClassifier(n_estimators=15, verbose=-1)
    )
    pipe = Pipeline([("prep", _prep()), ("clf", est)]).fit(df.drop(columns="income"), (df.income == ">50K").astype(int))
    ir, dom = bind_to_domain(load_model(pipe), infer_domain(df))
    assert isinstance(ir, TreeEnsemble)
    X = _grid(dom)
    frame = raw_frame(dom, X)
    for c in ("age", "edu", "hours"):
        frame[c] = frame[c].astype(np.int64)
    assert np.array_equal(ir.predict(X), pipe.predict(frame))


def test_counterexample_csv_uses_category_names(tmp_path):
    from faircert.report.verify import write_counterexamples

    df = _people()
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["forest"]())]).fit(df.drop(columns="income"), df.income)
    r = faircert.verify(pipe, df, protected="sex", max_counterexamples=3)
    write_counterexamples(r, tmp_path / "cx.csv")
    rows = pd.read_csv(tmp_path / "cx.csv")
    assert set(rows["sex"]) | set(rows["sex_prime"]) == {"Female", "Male"}
    assert set(rows["race"]) <= {"A", "B", "C"} and rows["age"].dtype.kind == "i"


@pytest.mark.parametrize("name", ["logistic", "forest"])
def test_a_boolean_protected_column_is_one_hot_encoded_like_scikit_learn(name):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"female": rng.random(300) < 0.5, "age": rng.integers(0, 5, 300)})
    y = (df.age + 2 * df.female + rng.normal(0, 1, 300) > 3).astype(int)
    prep = ColumnTransformer([("c", OneHotEncoder(), ["female"]), ("n", "passthrough", ["age"])])
    pipe = Pipeline([("p", prep), ("m", ESTIMATORS[name]())]).fit(df, y)
    grid = pd.DataFrame({"female": [False] * 5 + [True] * 5, "age": list(range(5)) * 2})
    labels = pipe.predict(grid)
    assert faircert.verify(pipe, df, protected="female").falsified == pytest.approx(np.mean(labels[:5] != labels[5:]))


def test_xgboost_after_sparse_preprocessing_is_refused_because_it_reads_zeros_as_missing():
    xgboost = pytest.importorskip("xgboost")
    df = _people()
    sparse = ColumnTransformer(
        [("c", OneHotEncoder(), ["sex", "race", "edu"]), ("n", "passthrough", ["age"])], sparse_threshold=1.0
    )
    pipe = Pipeline([("p", sparse), ("m", xgboost.XGBClassifier(n_estimators=5))])
    pipe.fit(df.drop(columns="income"), (df.income == ">50K").astype(int))
    with pytest.raises(ModelFormatError, match="zeros of a sparse matrix as missing"):
        load_model(pipe)


def test_imputers_and_nested_pipelines_before_a_linear_model_keep_group_fairness_exact():
    from faircert.models.linear import LinearModel
    from faircert.population import PopulationSpec, learn_population

    df = _people(400)
    X = df.drop(columns="income")
    prep = ColumnTransformer(
        [
            (
                "cat",
                Pipeline([("i", SimpleImputer(strategy="most_frequent")), ("o", OneHotEncoder(drop="first"))]),
                ["sex", "race"],
            ),
            ("num", Pipeline([("i", SimpleImputer()), ("s", StandardScaler())]), ["age", "edu", "hours"]),
        ]
    )
    pipe = Pipeline([("p", prep), ("m", LogisticRegression(max_iter=1000))]).fit(X, df.income)
    assert isinstance(load_model(pipe), LinearModel)
    r = faircert.group(pipe, df, protected="sex", population="independent", bin_value="mean")
    assert r.engine == "subset-sum" and r.method == "exact tables"
    pop = learn_population(df, list(X.columns), ["sex"], PopulationSpec("independent", bin_value="mean"))
    rows, weights = [], []
    for assignment, p in pop.joint():
        rows.append({c: pop.variables[c].states[assignment[c]] for c in X.columns})
        weights.append(p)
    frame, weights = pd.DataFrame(rows), np.array(weights)
    positive = pipe.predict(frame) == ">50K"
    for g in r.groups:
        members = (frame.sex == g.group["sex"]).to_numpy()
        truth = float(weights[members & positive].sum() / weights[members].sum())
        assert g.low == pytest.approx(truth, abs=1e-9) and g.high == pytest.approx(truth, abs=1e-9)


@pytest.mark.parametrize("name", ["logistic", "forest"])
def test_a_model_that_ignores_the_protected_column_is_proven_fair(name):
    df = _people()
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["race"]), ("num", StandardScaler(), ["age", "edu"])])
    pipe = Pipeline([("p", prep), ("m", ESTIMATORS[name]())]).fit(df.drop(columns="income"), df.income)
    r = faircert.verify(pipe, df, protected="sex")
    assert r.verdict == "fair" and r.certified == pytest.approx(1.0) and r.exit_code == 0


def test_a_domain_without_the_category_names_the_model_reads_is_refused():
    df = _people()
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["forest"]())]).fit(df.drop(columns="income"), df.income)
    codes_only = Domain(tuple(Feature(f.name, f.kind, f.min, f.max) for f in infer_domain(df).features))
    with pytest.raises(DomainError, match="'sex' holds categories for the model .* the domain gives it numbers"):
        faircert.verify(pipe, codes_only, protected="sex")
    renamed = Domain(
        tuple(
            Feature(f.name, f.kind, f.min, f.max, categories=("F", "M") if f.name == "sex" else f.categories)
            for f in infer_domain(df).features
        )
    )
    with pytest.raises(DomainError, match="none of the domain's categories"):
        faircert.verify(pipe, renamed, protected="sex")


def test_equalized_odds_of_a_pipeline_under_a_bayesian_network_matches_enumeration():
    from faircert.population import PopulationSpec, learn_population

    df = _people(300)
    X = df.drop(columns="income")
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["boosting"]())]).fit(X, df.income)
    r = faircert.group(
        pipe, df, protected="sex", label="income", population="bayesnet", metrics="di,sp,eo", time_limit=30
    )
    assert set(r.conditional) == {"Y=<=50K", "Y=>50K"} and not r.approximations
    pop = learn_population(df, list(X.columns), ["sex"], PopulationSpec("bayesnet"), label="income")
    rows, weights = [], []
    for assignment, p in pop.joint():
        rows.append({c: pop.variables[c].states[assignment[c]] for c in [*X.columns, "income"]})
        weights.append(p)
    frame, weights = pd.DataFrame(rows), np.array(weights)
    positive = pipe.predict(frame[X.columns]) == ">50K"
    gaps = []
    for condition, groups in r.conditional.items():
        truths = []
        for g in groups:
            members = ((frame.sex == g.group["sex"]) & (frame.income == condition[2:])).to_numpy()
            truths.append(float(weights[members & positive].sum() / weights[members].sum()))
            assert g.low - 1e-9 <= truths[-1] <= g.high + 1e-9 and g.high - g.low <= 2e-3
        gaps.append(max(truths) - min(truths))
    assert r.metrics["eo"].low - 1e-9 <= max(gaps) <= r.metrics["eo"].high + 1e-9


def test_testing_mode_samples_of_a_tree_pipeline_name_their_categories():
    df = _people()
    pipe = Pipeline([("prep", _prep()), ("clf", ESTIMATORS["forest"]())]).fit(df.drop(columns="income"), df.income)
    frame = faircert.sample_counterexamples(pipe, df, protected="sex", n=20)
    assert len(frame) == 20 and set(frame["sex"]) | set(frame["sex_prime"]) <= {"Female", "Male"}
    assert (frame["sex"] != frame["sex_prime"]).all() and set(frame["race"]) <= {"A", "B", "C"}
    rows = frame[["sex", "race", "age", "edu", "hours"]].astype({"age": int, "edu": int, "hours": int})
    twins = rows.assign(sex=frame["sex_prime"])
    assert (pipe.predict(rows) != pipe.predict(twins)).all()
