"""Compiling a PipelineModel (or a LinearModel over raw columns) for a domain or a population.

The result is a ReluNetwork or TreeEnsemble over the domain's features that computes the original
label at every point of the domain, checked against the original pipeline on sampled raw rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DomainError, ModelFormatError
from .pipeline import MAX_GRID, PipelineModel, from_linear, raw_values


def restrict_domain(model: PipelineModel, domain: Any, keep: Any = ()) -> Any:
    """The domain's features for the pipeline's raw columns, in the pipeline's order, then the
    `keep` ones (protected attributes) it does not read.

    Columns no encoded feature reads (a label column in an inferred domain, columns a
    ColumnTransformer drops) are left out: they cannot change the label, and every share is a
    product measure, so leaving them out changes no share. A protected attribute stays: a model
    that ignores it is fair with respect to it, which is worth proving, not an error.
    """
    from ..domain import Domain

    names = domain.names
    unnamed = model.columns == [f"x{i}" for i in range(len(model.columns))]
    if unnamed and len(domain) == len(model.columns) and names != model.columns:
        raise AssertionError("bind renames an unnamed pipeline's columns first")
    used = model.used_columns
    if all(c in names for c in used):
        extra = [c for c in names if c in set(keep) and c not in used]
        return Domain(tuple(domain[c] for c in used + extra), domain.match)
    missing = [c for c in used if c not in names]
    raise DomainError(
        f"the domain lacks column(s) {missing} that the model reads; the model reads, in order: {', '.join(used)}"
    )


def check_known_values(model: PipelineModel, domain: Any) -> None:
    """Every domain value must be one the model accepts (an encoder with handle_unknown='error'
    rejects the others: the model has no label there)."""
    for f in model.features:
        enc = f.encoder
        _check_category_names(f, domain[f.column])
        if not enc.rejects_unknown:
            continue
        feature = domain[f.column]
        if not feature.is_discrete:
            raise DomainError(
                f"column {f.column!r} is real-valued in the domain, but the model's {enc.origin} "
                "accepts only its fitted categories; declare it integer or categorical"
            )
        if feature.size > MAX_GRID:
            raise DomainError(
                f"column {f.column!r} has {feature.size:g} values; at most {MAX_GRID} for a {enc.origin} column"
            )
        values = raw_values(feature, feature.values())
        unknown = values[~enc.known(values)]
        if len(unknown):
            raise DomainError(
                f"column {f.column!r}: the model's {enc.origin} (handle_unknown='error') rejects "
                f"{[_plain(v) for v in unknown[:5]]}; restrict the domain to the categories it "
                f"knows: {[_plain(c) for c in enc.categories]}"
            )


def _check_category_names(f: Any, feature: Any) -> None:
    """A column the model reads by category names needs those names in the domain: numbers (codes
    without names) would silently match no category."""
    enc = f.encoder
    if enc.kind not in ("equals", "rank"):
        return
    named = [c for c in enc.categories if isinstance(c, str) and not _is_number(c)]
    if not named:
        return
    if feature.categories is None:
        raise DomainError(
            f"column {f.column!r} holds categories for the model ({', '.join(map(str, named[:4]))}, ...) "
            "but the domain gives it numbers; give the domain its category names (infer the domain "
            "from the data, or list 'categories' in the domain file)"
        )
    if not enc.known(np.asarray(feature.categories, dtype=object)).any():
        raise DomainError(
            f"column {f.column!r}: none of the domain's categories {list(feature.categories)[:4]} is one "
            f"the model knows ({', '.join(map(str, named[:4]))}, ...)"
        )


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _named_like(model: PipelineModel, domain: Any) -> PipelineModel:
    """A pipeline fitted without column names reads the domain's features by position."""
    from dataclasses import replace

    unnamed = model.columns == [f"x{i}" for i in range(len(model.columns))]
    if not unnamed or len(domain) != len(model.columns) or domain.names == model.columns:
        return model
    rename = dict(zip(model.columns, domain.names))
    return replace(
        model, columns=list(domain.names), features=tuple(replace(f, column=rename[f.column]) for f in model.features)
    )


def bind(model: PipelineModel, domain: Any, keep: Any = (), reorder: bool = False) -> tuple[Any, Any]:
    """(a ReluNetwork or TreeEnsemble over the domain's features, the domain restricted to the
    model's columns) computing the pipeline's label at every point of the domain.

    With `reorder`, a network's categorical columns (but the `keep` ones) get their categories
    sorted by effect (`order_by_effect`), and the returned domain says so: callers must code
    points with it."""
    from .linear import LinearModel
    from .network import ReluNetwork
    from .trees import TreeEnsemble

    model = _named_like(model, domain)
    dom = restrict_domain(model, domain, keep)
    check_known_values(model, dom)
    est = model.estimator
    bound: ReluNetwork | TreeEnsemble
    if isinstance(est, (ReluNetwork, LinearModel)):
        from .pipeline_network import bind_network, order_by_effect

        bound = bind_network(model, dom)
        ordered = order_by_effect(bound, dom, fixed=set(keep)) if reorder else dom
        if ordered is not dom:
            dom, bound = ordered, bind_network(model, ordered)
    elif isinstance(est, TreeEnsemble):
        from .pipeline_trees import bind_trees

        bound = bind_trees(model, dom)
    else:
        raise ModelFormatError(f"a pipeline ending in {type(est).__name__} cannot be bound to a domain")
    check_bound(model, bound, dom)
    _check_tables(bound, dom)
    return bound, dom


def _check_tables(bound: Any, domain: Any, n: int = 400) -> None:
    """A network's lookup form of its first layers must equal those layers on the grid."""
    tables = getattr(bound, "input_tables", None)
    if tables is None:
        return
    X = sample_domain(domain, n)
    h = np.maximum(X @ bound.weights[0].T + bound.biases[0], 0.0) @ bound.weights[1].T + bound.biases[1]
    gap = np.abs(tables.first_layer(X) - h)
    if not np.all(gap <= 1e-9 * (1.0 + np.abs(h))):
        raise ModelFormatError(
            f"{bound.source}: the lookup form of the pipeline's encodings disagrees with its "
            f"network by {float(gap.max()):.3g}"
        )


def sample_domain(domain: Any, n: int, seed: int = 0) -> np.ndarray:
    """Rows drawn from the domain: uniform grid points and reals, plus every corner value."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, len(domain)))
    for j, f in enumerate(domain.features):
        if f.is_discrete:
            X[:, j] = rng.integers(f.min, f.max + 1, n)
        else:
            X[:, j] = rng.uniform(f.min, f.max, n)
        X[0, j], X[1, j] = f.min, f.max
    return X


def raw_frame(domain: Any, X: np.ndarray):
    """Domain rows (codes) as the raw DataFrame a pipeline reads (category names, numbers)."""
    import pandas as pd

    return pd.DataFrame({f.name: raw_values(f, X[:, j]) for j, f in enumerate(domain.features)})


def check_bound(model: PipelineModel, bound: Any, domain: Any, n: int = 400) -> None:
    """Compare the bound model's labels with the original pipeline's on sampled domain rows."""
    if model.reference is None:
        return
    X = sample_domain(domain, n)
    frame = raw_frame(domain, X)
    for j, f in enumerate(domain.features):  # numbers as the pipeline was fitted on them
        if f.categories is None:
            frame[f.name] = X[:, j].astype(np.int64) if f.is_discrete else X[:, j]
    for c in model.columns:  # columns the pipeline drops must still be present
        if c not in frame:
            frame[c] = 0
    raw = frame[model.columns] if model.named else frame.to_numpy()
    try:
        theirs, margin = model.reference(raw)
    except Exception as exc:  # noqa: BLE001 - the pipeline rejects rows of the domain
        raise DomainError(f"the pipeline rejects rows of the domain: {' '.join(str(exc).split())}") from None
    ours = bound.predict(X)
    bad = (np.asarray(theirs).astype(np.int64) != ours) & (np.abs(margin) > 1e-6)
    if bad.any():
        row = frame.iloc[int(np.argmax(bad))].to_dict()
        raise ModelFormatError(
            f"{model.source}: the pipeline compiled for this domain disagrees with the "
            f"pipeline itself on {int(bad.sum())} of {n} sampled rows (e.g. {row}); this "
            "combination of preprocessing steps is not translated faithfully"
        )


def bind_to_domain(model: Any, domain: Any, keep: Any = (), reorder: bool = False) -> tuple[Any, Any]:
    """Pipelines and linear models over raw columns become a network or trees over the domain's
    features (those they read, and the `keep` ones); other models pass through unchanged. The
    domain returned is the one to code points with (with `reorder`, see `bind`)."""
    from .linear import LinearModel

    if isinstance(model, LinearModel):
        model = from_linear(model)
    if isinstance(model, PipelineModel):
        return bind(model, domain, keep, reorder)
    return model, domain


def bind_to_population(model: Any, population: Any) -> tuple[Any, Any]:
    """(the model compiled for the population's variables, the population with categories coded)

    A pipeline reads categories by name; population engines feed models numbers. Variables whose
    states are names are recoded 0..k-1 (their labels keep the names, so reports are unchanged),
    and the pipeline is compiled for the domain of those codes and the numeric states.
    """
    from ..domain import Domain

    if not isinstance(model, PipelineModel) or not hasattr(population, "variables"):
        return model, population
    coded, features = _coded(model, population)
    bound, _ = bind(model, Domain(tuple(features)))  # once: populations given the label share the variables
    return bound, coded


def _coded(model: PipelineModel, population: Any) -> tuple[Any, list]:
    """The population with named states coded 0..k-1 (recursively given each label value), and the
    domain features of the model's columns."""
    from dataclasses import replace

    from ..domain import Feature

    variables = dict(population.variables)
    features = []
    for name in model.used_columns:
        if name not in variables:
            raise DomainError(
                f"the population has no variable for model column {name!r}; it has: {', '.join(variables)}"
            )
        v = variables[name]
        numbers = [x for x in (_number(s) for s in v.states) if x is not None]
        if len(numbers) < len(v.states):  # some state is not a number
            variables[name] = replace(v, states=tuple(range(v.card)), labels=v.labels)
            features.append(Feature(name, "categorical", 0, v.card - 1, categories=tuple(v.labels)))
            continue
        integral = all(float(x).is_integer() for x in numbers)
        features.append(Feature(name, "integer" if integral else "real", min(numbers), max(numbers)))
    by_label = {k: _coded(model, p)[0] for k, p in population.by_label.items()}
    return replace(population, variables=variables, by_label=by_label), features


def _number(state: Any) -> float | None:
    if isinstance(state, bool) or not isinstance(state, (int, float, np.integer, np.floating)):
        return None
    return float(state)


def bind_linear_to_population(model: Any, population: Any) -> tuple[Any, Any]:
    """(the linear model reading codes, the population with named states coded 0..k-1), as
    `bind_to_population` does for pipelines: a one-hot category matching state k of a variable
    whose states are names becomes the code k (-1, never read, where it matches none). A column
    the model reads as a number cannot hold names, and a category matching several states has no
    one code: both are refused (`DomainError`)."""
    from dataclasses import replace

    from .linear import LinearModel, _matches

    if not isinstance(model, LinearModel):
        return model, population
    variables = dict(population.variables)
    named = {n for n, v in variables.items() if any(_number(s) is None for s in v.states) and n in model.columns}
    if not named:
        return model, population
    encoding = []
    for enc in model.encoding:
        if enc.column not in named:
            encoding.append(enc)
            continue
        if enc.kind != "onehot":
            raise DomainError(f"column {enc.column!r} holds names, but the model reads it as a number")
        states = np.asarray(variables[enc.column].states, dtype=object)
        codes = []
        for c in enc.categories:
            hits = np.flatnonzero(_matches(states, c))
            if len(hits) > 1:
                raise DomainError(f"column {enc.column!r}: category {c!r} matches several states")
            codes.append(float(hits[0]) if len(hits) else -1.0)
        encoding.append(replace(enc, categories=tuple(codes)))
    for n in named:
        variables[n] = replace(variables[n], states=tuple(range(variables[n].card)), labels=variables[n].labels)
    bound = LinearModel(
        model.weights, model.intercept, tuple(encoding), model.strict, model.source, model.classes, dict(model.metadata)
    )
    return bound, replace(population, variables=variables, by_label={})
