"""`report.render`: one renderer per result family, found by the result's type; the number
formats of `report.format`; the one progress line every command shows."""

from __future__ import annotations

import json

import pytest

from faircert.progress import ProgressEvent
from faircert.report import format as fmt
from faircert.report.render import Outputs, render, renderer
from faircert.results import Result
from faircert.results.verify import Counterexample, StatisticalEstimate


def _result(**kw) -> Result:
    base = dict(
        verdict="unfair",
        certified=0.9,
        falsified=0.05,
        undecided=0.05,
        domain_size=624.0,
        counterexamples=[Counterexample([1, 2, 0], [1, 2, 1], 0.5, -0.25)],
        statistical=StatisticalEstimate(0.07, 0.06, 0.08, 0.99, 1000),
        engine="network-boxes",
        model="m.nnet",
        protected=["sex"],
        feature_names=["age", "inc", "sex"],
    )
    return Result(**(base | kw))


def test_render_writes_the_json_csv_and_html_asked_for(tmp_path, capsys):
    outputs = Outputs(
        json=str(tmp_path / "r.json"),
        html=str(tmp_path / "r.html"),
        csv={"counterexamples": str(tmp_path / "c.csv")},
        console=False,
    )
    render(_result(), outputs)
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "unfair"
    assert (tmp_path / "c.csv").read_text().splitlines()[1] == "1,2,0,1,2,1,0.5,-0.25"
    assert "90.0000 %" in (tmp_path / "r.html").read_text()
    assert capsys.readouterr().err == ""
    render(_result(), Outputs(json="-", console=False))
    assert json.loads(capsys.readouterr().out)["certified"] == 0.9


def test_the_renderer_is_found_by_type_subclasses_included():
    class Special(Result):
        pass

    special = Special(**{**_result().__dict__})
    assert renderer(special) is not None and renderer(special).csv.keys() == renderer(_result()).csv.keys()
    assert "<svg" in special._repr_html_()  # the notebook cell's fragment, through the same lookup
    with pytest.raises(TypeError, match="no report for a dict"):
        renderer({})


def test_number_formats():
    assert fmt.interval(0.25, 0.25) == "0.2500" and fmt.interval(0.25, 0.5) == "[0.2500, 0.5000]"
    assert fmt.interval(0.123, 0.1234, 2) == "0.12"
    assert fmt.bounds(0.25, 0.25) == "[0.250000, 0.250000]"
    assert fmt.percent(0.5) == "50.0000 %" and fmt.ratio(None) == "-" and fmt.ratio(0.8) == "0.800"
    assert fmt.seconds(12.4) == "12s" and fmt.seconds(185) == "3m05s"
    assert fmt.statistical(StatisticalEstimate(0.07, 0.06, 0.08, 0.99, 1000)) == (
        "7.0000 % [6.0000, 8.0000], 1,000 samples"
    )


def test_the_progress_line_shows_the_decided_share_where_there_is_one():
    from faircert.report.console import ProgressLine

    class Bar:
        def __init__(self):
            self.fields: dict = {}

        def update(self, task, **fields):
            self.fields |= fields

    bar = Bar()
    line = ProgressLine(bar, 0)  # type: ignore[arg-type]
    line(ProgressEvent(1.0, boxes=1234))
    assert bar.fields == {"detail": "1,234 boxes"}  # no decided share: a spinner, no bar
    line.last = 0.0
    line(ProgressEvent(2.0, certified=0.5, falsified=0.25, rows=10, rows_done=4))
    assert bar.fields["completed"] == 75.0 and bar.fields["share"] == " 75.00% decided"
    assert bar.fields["detail"] == "fair 50.00% unfair 25.00% | 4/10 rows"
    line(ProgressEvent(2.01, certified=1.0))  # within a tenth of a second: not redrawn
    assert bar.fields["completed"] == 75.0
