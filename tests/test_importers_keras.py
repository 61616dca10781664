"""Keras importer: hand-built Keras 2 / Keras 3 layouts (h5py only), real Keras 3 files, bad input."""

import io
import json
import os
import zipfile

import h5py
import numpy as np
import pytest

from faircert.errors import ModelFormatError
from faircert.models.io import load_model
from faircert.models.io.keras import load_keras_h5

RNG = np.random.default_rng(3)
K1, B1 = RNG.normal(size=(4, 5)), RNG.normal(size=5)  # Keras kernels are in x out
K2, B2 = RNG.normal(size=(5, 3)), RNG.normal(size=3)
K3, B3 = RNG.normal(size=(3, 1)), RNG.normal(size=1)
X = RNG.normal(size=(50, 4)) * 4


def relu(v):
    return np.maximum(v, 0)


def dense(name, units, activation="linear", **extra):
    return {
        "class_name": "Dense",
        "config": {"name": name, "units": units, "activation": activation, "use_bias": True, **extra},
    }


def keras2_file(path, config, weights):
    """Write the Keras 2 `.h5` layout: model_config + model_weights/<layer>/<layer>/<w>:0."""
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"], f.attrs["backend"] = "2.3.0-tf", "tensorflow"
        f.attrs["model_config"] = np.bytes_(json.dumps(config))  # older files store bytes
        group = f.create_group("model_weights")
        group.attrs["layer_names"] = [np.bytes_(n) for n in weights]
        for layer, arrays in weights.items():
            g = group.create_group(layer)
            names = [f"{layer}/{k}:0" for k in arrays]
            g.attrs["weight_names"] = [np.bytes_(n) for n in names]
            for n, v in zip(names, arrays.values()):
                g.create_dataset(n, data=np.asarray(v, dtype=np.float32))
    return path


def sequential(layers):
    return {"class_name": "Sequential", "config": {"name": "sequential", "layers": layers}}


# Layer names sort differently from the layer order, and biases are listed before kernels.
SEQ_LAYERS = [
    dense("z_first", 5, "relu", batch_input_shape=[None, 4]),
    {"class_name": "Dropout", "config": {"name": "drop", "rate": 0.5}},
    dense("b_middle", 3),
    {"class_name": "Activation", "config": {"name": "act", "activation": "relu"}},
    dense("a_out", 1, "sigmoid"),
]
SEQ_WEIGHTS = {
    "a_out": {"bias": B3, "kernel": K3},
    "z_first": {"kernel": K1, "bias": B1},
    "b_middle": {"bias": B2, "kernel": K2},
    "drop": {},
    "act": {},
}


def expected_logit(x, k1=K1, b1=B1):
    f = np.float32
    k1, b1, k2, b2, k3, b3 = (np.asarray(a, dtype=f).astype(float) for a in (k1, b1, K2, B2, K3, B3))
    return (relu(relu(x @ k1 + b1) @ k2 + b2) @ k3 + b3)[:, 0]


def test_keras2_sequential_reads_weights_by_layer_name(tmp_path):
    net = load_model(keras2_file(tmp_path / "m.h5", sequential(SEQ_LAYERS), SEQ_WEIGHTS))
    assert net.layer_sizes == [4, 5, 3, 1] and net.output_semantics == "sigmoid"
    assert np.allclose(net.logit(X), expected_logit(X))


def test_keras2_old_list_config_and_bias_free_layer(tmp_path):
    layers = [
        dense("d1", 5, "relu", batch_input_shape=[None, 4], use_bias=False),
        dense("d2", 3, "relu"),
        dense("d3", 1),
    ]
    config = {"class_name": "Sequential", "config": layers}  # Keras 2.0/2.1 stored a bare list
    weights = {"d1": {"kernel": K1}, "d2": {"kernel": K2, "bias": B2}, "d3": {"kernel": K3, "bias": B3}}
    net = load_keras_h5(keras2_file(tmp_path / "m.hdf5", config, weights))
    assert net.output_semantics == "logit"
    assert np.allclose(net.logit(X), expected_logit(X, b1=np.zeros(5)))


def keras2_functional(layers_in_order):
    """A functional config in Keras 2 syntax, the layer list shuffled (order comes from the graph)."""
    names = [layer["config"]["name"] for layer in layers_in_order]
    layers = []
    for k, layer in enumerate(layers_in_order):
        inbound = [] if k == 0 else [[[names[k - 1], 0, 0, {}]]]
        layers.append({**layer, "name": names[k], "inbound_nodes": inbound})
    shuffled = [layers[i] for i in np.random.default_rng(0).permutation(len(layers))]
    return {
        "class_name": "Functional",
        "config": {
            "name": "model",
            "layers": shuffled,
            "input_layers": [[names[0], 0, 0]],
            "output_layers": [[names[-1], 0, 0]],
        },
    }


def test_keras2_functional_with_two_class_softmax(tmp_path):
    k3, b3 = RNG.normal(size=(3, 2)), RNG.normal(size=2)
    layers = [
        {"class_name": "InputLayer", "config": {"name": "in", "batch_input_shape": [None, 4]}},
        dense("h1", 5, "relu"),
        dense("h2", 3, "relu"),
        dense("out", 2),
        {"class_name": "Activation", "config": {"name": "sm", "activation": "softmax"}},
    ]
    weights = {"h1": {"kernel": K1, "bias": B1}, "h2": {"kernel": K2, "bias": B2}, "out": {"kernel": k3, "bias": b3}}
    net = load_keras_h5(keras2_file(tmp_path / "f.h5", keras2_functional(layers), weights))
    assert net.output_semantics == "softmax2"
    h = relu(relu(X @ K1.astype(np.float32) + B1.astype(np.float32)) @ K2.astype(np.float32) + B2.astype(np.float32))
    z = h @ k3.astype(np.float32) + b3.astype(np.float32)
    assert np.allclose(net.logit(X), z[:, 1] - z[:, 0])  # class 1 iff z1 > z0


def keras3_zip(path, config, vars_by_path, names=True):
    """A Keras 3 `.keras` archive: config.json + model.weights.h5 with layers/<path>/vars/<i>."""
    buf = io.BytesIO()
    with h5py.File(buf, "w") as h5:
        for layer_path, (layer_name, arrays) in vars_by_path.items():
            g = h5.create_group(f"layers/{layer_path}/vars")
            if names:
                g.attrs["name"] = layer_name
            for i, a in enumerate(arrays):
                g.create_dataset(str(i), data=np.asarray(a, dtype=np.float32))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("config.json", json.dumps(config))
        z.writestr("metadata.json", json.dumps({"keras_version": "3.0.0"}))
        z.writestr("model.weights.h5", buf.getvalue())
    return path


@pytest.mark.parametrize("names", [True, False])
def test_keras3_archive_layouts(tmp_path, names):
    """Keras 3 stores vars under snake-cased class paths; newer versions also record the layer name."""
    layers = [
        {"class_name": "InputLayer", "config": {"name": "input_layer", "batch_shape": [None, 4]}},
        dense("first", 5, "relu"),
        dense("second", 3, "relu"),
        dense("third", 1, "sigmoid"),
    ]
    config = {"class_name": "Sequential", "config": {"name": "seq", "layers": layers}}
    vars_by_path = {"dense": ("first", [K1, B1]), "dense_1": ("second", [K2, B2]), "dense_2": ("third", [K3, B3])}
    net = load_model(keras3_zip(tmp_path / "m.keras", config, vars_by_path, names))
    assert np.allclose(net.logit(X), expected_logit(X))


# --- bad input ---------------------------------------------------------------------------------


def bad(tmp_path, layers, weights, match):
    path = keras2_file(tmp_path / "bad.h5", sequential(layers), weights)
    with pytest.raises(ModelFormatError, match=match):
        load_keras_h5(path)


def test_unsupported_layer_and_activation(tmp_path):
    conv = {"class_name": "Conv2D", "config": {"name": "conv", "filters": 2}}
    bad(
        tmp_path,
        [conv, dense("d", 1)],
        {"conv": {}, "d": {"kernel": K3, "bias": B3}},
        r"layer 'conv' \(Conv2D\): layer type Conv2D is not supported",
    )
    bad(
        tmp_path,
        [dense("h", 5, "softplus", batch_input_shape=[None, 4]), dense("o", 1)],
        {"h": {"kernel": K1, "bias": B1}, "o": {"kernel": K3[:1].repeat(5, 0), "bias": B3}},
        r"layer 'h' \(Dense\): activation 'softplus' is not supported",
    )


def test_three_class_softmax_and_hidden_sigmoid(tmp_path):
    k, b = RNG.normal(size=(5, 3)), RNG.normal(size=3)
    bad(
        tmp_path,
        [dense("h", 5, "relu"), dense("o", 3, "softmax")],
        {"h": {"kernel": K1, "bias": B1}, "o": {"kernel": k, "bias": b}},
        r"layer 'o' \(Dense\): softmax over 3 classes",
    )
    bad(
        tmp_path,
        [dense("h", 5, "sigmoid"), dense("o", 3)],
        {"h": {"kernel": K1, "bias": B1}, "o": {"kernel": k, "bias": b}},
        r"ends in 3 outputs",  # the sigmoid is a hidden unit
    )


def test_width_mismatch_and_missing_weights(tmp_path):
    bad(
        tmp_path,
        [dense("h", 5, "relu", batch_input_shape=[None, 4]), dense("o", 1)],
        {"h": {"kernel": K1, "bias": B1}, "o": {"kernel": K3, "bias": B3}},
        r"layer 'o' \(Dense\) takes 3 inputs but receives 5",
    )
    bad(
        tmp_path,
        [dense("h", 5, "relu", batch_input_shape=[None, 3]), dense("o", 1)],
        {"h": {"kernel": K1, "bias": B1}, "o": {"kernel": K3, "bias": B3}},
        r"layer 'h' \(Dense\) takes 4 inputs but receives 3",
    )
    bad(
        tmp_path,
        [dense("h", 5, "relu"), dense("gone", 1)],
        {"h": {"kernel": K1, "bias": B1}},
        r"layer 'gone' \(Dense\): no weights stored",
    )


def test_branching_functional_model(tmp_path):
    layers = [
        {
            "class_name": "InputLayer",
            "config": {"name": "in", "batch_input_shape": [None, 4]},
            "name": "in",
            "inbound_nodes": [],
        },
        {**dense("a", 4), "name": "a", "inbound_nodes": [[["in", 0, 0, {}]]]},
        {
            "class_name": "Add",
            "config": {"name": "add"},
            "name": "add",
            "inbound_nodes": [[["in", 0, 0, {}], ["a", 0, 0, {}]]],
        },
        {**dense("o", 1), "name": "o", "inbound_nodes": [[["add", 0, 0, {}]]]},
    ]
    config = {
        "class_name": "Functional",
        "config": {"layers": layers, "input_layers": [["in", 0, 0]], "output_layers": [["o", 0, 0]]},
    }
    path = keras2_file(
        tmp_path / "b.h5",
        config,
        {"a": {"kernel": np.eye(4), "bias": np.zeros(4)}, "o": {"kernel": K1[:, :1], "bias": B3}},
    )
    with pytest.raises(ModelFormatError, match=r"layer 'add' \(Add\): a layer with 2 inputs"):
        load_keras_h5(path)


def test_garbage_truncated_and_weights_only_files(tmp_path):
    (tmp_path / "g.h5").write_bytes(b"garbage" * 100)
    with pytest.raises(ModelFormatError, match="g.h5: not a readable HDF5/Keras file"):
        load_model(tmp_path / "g.h5")
    good = keras2_file(tmp_path / "ok.h5", sequential(SEQ_LAYERS), SEQ_WEIGHTS).read_bytes()
    (tmp_path / "t.h5").write_bytes(good[: len(good) // 3])
    with pytest.raises(ModelFormatError, match="t.h5"):
        load_model(tmp_path / "t.h5")
    with h5py.File(tmp_path / "w.h5", "w") as f:
        f.create_dataset("dense/kernel:0", data=K1)
    with pytest.raises(ModelFormatError, match="weights but no model architecture"):
        load_model(tmp_path / "w.h5")
    with zipfile.ZipFile(tmp_path / "z.keras", "w") as z:
        z.writestr("config.json", "{not json")
        z.writestr("model.weights.h5", b"")
    with pytest.raises(ModelFormatError, match="not valid JSON"):
        load_model(tmp_path / "z.keras")
    (tmp_path / "n.keras").write_bytes(b"PK\x03\x04 truncated zip")
    with pytest.raises(ModelFormatError, match="n.keras"):
        load_model(tmp_path / "n.keras")


# --- real Keras 3 files (optional: needs the keras package; runs on the torch backend) -------------


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    if int(keras.__version__.split(".")[0]) < 3:
        pytest.skip("needs Keras 3")
    keras.utils.set_random_seed(0)
    return keras


@pytest.mark.filterwarnings("ignore")
def test_real_keras3_sequential_files_and_object(keras, tmp_path):
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((4,)),
            L.Dense(6, activation="relu"),
            L.Dropout(0.2),
            L.BatchNormalization(),
            L.Dense(5),
            L.ReLU(),
            L.Dense(2),
            L.Softmax(),
        ]
    )
    bn = model.layers[2]
    bn.moving_mean.assign(RNG.normal(size=6)), bn.moving_variance.assign(RNG.uniform(0.5, 2, size=6))
    model.save(tmp_path / "m.keras")
    model.save(tmp_path / "m.h5")
    p1 = model.predict(X, verbose=0)[:, 1]
    for net in (load_model(tmp_path / "m.keras"), load_model(tmp_path / "m.h5"), load_model(model)):
        assert net.output_semantics == "softmax2" and net.layer_sizes == [4, 6, 5, 1]
        assert np.allclose(1 / (1 + np.exp(-net.logit(X))), p1, atol=1e-5)


@pytest.mark.filterwarnings("ignore")
def test_real_keras3_functional(keras, tmp_path):
    inp = keras.Input((4,))
    h = keras.layers.Dense(5, name="hidden")(inp)
    h = keras.layers.Activation("relu", name="act")(h)
    out = keras.layers.Dense(1, activation="sigmoid", name="score")(h)
    model = keras.Model(inp, out)
    model.save(tmp_path / "f.keras")
    p = model.predict(X, verbose=0)[:, 0]
    for net in (load_model(tmp_path / "f.keras"), load_model(model)):
        assert net.output_semantics == "sigmoid"
        assert np.array_equal(net.predict(X), (p > 0.5).astype(int))
        assert np.allclose(1 / (1 + np.exp(-net.logit(X))), p, atol=1e-5)


@pytest.mark.filterwarnings("ignore")
def test_keras_object_check_catches_a_mismatch(keras, monkeypatch):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)])
    real = model.predict
    monkeypatch.setattr(model, "predict", lambda x, verbose=0: real(x, verbose=0) + 1.0)
    with pytest.raises(ModelFormatError, match="disagrees with Keras"):
        load_model(model)
    model2 = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softplus"), keras.layers.Dense(1)])
    with pytest.raises(ModelFormatError, match=r"layer 'dense_\d+' \(Dense\): activation 'softplus' is not supported"):
        load_model(model2)


@pytest.mark.filterwarnings("ignore")
def test_real_keras3_input_scaling_layers_fold_into_the_network(keras, tmp_path):
    """Normalization/Rescaling keep the domain in raw units: the network includes the scaling."""
    norm = keras.layers.Normalization(axis=-1)
    norm.adapt(RNG.uniform(size=(200, 4)) * np.array([1.0, 10.0, 100.0, 1000.0]))
    fixed = keras.layers.Normalization(mean=[1.0, 2.0, 3.0, 4.0], variance=[4.0, 1.0, 9.0, 0.25], invert=True)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            norm,
            keras.layers.Rescaling(2.0, offset=-1.0),
            fixed,
            keras.layers.Dense(5, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.save(tmp_path / "n.keras")
    model.save(tmp_path / "n.h5")
    Xraw = RNG.uniform(size=(40, 4)) * np.array([1.0, 10.0, 100.0, 1000.0])
    p = model.predict(Xraw, verbose=0)[:, 0]
    for net in (load_model(tmp_path / "n.keras"), load_model(tmp_path / "n.h5"), load_model(model)):
        assert net.layer_sizes == [4, 5, 1]
        assert np.allclose(net.logit(Xraw), p, rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore")
def test_real_keras3_flatten_of_a_matrix_input(keras, tmp_path):
    model = keras.Sequential(
        [
            keras.Input((2, 2)),
            keras.layers.Flatten(),
            keras.layers.Dense(3, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.save(tmp_path / "m.keras")
    p = model.predict(X.reshape(-1, 2, 2), verbose=0)[:, 0]
    for net in (load_model(tmp_path / "m.keras"), load_model(model)):
        assert net.n_inputs == 4  # row-major flattening, as Keras does
        assert np.allclose(1 / (1 + np.exp(-net.logit(X))), p, atol=1e-5)
    bad_model = keras.Sequential([keras.Input((2, 2)), keras.layers.Dense(3), keras.layers.Dense(1)])
    with pytest.raises(ModelFormatError, match=r"Dense layer on a \[2, 2\]-shaped input \(add a Flatten layer"):
        load_model(bad_model)
