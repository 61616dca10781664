"""CatBoost binary classifiers (CatBoostClassifier, a `.cbm` file or its JSON export) -> TreeEnsemble.

CatBoost's trees are oblivious: every node of a level splits on the same (feature, border), and
a point's leaf index has bit i set iff it passes split i (x > border, on the float32 value). Each
tree becomes a full binary tree whose root tests the last split, so the leaves in breadth-first
order are the leaf indices; raw = scale * sum(leaves) + bias, class 1 iff raw > 0.

The JSON export is parsed here. A `.cbm` file is a binary format only CatBoost reads: it is
converted to that JSON by CatBoost in a child process (`isolated`), where a crash on a malformed
file ends only the child; CatBoost also cross-checks the import there. Categorical features are
read by `catboost_categories`; a split it cannot read exactly (a CTR over a combination of columns)
makes the model a black box: the refusal carries (`black_box`) a `CatBoostFile`, which CatBoost
evaluates in a child process, so the file never reaches native code in faircert's own process.
"""

from __future__ import annotations

import importlib.util
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError, UnsupportedModelError
from ...limits import MAX_FEATURES, MAX_TREE_DEPTH, MAX_TREE_NODES, MAX_TREES, check_at_most, loads_json, read_text
from ..pipeline import EncodedFeature, PipelineModel
from ..trees import Tree, TreeEnsemble
from .catboost_categories import ctr_split, one_column, one_hot_split
from .isolated import CHILD, Served, catboost_json, framework_outputs, run_isolated
from .tree_arrays import float_array


def load_catboost(model: Any) -> TreeEnsemble | PipelineModel:
    """Import a fitted CatBoost model object, a `.cbm` file or a CatBoost JSON export: trees over its
    float features, or (with categorical features) a pipeline over its raw columns."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if path.suffix == ".cbm":
            data = loads_json(catboost_json(path), str(path), ModelFormatError)
        else:
            data = loads_json(read_text(path, ModelFormatError, "CatBoost JSON"), str(path), ModelFormatError)
        try:
            ir = catboost_from_dict(data, str(path))
        except UnsupportedModelError as exc:
            if "oblivious_trees" in data and importlib.util.find_spec("catboost") is not None:
                exc.black_box = CatBoostFile(path, _columns(data), str(exc))  # type: ignore[attr-defined]
            raise
        if importlib.util.find_spec("catboost") is None:  # the IR does not need catboost; only the check
            return ir
        if isinstance(ir, PipelineModel):  # checked on the domain's raw rows when bound
            ir.reference = _file_reference(path)
        else:
            ir.check_against(lambda X: framework_outputs("catboost", path, X) > 0, ir.source)
        return ir
    if not hasattr(model, "save_model") or not hasattr(model, "predict"):
        raise ModelFormatError(f"not a CatBoost model: {type(model).__name__}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        model.save_model(str(path), format="json")
        data = loads_json(read_text(path, ModelFormatError, "CatBoost JSON"), type(model).__name__, ModelFormatError)
    ir = catboost_from_dict(data, type(model).__name__)
    if isinstance(ir, PipelineModel):  # checked against the model on the domain's raw rows when bound
        ir.reference = _reference(model)
        return ir
    ir.check_against(lambda X: np.asarray(model.predict(X, prediction_type="RawFormulaVal")) > 0, ir.source)
    return ir


def _reference(model: Any):
    def reference(raw):
        margin = np.asarray(model.predict(raw, prediction_type="RawFormulaVal"), dtype=np.float64).reshape(-1)
        return (margin > 0).astype(np.int64), margin

    return reference


def _file_reference(path: Path):
    """CatBoost's own raw scores of raw rows (categories by name), from the file in a child process."""

    def reference(raw):
        stdout = run_isolated(CHILD, ["catboost-rows", str(path)], _rows_request(raw), "CatBoost", str(path))
        margin = _margins(stdout, len(raw), path)
        return (margin > 0).astype(np.int64), margin

    return reference


def _rows_request(raw: Any) -> bytes:
    """Raw rows (a DataFrame, categories by name) as the child's `catboost-rows` request."""
    rows = [[v.item() if isinstance(v, np.generic) else v for v in r] for r in raw.itertuples(index=False)]
    return json.dumps({"columns": [str(c) for c in raw.columns], "rows": rows}).encode()


def _margins(stdout: bytes, n: int, path: Path) -> np.ndarray:
    try:
        margin = np.load(io.BytesIO(stdout), allow_pickle=False).astype(np.float64).reshape(-1)
    except (ValueError, OSError, EOFError):
        raise ModelFormatError(f"{path}: CatBoost returned no readable predictions") from None
    if margin.shape != (n,):
        raise ModelFormatError(f"{path}: CatBoost returned {margin.size} predictions for {n} rows")
    return margin


class CatBoostFile:
    """A CatBoost file faircert cannot read exactly, as an estimator of raw rows (`BlackBoxModel`):
    CatBoost scores them in one child process kept for the run (`isolated.Served`), at most
    `BATCH` rows a request, so that the child's start is paid once and its memory stays bounded."""

    #: rows per request: large, as each costs a round trip and CatBoost scores a batch at once
    BATCH = 100_000

    def __init__(self, path: Path, columns: list[str], reason: str) -> None:
        self.path = path
        #: the raw columns it reads, by name (a black box is given them in this order)
        self.feature_names_in_ = columns
        #: why no IR holds it, said in the results that answer it
        self.reason = reason
        self.source = f"{path.name} (CatBoost, black box: {_short(reason)})"
        self._child = Served(["catboost-serve", str(path)], "CatBoost", str(path))

    def predict(self, frame: Any) -> np.ndarray:
        """Labels 0/1 of raw rows (a DataFrame of the columns it reads): CatBoost's raw score > 0."""
        out = []
        for i in range(0, len(frame), self.BATCH):
            part = frame.iloc[i : i + self.BATCH]
            out.append(_margins(self._child.ask(_rows_request(part)), len(part), self.path))
        return (np.concatenate(out) > 0).astype(np.int64) if out else np.zeros(0, dtype=np.int64)

    def close(self) -> None:
        """Stop the child now (it also stops when the estimator is collected, or at exit)."""
        self._child.close()


def _short(reason: str) -> str:
    """The reason without where in the file it was met: 'a CatBoost CTR over a combination ...'."""
    return reason.rsplit(": ", 1)[-1].split(" (", 1)[0].removeprefix("a CatBoost ")


def catboost_from_dict(data: Any, source: str) -> TreeEnsemble | PipelineModel:
    if not isinstance(data, dict) or "oblivious_trees" not in data:
        raise ModelFormatError(f"{source}: not a CatBoost model JSON (no 'oblivious_trees')")
    info = data.get("features_info") or {}
    if not isinstance(info, dict):
        raise ModelFormatError(f"{source}: 'features_info' must be an object")
    for kind in ("text_features", "embedding_features"):
        if info.get(kind):
            raise UnsupportedModelError(
                f"{source}: CatBoost {kind.replace('_', ' ')} are not read (float and categorical features only)"
            )
    _check_binary(data.get("model_info") or {}, source)
    floats = _features(info, "float_features", source)
    cats = _features(info, "categorical_features", source)
    check_at_most("features", len(floats) + len(cats), MAX_FEATURES, source)
    raw = data["oblivious_trees"]
    if not isinstance(raw, list) or not raw:
        raise ModelFormatError(f"{source}: 'oblivious_trees' must be a non-empty list")
    check_at_most("trees", len(raw), MAX_TREES, source)
    scale, bias = _scale_and_bias(data.get("scale_and_bias", [1.0, [0.0]]), source)
    if cats:
        return _pipeline(data, info, floats, cats, (scale, bias), source)
    n = max(floats.values(), default=-1) + 1
    if n == 0:
        raise ModelFormatError(f"{source}: the model has no float features")
    if sorted(floats.values()) != list(range(n)):
        raise UnsupportedModelError(f"{source}: the model's inputs are not all float features")
    trees = [_tree(t, _float_splits(floats), k, source) for k, t in enumerate(raw)]
    names = _names(info, n)
    return _ensemble(trees, n, (scale, bias), names, source)


def _ensemble(
    trees: list[Tree], n: int, scale_bias: tuple[float, float], names: list[str], source: str
) -> TreeEnsemble:
    check_at_most("tree nodes", sum(len(t.feature) for t in trees), MAX_TREE_NODES, source)
    return TreeEnsemble(
        trees,
        n,
        split="<=",
        input_float32=True,
        base_score=scale_bias[1],
        scale=scale_bias[0],
        link="sigmoid",
        feature_names=names,
        source=source,
        meta={"framework": "catboost"},
    )


def _features(info: dict, kind: str, source: str) -> dict[int, int]:
    """A kind of feature's index -> its input column (flat index)."""
    listed = info.get(kind) or []
    if not isinstance(listed, list):
        raise ModelFormatError(f"{source}: {kind!r} must be a list")
    column = {}
    for f in listed:
        if not isinstance(f, dict) or not isinstance(f.get("feature_index"), int):
            raise ModelFormatError(f"{source}: a {kind.replace('_', ' ')[:-1]} without an integer 'feature_index'")
        flat = f.get("flat_feature_index", f["feature_index"])
        if not isinstance(flat, int) or not 0 <= flat < MAX_FEATURES:
            raise ModelFormatError(f"{source}: feature {f['feature_index']} has a bad 'flat_feature_index'")
        column[f["feature_index"]] = flat
    if len(set(column.values())) != len(column):
        raise ModelFormatError(f"{source}: two {kind.replace('_', ' ')} share an input column")
    return column


def _columns(data: dict) -> list[str]:
    """The names of every raw column a model reads (by flat index)."""
    info = data.get("features_info") or {}
    flat = [
        f.get("flat_feature_index", f.get("feature_index"))
        for kind in ("float_features", "categorical_features")
        for f in info.get(kind) or []
    ]
    return _names(info, max(flat, default=-1) + 1)


def _names(info: dict, n: int) -> list[str]:
    """The input columns' names by flat index (those CatBoost stores, else f0, f1, ...)."""
    names = {}
    for kind in ("float_features", "categorical_features"):
        for f in info.get(kind) or []:
            flat = f.get("flat_feature_index", f["feature_index"])
            names[flat] = str(f.get("feature_id") or f"f{flat}")
    return [names.get(j, f"f{j}") for j in range(n)]


def _float_splits(column: dict[int, int]) -> Callable[[Any, str], tuple[int, float]]:
    def resolve(s: Any, where: str) -> tuple[int, float]:
        if not isinstance(s, dict) or s.get("split_type") != "FloatFeature":
            kind = s.get("split_type") if isinstance(s, dict) else type(s).__name__
            raise UnsupportedModelError(f"{where}: split of type {kind!r} is not read (float splits only)")
        return _float_split(s, column, where)

    return resolve


def _float_split(s: dict, column: dict[int, int], where: str) -> tuple[int, float]:
    index, b = s.get("float_feature_index"), s.get("border")
    if index not in column or not isinstance(b, (int, float)) or not np.isfinite(b):
        raise ModelFormatError(f"{where}: a split names no float feature or has no finite border")
    return column[index], float(b)


def _pipeline(
    data: dict, info: dict, floats: dict[int, int], cats: dict[int, int], scale_bias: tuple[float, float], source: str
) -> PipelineModel:
    """Raw columns -> float features as they are and one indicator per categorical split -> the trees."""
    n = max([*floats.values(), *cats.values()]) + 1
    names = _names(info, n)
    features = [EncodedFeature(names[floats[i]]) for i in sorted(floats)]
    float_at = {i: k for k, i in enumerate(sorted(floats))}
    binary = _binary_features(info, source)
    ctrs, tables = info.get("ctrs") or [], data.get("ctr_data") or {}
    if not isinstance(tables, dict):
        raise ModelFormatError(f"{source}: 'ctr_data' must be an object")
    indicator: dict[tuple, int] = {}

    def resolve(s: Any, where: str) -> tuple[int, float]:
        kind = s.get("split_type") if isinstance(s, dict) else None
        if kind == "FloatFeature":
            column, border = _float_split(s, floats, where)
            return float_at[next(i for i, c in floats.items() if c == column)], border
        at = s.get("split_index") if isinstance(s, dict) else None
        if kind not in ("OneHotFeature", "OnlineCtr") or not isinstance(at, int) or not 0 <= at < len(binary):
            raise ModelFormatError(f"{where}: a split of type {kind!r} without a valid 'split_index'")
        key = binary[at]
        if key[0] != ("one-hot" if kind == "OneHotFeature" else "ctr"):
            raise ModelFormatError(f"{where}: a {kind} split whose 'split_index' names a {key[0]} split")
        if key not in indicator:
            if key[0] == "one-hot":
                index, split = key[1], one_hot_split(key[2], where)
            else:
                ctr = ctrs[key[1]]
                index = one_column(ctr, where)
                split = ctr_split(ctr, tables.get(str(ctr.get("identifier"))), key[2], where)
            if index not in cats:
                raise ModelFormatError(f"{where}: a split names categorical feature {index}, which the model lacks")
            indicator[key] = len(features)
            features.append(EncodedFeature(names[cats[index]], split))
        return indicator[key], 0.5  # the indicator is 1.0 exactly where the split passes

    trees = [_tree(t, resolve, k, source) for k, t in enumerate(data["oblivious_trees"])]
    ensemble = _ensemble(trees, len(features), scale_bias, [f"{f.column}#{j}" for j, f in enumerate(features)], source)
    return PipelineModel(names, tuple(features), ensemble, f"CatBoost ({source})", named=True)


def _binary_features(info: dict, source: str) -> list[tuple]:
    """CatBoost's numbering of its binary features (a split's 'split_index'): every float border,
    then every one-hot value, then every CTR border, each in the order the model lists them."""
    out: list[tuple] = []
    for kind, field in (("float", "borders"), ("one-hot", "values")):
        for f in info.get(f"{'float' if kind == 'float' else 'categorical'}_features") or []:
            listed = f.get(field) or []
            if not isinstance(listed, list) or not all(isinstance(v, (int, float)) for v in listed):
                raise ModelFormatError(f"{source}: feature {f['feature_index']} has '{field}' that are not numbers")
            out += [(kind, f["feature_index"], v) for v in listed]
    ctrs = info.get("ctrs") or []
    if not isinstance(ctrs, list):
        raise ModelFormatError(f"{source}: 'ctrs' must be a list")
    for k, ctr in enumerate(ctrs):
        borders = ctr.get("borders") if isinstance(ctr, dict) else None
        if not isinstance(borders, list) or not all(isinstance(b, (int, float)) for b in borders):
            raise ModelFormatError(f"{source}: CTR {k} has no list of numeric 'borders'")
        out += [("ctr", k, float(b)) for b in borders]
    return out


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


def _tree(tree: Any, resolve: Callable[[Any, str], tuple[int, float]], k: int, source: str) -> Tree:
    """Oblivious tree k as a full binary tree: level j tests split d-1-j; node i's children are
    2i+1 (x <= border) and 2i+2 (x > border), so leaf index = breadth-first position in the last level.
    `resolve` gives each split's (input, threshold)."""
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
        feature[i], border[i] = resolve(s, f"{where}, split {i}")
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
