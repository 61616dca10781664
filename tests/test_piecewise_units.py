"""Piecewise-linear units (leaky ReLU, PReLU, ReLU6, hard tanh, Clip) rewritten into ReLUs: exact
on every input, read from PyTorch, ONNX and Keras, and decided like any ReLU network."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from boxes_oracle import unfair_points

import faircert
from faircert.domain import Domain, Feature
from faircert.errors import ModelFormatError
from faircert.models.io.affine_chain import affine, build_network, clip, leaky
from faircert.models.io.piecewise import as_relus, clip_unit, leaky_unit

RNG = np.random.default_rng(0)


def _reference(unit: str, z: np.ndarray, a=0.1, low=-1.0, high=2.0) -> np.ndarray:
    if unit == "leaky":
        return np.where(z > 0, z, a * z)
    if unit == "capped leaky":  # Keras ReLU(max_value=high, negative_slope=a)
        return np.where(z >= high, high, np.where(z > 0, z, a * z))
    return np.clip(z, low, high)


@pytest.mark.parametrize(
    "unit, piece",
    [
        ("leaky", leaky_unit(0.1)),
        ("leaky", leaky_unit(np.full(6, 0.1))),
        ("capped leaky", clip_unit(0.0, 2.0, 0.1)),
        ("clip", clip_unit(-1.0, 2.0)),
    ],
)
def test_the_unit_and_its_relu_form_equal_the_function(unit, piece):
    w, b, w2, b2 = RNG.normal(size=(6, 3)), RNG.normal(size=6), RNG.normal(size=(2, 6)), RNG.normal(size=2)
    X = RNG.normal(size=(2000, 3)) * 4
    z = X @ w.T + b
    assert np.allclose(piece(z), _reference(unit, z), rtol=1e-15, atol=1e-14)
    wr, br, w2r, b2r = as_relus(w, b, piece, w2, b2)
    got = np.maximum(X @ wr.T + br, 0.0) @ w2r.T + b2r
    assert np.allclose(got, _reference(unit, z) @ w2.T + b2, rtol=1e-13, atol=1e-13)


def test_open_clips_and_bad_ones():
    z = np.linspace(-5, 5, 101)
    assert np.allclose(clip_unit(None, 1.5)(z), np.minimum(z, 1.5))
    assert np.allclose(clip_unit(-0.5, None)(z), np.maximum(z, -0.5))
    w1, b1, w2, b2 = RNG.normal(size=(4, 3)), RNG.normal(size=4), RNG.normal(size=(1, 4)), RNG.normal(size=1)
    with pytest.raises(ModelFormatError, match="node c: a clip to \\[2.0, 1.0\\] is empty"):
        build_network([affine(w1, b1, "a"), clip(2.0, 1.0, "node c"), affine(w2, b2, "b")], 3, "t")
    with pytest.raises(ModelFormatError, match="3 parameters after a layer of 4 neurons"):
        build_network([affine(w1, b1, "a"), leaky([0.1, 0.2, 0.3], "p"), affine(w2, b2, "b")], 3, "t")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_torch_and_onnx_piecewise_units_equal_the_module(tmp_path):
    torch = pytest.importorskip("torch")
    from faircert.models.io import load_model
    from faircert.models.io.onnx import load_onnx

    nn = torch.nn
    torch.manual_seed(0)
    X = RNG.normal(size=(500, 5)) * 5
    for unit in (nn.ReLU6(), nn.Hardtanh(), nn.Hardtanh(-2.0, 0.5), nn.PReLU(), nn.PReLU(8)):
        module = nn.Sequential(nn.Linear(5, 8), unit, nn.Linear(8, 1))
        if isinstance(unit, nn.PReLU):
            with torch.no_grad():
                unit.weight.uniform_(-0.5, 0.5)
        with torch.no_grad():
            want = module.double()(torch.as_tensor(X)).numpy()[:, 0]
        net = load_model(module)
        assert net.piecewise_linear and np.allclose(net.logit(X), want, rtol=1e-12, atol=1e-12), unit
        path = tmp_path / "m.onnx"
        torch.onnx.export(
            module.float(),
            torch.zeros(1, 5),
            str(path),
            input_names=["x"],
            dynamic_axes={"x": {0: "n"}},
            opset_version=17,
            dynamo=False,
        )  # Clip with Constant bounds, PRelu
        assert np.allclose(load_onnx(path).logit(X), want, rtol=1e-6, atol=1e-6), unit


def test_keras_capped_relus(tmp_path):
    pytest.importorskip("h5py")
    from test_importers_keras import B1, B3, K1, K3, X, dense, keras2_file, sequential

    from faircert.models.io import load_model

    layers = [
        dense("h", 5, "relu6", batch_input_shape=[None, 4]),
        {"class_name": "ReLU", "config": {"name": "r", "max_value": 2.0, "negative_slope": 0.1}},
        dense("o", 1),
    ]
    k3 = np.resize(K3, (5, 1))
    net = load_model(
        keras2_file(
            tmp_path / "m.h5", sequential(layers), {"h": {"kernel": K1, "bias": B1}, "o": {"kernel": k3, "bias": B3}}
        )
    )
    f = np.float32
    z = np.clip(X @ K1.astype(f).astype(float) + B1.astype(f).astype(float), 0.0, 6.0)
    want = (_reference("capped leaky", z) @ k3.astype(f).astype(float) + B3.astype(f).astype(float))[:, 0]
    assert np.allclose(net.logit(X), want, rtol=1e-12, atol=1e-12)


def test_the_complete_check_and_rows_decide_a_clipped_network_like_brute_force():
    dom = Domain((Feature("a", "integer", 0, 6), Feature("s", "binary", 0, 1), Feature("b", "integer", -3, 3)))
    rng = np.random.default_rng(3)
    w1, b1, w2, b2 = (rng.normal(size=s) for s in [(6, 3), 6, (1, 6), 1])
    net = build_network([affine(w1, b1, "a"), clip(-1.0, 1.0, "c"), affine(w2, b2, "b")], 3, "hardtanh")
    grid = np.array(list(itertools.product(range(7), [0, 1], range(-3, 4))), dtype=float)
    net.biases[-1] -= np.quantile(net.logit(grid), 0.4)
    result = faircert.verify(net, dom, protected="s", epsilon={"a": 1}, complete=True, time_limit=60)
    unfair = unfair_points(net, dom, [1], {0: 1})
    assert result.verdict == ("unfair" if unfair else "fair")
    shares = faircert.verify(net, dom, protected="s", epsilon={"a": 1}, time_limit=60)
    assert shares.undecided == 0 and shares.falsified == pytest.approx(unfair / 49)
