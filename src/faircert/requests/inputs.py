"""Reading what every question starts from: the model, the domain, the protected attributes and
the data a population is taken from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data import infer_domain, read_table
from ..domain import Domain, Feature
from ..errors import DataError, DomainError, PropertyError
from ..properties import IndividualFairness, individual_fairness, split_names


def load_model(model: Any, trust_pickle: bool = False, preprocessor: Any = None) -> Any:
    """The IR of a model given as a path, a framework object or an IR.

    `preprocessor`: the fitted scikit-learn preprocessing (ColumnTransformer, Pipeline of transformers,
    or a pickle of one) that encoded the raw columns a network or tree ensemble was trained on; the IR
    then reads the raw columns, categories by name.
    """
    from ..models.io import load_model as load

    return load(model, trust_pickle=trust_pickle, preprocessor=preprocessor)


def resolve_domain(domain: Any, model_ir: Any) -> Domain:
    """A Domain from a path, a Domain, a DataFrame/array to infer it from, or the model's own ranges."""
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, (str, Path)):
        if _is_table(domain):
            return infer_domain(domain)
        return Domain.load(domain)
    if domain is not None:
        return infer_domain(domain)
    lower = getattr(model_ir, "input_lower", None)
    upper = getattr(model_ir, "input_upper", None)
    if lower is None or upper is None:
        raise DomainError("this model declares no input ranges; pass a domain (a file, a Domain or a DataFrame)")
    names = getattr(model_ir, "input_names", None) or [f"x{i}" for i in range(len(lower))]
    return Domain(tuple(Feature(n, "integer", lo, hi) for n, lo, hi in zip(names, lower, upper)))


def _is_table(path: str | Path) -> bool:
    return Path(path).suffix.lower() in (".csv", ".tsv")


@dataclass(frozen=True)
class Question:
    """What an individual-fairness question reads: the model's IR compiled for the domain, the
    property over that domain, the domain as given (its categories' order is the one users read
    codes in) and the model as read, before it was compiled for the domain."""

    ir: Any
    prop: IndividualFairness
    given: Domain
    loaded: Any


@dataclass(frozen=True)
class Individual:
    """The individual-fairness property as asked: who is protected, and how far twins may move."""

    protected: Any = None
    epsilon: Any = None
    epsilon_rate: float | None = None
    kappa: float | None = None
    robustness: bool = False


def model_and_property(
    model: Any, domain: Any, asked: Individual, loading: dict[str, Any], reorder: bool = False
) -> Question:
    """The model read and compiled for `domain` (`loading`: trust_pickle, preprocessor), and the
    property over the domain, checked against the model's inputs."""
    from ..models.binding import bind_to_domain

    loaded = load_model(model, **loading)
    dom = resolve_domain(domain, loaded)
    protected = positional_names(asked.protected, dom)
    given = dom
    # a pipeline (or a linear model) reads raw columns: compile it for this domain's features
    ir, dom = bind_to_domain(loaded, dom, keep=set(protected) | set(dom.protected_names), reorder=reorder)
    dom.check_model(ir)
    prop = individual_fairness(
        dom,
        protected,
        epsilon=asked.epsilon,
        epsilon_rate=asked.epsilon_rate,
        kappa=asked.kappa,
        robustness=asked.robustness,
    )
    return Question(ir, prop, given, loaded)


def individual(
    protected: Any,
    keywords: dict[str, Any],
    epsilon: Any = None,
    epsilon_rate: float | None = None,
    kappa: float | None = None,
    robustness: bool = False,
) -> Individual:
    """The property as asked, `protected` given as itself or as `sensitive_features` (taken from
    `keywords`)."""
    who = column_names(protected_of(protected, keywords.pop("sensitive_features", None)))
    return Individual(who, epsilon, epsilon_rate, kappa, robustness)


def positional_names(protected: Any, domain: Domain) -> list[str]:
    """Protected features by name; those given by position refer to the domain as given."""
    return [domain.names[domain.index(p)] if isinstance(p, (int, np.integer)) else p for p in split_names(protected)]


def protected_of(protected: Any, sensitive_features: Any) -> Any:
    """`protected`, or its alias `sensitive_features`, as given."""
    if protected is not None and sensitive_features is not None:
        raise PropertyError("give either protected or sensitive_features, not both")
    return protected if protected is not None else sensitive_features


def column_names(protected: Any) -> Any:
    """A pandas Series or DataFrame of sensitive features names its column(s)."""
    import pandas as pd

    if isinstance(protected, pd.Series):
        return [protected.name]
    if isinstance(protected, pd.DataFrame):
        return [str(c) for c in protected.columns]
    return protected


def population_data(data: Any, domain: Any, population: str) -> Any:
    """The data a population is taken from: `data`, else the domain when it is data."""
    if data is None:
        if isinstance(domain, Domain) or domain is None or (isinstance(domain, (str, Path)) and not _is_table(domain)):
            raise PropertyError(
                f"population {population!r} is taken from data: give data= (--data DATA.csv), or "
                "the data itself as the domain"
            )
        data = domain
    return read_table(data)


def estimator_object(model: Any, trust_pickle: bool, refused: Exception | None = None) -> Any:
    """The estimator itself: the object given, the one a file's reader offered as a black box when
    it `refused` the file (a CatBoost file it cannot read exactly), or the pickle the caller trusted."""
    if not isinstance(model, (str, Path)):
        return model
    if getattr(refused, "black_box", None) is not None:
        return refused.black_box  # type: ignore[union-attr]
    from ..models.io.pickled import unpickle

    return unpickle(Path(model), trust_pickle)


def names(given: Any) -> list[str]:
    return [str(n) for n in split_names(given)]


def _once(protected: list[str]) -> list[str]:
    """The protected attributes, each named once: a group is a cell of their product, and an
    attribute twice would be a column cut against itself."""
    twice = sorted({n for n in protected if protected.count(n) > 1})
    if twice:
        raise PropertyError(f"protected attributes named more than once: {', '.join(map(repr, twice))}")
    return protected


def sensitive(given: Any, data: Any) -> tuple[list[str], Any]:
    """Protected attribute names, fairlearn-style: column names, a pandas Series or a DataFrame of
    several. A Series or DataFrame column that is not in the data (or differs from it) is added to
    the data under its name, row by row, as fairlearn's `sensitive_features` are."""
    import pandas as pd

    if isinstance(given, pd.Series):
        given = given.to_frame(name=given.name if given.name is not None else "sensitive_feature")
    if not isinstance(given, pd.DataFrame):
        return _once(names(given)), data
    columns = _once([str(c) for c in given.columns])
    if data is None:
        raise DataError("sensitive features given as a Series or DataFrame need the data they describe (data=...)")
    frame = read_table(data)
    if len(given) != len(frame):
        raise DataError(f"the sensitive features have {len(given)} rows but the data has {len(frame)}")
    have = [str(c) for c in frame.columns]
    added = {}
    for name, column in zip(columns, given.columns):
        values = given[column].to_numpy()
        if name not in have or not np.array_equal(frame[frame.columns[have.index(name)]].to_numpy(), values):
            added[name] = values
    if added:
        frame = frame.assign(**added)
    return columns, frame
