"""Refinements whose open boxes live on the workers (`boxes.shards`): exact sums in any order, the
same totals for any worker count under a box budget, no box lost when a worker dies, and a memory
limit per worker."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from faircert.engines.boxes.budget import Budget
from faircert.engines.boxes.frontier import Frontier
from faircert.engines.boxes.shards import Settler, Shard, Step, refine
from faircert.engines.boxes.sums import ExactSum
from faircert.engines.boxes.workers import Parallelism

SIDE = 256  # the toy domain: [0, SIDE)^2 on the integer grid


def test_exact_sums_do_not_depend_on_order_or_split():
    rng = np.random.default_rng(1)
    values = rng.random(5000) * 10.0 ** rng.integers(-8, 8, 5000)
    values[::4] = np.floor(values[::4])
    values[::7] *= -1
    whole = ExactSum()
    whole.add(values)
    assert float(whole) == math.fsum(values.tolist())
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(values))
        parts = [ExactSum() for _ in range(3)]
        for k, part in enumerate(parts):
            part.add(values[order[k::3]])
        parts[0].absorb(parts[1])
        parts[0].absorb(parts[2])
        assert float(parts[0]) == float(whole)
    big = ExactSum()
    big.add(np.array([2.0**60, 0.5, 3.0, -(2.0**60)]))
    assert float(big) == 3.5  # plain float addition in this order gives 3.0


def test_pop_above_takes_exactly_the_boxes_larger_than_tau():
    frontier = Frontier(np.ones(1, dtype=bool), chunk=4)
    widths = np.array([9.0, 1.0, 5.0, 3.0, 7.0, 2.0, 8.0])
    frontier.push(np.zeros((7, 1)), widths[:, None])
    lo, hi = frontier.pop_above(4.0)
    assert sorted((hi - lo)[:, 0]) == [5.0, 7.0, 8.0, 9.0]
    assert frontier.count == 3 and frontier.largest() == 3.0
    lo, hi = frontier.pop_above(2.5)
    assert (hi - lo)[:, 0].tolist() == [3.0] and frontier.count == 2 and frontier.largest() == 2.0


class Halves(Settler):
    """A toy refinement of the SIDE x SIDE grid: a box is settled when it is small or lies left of
    x = 100 (then 'unfair' where it lies in the upper half); else it is cut in half along its longer
    side (so every settled box lies in one half).
    With a marker file, the first call in a worker process other than `driver` kills it (once)."""

    def __init__(self, driver: int = -1, marker: Path | None = None) -> None:
        self.driver, self.marker = driver, marker

    def settle(self, lo: np.ndarray, hi: np.ndarray) -> Step:
        if self.marker is not None and os.getpid() != self.driver and not self.marker.exists():
            self.marker.write_text("died once")
            os._exit(1)
        size = np.prod(hi - lo, axis=1)
        done = (size <= 4) | (hi[:, 0] <= 100)
        unfair = done & (lo[:, 1] >= SIDE // 2)
        lo, hi = lo[~done], hi[~done]
        f = np.argmax(hi - lo, axis=1)
        rows = np.arange(len(lo))
        mid = np.floor((lo[rows, f] + hi[rows, f]) / 2)
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[rows, f], right_lo[rows, f] = mid, mid
        return Step(
            {"settled": size[done], "unfair": size[unfair], "nonconf": np.zeros(0)},
            int(done.sum()),
            (int(unfair.sum()),),
            (np.concatenate([lo, right_lo]), np.concatenate([left_hi, hi])),
        )


class Count:
    """A region store that only counts the unfair boxes found."""

    nbytes = 0

    def __init__(self) -> None:
        self.found = 0

    def add(self, n: int) -> None:
        self.found += n

    def absorb(self, other: Count) -> None:
        self.found += other.found


def _run(settler, parallel=None, max_boxes=None, limit_bytes=None):
    parallel = Parallelism() if parallel is None else parallel
    shard = Shard(settler, np.ones(2, dtype=bool), 64, None, Count(), limit_bytes)
    return refine(shard, np.zeros((1, 2)), np.full((1, 2), float(SIDE)), Budget(math.inf, max_boxes), parallel)


def _totals(out):
    t = out.totals
    return float(t.sums["settled"]), float(t.sums["unfair"]), t.examined, t.boxes, out.complete, out.region.found


def test_the_same_totals_for_one_two_and_three_workers():
    for budget in (3000, None):
        one = _totals(_run(Halves(), max_boxes=budget))
        for n in (2, 3):
            assert _totals(_run(Halves(), Parallelism(workers=n), budget)) == one
    settled, unfair, examined, boxes, complete, found = one
    assert complete and settled == SIDE * SIDE and unfair == SIDE * SIDE // 2
    budgeted = _run(Halves(), max_boxes=3000)
    assert budgeted.stopped == "box budget" and _run(Halves()).stopped == "done"
    budgeted = _totals(budgeted)
    assert not budgeted[4] and 3000 <= budgeted[2] < examined and budgeted[0] < SIDE * SIDE


def test_the_boxes_are_dealt_to_the_workers_and_the_open_ones_come_back():
    out = _run(Halves(), Parallelism(workers=2), max_boxes=3000)
    assert _open_size(out) + float(out.totals.sums["settled"]) == SIDE * SIDE  # every box exactly once
    assert out.workers == 2


def _open_size(out) -> float:
    assert out.open_entries is not None
    return sum(float(np.prod(e[0][:, 2:] - e[0][:, :2], axis=1).sum()) for e in out.open_entries)


def test_a_worker_killed_mid_run_loses_no_box(tmp_path):
    marker = tmp_path / "marker"
    out = _run(Halves(os.getpid(), marker), Parallelism(workers=2))
    assert marker.exists()
    assert out.complete and float(out.totals.sums["settled"]) == SIDE * SIDE
    assert float(out.totals.sums["unfair"]) == SIDE * SIDE // 2
    budget = _run(Halves(os.getpid(), tmp_path / "again"), Parallelism(workers=2), max_boxes=3000)
    assert _totals(budget) == _totals(_run(Halves(), max_boxes=3000))


def test_the_memory_limit_holds_per_worker():
    out = _run(Halves(), Parallelism(workers=2), limit_bytes=200 * 32)  # 200 open boxes of 2 x 2 float64
    assert not out.complete and out.totals.memory_limited and out.stopped == "memory limit"
    assert float(out.totals.sums["settled"]) < SIDE * SIDE
    assert out.totals.open_boxes > 200  # each worker held up to its own limit


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stop_request_ends_with_sound_partial_sums(monkeypatch, workers):
    from faircert.engines.boxes import budget, shards

    calls = iter(range(10**6))
    for module in (shards, budget):  # the shards' steps and the driver's loop
        monkeypatch.setattr(module, "stop_requested", lambda: next(calls) >= 3)
    out = _run(Halves(), Parallelism(workers=workers))
    assert not out.complete and float(out.totals.sums["settled"]) < SIDE * SIDE
    assert out.stopped == "interrupted"
    assert _open_size(out) + float(out.totals.sums["settled"]) == SIDE * SIDE


class Uneven(Halves):
    """Halves settled slowly by one worker process only (the first to claim the file `slow`), so
    that the other ends each level first however busy the machine is. The driver and a serial run
    settle at full speed (the totals do not depend on where boxes are settled)."""

    def __init__(self, slow: Path) -> None:
        super().__init__()
        self.slow, self.driver = slow, os.getpid()
        self._pid, self._slow = -1, False

    def settle(self, lo: np.ndarray, hi: np.ndarray) -> Step:
        if self._pid != os.getpid():  # first call in this process (workers are forked copies)
            self._pid, self._slow = os.getpid(), os.getpid() != self.driver and _claim(self.slow)
        if self._slow:
            time.sleep(0.0002 * len(lo))
        return super().settle(lo, hi)


def _claim(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


@pytest.fixture
def small_slices(monkeypatch):
    from faircert.engines.boxes import shards

    monkeypatch.setattr(shards, "SLICE_S", 0.02)
    monkeypatch.setattr(shards, "MIN_MOVED", 1)


@pytest.mark.parametrize("workers", [2, 3])
def test_boxes_move_to_workers_done_with_a_level_and_change_no_total(small_slices, workers, tmp_path):
    one = _totals(_run(Uneven(tmp_path / "serial"), max_boxes=8000))
    out = _run(Uneven(tmp_path / "slow"), Parallelism(workers=workers), 8000)
    assert out.moved > 0 and _totals(out) == one


@pytest.mark.parametrize("method", ["give", "take"])
def test_a_worker_lost_while_boxes_move_replays_every_share(small_slices, monkeypatch, tmp_path, method):
    """A worker that dies giving or taking boxes: no share says alone what the workers held, so
    every worker starts again from its first share, and the totals are those of one worker."""
    marker, driver, real = tmp_path / "marker", os.getpid(), getattr(Shard, method)

    def dying(self, *args):
        if os.getpid() != driver and not marker.exists():
            marker.write_text("died once")
            os._exit(1)
        return real(self, *args)

    monkeypatch.setattr(Shard, method, dying)  # the workers are forked with it
    out = _run(Uneven(tmp_path / "slow"), Parallelism(workers=2), 8000)
    assert marker.exists()  # a worker died giving or taking boxes (the slow one, giving: none move after)
    assert _totals(out) == _totals(_run(Uneven(tmp_path / "serial"), max_boxes=8000))
