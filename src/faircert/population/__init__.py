"""Population models: distributions over a model's inputs (and the label) under which group
fairness is measured. Discrete ones (independent marginals, Bayesian networks learned from data,
hand-written tables) live here; continuous marginals and population programs have their own modules.

The names below load on first use: every command imports `population.spec` for its flags, and
learning a network pulls in scipy, which a command that learns none should not wait for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .discrete import DiscretePopulation, Variable
    from .discretize import discretise
    from .learn import learn_population
    from .spec import PopulationSpec

__all__ = ["DiscretePopulation", "PopulationSpec", "Variable", "discretise", "learn_population", "load_population"]

_HOMES = {
    "DiscretePopulation": "discrete",
    "Variable": "discrete",
    "discretise": "discretize",
    "learn_population": "learn",
    "PopulationSpec": "spec",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)


def load_population(path):
    """A population saved with `DiscretePopulation.save`."""
    from .discrete import DiscretePopulation

    return DiscretePopulation.load(path)
