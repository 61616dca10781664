"""XGBoost binary classifiers (Booster, XGBClassifier, JSON or UBJSON model files) -> TreeEnsemble.

XGBoost sends x left iff float32(x) < threshold (float32), sums leaf values in float32 and adds
the base margin logit(base_score) (binary:logistic) or base_score itself (binary:logitraw).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ..trees import Tree, TreeEnsemble

BINARY_OBJECTIVES = ("binary:logistic", "binary:logitraw", "binary:hinge", "reg:logistic")


def load_xgboost(model: Any) -> TreeEnsemble:
    """Import a Booster, an XGBClassifier, or a .json/.ubj model file."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if path.suffix.lower() == ".ubj":
            data = _read_ubj(path)
        else:
            try:
                data = json.loads(path.read_text())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ModelFormatError(f"{path}: not a readable XGBoost JSON model: {exc}") from None
        ir = xgboost_from_dict(data, source=str(path))
        try:
            import xgboost as xgb
        except ImportError:  # the IR does not need xgboost; only the cross-check does
            return ir
        _check(ir, xgb.Booster(model_file=str(path)))
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


def _check(ir: TreeEnsemble, booster: Any) -> None:
    import xgboost as xgb

    ir.check_against(lambda X: booster.predict(xgb.DMatrix(X), output_margin=True, validate_features=False) > 0, ir.source)


def _read_ubj(path: Path) -> dict:
    try:
        import xgboost as xgb
    except ImportError:  # pragma: no cover - depends on the environment
        raise ModelFormatError("reading .ubj models needs the xgboost package (pip install xgboost)") from None
    try:
        booster = xgb.Booster(model_file=str(path))
    except Exception as exc:  # noqa: BLE001 - xgboost raises its own XGBoostError for any unreadable file
        # xgboost's message: "[time] source:line: reason", then its native stack trace
        reason = str(exc).split("\nStack trace", 1)[0].strip().split(": ", 1)[-1]
        raise ModelFormatError(f"{path}: not a readable XGBoost model: {reason}") from None
    return json.loads(booster.save_raw("json"))


def _number(text: Any) -> float:
    """XGBoost writes base_score as '0.5' or, since 3.0, as '[5E-1]'."""
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip()
    if s.startswith("[") and s.endswith("]"):
        parts = [p for p in s[1:-1].split(",") if p.strip()]
        if len(parts) != 1:
            raise ModelFormatError(f"expected one base score, got {s!r} (multi-output models are not supported)")
        s = parts[0]
    return float(s)


def xgboost_from_dict(data: dict, source: str = "xgboost") -> TreeEnsemble:
    """Build the IR from XGBoost's JSON model document."""
    try:
        learner = data["learner"]
        objective = learner["objective"]["name"]
        param = learner["learner_model_param"]
        booster = learner["gradient_booster"]
    except (KeyError, TypeError):
        raise ModelFormatError(f"{source}: not an XGBoost model JSON (no learner/objective/gradient_booster)") from None
    if objective not in BINARY_OBJECTIVES:
        raise ModelFormatError(f"{source}: objective {objective!r} is not binary classification "
                               f"(supported: {', '.join(BINARY_OBJECTIVES)})")
    if int(param.get("num_class", "0")) > 1 or int(param.get("num_target", "1")) > 1:
        raise ModelFormatError(f"{source}: multi-class or multi-output models are not supported")
    kind = booster.get("name")
    weights = None
    if kind == "dart":
        weights = [float(w) for w in booster.get("weight_drop", [])]
        booster = booster["gbtree"]
    elif kind != "gbtree":
        raise ModelFormatError(f"{source}: booster {kind!r} is not a tree booster (gbtree or dart)")
    trees_json = booster["model"]["trees"]
    if not trees_json:
        raise ModelFormatError(f"{source}: the model has no trees")
    base = _number(param["base_score"])
    if objective in ("binary:logistic", "reg:logistic"):
        if not 0.0 < base < 1.0:
            raise ModelFormatError(f"{source}: base_score {base} must lie in (0, 1) for {objective}")
        base_margin = float(np.float32(math.log(base / (1.0 - base))))
    else:
        base_margin = float(np.float32(base))
    n_features = int(param["num_feature"])
    trees = []
    for j, t in enumerate(trees_json):
        if any(int(s) != 0 for s in t.get("split_type", [])):
            raise ModelFormatError(f"{source}: tree {j} has categorical splits, which are not supported")
        left = np.asarray(t["left_children"], dtype=np.int64)
        right = np.asarray(t["right_children"], dtype=np.int64)
        cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64)
        feat = np.asarray(t["split_indices"], dtype=np.int64)
        leaf = left < 0
        value = np.where(leaf, cond, 0.0)
        if weights is not None:
            value = value * np.float32(weights[j])
        trees.append(Tree(np.where(leaf, 0, feat), np.where(leaf, 0.0, cond), left, right, value))
    names = learner.get("feature_names") or None
    return TreeEnsemble(trees, n_features, split="<", input_float32=True, base_score=base_margin, scale=1.0,
                        link="sigmoid", feature_names=list(names) if names else None, source=source,
                        sum_float32=True, meta={"framework": "xgboost", "objective": objective})
