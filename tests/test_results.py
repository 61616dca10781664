import json

import numpy as np
import pytest

from faircert.report.verify import write_counterexamples
from faircert.results import Counterexample, Result, StatisticalEstimate

SCHEMA_KEYS = {
    "verdict",
    "certified",
    "falsified",
    "undecided",
    "domain_size",
    "counterexamples",
    "statistical",
    "elapsed_s",
    "engine",
    "model",
    "protected",
    "epsilon",
}


def make_result(**kw):
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
        epsilon={"age": 1.0},
        feature_names=["age", "inc", "sex"],
    )
    base.update(kw)
    return Result(**base)


def test_json_schema_keys_and_values():
    data = json.loads(make_result(certified=np.float64(0.9)).to_json())
    assert SCHEMA_KEYS <= set(data)
    assert data["verdict"] == "unfair" and data["vnncomp"] == "sat"
    assert data["counterexamples"][0] == {"x": [1, 2, 0], "x_prime": [1, 2, 1], "output": 0.5, "output_prime": -0.25}
    assert data["statistical"]["samples"] == 1000
    assert "measure_lower" not in data


def test_every_result_json_names_its_schema_and_faircert_version():
    import faircert
    from faircert.results import SCHEMA_VERSION, GroupResult, ProgramResult

    group = GroupResult(
        verdict="fair",
        groups=[],
        metrics={},
        most_favoured="",
        least_favoured="",
        threshold=0.8,
        engine="subset-sum",
        population="independent",
    )
    program = ProgramResult(
        verdict="unknown",
        ratio_low=0.5,
        ratio_high=float("inf"),
        probabilities={},
        epsilon=0.1,
        method="sound",
        guarantee="sound",
        elapsed_s=0.0,
    )
    for result in (make_result(), group, program):
        data = json.loads(result.to_json())
        assert list(data)[:2] == ["schema_version", "faircert_version"]
        assert (data["schema_version"], data["faircert_version"]) == (SCHEMA_VERSION, faircert.__version__)
    assert json.loads(program.to_json())["ratio"]["high"] == "inf"


def test_exit_codes_and_text():
    assert make_result(verdict="fair").exit_code == 0
    assert make_result().exit_code == 1
    assert make_result(verdict="unknown").exit_code == 2
    text = str(make_result())
    assert "certified fair: 90.0000%" in text and "99% CI" in text
    with pytest.raises(ValueError):
        make_result(verdict="maybe")


def test_counterexample_csv(tmp_path):
    path = tmp_path / "cex.csv"
    assert write_counterexamples(make_result(), path) == 1
    lines = path.read_text().splitlines()
    assert lines[0] == "age,inc,sex,age_prime,inc_prime,sex_prime,output,output_prime"
    assert lines[1] == "1,2,0,1,2,1,0.5,-0.25"


def test_html_report_is_self_contained(tmp_path):
    from faircert.report.render import Outputs, render

    path = tmp_path / "r.html"
    render(make_result(), Outputs(html=str(path), console=False))
    text = path.read_text()
    assert "<svg" in text and "90.0000 %" in text and "<b>0 &rarr; 1</b>" in text
    assert "http" not in text and "<script" not in text
