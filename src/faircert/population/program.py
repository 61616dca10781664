"""A population program (FairSquare's `popModel`) used as a population model for any classifier.

The program's random draws are independent inputs; its variables at the end (named like the
model's features) are the features. Its `sensitiveAttribute`, when present, defines the two groups.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..errors import PropertyError
from ..limits import quoted
from ..models.program import Gaussian, Program, ProgramError, constant_value, load_program
from .base import Population
from .continuous import Gaussian as G
from .continuous import Step, Uniform

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ProgramVisitor(Protocol[T_co]):
    """An engine's code for population programs, reached through `ProgramPopulation.accept`."""

    def program(self, population: ProgramPopulation) -> T_co: ...


@dataclass
class ProgramPopulation(Population):
    """A probabilistic program whose final variables are the population's features; with `given`
    (a condition on them), the population restricted to where it holds (groups given the label)."""

    program: Program
    given: Any = None

    @classmethod
    def load(cls, source: str | os.PathLike[str] | Program) -> ProgramPopulation:
        text = str(source)
        named = isinstance(source, Path) or (isinstance(source, str) and "\n" not in text and text.endswith(".fr"))
        if named and not os.path.isfile(text):  # checked here: a name the system refuses (too long) is no file either
            raise ProgramError(f"cannot read program file {quoted(text)}: no such file")
        return cls(load_program(source))

    @classmethod
    def given_as(cls, population: Any) -> Population:
        """A population program given by its path, text or `Program`, loaded; any other population as
        it is (anything else is refused here, once)."""
        if isinstance(population, (str, os.PathLike, Program)):
            return cls.load(population)
        if not isinstance(population, Population):
            raise PropertyError(
                f"unsupported population {type(population).__name__}; give a ProductPopulation, a learned or "
                "saved population, or a population program (.fr path or text)"
            )
        return population

    @property
    def marginals(self) -> list:
        return site_marginals(self.program)

    @property
    def names(self) -> list[str]:
        return sorted(self.program.defined)

    def check_features(self, needed: list[str]) -> None:
        missing = [n for n in needed if n not in self.program.defined]
        if missing:
            raise PropertyError(
                f"the population program {self.program.source} does not assign {missing} on "
                f"every path; it assigns: {', '.join(sorted(self.program.defined))}"
            )

    def __str__(self) -> str:
        return f"program {self.program.source} ({self.program.n_sites} random draws)"

    def accept(self, visitor: ProgramVisitor[T]) -> T:
        """Return `visitor.program(self)`, so that an engine reaches its code for
        population programs without a type test."""
        return visitor.program(self)

    def label_conditions(self, label: str, protected: list[str], asking: str) -> list:
        """The runs that give the groups' rates given each value of `label` (see
        `engines.probability.bounds.label_conditions`): the program restricted to each."""
        return [(sub, protected, None, [value]) for value, sub in self.label_given(label)]

    def label_given(self, label: str) -> list[tuple[str, ProgramPopulation]]:
        """("1", the population where `label` holds) and ("0", where it does not): the conditions of
        equalized odds. `label` is a variable the program assigns (true when nonzero) or a condition."""
        from ..models.program import Not, parse_expression, variables_used

        expr = parse_expression(label, "<label>")
        missing = [n for n in variables_used(expr) if n not in self.program.defined]
        if missing:
            raise PropertyError(
                f"the label {label!r} reads {missing}, which the population program does not assign "
                f"on every path; it assigns: {', '.join(sorted(self.program.defined))}"
            )
        if not any(ch in label for ch in "<>=!"):
            expr = parse_expression(f"({label}) != 0", "<label>")
        return [("1", ProgramPopulation(self.program, expr)), ("0", ProgramPopulation(self.program, Not(expr)))]


def site_marginals(program: Program) -> list:
    """The independent marginal of each random site (gaussian means that are not constant are 0:
    the interpreter adds them)."""
    out: list[G | Step] = []
    for d in program.sites:
        dist = d.dist
        if isinstance(dist, Gaussian):
            mean = constant_value(dist.mean)
            out.append(G(0.0 if mean is None else mean, dist.variance, d.target))
        elif hasattr(dist, "bars"):
            out.append(Step(dist.bars, d.target))
        else:
            out.append(Uniform(dist.low, dist.high, d.target))
    return out
