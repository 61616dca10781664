"""XGBoost binary classifiers (Booster, XGBClassifier, JSON or UBJSON model files) -> TreeEnsemble.

XGBoost sends x left iff float32(x) < threshold (float32), sums leaf values in float32 and adds
the base margin logit(base_score) (binary:logistic) or base_score itself (binary:logitraw).
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import (
    MAX_FEATURES,
    MAX_TREES,
    check_at_most,
    loads_json,
    quoted,
    read_bytes,
    read_text,
)
from ..trees import Tree, TreeEnsemble
from .isolated import framework_outputs
from .tree_arrays import checked_tree, float_array, int_array, whole_number
from .ubjson import loads_ubjson

BINARY_OBJECTIVES = ("binary:logistic", "binary:logitraw", "binary:hinge", "reg:logistic")


def load_xgboost(model: Any) -> TreeEnsemble:
    """Import a Booster, an XGBClassifier, or a .json/.ubj model file."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        data = read_model_document(path)
        ir = xgboost_from_dict(data, source=str(path))
        if importlib.util.find_spec("xgboost") is not None:  # the IR does not need xgboost; only the check
            ir.check_against(lambda X: framework_outputs("xgboost", path, X) > 0, ir.source)
        return ir
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not hasattr(booster, "save_raw"):
        raise ModelFormatError(f"not an XGBoost model: {type(model).__name__}")
    classes = getattr(model, "n_classes_", 2)
    if classes != 2:
        raise ModelFormatError(f"only binary classifiers are supported; this model has {classes} classes")
    ir = xgboost_from_dict(json.loads(booster.save_raw("json")), source=type(model).__name__)
    _check(ir, booster)
    return ir


def read_model_document(path: Path) -> Any:
    """The parsed JSON or UBJSON model document, read by faircert itself (no native loader)."""
    if path.suffix.lower() == ".ubj":
        return loads_ubjson(read_bytes(path, ModelFormatError), str(path), "XGBoost model")
    text = read_text(path, ModelFormatError, "XGBoost JSON model")
    return loads_json(text, str(path), ModelFormatError)


def _check(ir: TreeEnsemble, booster: Any) -> None:
    """The in-memory booster the user passed is already loaded: ask it directly."""
    import xgboost as xgb

    ir.check_against(
        lambda X: booster.predict(xgb.DMatrix(X), output_margin=True, validate_features=False) > 0, ir.source
    )


def _number(text: Any, source: str) -> float:
    """XGBoost writes base_score as '0.5' or, since 3.0, as '[5E-1]'."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    elif isinstance(text, str) and len(text) < 100:
        s = text.strip()
        if s.startswith("[") and s.endswith("]"):
            parts = [p for p in s[1:-1].split(",") if p.strip()]
            if len(parts) != 1:
                raise ModelFormatError(
                    f"{source}: expected one base score, got {quoted(s)} (multi-output models are not supported)"
                )
            s = parts[0]
        try:
            value = float(s)
        except ValueError:
            value = math.nan
    else:
        value = math.nan
    if not math.isfinite(value):
        raise ModelFormatError(f"{source}: base_score must be a finite number, got {quoted(text)}")
    return value


def _field(data: Any, *keys: str, source: str) -> Any:
    """data[k1][k2]...; a missing key or a non-object on the way is a format error naming the path."""
    for k, key in enumerate(keys):
        if not isinstance(data, dict) or key not in data:
            raise ModelFormatError(f"{source}: not an XGBoost model JSON (no {'/'.join(keys[: k + 1])})")
        data = data[key]
    return data


def _object(data: Any, *keys: str, source: str) -> dict:
    found = _field(data, *keys, source=source)
    if not isinstance(found, dict):
        raise ModelFormatError(f"{source}: {'/'.join(keys)} must be an object")
    return found


def xgboost_from_dict(data: Any, source: str = "xgboost") -> TreeEnsemble:
    """Build the IR from XGBoost's JSON model document, checking every field it reads."""
    learner = _object(data, "learner", source=source)
    objective = _field(learner, "objective", "name", source=source)
    param = _object(learner, "learner_model_param", source=source)
    booster = _object(learner, "gradient_booster", source=source)
    if objective not in BINARY_OBJECTIVES:
        raise ModelFormatError(
            f"{source}: objective {quoted(objective)} is not binary classification "
            f"(supported: {', '.join(BINARY_OBJECTIVES)})"
        )
    num_class = whole_number(param.get("num_class", "0"), f"{source}: num_class")
    if num_class > 1 or whole_number(param.get("num_target", "1"), f"{source}: num_target") > 1:
        raise ModelFormatError(f"{source}: multi-class or multi-output models are not supported")
    kind = booster.get("name")
    weights = None
    if kind == "dart":
        weights = float_array(booster.get("weight_drop", []), f"{source}: weight_drop")
        booster = _object(booster, "gbtree", source=source)
    elif kind != "gbtree":
        raise ModelFormatError(f"{source}: booster {quoted(kind)} is not a tree booster (gbtree or dart)")
    model = _object(booster, "model", source=source)
    trees_json = _field(model, "trees", source=source)
    if not isinstance(trees_json, list) or not trees_json:
        raise ModelFormatError(f"{source}: the model has no trees")
    check_at_most("the number of trees", len(trees_json), MAX_TREES, source)
    _check_tree_info(model, len(trees_json), source)
    if weights is not None and len(weights) != len(trees_json):
        raise ModelFormatError(f"{source}: {len(weights)} dart weights for {len(trees_json)} trees")
    base = _number(_field(param, "base_score", source=source), source)
    if objective in ("binary:logistic", "reg:logistic"):
        if not 0.0 < base < 1.0:
            raise ModelFormatError(f"{source}: base_score {base} must lie in (0, 1) for {objective}")
        base_margin = float(np.float32(math.log(base / (1.0 - base))))
    else:
        base_margin = float(np.float32(base))
    n_features = whole_number(_field(param, "num_feature", source=source), f"{source}: num_feature", 1, MAX_FEATURES)
    trees = [_tree(t, j, None if weights is None else weights[j], n_features, source) for j, t in enumerate(trees_json)]
    names = learner.get("feature_names") or None
    if names is not None and (
        not isinstance(names, list) or len(names) != n_features or not all(isinstance(n, str) for n in names)
    ):
        raise ModelFormatError(f"{source}: feature_names must list {n_features} names")
    return TreeEnsemble(
        trees,
        n_features,
        split="<",
        input_float32=True,
        base_score=base_margin,
        scale=1.0,
        link="sigmoid",
        feature_names=list(names) if names else None,
        source=source,
        sum_float32=True,
        meta={"framework": "xgboost", "objective": objective},
    )


def _check_tree_info(model: dict, n_trees: int, source: str) -> None:
    """Every tree must add to the one output (class 0) and the counts must agree: XGBoost itself
    indexes with these numbers unchecked."""
    info = int_array(model.get("tree_info", [0] * n_trees), f"{source}: tree_info")
    if len(info) != n_trees or np.any(info != 0):
        raise ModelFormatError(
            f"{source}: tree_info must give class 0 for each of the {n_trees} trees of a binary model"
        )
    declared = model.get("gbtree_model_param", {})
    if (
        isinstance(declared, dict)
        and "num_trees" in declared
        and whole_number(declared["num_trees"], f"{source}: num_trees") != n_trees
    ):
        raise ModelFormatError(
            f"{source}: num_trees says {quoted(declared['num_trees'])} but the model has {n_trees} trees"
        )
    if "iteration_indptr" in model:
        indptr = int_array(model["iteration_indptr"], f"{source}: iteration_indptr", 0, n_trees)
        if len(indptr) < 1 or indptr[0] != 0 or indptr[-1] != n_trees or np.any(np.diff(indptr) < 0):
            raise ModelFormatError(f"{source}: iteration_indptr does not index the {n_trees} trees")


def _tree(t: Any, j: int, weight: float | None, n_features: int, source: str) -> Tree:
    where = f"{source}: tree {j}"
    if not isinstance(t, dict):
        raise ModelFormatError(f"{where} is not an object")
    try:
        left = int_array(t["left_children"], f"{where} left_children", -1)
        right = int_array(t["right_children"], f"{where} right_children", -1)
        cond = float_array(t["split_conditions"], f"{where} split_conditions")
        feat = int_array(t["split_indices"], f"{where} split_indices", 0)
        split_type = int_array(t.get("split_type", []), f"{where} split_type")
        default_left = int_array(t.get("default_left", []), f"{where} default_left", 0, 1)
    except KeyError as exc:
        raise ModelFormatError(f"{where} has no {exc.args[0]}") from None
    n = len(left)
    if (
        not (len(right) == len(cond) == len(feat) == n)
        or len(split_type) not in (0, n)
        or len(default_left) not in (0, n)
    ):
        raise ModelFormatError(f"{where}: its node arrays differ in length")
    tree_param = t.get("tree_param", {})
    if (
        isinstance(tree_param, dict)
        and "num_nodes" in tree_param
        and whole_number(tree_param["num_nodes"], f"{where} num_nodes") != n
    ):
        raise ModelFormatError(f"{where}: num_nodes says {quoted(tree_param['num_nodes'])} but it has {n} nodes")
    if np.any(split_type != 0):
        raise ModelFormatError(f"{where} has categorical splits, which are not supported")
    leaf = left < 0
    if np.any(feat[~leaf] >= n_features):
        raise ModelFormatError(f"{where}: a split uses a feature index outside 0..{n_features - 1}")
    cond = cond.astype(np.float32).astype(np.float64)
    if not np.all(np.isfinite(cond)):
        raise ModelFormatError(f"{where}: a split condition overflows float32")
    value = np.where(leaf, cond, 0.0)
    if weight is not None:
        value = value * np.float32(weight)
    return checked_tree(np.where(leaf, 0, feat), np.where(leaf, 0.0, cond), left, right, value, where)
