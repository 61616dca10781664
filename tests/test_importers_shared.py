"""The 29 shared benchmark networks: Keras .h5, NNet text and our ONNX export must agree."""

from pathlib import Path

import numpy as np
import pytest

from faircert.models.io import load_model
from faircert.models.io.keras import load_keras_h5
from faircert.models.io.nnet import load_nnet
from faircert.models.io.onnx import load_onnx, save_onnx

MODELS = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "models"
PAIRS = sorted(MODELS.glob("*/*.h5"))


def _inputs(net, n=500, seed=0):
    """Random integer inputs inside the NNet header's input ranges."""
    rng = np.random.default_rng(seed)
    return rng.integers(net.input_lower.astype(int), net.input_upper.astype(int) + 1, size=(n, net.n_inputs))


def _magnitude(net, X):
    """|W|...|W||x| + |b|: the scale the logit's rounding error is relative to."""
    h = np.abs(X.astype(float))
    for w, b in zip(net.weights, net.biases):
        h = h @ np.abs(w.T) + np.abs(b)
    return h[:, 0]


def test_all_pairs_present():
    if not MODELS.is_dir():
        pytest.skip("shared benchmark files are not present")
    assert len(PAIRS) == 29
    assert all(p.with_suffix(".nnet").exists() for p in PAIRS)


@pytest.mark.parametrize("h5", PAIRS, ids=[p.stem for p in PAIRS])
def test_h5_and_nnet_agree(h5):
    keras_net, nnet = load_keras_h5(h5), load_nnet(h5.with_suffix(".nnet"))
    assert keras_net.layer_sizes == nnet.layer_sizes
    assert keras_net.output_semantics == "sigmoid"
    # The .nnet text keeps 6 significant digits, so weights agree to that precision ...
    for wk, wn, bk, bn in zip(keras_net.weights, nnet.weights, keras_net.biases, nnet.biases):
        assert np.allclose(wk, wn, rtol=1e-5, atol=1e-9)
        assert np.allclose(bk, bn, rtol=1e-5, atol=1e-9)
    # ... and logits agree to 1e-4 relative to their magnitude (up to 3,900 on Bank inputs like 5000).
    X = _inputs(nnet)
    zk, zn = keras_net.logit(X), nnet.logit(X)
    assert np.all(np.abs(zk - zn) <= 1e-4 * (1.0 + _magnitude(nnet, X)))
    assert np.all(np.abs(zk - zn) <= 1e-4 * (1.0 + np.abs(zn)) + 1e-2)
    clear = np.abs(zn) > 1e-3 * (1.0 + _magnitude(nnet, X))
    assert np.array_equal(zk[clear] > 0, zn[clear] > 0)


@pytest.mark.parametrize("h5", PAIRS, ids=[p.stem for p in PAIRS])
def test_onnx_round_trip(h5, tmp_path):
    nnet = load_nnet(h5.with_suffix(".nnet"))
    out = tmp_path / "net.onnx"
    save_onnx(nnet, out)
    back = load_model(out)  # the dispatcher, the import check against the reference runtime included
    X = _inputs(nnet, 200, seed=1)
    assert np.allclose(back.logit(X), nnet.logit(X), rtol=1e-12, atol=1e-9)  # float64 export: exact
    assert np.array_equal(back.input_lower, nnet.input_lower) and np.array_equal(back.input_upper, nnet.input_upper)
    keras_net = load_keras_h5(h5)
    save_onnx(keras_net, out, dtype=np.float32)  # Keras weights are float32: exact in a float32 export
    assert np.allclose(load_onnx(out).logit(X), keras_net.logit(X), rtol=1e-12, atol=1e-9)


def test_nnet_header_normalisation_must_not_be_applied():
    """The .nnet headers list means/ranges, yet the networks take raw codes: applying them breaks agreement."""
    if not MODELS.is_dir():
        pytest.skip("shared benchmark files are not present")
    for name in ("compas/compas-1", "adult/AC-1", "bank/BM-1"):
        path = MODELS / f"{name}.nnet"
        rows = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("//")]
        n = load_nnet(path).n_inputs
        means = np.array([float(v) for v in rows[5].split(",") if v.strip()][:n])
        ranges = np.array([float(v) for v in rows[6].split(",") if v.strip()][:n])
        assert not (np.allclose(means, 0) and np.allclose(ranges, 1))  # non-trivial header statistics
        nnet, keras_net = load_nnet(path), load_keras_h5(path.with_suffix(".h5"))
        X = _inputs(nnet, 2000, seed=2)
        normalised = nnet.logit((X - means) / ranges)
        assert np.mean((normalised > 0) != (keras_net.logit(X) > 0)) > 0.05
        assert np.array_equal(nnet.predict(X), keras_net.predict(X))
