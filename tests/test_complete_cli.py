"""Complete and partitioned verification through the API and the CLI: verdicts, rows, exit codes, errors."""

import csv
import json

import numpy as np
import pytest
from boxes_oracle import random_network, unfair_points

import faircert
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.errors import PropertyError
from faircert.models.io.nnet import save_nnet
from faircert.models.trees import Tree, TreeEnsemble

FEATURES = (
    Feature("a", "integer", 0, 9),
    Feature("p", "integer", 0, 4),
    Feature("b", "integer", -3, 3),
    Feature("c", "integer", 0, 4),
)


def _net(seed: int, effect: float):
    net = random_network(np.random.default_rng(seed), 4, [6, 5], scale=0.7)
    net.weights[0][:, 1] *= effect
    return net


@pytest.fixture
def files(tmp_path):
    dom = Domain(FEATURES)
    dom.save(tmp_path / "d.yaml")
    fair = _net(0, 0.0)  # ignores p: fair by construction
    unfair = _net(1, 1.0)
    assert unfair_points(unfair, dom, [1]) > 0
    save_nnet(fair, tmp_path / "fair.nnet")
    save_nnet(unfair, tmp_path / "unfair.nnet")
    return tmp_path


def test_api_complete_and_partitions(files):
    dom = Domain(FEATURES)
    res = faircert.verify(str(files / "fair.nnet"), dom, "p", complete=True, time_limit=30)
    assert res.verdict == "fair" and res.exit_code == 0
    assert res.decision["evidence"] == "proof" and res.certified == 1.0 and res.undecided == 0.0
    assert res.engine == "network-complete"
    res = faircert.verify(str(files / "unfair.nnet"), dom, "p", partition_size=7, time_limit=30)
    assert res.verdict == "unfair" and res.exit_code == 1
    assert res.decision["regions"] == len(res.partitions) == 2 and res.decision["partition_size"] == 7
    assert res.decision["coverage"] == 1.0
    for row in res.partitions:
        assert row["verdict"] in ("fair", "unfair")
        assert (row["counterexample"] is not None) == (row["verdict"] == "unfair")
    assert [r["lower"] for r in res.partitions] == [{"a": 0}, {"a": 7}]
    assert res.partitions[-1]["upper"] == {"a": 9}
    c = res.counterexamples[0]
    assert (c.output > 0) != (c.output_prime > 0) and c.x[1] != c.x_prime[1]


def test_cli_partitions_json_and_csv(files, capsys):
    out_json, out_csv = files / "r.json", files / "p.csv"
    code = main(
        [
            "verify",
            str(files / "unfair.nnet"),
            "--domain",
            str(files / "d.yaml"),
            "--protected",
            "p",
            "--partition-size",
            "7",
            "--json",
            str(out_json),
            "--partitions-csv",
            str(out_csv),
            "--quiet",
        ]
    )
    assert code == 1
    data = json.loads(out_json.read_text())
    assert data["decision"]["verdict"] == "unfair" and data["epsilon_semantics"] == "other_protected_value"
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 2 == len(data["partitions"])
    assert [r["a_min"] for r in rows] == ["0", "7"]
    assert all(r["verdict"] == p["verdict"] for r, p in zip(rows, data["partitions"]))
    assert (
        main(
            [
                "verify",
                str(files / "fair.nnet"),
                "--domain",
                str(files / "d.yaml"),
                "--protected",
                "p",
                "--complete",
                "--quiet",
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--partition-size", "0"], "partition size must be an integer >= 1"),
        (["--partition-size", "1", "--epsilon", "b=1"], None),
        (["--partitions-csv", "x.csv"], "partitions=... needs --partition-size"),
    ],
)
def test_cli_bad_partition_input_exits_3(files, capsys, args, message):
    code = main(
        [
            "verify",
            str(files / "unfair.nnet"),
            "--domain",
            str(files / "d.yaml"),
            "--protected",
            "p",
            "--quiet",
            "--time-limit",
            "5",
        ]
        + args
    )
    err = capsys.readouterr().err
    if message is None:  # a legal small grid: 10 * 7 * 5 partitions, decided
        assert code == 1
        return
    assert code == 3
    assert message in err and len(err.strip().splitlines()) == 1


def test_partition_grid_over_the_limit_is_one_line_error(files, monkeypatch, capsys):
    from faircert.engines.network import partitions

    monkeypatch.setattr(partitions, "MAX_PARTITIONS", 100)
    code = main(
        [
            "verify",
            str(files / "unfair.nnet"),
            "--domain",
            str(files / "d.yaml"),
            "--protected",
            "p",
            "--partition-size",
            "1",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3 and "into 350 partitions (limit 100); use a larger partition size" in err


def test_complete_on_a_linear_model_names_what_is_supported():
    from faircert.engines.registry import find_engine
    from faircert.models.linear import ColumnEncoding, LinearModel
    from faircert.properties import individual_fairness

    model = LinearModel(np.array([1.0, 0.5, -1.0, 0.2]), 0.1, tuple(ColumnEncoding(n) for n in "apbc"))
    with pytest.raises(PropertyError, match="needs a ReLU network or tree ensemble"):
        find_engine(model, individual_fairness(Domain(FEATURES), "p"), "complete")


def test_complete_on_a_tree_ensemble_decides_partitions():
    tree = Tree([0, 0, 0], [5.0, 0, 0], [1, -1, -1], [2, -1, -1], [0.0, -1.0, 1.0])
    model = TreeEnsemble([tree], 4, split="<", input_float32=False)
    res = faircert.verify(model, Domain(FEATURES), "p", partition_size=5, time_limit=20)
    assert res.engine == "tree-complete" and res.verdict == "fair" and len(res.partitions) == 4  # a and b cut in two


def test_robustness_is_accepted_for_networks(files):
    res = faircert.verify(
        str(files / "fair.nnet"), Domain(FEATURES), robustness=True, epsilon={"a": 1}, time_limit=None
    )
    assert res.epsilon_semantics == "robustness"
    assert res.undecided == 0.0
    truth = unfair_points(_net(0, 0.0), Domain(FEATURES), [], {0: 1})
    assert round(res.falsified * res.domain_size) == truth
