"""scikit-learn estimators: tree models go to the tree importer, linear ones to the linear importer,
ReLU multi-layer perceptrons to the network importer."""

from __future__ import annotations

from typing import Any

from ....errors import ModelFormatError, UnsupportedModelError

TREE_CLASSES = {
    "DecisionTreeClassifier",
    "RandomForestClassifier",
    "ExtraTreesClassifier",
    "GradientBoostingClassifier",
    "HistGradientBoostingClassifier",
    "AdaBoostClassifier",
    "BaggingClassifier",
    "VotingClassifier",
}
LINEAR_CLASSES = {"LogisticRegression", "LinearSVC", "SGDClassifier", "SVC", "RidgeClassifier", "Perceptron"}


def load_sklearn(estimator: Any) -> Any:
    """The IR of a scikit-learn estimator or Pipeline (whose final estimator may be another
    framework's: an XGBoost or LightGBM classifier)."""
    from ..readers import load_object

    name = type(estimator).__name__
    if name == "Pipeline":
        return _load_pipeline(estimator, load_object)
    if name in TREE_CLASSES:
        from .trees import load_sklearn_trees

        return load_sklearn_trees(estimator)
    if name in LINEAR_CLASSES:
        from .linear import load_sklearn_linear

        return load_sklearn_linear(estimator)
    if name == "MLPClassifier":
        from .mlp import load_sklearn_mlp

        return load_sklearn_mlp(estimator)
    if name == "ColumnTransformer":
        raise ModelFormatError("a ColumnTransformer alone is not a classifier; pass the Pipeline that ends in one")
    supported = ", ".join(sorted(TREE_CLASSES | LINEAR_CLASSES | {"MLPClassifier"}))
    raise UnsupportedModelError(f"unsupported scikit-learn estimator {name} (supported: {supported})")


def _load_pipeline(pipe: Any, load_final: Any) -> Any:
    """A Pipeline ending in a linear classifier whose preprocessing the linear IR expresses stays a
    LinearModel (group fairness is then exact by subset sums); any other becomes a PipelineModel."""
    from .pipeline import load_sklearn_pipeline

    if type(pipe.steps[-1][1]).__name__ in LINEAR_CLASSES:
        from .linear import load_sklearn_linear

        try:
            return load_sklearn_linear(pipe)
        except ModelFormatError:
            pass  # preprocessing beyond one-hot and scaling: the general pipeline IR below
    model = load_sklearn_pipeline(pipe, load_final)
    return _as_linear(model, pipe) or model


def _as_linear(model: Any, pipe: Any) -> Any:
    """The pipeline as a LinearModel where that is exact (imputers and nested Pipelines around one-hot
    encoding and scaling), checked against the pipeline; else None."""
    from ...pipeline import to_linear
    from .linear import check_linear

    linear = to_linear(model)
    if linear is None:
        return None
    check_linear(linear, pipe, model.columns)
    return linear
