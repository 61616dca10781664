"""Fuzzing `explain`'s options and the audit tables' protected lists (`group --audit-table`): every
malformed value ends in exit 3 and one error line on stderr (a value argparse cannot read also prints
the usage above it, as every command does), never a traceback; a value that is still valid gives the
answer the plain command gives.

The command runs in this process (`faircert.cli.main`) on a linear model and 300 rows, so that each
case takes a fraction of a second.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faircert.cli import MAX_MESSAGE, main

PREFIX = "faircert: error: "
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)

#: Option values besides random text: numbers out of range, not finite, huge, not numbers, empty,
#: lists where one value is asked, values that look like options.
HOSTILE_VALUES = [
    "",
    " ",
    "0",
    "-1",
    "1",
    "0.5",
    "1.0",
    "2",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "9" * 40,
    "0x10",
    "1,2",
    "=1",
    "x",
    "--",
    "sex",
    "\u00e9",
    "1 2",
]
#: Protected lists besides random text: empty, only commas, unknown, twice, the label, a numeric
#: column, a name padded with spaces.
PROTECTED = ["", ",", ",,", "nope", "sex,nope", "sex,sex", " sex , sex ", "sex,", ",sex", "label", "hours", "SEX"]


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A linear model, 300 rows (with a label column), the same rows with empty protected cells (a
    few, and all), and the plain command's answers."""
    folder = tmp_path_factory.mktemp("explain")
    rng = np.random.default_rng(0)
    n = 300
    age, sex, hours = rng.integers(18, 70, n), rng.integers(0, 2, n), rng.integers(1, 60, n)
    label = (age / 50 + hours / 60 + 0.3 * sex + rng.normal(0, 0.3, n) > 1.4).astype(int)
    data = pd.DataFrame({"age": age, "sex": sex, "hours": hours, "label": label})
    data.to_csv(folder / "data.csv", index=False)
    data.assign(sex=data.sex.where(data.index >= 20)).to_csv(folder / "some_empty.csv", index=False)
    data.assign(sex=np.nan).to_csv(folder / "all_empty.csv", index=False)
    model = {"weights": [0.05, 0.8, 0.03], "intercept": -3.0, "features": ["age", "sex", "hours"]}
    (folder / "lin.json").write_text(json.dumps(model))
    base = ["explain", str(folder / "lin.json"), "--data", str(folder / "data.csv"), "--protected", "sex"]
    assert main(base + ["--quiet", "--json", str(folder / "plain.json")]) == 1
    plain = json.loads((folder / "plain.json").read_text())
    assert 0 < plain["unfair_rows"] < n and plain["rules"]
    return SimpleNamespace(folder=folder, model=str(folder / "lin.json"), base=base, plain=plain)


def _cli(capsys, argv: list[str]) -> tuple[int, str]:
    """Run the command: no traceback, exit 0-3, and for exit 3 one error line (after argparse's
    usage, where the value did not parse)."""
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 1, 2, 3), f"exit {code}: {err[-3000:]}"
    if code == 3:
        lines = err.splitlines()
        errors = [line for line in lines if line.startswith(PREFIX)]
        assert len(errors) == 1 and lines[-1] == errors[0], lines[:8]
        assert len(lines) == 1 or lines[0].startswith("usage: faircert"), lines[:8]
        assert len(errors[0]) <= len(PREFIX) + MAX_MESSAGE + 40
    return code, err


def _explain(capsys, case, option: str, value: str, folder) -> tuple[int, dict | None]:
    out = folder / "out.json"
    out.unlink(missing_ok=True)
    code, _ = _cli(capsys, [*case.base, f"{option}={value}", "--quiet", "--json", str(out)])
    return code, json.loads(out.read_text()) if code != 3 else None


OPTIONS = ["--max-rules", "--min-lift", "--confidence", "--seed", "--epsilon", "--time-limit"]


def _valid(option: str, value: str) -> bool:
    """Whether `value` is one the option takes (as the command documents it; read as argparse
    reads it, by Python's int and float)."""
    try:
        if option in ("--max-rules", "--seed"):
            number = int(value)
            return number >= 1 if option == "--max-rules" else number >= 0
        number = float(value)
    except ValueError:
        return False
    if option == "--min-lift":
        return number >= 1
    if option == "--confidence":
        return 0.5 <= number < 1
    if option == "--time-limit":
        return 0 < number < float("inf")
    return True


@FAST
@given(
    option=st.sampled_from(OPTIONS),
    value=st.one_of(
        st.sampled_from(HOSTILE_VALUES),
        st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=20),
    ),
)
def test_fuzz_explain_options(capsys, case, tmp_path_factory, option, value):
    code, answer = _explain(capsys, case, option, value, tmp_path_factory.mktemp("opt"))
    if option == "--epsilon":  # NAME=VALUE lists: the error contract alone
        return
    assert (code == 3) != _valid(option, value), (option, value, code)
    if code == 3:
        return
    if option in ("--max-rules", "--min-lift", "--confidence", "--seed"):
        # these options only read the verdicts: the audit's counts are the plain command's
        assert answer["unfair_rows"] == case.plain["unfair_rows"] and answer["rows"] == case.plain["rows"]
    if option == "--max-rules":
        assert len(answer["rules"]) <= int(value)
    if option == "--confidence":
        assert answer["unfair_rate"]["confidence"] == pytest.approx(float(value))


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-rules", "0", "max_rules must be a positive integer"),
        ("--max-rules", "-3", "max_rules must be a positive integer"),
        ("--max-rules", "x", "invalid int value"),
        ("--min-lift", "0.5", "min_lift must be at least 1"),
        ("--min-lift", "nan", "min_lift must be at least 1"),
        ("--confidence", "1", "confidence must be in [0.5, 1)"),
        ("--confidence", "nan", "confidence must be in [0.5, 1)"),
        ("--seed", "-1", "seed must be an integer >= 0"),
        ("--epsilon", "age=", "expected a number"),
        ("--epsilon", "nope=1", "unknown feature 'nope'"),
        ("--epsilon", "age=nan", "must be a finite number >= 0"),
        ("--protected", "", "no protected feature given"),
        ("--protected", ",", "no protected feature given"),
        ("--protected", "nope", "unknown feature 'nope'"),
    ],
)
def test_malformed_explain_options_are_one_line(capsys, case, option, value, message):
    argv = [*case.base, f"{option}={value}", "--quiet"]
    code, err = _cli(capsys, argv)
    assert code == 3 and message in err.splitlines()[-1]


def _audit_table(capsys, case, protected: str, data: str = "data.csv") -> tuple[int, dict | None]:
    out = case.folder / "group.json"
    out.unlink(missing_ok=True)
    argv = ["group", case.model, "--data", str(case.folder / data), f"--protected={protected}", "--audit-table"]
    code, err = _cli(capsys, [*argv, "--quiet", "--json", str(out)])
    return code, (json.loads(out.read_text())["audit_tables"] if code != 3 else {"error": err})


@pytest.mark.parametrize(
    ("protected", "message"),
    [
        ("", "no protected attribute given"),
        (",", "no protected attribute given"),
        ("nope", "unknown column 'nope'"),
        ("sex,nope", "unknown column 'nope'"),
        ("sex,sex", "named more than once: 'sex'"),
        (" sex , sex ", "named more than once: 'sex'"),
        ("sex,age", "protected column 'age' is continuous"),
    ],
)
def test_bad_protected_lists_of_an_audit_table_are_one_line(capsys, case, protected, message):
    code, answer = _audit_table(capsys, case, protected)
    assert code == 3 and message in answer["error"]


def test_empty_protected_cells_are_counted_apart_or_refused_in_one_line(capsys, case):
    """A few empty cells: counted apart, the others' counts those of the full rows; every cell empty:
    one error line."""
    code, tables = _audit_table(capsys, case, "sex", "some_empty.csv")
    assert code in (0, 1)
    (table,) = tables["tables"]
    assert table["missing"] == 20 and sum(c["count"] for c in table["cells"]) == 280
    code, answer = _audit_table(capsys, case, "sex", "all_empty.csv")
    assert code == 3 and "no data rows without missing values" in answer["error"]
    code, err = _cli(capsys, ["explain", case.model, "--data", str(case.folder / "all_empty.csv"), "--protected=sex"])
    assert code == 3 and "column 'sex' has no values" in err


@FAST
@given(
    protected=st.one_of(
        st.sampled_from(PROTECTED),
        st.lists(st.sampled_from(["sex", "age", "hours", "label", "nope", "", " "]), max_size=4).map(",".join),
        st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=20),
    )
)
def test_fuzz_audit_table_protected_lists(capsys, case, protected):
    code, tables = _audit_table(capsys, case, protected)
    if code == 3:
        return
    names = [n.strip() for n in protected.split(",") if n.strip()]
    assert names and len(set(names)) == len(names) and set(names) <= {"sex", "label"}, protected
    # every table's counts add up to the rows
    for table in tables["tables"]:
        assert sum(c["count"] for c in table["cells"]) + table["missing"] == 300


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--population=uniform", "--samples=3"], "samples must be an integer of at least 20"),
        (["--population=uniform", "--samples=x"], "invalid int value"),
        (["--population=everyone"], "invalid choice"),
        (["--population=bayesnet", "--learn", "max-bins=x"], "max-bins takes an integer"),
        (["--population=bayesnet", "--learn", "bin-bounds"], "expected KEY=VALUE"),
        (["--population=independent", "--learn", "score=bic"], "for population 'bayesnet' only"),
        (["--population=bayesnet", "--epsilon-rate=0.1"], "answered with epsilon 0"),
        (["--population="], "invalid choice"),
    ],
)
def test_malformed_population_options_are_one_line(capsys, case, options, message):
    code, err = _cli(capsys, [*case.base, *options, "--quiet"])
    assert code == 3 and message in err.splitlines()[-1]
