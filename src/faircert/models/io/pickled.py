"""Pickled (joblib) estimators: read only with explicit trust, since unpickling runs code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ModelFormatError


def unpickle(path: Path, trust_pickle: bool) -> Any:
    """The object pickled in `path`, refused unless the user trusts the file."""
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


def load_pickle(path: Path, trust_pickle: bool = False) -> Any:
    """The IR of the framework object pickled in `path`."""
    from .readers import load_object

    return load_object(unpickle(path, trust_pickle))
