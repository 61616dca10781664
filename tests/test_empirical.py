"""The empirical population (the data's rows, each with equal weight) gives exactly fairlearn's
MetricFrame selection rates and its demographic-parity and equalized-odds figures."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.cli import main

fl = pytest.importorskip("fairlearn.metrics")
pytest.importorskip("sklearn")
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

warnings.filterwarnings("ignore", category=UserWarning)


def _data(n=800, seed=3):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "sex": rng.choice(["Female", "Male"], n, p=[0.4, 0.6]),
            "race": rng.choice(["A", "B", "C"], n),
            "age": rng.integers(18, 70, n),
            "hours": rng.uniform(10, 60, n),
        }
    )
    score = df.age / 40 + (df.sex == "Male") * 0.5 + df.hours / 50 + rng.normal(0, 0.5, n)
    df["income"] = (score > 2.2).astype(int)
    return df


def _pipeline(estimator, df):
    prep = ColumnTransformer(
        [("c", OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]), ("n", StandardScaler(), ["age", "hours"])]
    )
    return Pipeline([("p", prep), ("m", estimator)]).fit(df.drop(columns="income"), df.income)


@pytest.mark.parametrize("estimator", [LogisticRegression(), GradientBoostingClassifier(n_estimators=15)])
def test_empirical_equals_fairlearn_metricframe(estimator):
    df = _data()
    pipe = _pipeline(estimator, df)
    X = df.drop(columns="income")
    predicted = pipe.predict(X)
    frame = fl.MetricFrame(metrics=fl.selection_rate, y_true=df.income, y_pred=predicted, sensitive_features=df["sex"])
    r = faircert.group(
        pipe,
        df,
        sensitive_features=df["sex"],
        label="income",
        population="empirical",
        metrics="demographic_parity_difference,demographic_parity_ratio,equalized_odds_difference",
    )
    assert r.engine == "empirical" and r.exact
    assert "empirical" in r.population
    for group, rate in frame.by_group.items():
        assert r.by_group.loc[group, "low"] == pytest.approx(rate, abs=1e-12)
    assert r.metrics["sp"].low == pytest.approx(
        fl.demographic_parity_difference(df.income, predicted, sensitive_features=df["sex"]), abs=1e-12
    )
    assert r.metrics["di"].low == pytest.approx(
        fl.demographic_parity_ratio(df.income, predicted, sensitive_features=df["sex"]), abs=1e-12
    )
    assert r.metrics["eo"].low == pytest.approx(
        fl.equalized_odds_difference(df.income, predicted, sensitive_features=df["sex"]), abs=1e-12
    )
    assert r.by_group["size"].to_dict() == pytest.approx((df.sex.value_counts() / len(df)).to_dict())


def test_empirical_compound_groups_and_missing_rows_are_counted(tmp_path, capsys):
    df = _data()
    pipe = _pipeline(LogisticRegression(), df)
    holes = df.copy()
    holes.loc[:9, "age"] = np.nan
    holes.to_csv(tmp_path / "d.csv", index=False)
    r = faircert.group(pipe, holes, protected="sex,race", population="empirical")
    kept = holes.dropna()
    rates = pd.Series(pipe.predict(kept.drop(columns="income")), index=kept.index).groupby([kept.sex, kept.race]).mean()
    assert len(r.groups) == 6 and r.stats["rows_dropped_missing"] == 10
    for (sex, race), rate in rates.items():
        assert r.by_group.loc[(sex, race), "low"] == pytest.approx(rate, abs=1e-12)
    import joblib

    joblib.dump(pipe, tmp_path / "m.pkl")
    code = main(
        [
            "group",
            str(tmp_path / "m.pkl"),
            "--data",
            str(tmp_path / "d.csv"),
            "--protected",
            "sex",
            "--population",
            "empirical",
            "--trust-pickle",
            "--threshold",
            "0.01",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert "empirical" in err and "10 rows with missing values" in err


def test_a_learned_population_says_its_numbers_are_not_the_data_rows(tmp_path, capsys):
    import joblib

    df = _data(300)
    joblib.dump(_pipeline(LogisticRegression(), df), tmp_path / "m.pkl")
    df.to_csv(tmp_path / "d.csv", index=False)
    args = ["group", str(tmp_path / "m.pkl"), "--data", str(tmp_path / "d.csv"), "--protected", "sex", "--trust-pickle"]
    main(args + ["--population", "independent"])
    err = " ".join(capsys.readouterr().err.split())
    assert "numbers under the population: independent" in err and "--population empirical gives" in err
    main(args)  # data and no population: the data's rows, as fairlearn counts them
    err = " ".join(capsys.readouterr().err.split())
    assert "numbers under the population: empirical" in err and "--population empirical gives" not in err


def test_questions_the_data_rows_cannot_answer_are_errors():
    from faircert.errors import PropertyError

    df = _data(200)
    pipe = _pipeline(LogisticRegression(), df)
    with pytest.raises(PropertyError, match="influence"):
        faircert.group(pipe, df, protected="sex", population="empirical", influence=True)
    with pytest.raises(PropertyError, match="causal population"):
        faircert.group(pipe, df, protected="sex", population="empirical", metrics="di,pcf", mediators="age")
