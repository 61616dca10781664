"""BlackBoxModel: a fitted classifier no IR holds (an RBF SVC, k-nearest neighbours, a pipeline with
preprocessing faircert does not translate), known only by its predictions on raw rows.

Nothing can be proven about it from its parameters; the per-row audit decides a row by calling it
on every twin of the row's ball (exact, when the ball is small enough), and otherwise only looks
for a flipping twin (`unfair` or `unknown`, never `fair`). It is built only from a Python object
the caller gave, or from a pickle the caller trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain import Domain
from ..errors import DomainError, ModelFormatError


@dataclass
class BlackBoxModel:
    """`estimator.predict` on the raw rows of domain codes (categories by name, in `columns`' order)."""

    estimator: Any
    domain: Domain
    columns: list[str]
    source: str = ""
    #: why no IR holds it (the reader's words), for the results that answer it
    reason: str = ""

    @classmethod
    def of(cls, estimator: Any, domain: Domain, keep: Any = ()) -> tuple[BlackBoxModel, Domain]:
        """The model and the domain restricted to the columns it reads (and the `keep` ones)."""
        if not callable(getattr(estimator, "predict", None)):
            raise ModelFormatError(f"a {type(estimator).__name__} has no predict method")
        classes = getattr(estimator, "classes_", None)
        if classes is not None and len(classes) != 2:
            raise ModelFormatError(f"only binary classifiers are supported; this model has {len(classes)} classes")
        names = column_names(estimator)
        if names is not None:
            columns = [str(c) for c in names]
            missing = [c for c in columns if c not in domain.names]
            if missing:
                raise DomainError(f"the data lacks column(s) {missing} that the model reads")
        else:
            width = getattr(estimator, "n_features_in_", len(domain))
            if width != len(domain):
                raise DomainError(f"the model reads {width} unnamed columns but the domain has {len(domain)}")
            columns = list(domain.names)
        kept = columns + [n for n in domain.names if n in set(keep) and n not in columns]
        restricted = Domain(tuple(domain[n] for n in kept))
        from .io.catboost import CatBoostFile  # a file faircert cannot read, scored in a child process

        if isinstance(estimator, CatBoostFile):
            return cls(estimator, restricted, columns, estimator.source, estimator.reason), restricted
        return cls(estimator, restricted, columns, f"{type(estimator).__name__} (black box)"), restricted

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Labels 0/1 of domain rows (1: the estimator's second class)."""
        import pandas as pd

        from .pipeline import raw_values

        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        frame = pd.DataFrame(
            {
                f.name: (
                    raw_values(f, X[:, j])
                    if f.categories is not None
                    else X[:, j].astype(np.int64)
                    if f.is_discrete
                    else X[:, j]
                )
                for j, f in enumerate(self.domain.features)
            }
        )[self.columns]
        named = column_names(self.estimator) is not None
        labels = np.asarray(self.estimator.predict(frame if named else frame.to_numpy()))
        classes = getattr(self.estimator, "classes_", None)
        positive = classes[1] if classes is not None else 1
        return (labels == positive).astype(np.int64)


def column_names(estimator: Any) -> list[str] | None:
    """The columns an estimator was fitted on, by name (scikit-learn's `feature_names_in_`, CatBoost's
    `feature_names_`), or None where it reads unnamed columns by position."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None and type(estimator).__module__.split(".")[0] == "catboost":
        names = getattr(estimator, "feature_names_", None)
        if names is not None and list(names) == [str(i) for i in range(len(names))]:
            return None  # fitted on a matrix: CatBoost numbers the columns
    return None if names is None else [str(c) for c in names]
