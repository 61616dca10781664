"""LightGBM binary classifiers (Booster, LGBMClassifier, or a saved model text file) -> TreeEnsemble.

LightGBM sends x left iff x <= threshold (float64 throughout), sums leaf values (the initial
score is folded into the first tree) and applies sigmoid(sigma * raw) for objective `binary`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ..trees import Tree, TreeEnsemble


def load_lightgbm(model: Any) -> TreeEnsemble:
    """Import a Booster, an LGBMClassifier or a model text file written by `save_model`."""
    try:
        import lightgbm as lgb
    except ImportError:  # pragma: no cover - depends on the environment
        raise ModelFormatError("reading LightGBM models needs the lightgbm package (pip install lightgbm)") from None
    source = type(model).__name__
    if isinstance(model, (str, Path)):
        path = Path(model)
        text = _checked_text(path)
        try:
            booster = lgb.Booster(model_str=text)
        except Exception as exc:  # noqa: BLE001 - LightGBMError for anything that is not a model file
            raise ModelFormatError(f"{path}: not a readable LightGBM model file: {exc}") from None
        source = str(path)
    else:
        booster = getattr(model, "booster_", model)
        classes = getattr(model, "n_classes_", 2)
        if classes != 2:
            raise ModelFormatError(f"only binary classifiers are supported; this model has {classes} classes")
    if not hasattr(booster, "dump_model"):
        raise ModelFormatError(f"not a LightGBM model: {type(model).__name__}")
    ir = lightgbm_from_dict(booster.dump_model(), source)
    ir.check_against(lambda X: booster.predict(X, raw_score=True) > 0, source)
    return ir


def _checked_text(path: Path) -> str:
    """The file's LightGBM model text, checked complete before LightGBM parses it: on a truncated
    file its parser can abort the whole process instead of raising."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ModelFormatError(f"{path}: cannot read the model file: {exc.strerror}") from None
    lines = text.splitlines()
    if not lines or lines[0].strip() != "tree":
        raise ModelFormatError(f"{path}: not a LightGBM model text file (it should start with a line 'tree')")
    sizes = next((ln.split("=", 1)[1].split() for ln in lines if ln.startswith("tree_sizes=")), None)
    trees = sum(ln.startswith("Tree=") for ln in lines)
    if "end of trees" not in text:
        raise ModelFormatError(f"{path}: the LightGBM model text is incomplete (truncated?): no 'end of trees' line")
    if sizes is not None and len(sizes) != trees:
        raise ModelFormatError(f"{path}: the LightGBM model text is incomplete: {trees} of {len(sizes)} trees")
    return text


def _objective(text: str, source: str) -> float:
    parts = text.split()
    if not parts or parts[0] != "binary":
        raise ModelFormatError(f"{source}: objective {text!r} is not binary classification (only 'binary' is supported)")
    sigma = 1.0
    for p in parts[1:]:
        if p.startswith("sigmoid:"):
            sigma = float(p.split(":", 1)[1])
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
    return TreeEnsemble(trees, int(dump["max_feature_idx"]) + 1, split="<=", input_float32=False, base_score=0.0,
                        scale=scale, link="sigmoid", feature_names=list(names) if names else None, source=source,
                        meta={"framework": "lightgbm", "sigmoid": sigma})


def _tree(root: dict, source: str) -> Tree:
    feat, thr, left, right, value = [], [], [], [], []
    stack = [(root, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        k = len(feat)
        if parent >= 0:
            (right if is_right else left)[parent] = k
        feat.append(0); thr.append(0.0); left.append(-1); right.append(-1); value.append(0.0)
        if "leaf_value" in node:
            value[k] = float(node["leaf_value"])
            continue
        if node.get("decision_type") != "<=":
            raise ModelFormatError(f"{source}: categorical split ({node.get('decision_type')!r}) is not supported")
        if node.get("missing_type") == "Zero":
            raise ModelFormatError(f"{source}: a split treats zero as missing (zero_as_missing); retrain with "
                                   "zero_as_missing=False")
        feat[k] = int(node["split_feature"])
        thr[k] = float(node["threshold"])
        stack.append((node["right_child"], k, True))
        stack.append((node["left_child"], k, False))
    return Tree(np.array(feat), np.array(thr), np.array(left), np.array(right), np.array(value))
