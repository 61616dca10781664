import numpy as np
import pytest

from faircert.demo import accuracy, lending_data, train_relu_network


def test_demo_data_and_training_are_deterministic():
    a, b = lending_data(seed=0), lending_data(seed=0)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.domain.contains(a.X).all()
    net1 = train_relu_network(a.X, a.y, epochs=200)
    net2 = train_relu_network(b.X, b.y, epochs=200)
    for w1, w2 in zip(net1.weights, net2.weights):
        np.testing.assert_array_equal(w1, w2)
    assert accuracy(net1, a.X, a.y) > 0.85


def test_demo_network_depends_on_the_planted_attribute():
    data = lending_data(seed=0)
    net = train_relu_network(data.X, data.y)
    flipped = data.X.copy()
    flipped[:, 4] = 1 - flipped[:, 4]
    flip_rate = np.mean(net.predict(flipped) != net.predict(data.X))
    assert 0.02 < flip_rate < 0.4


def test_demo_command_writes_files_and_json(tmp_path, capsys):
    import json

    from faircert.cli import main

    assert main(["demo", "--out", str(tmp_path), "--quiet", "--time-limit", "20"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {p.name for p in tmp_path.iterdir()} >= {
        "lending.csv",
        "domain.yaml",
        "model.nnet",
        "result.json",
        "counterexamples.csv",
    }
    assert result["verdict"] == "unfair" and result["protected"] == ["sex"]
    assert abs(result["certified"] + result["falsified"] + result["undecided"] - 1) < 1e-12
    assert result["falsified"] > 0.01 and len(result["counterexamples"]) > 0


@pytest.mark.slow
def test_demo_shares_equal_brute_force(tmp_path):
    """The whole 27.7-million-point grid, enumerated: the sound shares must match it exactly."""
    import faircert

    data = lending_data(seed=0)
    net = train_relu_network(data.X, data.y)
    result = faircert.verify(net, domain=data.domain, protected="sex", time_limit=120)
    assert result.undecided == 0.0
    dom = data.domain
    grids = np.meshgrid(*[f.values() for f in dom.features[:4]], indexing="ij")
    points = np.stack([g.ravel() for g in grids], axis=1).astype(np.float64)
    unfair = 0
    for chunk in np.array_split(points, 40):
        a = net.predict(np.column_stack([chunk, np.zeros(len(chunk))]))
        b = net.predict(np.column_stack([chunk, np.ones(len(chunk))]))
        unfair += int(np.sum(a != b))
    assert result.falsified * len(points) == pytest.approx(unfair, abs=0.5)
