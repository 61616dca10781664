"""CatBoost binary classifiers (CatBoostClassifier, a `.cbm` file or its JSON export) -> TreeEnsemble.

CatBoost's trees are oblivious: every node of a level splits on the same (feature, border), and
a point's leaf index has bit i set iff it passes split i (x > border, on the float32 value). Each
tree becomes a full binary tree whose root tests the last split, so the leaves in breadth-first
order are the leaf indices; raw = scale * sum(leaves) + bias, class 1 iff raw > 0.

The JSON export is parsed here. A `.cbm` file is a binary format only CatBoost reads: it is
converted to that JSON by CatBoost in a child process (`isolated`), where a crash on a malformed
file ends only the child; CatBoost also cross-checks the import there. Categorical features
(one-hot and CTR splits) are not read yet: a model that splits on one is refused with the reason.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError, UnsupportedModelError
from ...limits import MAX_FEATURES, MAX_TREE_DEPTH, MAX_TREE_NODES, MAX_TREES, check_at_most, loads_json, read_text
from ..trees import Tree, TreeEnsemble
from .isolated import catboost_json, framework_outputs
from .tree_arrays import float_array


def load_catboost(model: Any) -> TreeEnsemble:
    """Import a fitted CatBoost model object, a `.cbm` file or a CatBoost JSON export."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if path.suffix == ".cbm":
            data = loads_json(catboost_json(path), str(path), ModelFormatError)
        else:
            data = loads_json(read_text(path, ModelFormatError, "CatBoost JSON"), str(path), ModelFormatError)
        ir = catboost_from_dict(data, str(path))
        if importlib.util.find_spec("catboost") is not None:  # the IR does not need catboost; only the check
            ir.check_against(lambda X: framework_outputs("catboost", path, X) > 0, ir.source)
        return ir
    if not hasattr(model, "save_model") or not hasattr(model, "predict"):
        raise ModelFormatError(f"not a CatBoost model: {type(model).__name__}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        model.save_model(str(path), format="json")
        data = loads_json(read_text(path, ModelFormatError, "CatBoost JSON"), type(model).__name__, ModelFormatError)
    ir = catboost_from_dict(data, type(model).__name__)
    ir.check_against(lambda X: np.asarray(model.predict(X, prediction_type="RawFormulaVal")) > 0, ir.source)
    return ir


def catboost_from_dict(data: Any, source: str) -> TreeEnsemble:
    if not isinstance(data, dict) or "oblivious_trees" not in data:
        raise ModelFormatError(f"{source}: not a CatBoost model JSON (no 'oblivious_trees')")
    info = data.get("features_info") or {}
    if not isinstance(info, dict):
        raise ModelFormatError(f"{source}: 'features_info' must be an object")
    for kind in ("categorical_features", "text_features", "embedding_features"):
        if info.get(kind):
            raise UnsupportedModelError(
                f"{source}: CatBoost {kind.replace('_', ' ')} are not read yet (float features only); "
                "one-hot encode them before CatBoost, or audit the model as a black box"
            )
    _check_binary(data.get("model_info") or {}, source)
    floats = info.get("float_features") or []
    if not isinstance(floats, list):
        raise ModelFormatError(f"{source}: 'float_features' must be a list")
    check_at_most("features", len(floats), MAX_FEATURES, source)
    column = {}  # float feature index -> input column
    names: dict[int, str] = {}
    for f in floats:
        if not isinstance(f, dict) or not isinstance(f.get("feature_index"), int):
            raise ModelFormatError(f"{source}: a float feature without an integer 'feature_index'")
        flat = f.get("flat_feature_index", f["feature_index"])
        if not isinstance(flat, int) or not 0 <= flat < MAX_FEATURES:
            raise ModelFormatError(f"{source}: float feature {f['feature_index']} has a bad 'flat_feature_index'")
        column[f["feature_index"]] = flat
        names[flat] = str(f.get("feature_id") or f"f{flat}")
    n = max(column.values(), default=-1) + 1
    if n == 0:
        raise ModelFormatError(f"{source}: the model has no float features")
    if sorted(column.values()) != list(range(n)):
        raise UnsupportedModelError(f"{source}: the model's inputs are not all float features")
    raw = data["oblivious_trees"]
    if not isinstance(raw, list) or not raw:
        raise ModelFormatError(f"{source}: 'oblivious_trees' must be a non-empty list")
    check_at_most("trees", len(raw), MAX_TREES, source)
    trees = [_tree(t, column, k, source) for k, t in enumerate(raw)]
    check_at_most("tree nodes", sum(len(t.feature) for t in trees), MAX_TREE_NODES, source)
    scale, bias = _scale_and_bias(data.get("scale_and_bias", [1.0, [0.0]]), source)
    return TreeEnsemble(
        trees,
        n,
        split="<=",
        input_float32=True,
        base_score=bias,
        scale=scale,
        link="sigmoid",
        feature_names=[names[j] for j in range(n)],
        source=source,
        meta={"framework": "catboost"},
    )


def _check_binary(model_info: dict, source: str) -> None:
    params = model_info.get("class_params") if isinstance(model_info, dict) else None
    names = params.get("class_names") if isinstance(params, dict) else None
    if names is not None and (not isinstance(names, list) or len(names) != 2):
        count = len(names) if isinstance(names, list) else "?"
        raise ModelFormatError(f"{source}: only binary classifiers are supported; this model has {count} classes")


def _scale_and_bias(value: Any, source: str) -> tuple[float, float]:
    try:
        scale, biases = value
        (bias,) = biases
        scale, bias = float(scale), float(bias)
    except (TypeError, ValueError):
        raise ModelFormatError(f"{source}: 'scale_and_bias' must be [scale, [bias]] (one output)") from None
    if not (np.isfinite(scale) and np.isfinite(bias) and scale > 0):
        raise ModelFormatError(f"{source}: 'scale_and_bias' needs a finite positive scale and a finite bias")
    return scale, bias


def _tree(tree: Any, column: dict[int, int], k: int, source: str) -> Tree:
    """Oblivious tree k as a full binary tree: level j tests split d-1-j; node i's children are
    2i+1 (x <= border) and 2i+2 (x > border), so leaf index = breadth-first position in the last level."""
    where = f"{source}: tree {k}"
    if not isinstance(tree, dict):
        raise ModelFormatError(f"{where} must be an object")
    splits = tree.get("splits") or []
    if not isinstance(splits, list):
        raise ModelFormatError(f"{where}: 'splits' must be a list")
    depth = len(splits)
    check_at_most("tree depth", depth, min(MAX_TREE_DEPTH, 20), where)
    values = float_array(tree.get("leaf_values"), f"{where} leaf_values")
    if values.size != 1 << depth:
        raise UnsupportedModelError(
            f"{where}: {values.size} leaf values for depth {depth} (a multi-class or multi-target model?)"
        )
    feature, border = np.zeros(depth, dtype=np.int64), np.zeros(depth)
    for i, s in enumerate(splits):
        if not isinstance(s, dict) or s.get("split_type") != "FloatFeature":
            kind = s.get("split_type") if isinstance(s, dict) else type(s).__name__
            raise UnsupportedModelError(f"{where}: split of type {kind!r} is not read (float splits only)")
        index, b = s.get("float_feature_index"), s.get("border")
        if index not in column or not isinstance(b, (int, float)) or not np.isfinite(b):
            raise ModelFormatError(f"{where}: split {i} names no float feature or has no finite border")
        feature[i], border[i] = column[index], float(b)
    inner = (1 << depth) - 1
    level = np.floor(np.log2(np.arange(inner) + 1)).astype(np.int64)  # each inner node's level
    ids = np.arange(inner)
    return Tree(
        np.concatenate([feature[depth - 1 - level], np.zeros(1 << depth, dtype=np.int64)]),
        np.concatenate([border[depth - 1 - level], np.zeros(1 << depth)]),
        np.concatenate([2 * ids + 1, -np.ones(1 << depth, dtype=np.int64)]),
        np.concatenate([2 * ids + 2, -np.ones(1 << depth, dtype=np.int64)]),
        np.concatenate([np.zeros(inner), values]),
    )
