"""Keras models without TensorFlow: `.h5` (Keras 2 and Keras 3 legacy saves) and `.keras` zips.

The architecture comes from the saved JSON configuration (never from code), the weights are read
by the layer names in that configuration from the file's HDF5 tree (copied out of HDF5 by a child
process, `hdf5_tree`, so that a damaged file cannot crash faircert). Sequential and single-path functional models
of Dense layers are supported, with InputLayer, Dropout-like, Flatten, Activation, ReLU, LeakyReLU,
ELU, Softmax, BatchNormalization, Normalization and Rescaling layers (the last two fold input
scaling into the network, so the domain stays in raw units); activations relu / leaky_relu / relu6 /
tanh / sigmoid / gelu / silu / elu / linear, a final sigmoid or two-class softmax.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import ModelFormatError
from ....limits import MAX_FILE_BYTES, MAX_QUOTED, check_at_most, check_file_size, loads_json, quoted
from ...activations import parse
from ...network import ReluNetwork
from ..affine_chain import Op, affine, build_network, check_import, clip, diagonal, leaky, smooth, unsupported
from .hdf5_tree import H5Node, read_hdf5

#: Layers that are the identity when a model predicts.
IDENTITY_LAYERS = {
    "InputLayer",
    "Dropout",
    "AlphaDropout",
    "GaussianDropout",
    "GaussianNoise",
    "ActivityRegularization",
}
MODEL_CLASSES = {"Sequential", "Functional", "Model"}
KERAS_EPSILON = 1e-7  # keras.backend.epsilon(), the floor of Normalization's standard deviation
#: Names of a layer's weights, in the order Keras stores and returns them.
WeightGetter = Callable[[dict, str], dict[str, np.ndarray]]


def load_keras_h5(path: str | Path) -> ReluNetwork:
    """Read a Keras `.h5`/`.keras` file into a ReluNetwork."""
    path = Path(path)
    check_file_size(path, ModelFormatError)
    if zipfile.is_zipfile(path):
        return _load_keras_zip(path)
    f = read_hdf5(path, str(path))
    if "model_config" not in f.attrs:
        raise ModelFormatError(
            f"{path}: the file holds weights but no model architecture (no 'model_config'); "
            "save the whole model with model.save('model.keras') or model.save('model.h5')"
        )
    config = _json(f.attrs["model_config"], path)
    group = f.child("model_weights", str(path)) if f.has("model_weights") else f
    return _build(config, lambda layer, where: _legacy_weights(group, layer, where), str(path))


def _array(node: H5Node, where: str) -> np.ndarray:
    """A weight array (the child that read the file refused data stored in other files)."""
    if node.is_group or node.array is None:
        raise ModelFormatError(
            f"{where}: expected a numeric weight array, found "
            f"{'a group' if node.is_group else f'data of type {quoted(node.dtype)}'}"
        )
    return np.asarray(node.array, dtype=np.float64)


def load_keras_object(model: Any, check_inputs: np.ndarray | None = None) -> ReluNetwork:
    """Translate an in-memory Keras model and check it against `model.predict`."""
    try:
        config = model.get_config()
        by_name = {layer.name: layer for layer in model.layers}
    except Exception as exc:  # subclassed models have no usable config
        raise ModelFormatError(
            f"cannot read the Keras model's configuration ({exc}); "
            "faircert reads Sequential and functional Keras models"
        ) from None
    if not isinstance(config, dict) or "layers" not in config:
        raise ModelFormatError(
            f"Keras model {type(model).__name__} has no layer configuration; "
            "faircert reads Sequential and functional Keras models"
        )
    kind = "Sequential" if type(model).__name__ == "Sequential" else "Functional"

    def weights_of(layer: dict, where: str) -> dict[str, np.ndarray]:
        return _named_weights(layer, by_name[_layer_name(layer)].get_weights(), where)

    network = _build({"class_name": kind, "config": config}, weights_of, f"Keras model {model.name!r}")

    def run(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        try:
            shape = tuple(model.input_shape[1:])  # e.g. (rows, cols) before a Flatten layer
            outputs = model.predict(X.reshape((len(X),) + shape).astype(np.float32), verbose=0)
        except Exception as exc:
            raise ModelFormatError(f"Keras could not run the model on {network.n_inputs}-wide inputs ({exc})") from None
        return X, np.asarray(outputs)

    check_import(network, check_inputs, "Keras", run)
    return network


def _load_keras_zip(path: Path) -> ReluNetwork:
    """A Keras 3 `.keras` archive: config.json plus model.weights.h5 (vars numbered per layer)."""
    try:
        with zipfile.ZipFile(path) as z:
            for name in ("config.json", "model.weights.h5"):
                check_at_most(f"the unpacked size of {name}", z.getinfo(name).file_size, MAX_FILE_BYTES, str(path))
            config = _json(z.read("config.json"), path)
            weights_bytes = z.read("model.weights.h5")
    except KeyError as exc:
        raise ModelFormatError(
            f"{path}: not a Keras archive ({exc.args[0]}); expected config.json and model.weights.h5 inside"
        ) from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFormatError(f"{path}: unreadable .keras archive ({exc})") from None
    h5 = read_hdf5(weights_bytes, f"{path} (model.weights.h5)")
    groups = _zip_layer_groups(h5, config, str(path))
    return _build(config, lambda layer, where: _zip_weights(groups, layer, where), str(path))


def _zip_layer_groups(h5: H5Node, config: dict, where: str) -> dict[str, H5Node]:
    """Map layer names to their `vars` groups in a Keras 3 weights file."""
    stored = h5.child("layers", where) if h5.has("layers") else H5Node(children={})
    groups = {}
    for key in stored.keys():
        g = stored.child(key, where)
        if g.has("vars") and "name" in g.child("vars", where).attrs:
            groups[_text(g.child("vars", where).attrs["name"])] = g.child("vars", where)
    if groups:
        return groups
    # Older Keras 3 files do not record names: the paths are the snake-cased class names in layer order.
    try:
        layers = _ordered_layers(config, where)
    except ModelFormatError:
        return groups
    counts: dict[str, int] = {}
    sequential = config.get("class_name") == "Sequential"
    for layer in layers:
        if sequential and layer.get("class_name") == "InputLayer":
            continue
        base = _snake(layer.get("class_name", ""))
        key = base if base not in counts else f"{base}_{counts[base] + 1}"
        counts[base] = counts.get(base, -1) + 1
        if stored.has(key) and stored.child(key, where).has("vars"):
            groups[_layer_name(layer)] = stored.child(key, where).child("vars", where)
    return groups


def _zip_weights(groups: dict[str, H5Node], layer: dict, where: str) -> dict[str, np.ndarray]:
    group = groups.get(_layer_name(layer))
    if group is None:
        raise ModelFormatError(f"{where}: no weights stored for this layer in model.weights.h5")
    arrays = [
        _array(group.child(k, where), f"{where}: weight {quoted(k)}")
        for k in sorted(group.keys(), key=lambda k: int(k) if k.isdigit() else -1)
    ]
    return _named_weights(layer, arrays, where)


def _legacy_weights(group: H5Node, layer: dict, where: str) -> dict[str, np.ndarray]:
    """Weights of one layer in an `.h5` save: `model_weights/<layer>/` with a `weight_names` list."""
    name = _layer_name(layer)
    if not isinstance(name, str) or not group.has(name):
        raise ModelFormatError(f"{where}: no weights stored for this layer in the file")
    g = group.child(name, where)
    names = g.attrs.get("weight_names", [])
    out = {}
    for full in names if isinstance(names, list) else [names]:
        node = g
        for part in str(full).split("/"):
            node = node.child(part, where)
        out[str(full).rsplit("/", 1)[-1].split(":")[0]] = _array(node, f"{where}: weight {quoted(full)}")
    return out


def _named_weights(layer: dict, arrays: list[np.ndarray], where: str) -> dict[str, np.ndarray]:
    """Name a layer's weights given in Keras' storage order."""
    cls, cfg = layer.get("class_name"), layer.get("config", {})
    if cls == "Dense":
        names = ["kernel"] + (["bias"] if cfg.get("use_bias", True) else [])
    elif cls == "BatchNormalization":
        names = (["gamma"] if cfg.get("scale", True) else []) + (["beta"] if cfg.get("center", True) else [])
        names += ["moving_mean", "moving_variance"]
    elif cls == "Normalization" and cfg.get("mean") is None:
        names = ["mean", "variance", "count"]
    else:
        names = []
    if len(arrays) != len(names):
        raise ModelFormatError(
            f"{where}: {len(arrays)} stored weight arrays, expected {len(names)} ({', '.join(names)})"
        )
    return {n: np.asarray(a, dtype=np.float64) for n, a in zip(names, arrays)}


def _build(config: dict, weights_of: WeightGetter, source: str) -> ReluNetwork:
    try:
        layers = _ordered_layers(config, source)
        shape = _input_shape(config.get("config"), layers)
        flat = shape is None or len(shape) == 1
        ops: list[Op] = []
        for layer in layers:
            cls = layer.get("class_name")
            where = f"{source}: layer {quoted(_layer_name(layer))} ({str(cls)[:MAX_QUOTED]})"
            if cls in MODEL_CLASSES:
                raise unsupported("a nested model", where)
            if cls == "Flatten":
                flat = True
            elif cls in ("Dense", "BatchNormalization", "Normalization", "Rescaling") and not flat:
                assert shape is not None  # else flat from the start
                raise unsupported(f"a {cls} layer on a {list(shape)}-shaped input (add a Flatten layer first)", where)
            else:
                ops += _layer_ops(layer, weights_of, where)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelFormatError(f"{source}: malformed Keras model configuration ({type(exc).__name__}: {exc})") from None
    n_inputs = int(np.prod(shape)) if shape and all(isinstance(d, int) for d in shape) else None
    return build_network(ops, n_inputs, source, metadata={"format": "keras"})


def _ordered_layers(config: dict, source: str) -> list[dict]:
    """The model's layers in the order data flows through them (a single path)."""
    cls = config.get("class_name")
    cfg: Any = config.get("config")  # JSON: a malformed one fails as TypeError or KeyError, reported by the caller
    if cls == "Sequential":
        return list(cfg["layers"] if isinstance(cfg, dict) else cfg)
    if cls not in ("Functional", "Model"):
        raise ModelFormatError(
            f"{source}: unsupported Keras model class {quoted(cls)}; faircert reads Sequential and "
            "functional models of Dense layers"
        )
    by_name = {_layer_name(layer): layer for layer in cfg["layers"]}
    inputs, outputs = _refs(cfg["input_layers"]), _refs(cfg["output_layers"])
    if len(inputs) != 1 or len(outputs) != 1:
        raise ModelFormatError(
            f"{source}: the model has {len(inputs)} inputs and {len(outputs)} outputs; "
            "faircert needs exactly one of each"
        )
    chain, name = [], outputs[0]
    while True:
        layer = by_name[name]
        chain.append(layer)
        if name == inputs[0]:
            break
        parents = _inbound(layer, source)
        if len(parents) != 1 or len(chain) > len(by_name):
            raise unsupported(
                f"a layer with {len(parents)} inputs (only single-path models)",
                f"{source}: layer {quoted(name)} ({str(layer.get('class_name'))[:MAX_QUOTED]})",
            )
        name = parents[0]
    return chain[::-1]


def _inbound(layer: dict, source: str) -> list[str]:
    nodes = layer.get("inbound_nodes") or []
    if len(nodes) > 1:
        raise unsupported("a layer used more than once", f"{source}: layer {quoted(_layer_name(layer))}")
    if not nodes:
        return []
    if not isinstance(nodes[0], dict):  # Keras 2: [[name, node_index, tensor_index, kwargs], ...]
        return [entry[0] for entry in nodes[0]]
    found: list[str] = []  # Keras 3: tensors appear as {"keras_history": [name, ...]} anywhere in args

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if "keras_history" in x:
                found.append(x["keras_history"][0])
            else:
                for v in x.values():
                    walk(v)
        elif isinstance(x, (list, tuple)):  # in-memory configs use tuples
            for v in x:
                walk(v)

    walk(nodes[0])
    return found


def _refs(refs: list) -> list[str]:
    return [refs[0]] if refs and isinstance(refs[0], str) else [r[0] for r in refs]


def _input_shape(cfg: Any, layers: list[dict]) -> tuple | None:
    shape = cfg.get("build_input_shape") if isinstance(cfg, dict) else None
    for key in ("batch_input_shape", "batch_shape"):
        if shape is None and layers:
            shape = layers[0].get("config", {}).get(key)
    return tuple(shape[1:]) if shape else None


def _layer_ops(layer: dict, weights_of: WeightGetter, where: str) -> list[Op]:
    cls, cfg = layer.get("class_name"), layer.get("config", {})
    if cls in IDENTITY_LAYERS:
        return []
    if cls == "Dense":
        w = weights_of(layer, where)
        if "kernel" not in w:
            raise ModelFormatError(f"{where}: no kernel weights stored for this Dense layer")
        kernel = w["kernel"]
        if kernel.ndim != 2 or kernel.shape[1] != cfg.get("units", kernel.shape[1]):
            raise ModelFormatError(f"{where}: kernel of shape {kernel.shape} for {cfg.get('units')} units")
        if cfg.get("use_bias", True) and "bias" not in w:  # a missing bias must not silently read as zeros
            raise ModelFormatError(f"{where}: the layer uses a bias (use_bias) but the file stores none")
        return [affine(kernel.T, w.get("bias"), where)] + _activation(cfg.get("activation"), where)
    if cls == "Activation":
        return _activation(cfg.get("activation"), where)
    if cls == "ReLU":
        if cfg.get("threshold", 0):
            raise unsupported("a ReLU with a threshold (a jump)", where)
        slope, top = float(cfg.get("negative_slope", 0.0) or 0.0), cfg.get("max_value")
        return [leaky(slope, where)] if top is None else [clip(0.0, float(top), where, slope)]
    if cls == "LeakyReLU":  # Keras 3 names the slope negative_slope, Keras 2 alpha
        return [leaky(cfg.get("negative_slope", cfg.get("alpha", 0.3)), where)]
    if cls == "ELU":
        return [smooth(parse("elu", cfg.get("alpha", 1.0)), where)]
    if cls == "Softmax":
        return [Op("softmax", where)]
    if cls == "Rescaling":
        return [diagonal(np.asarray(cfg.get("scale", 1.0)), np.asarray(cfg.get("offset", 0.0)), where)]
    if cls == "Normalization":  # Keras: (x - mean) / max(sqrt(variance), epsilon), or the inverse
        _check_feature_axis(cfg, where)
        if cfg.get("mean") is not None:
            mean, var = np.asarray(cfg["mean"], dtype=np.float64), np.asarray(cfg["variance"], dtype=np.float64)
        else:
            w = weights_of(layer, where)
            mean, var = w["mean"], w["variance"]
        std = np.maximum(np.sqrt(var), KERAS_EPSILON)
        return [diagonal(std, mean, where) if cfg.get("invert") else diagonal(1.0 / std, -mean / std, where)]
    if cls == "BatchNormalization":
        _check_feature_axis(cfg, where)
        w = weights_of(layer, where)
        scale = w.get("gamma", 1.0) / np.sqrt(w["moving_variance"] + cfg.get("epsilon", 1e-3))
        return [diagonal(scale, w.get("beta", 0.0) - w["moving_mean"] * scale, where)]
    raise unsupported(f"layer type {cls}", where)


def _check_feature_axis(cfg: dict, where: str) -> None:
    if np.ravel(cfg.get("axis", -1)).tolist() not in ([-1], [1]):
        raise unsupported(f"normalisation over axis {cfg.get('axis')}", where)


def _activation(act: Any, where: str) -> list[Op]:
    if isinstance(act, dict):  # serialised form: {"class_name": ..., "config": "relu" | {...}}
        act = act.get("config") if isinstance(act.get("config"), str) else act.get("class_name")
    name = str(act or "linear").lower()
    if name == "linear":
        return []
    if name in ("relu", "sigmoid", "softmax"):
        return [Op(name, where)]
    if name in ("tanh", "gelu", "silu", "swish", "elu"):  # Keras' gelu is exact unless approximate=True
        return [smooth(parse(name), where)]
    if name == "leaky_relu":
        return [leaky(0.2, where)]  # the activation function's default slope
    if name == "relu6":
        return [clip(0.0, 6.0, where)]
    raise unsupported(f"activation {quoted(name)}", where)


def _layer_name(layer: dict) -> str:
    return layer.get("config", {}).get("name") or layer.get("name", "?")


def _snake(name: str) -> str:
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, np.bytes_)) else str(value)


def _json(value: Any, path: Path) -> dict:
    try:
        text = _text(value)
    except UnicodeDecodeError:
        raise ModelFormatError(f"{path}: the model configuration is not UTF-8 text") from None
    config = loads_json(text, f"{path}: the model configuration", ModelFormatError)
    if not isinstance(config, dict):
        raise ModelFormatError(f"{path}: the model configuration is not a JSON object")
    return config
