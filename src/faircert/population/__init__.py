"""Population models: distributions over a model's inputs (and the label) under which group
fairness is measured. Discrete ones (independent marginals, Bayesian networks learned from data,
hand-written tables) live here; continuous marginals and population programs have their own modules.
"""

from .discrete import DiscretePopulation, Variable
from .discretize import discretise
from .learn import learn_population
from .spec import PopulationSpec

__all__ = ["DiscretePopulation", "PopulationSpec", "Variable", "discretise", "learn_population", "load_population"]


def load_population(path):
    """A population saved with `DiscretePopulation.save`."""
    return DiscretePopulation.load(path)
