"""`.json` model files: XGBoost model JSON, CatBoost's JSON export or a faircert linear model, told
apart by their keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ModelFormatError
from ...limits import loads_json, read_text


def load_json_model(path: str | Path) -> Any:
    path = Path(path)
    data = loads_json(read_text(path, ModelFormatError, "JSON model"), str(path), ModelFormatError)
    if isinstance(data, dict) and "learner" in data:
        from .xgboost import load_xgboost

        return load_xgboost(path)
    if isinstance(data, dict) and "oblivious_trees" in data:
        from .catboost import load_catboost

        return load_catboost(path)
    if isinstance(data, dict) and "weights" in data and "intercept" in data:
        from .linear_json import load_linear_json

        return load_linear_json(path)
    raise ModelFormatError(
        f"{path}: unrecognised JSON model (expected an XGBoost model JSON with a 'learner' "
        "key, a CatBoost JSON export with 'oblivious_trees', or a linear model with 'weights' and 'intercept')"
    )
