"""Which engine answers which question about which model.

Every engine is listed here once, with the model IR types, question types and populations it
accepts, the methods it implements ("sound" or "sampling"), and one entry point with the same
signature for all: `entry(model, question, options, progress) -> result`. The API finds engines
here and nowhere else; entries are tried in order, so an exact engine comes before a bounding one.
Entry points are imported on first use, so listing an engine costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import PropertyError
from ..models.linear import LinearModel
from ..models.network import ReluNetwork
from ..models.program import Program
from ..models.trees import TreeEnsemble
from ..options import GroupQuestion, ProgramQuestion
from ..population.continuous import ProductPopulation
from ..population.discrete import DiscretePopulation
from ..population.program import ProgramPopulation
from ..properties import IndividualFairness, UnfairSamples

Progress = Callable[[dict], None]


@dataclass(frozen=True)
class EngineSpec:
    name: str
    #: one line: what the engine answers, for people choosing or reading errors
    answers: str
    models: tuple[type, ...]
    questions: tuple[type, ...]
    #: population types accepted (group questions); empty when the question has none
    populations: tuple[type, ...] = ()
    methods: tuple[str, ...] = ("sound",)
    #: "module:function" with the signature (model, question, options, progress) -> result
    entry: str = ""

    def accepts(self, model: Any, question: Any, method: str = "sound") -> bool:
        if not isinstance(model, self.models) or not isinstance(question, self.questions):
            return False
        if self.populations and not isinstance(getattr(question, "population", None), self.populations):
            return False
        return method in self.methods

    def run(self, model: Any, question: Any, options: Any, progress: Progress | None = None) -> Any:
        module, _, function = self.entry.partition(":")
        return getattr(importlib.import_module(module), function)(model, question, options, progress)

    def describe(self) -> str:
        pops = f" under {'/'.join(p.__name__ for p in self.populations)}" if self.populations else ""
        return (f"{self.name}: {'/'.join(m.__name__ for m in self.models)} x "
                f"{'/'.join(q.__name__ for q in self.questions)}{pops} ({', '.join(self.methods)})")


_ANY_CLASSIFIER = (ReluNetwork, TreeEnsemble, LinearModel)
_ANY_POPULATION = (DiscretePopulation, ProductPopulation, ProgramPopulation)

ENGINES: tuple[EngineSpec, ...] = (
    EngineSpec("network-boxes", "quantified individual fairness of ReLU networks by box refinement",
               (ReluNetwork,), (IndividualFairness,), entry="faircert.engines.network.refine:answer"),
    EngineSpec("tree-boxes", "exact epsilon-kappa fairness / robustness measures of tree ensembles",
               (TreeEnsemble,), (IndividualFairness,), entry="faircert.engines.trees.verify:answer"),
    EngineSpec("tree-sampling", "uniform samples of a tree ensemble's exact unfair region, re-checked",
               (TreeEnsemble,), (UnfairSamples,), entry="faircert.engines.trees.sampling:answer_samples"),
    EngineSpec("subset-sum", "exact group fairness of linear classifiers under discrete populations",
               (LinearModel,), (GroupQuestion,), (DiscretePopulation,), entry="faircert.engines.group.linear:answer"),
    EngineSpec("probability-bounds", "sound bounds on per-group positive rates of any classifier",
               _ANY_CLASSIFIER, (GroupQuestion,), _ANY_POPULATION,
               entry="faircert.engines.probability.bounds:answer_group"),
    EngineSpec("sequential-test", "group-fairness verdicts wrong with probability at most delta",
               _ANY_CLASSIFIER, (GroupQuestion,), _ANY_POPULATION, methods=("sampling",),
               entry="faircert.engines.sampling.sequential:answer_group"),
    EngineSpec("program-bounds", "sound bounds on a decision program's fairness ratio or any probability",
               (Program,), (ProgramQuestion,), entry="faircert.engines.probability.bounds:answer_program"),
    EngineSpec("program-sequential-test", "program-fairness verdicts wrong with probability at most delta",
               (Program,), (ProgramQuestion,), methods=("sampling",),
               entry="faircert.engines.sampling.sequential:answer_program"),
)


#: Words for error messages.
_MODEL_WORDS = {ReluNetwork: "ReLU network", TreeEnsemble: "tree ensemble", LinearModel: "linear model",
                Program: "decision program"}
_QUESTION_WORDS = {IndividualFairness: "individual-fairness verification", UnfairSamples: "counterexample sampling",
                   GroupQuestion: "group fairness", ProgramQuestion: "program fairness"}


def find_engine(model: Any, question: Any, method: str = "sound") -> EngineSpec:
    """The first engine that accepts (model, question, method), or a clear error saying what is supported."""
    for spec in ENGINES:
        if spec.accepts(model, question, method):
            return spec
    what = _QUESTION_WORDS.get(type(question), type(question).__name__)
    candidates = [s for s in ENGINES if isinstance(question, s.questions)]
    if candidates and not any(isinstance(model, s.models) for s in candidates):
        needs = " or ".join(dict.fromkeys(_MODEL_WORDS.get(m, m.__name__) for s in candidates for m in s.models))
        raise PropertyError(f"{what} needs a {needs}; the model is a {type(model).__name__}")
    population = getattr(question, "population", None)
    under = f" under a {type(population).__name__}" if population is not None else ""
    supported = "; ".join(s.describe() for s in candidates or ENGINES)
    raise PropertyError(f"no engine answers {what} of a {type(model).__name__}{under} with method {method!r}; "
                        f"supported: {supported}")
