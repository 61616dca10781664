"""Group metrics as objects (`faircert.metrics`): one module each, found by name or alias; equal
opportunity and predictive parity against fairlearn and hand counts; what each metric needs is
asked for before any work; intervals over undecided rows are sound."""

from __future__ import annotations

import json
import pkgutil

import numpy as np
import pandas as pd
import pytest

import faircert
import faircert.metrics as metrics
from faircert.cli import main
from faircert.engines.group.empirical import _groups, _precisions
from faircert.errors import PropertyError
from faircert.metrics.base import GroupMetric, label_keys


@pytest.fixture(scope="module")
def hiring():
    """Raw rows with a 0/1 label, and a pipeline whose selection and error rates differ by group."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(3)
    n = 1200
    df = pd.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n, p=[0.45, 0.55]),
            "race": rng.choice(["a", "b", "c"], n),
            "years": rng.integers(0, 20, n),
        }
    )
    df["hired"] = ((df.years / 6 + 0.7 * (df.sex == "m") + rng.normal(0, 1, n)) > 2.0).astype(int)
    ct = ColumnTransformer([("oh", OneHotEncoder(), ["sex", "race"]), ("sc", StandardScaler(), ["years"])])
    model = make_pipeline(ct, LogisticRegression()).fit(df.drop(columns="hired"), df.hired)
    return df, model


def test_every_module_of_the_package_is_a_metric_found_by_each_of_its_names():
    modules = {m.name for m in pkgutil.iter_modules(metrics.__path__)} - {"base"}
    assert len(metrics.METRICS) == len(modules) >= 7
    assert list(metrics.METRICS)[:2] == ["di", "sp"]
    for m in metrics.METRICS.values():
        assert isinstance(m, GroupMetric) and m.direction in (">=", "<=") and m.needs in ("",) + metrics.NEEDS
        assert m.summary() and m.title
        for name in (m.name, *m.aliases):
            assert metrics.metric_names(name.upper().replace("_", "-")) == (m.name,)
    names = [a for m in metrics.METRICS.values() for a in (m.name, *m.aliases)]
    assert len(names) == len(set(names))  # an alias names one metric
    assert metrics.metric_names("") == ("di", "sp")
    assert metrics.metric_names(["equal_opportunity_ratio", "eopr", "pp"]) == ("eopr", "pp")
    with pytest.raises(PropertyError, match="unknown metric 'tpr'.*eop.*equal_opportunity_difference"):
        metrics.metric_names("tpr")


def test_the_positive_label_is_the_later_value_as_scikit_learn_orders_classes():
    def keys(*values):
        return label_keys("m", {f"Y={v}": [] for v in values})

    assert keys("1", "0") == ["Y=0", "Y=1"]
    assert keys("10.0", "9.0") == ["Y=9.0", "Y=10.0"]  # numbers by value, not as text
    assert keys("True", "False") == ["Y=False", "Y=True"]
    assert keys(">50K", "<=50K") == ["Y=<=50K", "Y=>50K"]
    with pytest.raises(PropertyError, match="two values"):
        keys("a", "b", "c")


def _fairlearn(df, model, fn):
    return fn(df.hired, model.predict(df.drop(columns="hired")), sensitive_features=df.sex)


def test_equal_opportunity_and_predictive_parity_over_the_data_rows(hiring):
    fl = pytest.importorskip("fairlearn.metrics")
    df, model = hiring
    r = faircert.group(model, df, protected="sex", label="hired", metrics="di,eop,eopr,pp,eo")
    assert list(r.metrics) == ["di", "sp", "eop", "eopr", "pp", "eo"]
    assert (
        r.metrics["eop"].low
        == r.metrics["eop"].high
        == pytest.approx(_fairlearn(df, model, fl.equal_opportunity_difference), abs=1e-12)
    )
    assert r.metrics["eopr"].low == pytest.approx(_fairlearn(df, model, fl.equal_opportunity_ratio), abs=1e-12)
    assert r.metrics["eo"].low == pytest.approx(_fairlearn(df, model, fl.equalized_odds_difference), abs=1e-12)
    # predictive parity by hand: the precision of each group's positive decisions
    yhat = model.predict(df.drop(columns="hired"))
    ppv = {s: df.hired[(df.sex == s) & (yhat == 1)].mean() for s in ("f", "m")}
    assert {g.name: g.low for g in r.conditional["yhat=1"]} == pytest.approx({f"sex={k}": v for k, v in ppv.items()})
    assert r.metrics["pp"].low == r.metrics["pp"].high == pytest.approx(abs(ppv["m"] - ppv["f"]), abs=1e-12)
    assert r.metrics["eopr"].direction == ">=" and r.metrics["pp"].direction == "<="
    assert r.metrics["eopr"].threshold == 0.8 and r.metrics["eop"].threshold is None


def test_gap_and_ratio_thresholds_decide_the_new_metrics(hiring):
    df, model = hiring
    eop = faircert.group(model, df, protected="sex", label="hired", metrics="eop").metrics["eop"].low
    loose = faircert.group(
        model,
        df,
        protected="sex",
        label="hired",
        metrics="eop,pp",
        threshold=0.01,
        gap_thresholds={"eop": eop + 0.01, "pp": 1.0},
    )
    assert loose.metrics["eop"].verdict == "fair" and loose.metrics["pp"].verdict == "fair"
    tight = faircert.group(
        model, df, protected="sex", label="hired", metrics="eop", threshold=0.01, gap_thresholds={"eop": eop - 0.01}
    )
    assert tight.metrics["eop"].verdict == "unfair" and tight.verdict == "unfair"
    ratio = faircert.group(model, df, protected="sex", label="hired", metrics="eopr", threshold=0.999)
    assert ratio.metrics["eopr"].verdict == "unfair"


def test_equal_opportunity_under_a_learned_population_is_the_positive_label_gap(hiring):
    df, model = hiring
    r = faircert.group(model, df, protected="sex", label="hired", population="independent", metrics="eo,eop,eopr")
    tpr = r.conditional["Y=1"]
    assert r.metrics["eop"].low == pytest.approx(max(max(g.low for g in tpr) - min(g.high for g in tpr), 0.0))
    assert r.metrics["eop"].high == pytest.approx(max(g.high for g in tpr) - min(g.low for g in tpr))
    assert r.metrics["eo"].high >= r.metrics["eop"].high
    assert r.metrics["eopr"].high <= 1.0 and r.metrics["eopr"].low == pytest.approx(
        min(g.low for g in tpr) / max(g.high for g in tpr)
    )


def test_what_a_metric_needs_is_asked_for_before_any_work(hiring, tmp_path, capsys):
    df, model = hiring
    with pytest.raises(PropertyError, match=r"equal opportunity difference \(eop\): compared given the true label"):
        faircert.group(model, df, protected="sex", metrics="eop")
    with pytest.raises(PropertyError, match=r"predictive parity \(pp\) .* population 'empirical'"):
        faircert.group(model, df, protected="sex", label="hired", population="bayesnet", metrics="pp")
    three = df.assign(hired=df.hired + (df.years > 18))
    with pytest.raises(PropertyError, match="needs a label with two values"):
        faircert.group(model, three, protected="sex", label="hired", metrics="eop")
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    assert (
        main(["group", str(tmp_path / "m.json"), "--data", str(data), "--protected", "sex", "--metric", "tpr_gap"]) == 3
    )
    assert "unknown metric 'tpr_gap'" in capsys.readouterr().err


def test_precision_bounds_over_undecided_rows_contain_every_decision():
    frame = pd.DataFrame({"g": ["a"] * 6 + ["b"] * 3})
    positive = np.array([1, 1, 0, 0, 0, 0, 1, 0, 0], dtype=bool)
    unsure = np.array([0, 0, 1, 1, 0, 0, 0, 1, 0], dtype=bool)
    good = np.array([1, 0, 1, 0, 1, 0, 0, 1, 0], dtype=bool)
    rates = {r.name: r for r in _precisions(_groups(frame, ("g",)), positive, unsure, good)}
    for flips in range(8):  # every decision of the three undecided rows
        pos = positive.copy()
        pos[np.flatnonzero(unsure)] = [(flips >> k) & 1 for k in range(3)]
        for name, rows in (("g=a", slice(0, 6)), ("g=b", slice(6, 9))):
            if pos[rows].any():
                value = good[rows][pos[rows]].mean()
                assert rates[name].low - 1e-12 <= value <= rates[name].high + 1e-12
    assert (rates["g=a"].low, rates["g=a"].high) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert (rates["g=b"].low, rates["g=b"].high) == (0.0, 0.5)


def test_reports_title_the_metrics_and_json_says_how_each_is_checked(hiring, tmp_path, capsys):
    import joblib

    df, model = hiring
    path, data, out, page = tmp_path / "m.pkl", tmp_path / "d.csv", tmp_path / "r.json", tmp_path / "r.html"
    joblib.dump(model, path)
    df.to_csv(data, index=False)
    code = main(
        [
            "group",
            str(path),
            "--trust-pickle",
            "--data",
            str(data),
            "--protected",
            "sex",
            "--label",
            "hired",
            "--metric",
            "equal_opportunity_difference,pp",
            "--json",
            str(out),
            "--html",
            str(page),
        ]
    )
    assert code in (0, 1, 2)
    shown = capsys.readouterr().err  # tables for people go to stderr
    assert "EOp (TPR max-min)" in shown and "PP (precision max-min)" in shown and "precision" in shown
    doc = json.loads(out.read_text())
    assert doc["metrics"]["eop"]["direction"] == "<=" and doc["metrics"]["di"]["direction"] == ">="
    assert "EOp (TPR max-min)" in page.read_text()
