"""One contract over every registered engine (as scikit-learn's estimator checks do for estimators).

Each engine in `faircert.engines.registry.ENGINES` has a case here: a model and a question small
enough to answer by brute force (or in closed form), a budget, and an oracle. The contract:
the registry finds that engine for the case; its answer agrees with the oracle (sound bounds
contain the truth, exact answers equal it, decisive verdicts match it); it reports progress; it
honours its time limit; its JSON names the engine as the registry does and round-trips with the
versioned envelope. A new engine without a case here fails `test_every_engine_has_a_contract_case`.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from boxes_oracle import random_network, unfair_points
from program_examples import GAUSSIAN_SHIFT as PROGRAM
from program_examples import GAUSSIAN_SHIFT_RATIO as RATIO
from regions_examples import enumerated_rates, forest_example, network_example
from timing import wall

from faircert import __version__
from faircert.domain import Domain, Feature
from faircert.engines.group.subset_sum import brute_force
from faircert.engines.protocols import Classifier, Population
from faircert.engines.registry import ENGINES, find_engine
from faircert.models.linear import LinearModel
from faircert.models.network import ReluNetwork
from faircert.models.program import load_program
from faircert.models.trees import Tree, TreeEnsemble
from faircert.options import (
    GroupOptions,
    GroupQuestion,
    ProgramOptions,
    ProgramQuestion,
    VerifyOptions,
)
from faircert.population import DiscretePopulation, Variable
from faircert.population.continuous import ProductPopulation
from faircert.population.program import ProgramPopulation
from faircert.progress import ProgressEvent
from faircert.properties import RowAudit, UnfairSamples, individual_fairness
from faircert.results.base import SCHEMA_VERSION, Verdict
from faircert.results.group import GroupResult
from faircert.results.verify import Result

LEAF = -1


@dataclass
class Case:
    model: Any
    question: Any
    options: Any
    #: raises AssertionError when the engine's answer disagrees with brute force / closed form
    check: Callable[[Any], None]
    method: str = "sound"


# --- individual fairness ------------------------------------------------------------------------

DOM = Domain((Feature("a", "integer", 0, 5), Feature("s", "categorical", 0, 2), Feature("b", "integer", -3, 3)))


def _network_case() -> Case:
    net = random_network(np.random.default_rng(4), 3, [6, 5])
    prop = individual_fairness(DOM, "s")
    unfair = unfair_points(net, DOM, [1]) / (6 * 7)  # shares are over the non-protected features

    def check(result):
        assert result.falsified <= unfair + 1e-12 <= result.falsified + result.undecided + 2e-12
        assert result.certified <= 1 - unfair + 1e-12
        assert 0 < unfair < 1 and result.undecided == 0  # tiny: decided exactly
        assert result.verdict == "unfair" and result.counterexamples
        for c in result.counterexamples:  # re-checked pairs: same free features, labels differ
            assert c.x[0] == c.x_prime[0] and c.x[2] == c.x_prime[2]
            assert (net.logit(np.array([c.x]))[0] > 0) != (net.logit(np.array([c.x_prime]))[0] > 0)

    return Case(net, prop, VerifyOptions(time_limit=30), check)


def _network_complete_case() -> Case:
    net = random_network(np.random.default_rng(4), 3, [6, 5])
    prop = individual_fairness(DOM, "s")
    truth = unfair_points(net, DOM, [1]) > 0

    def check(result):
        assert result.verdict == ("unfair" if truth else "fair") and result.decision["verdict"] == result.verdict
        for c in result.counterexamples:  # re-checked pairs: same free features, labels differ
            assert c.x[0] == c.x_prime[0] and c.x[2] == c.x_prime[2] and c.x[1] != c.x_prime[1]
            assert (net.logit(np.array([c.x]))[0] > 0) != (net.logit(np.array([c.x_prime]))[0] > 0)

    return Case(net, prop, VerifyOptions(time_limit=30, complete=True), check, method="complete")


def _linear_case() -> Case:
    net = ReluNetwork([np.array([[0.5, -1.25, 0.75]])], [np.array([-0.5])])  # ties on the grid
    prop = individual_fairness(DOM, "s")
    unfair = unfair_points(net, DOM, [1]) / (6 * 7)

    def check(result):
        assert result.exact is True and result.undecided == 0 and result.falsified == unfair and 0 < unfair < 1
        assert result.verdict == "unfair" and result.counterexamples

    return Case(net, prop, VerifyOptions(time_limit=30), check)


def _rows_case(model, predict) -> Case:
    rows = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    prop = individual_fairness(DOM, "s", epsilon={"a": 1})
    truth = []
    for x in rows:  # brute force over each row's ball
        twins = [
            [a, s, x[2]] for a in range(int(max(0, x[0] - 1)), int(min(5, x[0] + 1)) + 1) for s in range(3) if s != x[1]
        ]
        truth.append("unfair" if np.any(predict(np.array(twins, dtype=float)) != predict(x[None])[0]) else "fair")

    def check(result):
        assert result.verdicts == truth and "fair" in truth and "unfair" in truth

    return Case(model, RowAudit(prop, rows), VerifyOptions(time_limit=30), check)


def _rows_linear_case() -> Case:
    net = ReluNetwork([np.array([[0.5, -1.25, 0.75]])], [np.array([-0.5])])
    return _rows_case(net, lambda X: (X @ np.array([0.5, -1.25, 0.75]) - 0.5 > 0).astype(int))


def _rows_network_case() -> Case:
    net = random_network(np.random.default_rng(4), 3, [6, 5])
    return _rows_case(net, net.predict)


def _rows_trees_case() -> Case:
    ir = _trees()
    return _rows_case(ir, ir.predict)


def _rows_blackbox_case() -> Case:
    from faircert.models.blackbox import BlackBoxModel

    ir = _trees()

    class Opaque:  # known only by its predictions
        def predict(self, X):
            return ir.predict(np.asarray(X, dtype=float))

    model, _ = BlackBoxModel.of(Opaque(), DOM)
    return _rows_case(model, ir.predict)


def _blackbox_sampling_case() -> Case:
    """A classifier known only by its predictions, over DOM: no share proven either way, the
    statistical interval holding the brute-force unfair share, every counterexample a real pair."""
    from faircert.models.blackbox import BlackBoxModel

    ir = _trees()

    class Opaque:  # known only by its predictions
        def predict(self, X):
            return ir.predict(np.asarray(X, dtype=float))

    model, _ = BlackBoxModel.of(Opaque(), DOM)
    grid = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    labels = ir.predict(grid).reshape(6, 3, 7)  # (a, s, b)
    truth = float(np.mean(labels.min(axis=1) != labels.max(axis=1)))

    def check(result):
        s = result.statistical
        assert (result.certified, result.falsified, result.undecided) == (0.0, 0.0, 1.0)
        assert s.samples > 1000 and s.ci_low <= truth <= s.ci_high and 0 < truth < 1
        assert result.verdict == "unfair" and all(
            ir.predict(np.array([c.x]))[0] != ir.predict(np.array([c.x_prime]))[0] for c in result.counterexamples
        )

    return Case(model, individual_fairness(DOM, "s"), VerifyOptions(time_limit=30, workers=1), check)


def _tree(nodes) -> Tree:
    f, t, left, right, v = zip(*nodes)
    return Tree(f, t, left, right, v)


def _trees() -> TreeEnsemble:
    t1 = _tree(
        [
            (1, 1, 1, 2, 0),
            (0, 3, 3, 4, 0),
            (LEAF, 0, LEAF, LEAF, 0.9),
            (LEAF, 0, LEAF, LEAF, -0.6),
            (LEAF, 0, LEAF, LEAF, 0.4),
        ]
    )
    t2 = _tree([(2, 0, 1, 2, 0), (LEAF, 0, LEAF, LEAF, -0.5), (LEAF, 0, LEAF, LEAF, 0.3)])
    return TreeEnsemble([t1, t2], 3, split="<", input_float32=False)


def _tree_unfair_inputs(ir: TreeEnsemble) -> set[tuple[int, ...]]:
    """Grid points whose label changes for some other protected value (brute force)."""
    grid = np.array(list(itertools.product(*(f.values() for f in DOM.features))), dtype=float)
    label = dict(zip(map(tuple, grid), ir.predict_proba(grid) > 0.5))
    return {x for x in label if any(label[(x[0], s, x[2])] != label[x] for s in (0.0, 1.0, 2.0))}


def _tree_case() -> Case:
    ir = _trees()
    prop = individual_fairness(DOM, "s")
    unfair = len(_tree_unfair_inputs(ir)) / DOM.measure()

    def check(result):
        assert result.falsified == pytest.approx(unfair, abs=1e-12) and result.undecided == 0
        assert result.certified == pytest.approx(1 - unfair, abs=1e-12)
        assert 0 < unfair < 1 and result.verdict == "unfair"

    return Case(ir, prop, VerifyOptions(time_limit=30), check)


def _tree_population_case() -> Case:
    """Under skewed marginals (some values never seen): the exact probability of an unfair twin."""

    from faircert.population.marginals import Marginals

    ir = _trees()
    codes = np.array(
        [[a, 0, b] for a, b, n in [(0, -3, 5), (1, 0, 2), (3, 0, 1), (3, 2, 4), (5, 3, 3)] for _ in range(n)],
        dtype=float,
    )
    prop = replace(individual_fairness(DOM, "s"), population=Marginals.from_codes(codes))
    unfair = _tree_unfair_inputs(ir)
    a, na = np.unique(codes[:, 0], return_counts=True)
    b, nb = np.unique(codes[:, 2], return_counts=True)
    truth = sum(
        pa * pb for x, pa in zip(a, na / len(codes)) for y, pb in zip(b, nb / len(codes)) if (x, 0.0, y) in unfair
    )

    def check(result):
        assert 0 < truth < 1 and result.undecided == 0 and result.domain_size == 1.0
        assert result.falsified == pytest.approx(truth, abs=1e-12) and result.verdict == "unfair"

    return Case(ir, prop, VerifyOptions(time_limit=30), check)


def _tree_complete_case() -> Case:
    ir = _trees()
    prop = individual_fairness(DOM, "s")
    unfair = _tree_unfair_inputs(ir)

    def check(result):
        assert unfair and result.verdict == "unfair" and result.decision["verdict"] == "unfair"
        assert len(result.partitions) == result.decision["regions"] > 1
        for c in result.counterexamples:  # re-checked pairs: same free features, another protected value
            assert c.x[0] == c.x_prime[0] and c.x[2] == c.x_prime[2] and c.x[1] != c.x_prime[1]

    return Case(ir, prop, VerifyOptions(time_limit=30, partition_size=3), check, method="complete")


def _tree_sampling_case() -> Case:
    ir = _trees()
    unfair = _tree_unfair_inputs(ir)

    def check(frame):
        assert len(frame) == 50
        for row in frame.itertuples(index=False):
            x = (float(row.a), float(row.s), float(row.b))
            assert x in unfair and (row.a, row.b) == (row.a_prime, row.b_prime) and row.s != row.s_prime
            assert (row.output > 0.5) != (row.output_prime > 0.5)
        assert frame.attrs["summary"]["region_exact"]

    return Case(ir, UnfairSamples(individual_fairness(DOM, "s"), 50), VerifyOptions(time_limit=30), check)


# --- group fairness -----------------------------------------------------------------------------


def _bern(name: str, p: float, parents: tuple = (), table=None) -> Variable:
    return Variable(name, (0, 1), ("0", "1"), parents, table if table is not None else [1 - p, p])


def _population() -> DiscretePopulation:
    q = _bern("Q", 0, parents=("P",), table=[[0.7, 0.3], [0.4, 0.6]])
    return DiscretePopulation({"P": _bern("P", 0.5), "Q": q, "R": _bern("R", 0.5), "S": _bern("S", 0.3)}, ("P",))


LINEAR = LinearModel.plain([1, 1, 1, -1], -2, ["P", "Q", "R", "S"], strict=False)  # P+Q+R-S >= 2


def _by_group_truth(pop: DiscretePopulation) -> dict[int, float]:
    return {v: brute_force(LINEAR, pop, {"P": v})[0] for v in (0, 1)}


def _group_check(exact: bool) -> Callable[[Any], None]:
    truth = _by_group_truth(_population())

    def check(result):
        for g in result.groups:
            p = truth[int(g.group["P"])]
            if exact:
                assert g.low == pytest.approx(p, abs=1e-12) and g.high == pytest.approx(p, abs=1e-12)
            else:
                assert g.low - 1e-12 <= p <= g.high + 1e-12
        assert result.verdict == ("fair" if min(truth.values()) / max(truth.values()) >= 0.8 else "unfair")

    return check


def _subset_sum_case() -> Case:
    question = GroupQuestion(_population(), ("P",))
    return Case(LINEAR, question, GroupOptions(time_limit=30), _group_check(exact=True))


def _tree_group_case() -> Case:
    """The small ensemble under independent marginals of its inputs (x1 protected): each group's
    rate exactly, as enumerated."""
    probs = {"x0": [3, 1, 0, 6, 2, 8], "x1": [5, 10, 5], "x2": [1, 2, 3, 4, 4, 3, 3]}
    variables = {
        name: Variable(name, tuple(range(len(c))) if name != "x2" else tuple(range(-3, 4)), (), (), np.array(c) / 20)
        for name, c in probs.items()
    }
    pop = DiscretePopulation(variables, ("x1",), kind="independent", info={"rows": 20})
    ir = _trees()
    truth = {}
    for s in range(3):
        grid = np.array([[a, s, b] for a in range(6) for b in range(-3, 4)], dtype=float)
        weight = np.array([probs["x0"][int(a)] * probs["x2"][int(b) + 3] for a, _, b in grid]) / 400
        truth[str(s)] = float(weight[ir.predict_proba(grid) > 0.5].sum())

    def check(result):
        assert len(result.groups) == 3
        for g in result.groups:  # counted exactly: only the float marginals' rounding is left
            assert g.low - 1e-12 <= truth[g.group["x1"]] <= g.high + 1e-12 and g.high - g.low < 1e-12
        assert 0 < min(truth.values()) < max(truth.values())

    return Case(ir, GroupQuestion(pop, ("x1",)), GroupOptions(time_limit=30), check)


def _regions_check(truth: dict[str, float]) -> Callable[[Any], None]:
    def check(result):
        for g in result.groups:  # every box decided: only the masses' rounding is left
            assert g.low <= truth[g.group["s"]] <= g.high and g.high - g.low < 1e-9
        assert result.stats["boxes_open"] == 0

    return check


def _network_regions_case() -> Case:
    """A small network under independent marginals of its inputs: each group's rate, as enumerated."""
    net, pop = network_example()
    return Case(
        net, GroupQuestion(pop, ("s",)), GroupOptions(time_limit=30), _regions_check(enumerated_rates(net, pop))
    )


def _tree_regions_case() -> Case:
    """A forest past the exact count's leaf cap under independent marginals: each group's rate."""
    ir, pop = forest_example(depth=11, trees=4)
    assert sum(int(t.is_leaf.sum()) for t in ir.trees) > 8_000
    return Case(ir, GroupQuestion(pop, ("s",)), GroupOptions(time_limit=30), _regions_check(enumerated_rates(ir, pop)))


def _as_network(model: LinearModel):
    """The same linear rule as a one-layer ReLU network (so the bounding engine, not subset-sum, answers)."""
    from faircert.models.network import ReluNetwork

    w = np.asarray(model.weights, dtype=float)[None, :]
    return ReluNetwork([w], [np.array([model.intercept + 0.5])], input_names=["P", "Q", "R", "S"])  # >= 2 is > 1.5


def _probability_bounds_case() -> Case:
    question = GroupQuestion(_population(), ("P",))
    return Case(_as_network(LINEAR), question, GroupOptions(time_limit=30), _group_check(exact=False))


def _sequential_case() -> Case:
    question = GroupQuestion(_population(), ("P",))
    truth = _by_group_truth(_population())

    def check(result):
        assert result.verdict == ("fair" if min(truth.values()) / max(truth.values()) >= 0.8 else "unfair")

    return Case(
        _as_network(LINEAR),
        question,
        GroupOptions(time_limit=30, method="sampling", delta=1e-3),
        check,
        method="sampling",
    )


def _empirical_case() -> Case:
    """Rows repeated in proportion to the population's probabilities (multiples of 1/10000): the
    empirical rates are the population's exact ones."""
    import pandas as pd

    from faircert.population.empirical import EmpiricalPopulation

    rows = []
    for assignment, p in _population().joint():
        rows += [assignment] * round(p * 10000)
    frame = pd.DataFrame(rows)[["P", "Q", "R", "S"]]
    pop = EmpiricalPopulation.from_data(frame, ["P", "Q", "R", "S"], ["P"], None)
    return Case(LINEAR, GroupQuestion(pop, ("P",)), GroupOptions(time_limit=30), _group_check(exact=True))


def _opaque_linear():
    """LINEAR known only by its predictions (a black box over P, Q, R, S)."""
    from faircert.models.blackbox import BlackBoxModel

    class Opaque:
        def predict(self, X):
            return LINEAR.predict(dict(zip("PQRS", np.asarray(X, dtype=float).T)))

    domain = Domain(tuple(Feature(n, "binary", 0, 1) for n in "PQRS"))
    return BlackBoxModel.of(Opaque(), domain)[0]


def _blackbox_empirical_case() -> Case:
    """Every row of the data decided on the black box: the population's exact rates."""
    case = _empirical_case()
    return Case(_opaque_linear(), case.question, case.options, _group_check(exact=True))


def _blackbox_group_sampling_case() -> Case:
    """Nothing proven ([0, 1] bounds); the sampled rates hold the exact ones."""
    truth = _by_group_truth(_population())
    group_check = _group_check(exact=False)

    def check(result):
        assert result.verdict == "unknown" and result.estimate is not None
        for g in result.estimate.groups:
            assert g.low <= truth[int(g.group["P"])] <= g.high
        group_check(replace(result, verdict=result.estimate.verdict))

    question = GroupQuestion(_population(), ("P",))
    return Case(_opaque_linear(), question, GroupOptions(time_limit=30), check)


# --- decision programs --------------------------------------------------------------------------


def _program_check(result) -> None:
    assert result.verdict == "unfair"  # 0.594 < 1 - 0.15
    if result.method == "sound":
        assert result.ratio_low - 1e-9 <= RATIO <= result.ratio_high + 1e-9


def _program_case() -> Case:
    return Case(load_program(PROGRAM), ProgramQuestion(epsilon=0.15), ProgramOptions(time_limit=30), _program_check)


def _program_sequential_case() -> Case:
    return Case(
        load_program(PROGRAM),
        ProgramQuestion(epsilon=0.15),
        ProgramOptions(time_limit=30, method="sampling", delta=1e-3),
        _program_check,
        method="sampling",
    )


CASES: dict[str, Callable[[], Case]] = {
    "linear-exact": _linear_case,
    "rows-linear": _rows_linear_case,
    "rows-network": _rows_network_case,
    "rows-trees": _rows_trees_case,
    "rows-blackbox": _rows_blackbox_case,
    "blackbox-sampling": _blackbox_sampling_case,
    "network-boxes": _network_case,
    "network-complete": _network_complete_case,
    "tree-complete": _tree_complete_case,
    "tree-population": _tree_population_case,
    "tree-boxes": _tree_case,
    "tree-sampling": _tree_sampling_case,
    "subset-sum": _subset_sum_case,
    "empirical": _empirical_case,
    "blackbox-empirical": _blackbox_empirical_case,
    "blackbox-group-sampling": _blackbox_group_sampling_case,
    "probability-bounds": _probability_bounds_case,
    "tree-population-group": _tree_group_case,
    "tree-regions-group": _tree_regions_case,
    "network-regions-group": _network_regions_case,
    "sequential-test": _sequential_case,
    "program-bounds": _program_case,
    "program-sequential-test": _program_sequential_case,
}


class _Kinds:
    """A visitor of every kind: says which method the model or population dispatched to."""

    def network(self, model):
        return "network"

    def trees(self, model):
        return "trees"

    def linear(self, model):
        return "linear"

    def product(self, population):
        return "product"

    def program(self, population):
        return "program"

    def discrete(self, population):
        return "discrete"


CLASSIFIER_KINDS = {ReluNetwork: "network", TreeEnsemble: "trees", LinearModel: "linear"}
POPULATION_KINDS = {ProductPopulation: "product", ProgramPopulation: "program", DiscretePopulation: "discrete"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_models_and_populations_meet_the_engines_protocols(name):
    """What a case hands its engine reaches the engine's code through the protocols: each model IR
    and population dispatches to the visitor method of its own kind."""
    case = CASES[name]()
    if type(case.model) in CLASSIFIER_KINDS:
        assert isinstance(case.model, Classifier)
        assert case.model.accept(_Kinds()) == CLASSIFIER_KINDS[type(case.model)]
        assert len(case.model.named_inputs()) == len(set(case.model.named_inputs())) > 0
    population = getattr(case.question, "population", None)
    if type(population) in POPULATION_KINDS:
        assert isinstance(population, Population) and population.accept(_Kinds()) == POPULATION_KINDS[type(population)]


def test_every_engine_has_a_contract_case():
    assert sorted(spec.name for spec in ENGINES) == sorted(CASES)


def _json_payload(answer: Any) -> dict:
    if isinstance(answer, Verdict):
        return json.loads(answer.to_json())
    return json.loads(json.dumps(answer.attrs["summary"]))  # testing mode: a DataFrame and its summary


@pytest.mark.parametrize("name", sorted(CASES))
def test_engine_contract(name):
    case = CASES[name]()
    spec = find_engine(case.model, case.question, case.method)
    assert spec.name == name
    seen: list[ProgressEvent] = []
    t0 = time.monotonic()
    answer = spec.run(case.model, case.question, case.options, seen.append)
    elapsed = time.monotonic() - t0
    case.check(answer)
    assert seen and all(isinstance(update, ProgressEvent) and update.elapsed_s >= 0 for update in seen)
    assert elapsed <= wall(case.options.time_limit + 2.0)
    payload = _json_payload(answer)
    assert payload["engine"] == name  # results name the engine as the registry does
    if isinstance(answer, Verdict):
        assert payload["schema_version"] == SCHEMA_VERSION and payload["faircert_version"] == __version__
        if isinstance(answer, (Result, GroupResult)):  # every case here finishes well inside its time limit
            assert payload["stopped"] == answer.stopped == "done"
        assert payload["verdict"] == answer.verdict
        assert json.loads(json.dumps(payload)) == payload


def _slow_network_case() -> Case:
    """A domain far too large to decide in a second."""
    net = random_network(np.random.default_rng(1), 6, [40, 40, 40])
    dom = Domain(tuple(Feature(f"x{i}", "integer", 0, 1000) for i in range(5)) + (Feature("s", "binary", 0, 1),))
    return Case(net, individual_fairness(dom, "s"), VerifyOptions(time_limit=1.0), lambda r: None)


def _slow_network_complete_case() -> Case:
    case = _slow_network_case()
    return Case(
        case.model, case.question, VerifyOptions(time_limit=1.0, partition_size=500), case.check, method="complete"
    )


def _slow_program_case() -> Case:
    return Case(
        load_program(PROGRAM), ProgramQuestion(epsilon=1 - RATIO), ProgramOptions(time_limit=1.0), lambda r: None
    )  # the threshold sits on the true ratio: refinement never settles


def _slow_trees_case() -> Case:
    """A forest of deep trees whose boxes take seconds per full batch to settle."""
    pytest.importorskip("sklearn")
    from sklearn.ensemble import RandomForestClassifier

    from faircert.models.io.sklearn.trees import load_sklearn_trees

    rng = np.random.default_rng(0)
    X = rng.integers(0, 100, (3000, 6)).astype(float)
    X[:, 5] = rng.integers(0, 2, 3000)
    y = (X[:, 0] + X[:, 1] * X[:, 5] + rng.normal(0, 20, 3000) > 80).astype(int)
    ir = load_sklearn_trees(RandomForestClassifier(100, max_depth=10, random_state=0).fit(X, y))
    dom = Domain(tuple(Feature(f"x{i}", "integer", 0, 99) for i in range(5)) + (Feature("s", "binary", 0, 1),))
    return Case(ir, individual_fairness(dom, "s"), VerifyOptions(time_limit=2.0, workers=1), lambda r: None)


def _slow_group_trees_case() -> Case:
    """The forest under a population of its inputs: a hundred deep trees keep the bounds open."""
    forest = _slow_trees_case().model
    variables = {f"x{i}": Variable(f"x{i}", tuple(range(100)), (), (), np.full(100, 0.01)) for i in range(5)}
    variables["x5"] = Variable("x5", (0, 1), ("0", "1"), (), [0.4, 0.6])  # the forest's protected input
    pop = DiscretePopulation(variables, ("x5",), kind="independent")
    return Case(forest, GroupQuestion(pop, ("x5",)), GroupOptions(time_limit=2.0), lambda r: None)


def _slow_group_linear_case() -> Case:
    """A chain of many-valued variables: exact sums take a minute; the score grids answer in time."""
    rng = np.random.default_rng(0)
    variables = {"s": Variable("s", (0, 1), (), (), [0.5, 0.5])}
    previous = "s"
    for i in range(10):
        variables[f"v{i}"] = Variable(
            f"v{i}", tuple(range(12)), (), (previous,), rng.dirichlet(np.ones(12), size=variables[previous].card)
        )
        previous = f"v{i}"
    model = LinearModel.plain(rng.normal(size=11), 0.1, list(variables))
    return Case(
        model,
        GroupQuestion(DiscretePopulation(variables, ("s",)), ("s",)),
        GroupOptions(time_limit=0.5),
        lambda r: None,
    )


@pytest.mark.parametrize(
    "make",
    [
        _slow_network_case,
        _slow_network_complete_case,
        _slow_program_case,
        _slow_trees_case,
        _slow_group_trees_case,
        _slow_group_linear_case,
    ],
    ids=["network", "network-complete", "program", "trees", "group-trees", "group-linear"],
)
def test_bounding_engines_stop_at_their_time_limit_with_sound_partial_answers(make):
    case = make()
    spec = find_engine(case.model, case.question, case.method)
    # compiled kernels are built on a cold cache at the first call: that is not the engine's overshoot
    spec.run(case.model, case.question, replace(case.options, time_limit=0.05), None)
    t0 = time.monotonic()
    answer = spec.run(case.model, case.question, case.options, None)
    assert time.monotonic() - t0 <= wall(case.options.time_limit)
    if hasattr(answer, "groups"):  # group bounds: sound, and the linear grids tight even on a short budget
        assert all(0 <= g.low <= g.high <= 1 for g in answer.groups)
        assert answer.to_dict()["stopped"] == answer.stopped
        if isinstance(case.model, LinearModel):  # its score grid answers about at the limit, coarser past it
            assert max(g.high - g.low for g in answer.groups) < 0.05
            coarser = any("time limit was reached" in a for a in answer.approximations)
            assert answer.stopped == ("time limit" if coarser else "done")
        else:
            assert answer.stopped == "time limit"
        return
    assert answer.verdict in ("unknown", "unfair")
    assert answer.stopped == "time limit"
    if hasattr(answer, "ratio_low"):
        assert answer.verdict == "unknown" and answer.ratio_low <= RATIO <= answer.ratio_high
    else:
        assert answer.undecided > 0


def test_registry_names_real_classes():
    """Types are named by strings in the registry (cheap imports); each must name a real class."""
    import importlib

    for spec in ENGINES:
        for name in spec.models + spec.questions + spec.populations:
            module, _, cls = name.rpartition(".")
            assert isinstance(getattr(importlib.import_module(module), cls), type), name
        module, _, function = spec.entry.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), spec.entry


def test_an_unsupported_pair_names_what_is_supported():
    from faircert.errors import PropertyError

    with pytest.raises(
        PropertyError,
        match="individual-fairness verification needs a ReLU network or tree ensemble; the model is a LinearModel",
    ):
        find_engine(LINEAR, individual_fairness(DOM, "s"))
    with pytest.raises(
        PropertyError,
        match="no engine answers program fairness of a Program with method 'exact'; supported: program-bounds",
    ):
        find_engine(load_program(PROGRAM), ProgramQuestion(), "exact")
