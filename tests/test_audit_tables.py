"""Audit tables: counts equal pandas' groupby, impact ratios and scoring rates by hand, rows with a
missing protected value counted apart, small cells flagged and optionally left out."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from faircert.errors import DataError, PropertyError
from faircert.report.audit import print_audit, render_audit, write_audit_csv
from faircert.subgroups import audit_tables


@pytest.fixture(scope="module")
def people():
    rng = np.random.default_rng(0)
    n = 3000
    data = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["Asian", "Black", "Hispanic", "White", "Other"], n, p=[0.2, 0.25, 0.25, 0.29, 0.01]),
        }
    )
    data.loc[rng.choice(n, 40, replace=False), "race"] = None
    data.loc[rng.choice(n, 15, replace=False), "sex"] = np.nan
    scores = rng.normal(0, 1, n) + 0.4 * (data.sex == "M")
    return data, (scores > 0.3).astype(int), scores


def test_counts_equal_groupby_and_missing_rows_are_counted_apart(people):
    data, decisions, _ = people
    result = audit_tables(data, decisions, ["sex", "race"])
    assert [t.name for t in result.tables] == ["sex", "race", "sex x race"]
    for t in result.tables:
        kept = data[t.attributes].notna().all(axis=1)
        assert t.missing == int((~kept).sum())
        expected = data[kept].assign(d=decisions[kept.to_numpy()]).groupby(t.attributes)["d"].agg(["size", "sum"])
        frame = t.to_frame().set_index(t.attributes)
        assert frame["count"].to_dict() == expected["size"].to_dict()
        assert frame["selected"].to_dict() == expected["sum"].to_dict()
    assert result.table("race").missing == 40 and result.table("sex").missing == 15
    assert sum(c.count for c in result.table("sex", "race").cells) + result.table("sex", "race").missing == 3000


def test_impact_ratios_and_intervals_by_hand():
    data = pd.DataFrame({"sex": ["F"] * 10 + ["M"] * 20 + [None] * 2})
    decisions = np.array([1] * 4 + [0] * 6 + [1] * 12 + [0] * 8 + [1, 0])
    t = audit_tables(data, decisions, ["sex"]).table("sex")
    (f, m) = t.cells
    assert (f.count, f.selected, m.count, m.selected, t.missing) == (10, 4, 20, 12, 2)
    assert f.selection_rate.estimate == 0.4 and m.selection_rate.estimate == 0.6
    assert f.impact_ratio == pytest.approx(0.4 / 0.6) and m.impact_ratio == 1.0
    # Clopper-Pearson 95% of 4 of 10: [0.1216, 0.7376]
    assert (f.selection_rate.low, f.selection_rate.high) == pytest.approx((0.12155, 0.73763), abs=1e-5)


def test_small_cells_are_flagged_and_may_be_left_out_of_the_ratios():
    data = pd.DataFrame({"race": ["A"] * 60 + ["B"] * 39 + ["C"]})
    decisions = np.array([1] * 30 + [0] * 30 + [1] * 13 + [0] * 26 + [1])
    kept = audit_tables(data, decisions, ["race"]).table("race")
    assert [c.small for c in kept.cells] == [False, False, True]
    assert [c.impact_ratio for c in kept.cells] == pytest.approx([0.5, 1 / 3, 1.0])  # C (1 of 1) leads
    left_out = audit_tables(data, decisions, ["race"], exclude_small=True).table("race")
    assert [c.impact_ratio for c in left_out.cells] == [1.0, pytest.approx(2 / 3), None]


def test_scoring_rates_count_the_rows_above_the_median_of_all(people):
    data, decisions, scores = people
    result = audit_tables(data, decisions, ["sex"], scores=scores)
    median = np.median(scores)
    assert result.median_score == pytest.approx(median)
    rates = {c.group["sex"]: c.scoring_rate.estimate for c in result.table("sex").cells}
    for sex in ("F", "M"):
        assert rates[sex] == pytest.approx((scores[(data.sex == sex).to_numpy()] > median).mean())
    top = max(rates.values())
    assert {c.group["sex"]: c.scoring_impact_ratio for c in result.table("sex").cells} == pytest.approx(
        {s: r / top for s, r in rates.items()}
    )


def test_the_tables_as_csv_json_and_html(people, tmp_path, capsys):
    data, decisions, scores = people
    result = audit_tables(data, decisions, ["sex", "race"], scores=scores)
    cells = write_audit_csv(result, tmp_path / "audit.csv")
    back = pd.read_csv(tmp_path / "audit.csv", keep_default_na=False)
    assert cells == 2 + 5 + 10 and len(back) == cells + 3  # one line per table counts its missing rows
    missing = back[(back.table == "sex x race") & (back.sex == "(missing)")]
    assert missing["count"].tolist() == [55] and missing["race"].tolist() == ["(missing)"]
    payload = json.loads(result.to_json())
    assert [t["name"] for t in payload["tables"]] == ["sex", "race", "sex x race"]
    assert set(payload["tables"][0]["cells"][0]["selection_rate"]) == {"estimate", "low", "high", "confidence"}
    page = render_audit(result)
    assert page.count("<table>") == 3 and "sex x race" in page and "55 rows with a missing" in page
    assert "<table>" in result._repr_html_()
    print_audit(result)
    assert "sex x race: 55 rows with a missing value counted apart" in capsys.readouterr().err


def test_bad_input_is_a_clear_error(people):
    data, decisions, _ = people
    with pytest.raises(DataError, match="not columns"):
        audit_tables(data, decisions, ["age"])
    with pytest.raises(PropertyError, match="list"):
        audit_tables(data, decisions, "sex")
    with pytest.raises(DataError, match="0 or 1"):
        audit_tables(data, decisions * 2, ["sex"])
    with pytest.raises(DataError, match="one value per row"):
        audit_tables(data, decisions[:10], ["sex"])
    with pytest.raises(DataError, match="one value per row"):
        audit_tables(data, decisions, ["sex"], scores=[1.0])


def test_group_adds_the_audit_tables_of_the_data_rows(tmp_path):
    """`group(..., audit_table=True)` and `faircert group --audit-table`: the model's decision on each
    row, counted by sex, by race and by both, equal to a pandas groupby; rows missing race apart."""
    import json

    import faircert
    from faircert.cli import main
    from faircert.models.linear import ColumnEncoding, LinearModel

    rng = np.random.default_rng(5)
    n = 600
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["A", "B", "C"], n, p=[0.1, 0.4, 0.5]),
            "score": rng.integers(0, 10, n),
        }
    )
    frame.loc[frame.index[:7], "race"] = None
    model = LinearModel(np.array([0.8, 1.0]), -4.0, (ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("score")))
    result = faircert.group(model, frame, protected=["sex", "race"], audit_table=True)
    selected = ((frame.sex == "M") * 0.8 + frame.score - 4.0 > 0).astype(int)
    both = result.audit.table("sex", "race")
    expected = frame.assign(y=selected).dropna().groupby(["sex", "race"])["y"].agg(["count", "sum"])
    for cell in both.cells:
        key = (cell.group["sex"], cell.group["race"])
        assert (cell.count, cell.selected) == tuple(expected.loc[key])
    assert result.audit.table("race").missing == 7 and result.audit.table("sex").missing == 0
    # the model reads no race: a row missing it is decided, and counted by its sex as decided
    by_sex = frame.assign(y=selected).groupby("sex")["y"].agg(["count", "sum"])
    for cell in result.audit.table("sex").cells:
        assert (cell.count, cell.selected) == tuple(by_sex.loc[cell.group["sex"]])
    # a model that reads race cannot decide those rows: they are counted apart in every table
    reads_race = LinearModel(
        np.array([0.8, 0.5, 1.0]),
        -4.0,
        (ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("race", "onehot", ("C",)), ColumnEncoding("score")),
    )
    apart = faircert.group(reads_race, frame, protected=["sex", "race"], audit_table=True).audit
    assert apart.table("sex").missing == 7 and apart.table("race").missing == 7
    assert sum(c.count for c in apart.table("sex").cells) == n - 7
    assert json.loads(result.to_json())["audit_tables"]["rows"] == n
    with pytest.raises(faircert.PropertyError, match="audit_table=True"):
        faircert.group(model, frame, protected="sex", exclude_small=True)
    # the command line: the tables on the console, in the JSON and as CSV
    import joblib
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    data = frame.dropna()
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["sex"])], remainder="passthrough")
    pipe = Pipeline([("prep", prep), ("clf", LogisticRegression())]).fit(data[["sex", "score"]], selected[data.index])
    joblib.dump(pipe, tmp_path / "m.pkl")
    data.to_csv(tmp_path / "d.csv", index=False)
    argv = ["group", str(tmp_path / "m.pkl"), "--data", str(tmp_path / "d.csv"), "--protected", "sex,race"]
    argv += ["--trust-pickle", "--quiet", "--audit-table", "--audit-csv", str(tmp_path / "a.csv")]
    assert main(argv + ["--json", str(tmp_path / "g.json")]) in (0, 1)
    tables = json.loads((tmp_path / "g.json").read_text())["audit_tables"]
    assert tables["rows"] == len(data)
    # a pipeline scores: every cell has its scoring rate, and the CSV its column
    assert all("scoring_rate" in c for t in tables["tables"] for c in t["cells"])
    assert "scoring_rate" in (tmp_path / "a.csv").read_text().splitlines()[0]
    assert "sex" in (tmp_path / "a.csv").read_text().splitlines()[0]
    assert main(argv[:-3] + ["--exclude-small"]) == 3  # without --audit-table


def test_group_audit_tables_give_each_cell_its_scoring_rate(tmp_path):
    """`group --audit-table` ranks the rows by the model's score: each cell's share above the median
    score of the decided rows, equal to a pandas groupby of the scores, in the JSON, CSV and HTML."""
    import json

    import faircert
    from faircert.models.linear import ColumnEncoding, LinearModel
    from faircert.report.audit import render_audit, write_audit_csv

    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["A", "B"], n),
            "score": rng.normal(0, 1, n).round(3),
        }
    )
    frame.loc[frame.index[:5], "race"] = None
    model = LinearModel(np.array([0.5, 1.0]), -0.2, (ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("score")))
    result = faircert.group(model, frame, protected=["sex", "race"], audit_table=True)
    margin = 0.5 * (frame.sex == "M") + frame.score - 0.2
    decided = pd.Series(True, index=frame.index)  # the model reads no race: every row is decided
    median = float(np.median(margin[decided]))
    assert result.audit.median_score == pytest.approx(median)
    above = frame[decided].assign(a=(margin[decided] > median).astype(int))
    expected = above.groupby(["sex", "race"])["a"].agg(["count", "sum"])
    cells = result.audit.table("sex", "race").cells
    assert {(c.group["sex"], c.group["race"]): (c.count, c.scored_above) for c in cells} == {
        k: tuple(map(int, v)) for k, v in expected.iterrows()
    }
    by_sex = above.groupby("sex")["a"].mean()
    for c in result.audit.table("sex").cells:
        assert c.scoring_rate.estimate == pytest.approx(by_sex[c.group["sex"]])
    top = by_sex.max()
    assert [c.scoring_impact_ratio for c in result.audit.table("sex").cells] == pytest.approx(list(by_sex / top))
    # the same rates in the JSON, the CSV and the HTML
    payload = json.loads(result.to_json())["audit_tables"]["tables"][0]["cells"]
    assert [c["scored_above_median"] for c in payload] == [c.scored_above for c in result.audit.table("sex").cells]
    write_audit_csv(result.audit, tmp_path / "a.csv")
    back = pd.read_csv(tmp_path / "a.csv", keep_default_na=False)
    line = back[(back.table == "sex") & (back.sex == "F")]
    assert float(line["scoring_rate"].iloc[0]) == pytest.approx(by_sex["F"])
    assert "scoring rate [95%]" in render_audit(result.audit)
