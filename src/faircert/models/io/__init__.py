"""Importers: every supported model format or framework object -> one IR.

`load_model` is the single entry point. It picks a reader by the file's suffix or by the framework
that defines an object's class (the tables in `readers.py`), and imports that reader, with its
framework, only when it is needed. A format is one module here (or a package, for a framework with
several parts: `sklearn/`, `onnx/`, `keras/`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ModelFormatError
from .readers import FILE_READERS, load_object


def load_model(model: Any, trust_pickle: bool = False, preprocessor: Any = None) -> Any:
    """Return the IR for a path or a framework object; IR objects pass through unchanged.

    `preprocessor` (a fitted scikit-learn ColumnTransformer or Pipeline of transformers, or a pickle
    of one) is what encoded the raw columns the model was trained on: the IR then reads raw columns.
    """
    from ..network import ReluNetwork

    if preprocessor is not None:
        from .pickled import unpickle
        from .preprocessed import load_preprocessed

        if isinstance(preprocessor, (str, Path)):
            if not Path(preprocessor).exists():
                raise ModelFormatError(f"preprocessor file not found: {preprocessor}")
            preprocessor = unpickle(Path(preprocessor), trust_pickle)
        return load_preprocessed(preprocessor, load_model(model, trust_pickle))

    if isinstance(model, ReluNetwork):
        return model
    if isinstance(model, (str, Path)):
        return _load_path(Path(model), trust_pickle)
    return load_object(model)


def _load_path(path: Path, trust_pickle: bool) -> Any:
    if not path.exists():
        raise ModelFormatError(f"model file not found: {path}")
    reader = FILE_READERS.get(path.suffix.lower())
    if reader is None:
        known = ", ".join(sorted(FILE_READERS))
        raise ModelFormatError(f"{path}: unsupported model file type {path.suffix!r} (supported: {known})")
    return reader(path, trust_pickle)
