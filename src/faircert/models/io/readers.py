"""The readers' tables: which module and function import a model file (by its suffix) or a
framework object (by the package that defines its class). Readers are imported on first use, so
listing one costs nothing; adding a format is one module and one row here."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from ...errors import UnsupportedModelError

PACKAGE = __name__.rpartition(".")[0]


@dataclass(frozen=True)
class Reader:
    """`function` of the module `module` (under this package). A reader that `runs_code` from its
    file (pickles) is given `trust_pickle` and refuses without it."""

    module: str
    function: str
    runs_code: bool = False

    def __call__(self, source: Any, trust_pickle: bool = False) -> Any:
        function = getattr(import_module(f"{PACKAGE}.{self.module}"), self.function)
        return function(source, trust_pickle=trust_pickle) if self.runs_code else function(source)


KERAS = Reader("keras", "load_keras_h5")
TORCH = Reader("torch", "load_torch_file", runs_code=True)
PICKLE = Reader("pickled", "load_pickle", runs_code=True)

#: file suffix -> reader
FILE_READERS = {
    ".nnet": Reader("nnet", "load_nnet"),
    ".h5": KERAS,
    ".hdf5": KERAS,
    ".keras": KERAS,
    ".onnx": Reader("onnx", "load_onnx"),
    ".ubj": Reader("xgboost", "load_xgboost"),
    ".json": Reader("json_models", "load_json_model"),  # XGBoost, CatBoost or faircert linear JSON; sniffed
    ".txt": Reader("lightgbm", "load_lightgbm"),
    ".cbm": Reader("catboost", "load_catboost"),
    ".pt": TORCH,
    ".pth": TORCH,
    ".pkl": PICKLE,
    ".pickle": PICKLE,
    ".joblib": PICKLE,
}

KERAS_OBJECT = Reader("keras", "load_keras_object")

#: top-level package of an object's class (or of one of its bases) -> reader
OBJECT_READERS = {
    "onnx": Reader("onnx", "load_onnx"),
    "keras": KERAS_OBJECT,
    "tensorflow": KERAS_OBJECT,
    "tf_keras": KERAS_OBJECT,
    "torch": Reader("torch", "load_torch_module"),
    "xgboost": Reader("xgboost", "load_xgboost"),
    "lightgbm": Reader("lightgbm", "load_lightgbm"),
    "catboost": Reader("catboost", "load_catboost"),
    "sklearn": Reader("sklearn", "load_sklearn"),
}


def load_object(obj: Any) -> Any:
    """Framework objects, recognised by the modules that define their class and its bases.

    The bases matter: a user's `class Net(torch.nn.Module)` lives in `__main__`.
    """
    roots = [(cls.__module__ or "").split(".")[0] for cls in type(obj).__mro__]
    reader = next((OBJECT_READERS[r] for r in roots if r in OBJECT_READERS), None)
    if reader is not None:
        return reader(obj)
    module = type(obj).__module__ or ""
    if module.startswith("faircert.models"):
        return obj  # another IR (trees, linear, program): engines check what they accept
    raise UnsupportedModelError(f"unsupported model object of type {type(obj).__module__}.{type(obj).__name__}")
