"""LightGBM binary classifiers (Booster, LGBMClassifier, or a saved model text file) -> TreeEnsemble.

LightGBM sends x left iff x <= threshold (float64 throughout), sums leaf values (the initial
score is folded into the first tree) and applies sigmoid(sigma * raw) for objective `binary`.
Model text files are parsed here, not by LightGBM, whose parser can abort the process on a
malformed file; LightGBM only cross-checks the result, in a child process (`isolated`).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import MAX_FEATURES, MAX_TREE_NODES, MAX_TREES, check_at_most, quoted, read_text
from ..trees import Tree, TreeEnsemble
from .isolated import framework_outputs
from .tree_arrays import checked_tree, float_array, int_array, whole_number

#: Bits of a LightGBM decision_type: categorical split, and the missing-value type (bits 2-3).
CATEGORICAL = 1
MISSING_ZERO = 1


def load_lightgbm(model: Any) -> TreeEnsemble:
    """Import a Booster, an LGBMClassifier or a model text file written by `save_model`."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        ir = lightgbm_from_text(read_model_text(path), str(path))
        if importlib.util.find_spec("lightgbm") is not None:  # the IR does not need lightgbm; only the check
            ir.check_against(lambda X: framework_outputs("lightgbm", path, X) > 0, ir.source)
        return ir
    booster = getattr(model, "booster_", model)
    classes = getattr(model, "n_classes_", 2)
    if classes != 2:
        raise ModelFormatError(f"only binary classifiers are supported; this model has {classes} classes")
    if not hasattr(booster, "dump_model"):
        raise ModelFormatError(f"not a LightGBM model: {type(model).__name__}")
    source = type(model).__name__
    ir = lightgbm_from_dict(booster.dump_model(), source)
    ir.check_against(lambda X: booster.predict(X, raw_score=True) > 0, source)
    return ir


def read_model_text(path: Path) -> str:
    """The file's LightGBM model text, with its overall layout checked."""
    text = read_text(path, ModelFormatError, "LightGBM model text")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "tree":
        raise ModelFormatError(f"{path}: not a LightGBM model text file (it should start with a line 'tree')")
    if "end of trees" not in text:
        raise ModelFormatError(f"{path}: the LightGBM model text is incomplete (truncated?): no 'end of trees' line")
    if "\nparameters:" in text and "end of parameters" not in text:  # LightGBM's parser aborts on this
        raise ModelFormatError(
            f"{path}: the LightGBM model text is incomplete (truncated?): no 'end of parameters' line"
        )
    return text


def lightgbm_from_text(text: str, source: str) -> TreeEnsemble:
    """Build the IR from LightGBM's model text (what `save_model` writes), checking every field."""
    header, blocks = _sections(text, source)
    if (
        whole_number(header.get("num_class", "1"), f"{source}: num_class") != 1
        or whole_number(header.get("num_tree_per_iteration", "1"), f"{source}: num_tree_per_iteration") != 1
    ):
        raise ModelFormatError(f"{source}: multi-class models are not supported")
    sigma = _objective(header.get("objective", ""), source)
    n_features = whole_number(header.get("max_feature_idx"), f"{source}: max_feature_idx", 0, MAX_FEATURES - 1) + 1
    sizes = header.get("tree_sizes", "").split()
    if sizes and len(sizes) != len(blocks):
        raise ModelFormatError(f"{source}: the LightGBM model text is incomplete: {len(blocks)} of {len(sizes)} trees")
    if not blocks:
        raise ModelFormatError(f"{source}: the model has no trees")
    check_at_most("the number of trees", len(blocks), MAX_TREES, source)
    trees = [_text_tree(block, j, n_features, source) for j, block in enumerate(blocks)]
    names = header.get("feature_names", "").split() or None
    if names is not None and len(names) != n_features:
        raise ModelFormatError(f"{source}: feature_names lists {len(names)} names for {n_features} features")
    scale = sigma / len(trees) if "average_output" in header else sigma
    return TreeEnsemble(
        trees,
        n_features,
        split="<=",
        input_float32=False,
        base_score=0.0,
        scale=scale,
        link="sigmoid",
        feature_names=names,
        source=source,
        meta={"framework": "lightgbm", "sigmoid": sigma},
    )


def _sections(text: str, source: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The header's `key=value` lines (a bare key maps to '') and one such dict per `Tree=` block,
    up to the line 'end of trees'."""
    header: dict[str, str] = {}
    blocks: list[dict[str, str]] = []
    current = header
    for line in text.split("end of trees", 1)[0].splitlines()[1:]:
        line = line.strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        if key == "Tree":
            if whole_number(value, f"{source}: a Tree= number") != len(blocks):
                raise ModelFormatError(f"{source}: tree {quoted(value)} is out of order (expected {len(blocks)})")
            current = {}
            blocks.append(current)
            continue
        if key in current:
            raise ModelFormatError(f"{source}: {quoted(key)} is given twice in one section")
        current[key] = value
    return header, blocks


def _values(block: dict[str, str], key: str, count: int, where: str, parse: Any) -> np.ndarray:
    """The `count` space-separated values of `key`, parsed by `parse` (int_array or float_array)."""
    if key not in block:
        raise ModelFormatError(f"{where} has no {key}")
    tokens = block[key].split()
    if len(tokens) != count:
        raise ModelFormatError(f"{where}: {key} has {len(tokens)} values, expected {count}")
    try:
        numbers = [float(t) if parse is float_array else int(t) for t in tokens]
    except ValueError:
        raise ModelFormatError(f"{where}: {key} holds something that is not a number") from None
    return parse(numbers, f"{where} {key}")


def _text_tree(block: dict[str, str], j: int, n_features: int, source: str) -> Tree:
    """One `Tree=` block: internal nodes 0..L-2, then the L leaves; a child < 0 is leaf ~child."""
    where = f"{source}: tree {j}"
    leaves = whole_number(block.get("num_leaves"), f"{where} num_leaves", 1, MAX_TREE_NODES)
    if block.get("num_cat", "0") != "0":
        raise ModelFormatError(f"{where}: categorical splits are not supported")
    if block.get("is_linear", "0") != "0":
        raise ModelFormatError(f"{where}: linear trees (linear_tree=True) are not supported")
    value = _values(block, "leaf_value", leaves, where, float_array)
    inner = leaves - 1
    feat = _values(block, "split_feature", inner, where, lambda v, w: int_array(v, w, 0, n_features - 1))
    thr = _values(block, "threshold", inner, where, float_array)
    kind = _values(block, "decision_type", inner, where, lambda v, w: int_array(v, w, 0, 255))
    left = _values(block, "left_child", inner, where, lambda v, w: int_array(v, w, -leaves, inner - 1))
    right = _values(block, "right_child", inner, where, lambda v, w: int_array(v, w, -leaves, inner - 1))
    if np.any(kind & CATEGORICAL):
        raise ModelFormatError(f"{where}: categorical splits are not supported")
    if np.any((kind >> 2) & 3 == MISSING_ZERO):
        raise ModelFormatError(
            f"{where}: a split treats zero as missing (zero_as_missing); retrain with zero_as_missing=False"
        )
    node = lambda child: np.where(child < 0, inner + ~child, child)  # noqa: E731 - leaf k is node inner + k
    return checked_tree(
        np.concatenate([feat, np.zeros(leaves, np.int64)]),
        np.concatenate([thr, np.zeros(leaves)]),
        np.concatenate([node(left), np.full(leaves, -1)]),
        np.concatenate([node(right), np.full(leaves, -1)]),
        np.concatenate([np.zeros(inner), value]),
        where,
    )


def _objective(text: str, source: str) -> float:
    parts = text.split()
    if not parts or parts[0] != "binary":
        raise ModelFormatError(
            f"{source}: objective {quoted(text)} is not binary classification (only 'binary' is supported)"
        )
    sigma = 1.0
    for p in parts[1:]:
        if p.startswith("sigmoid:"):
            try:
                sigma = float(p.split(":", 1)[1])
            except ValueError:
                sigma = math.nan
            if not (math.isfinite(sigma) and sigma > 0):
                raise ModelFormatError(
                    f"{source}: the objective's sigmoid must be a finite number > 0, got {quoted(p)}"
                )
    return sigma


def lightgbm_from_dict(dump: dict, source: str = "lightgbm") -> TreeEnsemble:
    """Build the IR from `Booster.dump_model()`."""
    if int(dump.get("num_class", 1)) != 1 or int(dump.get("num_tree_per_iteration", 1)) != 1:
        raise ModelFormatError(f"{source}: multi-class models are not supported")
    sigma = _objective(str(dump.get("objective", "")), source)
    trees = [_tree(t["tree_structure"], source) for t in dump.get("tree_info", [])]
    if not trees:
        raise ModelFormatError(f"{source}: the model has no trees")
    scale = sigma / len(trees) if dump.get("average_output") else sigma
    names = dump.get("feature_names")
    return TreeEnsemble(
        trees,
        int(dump["max_feature_idx"]) + 1,
        split="<=",
        input_float32=False,
        base_score=0.0,
        scale=scale,
        link="sigmoid",
        feature_names=list(names) if names else None,
        source=source,
        meta={"framework": "lightgbm", "sigmoid": sigma},
    )


def _tree(root: dict, source: str) -> Tree:
    feat: list[int] = []
    left: list[int] = []
    right: list[int] = []
    thr: list[float] = []
    value: list[float] = []
    stack = [(root, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        k = len(feat)
        if parent >= 0:
            (right if is_right else left)[parent] = k
        feat.append(0)
        thr.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append(0.0)
        if "leaf_value" in node:
            value[k] = float(node["leaf_value"])
            continue
        if node.get("decision_type") != "<=":
            raise ModelFormatError(f"{source}: categorical split ({node.get('decision_type')!r}) is not supported")
        if node.get("missing_type") == "Zero":
            raise ModelFormatError(
                f"{source}: a split treats zero as missing (zero_as_missing); retrain with zero_as_missing=False"
            )
        feat[k] = int(node["split_feature"])
        thr[k] = float(node["threshold"])
        stack.append((node["right_child"], k, True))
        stack.append((node["left_child"], k, False))
    return Tree(np.array(feat), np.array(thr), np.array(left), np.array(right), np.array(value))
