"""What the population engines need of the models and populations they are given.

Engines keep their code for each kind of model IR and population, and models and populations may
not import engines; so each IR and population has `accept(visitor)`, which calls the visitor's
method for its own kind (double dispatch), and no engine tests which kind it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from ..models.linear import LinearModel
    from ..models.network import ReluNetwork
    from ..models.trees import TreeEnsemble
    from ..population.continuous import ProductPopulation
    from ..population.discrete import DiscretePopulation
    from ..population.program import ProgramPopulation

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ClassifierVisitor(Protocol[T_co]):
    """An engine's code for each model IR it labels."""

    def network(self, model: ReluNetwork) -> T_co: ...

    def trees(self, model: TreeEnsemble) -> T_co: ...

    def linear(self, model: LinearModel) -> T_co: ...


@runtime_checkable
class Classifier(Protocol):
    """A model IR the population engines label: a ReluNetwork, TreeEnsemble or LinearModel."""

    def named_inputs(self) -> list[str]: ...

    def accept(self, visitor: ClassifierVisitor[T]) -> T: ...


class PopulationVisitor(Protocol[T_co]):
    """An engine's code for each kind of population it measures under."""

    def product(self, population: ProductPopulation) -> T_co: ...

    def program(self, population: ProgramPopulation) -> T_co: ...

    def discrete(self, population: DiscretePopulation) -> T_co: ...


@runtime_checkable
class Population(Protocol):
    """A population the group engines measure under: independent marginals, a population program
    or a discrete one (independent or a Bayesian network)."""

    def accept(self, visitor: PopulationVisitor[T]) -> T: ...


class PerPopulation:
    """A `PopulationVisitor` made of one function per kind of population, each called as
    `f(model, population, *args)`: an engine's setup of a model under whichever population it is given."""

    def __init__(
        self,
        model: Any,
        *args: Any,
        product: Callable[..., Any],
        program: Callable[..., Any],
        discrete: Callable[..., Any],
    ) -> None:
        self.model, self.args, self.calls = model, args, (product, program, discrete)

    def product(self, population: ProductPopulation) -> Any:
        return self.calls[0](self.model, population, *self.args)

    def program(self, population: ProgramPopulation) -> Any:
        return self.calls[1](self.model, population, *self.args)

    def discrete(self, population: DiscretePopulation) -> Any:
        return self.calls[2](self.model, population, *self.args)
