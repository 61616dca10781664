"""Rules that locate the unfair decisions: planted regions recovered from real per-row audits,
intervals that hold at their level on fresh rows, and the JSON contract."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.errors import DataError, PropertyError
from faircert.models.linear import LinearModel
from faircert.results.explain import Condition
from faircert.subgroups import decision_changes, explain_frame, explain_rows

JOBS = ["admin", "clerk", "craft", "sales", "tech"]
EDUCATION = ["hs", "ba", "ms", "phd"]


def _people(n: int, seed: int) -> pd.DataFrame:
    """Features drawn independently of sex: no proxy of the protected attribute is left."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 70, n),
            "hours": rng.uniform(1, 60, n).round(1),
            "job": rng.choice(JOBS, n),
            "edu": rng.choice(EDUCATION, n),
            "sex": rng.choice(["F", "M"], n),
        }
    )


#: Regions where the decision follows sex; elsewhere it follows hours alone.
REGIONS = {
    "age range and two jobs": lambda d: d.age.between(30, 45) & d.job.isin(["sales", "tech"]),
    "short hours, graduate degree, older": lambda d: (d.hours <= 20) & d.edu.isin(["ms", "phd"]) & (d.age >= 50),
    "two jobs, long hours, one degree": lambda d: d.job.isin(["clerk", "admin"]) & (d.hours >= 40) & (d.edu == "hs"),
    "two degrees and an hours band": lambda d: d.edu.isin(["ba", "ms"]) & d.hours.between(25, 45),
}


def _planted_model(region, data: pd.DataFrame, kind: str):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    inside = region(data).to_numpy()
    y = np.where(inside, data.sex == "M", data.hours > 30).astype(int)
    clf = (
        DecisionTreeClassifier(random_state=0)
        if kind == "tree"
        else RandomForestClassifier(n_estimators=5, max_features=None, random_state=0)
    )
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["job", "edu", "sex"])], remainder="passthrough")
    return Pipeline([("prep", prep), ("clf", clf)]).fit(data, y)


def _audit(model, rows: pd.DataFrame, **keywords):
    return faircert.audit(model, rows, **keywords)


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


@pytest.mark.parametrize("shape", list(REGIONS))
def test_the_top_rule_recovers_a_planted_unfair_region(shape):
    pytest.importorskip("sklearn")
    region = REGIONS[shape]
    train, rows = _people(6000, 1), _people(4000, 2)
    model = _planted_model(region, train, "forest" if shape.startswith("two") else "tree")
    audit = _audit(model, rows, protected="sex")
    unfair = np.asarray(audit.verdicts) == "unfair"
    result = explain_rows(audit, rows, max_rules=5, seed=0)

    truth = region(rows).to_numpy()
    top = result.rules[0].mask(rows)
    assert _jaccard(top, truth) >= 0.7, (shape, str(result.rules[0]))
    covered = np.zeros(len(rows), dtype=bool)
    for rule in result.rules[:3]:
        covered |= rule.mask(rows)
    assert (covered & unfair).sum() >= 0.8 * unfair.sum()
    # the counts are exact on all rows, and the rate is measured on the held-out half
    first = result.rules[0]
    assert first.rows == top.sum() and first.unfair_rows == (top & unfair).sum()
    assert first.measured_rows < first.rows and first.unfair_rate.low <= first.unfair_rate.estimate
    assert first.lift is not None and first.lift > 3 and first.p_value < 1e-6
    # the flip test decides every unfair row: the protected attribute alone changes each decision
    assert first.changes == {"protected_alone": first.unfair_rows, "with_moves": 0, "moved": {}}


def test_regions_with_no_unfair_row_are_reported_as_empirical():
    data = _people(3000, 3)
    unfair = (data.age.between(30, 45) & data.job.isin(["sales", "tech"])).to_numpy()
    result = explain_frame(data, unfair, protected=["sex"], max_rules=3)
    assert str(result.rules[0]) == "30 <= age <= 45 and job in {sales, tech}"
    assert [str(r) for r in result.fair_rules] == ["job in {admin, clerk, craft}", "age >= 46", "age <= 29"]
    for rule in result.fair_rules:
        assert rule.evidence == "empirical" and rule.unfair_rows == 0
        # no unfair row among n measured: the exact upper bound is 1 - (alpha / 2)^(1 / n)
        n = rule.measured_rows
        assert rule.unfair_rate.high == pytest.approx(1 - 0.025 ** (1 / n))
    cells = {tuple(c.group.values()): (c.rows, c.unfair_rows) for c in result.by_group}
    assert cells == {(s,): ((data.sex == s).sum(), (unfair & (data.sex == s)).sum()) for s in ("F", "M")}


def _grid_rate(rule, probability) -> float:
    """The exact unfair rate of a rule over the uniform grid the rows are drawn from."""
    a, b, c = np.meshgrid(np.arange(10), np.arange(10), np.arange(4), indexing="ij")
    grid = pd.DataFrame({"a": a.ravel(), "b": b.ravel(), "c": np.array(list("wxyz"))[c.ravel()]})
    inside = rule.mask(grid)
    return float(probability(grid)[inside].mean())


def test_each_rules_interval_holds_the_rate_on_fresh_rows_at_its_level():
    """Over 100 seeds, rules found on half the rows: their 90% intervals hold the exact rate of the
    population the rows come from at least 90% of the time (Clopper-Pearson: at least its level)."""

    def probability(d: pd.DataFrame) -> np.ndarray:
        inside = d.a.between(2, 5) & d.c.isin(["w", "x"])
        return np.where(inside, 0.45, np.where(d.b >= 7, 0.12, 0.04))

    held, total = 0, 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        data = pd.DataFrame(
            {"a": rng.integers(0, 10, 800), "b": rng.integers(0, 10, 800), "c": rng.choice(list("wxyz"), 800)}
        )
        unfair = rng.random(800) < probability(data)
        result = explain_frame(data, unfair, max_rules=2, min_lift=2, confidence=0.9, seed=seed)
        for rule in result.rules + result.fair_rules:
            truth = _grid_rate(rule, probability)
            held += rule.unfair_rate.low <= truth <= rule.unfair_rate.high
            total += 1
    # at a true coverage of 0.9 over about 200 intervals, below 0.86 has probability about 3%; the
    # intervals are exact (conservative), so their coverage is higher still (0.92 here)
    assert total >= 180 and held / total >= 0.86, (held, total)


def test_what_changes_the_decision_is_counted_per_rule():
    rng = np.random.default_rng(4)
    data = pd.DataFrame({"s": rng.integers(0, 2, 400), "x": rng.integers(0, 10, 400), "z": rng.integers(0, 3, 400)})
    model = LinearModel.plain([1.0, 1.0, 0.0], -5.5, ["s", "x", "z"])  # decision: s + x > 5.5
    audit = _audit(model, data, protected="s", epsilon={"x": 1})
    changes = decision_changes(audit)
    # x = 5 flips on s alone; x = 4 (with s = 1) or 6 (with s = 0) needs x moved by one as well
    unfair = np.asarray(audit.verdicts) == "unfair"
    alone = unfair & (data.x == 5).to_numpy()
    assert changes["alone"][unfair].tolist() == alone[unfair].tolist()
    assert set(changes["moved"][unfair & ~alone]) == {"x"}
    result = explain_rows(audit, data, max_rules=1)
    rule = result.rules[0]
    inside = rule.mask(data) & unfair
    assert rule.changes == {
        "protected_alone": int((inside & alone).sum()),
        "with_moves": int((inside & ~alone).sum()),
        "moved": {"x": int((inside & ~alone).sum())} if (inside & ~alone).any() else {},
    }


def test_the_json_follows_its_contract_and_schema():
    jsonschema = pytest.importorskip("jsonschema")
    data = _people(2000, 5)
    unfair = (data.hours.between(20, 30) & data.edu.isin(["ms", "phd"])).to_numpy()
    decided = np.ones(len(data), dtype=bool)
    decided[:50] = False
    payload = json.loads(explain_frame(data, unfair, decided, protected=["sex", "job"]).to_json())
    schema = json.loads(resources.files("faircert").joinpath("schemas/explain.schema.json").read_text())
    jsonschema.validate(payload, schema)
    rule = payload["rules"][0]
    edu, hours = sorted(rule["conditions"], key=lambda c: c["feature"])
    assert edu == {"feature": "edu", "in": ["ms", "phd"]} and set(hours) == {"feature", "low", "high"}
    # bounds are values the search half holds: within a bin's width of the planted ones
    assert hours["low"] == pytest.approx(20, abs=1) and hours["high"] == pytest.approx(30, abs=1)
    assert set(rule["unfair_rate"]) == {"estimate", "low", "high", "confidence"}
    assert rule["proven_unfair_share"] is None and payload["selection"] == "split-half"
    assert payload["unknown_rows"] == 50 and payload["unfair_rows"] == int(unfair[50:].sum())
    assert payload["unfair_rate"]["estimate"] == pytest.approx(unfair[50:].mean())
    assert payload["engine"] == ""  # verdicts given: no audit ran
    assert len(payload["by_group"]) == 2 * len(JOBS)
    del rule["unfair_rate"]["confidence"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(payload, schema)


def test_a_condition_reads_raw_values_inclusively_and_missing_values_meet_none():
    frame = pd.DataFrame({"x": [1.0, 2.0, np.nan, 3.0], "c": ["a", None, "b", "a"]})
    assert Condition("x", low=2.0, high=3.0).mask(frame).tolist() == [False, True, False, True]
    assert Condition("x", high=1.0).mask(frame).tolist() == [True, False, False, False]
    assert Condition("c", values=("a",)).mask(frame).tolist() == [True, False, False, True]
    assert str(Condition("x", low=2.0)) == "x >= 2" and str(Condition("c", values=("a", "b"))) == "c in {a, b}"


def test_bad_input_is_a_clear_error():
    data = pd.DataFrame({"x": [1, 2, 3]})
    with pytest.raises(DataError, match="one flag per row"):
        explain_frame(data, [True, False])
    with pytest.raises(DataError, match="booleans"):
        explain_frame(data, [1, 0, 1])
    with pytest.raises(DataError, match="not columns"):
        explain_frame(data, [True, False, True], protected=["sex"])
    with pytest.raises(PropertyError, match="max_rules"):
        explain_frame(data, [True, False, True], max_rules=0)
    with pytest.raises(PropertyError, match="confidence"):
        explain_frame(data, [True, False, True], confidence=95)
    with pytest.raises(DataError, match="DataFrame"):
        explain_frame(data.to_numpy(), [True, False, True])  # type: ignore[arg-type]


def test_too_few_unfair_rows_give_no_rule_rather_than_noise():
    data = _people(500, 6)
    unfair = np.zeros(500, dtype=bool)
    unfair[:3] = True
    result = explain_frame(data, unfair)
    assert result.rules == [] and result.unfair_rows == 3 and result.coverage() == 0.0
    assert "(none)" in str(result)


def test_the_report_draws_rules_against_the_global_rate_groups_and_clean_regions(capsys):
    from faircert.report.explain import print_explain, render_explain

    data = _people(3000, 7)
    unfair = (data.age.between(30, 45) & data.job.isin(["sales", "tech"])).to_numpy()
    result = explain_frame(data, unfair, protected=["sex", "edu"], max_rules=2)
    page = render_explain(result)
    assert "<script" not in page and page.count("<svg") == 1
    assert "30 &lt;= age &lt;= 45 and job in {sales, tech}" in page  # escaped, in raw units
    assert "global unfair rate" in page and "Where no unfair row was seen" in page
    # the heatmap: sex down, education across, each cell's rate and counts
    cells = {(c.group["sex"], c.group["edu"]): c for c in result.by_group}
    assert len(cells) == 8 and f"{cells['F', 'ms'].unfair_rows:,} of {cells['F', 'ms'].rows:,}" in page
    # the unfair rows under the rule
    assert f"the first 10 of {unfair.sum():,} unfair rows" in page
    assert "<svg" in result._repr_html_()
    print_explain(result)
    assert "where the unfair rows are" in capsys.readouterr().err
    text = str(result)
    assert "30 <= age <= 45 and job in {sales, tech}" in text and "where no unfair row was seen" in text


def test_constant_missing_and_boolean_columns_are_searched_or_skipped_without_error():
    data = _people(1500, 8).assign(const=1, empty=np.nan, flag=lambda d: d.age > 40)
    data.loc[::7, "hours"] = np.nan  # a missing value meets no condition on its column
    unfair = (data.age.between(30, 45) & data.job.isin(["sales", "tech"])).to_numpy()
    result = explain_frame(data, unfair)
    assert "const" not in result.features and "empty" not in result.features and "flag" in result.features
    assert result.rules and result.rules[0].unfair_rows <= unfair.sum()


def test_explain_from_python_and_the_command_line(tmp_path, capsys):
    """`faircert.explain` audits the rows and explains them in one call; `faircert explain` writes
    the same rules as JSON, CSV (spreadsheet-safe) and HTML, and exits 1 on unfair rows."""
    import joblib

    from faircert.cli import main

    region = REGIONS["age range and two jobs"]
    train, rows = _people(6000, 1), _people(2000, 2)
    rows.loc[rows.index[:3], "job"] = "=cmd"  # a category that reads as a spreadsheet formula
    model = _planted_model(region, train.assign(job=train.job.where(train.index > 2, "=cmd")), "tree")
    result = faircert.explain(model, rows, "sex", max_rules=3, seed=4)
    assert isinstance(result, faircert.ExplainResult) and result.verdict == "unfair"
    assert result.engine == "rows-trees"  # the per-row audit the rules explain
    assert _jaccard(result.rules[0].mask(rows), region(rows).to_numpy()) >= 0.7
    joblib.dump(model, tmp_path / "m.pkl")
    rows.to_csv(tmp_path / "rows.csv", index=False)
    out = [str(tmp_path / n) for n in ("r.json", "r.csv", "r.html")]
    argv = ["explain", str(tmp_path / "m.pkl"), "--data", str(tmp_path / "rows.csv"), "--protected", "sex"]
    argv += ["--trust-pickle", "--max-rules", "3", "--seed", "4", "--json", out[0], "--csv", out[1], "--html", out[2]]
    assert main(argv) == 1
    payload = json.loads((tmp_path / "r.json").read_text())
    assert [r["conditions"] for r in payload["rules"]] == [r.to_dict()["conditions"] for r in result.rules]
    assert payload["engine"] == "rows-trees" and "engine: rows-trees" in capsys.readouterr().err
    table = (tmp_path / "r.csv").read_text()
    assert "=cmd" not in table.replace("'=cmd", "")  # escaped wherever it appears
    assert "<svg" in (tmp_path / "r.html").read_text()
    assert "<td>engine (per-row audit)</td><td>rows-trees</td>" in (tmp_path / "r.html").read_text()
    assert main(["explain", str(tmp_path / "m.pkl"), "--protected", "sex", "--trust-pickle"]) == 3
    assert "--data" in capsys.readouterr().err


def test_explain_under_a_domain_population_names_the_engine_of_its_per_row_audit():
    rng = np.random.default_rng(9)
    data = pd.DataFrame({"s": rng.integers(0, 2, 300), "x": rng.integers(0, 10, 300)})
    model = LinearModel.plain([1.0, 1.0], -5.5, ["s", "x"])  # unfair exactly where x = 5
    result = faircert.explain(model, data, "s", population="uniform", samples=200, time_limit=20, seed=0)
    assert result.engine == "rows-linear" and json.loads(result.to_json())["engine"] == "rows-linear"
    assert result.stats["engine"] != result.engine  # the boxes' verify engine, beside it
