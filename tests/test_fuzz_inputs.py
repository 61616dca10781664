"""Fuzzing the inputs the commands read besides models and domains: the per-row CSV of
`verify --rows`, population specs and saved populations (`group --population`), and checkpoints
given to `--resume` (the per-row audit and the network box refinement). Every malformed case ends
in exit 3 and one line on stderr; a case that is still valid may end in a verdict (0, 1, 2), and
then the answer is checked against what the valid input says.

The command runs in this process (`faircert.cli.main`), as test_fuzz_readers runs the pure-Python
readers: these inputs are parsed by faircert in Python (CSV by pandas' C parser, as there). Python
warnings the command would print count as stderr lines. The default run is a fast slice; `-m slow`
runs many more examples.
"""

from __future__ import annotations

import base64
import copy
import csv
import io
import json
import math
import os
import re
import resource
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import hostile_files as hf
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from faircert.checkpoint import Checkpoint
from faircert.cli import MAX_MESSAGE, main

SECONDS_PER_CASE = 20
MEMORY_GROWTH = 2**30  # the most one small input may add to the process's peak
PREFIX = "faircert: error: "
FAST = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
SLOW = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
#: Warnings Python does not print by default (the command's own process would not show them).
UNSHOWN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _cli(capsys, argv: list[str]) -> tuple[int, str]:
    """Run the command; check the error contract: no traceback, exit 0-3, and for exit 3 a single
    line on stderr (no warning printed beside it). Returns the exit code and stderr."""
    capsys.readouterr()
    start, peak = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for category in UNSHOWN:
            warnings.simplefilter("ignore", category)
        code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 1, 2, 3), f"exit {code}: {err[-3000:]}"
    if code == 3:
        shown = [f"{w.category.__name__}: {w.message}" for w in caught]
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(PREFIX) and not shown, (lines[:5], shown[:3])
        assert len(lines[0]) <= len(PREFIX) + MAX_MESSAGE + 40
    assert time.monotonic() - start < SECONDS_PER_CASE
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak  # KiB on Linux
    assert grown_kib * 1024 < MEMORY_GROWTH, f"one input raised peak memory by {grown_kib} KiB"
    return code, err


# ----- mutations of JSON documents -------------------------------------------------------------
def _paths(doc, path=()):
    """Every place in a JSON document, parents before children."""
    yield path
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, path + (key,))
    elif isinstance(doc, list):
        for k, value in enumerate(doc):
            yield from _paths(value, path + (k,))


def _at(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _nested(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


#: Values of each JSON type, to put where another type stands.
BY_TYPE = {
    "null": [None],
    "bool": [True, False],
    "number": [0.5, -1, 10**29],
    "string": ["", "x" * 300, "\u0000\udcff"],
    "list": [[], [[]], [None, "a"]],
    "dict": [{}, {"a": 1}],
}
#: Numbers put where a number stands.
NUMBERS = [-1, 0, 1, -0.0, 0.5, 1e308, -1e308, 5e-324, 2**31, 2**63, 10**29]
#: The mutations, and whether one makes a malformed file where every value is required and typed
#: (as in the network refinement's state; the per-row state has optional parts, judged by its own check).
JSON_MUTATIONS = {"retype": True, "delete": True, "nest": True, "huge": True, "number": False, "extra": False}


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "dict"}[type(value)]


def mutate_json(doc, kind: str, where: int, choice: int):
    """A changed copy of `doc` (kind in `JSON_MUTATIONS`, at the `where`-th place, a choice of value),
    and the path it changed; None when the mutation does not apply there."""
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    path = paths[where % len(paths)]
    if not path:
        return None
    parent, key, value = _at(doc, path[:-1]), path[-1], _at(doc, path)
    if kind == "retype":
        others = [v for t, vs in BY_TYPE.items() if t != _json_type(value) for v in vs]
        parent[key] = others[choice % len(others)]
    elif kind == "delete":
        del parent[key]
    elif kind == "nest":
        parent[key] = _nested(150 if choice % 2 else 60)
    elif kind == "huge":  # 1 or 2 MB: a long list or string, or a list of many copies of its first item
        parent[key] = [0] * 200_000 if choice % 2 else "9" * 2_000_000
        if _json_type(value) == "list" and value and choice % 2:  # copies, not one item shared (a later
            copies = max(2, min(200_000, 1_000_000 // len(json.dumps(value[0]))))  # mutation changes one)
            parent[key] = json.loads(json.dumps([value[0]] * copies))
    elif kind == "number":
        if _json_type(value) != "number":
            return None
        parent[key] = NUMBERS[choice % len(NUMBERS)]
    elif kind == "extra":
        if isinstance(value, dict):
            value["unexpected"] = [1, {"b": None}]
        elif isinstance(parent, dict):
            parent["unexpected"] = "x"
        else:
            return None
    return doc, path


JSON_OPS = st.tuples(st.sampled_from(sorted(JSON_MUTATIONS)), st.integers(0, 2**16), st.integers(0, 2**8))


def _strict_json(data: bytes):
    """The document, if `data` is JSON faircert reads (UTF-8, finite numbers); else None."""

    def refuse(name):
        raise ValueError(name)

    try:
        return json.loads(data.decode("utf-8"), parse_constant=refuse)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


# ----- the per-row audit: a small network, a domain, rows --------------------------------------
W1 = np.array([[1.0, 2.0, -1.0, 0.5], [-1.0, 1.0, 1.0, -0.5], [0.5, -2.0, 0.5, 1.0]])
B1, W2, B2 = np.array([-1.0, 0.5, -0.5]), np.array([[1.0, -1.0, 0.5]]), np.array([-0.25])
FEATURES = [
    {"name": "x0", "kind": "integer", "min": 0, "max": 5},
    {"name": "x1", "kind": "categorical", "min": 0, "max": 2},
    {"name": "x2", "kind": "integer", "min": 0, "max": 5},
    {"name": "x3", "kind": "real", "min": 0, "max": 5},
]
ROWS_OPTIONS = ["--protected", "x1", "--epsilon", "x0=1,x3=0.5", "--workers", "1", "--quiet", "--time-limit", "20"]
N_ROWS = 30


@pytest.fixture(scope="module")
def rows_case(tmp_path_factory):
    """A network, its domain and 30 rows (some fair, some unfair), with the answer of an
    uninterrupted audit and the checkpoint it wrote."""
    from faircert.models.io.nnet import save_nnet
    from faircert.models.network import ReluNetwork

    folder = tmp_path_factory.mktemp("rows")
    save_nnet(ReluNetwork([W1, W2], [B1, B2], input_lower=np.zeros(4), input_upper=np.full(4, 5.0)), folder / "m.nnet")
    (folder / "d.json").write_text(json.dumps({"features": FEATURES}))
    table = _table()
    (folder / "rows.csv").write_text("".join(",".join(r) + "\n" for r in table))
    base = [
        "audit",
        str(folder / "m.nnet"),
        str(folder / "rows.csv"),
        "--domain",
        str(folder / "d.json"),
        *ROWS_OPTIONS,
    ]
    assert main(base + ["--json", str(folder / "whole.json"), "--checkpoint", str(folder / "rows.ckpt")]) == 1
    answer = json.loads((folder / "whole.json").read_text())
    assert 0 < answer["counts"]["unfair"] < N_ROWS
    checkpoint = json.loads((folder / "rows.ckpt").read_text())
    assert len(checkpoint["state"]["rows"]) > 10
    return SimpleNamespace(
        folder=folder,
        table=table,
        base=base,
        verdicts=answer["row_verdicts"],
        checkpoint=checkpoint,
        text=(folder / "rows.ckpt").read_bytes(),
    )


# ----- the rows CSV ----------------------------------------------------------------------------
#: Cells a fuzzer puts in a rows file: missing, not finite, too long, formula-like, not numbers,
#: numbers other parsers read, text that breaks the line or the row.
HOSTILE_CELLS = [
    "",
    " ",
    "nan",
    "NaN",
    "NA",
    "null",
    "inf",
    "-inf",
    "1e400",
    "9" * 400,
    "1e-320",
    "-0",
    "2.5",
    "7",
    "-1",
    "+1",
    "=1+1",
    "=cmd|' /C calc'!A0",
    "@SUM(A1)",
    "\t3",
    "True",
    "false",
    "0x10",
    "1_000",
    " 2 ",
    "\uff12",
    "\u0663",
    '"1"',
    "1,5",
    "1;5",
    "3\n4",
    "\r",
    "\x00",
    "\u00e9",
    "\ufeff1",
    "a" * 100_000,
    "9" * 100_000,
]
HEADERS = ["x9", "", "X0", " x0", "x0 ", "=x0", "x0", "x1", "x0.1", "\ufeffx0"]
ENCODINGS = ["utf-8", "utf-8-sig", "latin-1", "utf-16"]

CELL_OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "cell",
                "header",
                "drop_column",
                "swap_columns",
                "delete_row",
                "duplicate_row",
                "blank_line",
                "long_row",
                "short_row",
            ]
        ),
        st.integers(0, 2**10),
        st.integers(0, 2**10),
        st.integers(0, 2**10),
    ),
    min_size=1,
    max_size=4,
)


@st.composite
def rows_files(draw):
    """A rows CSV: the valid table with cells, columns and rows changed, written in some encoding,
    maybe cut or damaged byte-wise; or an empty or binary file."""
    shape = draw(st.sampled_from(["table", "table", "table", "empty", "binary"]))
    if shape == "empty":
        return b""
    if shape == "binary":
        return draw(st.binary(min_size=1, max_size=4000))
    return _edited_table(
        draw(CELL_OPS),
        draw(st.sampled_from(ENCODINGS)),
        draw(st.one_of(st.just([]), hf_mutations())),
        draw(st.booleans()),
    )


def hf_mutations():
    return st.lists(
        st.tuples(st.sampled_from(hf.MUTATION_KINDS), st.integers(0, 2**20), st.integers(0, 2**10)),
        min_size=1,
        max_size=2,
    )


def _table():
    rng = np.random.default_rng(1)
    return [["x0", "x1", "x2", "x3"]] + [
        [str(rng.integers(0, 6)), str(rng.integers(0, 3)), str(rng.integers(0, 6)), f"{rng.uniform(0, 5):.2f}"]
        for _ in range(N_ROWS)
    ]


def _edited_table(ops, encoding: str, byte_ops, quote: bool) -> bytes:
    table = _table()
    extra: list[tuple[int, str]] = []
    for kind, a, b, c in ops:
        width, height = len(table[0]), len(table)
        row = table[1 + a % (height - 1) if height > 1 else 0]
        if kind == "cell" and row:
            row[b % len(row)] = HOSTILE_CELLS[c % len(HOSTILE_CELLS)]
        elif kind == "header" and width:
            table[0][a % width] = HEADERS[b % len(HEADERS)]
        elif kind == "drop_column" and width:
            for r in table:
                if len(r) > a % width:
                    del r[a % width]
        elif kind == "swap_columns" and width:
            i, j = a % width, b % width
            for r in table:
                if len(r) > max(i, j):
                    r[i], r[j] = r[j], r[i]
        elif kind == "delete_row" and height > 1:
            del table[1 + a % (height - 1)]
        elif kind == "duplicate_row" and height > 1:
            k = 1 + a % (height - 1)
            table.insert(k, list(table[k]))
        elif kind == "blank_line":
            extra.append((a % (height + 1), ""))
        elif kind == "long_row" and height > 1:
            row.append(HOSTILE_CELLS[c % len(HOSTILE_CELLS)])
        elif kind == "short_row" and height > 1 and row:
            del row[-1]
    if quote:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(table)
        lines = out.getvalue().split("\n")[:-1]
    else:
        lines = [",".join(row) for row in table]
    for at, line in sorted(extra, reverse=True):
        lines.insert(at, line)
    data = ("\n".join(lines) + "\n").encode(
        encoding, errors="surrogateescape" if encoding.startswith("utf-8") else "replace"
    )
    return hf.mutate(data, byte_ops) if byte_ops else data


#: Cells pandas reads as missing (its default NA words): a row holding one is refused.
MISSING = {
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
}
TRUE, FALSE = {"True", "TRUE", "true"}, {"False", "FALSE", "false"}


def _rows_file_is_valid(data: bytes) -> bool:
    """What a rows file must be for `audit` with the domain FEATURES: UTF-8 CSV (a BOM allowed;
    blank lines skipped), comma, semicolon, tab or bar separated, a header naming every feature
    (other columns ignored), then at least one row of at most as many fields as the header, each feature's
    cell a finite number or a missing-value word (a column of true/false words reads as 1/0). A value
    the model cannot read (missing, not whole on an integer feature) leaves that row alone unknown,
    and a row beyond the domain is audited: the domain clips the twins' moves only."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return False
    if "\x00" in text:
        return False
    try:
        delimiter = csv.Sniffer().sniff(text[:16_384], delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","
    limit = csv.field_size_limit(len(text) + 1)  # the file's cells, however long
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True) if r]
    finally:
        csv.field_size_limit(limit)
    # a separator ending a line: one more field, empty (or a missing-value word), that holds no value
    rows = rows[:1] + [r[:-1] if len(rows[0]) + 1 == len(r) and r[-1].strip() in MISSING else r for r in rows[1:]]
    if len(rows) < 2 or any(len(r) > len(rows[0]) for r in rows):
        return False
    # a row of fewer fields holds no value in the rest (pandas reads them as missing)
    rows = rows[:1] + [r + [""] * (len(rows[0]) - len(r)) for r in rows[1:]]
    header = rows[0]
    for f in FEATURES:
        if f["name"] not in header:
            return False
        cells = [r[header.index(f["name"])].strip() for r in rows[1:]]
        if all(c in TRUE | FALSE for c in cells):
            continue  # read as 1 and 0
        try:
            values = [float(c) for c in cells if c not in MISSING]
        except ValueError:
            return False
        # the reader refuses what no float holds: infinities, and integers of 19 digits or more
        if not all(math.isfinite(v) for v in values) or any(re.fullmatch(r"[+-]?\d{19,}(\.\d*)?", c) for c in cells):
            return False
    return True


def _wide_protected_column(data: bytes) -> bool:
    """Whether the protected column x1 holds a number beyond the 4,096 protected combinations an
    audit takes. Such a range (inferred from the rows) is refused only after the network's twins for
    every value are built (faircert.engines.network.problem): gigabytes for 2**31 values."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
        delimiter = csv.Sniffer().sniff(text[:16_384], delimiters=",;\t|").delimiter
    except (UnicodeDecodeError, csv.Error):
        delimiter = ","
        text = data.decode("utf-8", "replace")
    limit = csv.field_size_limit(len(text) + 1)
    try:
        rows = list(csv.reader(io.StringIO(text.replace("\x00", ""), newline=""), delimiter=delimiter))
    finally:
        csv.field_size_limit(limit)
    header = [c.lstrip() for c in rows[0]] if rows else []
    if "x1" not in header:
        return False
    k = header.index("x1")
    for row in rows[1:]:
        try:
            if len(row) > k and abs(float(row[k])) > 4096:
                return True
        except (ValueError, OverflowError):
            pass
    return False


def _check_rows_file(capsys, rows_case, data: bytes, folder: Path, domain: bool) -> None:
    path, out, table = folder / "rows.csv", folder / "r.json", folder / "rows_out.csv"
    if not domain and _wide_protected_column(data):
        return  # not run: the engine's cost, not the reader's (see _wide_protected_column)
    path.write_bytes(data)
    for stale in (out, table):
        stale.unlink(missing_ok=True)
    argv = [
        "audit",
        str(rows_case.folder / "m.nnet"),
        str(path),
        *ROWS_OPTIONS,
        "--json",
        str(out),
        "--rows-csv",
        str(table),
    ]
    if domain:
        argv += ["--domain", str(rows_case.folder / "d.json")]
    code, _ = _cli(capsys, argv)
    if code == 3:
        return
    result = json.loads(out.read_text())
    if domain:  # the file was read as what it says: a valid file, every row audited
        assert _rows_file_is_valid(data), f"a malformed rows file was audited: {data[:300]!r}"
        assert len(result["row_verdicts"]) == result["rows"]
    written = list(csv.reader(table.open(newline="", encoding="utf-8")))
    for cell in (c for row in written for c in row):  # formula-like cells are neutralised in the output
        if cell and cell[0] in "=+-@\t\r":
            try:
                float(cell)
            except ValueError:
                pytest.fail(f"--rows-csv wrote a formula-like cell {cell[:40]!r}")


@pytest.mark.parametrize("domain", [True, False], ids=["domain", "inferred"])
@FAST
@given(data=rows_files())
def test_fuzz_rows_csv(capsys, rows_case, tmp_path_factory, domain, data):
    _check_rows_file(capsys, rows_case, data, tmp_path_factory.mktemp("csv"), domain)


@pytest.mark.slow
@pytest.mark.parametrize("domain", [True, False], ids=["domain", "inferred"])
@SLOW
@given(data=rows_files())
def test_fuzz_rows_csv_long(capsys, rows_case, tmp_path_factory, domain, data):
    _check_rows_file(capsys, rows_case, data, tmp_path_factory.mktemp("csv"), domain)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x01\x02" * 500,
        b"x0,x1,x2,x3\n",
        b"x0,x1,x2,x3\n1,1,1,1,1\n2,2,2,2,2\n",  # one field more per row
        b"x0,x1,x2,x3\n1,1,1," + b"9" * 400 + b"\n",
        b"x0,x1,x2,x3\n=1+1,1,1,1\n",
        b"x0,x1,x2,x3\n1,1,1,\xff\xfe\n",
        "x0,x1,x2,x3\n1,1,1,1\n".encode("utf-16"),
        b"x0,x1,x2\n1,1,1\n",
        b"x0,x1,x2,x3\n1,1,1,1\n" + b"2,2,2," + b"a" * 300_000 + b"\n",
    ],
    ids=[
        "empty",
        "binary",
        "header only",
        "longer rows",
        "400 digits",
        "formula",
        "not utf-8",
        "utf-16",
        "a column missing",
        "long text cell",
    ],
)
def test_rows_files_that_are_refused(capsys, rows_case, tmp_path, data):
    """Cases the fuzzer found or must keep finding: each is one line, exit 3."""
    (tmp_path / "rows.csv").write_bytes(data)
    assert not _rows_file_is_valid(data)
    code, err = _cli(
        capsys,
        [
            "audit",
            str(rows_case.folder / "m.nnet"),
            str(tmp_path / "rows.csv"),
            "--domain",
            str(rows_case.folder / "d.json"),
            *ROWS_OPTIONS,
        ],
    )
    assert code == 3, err


def test_rows_the_model_cannot_read_are_unknown_alone(capsys, rows_case, tmp_path):
    """A missing protected value, a fraction on an integer feature and a value beyond the domain:
    the first two rows
    are unknown with their reason, the third is audited, and the file is not refused."""
    (tmp_path / "rows.csv").write_bytes(b"x0,x1,x2,x3\n1,nan,1,1\n1.5,1,1,1\n9,1,1,1\n")
    out = tmp_path / "r.json"
    argv = ["audit", str(rows_case.folder / "m.nnet"), str(tmp_path / "rows.csv"), "--domain"]
    code, err = _cli(capsys, argv + [str(rows_case.folder / "d.json"), *ROWS_OPTIONS, "--json", str(out)])
    assert code != 3, err
    verdicts = json.loads(out.read_text())["row_verdicts"]
    assert verdicts[:2] == ["unknown", "unknown"] and verdicts[2] in ("fair", "unfair")
    assert code == (1 if verdicts[2] == "unfair" else 2)


def test_rows_one_field_longer_than_the_header_are_refused_not_read_shifted(tmp_path):
    """pandas reads rows one field longer than the header with their first field as an index, every
    value a column further on; such a file is refused. An empty field after a separator ending each
    line is no value (and reads as if absent)."""
    from faircert.data import read_table
    from faircert.errors import DataError

    path = tmp_path / "rows.csv"
    path.write_text("x0,x1,x2,x3\n0,1,2,3,9\n4,0,1,2,9\n")
    with pytest.raises(DataError, match="a row has more fields than the header names"):
        read_table(path)
    path.write_text("x0,x1,x2,x3\n0,1,2,3,\n4,0,1,2,\n")
    assert read_table(path).to_numpy().tolist() == [[0, 1, 2, 3], [4, 0, 1, 2]]


# ----- populations -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def population_case(tmp_path_factory):
    """A linear model, data, and the Bayesian network and independent populations learned from it
    and saved (`group --save-population`)."""
    folder = tmp_path_factory.mktemp("population")
    rng = np.random.default_rng(0)
    n = 300
    age, sex, hours = rng.integers(18, 70, n), rng.integers(0, 2, n), rng.integers(1, 60, n)
    label = (age / 50 + hours / 60 + 0.3 * sex + rng.normal(0, 0.3, n) > 1.4).astype(int)
    (folder / "data.csv").write_text(
        "age,sex,hours,label\n" + "".join(f"{a},{s},{h},{y}\n" for a, s, h, y in zip(age, sex, hours, label))
    )
    (folder / "lin.json").write_text(
        json.dumps({"weights": [0.05, 0.8, 0.03], "intercept": -3.0, "features": ["age", "sex", "hours"]})
    )
    saved = {}
    for kind in ("bayesnet", "independent"):
        path = folder / f"{kind}.json"
        assert main(
            [
                "group",
                str(folder / "lin.json"),
                "--data",
                str(folder / "data.csv"),
                "--protected",
                "sex",
                "--label",
                "label",
                "--population",
                kind,
                "--save-population",
                str(path),
                "--quiet",
            ]
        ) in (0, 1)
        saved[kind] = path.read_bytes()
    return SimpleNamespace(folder=folder, model=str(folder / "lin.json"), saved=saved)


def _group(capsys, population_case, population: str, *extra: str) -> int:
    """`group` of the linear model under `population` (given as --population=VALUE, so that a value
    starting with '-' is a value, as a script passing it through would write it)."""
    code, _ = _cli(
        capsys,
        [
            "group",
            population_case.model,
            "--protected",
            "sex",
            f"--population={population}",
            "--quiet",
            "--time-limit",
            "10",
            *extra,
        ],
    )
    return code


#: --population values besides random text: names of kinds (learned from data, none given),
#: paths of files of other kinds, folders, devices, long names, program text.
POPULATION_VALUES = [
    "independent",
    "bayesnet",
    "empirical",
    "uniform",
    "Bayesnet",
    "",
    "-",
    "--",
    ".",
    "..",
    "/",
    ".json",
    ".fr",
    "x.json",
    "x.fr",
    "x.JSON",
    "/dev/null",
    "/dev/null.json",
    "/dev/zero",
    "/proc/self/status",
    "x" * 300 + ".json",
    "x" * 300 + ".fr",
    "/" + "d/" * 3000 + "p.json",
    "sex = step([(0, 1, 1.0)])\n",
    "def popModel():\n    sex = 1\n",
    "def popModel(:\n",
    "def popModel():\n" + "    x = 1\n" * 20_000,
]


@st.composite
def population_values(draw, folder: Path):
    value = draw(
        st.one_of(
            st.sampled_from(POPULATION_VALUES),
            st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=60),
            st.sampled_from(["data.csv", "lin.json", "bayesnet.json", "independent.json", ""]).map(
                lambda n: str(folder / n)
            ),
        )
    )
    # a name the system refuses (a path part over 255 bytes) without a suffix: see
    # test_a_population_name_longer_than_a_file_name_is_one_line
    assume(Path(value).suffix or all(len(os.fsencode(p)) <= 255 for p in value.split("/")))
    return value


@FAST
@given(data=st.data())
def test_fuzz_population_spec(capsys, population_case, data):
    value = data.draw(population_values(population_case.folder))
    code = _group(capsys, population_case, value)
    if code != 3:  # only a saved population (or a program) gives an answer without data
        assert value.endswith(".json") or "\n" in value, value


def test_a_population_name_longer_than_a_file_name_is_one_line(capsys, population_case):
    assert _group(capsys, population_case, "x" * 300) == 3


def _check_population_file(capsys, population_case, data: bytes, folder: Path) -> None:
    path = folder / "pop.json"
    path.write_bytes(data)
    code = _group(capsys, population_case, str(path))
    if code != 3:
        assert isinstance(_strict_json(data), dict), f"a population that is not JSON was used: {data[:200]!r}"


@pytest.mark.parametrize("kind", ["bayesnet", "independent"])
@FAST
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(hf.MUTATION_KINDS), st.integers(0, 2**20), st.integers(0, 2**10)),
        min_size=1,
        max_size=4,
    )
)
def test_fuzz_saved_population_bytes(capsys, population_case, tmp_path_factory, kind, ops):
    _check_population_file(
        capsys, population_case, hf.mutate(population_case.saved[kind], ops), tmp_path_factory.mktemp("pop")
    )


@pytest.mark.parametrize("kind", ["bayesnet", "independent"])
@FAST
@given(ops=st.lists(JSON_OPS, min_size=1, max_size=3))
@example(ops=[("nest", 214, 0), ("huge", 2630, 0)])  # a state so large the score overflowed
def test_fuzz_saved_population_fields(capsys, population_case, tmp_path_factory, kind, ops):
    doc = json.loads(population_case.saved[kind])
    for op in ops:
        changed = mutate_json(doc, *op)
        doc = changed[0] if changed else doc
    _check_population_file(capsys, population_case, json.dumps(doc).encode(), tmp_path_factory.mktemp("pop"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bayesnet", "independent"])
@SLOW
@given(
    ops=st.lists(JSON_OPS, min_size=1, max_size=3),
    byte_ops=st.lists(
        st.tuples(st.sampled_from(hf.MUTATION_KINDS), st.integers(0, 2**20), st.integers(0, 2**10)), max_size=3
    ),
)
def test_fuzz_saved_population_long(capsys, population_case, tmp_path_factory, kind, ops, byte_ops):
    doc = json.loads(population_case.saved[kind])
    for op in ops:
        changed = mutate_json(doc, *op)
        doc = changed[0] if changed else doc
    _check_population_file(
        capsys, population_case, hf.mutate(json.dumps(doc).encode(), byte_ops), tmp_path_factory.mktemp("pop")
    )


# ----- checkpoints -----------------------------------------------------------------------------
def _same_checkpoint(data: bytes, original: dict) -> bool:
    """Whether a changed checkpoint file still holds what the original holds (when it was written
    aside: `written`), so that resuming from it is resuming from the original."""
    doc = _strict_json(data)
    return isinstance(doc, dict) and all(doc.get(k, KeyError) == v for k, v in original.items() if k != "written")


def _resume_rows(capsys, rows_case, path: Path) -> int | list:
    out = path.with_suffix(".json")
    out.unlink(missing_ok=True)
    code, _ = _cli(
        capsys,
        rows_case.base + ["--resume", str(path), "--checkpoint", str(path.with_suffix(".out")), "--json", str(out)],
    )
    return code if code == 3 else json.loads(out.read_text())["row_verdicts"]


def _rows_state_is_valid(state) -> bool:
    """A per-row audit's state as the audit writes it: distinct rows [index, verdict, method, twin],
    a twin (the row's width of numbers) exactly for unfair rows."""
    rows = state.get("rows") if isinstance(state, dict) else None
    if not isinstance(rows, list):
        return False
    seen = set()
    for item in rows:
        if not (
            isinstance(item, list)
            and len(item) == 4
            and type(item[0]) is int
            and 0 <= item[0] < N_ROWS
            and item[0] not in seen
            and item[1] in ("fair", "unfair", "unknown")
            and type(item[2]) is str
            and len(item[2]) <= 200
        ):
            return False
        seen.add(item[0])
        twin = item[3]
        if (item[1] == "unfair") != (twin is not None):
            return False
        if twin is not None and not (
            isinstance(twin, list)
            and len(twin) == 4
            and all(type(v) in (int, float) and math.isfinite(v) for v in twin)
        ):
            return False
    return True


def _check_rows_checkpoint(capsys, rows_case, data: bytes, folder: Path, resign: bool) -> None:
    """Resume from a changed checkpoint: a valid one gives the uninterrupted answer, any other is
    refused. With `resign` the data is a changed state, saved with its digest made to match (so
    only the checks of the state itself stand between it and the audit)."""
    path = folder / "c.ckpt"
    if resign:
        body = rows_case.checkpoint
        Checkpoint(path, body["kind"], body["identity"]).save(json.loads(data))
        valid = _rows_state_is_valid(json.loads(data))
    else:
        path.write_bytes(data)
        valid = _same_checkpoint(data, rows_case.checkpoint)
    got = _resume_rows(capsys, rows_case, path)
    if got != 3:
        assert valid, f"a malformed checkpoint was resumed: {data[:300]!r}"
        assert got == rows_case.verdicts


@FAST
@given(ops=hf_mutations())
def test_fuzz_rows_checkpoint_bytes(capsys, rows_case, tmp_path_factory, ops):
    _check_rows_checkpoint(capsys, rows_case, hf.mutate(rows_case.text, ops), tmp_path_factory.mktemp("ckpt"), False)


def _rows_state_mutation(rows_case, op):
    """A changed state; None for a row index changed to another row's (a consistent file that
    describes another run: no check can tell, and it is no malformed input)."""
    changed = mutate_json(rows_case.checkpoint["state"], *op)
    if changed is None:
        return None
    state, path = changed
    if op[0] == "number" and len(path) == 3 and path[2] == 0:
        index = _at(state, path)
        if isinstance(index, int) and 0 <= index < N_ROWS:
            return None
    return state


@FAST
@given(op=JSON_OPS)
def test_fuzz_rows_checkpoint_fields(capsys, rows_case, tmp_path_factory, op):
    state = _rows_state_mutation(rows_case, op)
    assume(state is not None)
    _check_rows_checkpoint(capsys, rows_case, json.dumps(state).encode(), tmp_path_factory.mktemp("ckpt"), True)


@pytest.mark.slow
@SLOW
@given(op=JSON_OPS, byte_ops=hf_mutations())
def test_fuzz_rows_checkpoint_long(capsys, rows_case, tmp_path_factory, op, byte_ops):
    folder = tmp_path_factory.mktemp("ckpt")
    _check_rows_checkpoint(capsys, rows_case, hf.mutate(rows_case.text, byte_ops), folder, False)
    state = _rows_state_mutation(rows_case, op)
    if state is not None:
        _check_rows_checkpoint(capsys, rows_case, json.dumps(state).encode(), folder, True)


@pytest.mark.parametrize(
    "edit", ["twin dropped", "twin on a fair row", "twin moved", "twin far away", "index as true", "duplicate row"]
)
def test_rows_checkpoint_states_that_are_refused(capsys, rows_case, tmp_path, edit):
    state = copy.deepcopy(rows_case.checkpoint["state"])
    rows = state["rows"]
    unfair = next(r for r in rows if r[1] == "unfair")
    fair = next(r for r in rows if r[1] == "fair")
    if edit == "twin dropped":
        unfair[3] = None
    elif edit == "twin on a fair row":
        fair[3] = list(unfair[3])
    elif edit == "twin moved":  # a twin the model decides as the row itself
        unfair[3] = [float(v) for v in rows_case.table[1 + unfair[0]]]
    elif edit == "twin far away":  # the model is not even asked (its products would overflow, with a warning)
        unfair[3] = [1e308] * len(unfair[3])
    elif edit == "index as true":
        unfair[0] = True
    else:
        rows.append(list(fair))
    assert not _rows_state_is_valid(state) or edit in ("twin moved", "twin far away")
    path = tmp_path / "c.ckpt"
    Checkpoint(path, rows_case.checkpoint["kind"], rows_case.checkpoint["identity"]).save(state)
    assert _resume_rows(capsys, rows_case, path) == 3


# ----- the network box refinement --------------------------------------------------------------
NETWORK_OPTIONS = ["--protected", "p", "--workers", "1", "--quiet"]
NETWORK_WIDTH = 5  # free features of the network case's domain: the width of its saved points and boxes


@pytest.fixture(scope="module")
def network_case(tmp_path_factory):
    """A network too large to finish, stopped by a box budget with a checkpoint; and what resuming
    from it gives (a further budget)."""
    from test_network_parallel import large_case

    from faircert.engines.network import refine, settle
    from faircert.models.io.nnet import save_nnet

    with pytest.MonkeyPatch.context() as mp:  # small chunks: a short run takes many steps (see conftest)
        mp.setattr(refine, "ROWS_PER_STEP", 2000)
        mp.setattr(settle, "EXACT_POINTS", 0)
        mp.setattr(settle, "EXACT_PER_INPUT", 1)
        folder = tmp_path_factory.mktemp("network")
        net, dom = large_case()
        net.input_lower, net.input_upper = dom.lower, dom.upper
        save_nnet(net, folder / "m.nnet")
        (folder / "d.json").write_text(json.dumps(dom.to_dict()))
        base = ["verify", str(folder / "m.nnet"), "--domain", str(folder / "d.json"), *NETWORK_OPTIONS]
        assert main(base + ["--max-boxes", "300", "--checkpoint", str(folder / "n.ckpt")]) in (1, 2)
        checkpoint = json.loads((folder / "n.ckpt").read_text())
        assert sum(s["open"]["boxes"] for s in checkpoint["state"]["shards"]) > 10
        resumed = base + ["--max-boxes", "400"]
        assert main(
            resumed
            + [
                "--resume",
                str(folder / "n.ckpt"),
                "--checkpoint",
                str(folder / "again.ckpt"),
                "--json",
                str(folder / "answer.json"),
            ]
        ) in (1, 2)
        answer = _shares(json.loads((folder / "answer.json").read_text()))
        yield SimpleNamespace(
            folder=folder, resumed=resumed, checkpoint=checkpoint, text=(folder / "n.ckpt").read_bytes(), answer=answer
        )


def _shares(result: dict) -> tuple:
    return result["certified"], result["falsified"], result["undecided"], result["stats"]["boxes_bounded"]


def _resume_network(capsys, network_case, path: Path):
    out = path.with_suffix(".json")
    out.unlink(missing_ok=True)
    code, _ = _cli(
        capsys,
        network_case.resumed
        + ["--resume", str(path), "--checkpoint", str(path.with_suffix(".out")), "--json", str(out)],
    )
    return code if code == 3 else _shares(json.loads(out.read_text()))


def _check_network_checkpoint(
    capsys, network_case, data: bytes, folder: Path, resign: bool, expect: str = "same"
) -> None:
    """Resume from a changed checkpoint. `expect`: "malformed" (must be refused), "same" (valid
    when resumed: the answer of the unchanged checkpoint) or "any" (a state that may or may not
    be valid: no traceback). Without `resign`, valid means unchanged but for `written`."""
    path = folder / "n.ckpt"
    if resign:
        body = network_case.checkpoint
        Checkpoint(path, body["kind"], body["identity"]).save(json.loads(data))
    else:
        path.write_bytes(data)
        expect = "same" if _same_checkpoint(data, network_case.checkpoint) else "malformed"
    got = _resume_network(capsys, network_case, path)
    if got != 3:
        assert expect != "malformed", f"a malformed checkpoint was resumed: {data[:300]!r}"
        if expect == "same":
            assert got == network_case.answer


@FAST
@given(ops=hf_mutations())
def test_fuzz_network_checkpoint_bytes(capsys, network_case, tmp_path_factory, ops):
    _check_network_checkpoint(
        capsys, network_case, hf.mutate(network_case.text, ops), tmp_path_factory.mktemp("ckpt"), False
    )


#: Damage to one packed array ({dtype, shape, data}): each makes a malformed state.
ARRAY_DAMAGE = ["rows", "rank", "negative", "width", "dtype", "not base64", "short", "nan", "outside"]


def _damage_array(value: dict, how: str, width: int) -> dict:
    value = dict(value)
    shape = list(value["shape"])
    if how == "rows":
        value["shape"] = [2**40] + shape[1:]
    elif how == "rank":
        value["shape"] = shape + [1]
    elif how == "negative":
        value["shape"] = [-1] + shape[1:]
    elif how == "width":
        value["shape"] = [shape[0], width + 1] if len(shape) == 2 else [shape[0], 1]
    elif how == "dtype":
        value["dtype"] = {"f8": "i8", "i8": "f8"}[value["dtype"]]
    elif how == "not base64":
        value["data"] = "!!" + value["data"]
    elif how == "short":
        value["data"] = base64.b64encode(base64.b64decode(value["data"])[:-8]).decode()
    elif how == "nan":
        value["dtype"], value["shape"] = "f8", [1, width] if len(shape) == 2 else [1]
        value["data"] = base64.b64encode(np.full(math.prod(value["shape"]), np.nan).tobytes()).decode()
    else:  # finite values far outside any domain
        value["dtype"], value["shape"] = "f8", [1, width] if len(shape) == 2 else [1]
        value["data"] = base64.b64encode(np.full(math.prod(value["shape"]), -1e300).tobytes()).decode()
    return value


def _network_state_mutation(network_case, op, array: tuple[int, str] | None):
    """(state, expect) for a JSON mutation, or for damage to the `array[0]`-th packed array; None
    where the mutation does not apply."""
    state = network_case.checkpoint["state"]
    if array is not None:
        state = copy.deepcopy(state)
        places = [p for p in _paths(state) if isinstance(_at(state, p), dict) and "dtype" in _at(state, p)]
        path = places[array[0] % len(places)]
        how = array[1]
        if how in ("nan", "outside") and _at(state, path)["dtype"] == "i8":
            how = "dtype"
        damaged = _damage_array(_at(state, path), how, NETWORK_WIDTH)
        unchanged = damaged == _at(state, path)  # an empty array cut short is the same array
        _at(state, path[:-1])[path[-1]] = damaged
        return state, "same" if unchanged else "malformed"
    changed = mutate_json(state, *op)
    if changed is None:
        return None
    new, path = changed
    kind = op[0]
    if kind == "extra":
        return new, "same"
    if kind == "number" or (
        kind == "retype" and isinstance(_at(new, path), bool) and _json_type(_at(state, path)) == "number"
    ):
        return new, "any"  # another count, mass or seed (a count of true reads as 1)
    if kind == "delete" and len(path) > 1 and path[-2] == "partials":
        return new, "any"  # an exact sum's partials less one: another sum, as valid as a changed number
    return new, "malformed"


@FAST
@given(op=JSON_OPS, array=st.one_of(st.none(), st.tuples(st.integers(0, 2**10), st.sampled_from(ARRAY_DAMAGE))))
def test_fuzz_network_checkpoint_fields(capsys, network_case, tmp_path_factory, op, array):
    changed = _network_state_mutation(network_case, op, array)
    assume(changed is not None)
    state, expect = changed
    _check_network_checkpoint(
        capsys, network_case, json.dumps(state).encode(), tmp_path_factory.mktemp("ckpt"), True, expect
    )


@pytest.mark.slow
@SLOW
@given(
    op=JSON_OPS,
    array=st.one_of(st.none(), st.tuples(st.integers(0, 2**10), st.sampled_from(ARRAY_DAMAGE))),
    byte_ops=hf_mutations(),
)
def test_fuzz_network_checkpoint_long(capsys, network_case, tmp_path_factory, op, array, byte_ops):
    folder = tmp_path_factory.mktemp("ckpt")
    _check_network_checkpoint(capsys, network_case, hf.mutate(network_case.text, byte_ops), folder, False)
    changed = _network_state_mutation(network_case, op, array)
    if changed is not None:
        _check_network_checkpoint(capsys, network_case, json.dumps(changed[0]).encode(), folder, True, changed[1])


@pytest.mark.parametrize(
    "place,value",
    [
        (("tau",), -1.0),
        (("tau",), "0.5"),
        (("shards", 0, "region", "counts", "cuts"), -1),
        (("shards", 0, "region", "cex_found"), -1),
        (("shards", 0, "examined"), 0.5),
        (("shards", 0, "boxes"), -1),
        (("shards", 0, "open", "boxes"), 2**40),
        (("shards", 0, "sums", "settled", "whole"), "-1" + "0" * 30),
        (("shards", 0, "sums", "fair_opened", "partials"), ["0x1.8p+1"] * 200),
    ],
)
def test_network_checkpoint_values_that_are_refused(capsys, network_case, tmp_path, place, value):
    state = copy.deepcopy(network_case.checkpoint["state"])
    _at(state, place[:-1])[place[-1]] = value
    _check_network_checkpoint(capsys, network_case, json.dumps(state).encode(), tmp_path, True, "malformed")
    assert _resume_network(capsys, network_case, tmp_path / "n.ckpt") == 3


@pytest.mark.parametrize(
    "place", [("shards", 0, "sums", "settled", "whole"), ("shards", 0, "region", "counts", "t_bound")]
)
def test_network_checkpoint_masses_of_huge_integers(capsys, network_case, tmp_path, place):
    state = copy.deepcopy(network_case.checkpoint["state"])
    _at(state, place[:-1])[place[-1]] = str(10**29) if place[-1] == "whole" else 10**29
    path = tmp_path / "n.ckpt"
    Checkpoint(path, network_case.checkpoint["kind"], network_case.checkpoint["identity"]).save(state)
    got = _resume_network(capsys, network_case, path)
    if place[-1] == "whole":  # a proven mass beyond the domain's size is refused
        assert got == 3
    else:  # a timing far beyond any run is only a number: resumed, never a crash
        assert got != 3 and len(got) == 4


@pytest.mark.parametrize("key,value", [("stuck", "one"), ("cex", "one"), ("stuck", ""), ("cex", {})])
def test_network_checkpoint_lists_of_arrays_cut_short(capsys, network_case, tmp_path, key, value):
    state = copy.deepcopy(network_case.checkpoint["state"])
    region = state["shards"][0]["region"]
    region[key] = region[key][:1] if value == "one" else value  # one array; a value that iterates as none
    path = tmp_path / "n.ckpt"
    Checkpoint(path, network_case.checkpoint["kind"], network_case.checkpoint["identity"]).save(state)
    assert _resume_network(capsys, network_case, path) == 3


@pytest.mark.parametrize(
    "option,message",
    [("--resume", "checkpoint not found"), ("DATA", "data file not found"), ("--domain", "domain file not found")],
)
def test_a_path_the_system_refuses_is_one_line(capsys, rows_case, option, message):
    """A name longer than a file name may be (255 bytes) is a file that is not there, not an OSError."""
    argv = list(rows_case.base)
    if option == "DATA":  # the rows, the second positional argument
        argv[2] = "x" * 300 + ".csv"
    elif option in argv:
        argv[argv.index(option) + 1] = "x" * 300 + ".yaml"
    else:
        argv += [option, "x" * 300]
    code, err = _cli(capsys, argv)
    assert code == 3 and message in err


@pytest.mark.parametrize("suffix", [".json", ".fr"])
def test_a_population_file_name_the_system_refuses_is_one_line(capsys, population_case, suffix):
    assert _group(capsys, population_case, "x" * 300 + suffix) == 3


def test_malformed_inputs_print_one_line_from_the_command_itself(rows_case, population_case, tmp_path):
    """The same contract from `python -m faircert` (its own stderr, Python's default warnings): a
    malformed rows file, saved population and checkpoint each end in exit 3 and one line."""
    import subprocess
    import sys

    # a column whose type changes far down: pandas, reading in blocks, warns of mixed types (2 more lines)
    (tmp_path / "rows.csv").write_text("x0,x1,x2,x3\n" + "1,1,1,1\n" * 200_000 + "2,2,2,=1+1\n")
    (tmp_path / "pop.json").write_text(population_case.saved["bayesnet"].decode().replace('"states"', '"stat"', 1))
    (tmp_path / "c.ckpt").write_bytes(rows_case.text.replace(b'"unfair"', b'"fair"', 1))
    cases = [
        [
            "audit",
            str(rows_case.folder / "m.nnet"),
            str(tmp_path / "rows.csv"),
            "--domain",
            str(rows_case.folder / "d.json"),
            *ROWS_OPTIONS,
        ],
        ["group", population_case.model, "--protected", "sex", "--population", str(tmp_path / "pop.json"), "--quiet"],
        rows_case.base + ["--resume", str(tmp_path / "c.ckpt")],
    ]
    for argv in cases:
        done = subprocess.run(
            [sys.executable, "-m", "faircert", *argv], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr[-2000:]
        assert done.stderr.startswith(PREFIX)


def test_a_population_given_as_double_dash_is_one_line(capsys, population_case):
    """`--population=--` reaches the command as the text "--" (argparse alone would hand it an
    empty list): an unknown population, refused in one line."""
    code, err = _cli(capsys, ["group", population_case.model, "--protected", "sex", "--population=--", "--quiet"])
    assert code == 3 and "unknown population '--'" in err and len(err.strip().splitlines()) == 1
