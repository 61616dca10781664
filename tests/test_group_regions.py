"""Sound any-time group rates under independent marginals by box refinement on the label: a ReLU
network and a tree ensemble past the exact count's size, against the rates enumerated over every
point of the product of the marginals."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from regions_examples import enumerated_rates, forest_example, network_example

from faircert.engines.group import regions, tree_regions
from faircert.engines.group import trees as exact_trees
from faircert.engines.group.network_regions import NetworkBounder
from faircert.engines.registry import find_engine
from faircert.options import GroupOptions, GroupQuestion


@pytest.fixture
def small_cap(monkeypatch):
    """The exact tree count's cap lowered below the examples' ensembles."""
    monkeypatch.setattr(exact_trees, "MAX_LEAVES", 100)


def _run(model, pop, time_limit=30.0, **options):
    question = GroupQuestion(pop, ("s",))
    spec = find_engine(model, question)
    return spec, spec.run(model, question, GroupOptions(time_limit=time_limit, **options), None)


def _converged(model, pop, engine: str, cells: int):
    """The enumerated rates, and the engine's result, every rate of which holds its truth and has
    converged (width below 1e-9)."""
    truth = enumerated_rates(model, pop)
    spec, result = _run(model, pop)
    assert spec.name == engine
    assert result.stopped == "done" and len(result.groups) == cells
    for g in result.groups:
        assert g.low <= truth[g.group["s"]] <= g.high and g.high - g.low < 1e-9, g
    return truth, result


def test_network_rates_converge_to_the_enumerated_rates():
    truth, result = _converged(*network_example(), "network-regions-group", 2)
    assert 0 < min(truth.values()) and max(truth.values()) < 1
    di = min(truth.values()) / max(truth.values())
    assert result.metrics["di"].low <= di <= result.metrics["di"].high


@pytest.mark.parametrize("split", ["<", "<="])
def test_forest_rates_converge_to_the_enumerated_rates(small_cap, split):
    ir, pop = forest_example(split=split)
    assert sum(int(t.is_leaf.sum()) for t in ir.trees) > exact_trees.MAX_LEAVES
    truth, _ = _converged(ir, pop, "tree-regions-group", 3)
    assert len(set(np.round(list(truth.values()), 6))) == 3


def test_a_forest_within_the_cap_is_still_counted_exactly():
    ir, pop = forest_example(depth=4)
    assert find_engine(ir, GroupQuestion(pop, ("s",))).name == "tree-population-group"


@pytest.mark.parametrize("which", ["network", "forest"])
def test_the_bounds_hold_at_every_step_and_tighten(small_cap, which):
    """Any-time: after every batch of boxes each rate's interval holds the enumerated rate and lies
    inside the interval of the batch before; with enough boxes it closes."""
    model, pop = network_example(1) if which == "network" else forest_example(1)
    truth = enumerated_rates(model, pop)
    question = GroupQuestion(pop, ("s",))
    if which == "network":
        cells = [np.arange(n) for n in (10, 2, 5)]
        bounder_of = lambda v, c: (NetworkBounder(model, v, c), c, cells)  # noqa: E731
    else:
        nodes = tree_regions.Nodes(model)

        def bounder_of(values, counts):
            b = tree_regions.TreeBounder(model, nodes, values, counts)
            return b, b.counts, b.cell_of

    (joint,) = regions.make_rates(question, model.named_inputs(), bounder_of)
    cells = range(len(joint.groups))
    before = [(joint.low(g), joint.high(g)) for g in cells]
    assert before == [(0.0, 1.0)] * len(before)
    widths = []
    while joint.boxes:
        joint.step(4)
        now = [(joint.low(g), joint.high(g)) for g in cells]
        for g, (low, high) in zip(cells, now):
            assert low <= truth[joint.groups[g]["s"]] <= high
            assert before[g][0] <= low and high <= before[g][1]
        before = now
        widths.append(max(high - low for low, high in now))
    assert widths[0] > 0.05 and widths[-1] < 1e-9 and len(widths) > 3


def test_a_short_time_limit_gives_sound_partial_bounds(small_cap):
    ir, pop = forest_example(depth=13, trees=8)
    truth = enumerated_rates(ir, pop)
    _, short = _run(ir, pop, time_limit=0.01)
    _, longer = _run(ir, pop, time_limit=5.0)
    for a, b in zip(short.groups, longer.groups):
        t = truth[a.group["s"]]
        assert a.low <= b.low <= t <= b.high <= a.high
    assert max(g.high - g.low for g in longer.groups) < max(g.high - g.low for g in short.groups)


def test_the_memory_limit_stops_the_refinement_with_sound_bounds(small_cap):
    ir, pop = forest_example(depth=10, trees=6)
    truth = enumerated_rates(ir, pop)
    _, result = _run(ir, pop, time_limit=30.0, memory_limit=20_000)
    assert result.stopped == "memory limit" and result.stats["memory_limited"]
    for g in result.groups:
        assert g.low <= truth[g.group["s"]] <= g.high


def test_marginals_that_are_not_fractions_of_the_rows_widen_the_bounds():
    """Probabilities no row count writes exactly: the counts' rounding is added to the bounds."""
    net, pop = network_example()
    b = pop.variables["b"]
    pop.variables["b"] = replace(b, cpt=np.array([1, 1, 1, 1, 3]) / 7)
    pop.info["rows"] = None
    truth = enumerated_rates(net, pop)
    _, result = _run(net, pop)
    for g in result.groups:
        assert g.low <= truth[g.group["s"]] <= g.high and g.high - g.low < 1e-5


def test_an_input_of_labels_is_left_to_the_bounding_engine():
    net, pop = network_example()
    a = pop.variables["a"]
    pop.variables["a"] = type(a)("a", tuple(f"v{i}" for i in range(a.card)), (), (), a.cpt)
    assert find_engine(net, GroupQuestion(pop, ("s",))).name == "probability-bounds"


def test_the_compiled_tree_bounds_agree_with_the_numpy_traversal():
    from faircert import compiled

    if not compiled.available():
        pytest.skip("no compiled kernels here")
    ir, pop = forest_example(2, depth=9, trees=5)
    nodes = tree_regions.Nodes(ir)
    values = [np.array([float(v) for v in pop.variables[n].states]) for n in ("a", "s", "b")]
    counts = [np.ones(len(v), dtype=np.int64) for v in values]
    bounder = tree_regions.TreeBounder(ir, nodes, values, counts)
    rng = np.random.default_rng(0)
    sizes = np.array([len(c) for c in bounder.counts])
    a = rng.integers(0, sizes, (500, 3))
    b = rng.integers(0, sizes, (500, 3))
    lo, hi = np.minimum(a, b).astype(np.int32), (np.maximum(a, b) + 1).astype(np.int32)
    fast, slow = bounder.bound(lo, hi), bounder.bound_numpy(lo, hi)
    assert np.allclose(fast.lower, slow.lower, rtol=0, atol=1e-12)
    assert np.allclose(fast.upper, slow.upper, rtol=0, atol=1e-12)
    assert np.array_equal(fast.feature, slow.feature) and np.array_equal(fast.at, slow.at)
    assert (fast.feature >= 0).sum() > 100


def test_a_protected_attribute_the_model_does_not_read_leaves_the_rates_as_they_are():
    """Two protected attributes, one of them read by the network: each compound cell's rate is
    the rate of its value of the one read."""
    from dataclasses import replace as copy

    from regions_examples import counts_variable

    net, pop = network_example()
    variables = dict(pop.variables, g=counts_variable("g", (0, 1, 2), [200, 300, 500]))
    both = copy(pop, variables=variables, protected=("s", "g"))
    truth = enumerated_rates(net, pop)
    question = GroupQuestion(both, ("s", "g"))
    result = find_engine(net, question).run(net, question, GroupOptions(time_limit=30), None)
    assert len(result.groups) == 6 and result.stopped == "done"
    for g in result.groups:
        assert g.low <= truth[g.group["s"]] <= g.high and g.high - g.low < 1e-9
    assert sorted(round(g.size, 6) for g in result.groups) == sorted(
        round(a * b, 6) for a in (0.4, 0.6) for b in (0.2, 0.3, 0.5)
    )
