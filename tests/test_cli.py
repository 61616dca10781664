"""The command line: exit codes, help on every subcommand, bad input -> 3."""

import json

import numpy as np
import pytest

from faircert.cli import build_parser, main


def subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)


def test_every_subcommand_has_help(capsys):
    names = subcommands()
    assert {"verify", "domain", "demo"} <= set(names)
    for name in names:
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args([name, "--help"])
        assert exc.value.code == 0
        assert "usage: faircert" in capsys.readouterr().out


def test_usage_error_exits_3(capsys):
    assert main(["verify"]) == 3
    assert main(["no-such-command"]) == 3
    assert main(["verify", "m.nnet", "--time-limit", "-5"]) == 3
    assert "time limit must be a positive number of seconds" in capsys.readouterr().err


def test_missing_model_file_exits_3(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "missing.nnet"), "--protected", "x1"]) == 3
    assert "model file not found" in capsys.readouterr().err


def test_unsupported_suffix_exits_3(tmp_path, capsys):
    path = tmp_path / "model.xyz"
    path.write_text("hello")
    assert main(["verify", str(path), "--protected", "x1"]) == 3
    assert "unsupported model file type" in capsys.readouterr().err


def test_garbage_nnet_exits_3(tmp_path, capsys):
    path = tmp_path / "model.nnet"
    path.write_text("this is not a network\n")
    assert main(["verify", str(path), "--protected", "x1"]) == 3
    assert "expected comma-separated numbers" in capsys.readouterr().err


def test_domain_infer_writes_yaml(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    csv.write_text("age,sex,income\n20,M,1\n30,F,0\n")
    out = tmp_path / "dom.yaml"
    assert main(["domain", "infer", str(csv), "--protected", "sex", "--label", "income", "-o", str(out)]) == 0
    from faircert import Domain

    dom = Domain.load(out)
    assert dom.names == ["age", "sex"] and dom.protected_names == ["sex"]
    assert main(["domain", "infer", str(csv), "--protected", "gender"]) == 3
    assert "unknown column 'gender'" in capsys.readouterr().err


def test_domain_show_checks_the_model_width(tmp_path, capsys):
    from faircert import Domain, Feature, ReluNetwork
    from faircert.models.io.nnet import save_nnet

    dom = Domain((Feature("a", "integer", 0, 9), Feature("s", "binary", 0, 1, protected=True)))
    dom.save(tmp_path / "d.yaml")
    net = ReluNetwork([np.ones((2, 2)), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    save_nnet(net, tmp_path / "two.nnet")
    assert main(["domain", "show", str(tmp_path / "d.yaml"), "--model", str(tmp_path / "two.nnet")]) == 0
    out = capsys.readouterr().out
    assert "size of the non-protected part: 10" in out
    wide = ReluNetwork([np.ones((2, 3)), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    save_nnet(wide, tmp_path / "three.nnet")
    assert main(["domain", "show", str(tmp_path / "d.yaml"), "--model", str(tmp_path / "three.nnet")]) == 3
    assert "takes 3 inputs" in capsys.readouterr().err


def test_pickled_models_need_explicit_trust(tmp_path, capsys):
    joblib = pytest.importorskip("joblib")
    tree = pytest.importorskip("sklearn.tree")
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 5, 200), rng.integers(0, 2, 200)]).astype(float)
    model = tree.DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, (X[:, 0] + 2 * X[:, 1] > 4).astype(int))
    joblib.dump(model, tmp_path / "m.joblib")
    (tmp_path / "d.yaml").write_text(
        "features:\n  - {name: a, kind: integer, min: 0, max: 4}\n  - {name: s, kind: binary, protected: true}\n"
    )
    args = ["verify", str(tmp_path / "m.joblib"), "--domain", str(tmp_path / "d.yaml"), "--quiet"]
    assert main(args) == 3
    assert "--trust-pickle" in capsys.readouterr().err
    assert main(args + ["--trust-pickle"]) == 1  # the label depends on s: counterexamples exist
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
    assert main(["verify", str(tmp_path / "junk.pkl"), "--domain", str(tmp_path / "d.yaml"), "--trust-pickle"]) == 3
    assert "cannot unpickle" in capsys.readouterr().err


def test_verify_infers_the_domain_from_a_csv_and_reports_bad_outputs(tmp_path, capsys):
    from faircert import ReluNetwork
    from faircert.models.io.nnet import save_nnet

    # label = a - 2 + 3 s > 0: with s = 1 always positive, with s = 0 only for a > 2: unfair for a in {0, 1, 2}
    save_nnet(ReluNetwork([np.array([[1.0, 3.0]])], [np.array([-2.0])]), tmp_path / "m.nnet")
    (tmp_path / "data.csv").write_text("a,s\n0,0\n4,1\n2,0\n")
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "verify",
                str(tmp_path / "m.nnet"),
                "--domain",
                str(tmp_path / "data.csv"),
                "--protected",
                "s",
                "--quiet",
                "--json",
                str(out),
            ]
        )
        == 1
    )
    result = json.loads(out.read_text())
    assert result["feature_names"] == ["a", "s"] and result["falsified"] == pytest.approx(3 / 5)
    (tmp_path / "wide.csv").write_text("a,s,y\n0,0,1\n4,1,0\n")
    assert main(["verify", str(tmp_path / "m.nnet"), "--domain", str(tmp_path / "wide.csv"), "--protected", "s"]) == 3
    assert "--label NAME" in capsys.readouterr().err
    assert (
        main(
            [
                "verify",
                str(tmp_path / "m.nnet"),
                "--domain",
                str(tmp_path / "data.csv"),
                "--protected",
                "s",
                "--quiet",
                "--html",
                str(tmp_path / "no" / "such" / "dir.html"),
            ]
        )
        == 3
    )
    assert "cannot write" in capsys.readouterr().err


def test_domain_show_missing_file_and_group_bad_delta(tmp_path, capsys):
    assert main(["domain", "show", str(tmp_path / "none.yaml")]) == 3
    assert "domain file not found" in capsys.readouterr().err
    model = tmp_path / "lin.json"
    model.write_text(json.dumps({"weights": [1.0], "intercept": 0.0, "features": ["a"]}))
    (tmp_path / "d.csv").write_text("a,s\n1,0\n2,1\n")
    assert (
        main(
            [
                "group",
                str(model),
                "--data",
                str(tmp_path / "d.csv"),
                "--protected",
                "s",
                "--method",
                "sampling",
                "--delta",
                "2",
            ]
        )
        == 3
    )
    assert "delta must lie strictly between 0 and 1" in capsys.readouterr().err


def test_out_of_memory_is_one_line_and_undecided(monkeypatch, capsys):
    import faircert.api

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(faircert.api, "verify", exhausted)
    assert main(["verify", "model.nnet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("faircert: error: out of memory before a verdict") and "Traceback" not in err
    assert "allow the process more memory" in err


def test_a_device_out_of_memory_says_what_to_lower(monkeypatch, capsys):
    import faircert.api
    from faircert.errors import DeviceMemoryError

    def exhausted(*args, **kwargs):
        raise DeviceMemoryError("the cuda device ran out of memory: give a lower --memory-limit")

    monkeypatch.setattr(faircert.api, "verify", exhausted)
    assert main(["verify", "model.nnet"]) == 2
    err = capsys.readouterr().err
    want = "faircert: error: out of memory before a verdict; the cuda device ran out of memory: give a lower "
    assert err.strip() == want + "--memory-limit"


def test_numba_that_cannot_load_leaves_the_numpy_path(monkeypatch):
    import sys

    from faircert import compiled

    compiled._numba_installed.cache_clear()
    monkeypatch.setitem(sys.modules, "numba", None)  # importing it now raises ImportError
    try:
        assert compiled.available() is False
    finally:
        compiled._numba_installed.cache_clear()


def test_error_messages_are_capped(monkeypatch, capsys):
    import faircert.api
    from faircert.errors import DataError

    def flood(*args, **kwargs):
        raise DataError("x" * 100_000)

    monkeypatch.setattr(faircert.api, "verify", flood)
    assert main(["verify", "model.nnet"]) == 3
    err = capsys.readouterr().err
    assert len(err) < 2100 and err.rstrip().endswith("(98,000 more characters)")


def test_a_deeply_nested_population_file_is_one_clear_error(tmp_path):
    from faircert.errors import FaircertError
    from faircert.population.discrete import DiscretePopulation

    path = tmp_path / "pop.json"
    path.write_text("[" * 20_000 + "]" * 20_000)
    with pytest.raises(FaircertError, match="nested more than"):
        DiscretePopulation.load(path)


def test_every_subcommands_help_loads_without_scipy_or_pandas():
    """`faircert --help` and each subcommand's flags load only what parsing needs: scipy (pulled in
    by population learning) and pandas cost every command a quarter of a second on a busy machine."""
    import subprocess
    import sys

    code = (
        "import sys; from faircert.cli import build_parser; build_parser(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'pandas', 'sklearn', 'torch'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
