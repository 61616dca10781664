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


def test_network_rates_converge_to_the_enumerated_rates():
    net, pop = network_example()
    truth = enumerated_rates(net, pop)
    spec, result = _run(net, pop)
    assert spec.name == "network-regions-group"
    assert result.stopped == "done" and len(result.groups) == 2
    for g in result.groups:
        assert g.low <= truth[g.group["s"]] <= g.high and g.high - g.low < 1e-9, g
    assert 0 < min(truth.values()) and max(truth.values()) < 1
    di = min(truth.values()) / max(truth.values())
    assert result.metrics["di"].low <= di <= result.metrics["di"].high


@pytest.mark.parametrize("split", ["<", "<="])
def test_forest_rates_converge_to_the_enumerated_rates(small_cap, split):
    ir, pop = forest_example(split=split)
    assert sum(int(t.is_leaf.sum()) for t in ir.trees) > exact_trees.MAX_LEAVES
    truth = enumerated_rates(ir, pop)
    spec, result = _run(ir, pop)
    assert spec.name == "tree-regions-group"
    assert result.stopped == "done" and len(result.groups) == 3
    for g in result.groups:
        assert g.low <= truth[g.group["s"]] <= g.high and g.high - g.low < 1e-9, g
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
        rates = regions.make_rates(question, model.named_inputs(), lambda v, c: (NetworkBounder(model, v, c), c))
    else:
        nodes = tree_regions.Nodes(model)

        def bounder_of(values, counts):
            b = tree_regions.TreeBounder(model, nodes, values, counts)
            return b, b.counts

        rates = regions.make_rates(question, model.named_inputs(), bounder_of)
    for rate in rates:
        before = (rate.low, rate.high)
        assert before == (0.0, 1.0)
        widths = []
        while rate.boxes:
            rate.step(4)
            assert rate.low <= truth[rate.group["s"]] <= rate.high
            assert before[0] <= rate.low and rate.high <= before[1]
            before = (rate.low, rate.high)
            widths.append(rate.high - rate.low)
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
