"""HTML reports of every result type: self-contained pages (inline SVG, no scripts), the same
report inline in Jupyter (`_repr_html_`), and `--html` on group and program."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from program_examples import FIG1

import faircert
from faircert.cli import main
from faircert.models.linear import ColumnEncoding, LinearModel


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


def _tags(page: str) -> list[str]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


@pytest.fixture()
def data():
    rng = np.random.default_rng(2)
    n = 500
    df = pd.DataFrame(
        {"sex": rng.choice(["Female", "Male"], n), "race": rng.choice(["A", "B"], n), "age": rng.integers(0, 5, n)}
    )
    df["income"] = np.where(rng.random(n) < 0.3 + 0.3 * (df.sex == "Male"), "high", "low")
    model = LinearModel(
        np.array([1.0, -0.5, 0.35]),
        -0.95,
        (ColumnEncoding("sex", "onehot", ("Male",)), ColumnEncoding("race", "onehot", ("B",)), ColumnEncoding("age")),
    )
    return df, model


def test_group_report_draws_groups_threshold_and_influence(data):
    from faircert.report.group_html import render_group

    df, model = data
    r = faircert.group(
        model, df, protected="sex", label="income", metrics="di,sp,eo", influence=True, population="bayesnet"
    )
    page = render_group(r)
    tags = _tags(page)
    assert "script" not in tags and tags.count("svg") == 2  # rates and influence
    assert "sex=Female" in page and "sex=Male" in page and "stroke-dasharray" in page
    assert "numbers under the population" in page and "| Y=high" in page
    fragment = r._repr_html_()
    assert "<body" not in fragment and "sex=Male" in fragment


def test_long_group_names_are_never_clipped():
    import re

    from faircert.report.group_html import CHAR, render_group
    from faircert.results import GroupProbability, GroupResult

    names = [{"race": "Amer-Indian-Eskimo-and-a-much-longer-category", "sex": "Female"}, {"race": "B", "sex": "Male"}]
    r = GroupResult.build(
        [GroupProbability(n, 0.1 + 0.3 * i, 0.2 + 0.3 * i, 0.5) for i, n in enumerate(names)],
        engine="test",
        population="test",
    )
    page = render_group(r)
    longest = max(len(GroupProbability(n, 0, 0, 1).name) for n in names)
    label_x = [float(x) for x in re.findall(r'<text x="([0-9.]+)" y="[0-9.]+" font-size="12" text-anchor="end"', page)]
    assert label_x and min(label_x) >= CHAR * longest  # the right-aligned labels start at or after x = 0
    assert "size_high" not in page


def test_every_result_has_an_inline_report(data, tmp_path):
    df, model = data
    verified = faircert.verify(model, df, protected="sex")
    page = verified._repr_html_()
    assert "individual fairness" in page and ("Female &rarr; Male" in page or "Male &rarr; Female" in page)
    # the counterexamples on the two features they concentrate on (race and age; sex is protected)
    assert _tags(page).count("svg") == 2 and "Where the counterexamples lie" in page
    assert verified.feature_ranges["age"] == [0, 4]
    (tmp_path / "p.fr").write_text(FIG1)
    program = faircert.verify_program(tmp_path / "p.fr", epsilon=0.1)
    assert "program fairness" in program._repr_html_() and "ratio" in program._repr_html_()


def test_group_and_program_write_html_from_the_cli(data, tmp_path, capsys):
    df, model = data
    import json

    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "m.json").write_text(json.dumps(model.to_dict()))
    assert (
        main(
            [
                "group",
                str(tmp_path / "m.json"),
                "--data",
                str(tmp_path / "d.csv"),
                "--protected",
                "sex",
                "--html",
                str(tmp_path / "g.html"),
                "--quiet",
            ]
        )
        == 1
    )
    assert "sex=Female" in (tmp_path / "g.html").read_text()
    (tmp_path / "p.fr").write_text(FIG1)
    assert (
        main(["program", str(tmp_path / "p.fr"), "--epsilon", "0.1", "--html", str(tmp_path / "p.html"), "--quiet"])
        == 1
    )
    assert _tags((tmp_path / "p.html").read_text())[0] == "html"


def test_compare_an_original_and_a_mitigated_model(data, tmp_path, capsys):
    import json

    df, model = data
    mitigated = LinearModel(np.array([0.0, -0.5, 0.35]), -0.95, model.encoding)  # sex no longer counts
    c = faircert.compare({"original": model, "mitigated": mitigated}, df, "sex", population="empirical")
    frame = c.to_frame()
    assert list(frame.index) == ["original", "mitigated"]
    assert frame.loc["original", "verdict"] == "unfair" and frame.loc["mitigated", "verdict"] == "fair"
    assert frame.loc["mitigated", "di_low"] > frame.loc["original", "di_high"]
    assert c.verdict == "unfair" and c.exit_code == 1 and "mitigated" in c._repr_html_()
    text = str(c).splitlines()  # print() gives a table, not the dataclass
    assert text[0] == "verdict: unfair (worst of 2 models)" and text[1].startswith("  original: unfair  di [")
    assert text[2].startswith("  mitigated: fair") and "population: empirical" in text[2]
    df.to_csv(tmp_path / "d.csv", index=False)
    for name, m in (("a", model), ("b", mitigated)):
        (tmp_path / f"{name}.json").write_text(json.dumps(m.to_dict()))
    code = main(
        [
            "compare",
            str(tmp_path / "a.json"),
            str(tmp_path / "b.json"),
            "--data",
            str(tmp_path / "d.csv"),
            "--protected",
            "sex",
            "--population",
            "empirical",
            "--json",
            str(tmp_path / "c.json"),
            "--html",
            str(tmp_path / "c.html"),
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "group fairness compared" in err and "empirical" in err
    saved = json.loads((tmp_path / "c.json").read_text())
    assert [m["verdict"] for m in saved["models"]] == ["unfair", "fair"]
    assert _tags((tmp_path / "c.html").read_text()).count("svg") == 2


@pytest.mark.parametrize("kind,thresholds", [("ratio", [0.9]), ("parity", [0.9, 1 / 0.9]), ("difference", [0.1])])
def test_the_program_report_plots_the_decided_quantity_against_its_thresholds(kind, thresholds):
    """The ratio (or gap) interval with a dashed line at each threshold, placed on the chart's scale;
    then every probability's bounds."""
    import re

    from faircert.report.program import PLOT, render_program

    result = faircert.verify_program(FIG1, epsilon=0.1, kind=kind, time_limit=10)
    page = render_program(result)
    first = page[page.index("<h2>Decision</h2>") : page.index("<h2>Probabilities</h2>")]
    lines = [float(x) for x in re.findall(r'<line x1="([\d.]+)"[^>]*stroke-dasharray', first)]
    ticks = [float(t) for t in re.findall(r'text-anchor="middle">([\d.]+)<', first)]
    left = float(re.search(r'<line x1="([\d.]+)"', first).group(1))  # the axis' zero
    top = ticks[-1]
    pixel = top / PLOT  # positions are written to a tenth of a pixel
    assert len(lines) == len(thresholds)
    assert all(abs((x - left) * pixel - t) <= 0.06 * pixel for x, t in zip(lines, thresholds))
    bar = re.search(r'<rect x="([\d.]+)" y="[\d.-]+" width="([\d.]+)"', first)
    low, high = (result.ratio_low, result.ratio_high) if kind != "difference" else (None, None)
    if low is not None:
        assert abs(float(bar.group(1)) - (left + PLOT * low / top)) < 0.06
        assert abs(float(bar.group(2)) - PLOT * (high - low) / top) < 0.12
    assert page.count("<svg") == 2 and "target_given_sensitive" in page[page.index("<h2>Probabilities</h2>") :]
