"""Importers: every supported model format or framework object -> one IR.

`load_model` is the single entry point; it picks the importer by file suffix or object type and
imports framework packages only when they are needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ModelFormatError, UnsupportedModelError

SUFFIXES = {
    ".nnet": "nnet",
    ".h5": "keras_h5",
    ".hdf5": "keras_h5",
    ".keras": "keras_h5",
    ".onnx": "onnx",
    ".ubj": "xgboost",
    ".json": "json",  # XGBoost model JSON or a faircert linear-model JSON; sniffed
    ".txt": "lightgbm",
    ".pt": "torch",
    ".pth": "torch",
    ".pkl": "pickle",
    ".pickle": "pickle",
    ".joblib": "pickle",
}


FRAMEWORKS = ("onnx", "keras", "tensorflow", "tf_keras", "torch", "xgboost", "lightgbm", "sklearn")


def load_model(model: Any, trust_pickle: bool = False, preprocessor: Any = None) -> Any:
    """Return the IR for a path or a framework object; IR objects pass through unchanged.

    `preprocessor` (a fitted scikit-learn ColumnTransformer or Pipeline of transformers, or a pickle
    of one) is what encoded the raw columns the model was trained on: the IR then reads raw columns.
    """
    from ..network import ReluNetwork

    if preprocessor is not None:
        from .preprocessed import load_preprocessed

        if isinstance(preprocessor, (str, Path)):
            if not Path(preprocessor).exists():
                raise ModelFormatError(f"preprocessor file not found: {preprocessor}")
            preprocessor = _unpickle(Path(preprocessor), trust_pickle)
        return load_preprocessed(preprocessor, load_model(model, trust_pickle))

    if isinstance(model, ReluNetwork):
        return model
    if isinstance(model, (str, Path)):
        return _load_path(Path(model), trust_pickle)
    return _load_object(model)


def _load_path(path: Path, trust_pickle: bool) -> Any:
    if not path.exists():
        raise ModelFormatError(f"model file not found: {path}")
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(SUFFIXES))
        raise ModelFormatError(f"{path}: unsupported model file type {path.suffix!r} (supported: {known})")
    if kind == "nnet":
        from .nnet import load_nnet

        return load_nnet(path)
    if kind == "keras_h5":
        from .keras_h5 import load_keras_h5

        return load_keras_h5(path)
    if kind == "onnx":
        from .onnx import load_onnx

        return load_onnx(path)
    if kind == "torch":
        from .torch import load_torch_file

        return load_torch_file(path, trust_pickle=trust_pickle)
    if kind == "pickle":
        return _load_object(_unpickle(path, trust_pickle))
    if kind == "json":
        from .json_models import load_json_model

        return load_json_model(path)
    if kind == "xgboost":
        from .xgboost import load_xgboost

        return load_xgboost(path)
    if kind == "lightgbm":
        from .lightgbm import load_lightgbm

        return load_lightgbm(path)
    raise AssertionError(kind)


def _unpickle(path: Path, trust_pickle: bool) -> Any:
    """A pickled (joblib) estimator: only with explicit trust, since unpickling runs code."""
    if not trust_pickle:
        raise ModelFormatError(
            f"{path}: loading a pickle runs code from the file; pass --trust-pickle (trust_pickle=True) if you trust it"
        )
    try:
        import joblib
    except ImportError:
        raise ModelFormatError("reading a pickled model needs joblib (pip install 'faircert[sklearn]')") from None
    try:
        return joblib.load(path)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is bad input
        raise ModelFormatError(f"{path}: cannot unpickle: {exc}") from None


def _load_object(obj: Any) -> Any:
    """Framework objects, recognised by the modules that define their class and its bases.

    The bases matter: a user's `class Net(torch.nn.Module)` lives in `__main__`.
    """
    roots = [(cls.__module__ or "").split(".")[0] for cls in type(obj).__mro__]
    root = next((r for r in roots if r in FRAMEWORKS), roots[0])
    module = type(obj).__module__ or ""
    if root == "onnx":
        from .onnx import load_onnx

        return load_onnx(obj)
    if root in ("keras", "tensorflow", "tf_keras"):
        from .keras_h5 import load_keras_object

        return load_keras_object(obj)
    if root == "torch":
        from .torch import load_torch_module

        return load_torch_module(obj)
    if root == "xgboost":
        from .xgboost import load_xgboost

        return load_xgboost(obj)
    if root == "lightgbm":
        from .lightgbm import load_lightgbm

        return load_lightgbm(obj)
    if root == "sklearn":
        from .sklearn import load_sklearn

        return load_sklearn(obj, load_final=_load_object)
    for ir_module in ("faircert.models",):
        if module.startswith(ir_module):
            return obj  # another IR (trees, linear, program): engines check what they accept
    raise UnsupportedModelError(f"unsupported model object of type {type(obj).__module__}.{type(obj).__name__}")
