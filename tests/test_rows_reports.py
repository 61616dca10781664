"""The per-row audit's reports: twins readable in the CSV, the JSON and the HTML, and every
unknown row listed with its reason and what would decide it."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from test_rows import DOM, EPS, _rows, _trees

import faircert
from faircert.engines.registry import find_engine
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.options import AuditOptions
from faircert.properties import RowAudit, individual_fairness
from faircert.report.rows import print_rows, render_rows, unknown_hint, write_rows_csv


@pytest.fixture(scope="module")
def named():
    """An audit of rows with named categories: sex and race protected, age moving by 2."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "sex": rng.choice(["Female", "Male"], 200),
            "age": rng.integers(0, 30, 200),
            "race": rng.choice(["A", "B", "C"], 200),
            "job": rng.choice(["clerk", "driver"], 200),
        }
    )
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
    result = faircert.audit(model, df, protected="sex,race", epsilon={"age": 2})
    assert result.counts()["unfair"] > 10
    return df, result


def test_the_csv_carries_each_row_beside_its_twin_with_the_changes_named(named, tmp_path):
    df, result = named
    write_rows_csv(result, tmp_path / "rows.csv")
    table = pd.read_csv(tmp_path / "rows.csv", keep_default_na=False)
    assert list(table.columns[:7]) == ["row", "verdict", "method", "group", "label", "twin_label", "changed"]
    assert list(table.columns[7:]) == [c for n in df.columns for c in (n, f"{n}_prime")]
    for n in df.columns:  # the row's own values, by name, in every line
        assert table[n].astype(str).tolist() == df[n].astype(str).tolist()
    for _, line in table.iterrows():
        changed = [n for n in df.columns if line[f"{n}_prime"] != "" and str(line[n]) != str(line[f"{n}_prime"])]
        assert line["changed"] == ";".join(changed)
        if line["verdict"] == "unfair":
            assert set(changed) & {"sex", "race"} and set(changed) <= {"sex", "race", "age"}
            assert abs(int(line["age"]) - int(line["age_prime"])) <= 2
        else:
            assert line["changed"] == "" and all(line[f"{n}_prime"] == "" for n in df.columns)


def test_the_json_names_the_twins_categories_and_changes(named):
    jsonschema = pytest.importorskip("jsonschema")
    df, result = named
    payload = json.loads(result.to_json())
    schema = json.loads(resources.files("faircert").joinpath("schemas/rows.schema.json").read_text())
    jsonschema.validate(payload, schema)
    assert payload["unfair"] and payload["unknown_reasons"] == {}
    for entry in payload["unfair"]:
        row = df.iloc[entry["row"]]
        twin = dict(zip(df.columns, entry["twin"]))
        assert twin["sex"] in ("Female", "Male") and twin["race"] in ("A", "B", "C") and twin["job"] == row["job"]
        assert entry["changes"] == {
            n: [row[n].item() if hasattr(row[n], "item") else row[n], twin[n]] for n in df.columns if twin[n] != row[n]
        }
        assert entry["label"] != entry["twin_label"]


class _Cells(HTMLParser):
    """The tables of a page: each a list of rows of cell texts, with each table's class."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((dict(attrs).get("class", ""), []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_the_html_shows_each_decision_and_change_within_the_page_width(named):
    df, result = named
    page = render_rows(result)
    parser = _Cells()
    parser.feed(page)
    (kind, lines), *_ = [t for t in parser.tables if t[1] and t[1][0][0] == "row"]
    assert kind == "rows" and "class='wide'" not in page  # a fixed layout that wraps: no scrolling sideways
    assert re.search(r"table\.rows\{table-layout:fixed;width:100%\}", page) and "max-width:960px" in page
    assert lines[0] == ["row", "group", "decision (row → twin)", "what the twin changes", "the row's other values"]
    unfair = [i for i, v in enumerate(result.verdicts) if v == "unfair"]
    assert [int(line[0]) for line in lines[1:]] == unfair[:200]
    for line in lines[1:]:
        i = int(line[0])
        row, twin = df.iloc[i], dict(zip(df.columns, json.loads(result.to_json())["unfair"][unfair.index(i)]["twin"]))
        assert line[2] == f"{result.labels[i]} → {result.twin_labels[i]}"
        for n in df.columns:
            if twin[n] != row[n]:
                assert f"{n}: {row[n]} → {twin[n]}" in line[3]
            else:
                assert f"{n}={row[n]}" in line[4]


def test_every_unknown_row_is_listed_with_its_reason_and_what_decides_it():
    ir = _trees()
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _rows(80, seed=9))
    result = find_engine(ir, question).run(ir, question, AuditOptions(max_cells=1), None)
    unknown = [i for i, v in enumerate(result.verdicts) if v == "unknown"]
    reason = "too many cells: searched, not proven (raise max_cells, now 1)"
    assert unknown and result.unknown_reasons() == {reason: len(unknown)}
    assert unknown_hint(reason) == "a larger max_cells (now 1)"
    parser = _Cells()
    parser.feed(render_rows(result))
    summary = next(lines for _, lines in parser.tables if lines[0][0] == "reason")
    assert summary[1:] == [[reason, f"{len(unknown)}", "a larger max_cells (now 1)"]]
    listed = next(lines for _, lines in parser.tables if lines[0][:3] == ["row", "group", "reason"])
    assert [int(line[0]) for line in listed[1:]] == unknown and {line[2] for line in listed[1:]} == {reason}
    assert json.loads(result.to_json())["unknown_reasons"] == {reason: len(unknown)}


@pytest.mark.parametrize(
    "reason, hint",
    [
        ("time limit", "a longer time limit"),
        ("memory limit", "a larger memory limit"),
        ("milp undecided (raise milp_seconds, now 10 s)", "a larger milp_seconds (now 10 s)"),
        ("cannot be evaluated: c: no value", "a value the model reads"),
    ],
)
def test_each_reason_names_what_decides_more(reason, hint):
    assert unknown_hint(reason).startswith(hint)


def test_the_console_names_what_decides_the_unknown_rows(capsys):
    ir = _trees()
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _rows(80, seed=9))
    print_rows(find_engine(ir, question).run(ir, question, AuditOptions(max_cells=1), None))
    err = " ".join(capsys.readouterr().err.split())
    reason = "too many cells: searched, not proven (raise max_cells, now 1)"
    assert f"rows: {reason} (what decides more: a larger max_cells (now 1))" in err


def test_the_html_links_the_explain_page_of_the_same_rows(tmp_path):
    """`faircert audit ... --html rows.html --explain-html explain.html`: the explain page of the
    audited rows is written (the rules `explain` finds on them), and the per-row page links it."""
    from faircert.cli import main
    from faircert.report.explain import render_explain
    from faircert.subgroups import explain_rows

    rng = np.random.default_rng(0)
    n = 300
    rows = pd.DataFrame({"age": rng.integers(18, 70, n), "sex": rng.integers(0, 2, n), "hours": rng.integers(1, 60, n)})
    rows.to_csv(tmp_path / "rows.csv", index=False)
    model = {"weights": [0.05, 0.8, 0.03], "intercept": -3.0, "features": ["age", "sex", "hours"]}
    (tmp_path / "lin.json").write_text(json.dumps(model))
    argv = ["audit", str(tmp_path / "lin.json"), str(tmp_path / "rows.csv"), "--protected", "sex", "--quiet"]
    pages = tmp_path / "report"
    (pages / "the rules").mkdir(parents=True)
    code = main(
        argv + ["--html", str(pages / "rows.html"), "--explain-html", str(pages / "the rules" / "explain.html")]
    )
    assert code == 1
    rows_page = (pages / "rows.html").read_text()
    assert '<a href="the%20rules/explain.html">the explain page</a>' in rows_page
    # the page linked is the explain page of these rows
    explained = explain_rows(faircert.audit(str(tmp_path / "lin.json"), rows, protected="sex"), rows)
    assert explained.rules and explained.unfair_rows > 0
    written = (pages / "the rules" / "explain.html").read_text()
    expected = render_explain(explained)
    for rule in explained.rules:
        assert str(rule).replace("<", "&lt;") in written and str(rule).replace("<", "&lt;") in expected
    # without --explain-html, no link
    assert main(argv + ["--html", str(pages / "alone.html")]) == 1
    assert "explain page" not in (pages / "alone.html").read_text()
