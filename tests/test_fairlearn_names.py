"""fairlearn habits: sensitive features as names, Series or DataFrames; by_group as a DataFrame;
fairlearn's metric names; unknown metrics and EO without a label are usage errors (exit 3)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.cli import main
from faircert.errors import PropertyError
from faircert.models.linear import ColumnEncoding, LinearModel


@pytest.fixture()
def people():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {"sex": rng.choice(["Female", "Male"], n), "race": rng.choice(["A", "B"], n), "age": rng.integers(0, 4, n)}
    )
    df["income"] = np.where(rng.random(n) < 0.3 + 0.3 * (df.sex == "Male"), "high", "low")
    model = LinearModel(
        np.array([1.0, -0.5, 0.4]),
        -0.95,
        (ColumnEncoding("sex", "onehot", ("Male",)), ColumnEncoding("race", "onehot", ("B",)), ColumnEncoding("age")),
    )
    return df, model


def test_sensitive_features_as_a_series_or_a_dataframe(people):
    df, model = people
    by_name = faircert.group(model, df, sensitive_features="sex")
    by_series = faircert.group(model, df, sensitive_features=df["sex"])
    assert by_series.rates == by_name.rates
    frame = by_series.by_group
    assert list(frame.columns) == ["low", "high", "size"] and frame.index.name == "sex"
    assert list(frame.index) == ["Female", "Male"]
    assert frame.loc["Male", "low"] == frame.loc["Male", "high"] == pytest.approx(by_name.rates["sex=Male"])
    assert frame["size"].sum() == pytest.approx(1.0)
    assert by_series.to_frame().equals(frame)
    both = faircert.group(model, df, sensitive_features=df[["sex", "race"]])
    assert both.by_group.index.names == ["sex", "race"] and len(both.by_group) == 4
    # a Series that is not a column of the data: its rows are added, as fairlearn takes them
    older = pd.Series(np.where(df.age >= 2, "older", "younger"), name="age_group")
    split = faircert.group(model, df, sensitive_features=older)
    assert list(split.by_group.index) == ["older", "younger"]
    assert json.loads(split.to_json())["by_group"] == pytest.approx(split.rates)  # JSON keeps its dict


def test_fairlearn_metric_names_are_aliases_and_unknown_names_are_errors(people):
    df, model = people
    r = faircert.group(
        model,
        df,
        protected="sex",
        label="income",
        metrics=["demographic_parity_ratio", "demographic_parity_difference", "equalized_odds_difference"],
    )
    assert set(r.metrics) == {"di", "sp", "eo"}
    short = faircert.group(model, df, protected="sex", label="income", metrics="di,sp,eo")
    assert r.metrics["eo"].low == short.metrics["eo"].low
    with pytest.raises(PropertyError, match="unknown metric 'dp'"):
        faircert.group(model, df, protected="sex", metrics="dp")
    with pytest.raises(PropertyError, match="equalized odds .* label"):
        faircert.group(model, df, protected="sex", metrics="eo")


def test_cli_usage_errors_for_metrics_exit_3(people, tmp_path, capsys):
    df, model = people
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "m.json").write_text(json.dumps(model.to_dict()))
    base = ["group", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv"), "--protected", "sex", "--quiet"]
    assert main(base + ["--metric", "dp"]) == 3
    assert "unknown metric 'dp'" in capsys.readouterr().err
    assert main(base + ["--metric", "eo"]) == 3
    assert main(base + ["--metric", "demographic_parity_ratio", "--label", "income", "--threshold", "0.1"]) == 0


def test_verify_takes_a_series_an_integer_position_and_gives_frames(people):
    df, model = people
    by_series = faircert.verify(model, df, sensitive_features=df["sex"])
    by_position = faircert.verify(model, df, protected=0)
    assert by_position.protected == by_series.protected == ["sex"]
    from faircert.errors import DomainError

    with pytest.raises(DomainError, match="feature index 8 is out of range"):
        faircert.verify(model, df, protected=8)
    assert (
        by_position.falsified == by_series.falsified == pytest.approx(5 / 8)
    )  # by hand: 3 of 4 ages (race A), 2 of 4 (B)
    shares = by_series.to_frame()
    assert list(shares.index) == ["certified", "falsified", "undecided"]
    assert shares["share"].sum() == pytest.approx(1.0)
    cx = by_series.counterexamples_frame()
    assert {"sex", "sex_prime", "output", "output_prime"} <= set(cx.columns) and len(cx) > 0
    assert (cx["sex"] != cx["sex_prime"]).all()
