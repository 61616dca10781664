"""A box refinement whose open boxes live where they are refined: shards on workers.

A refinement that ships its boxes to workers and back each round (`workers.Workers.map`) is bound
by the driver's memory and by the transfers. Here the driver refines the first boxes itself, then
deals the open ones out; each worker keeps its share (a `Shard`: its open boxes, the unfair boxes
it found and the exact sums of what it settled) and is only told how far to go. Memory limits then
hold per worker, and a round costs a few hundred bytes each way.

Same results for any number of workers, under a box budget: the refinement goes by levels of box
size. At level tau every shard settles or cuts all its open boxes larger than tau (largest first)
before the driver checks the budget and lowers tau. The boxes settled by the end of a level do not
depend on how the open boxes were dealt (a box is cut into the same children wherever it is, and
every box larger than tau is taken), and the measures are added exactly (`ExactSum`), so the
shares are the same with 1, 2 or N workers, locally or on Ray. Without a budget the shards go
largest first with no levels (tau 0), each at its own pace.

A worker that dies is replaced and given its share again, from the boxes first dealt to it: the
driver drops what it had reported, and the replay settles the same boxes again (at the current
level, the same ones). A stop request or the time limit ends the run after the current slice of
`SLICE_S`, with sound partial sums.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...interrupt import requested as stop_requested
from . import frontier as stores
from .frontier import Frontier
from .sums import ExactSum
from .workers import LOST, SERIAL, Parallelism, usable_cores

SLICE_S = 0.5               # work per call of a shard, so that progress and stops come this often
LEVEL_RATIO = 2.0 ** -0.5   # tau shrinks by this factor from level to level
SEEDS_PER_WORKER = 64       # open boxes per worker before the driver deals them out
MEASURES = ("nonconf", "settled", "unfair")
FIRST_BATCH = 256           # boxes settled at once before the pace is known
MIN_BATCH = 16
BATCH_SHARE = 0.25          # of a step's time left, for one batch at the measured pace


@dataclass
class Step:
    """What settling one chunk of boxes gave: per-box terms of each measure, the count of boxes
    settled, the arguments of the region's `add` for the boxes found unfair (empty: none), and the
    boxes left open with their per-box data (lo, hi, ...)."""

    measures: dict[str, np.ndarray]
    settled_boxes: int
    found: tuple
    open: tuple


@dataclass
class Progress:
    """A shard's totals so far (cumulative, so that a replayed shard simply replaces them)."""

    sums: dict[str, ExactSum] = field(default_factory=lambda: {m: ExactSum() for m in MEASURES})
    boxes: int = 0          # boxes settled
    examined: int = 0       # boxes settled or cut
    found: int = 0          # unfair boxes found
    open_boxes: int = 0
    open_bytes: int = 0
    largest: float = 0.0     # the largest open box's size
    level_done: bool = True  # no open box larger than the level's tau
    finished: bool = True    # no open box at all
    memory_limited: bool = False

    @property
    def idle(self) -> bool:
        return self.finished or self.memory_limited


class Shard:
    """Part of a refinement's open boxes with what refining them proved. `settler.settle(lo, hi,
    ...)` returns a `Step`; `region` is an empty store of unfair boxes (`add`, `absorb`, `nbytes`,
    `found`) copied for each shard; `limit_bytes` bounds the open and unfair boxes it stores
    (`frontier.MAX_STORED_BYTES` by default)."""

    def __init__(self, settler, free: np.ndarray, chunk: int, codec, region,
                 limit_bytes: int | None = None) -> None:
        self.settler, self.free, self.chunk, self.codec = settler, free, chunk, codec
        self.empty_region, self.limit_bytes = region, limit_bytes
        self.start([])

    def fresh(self) -> Shard:
        """An empty shard with the same settler and stores."""
        return Shard(self.settler, self.free, self.chunk, self.codec, self.empty_region, self.limit_bytes)

    def start(self, entries: list[tuple]) -> Progress:
        """Forget everything and take these open boxes (encoded chunks)."""
        self.frontier = Frontier(self.free, self.chunk, self.codec)
        self.box_s: float | None = None  # seconds per box settled, measured
        for entry in entries:
            self.frontier.push_encoded(entry)
        self.region = copy.deepcopy(self.empty_region)
        self.totals = Progress()
        return self.progress(math.inf)

    def step(self, tau: float, seconds: float, enough: int | None = None) -> Progress:
        """Settle or cut open boxes larger than tau, largest first, for about `seconds` (or until
        `enough` boxes are open)."""
        end = time.monotonic() + seconds
        t = self.totals
        while self.frontier.largest() > tau and not t.memory_limited:
            if self.frontier.nbytes + self.region.nbytes > (self.limit_bytes or stores.MAX_STORED_BYTES):
                t.memory_limited = True
                break
            # as many boxes as fit a quarter of the time left, at the pace measured so far: one
            # settle of a full chunk of a large ensemble takes seconds, and the step ends only
            # between settles (the boxes settled per level do not depend on the batches)
            now = time.monotonic()
            limit = FIRST_BATCH if self.box_s is None else int(BATCH_SHARE * max(end - now, 0.0) / self.box_s)
            boxes = self.frontier.pop_above(tau, max(limit, MIN_BATCH))
            t.examined += len(boxes[0])
            step = self.settler.settle(*boxes)
            pace = (time.monotonic() - now) / max(len(boxes[0]), 1)
            self.box_s = pace if self.box_s is None else 0.5 * (self.box_s + pace)
            for m, terms in step.measures.items():
                t.sums[m].add(terms)
            t.boxes += step.settled_boxes
            if step.found:
                self.region.add(*step.found)
            self.frontier.push(*step.open)
            if time.monotonic() >= end or stop_requested() or (enough is not None and self.frontier.count >= enough):
                break
        return self.progress(tau)

    def progress(self, tau: float) -> Progress:
        t = self.totals
        t.found, t.open_boxes, t.open_bytes = self.region.found, self.frontier.count, self.frontier.nbytes
        t.largest = self.frontier.largest()
        t.level_done, t.finished = self.frontier.largest() <= tau, not self.frontier
        return t

    def deal(self, n: int) -> list[list[tuple]]:
        """Take every open box and deal them into n shares of about equal size (largest first,
        round robin), as encoded chunks."""
        entries = self.frontier.take_all()
        if not entries:
            return [[] for _ in range(n)]
        boxes = [np.concatenate(a) for a in zip(*(self.frontier._decoded(e) for e in entries))]
        order = np.argsort(-self.frontier.size(boxes[0], boxes[1]), kind="stable")
        shares = []
        for k in range(n):
            rows = order[k::n]
            shares.append([(self.frontier.codec.encode(boxes[0][rows], boxes[1][rows]),) + tuple(a[rows] for a in boxes[2:])]
                          if len(rows) else [])
        self.progress(math.inf)
        return shares

    def result(self, with_open: bool) -> tuple:
        """The unfair boxes found and (when asked) the open boxes, encoded."""
        return self.region, (self.frontier.take_all() if with_open else None)


@dataclass
class Refined:
    """A sharded refinement's outcome: whether it ended, the merged unfair store, the open boxes
    (encoded chunks; None when they were not gathered: more than the driver may hold, or a worker
    lost at the end), and the totals."""

    complete: bool
    region: object
    open_entries: list | None
    totals: Progress
    workers: int = 0  # how many workers held shares (0: all was refined here)


def _sum(parts: list[Progress]) -> Progress:
    out = Progress(level_done=all(p.level_done or p.idle for p in parts), finished=all(p.finished for p in parts),
                   memory_limited=any(p.memory_limited for p in parts))
    for p in parts:
        for m in MEASURES:
            out.sums[m].absorb(p.sums[m])
        out.boxes += p.boxes
        out.examined += p.examined
        out.found += p.found
        out.open_boxes += p.open_boxes
        out.open_bytes += p.open_bytes
        out.largest = max(out.largest, p.largest)
    return out


def refine(shard: Shard, lo: np.ndarray, hi: np.ndarray, deadline: float, parallel: Parallelism = SERIAL,
           max_boxes: int | None = None, on_progress=None) -> Refined:
    """Refine the boxes (lo, hi) with `shard`'s settler until none is open, the deadline, a stop
    request, a shard's memory limit or (at the end of a level) `max_boxes` examined boxes;
    `on_progress(totals, restarts)` after every slice."""
    local = shard.fresh()
    local.frontier.push(lo, hi)
    tau = local.frontier.largest() * LEVEL_RATIO if max_boxes is not None else 0.0
    spread = parallel.workers > 1 or parallel.ray_address
    seeds = SEEDS_PER_WORKER * (parallel.workers if parallel.workers > 1 else usable_cores())
    deal_after = time.monotonic() + parallel.start_after  # short runs end before workers would pay
    parts, shares, pool = [local.progress(tau)], [], None
    complete = True

    def stop() -> bool:
        return time.monotonic() > deadline or stop_requested()

    with _Maybe(parallel, shard) as opened:
        if parallel.ray_address:  # joined at once: an unreachable cluster is an error even on a small run
            opened.start()
        while True:
            total = _sum(parts)
            if on_progress is not None:
                on_progress(total, opened.restarts)
            if total.finished or all(p.idle for p in parts):
                complete = total.finished and not total.memory_limited
                break
            if stop():
                complete = False
                break
            if max_boxes is not None and total.level_done:
                if total.examined >= max_boxes:
                    complete = False
                    break
                tau = min(tau, total.largest) * LEVEL_RATIO  # (no empty levels)
            now = time.monotonic()
            seconds = max(0.0, min(SLICE_S, deadline - now))
            ready = spread and now >= deal_after
            if pool is None and ready and local.frontier.count >= seeds:
                pool = opened.pool or opened.start()
                shares = local.deal(pool.n)
                parts = [local.progress(tau)] + _started(pool, shares)
            if pool is None:
                if spread and not ready:
                    seconds = min(seconds, max(deal_after - now, 0.01))
                parts = [local.step(tau, seconds, seeds if ready else None)]
                continue
            out = pool.each("step", [None if p.idle else (tau, seconds) for p in parts[1:]])
            for k, p in enumerate(out):
                if p is LOST:
                    parts[k + 1] = _restarted(pool, k, shares[k])
                elif p is not None:
                    parts[k + 1] = p
        return _gather(local, pool, parts, shares, complete)


def refine_into(acc: dict, report, shard: Shard, lo: np.ndarray, hi: np.ndarray, deadline: float,
                parallel: Parallelism = SERIAL, max_boxes: int | None = None) -> Refined:
    """`refine`, keeping a tree refinement's accumulator `acc` up to date (its sizes, boxes settled
    and examined, unfair boxes found, restarts, memory limit; at the end the workers used and whether
    the open boxes were gathered) and calling `report(acc)` after every step."""

    def on_progress(totals: Progress, restarts: int) -> None:
        acc.update(nonconf=float(totals.sums["nonconf"]), settled=float(totals.sums["settled"]),
                   unfair=float(totals.sums["unfair"]), boxes=totals.boxes, examined=totals.examined,
                   unfair_boxes=totals.found, workers_restarted=restarts)
        if totals.memory_limited:
            acc["memory_limited"] = True
        report(acc)

    out = refine(shard, lo, hi, deadline, parallel, max_boxes, on_progress)
    acc.update(open_gathered=out.open_entries is not None, workers=out.workers)
    return out


def _started(pool, shares: list[list[tuple]]) -> list[Progress]:
    out = pool.each("start", [(s,) for s in shares])
    return [_restarted(pool, k, shares[k]) if p is LOST else p for k, p in enumerate(out)]


def _restarted(pool, k: int, share: list[tuple]) -> Progress:
    """Give a replaced worker its share again (its former totals are dropped)."""
    while True:
        p = pool.each("start", [None] * k + [(share,)])[k]
        if p is not LOST:
            return p


def _gather(local: Shard, pool, parts: list[Progress], shares, complete: bool) -> Refined:
    region, entries = local.result(with_open=True)
    if pool is None:
        return Refined(complete, region, entries, _sum(parts))
    with_open = sum(p.open_bytes for p in parts[1:]) <= stores.MAX_STORED_BYTES
    out = pool.each("result", [(with_open,)] * (len(parts) - 1))
    for k, r in enumerate(out):
        if r is LOST:  # its share is gone: its sums go too (the rest stays sound), and the open part is partial
            parts[k + 1] = Progress(finished=False)
            complete, with_open = False, False
            continue
        region.absorb(r[0])
        if with_open:
            entries += r[1]
    return Refined(complete, region, entries if with_open else None, _sum(parts), len(parts) - 1)


class _Maybe:
    """The pool of workers holding shards, started only once the driver has boxes to deal."""

    def __init__(self, parallel: Parallelism, shard: Shard) -> None:
        self.parallel, self.shard, self.pool = parallel, shard, None

    @property
    def restarts(self) -> int:
        return self.pool.restarts if self.pool is not None else 0

    def start(self):
        self.pool = self.parallel.open(self.shard.fresh())
        return self.pool

    def __enter__(self) -> _Maybe:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.close()
