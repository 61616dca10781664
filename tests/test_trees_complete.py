"""The complete tree check against brute force: proofs on fair ensembles, re-checked pairs on unfair
ones, unknown (never a proof) when the solver runs out of time."""

from __future__ import annotations

import numpy as np
import pytest
from test_trees_engine import _models, _small_problem, _tree, brute_force, toy_ensemble
from timing import wall

from faircert.domain import Domain, Feature
from faircert.engines.trees import complete
from faircert.engines.trees.complete import decide_trees, recheck_pair
from faircert.models.trees import TreeEnsemble
from faircert.properties import individual_fairness

L = -1
CASES = [(0, None, False), (0, 0.5, False), (1, None, False), (2, 0.7, False), (1, 0.5, True), (1, 0.8, True)]


def _prop(dom: Domain, eps: int, kappa, robust: bool, protected: str | list[str] = "p"):
    if robust:
        return individual_fairness(dom, None, epsilon=float(eps), kappa=kappa, robustness=True)
    free = [f.name for f in dom.features if f.name not in (protected if isinstance(protected, list) else [protected])]
    return individual_fairness(dom, protected, epsilon=dict.fromkeys(free, eps), kappa=kappa)


def _check(ir, dom, prop):
    _, unfair = brute_force(ir, dom, prop.protected, np.asarray(prop.epsilon), prop.kappa, prop.robustness)
    decision = decide_trees(ir, prop, time_limit=30)
    assert decision.verdict == ("unfair" if unfair > 0 else "fair"), (decision, unfair)
    if decision.verdict == "unfair":
        assert recheck_pair(ir, prop, np.array(decision.x), np.array(decision.x_prime))
    else:
        assert decision.stats["solves"] == 2  # one proof per direction
    return decision


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_random_framework_ensembles_match_brute_force(seed):
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    X, y, dom = _small_problem(seed)
    verdicts = []
    for ir in _models(X, y, seed):
        for eps, kappa, robust in CASES:
            verdicts.append(_check(ir, dom, _prop(dom, eps, kappa, robust)).verdict)
    assert "unfair" in verdicts


def _fair_by_construction(rng: np.random.Generator, dom: Domain, protected: set[int], n_trees: int = 6) -> TreeEnsemble:
    """Random trees that never split on the protected features: fair at epsilon 0 for any kappa."""
    free = [i for i in range(len(dom)) if i not in protected]
    trees = []
    for _ in range(n_trees):
        nodes, leaves = [], []
        f1, f2, f3 = (int(rng.choice(free)) for _ in range(3))
        t = [float(rng.integers(dom.features[f].min + 1, dom.features[f].max + 1)) for f in (f1, f2, f3)]
        v = rng.normal(size=4)
        nodes = [
            (f1, t[0], 1, 2, 0),
            (f2, t[1], 3, 4, 0),
            (f3, t[2], 5, 6, 0),
            (L, 0, L, L, v[0]),
            (L, 0, L, L, v[1]),
            (L, 0, L, L, v[2]),
            (L, 0, L, L, v[3]),
        ]
        trees.append(_tree(nodes))
        del leaves
    return TreeEnsemble(trees, len(dom), split="<", input_float32=False, base_score=float(rng.normal()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fair_by_construction_ensembles_get_a_proof(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    dom = Domain(
        (
            Feature("a", "integer", 0, 9),
            Feature("p", "categorical", 0, 4),
            Feature("b", "integer", 0, 6),
            Feature("q", "binary", 0, 1),
            Feature("c", "integer", -3, 3),
        )
    )
    ir = _fair_by_construction(rng, dom, {1, 3})
    for kappa in (None, 0.6):
        prop = individual_fairness(dom, ["p", "q"], kappa=kappa)
        # no tree reads p or q: proven without a solver
        assert decide_trees(ir, prop).stats["proof"].startswith("no tree reads a protected feature")
        with monkeypatch.context() as m:  # and the program proves it too
            m.setattr(complete, "_reads_no_protected", lambda ir, prop: False)
            assert _check(ir, dom, prop).verdict == "fair"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_protected_features_and_five_values_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    dom = Domain(
        (
            Feature("a", "integer", 0, 6),
            Feature("p", "categorical", 0, 4),
            Feature("b", "integer", 0, 5),
            Feature("q", "binary", 0, 1),
        )
    )
    features = [0, 1, 2, 3]
    trees = []
    for _ in range(5):
        f = rng.choice(features, 3)
        t = [float(rng.integers(dom.features[i].min + 1, dom.features[i].max + 1)) for i in f]
        v = rng.normal(size=4)
        trees.append(
            _tree(
                [
                    (f[0], t[0], 1, 2, 0),
                    (f[1], t[1], 3, 4, 0),
                    (f[2], t[2], 5, 6, 0),
                    (L, 0, L, L, v[0]),
                    (L, 0, L, L, v[1]),
                    (L, 0, L, L, v[2]),
                    (L, 0, L, L, v[3]),
                ]
            )
        )
    ir = TreeEnsemble(trees, 4, split="<=", input_float32=False)
    for eps, kappa in ((0, None), (1, 0.6)):
        free = {"a": eps, "b": eps}
        _check(ir, dom, individual_fairness(dom, ["p", "q"], epsilon=free, kappa=kappa))


def test_the_papers_toy_ensemble():
    """The tree paper's Fig. 1 ensemble (x2 protected): unfair at epsilon 0, as its measure says."""
    ir = toy_ensemble()
    dom = Domain((Feature("x0", "integer", 0, 1000), Feature("x1", "integer", 0, 5), Feature("x2", "integer", 0, 100)))
    prop = individual_fairness(dom, "x1")
    decision = decide_trees(ir, prop)
    assert decision.verdict == "unfair"
    assert recheck_pair(ir, prop, np.array(decision.x), np.array(decision.x_prime))


def test_real_features_proof_and_pair():
    """Real-valued features: the boundary points are a superset, so proofs stay sound."""
    t1 = _tree([(0, 0.5, 1, 2, 0), (L, 0, L, L, -1.0), (L, 0, L, L, 1.0)])
    t2 = _tree([(1, 0.25, 1, 2, 0), (L, 0, L, L, 0.0), (L, 0, L, L, 3.0)])  # feature 1 is protected
    dom = Domain((Feature("x", "real", 0.0, 1.0), Feature("s", "binary", 0, 1)))
    fair = TreeEnsemble([t1], 2, split="<", input_float32=True)
    assert decide_trees(fair, individual_fairness(dom, "s")).verdict == "fair"
    unfair = TreeEnsemble([t1, t2], 2, split="<", input_float32=True)
    decision = decide_trees(unfair, individual_fairness(dom, "s"))
    assert decision.verdict == "unfair" and decision.x[1] != decision.x_prime[1]


def test_a_solver_time_out_is_unknown_never_a_proof(monkeypatch):
    from faircert.engines.trees import complete

    def no_time(self, objective, time_limit):
        class Result:
            status, x, message, mip_dual_bound = 1, None, "Time limit reached", -np.inf

        return Result()

    monkeypatch.setattr(complete._Program, "solve", no_time)
    monkeypatch.setattr(complete, "_search", lambda *args: (None, 0))
    dom = Domain((Feature("a", "integer", 0, 9), Feature("p", "binary", 0, 1)))
    ir = TreeEnsemble(
        [_tree([(1, 0.5, 1, 2, 0), (L, 0, L, L, -1.0), (0, 5.0, 3, 4, 0), (L, 0, L, L, -1.0), (L, 0, L, L, 1.0)])],
        2,
        input_float32=False,
    )
    decision = decide_trees(ir, individual_fairness(dom, "p"))
    assert decision.verdict == "unknown" and "Time limit reached" in decision.reason


def _options(**kw):
    from types import SimpleNamespace

    base = dict(time_limit=30.0, seed=0, max_counterexamples=10, confidence=0.99, partition_size=None)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("eps", [0, 1])
def test_partitions_match_brute_force_per_partition(eps):
    """Every partition's verdict: unfair iff some input of it has a counterexample (its twin may lie
    in another partition); the run is unfair iff one is, with the sound shares kept."""
    from test_trees_engine import brute_force_masks

    from faircert.engines.trees.complete import answer

    pytest.importorskip("xgboost")
    X, y, dom = _small_problem(3)
    ir = next(_models(X, y, 3))
    prop = _prop(dom, eps, 0.5, False)
    grid, _, unfair = brute_force_masks(ir, dom, prop.protected, np.asarray(prop.epsilon), prop.kappa, False)
    result = answer(ir, prop, _options(partition_size=3))
    assert len(result.partitions) == result.decision["regions"] > 1
    for row in result.partitions:
        inside = np.ones(len(grid), dtype=bool)
        for name, low in row["lower"].items():
            j = dom.names.index(name)
            inside &= (grid[:, j] >= low) & (grid[:, j] <= row["upper"][name])
        assert row["verdict"] == ("unfair" if unfair[inside].any() else "fair"), row
    assert result.verdict == ("unfair" if unfair.any() else "fair")
    assert result.decision["coverage"] == 1.0 and result.engine == "tree-complete"
    assert result.falsified <= unfair.mean() + 1e-12 <= result.falsified + result.undecided + 1e-12


def test_a_fair_ensemble_decided_whole_reports_exact_shares():
    from faircert.engines.trees.complete import answer

    rng = np.random.default_rng(5)
    dom = Domain(
        (
            Feature("a", "integer", 0, 9),
            Feature("p", "categorical", 0, 4),
            Feature("b", "integer", 0, 6),
            Feature("q", "binary", 0, 1),
            Feature("c", "integer", -3, 3),
        )
    )
    ir = _fair_by_construction(rng, dom, {1, 3})
    result = answer(ir, individual_fairness(dom, ["p", "q"]), _options())
    assert (result.verdict, result.certified, result.undecided) == ("fair", 1.0, 0.0)
    assert result.decision["evidence"] == "proof" and result.partitions is None


def test_a_partition_grid_over_the_limit_is_one_clear_error(monkeypatch):
    from faircert.engines.trees import complete
    from faircert.errors import PropertyError

    dom = Domain((Feature("a", "integer", 0, 999), Feature("p", "binary", 0, 1), Feature("b", "integer", 0, 999)))
    monkeypatch.setattr(complete, "MAX_PARTITIONS", 1000)
    with pytest.raises(PropertyError, match="cuts the domain into 10,000 partitions .* use a larger partition size"):
        complete.partitions(individual_fairness(dom, "p"), 10)
    with pytest.raises(PropertyError, match="partition size must be an integer >= 1"):
        complete.partitions(individual_fairness(dom, "p"), 0)


def test_random_pairs_find_a_common_counterexample_before_any_program():
    dom = Domain((Feature("a", "integer", 0, 99), Feature("p", "binary", 0, 1)))
    # unfair wherever a >= 20: most of the domain
    ir = TreeEnsemble(
        [_tree([(1, 0.5, 1, 2, 0), (L, 0, L, L, -1.0), (0, 20.0, 3, 4, 0), (L, 0, L, L, -1.0), (L, 0, L, L, 1.0)])],
        2,
        input_float32=False,
    )
    prop = individual_fairness(dom, "p")
    decision = decide_trees(ir, prop)
    assert decision.verdict == "unfair" and decision.stats["solves"] == 0 and decision.stats["pairs_drawn"] > 0
    assert recheck_pair(ir, prop, np.array(decision.x), np.array(decision.x_prime)) and decision.x[0] >= 20


def test_large_programs_are_solved_in_a_child_stopped_at_the_time_limit(monkeypatch):
    import time

    monkeypatch.setattr(complete, "CHILD_VARIABLES", 0)
    monkeypatch.setattr(complete, "_search", lambda *args: (None, 0))
    X, y, dom = _small_problem(0)
    pytest.importorskip("xgboost")
    ir = next(_models(X, y, 0))
    for eps, kappa, robust in CASES[:3]:  # the same answers through the child
        _check(ir, dom, _prop(dom, eps, kappa, robust))

    def stuck(*args):  # a solver that never looks at the clock
        time.sleep(60)

    monkeypatch.setattr(complete, "_solve", stuck)
    program = complete._Program()
    program.var(0.0, 1.0, integer=True)
    start = time.monotonic()
    res = program.solve({0: 1.0}, time_limit=0.5)
    assert res.status == 1 and res.x is None and time.monotonic() - start < wall(0.5 + complete.CHILD_GRACE_S)
