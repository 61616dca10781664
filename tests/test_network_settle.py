"""The network settler (`engines.network.settle`): what settling a box gives depends on the box alone,
so a box budget gives the same shares however the shards batch their boxes."""

from __future__ import annotations

import numpy as np
from test_network_parallel import large_case

from faircert.engines.boxes.frontier import Frontier
from faircert.engines.boxes.sums import ExactSum
from faircert.engines.network.draws import BoxDraws, box_keys
from faircert.engines.network.problem import Problem
from faircert.engines.network.settle import MEASURES, BoxSettler
from faircert.properties import individual_fairness


def test_a_box_draws_the_same_points_in_any_batch():
    rng = np.random.default_rng(0)
    lo = rng.integers(0, 50, size=(40, 3)).astype(float)
    hi = lo + rng.integers(0, 9, size=(40, 3))
    keys = box_keys(7, lo, hi)
    assert len(set(keys.tolist())) == 40  # distinct boxes, distinct keys
    whole = BoxDraws(keys).random((40, 5))
    assert np.all((whole >= 0) & (whole < 1)) and abs(whole.mean() - 0.5) < 0.1
    parts = np.concatenate([BoxDraws(keys[s]).random((len(keys[s]), 5)) for s in (slice(0, 13), slice(13, 40))])
    assert np.array_equal(whole, parts)
    # a second call draws afresh; another seed gives other keys
    again = BoxDraws(keys)
    again.random((40, 5))
    assert not np.array_equal(again.random((40, 5)), whole)
    assert not np.array_equal(box_keys(8, lo, hi), keys)


def test_box_keys_in_blocks_are_each_box_own(monkeypatch):
    from faircert.engines.network import draws

    rng = np.random.default_rng(1)
    lo = rng.integers(0, 50, size=(100, 3)).astype(float)
    hi = lo + rng.integers(0, 9, size=(100, 3))
    monkeypatch.setattr(draws, "KEY_ROWS", 16)  # 7 blocks, the last short
    keys = box_keys(7, lo, hi)
    assert keys.shape == (100,)
    assert np.array_equal(keys, np.concatenate([box_keys(7, lo[k : k + 1], hi[k : k + 1]) for k in range(100)]))


def _settler():
    net, dom = large_case()
    pb = Problem.build(net, individual_fairness(dom, "p"))
    return BoxSettler(pb, chunk=64, step=64, tight=False, seed=0, by_time=False), pb


def _open_rows(step) -> set:
    return {tuple(np.concatenate([lo, hi, [b, s, p, f, u]])) for lo, hi, b, s, p, f, u in zip(*step.open)}


def test_settling_a_batch_or_its_halves_gives_the_same():
    settler, pb = _settler()
    # boxes to bound as they are, and bounded ones to split: the open boxes after a few steps
    boxes = settler.settle(pb.lo[None].copy(), pb.hi[None].copy()).open
    while len(boxes[0]) < 60:
        boxes = settler.settle(*boxes).open
    assert len(boxes[0]) < 400 and boxes[2].any() and not boxes[2].all()
    whole = settler.settle(*boxes)
    halves = [settler.settle(*(a[s] for a in boxes)) for s in (slice(0, 29), slice(29, None))]
    for m in MEASURES:
        one, two = ExactSum(), ExactSum()
        one.add(whole.measures[m])
        for h in halves:
            two.add(h.measures[m])
        assert float(one) == float(two), m
    assert whole.settled_boxes == sum(h.settled_boxes for h in halves)
    assert _open_rows(whole) == _open_rows(halves[0]) | _open_rows(halves[1])
    found = whole.found[0]
    assert len(found.x) == sum(len(h.found[0].x) for h in halves)
    # the boxes bounded in one call, or in calls of 64 (the bounds joined), settle alike
    settler.chunk = 4096
    at_once = settler.settle(*boxes)
    for m in MEASURES:
        one, two = ExactSum(), ExactSum()
        one.add(at_once.measures[m])
        two.add(whole.measures[m])
        assert float(one) == float(two), m
    assert _open_rows(at_once) == _open_rows(whole)


def test_open_boxes_are_taken_by_priority_and_unbounded_ones_first():
    settler, pb = _settler()
    frontier = Frontier(np.ones(pb.d, bool), 8, None, settler.key, entry_boxes=2)
    n = 6
    lo, hi = np.repeat(pb.lo[None], n, axis=0), np.repeat(pb.hi[None], n, axis=0)
    bounded = np.array([True, True, False, True, True, True])
    prio = np.array([5.0, 50.0, 0.0, 1.0, 20.0, 2.0])
    frontier.push(lo, hi, bounded, np.zeros(n, np.int64), prio, np.zeros(n), np.zeros(n))
    taken = frontier.pop_above(0.0, 3)
    assert taken[2].tolist() == [False, True, True] and taken[4].tolist() == [0.0, 50.0, 20.0]
    assert frontier.pop_above(0.0, 8)[4].tolist() == [5.0, 2.0, 1.0]


def test_exact_sums_of_huge_integers_do_not_depend_on_the_order():
    rng = np.random.default_rng(1)
    values = np.floor(rng.uniform(-1e21, 1e21, size=3000)) * 2.0**10
    forward, backward = ExactSum(), ExactSum()
    forward.add(values)
    for part in np.array_split(values[::-1], 7):
        backward.add(part)
    assert forward.whole == backward.whole == sum(int(v) for v in values.tolist())
    assert float(forward - backward) == 0.0
