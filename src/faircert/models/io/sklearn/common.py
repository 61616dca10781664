"""What the scikit-learn importers share."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np


def on_matrix(method: Any, X: np.ndarray) -> np.ndarray:
    """An estimator's `method` on an unnamed matrix (inputs are positional by contract; the domain's
    names are checked against `feature_names_in_` elsewhere), without scikit-learn's warning about it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        return method(X)
