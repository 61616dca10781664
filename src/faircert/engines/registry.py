"""Which engine answers which question about which model.

Every engine is listed here once, with the model IR types, question types and populations it
accepts, the methods it implements ("sound" or "sampling"), and one entry point with the same
signature for all: `entry(model, question, options, progress) -> result`. The API finds engines
here and nowhere else; entries are tried in order, so an exact engine comes before a bounding one.
Entry points are imported on first use, so listing an engine costs nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..errors import PropertyError
from ..options import Budget
from ..progress import Progress

# Types are named, not imported: the registry is read on every command, and importing every model
# and population module (scipy.special among them) would cost each command a quarter of a second.
NETWORK = "faircert.models.network.ReluNetwork"
TREES = "faircert.models.trees.TreeEnsemble"
LINEAR = "faircert.models.linear.LinearModel"
PROGRAM = "faircert.models.program.Program"
INDIVIDUAL = "faircert.properties.IndividualFairness"
SAMPLES = "faircert.properties.UnfairSamples"
ROWS = "faircert.properties.RowAudit"
GROUP = "faircert.options.GroupQuestion"
PROGRAM_QUESTION = "faircert.options.ProgramQuestion"
DISCRETE = "faircert.population.discrete.DiscretePopulation"
PRODUCT = "faircert.population.continuous.ProductPopulation"
PROGRAM_POPULATION = "faircert.population.program.ProgramPopulation"
EMPIRICAL = "faircert.population.empirical.EmpiricalPopulation"
MARGINALS = "faircert.population.marginals.Marginals"
PIPELINE = "faircert.models.pipeline.PipelineModel"
BLACKBOX = "faircert.models.blackbox.BlackBoxModel"


def is_a(obj: Any, names: tuple[str, ...]) -> bool:
    """isinstance by fully qualified class names (subclasses included)."""
    return any(f"{c.__module__}.{c.__qualname__}" in names for c in type(obj).__mro__)


def _call(target: str, *args: Any) -> Any:
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(*args)


def _short(name: str) -> str:
    return name.rpartition(".")[2]


@dataclass(frozen=True)
class EngineSpec:
    name: str
    #: one line: what the engine answers, for people choosing or reading errors
    answers: str
    #: fully qualified class names of the model IRs and questions accepted
    models: tuple[str, ...]
    questions: tuple[str, ...]
    #: population types accepted; empty: the question's population is not looked at (engines
    #: listed earlier take the ones they answer)
    populations: tuple[str, ...] = ()
    methods: tuple[str, ...] = ("sound",)
    #: "module:function" with the signature (model, question, options, progress) -> result
    entry: str = ""
    #: "module:function" (model, question) -> bool: a further condition on the pair, for engines
    #: that answer only some models of a type (separable networks); empty: none
    when: str = ""

    def accepts(self, model: Any, question: Any, method: str = "sound") -> bool:
        if not is_a(model, self.models) or not is_a(question, self.questions):
            return False
        if self.populations and not is_a(getattr(question, "population", None), self.populations):
            return False
        return method in self.methods and (not self.when or _call(self.when, model, question))

    def run(self, model: Any, question: Any, options: Budget, progress: Progress | None = None) -> Any:
        return _call(self.entry, model, question, options, progress)

    def describe(self) -> str:
        pops = f" under {'/'.join(map(_short, self.populations))}" if self.populations else ""
        return (
            f"{self.name}: {'/'.join(map(_short, self.models))} x "
            f"{'/'.join(map(_short, self.questions))}{pops} ({', '.join(self.methods)})"
        )


_ANY_CLASSIFIER = (NETWORK, TREES, LINEAR)
_ANY_POPULATION = (DISCRETE, PRODUCT, PROGRAM_POPULATION)

ENGINES: tuple[EngineSpec, ...] = (
    EngineSpec(
        "linear-exact",
        "exact individual fairness of separable models (linear models and pipelines ending "
        "in one): the unfair set is an interval of a sum of per-feature tables, counted",
        (NETWORK,),
        (INDIVIDUAL,),
        entry="faircert.engines.linear.verify:answer",
        when="faircert.engines.linear.verify:accepts",
    ),
    EngineSpec(
        "rows-linear",
        "per-row individual fairness of separable models, in closed form (exact)",
        (NETWORK,),
        (ROWS,),
        entry="faircert.engines.rows.linear:answer",
        when="faircert.engines.rows.linear:accepts",
    ),
    EngineSpec(
        "rows-network",
        "per-row individual fairness of networks: enumeration of small balls, bounds, search and a MILP "
        "(splitting the ball for smooth units)",
        (NETWORK,),
        (ROWS,),
        entry="faircert.engines.rows.network:answer",
    ),
    EngineSpec(
        "rows-trees",
        "per-row individual fairness of tree ensembles on the cells of each row's ball",
        (TREES,),
        (ROWS,),
        entry="faircert.engines.rows.trees:answer",
    ),
    EngineSpec(
        "rows-blackbox",
        "per-row individual fairness of a classifier known only by its predictions: "
        "every twin of a small ball, a search of larger ones",
        (BLACKBOX,),
        (ROWS,),
        entry="faircert.engines.rows.blackbox:answer",
    ),
    EngineSpec(
        "blackbox-sampling",
        "the unfair share of a classifier known only by its predictions, from points of the domain (or the "
        "data's marginals) decided on the model: a statistical answer with re-checked counterexamples, no proof",
        (BLACKBOX,),
        (INDIVIDUAL,),
        entry="faircert.engines.sampling.blackbox:answer",
    ),
    EngineSpec(
        "network-boxes",
        "quantified individual fairness of networks (ReLU, piecewise-linear and smooth units) by box refinement",
        (NETWORK,),
        (INDIVIDUAL,),
        entry="faircert.engines.network.refine:answer",
    ),
    EngineSpec(
        "network-complete",
        "complete (and partitioned) individual-fairness verification of networks: "
        "branch and bound with a MILP back end (bounds and splits alone for smooth units)",
        (NETWORK,),
        (INDIVIDUAL,),
        methods=("complete",),
        entry="faircert.engines.network.decide:answer",
    ),
    EngineSpec(
        "tree-complete",
        "complete (and partitioned) individual-fairness verification of tree ensembles: "
        "a mixed-integer program of the twin query",
        (TREES,),
        (INDIVIDUAL,),
        methods=("complete",),
        entry="faircert.engines.trees.complete:answer",
    ),
    EngineSpec(
        "tree-population",
        "exact individual-fairness probabilities of tree ensembles under the data's "
        "independent marginals (epsilon 0): the uniform engine on each feature's stretched grid",
        (TREES,),
        (INDIVIDUAL,),
        (MARGINALS,),
        entry="faircert.engines.trees.population:answer",
    ),
    EngineSpec(
        "tree-boxes",
        "exact epsilon-kappa fairness / robustness measures of tree ensembles",
        (TREES,),
        (INDIVIDUAL,),
        entry="faircert.engines.trees.verify:answer",
    ),
    EngineSpec(
        "tree-sampling",
        "uniform samples of a tree ensemble's exact unfair region, re-checked",
        (TREES,),
        (SAMPLES,),
        entry="faircert.engines.trees.sampling:answer_samples",
    ),
    EngineSpec(
        "subset-sum",
        "exact group fairness of linear classifiers under discrete populations",
        (LINEAR,),
        (GROUP,),
        (DISCRETE,),
        entry="faircert.engines.group.linear:answer",
    ),
    EngineSpec(
        "empirical",
        "exact per-group positive rates over the data's rows (fairlearn's selection rates)",
        _ANY_CLASSIFIER + (PIPELINE,),
        (GROUP,),
        (EMPIRICAL,),
        entry="faircert.engines.group.empirical:answer",
    ),
    EngineSpec(
        "tree-population-group",
        "sound group rates of tree ensembles under independent marginals, counted exactly (any-time "
        "bounds) by the tree-population engine with each protected cell fixed",
        (TREES,),
        (GROUP,),
        (DISCRETE,),
        entry="faircert.engines.group.trees:answer",
        when="faircert.engines.group.trees:accepts",
    ),
    EngineSpec(
        "tree-regions-group",
        "sound any-time group rates of tree ensembles past the exact count's size under independent "
        "marginals: boxes of the inputs' values refined until the trees' reachable leaves prove the label",
        (TREES,),
        (GROUP,),
        (DISCRETE,),
        entry="faircert.engines.group.tree_regions:answer",
        when="faircert.engines.group.tree_regions:accepts",
    ),
    EngineSpec(
        "network-regions-group",
        "sound any-time group rates of networks under independent marginals: boxes of the inputs' "
        "values refined until the network's symbolic bounds prove the label",
        (NETWORK,),
        (GROUP,),
        (DISCRETE,),
        entry="faircert.engines.group.network_regions:answer",
        when="faircert.engines.group.network_regions:accepts",
    ),
    EngineSpec(
        "probability-bounds",
        "sound bounds on per-group positive rates of any classifier",
        _ANY_CLASSIFIER,
        (GROUP,),
        _ANY_POPULATION,
        entry="faircert.engines.probability.bounds:answer_group",
    ),
    EngineSpec(
        "sequential-test",
        "group-fairness verdicts wrong with probability at most delta",
        _ANY_CLASSIFIER,
        (GROUP,),
        _ANY_POPULATION,
        methods=("sampling",),
        entry="faircert.engines.sampling.sequential:answer_group",
    ),
    EngineSpec(
        "blackbox-empirical",
        "exact per-group positive rates of a classifier known only by its predictions over the data's rows",
        (BLACKBOX,),
        (GROUP,),
        (EMPIRICAL,),
        methods=("sound", "sampling"),
        entry="faircert.engines.group.blackbox:answer_rows",
    ),
    EngineSpec(
        "blackbox-group-sampling",
        "group rates of a classifier known only by its predictions, from points sampled from the population "
        "and decided on the model: a statistical answer, no proof",
        (BLACKBOX,),
        (GROUP,),
        _ANY_POPULATION,
        methods=("sound", "sampling"),
        entry="faircert.engines.group.blackbox:answer",
    ),
    EngineSpec(
        "program-bounds",
        "sound bounds on a decision program's fairness ratio or any probability",
        (PROGRAM,),
        (PROGRAM_QUESTION,),
        entry="faircert.engines.probability.bounds:answer_program",
    ),
    EngineSpec(
        "program-sequential-test",
        "program-fairness verdicts wrong with probability at most delta",
        (PROGRAM,),
        (PROGRAM_QUESTION,),
        methods=("sampling",),
        entry="faircert.engines.sampling.sequential:answer_program",
    ),
)


#: Words for error messages.
_MODEL_WORDS = {
    NETWORK: "ReLU network",
    TREES: "tree ensemble",
    LINEAR: "linear model",
    PROGRAM: "decision program",
    PIPELINE: "scikit-learn Pipeline",
    BLACKBOX: "black-box classifier",
}
_QUESTION_WORDS = {
    INDIVIDUAL: "individual-fairness verification",
    SAMPLES: "counterexample sampling",
    ROWS: "per-row audit",
    GROUP: "group fairness",
    PROGRAM_QUESTION: "program fairness",
}


def _question_word(question: Any) -> str:
    return next((w for name, w in _QUESTION_WORDS.items() if is_a(question, (name,))), type(question).__name__)


def find_engine(model: Any, question: Any, method: str = "sound") -> EngineSpec:
    """The first engine that accepts (model, question, method), or a clear error saying what is supported."""
    for spec in ENGINES:
        if spec.accepts(model, question, method):
            return spec
    what = _question_word(question)
    candidates = [s for s in ENGINES if is_a(question, s.questions)]
    if candidates and not any(is_a(model, s.models) for s in candidates):
        # a black box is made by the input stage from any classifier: no one gives one directly
        kinds = [m for s in candidates for m in s.models if m != BLACKBOX]
        needs = " or ".join(dict.fromkeys(_MODEL_WORDS.get(m, _short(m)) for m in kinds))
        raise PropertyError(f"{what} needs a {needs}; the model is a {type(model).__name__}")
    population = getattr(question, "population", None)
    under = f" under a {type(population).__name__}" if population is not None else ""
    supported = "; ".join(s.describe() for s in candidates or ENGINES)
    raise PropertyError(
        f"no engine answers {what} of a {type(model).__name__}{under} with method {method!r}; supported: {supported}"
    )
