"""The program language: safe parsing, clear errors with file:line:column, the benchmark files."""

from pathlib import Path

import pytest

from faircert.models.program import (
    Draw,
    Gaussian,
    If,
    ProgramError,
    Step,
    load_program,
    parse_expression,
    parse_program,
)

FAIRSQUARE = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "programs" / "fairsquare"


def test_parses_assignments_draws_ifs_and_annotations():
    prog = parse_program(
        "def popModel():\n"
        "    s = step([(0,1,0.3), (1,2,0.7)])\n"
        "    x = gaussian(1, 4)\n"
        "    if s < 1:\n"
        "        x = x + 2\n"
        "    elif x > 3 and not s > 1.5:\n"
        "        x = -x * 0.5\n"
        "    else:\n"
        "        x = max(x, 0) if x < 10 else abs(x)\n"
        "    sensitiveAttribute(s < 1)\n"
        "def F():\n"
        "    y = x / 2\n"
        "    qualified(y > -100)\n"
        "    fairnessTarget(y > 0.5)\n"
        "    return y > 0.5\n",
        "p.fr",
    )
    assert prog.n_sites == 2
    assert isinstance(prog.sites[0], Draw) and isinstance(prog.sites[0].dist, Step)
    assert isinstance(prog.sites[1].dist, Gaussian) and prog.sites[1].dist.variance == 4.0
    assert set(prog.annotations) == {"sensitiveAttribute", "qualified", "fairnessTarget"}
    assert isinstance(prog.body[2], If) and isinstance(prog.body[2].orelse[0], If)
    assert {"s", "x", "y"} <= prog.defined


@pytest.mark.parametrize(
    "source, where, words",
    [
        ("x = gaussian(0, 1)\nwhile x > 0:\n    x = x - 1\n", "2:1", "While"),
        ("import os\n", "1:1", "Import"),
        ("x = gaussian(0, 1)\ny = eval('x')\n", "2:5", "unknown function 'eval'"),
        ("x = gaussian(0, 1)\ny = x.real\n", "2:5", "Attribute"),
        ("x = gaussian(0, 1)\ny = x ** 2\n", "2:5", "Pow"),
        ("x = gaussian(0, 1\n", "1:", "syntax error"),
        ("x = gaussian(0, -1)\n", "1:17", "variance"),
        ("x = step([(0, 1, 0.5), (1, 2, 0.4)])\n", "1:5", "sum to 0.9"),
        ("x = step([(0, 2, 0.5), (1, 3, 0.5)])\n", "1:5", "overlap"),
        ("x = gaussian(0, 1)\nif x > 0:\n    fairnessTarget(x > 1)\n", "3:5", "top level"),
        ("x = gaussian(0, 1)\nfairnessTarget(x > 1)\nfairnessTarget(x > 2)\n", "3:1", "twice"),
        ("x = gaussian(0, 1)\ny = 1 + gaussian(0, 1)\n", "2:9", "assigned directly"),
        ("def F(a):\n    x = a\n", "1:1", "parameters"),
        ("x = gaussian(0, 1)\ny = 'text'\n", "2:5", "only numbers"),
    ],
)
def test_errors_name_file_line_column(source, where, words):
    with pytest.raises(ProgramError) as exc:
        parse_program(source, "bad.fr")
    message = str(exc.value)
    assert message.startswith("bad.fr:" + where), message
    assert words in message


def test_use_before_assignment_on_some_path_is_an_error():
    with pytest.raises(ProgramError, match="'y' is used before it is assigned"):
        parse_program("x = gaussian(0, 1)\nif x > 0:\n    y = 1\nz = y + 1\n", "p.fr")
    # assigned on both paths: fine
    parse_program("x = gaussian(0, 1)\nif x > 0:\n    y = 1\nelse:\n    y = 2\nz = y + 1\n")


def test_code_in_the_file_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    source = f"x = __import__('os').system('touch {marker}')\n"
    with pytest.raises(ProgramError):
        parse_program(source, "evil.fr")
    assert not marker.exists()


def test_query_expressions_and_missing_annotations():
    e = parse_expression("x1 + x2 >= 0")
    assert type(e).__name__ == "Compare"
    prog = parse_program("x = gaussian(0, 1)\n")
    with pytest.raises(ProgramError, match="sensitiveAttribute"):
        prog.require("sensitiveAttribute")


def test_every_fairsquare_benchmark_parses():
    if not FAIRSQUARE.is_dir():
        pytest.skip("shared benchmark files are not present")
    files = sorted(FAIRSQUARE.glob("*.fr"))
    assert len(files) == 40
    for f in files:
        prog = load_program(f)
        assert {"sensitiveAttribute", "fairnessTarget"} <= set(prog.annotations), f.name
        assert prog.n_sites >= 3
    # BN2 with the integrity constraint and SVM6: 19 random draws, as the notes count
    assert load_program(FAIRSQUARE / "M_BNc_F_SVM_V6.fr").n_sites == 19
