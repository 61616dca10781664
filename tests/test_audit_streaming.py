"""A large per-row audit: its rows CSV written block by block with the cells the per-row format
makes, a JSON that summarises the rows unless asked for all, a CSV read in blocks to the same
codes and domain, and a time limit that counts the reading and keeps time back for the writing."""

from __future__ import annotations

import csv
import json
import time
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from test_rows_reports import named  # noqa: F401  (the fixture)

import faircert
import faircert.engines.rows.audit as engine
import faircert.results.rows as rows_result
from faircert import data
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.report import rows as report
from faircert.report.csv import spreadsheet_safe
from faircert.results.rows import RowsResult


def _cell_by_cell(result: RowsResult, path) -> None:
    """The rows CSV as one line per row, a Python call per cell (the format's definition)."""

    def cell(value) -> str:
        if value is None:
            return ""
        return spreadsheet_safe(value) if isinstance(value, str) else str(value)

    names = result.feature_names
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["row", "verdict", "method", "group", "label", "twin_label", "changed"]
            + [spreadsheet_safe(c) for n in names for c in (n, f"{n}_prime")]
        )
        for i in range(result.n_rows):
            twin, own = result.twins[i], result.rows[i]
            values = []
            for j, n in enumerate(names):
                values += [
                    cell(result.value_name(n, own[j])),
                    "" if twin is None else cell(result.value_name(n, twin[j])),
                ]
            writer.writerow(
                [i, result.verdicts[i], cell(result.methods[i]), cell(result.groups[i]), cell(result.labels[i])]
                + [cell(result.twin_labels[i]), cell(";".join(result.changed(i)))]
                + values
            )


def _odd_result() -> RowsResult:
    """Rows with every kind of cell: categories with commas, quotes and formula characters, codes
    that name no category, fractions, huge and missing values, negative numbers."""
    rows = np.array(
        [
            [0, 1.5, -3, 2],
            [1, np.nan, 7, 0],
            [2, 1e300, 2**60, 1],
            [5, -0.0, 0.25, 2],
            [1, 2.0, np.inf, 0],
        ]
    )
    twins = [None, None, [0, 2.0, 7, 1], [1, -1.5, 0.25, 2], None]
    return RowsResult(
        verdict="unfair",
        verdicts=["fair", "unknown", "unfair", "unfair", "unknown"],
        methods=["flip test", "cannot be evaluated: b: no value", "closed form", "search, then bounds", 'x, "y"'],
        twins=twins,
        labels=[1, None, 0, 1, 1],
        twin_labels=[None, None, 1, 0, None],
        flip_unfair=1,
        groups=["a,b", "=f", 'q"t', "a,b", "=f"],
        rows=rows,
        feature_names=["g", "x", "y,z", "h"],
        categories={"g": ["a,b", "=f", 'q"t'], "h": ["no", "yes", "-x"]},
        stats={"flip_rows": [False, False, True, False, False]},
    )


def test_the_block_writer_writes_what_the_per_cell_format_makes(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "CSV_BLOCK", 2)  # blocks end inside the rows
    result = _odd_result()
    report.write_rows_csv(result, tmp_path / "fast.csv")
    _cell_by_cell(result, tmp_path / "slow.csv")
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "slow.csv").read_bytes()
    table = list(csv.reader(open(tmp_path / "fast.csv", newline="")))
    assert table[3][6:9] == ["g;x;y,z", 'q"t', "a,b"]  # row 2 beside its twin, the changes named
    assert table[2][7] == "'=f" and table[1][13] == "'-x"  # made spreadsheet-safe
    assert [table[k][9] for k in (1, 2, 3, 4)] == ["1.5", "", str(int(1e300)), "0"]  # fraction, none, huge, -0
    assert table[2][2] == "cannot be evaluated: b: no value" and table[5][2] == 'x, "y"'


def test_the_block_writer_matches_on_an_audit(named, tmp_path, monkeypatch):  # noqa: F811
    _, result = named
    monkeypatch.setattr(report, "CSV_BLOCK", 7)
    report.write_rows_csv(result, tmp_path / "fast.csv")
    _cell_by_cell(result, tmp_path / "slow.csv")
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "slow.csv").read_bytes()


def test_the_json_summarises_a_large_audit_and_lists_all_when_asked(named, monkeypatch):  # noqa: F811
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("faircert").joinpath("schemas/rows.schema.json").read_text())
    _, result = named
    unfair = [i for i, v in enumerate(result.verdicts) if v == "unfair"]
    full = json.loads(result.to_json())
    assert full["listing"] == {"rows": "all", "unfair_listed": len(unfair)}
    assert full["row_verdicts"] == result.verdicts and [u["row"] for u in full["unfair"]] == unfair
    monkeypatch.setattr(rows_result, "LISTED_ROWS", 100)  # 200 rows: a large audit now
    monkeypatch.setattr(rows_result, "UNFAIR_SAMPLE", 3)
    short = json.loads(result.to_json())
    assert "row_verdicts" not in short and short["listing"] == {"rows": "summary", "unfair_listed": 3}
    assert [u["row"] for u in short["unfair"]] == unfair[:3] and short["unfair"] == full["unfair"][:3]
    assert short["counts"] == full["counts"] and short["by_group"] == full["by_group"]
    result.json_rows = "all"
    try:
        assert json.loads(result.to_json())["row_verdicts"] == result.verdicts
    finally:
        result.json_rows = "auto"
    for payload in (full, short):
        jsonschema.validate(payload, schema)


def test_the_command_writes_the_summary_with_its_timings(named, tmp_path):  # noqa: F811
    df, _ = named
    df.to_csv(tmp_path / "rows.csv", index=False)
    import joblib
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    label = (df["age"] + 10 * (df["sex"] == "Male") > 22).astype(int)
    encode = ColumnTransformer([("text", OneHotEncoder(), ["sex", "race", "job"])], remainder="passthrough")
    model = tmp_path / "model.pkl"
    joblib.dump(Pipeline([("prep", encode), ("clf", LogisticRegression())]).fit(df, label), model)
    out = tmp_path / "out.json"
    args = ["audit", str(model), str(tmp_path / "rows.csv"), "--trust-pickle", "--protected", "sex,race"]
    args += ["--epsilon", "age=2", "--workers", "1"]
    args += ["--quiet", "--json", str(out), "--rows-csv", str(tmp_path / "out.csv"), "--json-rows", "summary"]
    code = main(args)
    answer = json.loads(out.read_text())
    assert code == 1 and answer["listing"]["rows"] == "summary" and "row_verdicts" not in answer
    assert answer["listing"]["unfair_listed"] == min(answer["counts"]["unfair"], 100)
    timings = answer["timings"]
    assert set(timings) == {"read_s", "audit_s", "finish_reserve_s", "write_s"}
    assert all(v >= 0 for v in timings.values()) and timings["finish_reserve_s"] == pytest.approx(200 * 4e-6)
    assert len(pd.read_csv(tmp_path / "out.csv")) == 200


def test_the_time_limit_counts_the_reading(monkeypatch):
    import faircert.requests.audit as request

    frame = pd.DataFrame({"s": np.arange(300) % 2, "a": np.arange(300) % 41})
    model = LinearModel(np.array([1.0, 0.1]), -2.0, (ColumnEncoding("s"), ColumnEncoding("a")))
    read = request.read_table

    def slow(rows, **options):  # a large file takes this long to read
        time.sleep(0.6)
        return read(rows, **options)

    monkeypatch.setattr(request, "read_table", slow)
    result = faircert.audit(model, frame, protected="s", epsilon={"a": 1}, time_limit=0.5, workers=1)
    assert result.stopped == "time limit" and result.timings["read_s"] >= 0.6
    assert result.counts()["unknown"] == 300 and set(result.methods) == {"time limit"}
    result = faircert.audit(model, frame, protected="s", epsilon={"a": 1}, time_limit=30, workers=1)
    assert result.stopped == "done" and 0.6 <= result.timings["read_s"] < 30 and result.counts()["unknown"] == 0


def test_the_command_lines_time_limit_counts_from_its_start(monkeypatch):
    """The first time limit after `start_command_clock` counts the command line's imports and
    parsing; any later one (a further model of `compare`) counts from its own start."""
    from faircert import limits

    clock = iter([100.0, 200.0, 300.0])
    monkeypatch.setattr(limits.time, "monotonic", lambda: next(clock))
    limits.start_command_clock()  # at 100: the command line begins
    with limits.time_budget(10):  # entered later, after the imports, without reading the clock
        assert limits.command_deadline() == 110.0
    with limits.time_budget(10):  # at 200: from its own start
        assert limits.command_deadline() == 210.0
    with limits.time_budget(None):
        assert limits.command_deadline() is None


def test_the_time_kept_back_for_writing_grows_with_the_rows_up_to_a_share():
    assert engine._reserve(None, 10**6) == 0.0
    assert engine._reserve(60, 10**6) == pytest.approx(10**6 * engine.FINISH_ROW_S)
    assert engine._reserve(2, 10**6) == pytest.approx(engine.FINISH_SHARE * 2)
    assert engine._reserve(10, 100) == pytest.approx(100 * engine.FINISH_ROW_S)


def test_a_csv_read_in_blocks_gives_the_same_domain_and_codes(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    n = 1000
    frame = pd.DataFrame(
        {
            "job": rng.choice(["clerk", "driver, night", 'say "hi"', "=sum"], n),
            "age": rng.integers(17, 90, n),
            "pay": rng.normal(0, 1, n).round(3),
            "sex": rng.choice(["F", "M"], n),
            "late": rng.choice(["x", "y", "zz"], n),  # a category seen only late in the file
        }
    )
    frame.loc[:899, "late"] = "x"
    frame.loc[5, "job"] = None
    # numbers in the first blocks and text later (pandas reads the column whole as text: "07" stays
    # "07"), and a text column with no value in a whole block
    frame["code"] = [f"{k % 9:02d}" for k in range(500)] + [f"c{k % 4}" for k in range(500)]
    frame["gap"] = [None] * 200 + list(rng.choice(["u", "v"], n - 200))
    frame.to_csv(tmp_path / "rows.csv", index=False)
    monkeypatch.setattr(data, "BLOCK_ROWS", 64)
    whole, blocks = data.read_table(tmp_path / "rows.csv"), data.read_table(tmp_path / "rows.csv", compact=True)
    assert isinstance(blocks["job"].dtype, pd.CategoricalDtype) and len(blocks) == n
    domain = data.infer_domain(whole, ["sex"])
    assert data.infer_domain(blocks, ["sex"]) == domain
    assert domain.features[4].categories == ("x", "y", "zz")
    assert domain.features[5].categories == tuple(f"{k:02d}" for k in range(9)) + ("c0", "c1", "c2", "c3")
    one, two = data.encode_table(whole, domain, unreadable=True), data.encode_table(blocks, domain, unreadable=True)
    assert np.array_equal(one, two, equal_nan=True) and np.isnan(one[5, 0]) and np.isnan(one[:, 0]).sum() == 1


def test_the_audit_of_a_csv_file_is_the_audit_of_its_frame(named, tmp_path):  # noqa: F811
    df, result = named
    df.to_csv(tmp_path / "rows.csv", index=False)
    model = LinearModel(
        np.array([1.0, 0.1, -0.4, 0.3]),
        -2.0,
        (
            ColumnEncoding("sex", "onehot", ("Male",)),
            ColumnEncoding("age"),
            ColumnEncoding("race", "onehot", ("B",)),
            ColumnEncoding("job", "onehot", ("driver",)),
        ),
    )
    again = faircert.audit(model, tmp_path / "rows.csv", protected="sex,race", epsilon={"age": 2})
    assert again.verdicts == result.verdicts and again.twins == result.twins and again.methods == result.methods


def test_the_rows_at_fault_are_found_block_by_block_as_feature_by_feature(monkeypatch):
    dom = Domain(
        (
            Feature("s", "binary", 0, 1, True),
            Feature("c", "categorical", 0, 2, categories=("a", "b", "c")),
            Feature("n", "integer", 0, 9),
            Feature("r", "real", 0.0, 1.0),
        )
    )
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.integers(0, 2, 500), rng.integers(0, 3, 500), rng.integers(0, 10, 500), rng.random(500)])
    X = X.astype(float)
    X[3, 0], X[10, 1], X[11, 1], X[20, 2], X[30, 3], X[40, 3], X[41, 2] = 2, 3, 0.5, 4.5, np.nan, 1e300, 99
    monkeypatch.setattr(engine, "CHECK_BLOCK", 16)
    found = engine.unreadable(dom, (0,), X)
    assert found == engine._reasons(dom, (0,), X)
    assert sorted(found) == [3, 10, 11, 20, 30, 40]  # 41: an integer outside the domain is read


def test_compact_codes_are_float32_only_where_every_value_is_one():
    frame = pd.DataFrame({"sex": ["F", "M", None, "M"], "age": [17, 2**24, 40, 90], "pay": [0.5, 1.25, -3.0, 8.0]})
    domain = data.infer_domain(frame.dropna(), ["sex"])
    small = data.encode_table(frame, domain, unreadable=True, compact=True)
    assert small.dtype == np.float32
    assert np.array_equal(small, data.encode_table(frame, domain, unreadable=True), equal_nan=True)
    frame.loc[1, "age"] = 2**24 + 1  # float32 would round it to 2**24: the table stays float64
    assert data.encode_table(frame, domain, unreadable=True, compact=True).dtype == np.float64
    frame.loc[1, "age"], frame.loc[0, "pay"] = 30, 0.1  # 0.1 is no float32
    wide = data.encode_table(frame, domain, unreadable=True, compact=True)
    assert wide.dtype == np.float64 and wide[0, 2] == 0.1


def test_an_audit_of_float32_rows_is_the_audit_of_the_same_rows_in_float64(monkeypatch):
    import faircert.requests.audit as request

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"s": rng.integers(0, 2, 400), "a": rng.integers(0, 60, 400), "b": rng.integers(-9, 9, 400)})
    model = LinearModel(
        np.array([0.9, 0.05, -0.2]), -2.0, (ColumnEncoding("s"), ColumnEncoding("a"), ColumnEncoding("b"))
    )
    ask = dict(protected="s", epsilon={"a": 3, "b": 1}, workers=1)
    compact = faircert.audit(model, frame, **ask)  # read through the input stage: float32 codes
    assert compact.rows.dtype == np.float32
    encode = request.encode_table
    monkeypatch.setattr(request, "encode_table", lambda *a, **k: encode(*a, **(k | {"compact": False})))
    wide = faircert.audit(model, frame, **ask)
    assert wide.rows.dtype == np.float64
    assert compact.verdicts == wide.verdicts and compact.counts() == wide.counts()
    assert [None if t is None else list(t) for t in compact.twins] == [
        None if t is None else list(t) for t in wide.twins
    ]
    assert 0 < compact.counts()["unfair"] < 400
