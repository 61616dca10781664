"""Networks with smooth units (tanh, sigmoid, GELU, SiLU, ELU) and leaky ReLUs: sound lines per
neuron, sound twin bounds, exact per-row verdicts and shares, and the importers' round trips."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from boxes_oracle import unfair_points

import faircert
from faircert.domain import Domain, Feature
from faircert.engines.network.curves import lines
from faircert.engines.network.symbolic import TwinNet, bound_twins
from faircert.engines.registry import find_engine
from faircert.errors import FaircertError
from faircert.models.activations import Activation
from faircert.models.io.affine_chain import affine, build_network, leaky, smooth
from faircert.models.network import ReluNetwork
from faircert.options import VerifyOptions
from faircert.properties import RowAudit, individual_fairness

UNITS = [Activation(n) for n in ("tanh", "sigmoid", "gelu", "silu", "elu")] + [
    Activation("elu", 0.3),
    Activation("elu", 2.0),
]


def _intervals(rng: np.random.Generator, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """Pre-activation intervals from 1e-9 to 1e3 wide, many spanning 0 or an inflection."""
    width = 10.0 ** rng.uniform(-9, 3, n)
    lo = rng.normal(0, 3, n) - width * rng.random(n)
    return lo, lo + width


@pytest.mark.parametrize("unit", UNITS, ids=str)
def test_lines_hold_the_unit_on_the_whole_interval(unit):
    l, u = _intervals(np.random.default_rng(0))
    sl, bl, su, bu = lines(unit, l, u)
    z = l + (u - l) * np.linspace(0.0, 1.0, 1001)[:, None]  # ends and inflections included densely
    f = unit(z)
    assert np.all(sl * z + bl <= f) and np.all(f <= su * z + bu)
    # and they are tight where the interval is narrow (a curve is almost a line there)
    narrow = u - l < 1e-3
    assert np.all(((su * u + bu) - (sl * u + bl))[narrow] < 1e-6)


@pytest.mark.parametrize("unit", UNITS, ids=str)
def test_interval_ranges_hold_the_unit(unit):
    l, u = _intervals(np.random.default_rng(1))
    low, high = unit.interval(l, u)
    f = unit(l + (u - l) * np.linspace(0.0, 1.0, 1001)[:, None])
    assert np.all(low <= f) and np.all(f <= high)
    low, high = unit.interval(np.array([-np.inf]), np.array([np.inf]))
    assert low[0] <= unit(np.linspace(-50, 50, 10001)).min() and high[0] >= unit(np.array([50.0]))[0]


def _net(rng: np.random.Generator, units: tuple, n_in: int = 4, widths=(7, 5)) -> ReluNetwork:
    sizes = [n_in, *widths, 1]
    w = [rng.normal(size=(sizes[k + 1], sizes[k])) for k in range(len(sizes) - 1)]
    b = [rng.normal(size=sizes[k + 1]) * 0.5 for k in range(len(sizes) - 1)]
    return ReluNetwork(w, b, activations=units)


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "gelu", "silu", "elu"])
@pytest.mark.parametrize("tight", [False, True])
def test_twin_bounds_and_their_linear_forms_hold_every_sampled_point(name, tight):
    rng = np.random.default_rng(2)
    net = _net(rng, (Activation(name), None))  # a smooth layer, then a ReLU layer
    twin = TwinNet.build(net, [0, 1, 2], [3], np.array([[0.0], [1.0]]))
    lo = rng.uniform(-3, 2, (40, 3))
    hi = lo + 10.0 ** rng.uniform(-4, 0.5, (40, 3))
    bd = bound_twins(twin, lo, hi, tight=tight)
    for i in range(40):
        x = rng.uniform(lo[i], hi[i], (500, 3))
        x[:8] = np.where(rng.random((8, 3)) < 0.5, lo[i], hi[i])  # corners
        z = twin.logits(x)
        low = x @ bd.form_a[0, i].T + bd.form_c[0, i]
        up = -(x @ bd.form_a[1, i].T + bd.form_c[1, i])
        pad = 1e-12 * (1 + np.abs(z))
        assert np.all(bd.lower[i] <= z + pad) and np.all(z <= bd.upper[i] + pad)
        assert np.all(low <= z + pad) and np.all(z <= up + pad)
    assert np.all(bd.upper - bd.lower < 50)  # and they say something


def test_leaky_relu_becomes_relus_exactly():
    rng = np.random.default_rng(3)
    w1, b1, w2, b2, w3, b3 = (rng.normal(size=s) for s in [(6, 3), 6, (4, 6), 4, (1, 4), 1])
    ops = [affine(w1, b1, "a"), leaky(0.1, "l1"), affine(w2, b2, "b"), leaky(-0.5, "l2"), affine(w3, b3, "c")]
    net = build_network(ops, 3, "test")
    assert net.piecewise_linear and net.layer_sizes == [3, 12, 8, 1]
    X = rng.normal(size=(1000, 3)) * 4

    def lk(z, a):
        return np.where(z > 0, z, a * z)

    want = lk(lk(X @ w1.T + b1, 0.1) @ w2.T + b2, -0.5) @ w3.T + b3
    assert np.allclose(net.logit(X), want[:, 0], rtol=1e-13, atol=1e-13)


def test_units_after_units_and_hidden_sigmoids_chain():
    rng = np.random.default_rng(4)
    w1, b1, w2, b2 = (rng.normal(size=s) for s in [(5, 3), 5, (1, 5), 1])
    tanh, gelu = Activation("tanh"), Activation("gelu")
    ops = [affine(w1, b1, "a"), smooth(tanh, "t"), smooth(gelu, "g"), affine(w2, b2, "b")]
    net = build_network(ops, 3, "test")
    X = rng.normal(size=(50, 3))
    assert net.activations == (tanh, gelu)
    assert np.allclose(net.logit(X), (gelu(np.tanh(X @ w1.T + b1)) @ w2.T + b2)[:, 0], rtol=1e-13)
    with pytest.raises(FaircertError, match="tanh right before the output"):
        build_network([affine(w1, b1, "a"), smooth(tanh, "t")], 3, "test")


# ----- engines against brute force on tiny domains -----------------------------------------------
DOM = Domain(
    (
        Feature("a", "integer", 0, 6),
        Feature("s", "categorical", 0, 2),
        Feature("b", "integer", -3, 3),
        Feature("c", "integer", 0, 4),
    )
)
EPS = {"a": 2, "b": 1}
NETS = {
    "tanh": (Activation("tanh"), Activation("tanh")),
    "sigmoid": (Activation("sigmoid"), None),
    "gelu": (None, Activation("gelu")),
    "elu": (Activation("elu"), Activation("silu")),
}


def _brute(net: ReluNetwork, rows: np.ndarray, eps: dict[str, int]) -> list[str]:
    s = DOM.index("s")
    out = []
    for x in rows:
        axes = [
            [v for v in f.values() if v != x[s]]
            if j == s
            else range(int(max(f.min, x[j] - eps.get(f.name, 0))), int(min(f.max, x[j] + eps.get(f.name, 0))) + 1)
            for j, f in enumerate(DOM.features)
        ]
        twins = np.array(list(itertools.product(*axes)), dtype=float)
        out.append("unfair" if np.any(net.predict(twins) != net.predict(x[None])[0]) else "fair")
    return out


def _leaky_net(rng: np.random.Generator) -> ReluNetwork:
    w1, b1, w2, b2 = (rng.normal(size=s) for s in [(6, 4), 6, (1, 6), 1])
    return build_network([affine(w1, b1, "a"), leaky(0.2, "l"), affine(w2, b2, "b")], 4, "leaky")


@pytest.mark.parametrize("kind", [*NETS, "leaky"])
def test_row_verdicts_equal_brute_force(kind):
    rng = np.random.default_rng(5)
    net = _leaky_net(rng) if kind == "leaky" else _net(rng, NETS[kind])
    grid = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    net.biases[-1] -= np.quantile(net.logit(grid), 0.45)  # both labels occur (and no logit is 0)
    rows = np.stack([rng.integers(f.min, f.max + 1, 60) for f in DOM.features], axis=1).astype(float)
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows)
    result = find_engine(net, question).run(net, question, VerifyOptions(), None)
    assert result.engine == "rows-network" and result.verdicts == _brute(net, rows, EPS)
    assert "unfair" in result.verdicts and result.counts()["unknown"] == 0


@pytest.mark.parametrize("kind", ["tanh", "gelu"])
def test_rows_with_a_real_feature_are_decided_by_bounds_and_splits_soundly(kind):
    """Balls too big to enumerate: bounds, search and splitting the ball (no MILP for smooth units)
    decide every row; a fair row is never contradicted by a dense grid of its ball."""
    dom = Domain((Feature("s", "binary", 0, 1), Feature("t", "real", -2.0, 2.0), Feature("k", "integer", 0, 3)))
    rng = np.random.default_rng(7)
    net = _net(rng, (Activation(kind),), n_in=3, widths=(6,))
    rows = np.stack([rng.integers(0, 2, 80), rng.uniform(-2, 2, 80), rng.integers(0, 4, 80)], axis=1)
    question = RowAudit(individual_fairness(dom, "s", epsilon={"t": 0.5}), rows)
    result = find_engine(net, question).run(net, question, VerifyOptions(time_limit=60), None)
    assert "bounds" in result.methods and result.counts()["unknown"] == 0
    assert kind != "gelu" or "split" in result.methods  # rows the bounds alone leave open
    for i, x in enumerate(rows):
        t = np.linspace(max(-2, x[1] - 0.5), min(2, x[1] + 0.5), 801)
        twins = np.stack([np.full_like(t, 1 - x[0]), t, np.full_like(t, x[2])], axis=1)
        flips = np.any(net.predict(twins) != net.predict(x[None])[0])
        if result.verdicts[i] == "fair":
            assert not flips
        elif result.verdicts[i] == "unfair":
            twin = np.array(result.twins[i])
            assert net.predict(twin[None])[0] != net.predict(x[None])[0]


@pytest.mark.parametrize("kind", ["tanh", "sigmoid"])
def test_refinement_shares_equal_brute_force_on_a_grid(kind):
    net = _net(np.random.default_rng(8), NETS[kind])
    result = faircert.verify(net, DOM, protected="s", epsilon=EPS, time_limit=60)
    free_points = 7 * 7 * 5
    truth = unfair_points(net, DOM, [1], {0: 2, 2: 1}) / free_points
    assert result.falsified <= truth + 1e-12 and result.certified <= 1 - truth + 1e-12
    assert result.certified + result.falsified > 0.5


def test_refinement_certifies_a_real_domain_without_contradiction():
    dom = Domain((Feature("x", "real", -1.0, 1.0), Feature("s", "binary", 0, 1), Feature("y", "real", 0.0, 2.0)))
    net = _net(np.random.default_rng(9), (Activation("tanh"),), n_in=3, widths=(8,))
    result = faircert.verify(net, dom, protected="s", time_limit=600, max_boxes=2000)
    grid = np.stack(np.meshgrid(np.linspace(-1, 1, 201), np.linspace(0, 2, 201), indexing="ij"), -1).reshape(-1, 2)
    flips = np.mean(
        net.predict(np.insert(grid, 1, 0.0, axis=1)) != net.predict(np.insert(grid, 1, 1.0, axis=1))
    )  # a dense grid's share of unfair points estimates the true share
    assert result.certified <= 1 - flips + 0.01 and result.falsified <= flips + 0.01
    assert result.certified + result.falsified > 0.99
    for c in result.counterexamples:
        assert net.predict(np.array([c.x]))[0] != net.predict(np.array([c.x_prime]))[0]


@pytest.mark.parametrize("kind", ["tanh", "gelu"])
def test_the_complete_check_refines_smooth_networks_like_brute_force(kind):
    """No MILP for smooth units: boxes are split until the bounds or enumeration decide them."""
    rng = np.random.default_rng(10)
    grid = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    verdicts = []
    for weight in (0.0, 3.0):  # s does not matter (fair), or much (unfair)
        net = _net(rng, NETS[kind])
        net.weights[0][:, 1] *= weight
        net.biases[-1] -= np.quantile(net.logit(grid), 0.45)
        result = faircert.verify(net, DOM, protected="s", complete=True, time_limit=120)
        verdicts.append(result.verdict)
        assert result.verdict == ("unfair" if unfair_points(net, DOM, [1]) else "fair")
    assert verdicts == ["fair", "unfair"]


def test_the_complete_check_finds_a_pair_over_real_features():
    dom = Domain((Feature("x", "real", -1.0, 1.0), Feature("s", "binary", 0, 1), Feature("y", "real", 0.0, 2.0)))
    net = _net(np.random.default_rng(9), (Activation("tanh"),), n_in=3, widths=(8,))
    result = faircert.verify(net, dom, protected="s", complete=True, time_limit=60)
    assert result.verdict == "unfair" and result.counterexamples
    c = result.counterexamples[0]
    assert net.predict(np.array([c.x]))[0] != net.predict(np.array([c.x_prime]))[0]


def test_the_milp_and_exports_refuse_smooth_units(tmp_path):
    from faircert.engines.network.problem import Problem
    from faircert.engines.network.vnnlib import export
    from faircert.models.io.nnet import save_nnet

    net = _net(np.random.default_rng(10), NETS["tanh"])
    with pytest.raises(FaircertError, match="the VNN-LIB export needs piecewise-linear activations.*tanh"):
        export(Problem.build(net, individual_fairness(DOM, "s")), tmp_path)
    with pytest.raises(FaircertError, match="the NNet format needs piecewise-linear"):
        save_nnet(net, tmp_path / "n.nnet")


# ----- importers --------------------------------------------------------------------------------
def test_torch_units_round_trip_through_onnx(tmp_path):
    torch = pytest.importorskip("torch")
    from faircert.models.io import load_model
    from faircert.models.io.onnx import load_onnx, save_onnx

    nn = torch.nn
    torch.manual_seed(0)
    X = np.random.default_rng(11).normal(size=(300, 5)) * 3
    for unit in (nn.Tanh(), nn.Sigmoid(), nn.GELU(), nn.SiLU(), nn.ELU(alpha=0.5), nn.LeakyReLU(0.1)):
        module = nn.Sequential(nn.Linear(5, 8), unit, nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1)).double()
        with torch.no_grad():
            want = module(torch.as_tensor(X)).numpy()[:, 0]
        net = load_model(module)
        assert np.allclose(net.logit(X), want, rtol=1e-12, atol=1e-12), unit
        if isinstance(unit, nn.SiLU):  # ONNX has no SiLU operator
            continue
        save_onnx(net, tmp_path / "n.onnx")
        back = load_onnx(tmp_path / "n.onnx")
        assert np.allclose(back.logit(X), want, rtol=1e-6, atol=1e-6), unit  # ELU's alpha is float32 in ONNX


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("activation", ["tanh", "logistic", "identity"])
def test_sklearn_mlp_activations_are_read(activation):
    sk = pytest.importorskip("sklearn.neural_network")
    from faircert.models.io import load_model

    rng = np.random.default_rng(12)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + np.sin(2 * X[:, 1]) > 0).astype(int)
    clf = sk.MLPClassifier((6, 5), activation=activation, random_state=0, max_iter=300).fit(X, y)
    net = load_model(clf)
    P = rng.normal(size=(1000, 4)) * 3
    assert np.allclose(1 / (1 + np.exp(-net.logit(P))), clf.predict_proba(P)[:, 1], rtol=1e-12, atol=1e-12)
    assert np.array_equal(net.predict(P), clf.predict(P))


def test_keras_units_are_read(tmp_path):
    pytest.importorskip("h5py")
    from test_importers_keras import B1, B2, B3, K1, K2, K3, X, dense, keras2_file, sequential

    from faircert.models.io import load_model

    layers = [
        dense("h1", 5, "tanh", batch_input_shape=[None, 4]),
        {"class_name": "LeakyReLU", "config": {"name": "lk", "alpha": 0.1}},
        dense("h2", 3, "gelu"),
        {"class_name": "ELU", "config": {"name": "el", "alpha": 0.5}},
        dense("out", 1, "sigmoid"),
    ]
    weights = {"h1": {"kernel": K1, "bias": B1}, "h2": {"kernel": K2, "bias": B2}, "out": {"kernel": K3, "bias": B3}}
    net = load_model(keras2_file(tmp_path / "m.h5", sequential(layers), weights))
    k1, b1, k2, b2, k3, b3 = (np.asarray(a, dtype=np.float32).astype(float) for a in (K1, B1, K2, B2, K3, B3))
    h = np.tanh(X @ k1 + b1)
    h = Activation("gelu")(np.where(h > 0, h, 0.1 * h) @ k2 + b2)
    want = (Activation("elu", 0.5)(h) @ k3 + b3)[:, 0]
    assert net.output_semantics == "sigmoid" and np.allclose(net.logit(X), want, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore")
def test_gelu_and_silu_exported_by_pytorch_as_small_graphs_are_read(tmp_path):
    torch = pytest.importorskip("torch")
    from faircert.models.io.onnx import load_onnx

    nn = torch.nn
    torch.manual_seed(1)
    X = np.random.default_rng(13).normal(size=(300, 5)) * 3
    for unit, name in ((nn.GELU(), "gelu"), (nn.SiLU(), "silu")):
        module = nn.Sequential(nn.Linear(5, 8), unit, nn.Linear(8, 1))
        path = tmp_path / f"{name}.onnx"
        torch.onnx.export(
            module,
            torch.zeros(1, 5),
            str(path),
            input_names=["x"],
            dynamic_axes={"x": {0: "n"}},
            opset_version=17,
            dynamo=False,
        )
        net = load_onnx(path)  # Div/Erf/Add/Mul/Mul, or Sigmoid/Mul
        assert [str(a) for a in net.activations] == [name]
        with torch.no_grad():
            want = module(torch.as_tensor(X, dtype=torch.float32)).numpy()[:, 0]
        assert np.allclose(net.logit(X), want, rtol=1e-5, atol=1e-5)
    module = nn.Sequential(nn.Linear(5, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 1))
    torch.onnx.export(module, torch.zeros(1, 5), str(tmp_path / "t.onnx"), opset_version=17, dynamo=False)
    with pytest.raises(FaircertError, match="elementwise subgraph computing none of GELU, SiLU"):
        load_onnx(tmp_path / "t.onnx")


def test_the_complete_check_decides_leaky_networks_without_contradiction():
    """Leaky ReLUs are ReLUs in the IR, so the MILP encodes them exactly: a fair verdict survives a
    dense grid of a domain with real features, an unfair one comes with a pair the network splits."""
    dom = Domain(
        (
            Feature("x", "real", -1.0, 1.0),
            Feature("s", "binary", 0, 1),
            Feature("y", "real", 0.0, 2.0),
            Feature("k", "integer", 0, 2),
        )
    )
    g = np.linspace(0.0, 1.0, 61)
    grid = np.array(list(itertools.product(2 * g - 1, [0.0], 2 * g, [0.0, 1.0, 2.0])))
    verdicts = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        w1, b1, w2, b2 = (rng.normal(size=s) for s in [(6, 4), 6, (1, 6), 1])
        w1[:, 1] *= 0.05  # s matters a little
        net = build_network([affine(w1, b1, "a"), leaky(0.2, "l"), affine(w2, b2, "b")], 4, "leaky")
        result = faircert.verify(net, dom, protected="s", complete=True, time_limit=60)
        verdicts.append(result.verdict)
        if result.verdict == "fair":
            other = grid.copy()
            other[:, 1] = 1.0
            assert np.array_equal(net.predict(grid), net.predict(other))
        for c in result.counterexamples:
            assert net.predict(np.array([c.x]))[0] != net.predict(np.array([c.x_prime]))[0]
    assert verdicts == ["fair", "unfair", "unfair"]


def test_a_smooth_layer_that_reads_one_column_per_unit_is_not_taken_for_relus():
    """One hidden layer whose units each read one column is separable, but its tables are those of
    the units: the closed-form engines (written for ReLUs) must leave it to the bounds."""
    dom = Domain((Feature("a", "integer", 0, 6), Feature("s", "binary", 0, 1), Feature("b", "integer", -3, 3)))
    rng = np.random.default_rng(0)
    w1 = np.zeros((6, 3))
    w1[np.arange(6), [0, 0, 1, 1, 2, 2]] = rng.normal(size=6) * 2
    net = ReluNetwork([w1, rng.normal(size=(1, 6))], [rng.normal(size=6), np.array([0.1])], activations=(UNITS[0],))
    result = faircert.verify(net, dom, protected="s", time_limit=60)
    grid = np.array(list(itertools.product(range(7), [0, 1], range(-3, 4))), dtype=float)
    labels = net.predict(grid).reshape(7, 2, 7)
    assert result.engine != "linear-exact"
    assert result.undecided == 0 and result.falsified == pytest.approx(float(np.mean(labels[:, 0] != labels[:, 1])))
    rows = grid[::5]
    audit = find_engine(net, RowAudit(individual_fairness(dom, "s"), rows))
    assert audit.name == "rows-network"
