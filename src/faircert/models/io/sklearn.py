"""scikit-learn estimators: tree models go to the tree importer, linear ones to the linear importer,
ReLU multi-layer perceptrons to the network importer."""

from __future__ import annotations

from typing import Any

from ...errors import ModelFormatError

TREE_CLASSES = {"DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                "GradientBoostingClassifier"}
LINEAR_CLASSES = {"LogisticRegression", "LinearSVC", "SGDClassifier", "SVC"}


def load_sklearn(estimator: Any) -> Any:
    name = type(estimator).__name__
    if name == "Pipeline":
        final = type(estimator.steps[-1][1]).__name__
        if final not in LINEAR_CLASSES:
            raise ModelFormatError(f"a scikit-learn Pipeline is supported when it ends in a linear classifier "
                                   f"({', '.join(sorted(LINEAR_CLASSES))}); this one ends in {final}. "
                                   f"Pass the fitted final estimator itself with data already encoded.")
        name = final
    if name in TREE_CLASSES:
        from .sklearn_trees import load_sklearn_trees

        return load_sklearn_trees(estimator)
    if name in LINEAR_CLASSES:
        from .sklearn_linear import load_sklearn_linear

        return load_sklearn_linear(estimator)
    if name == "MLPClassifier":
        from .sklearn_mlp import load_sklearn_mlp

        return load_sklearn_mlp(estimator)
    supported = ", ".join(sorted(TREE_CLASSES | LINEAR_CLASSES | {"MLPClassifier"}))
    raise ModelFormatError(f"unsupported scikit-learn estimator {name} (supported: {supported})")
