"""group_bounds: any model IR under product populations or population programs, against exact values."""

import numpy as np
import pytest
from scipy.stats import norm

from faircert.engines.probability.bounds import Stop, group_bounds
from faircert.engines.probability.refine import RefineOptions
from faircert.models.linear import LinearModel
from faircert.models.network import ReluNetwork
from faircert.models.trees import Tree, TreeEnsemble
from faircert.population.continuous import ProductPopulation

POP = ProductPopulation.of({"a": {"gaussian": [0, 1]}, "s": {"discrete": {0: 0.3, 1: 0.7}}, "b": {"gaussian": [1, 4]}})


def _exact_linear(w_a, w_s, w_b, c, s):
    # w_a a + w_b b + w_s s + c > 0 with a ~ N(0,1), b ~ N(1, 4)
    mean = w_b * 1 + w_s * s + c
    sd = np.hypot(w_a, 2 * w_b)
    return 1 - norm.cdf(-mean / sd)


def test_linear_model_under_gaussians_brackets_the_exact_rates():
    model = LinearModel.plain([1.0, -0.6, 0.5], -0.4, ["a", "s", "b"])
    r = group_bounds(model, POP, protected="s", budget=RefineOptions(time_limit=10), stop=Stop(threshold=0.8))
    exact = {s: _exact_linear(1.0, -0.6, 0.5, -0.4, s) for s in (0, 1)}
    for g in r.groups:
        assert g.low <= exact[int(g.group["s"])] <= g.high
    di = exact[1] / exact[0]
    assert r.metrics["di"].low <= di <= r.metrics["di"].high
    assert r.verdict == ("fair" if di >= 0.8 else "unfair")


def _assert_groups_bracket_monte_carlo(net, result, rng):
    """Each group's interval holds its Monte-Carlo rate (1e6 samples), within 5 standard errors."""
    X = POP.sample(rng, 1_000_000)
    y = net.predict(np.stack([X["a"], X["s"], X["b"]], axis=1))
    for g in result.groups:
        mask = X["s"] == g.group["s"]
        p = y[mask].mean()
        se = np.sqrt(max(p * (1 - p), 1e-6) / mask.sum())
        assert g.low - 5 * se <= p <= g.high + 5 * se


def test_relu_network_brackets_monte_carlo():
    rng = np.random.default_rng(3)
    net = ReluNetwork(
        [rng.normal(size=(6, 3)), rng.normal(size=(1, 6))],
        [rng.normal(size=6), np.array([0.2])],
        input_names=["a", "s", "b"],
    )
    r = group_bounds(net, POP, protected="s", budget=RefineOptions(time_limit=5), stop=Stop(target_width=2e-3))
    _assert_groups_bracket_monte_carlo(net, r, rng)


def test_tree_ensemble_exact_leaf_probabilities():
    # one stump on a (x < 0.5 -> -1 else +1) and one on s (s < 0.5 -> +0.3 else -0.3); sigmoid link
    stump_a = Tree([0, -1, -1], [0.5, 0, 0], [1, -1, -1], [2, -1, -1], [0, -1.0, 1.0])
    stump_s = Tree([1, -1, -1], [0.5, 0, 0], [1, -1, -1], [2, -1, -1], [0, 0.3, -0.3])
    model = TreeEnsemble([stump_a, stump_s], n_features=3, feature_names=["a", "s", "b"], input_float32=False)
    # threshold 1: DI = 1 exactly is never decided, so the bounds tighten to target_width
    r = group_bounds(
        model, POP, protected="s", budget=RefineOptions(time_limit=5), stop=Stop(threshold=1.0, target_width=1e-3)
    )
    # positive iff a >= 0.5 (score 1 +- 0.3 > 0); a < 0.5 gives -1 +- 0.3 < 0
    exact = 1 - norm.cdf(0.5)
    for g in r.groups:
        assert g.low <= exact <= g.high and g.high - g.low < 1e-3
    assert r.metrics["di"].low <= 1.0 <= r.metrics["di"].high


def test_population_program_feeds_a_model():
    program = (
        "s = step([(0,1,0.4),(1,2,0.6)])\n"
        "if s < 1:\n    a = gaussian(-1, 1)\nelse:\n    a = gaussian(1, 1)\n"
        "b = gaussian(0, 1)\nsensitiveAttribute(s < 1)\n"
    )
    model = LinearModel.plain([1.0, 0.0, 1.0], 0.0, ["a", "s", "b"])
    r = group_bounds(model, program, budget=RefineOptions(time_limit=10))
    exact = {True: 1 - norm.cdf(1 / np.sqrt(2)), False: 1 - norm.cdf(-1 / np.sqrt(2))}
    for g in r.groups:
        (flag,) = g.group.values()
        assert g.low <= exact[flag] <= g.high
    assert r.verdict == "unfair"  # DI = 0.24 / 0.76
    r2 = group_bounds(model, program, protected="s >= 1", budget=RefineOptions(time_limit=10))
    assert {tuple(g.group.values())[0] for g in r2.groups} == {True, False}


def test_bad_inputs_are_reported():
    from faircert.errors import PropertyError

    model = LinearModel.plain([1.0], 0.0, ["zzz"])
    with pytest.raises(PropertyError, match="zzz"):
        group_bounds(model, POP, protected="s")
    with pytest.raises(PropertyError, match="continuous"):
        group_bounds(LinearModel.plain([1.0, 1.0, 1.0], 0.0, ["a", "s", "b"]), POP, protected="a")


def test_sampled_group_rates_agree_with_exact_values():
    from faircert.engines.sampling.sequential import group_sampled

    model = LinearModel.plain([1.0, -0.6, 0.5], -0.4, ["a", "s", "b"])
    r = group_sampled(model, POP, protected="s", delta=1e-6, time_limit=20)
    exact = {s: _exact_linear(1.0, -0.6, 0.5, -0.4, s) for s in (0, 1)}
    for g in r.groups:
        assert g.low <= exact[int(g.group["s"])] <= g.high
    assert r.verdict == ("fair" if exact[1] / exact[0] >= 0.8 else "unfair")
    assert "P[wrong verdict] <= 1e-06" in r.approximations[0] and r.stats["samples"] > 0


def test_group_api_accepts_a_population_program(tmp_path):
    import faircert

    program = tmp_path / "pop.fr"
    program.write_text(
        "def popModel():\n    s = step([(0,1,0.4),(1,2,0.6)])\n    if s < 1:\n        a = gaussian(-1, 1)\n"
        "    else:\n        a = gaussian(1, 1)\n    b = gaussian(0, 1)\n    sensitiveAttribute(s < 1)\n"
    )
    net = ReluNetwork([np.array([[1.0, 0.0, 1.0]])], [np.array([0.0])], input_names=["a", "s", "b"])
    r = faircert.group(net, population=str(program), time_limit=10)
    exact = {True: 1 - norm.cdf(1 / np.sqrt(2)), False: 1 - norm.cdf(-1 / np.sqrt(2))}
    for g in r.groups:
        (flag,) = g.group.values()
        assert g.low <= exact[flag] <= g.high
    assert r.verdict == "unfair" and r.engine == "probability-bounds"


@pytest.mark.parametrize("seed", range(4))
def test_network_under_a_discrete_bayesian_network_matches_enumeration(seed):
    import itertools

    from faircert.population.discrete import DiscretePopulation, Variable

    rng = np.random.default_rng(seed)
    s = Variable("s", (0, 1), ("f", "m"), (), np.array([0.3, 0.7]))
    a = Variable("a", (1.0, 2.0, 3.0), (), ("s",), rng.dirichlet(np.ones(3), size=2))
    b = Variable("b", (-1.0, 0.5), (), ("a", "s"), rng.dirichlet(np.ones(2), size=(3, 2)))
    pop = DiscretePopulation({"s": s, "a": a, "b": b}, protected=("s",))
    net = ReluNetwork(
        [rng.normal(size=(5, 3)), rng.normal(size=(1, 5))],
        [rng.normal(size=5), np.array([0.5])],
        input_names=["a", "s", "b"],
    )
    r = group_bounds(net, pop, budget=RefineOptions(time_limit=10), stop=Stop(threshold=None, target_width=1e-9))
    for g in r.groups:
        sv = 0 if g.group["s"] == "f" else 1
        num = den = 0.0
        for ai, bi in itertools.product(range(3), range(2)):
            p = s.cpt[sv] * a.cpt[sv, ai] * b.cpt[ai, sv, bi]
            num += p * net.predict(np.array([[a.states[ai], sv, b.states[bi]]]))[0]
            den += p
        assert g.low - 1e-9 <= num / den <= g.high + 1e-9
        assert g.high - g.low <= 1e-6


def test_deeper_network_with_symbolic_bounds_brackets_monte_carlo():
    rng = np.random.default_rng(11)
    net = ReluNetwork(
        [rng.normal(size=(8, 3)), rng.normal(size=(6, 8)), rng.normal(size=(1, 6))],
        [rng.normal(size=8), rng.normal(size=6), np.array([0.3])],
        input_names=["a", "s", "b"],
    )
    r = group_bounds(
        net, POP, protected="s", budget=RefineOptions(time_limit=8), stop=Stop(threshold=None, target_width=5e-3)
    )
    _assert_groups_bracket_monte_carlo(net, r, rng)
    for g in r.groups:
        assert g.high - g.low < 0.05


def test_sampled_rates_under_a_discrete_bayesian_network():
    from faircert.engines.sampling.sequential import group_sampled
    from faircert.population.discrete import DiscretePopulation, Variable

    s = Variable("s", (0, 1), ("f", "m"), (), np.array([0.3, 0.7]))
    a = Variable("a", (1.0, 2.0, 3.0), (), ("s",), np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]]))
    pop = DiscretePopulation({"s": s, "a": a}, protected=("s",))
    model = LinearModel.plain([1.0, 0.0], -2.5, ["a", "s"])  # positive iff a = 3
    r = group_sampled(model, pop, delta=1e-6, time_limit=20)
    exact = {"f": 0.1, "m": 0.6}
    for g in r.groups:
        assert g.low <= exact[g.group["s"]] <= g.high
    assert r.verdict == "unfair"
