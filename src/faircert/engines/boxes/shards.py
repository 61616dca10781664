"""A box refinement whose open boxes live where they are refined: shards on workers.

A refinement that ships its boxes to workers and back each round (`workers.Workers.map`) is bound
by the driver's memory and by the transfers. Here the driver refines the first boxes itself, then
deals the open ones out; each worker keeps its share (a `Shard`: its open boxes, the unfair boxes
it found and the exact sums of what it settled) and is only told how far to go. Memory limits then
hold per worker, and a round costs a few hundred bytes each way.

Same results for any number of workers, under a box budget: the refinement goes by levels of the
settler's order (box size, unless the settler keys its boxes otherwise: networks by the mass not
yet proven). At level tau every shard settles or cuts all its open boxes above tau (largest
first) before the driver checks the budget and lowers tau. The boxes settled by the end of a level
do not depend on how the open boxes were dealt (a box is cut into the same children wherever it
is, and every box above tau is taken), and the measures are added exactly (`ExactSum`), so the
shares are the same with 1, 2 or N workers, locally or on Ray. For the same reason a worker done
with a level may take half the boxes above tau of the busiest one (`_balance`), so that a level
does not wait for one worker. Without a budget the shards go largest first with no levels (tau 0),
each at its own pace, and a worker whose boxes are all settled takes half the busiest one's.

A worker that dies is replaced and given its share again, from the boxes first dealt to it: the
driver drops what it had reported, and the replay settles the same boxes again (at the current
level, the same ones); once boxes have moved between workers, every worker replays its own. A
stop request or the time limit ends the run after the current slice of `SLICE_S`, with sound
partial sums.

With a checkpoint (`Saving`) the driver writes the refinement's state between slices when one is
due, and at the end: the level tau and every shard's state (`Shard.state`: its open boxes with
their per-box data, its unfair boxes, its exact sums and counts), gathered from the workers. A
resumed run puts all of it into the driver's shard (`Shard.restore`) and deals the open boxes out
again; as the boxes settled by the end of a level do not depend on how they were dealt, a run
under a box budget resumed from any checkpoint ends with the uninterrupted run's sums.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ... import memory
from ...errors import PropertyError
from ...interrupt import requested as stop_requested
from .budget import DONE, Budget
from .frontier import BoxCodec, Entry, Frontier, Key, records_text, text_records
from .sums import ExactSum
from .workers import LOST, SERIAL, Parallelism, Pool, usable_cores

SLICE_S = 0.5  # work per call of a shard, so that progress and stops come this often
LEVEL_RATIO = 2.0**-0.5  # tau shrinks by this factor from level to level
SEEDS_PER_WORKER = 64  # open boxes per worker before the driver deals them out
MEASURES = ("nonconf", "settled", "unfair")  # a settler's measures unless it names its own
FIRST_BATCH = 256  # boxes settled at once before the pace is known
MIN_BATCH = 16
BATCH_SHARE = 0.25  # of a step's time left, for one batch at the measured pace
MIN_MOVED = 64  # open boxes worth moving to a worker done with its level, at the least
MAX_SAVED_SHARDS = 4096  # shard states a checkpoint may hold (one per worker, and the driver's)


@dataclass
class Step:
    """What settling one chunk of boxes gave: per-box terms of each measure, the count of boxes
    settled, the arguments of the region's `add` for the boxes found unfair (empty: none), and the
    boxes left open with their per-box data (lo, hi, ...)."""

    measures: dict[str, np.ndarray]
    settled_boxes: int
    found: tuple[Any, ...]
    open: tuple[np.ndarray, ...]


class Settler:
    """What a shard refines with. A subclass implements `settle(lo, hi, *per-box data)`: settle or
    cut a chunk of open boxes and say what it found (`Step`). The rest are defaults it may change:

    - `measures`: what its steps add (any set holding "settled" and "unfair", the settled size
      that is unfair);
    - `open_data`: the numpy dtype of each per-box array its open boxes carry besides (lo, hi)
      (see `Shard`);
    - `key` and `entry_boxes`: what orders the open boxes and how many are stored per entry
      (`frontier.Frontier`; None: by size, a chunk per entry);
    - `min_batch`: the boxes below which settling them at once is no longer efficient;
    - `fits(shard)`: whether the shards read from a checkpoint, merged into one, could be its
      refinement's (each shard's boxes, data kinds and sums' signs are checked by `Shard`);
    - `device_bytes()`: the most memory its steps took on an accelerator (held to the shard's
      memory limit beside the open boxes);
    - `frontier(free, chunk, codec, limit_bytes)`: where the open boxes are kept (by default the
      host's `frontier.Frontier`; a settler that computes on a device may keep them there, in
      about `limit_bytes` at most)."""

    measures: tuple[str, ...] = MEASURES
    open_data: tuple[Any, ...] = ()
    key: Key | None = None
    entry_boxes: int | None = None
    min_batch: int = MIN_BATCH
    settle: Callable[..., Step]  # each subclass's own signature: (lo, hi, *its per-box data)

    def fits(self, shard: Shard) -> bool:
        return True

    def device_bytes(self) -> int:
        return 0

    def frontier(self, free: np.ndarray, chunk: int, codec: BoxCodec | None, limit_bytes: int) -> Frontier:
        return Frontier(free, chunk, codec, self.key, self.entry_boxes)


class RegionStore(Protocol):
    """Where a shard keeps the unfair boxes it found: `add(*step.found)`, `absorb(other store)`,
    the boxes `found` and the bytes they take; `state()` and `restore(state, dlo, dhi)` for
    checkpoints."""

    nbytes: int

    @property
    def found(self) -> int: ...

    @property
    def add(self) -> Callable[..., None]: ...

    @property
    def absorb(self) -> Callable[..., None]: ...

    def state(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any], dlo: np.ndarray, dhi: np.ndarray) -> None: ...


@dataclass
class Progress:
    """A shard's totals so far (cumulative, so that a replayed shard simply replaces them)."""

    sums: dict[str, ExactSum] = field(default_factory=dict)
    boxes: int = 0  # boxes settled
    examined: int = 0  # boxes settled or cut
    found: int = 0  # unfair boxes found
    open_boxes: int = 0
    open_bytes: int = 0
    largest: float = 0.0  # the largest open box's size
    above: int = 0  # open boxes in entries above the level's tau (`Frontier.count_above`)
    level_done: bool = True  # no open box larger than the level's tau
    finished: bool = True  # no open box at all
    memory_limited: bool = False

    @property
    def idle(self) -> bool:
        return self.finished or self.memory_limited


class Shard:
    """Part of a refinement's open boxes with what refining them proved. `settler.settle(lo, hi,
    ...)` returns a `Step`; `region` is an empty store of unfair boxes (`add`, `absorb`, `nbytes`,
    `found`) copied for each shard; `limit_bytes` bounds the open and unfair boxes it stores
    (by default the run's memory limit, `memory.limit()`, read where the shard is made: workers
    get it with the shard).

    For checkpoints the region store also has `state()` and `restore(state, dlo, dhi)`, and the
    settler may say what data its open boxes carry besides (lo, hi): `open_data`, the numpy dtype of
    each such array's rows (e.g. `(bool, (n,))` for n flags per box), zeros for a box that has none
    yet (the boxes a refinement starts from)."""

    def __init__(
        self,
        settler: Settler,
        free: np.ndarray,
        chunk: int,
        codec: BoxCodec | None,
        region: RegionStore,
        limit_bytes: int | None = None,
    ) -> None:
        self.settler, self.free, self.chunk, self.codec = settler, free, chunk, codec
        self.empty_region, self.limit_bytes = region, limit_bytes or memory.limit()
        self.start([])

    def fresh(self) -> Shard:
        """An empty shard with the same settler and stores."""
        return Shard(self.settler, self.free, self.chunk, self.codec, self.empty_region, self.limit_bytes)

    def __reduce__(self) -> tuple[Any, ...]:
        # a shard travels to a worker empty, as `fresh` makes it: its open boxes may live on a
        # device, which the worker's process makes its own
        return Shard, (self.settler, self.free, self.chunk, self.codec, self.empty_region, self.limit_bytes)

    def start(self, entries: list[Entry], tau: float = math.inf) -> Progress:
        """Forget everything and take these open boxes (encoded chunks); the progress says whether
        any is above the level `tau`."""
        self.frontier = self.settler.frontier(self.free, self.chunk, self.codec, self.limit_bytes)
        self.box_s: float | None = None  # seconds per box settled, measured
        for entry in entries:
            self.frontier.push_encoded(entry)
        self.region = copy.deepcopy(self.empty_region)
        self.totals = Progress({m: ExactSum() for m in self.settler.measures})
        return self.progress(tau)

    def step(self, tau: float, seconds: float, enough: int | None = None) -> Progress:
        """Settle or cut open boxes larger than tau, largest first, for about `seconds` (or until
        `enough` boxes are open)."""
        end = time.monotonic() + seconds
        t = self.totals
        while self.frontier.largest() > tau and not t.memory_limited:
            host = self.frontier.nbytes + self.region.nbytes
            if host > self.limit_bytes or self.settler.device_bytes() > self.limit_bytes:
                t.memory_limited = True
                break
            # as many boxes as fit a quarter of the time left, at the pace measured so far: one
            # settle of a full chunk of a large ensemble takes seconds, and the step ends only
            # between settles (the boxes settled per level do not depend on the batches)
            now = time.monotonic()
            limit = FIRST_BATCH if self.box_s is None else int(BATCH_SHARE * max(end - now, 0.0) / self.box_s)
            boxes = self.frontier.pop_above(tau, max(limit, self.settler.min_batch))
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
        t.above = self.frontier.count_above(tau)
        t.level_done, t.finished = self.frontier.largest() <= tau, not self.frontier
        return t

    def give(self, tau: float, n: int) -> tuple[list[Entry], Progress]:
        """Hand over up to n of the largest open boxes above the level `tau` (encoded chunks), for
        a shard done with the level (`take`)."""
        entries = []
        while n > 0 and self.frontier.largest() > tau:
            entry = self.frontier.pop_encoded(tau, n)
            n -= len(entry[0])
            entries.append(entry)
        return entries, self.progress(tau)

    def take(self, entries: list[Entry], tau: float) -> Progress:
        """Add open boxes another shard gave (`give`)."""
        for entry in entries:
            self.frontier.push_encoded(entry)
        return self.progress(tau)

    def deal(self, n: int) -> list[list[Entry]]:
        """Take every open box and deal them into n shares of about equal size (largest first,
        round robin), as encoded chunks."""
        entries = self.frontier.take_all()
        if not entries:
            return [[] for _ in range(n)]
        boxes = [np.concatenate(a) for a in zip(*(self.frontier._decoded(e) for e in entries))]
        order = np.argsort(-self.frontier.key(*boxes), kind="stable")
        shares = []
        for k in range(n):
            rows = order[k::n]
            shares.append(
                [(self.frontier.codec.encode(boxes[0][rows], boxes[1][rows]),) + tuple(a[rows] for a in boxes[2:])]
                if len(rows)
                else []
            )
        self.progress(math.inf)
        return shares

    def result(self, with_open: bool) -> tuple[RegionStore, list[Entry] | None]:
        """The unfair boxes found and (when asked) the open boxes, encoded."""
        return self.region, (self.frontier.take_all() if with_open else None)

    def arrays(self, entries: list[Entry] | None = None) -> tuple[np.ndarray, ...]:
        """Open boxes (these encoded chunks, or this shard's own) decoded into one array each: lo,
        hi, then the per-box data."""
        spec = _open_data(self.settler)
        parts = self._padded(self.frontier.parts().entries if entries is None else entries)
        if not parts:
            width = self.frontier.codec.width
            return (np.empty((0, width)),) * 2 + tuple(np.zeros(0, dtype=d) for d in spec)
        lo, hi = self.frontier.codec.decode(np.concatenate([p[0] for p in parts]))
        return (lo, hi) + tuple(np.concatenate([p[k] for p in parts]) for k in range(1, 1 + len(spec)))

    def _padded(self, entries: list[Entry]) -> list[Entry]:
        """The entries with their per-box data: a box the refinement starts from carries none yet,
        zeros, as `Shard` says."""
        spec = _open_data(self.settler)
        return [e if len(e) > 1 else e + tuple(np.zeros(len(e[0]), dtype=d) for d in spec) for e in entries]

    def state(self) -> dict[str, Any]:
        """What this shard holds, as JSON for a checkpoint: its open boxes (the records its codec
        stores, with their per-box data), its unfair boxes, its exact sums and its counts."""
        spec = _open_data(self.settler)
        entries = self._padded(self.frontier.parts().entries)
        rows = sum(len(e[0]) for e in entries)
        t = self.totals
        return {
            "open": {"boxes": rows, "records": [records_text([e[k] for e in entries]) for k in range(1 + len(spec))]},
            "region": self.region.state(),
            "sums": {m: t.sums[m].state() for m in self.settler.measures},
            "boxes": t.boxes,
            "examined": t.examined,
        }

    def restore(self, state: dict[str, Any], dlo: np.ndarray, dhi: np.ndarray) -> None:
        """Add a shard's saved `state` to this one, every value checked (a checkpoint is untrusted
        input): its boxes inside the domain box [dlo, dhi], its counts and sums non-negative."""
        spec = _open_data(self.settler)
        measures = self.settler.measures
        codec = self.frontier.codec
        try:
            rows, texts = state["open"]["boxes"], state["open"]["records"]
            if not isinstance(texts, list) or len(texts) != 1 + len(spec):
                raise ValueError("not the arrays of open boxes this refinement keeps")
            lo, hi = codec.decode(text_records(texts[0], codec.dtype, rows))  # IndexError: off the tables
            data = [text_records(text, d, rows) for text, d in zip(texts[1:], spec)]
            sums = {m: ExactSum.of_state(state["sums"][m]) for m in measures}
            values = {m: float(sums[m]) for m in measures}
            boxes, examined, region = state["boxes"], state["examined"], state["region"]
        except (KeyError, TypeError, IndexError, ValueError, AttributeError, OverflowError) as exc:
            raise PropertyError(
                f"checkpoint: its state is incomplete or malformed ({type(exc).__name__}: {str(exc)[:80]})"
            ) from None
        ok = (
            np.all(lo >= dlo)
            and np.all(hi <= dhi)
            and np.all(lo <= hi)
            and all(map(_plain_values, data))
            and all(type(v) is int and v >= 0 for v in (boxes, examined))
            and boxes <= examined
            and all(math.isfinite(v) and v >= 0 for v in values.values())
            and values["unfair"] <= values["settled"]
        )
        if not ok:
            raise PropertyError("checkpoint: its boxes or counts do not fit this domain and model")
        self.frontier.push(lo, hi, *data)  # decoded by this codec: they encode again exactly
        self.region.restore(region, dlo, dhi)
        t = self.totals
        for m in measures:
            t.sums[m].absorb(sums[m])
        t.boxes += boxes
        t.examined += examined


def _open_data(settler: Settler) -> tuple[np.dtype, ...]:
    return tuple(np.dtype(d) for d in settler.open_data)


def _plain_values(array: np.ndarray) -> bool:
    """Whether a per-box array read from a checkpoint holds only values of its kind (bools 0 or 1,
    finite floats)."""
    if array.dtype.base == np.dtype(bool):
        return bool(np.all(array.view(np.uint8) <= 1))
    return array.dtype.base.kind != "f" or bool(np.all(np.isfinite(array)))


@dataclass
class Refined:
    """A sharded refinement's outcome: whether it ended, the merged unfair store, the open boxes
    (encoded chunks; None when they were not gathered: more than the driver may hold, or a worker
    lost at the end), and the totals."""

    complete: bool
    region: RegionStore
    open_entries: list[Entry] | None
    totals: Progress
    workers: int = 0  # how many workers held shares (0: all was refined here)
    moved: int = 0  # open boxes moved between workers within levels (`_balance`)
    stopped: str = DONE  # why the refinement ended (`budget`)


@dataclass
class Saving:
    """A refinement's checkpoint (`checkpoint.Checkpoint`): `header`, the caller's fields written with
    every state; `state`, a loaded state to go on from (None: start afresh). Counts the checkpoints
    written and the seconds they took (gathering the workers' shards included)."""

    checkpoint: Any
    header: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] | None = None
    written: int = 0
    seconds: float = 0.0


def _sum(parts: list[Progress]) -> Progress:
    out = Progress(
        level_done=all(p.level_done or p.idle for p in parts),
        finished=all(p.finished for p in parts),
        memory_limited=any(p.memory_limited for p in parts),
    )
    for p in parts:
        for m, s in p.sums.items():
            out.sums.setdefault(m, ExactSum()).absorb(s)
        out.boxes += p.boxes
        out.examined += p.examined
        out.found += p.found
        out.open_boxes += p.open_boxes
        out.open_bytes += p.open_bytes
        out.largest = max(out.largest, p.largest)
        out.above += p.above
    return out


def refine(
    shard: Shard,
    lo: np.ndarray,
    hi: np.ndarray,
    budget: Budget,
    parallel: Parallelism = SERIAL,
    on_progress: Callable[[Progress, int], None] | None = None,
    saving: Saving | None = None,
    *,
    enough: Callable[[Progress], bool] | None = None,
    reserve: Callable[[Progress], float] | None = None,
) -> Refined:
    """Refine the boxes (lo, hi) with `shard`'s settler until none is open, `enough(totals)` says
    so, or the `budget` ends it: its deadline (less the seconds `reserve(totals)` keeps for the
    caller's work after the refinement), a stop request, a shard's memory limit or (at the end of
    a level) its box budget; `on_progress(totals, restarts)` after every slice. With `saving`, from
    its state when it has one (whose boxes must lie in the box around lo and hi), writing
    checkpoints when due and at the end."""
    max_boxes, deadline = budget.max_boxes, budget.left() + time.monotonic()
    local = shard.fresh()
    if saving is not None and saving.state is not None:
        tau = _restored(local, saving.state, lo.min(axis=0), hi.max(axis=0), max_boxes)
    else:
        local.frontier.push(lo, hi)
        tau = local.frontier.largest() * LEVEL_RATIO if max_boxes is not None else 0.0
    spread = parallel.workers > 1 or parallel.ray_address
    seeds = SEEDS_PER_WORKER * (parallel.workers if parallel.workers > 1 else usable_cores())
    deal_after = time.monotonic() + parallel.start_after  # short runs end before workers would pay
    dealt = _Dealt([])
    parts, pool = [local.progress(tau)], None
    complete = True

    with _Maybe(parallel, shard) as opened:
        if parallel.ray_address:  # joined at once: an unreachable cluster is an error even on a small run
            opened.start()
        while True:
            total = _sum(parts)
            if on_progress is not None:
                on_progress(total, opened.restarts)
            # the box budget is checked at the end of a level only, where the shares do not depend
            # on how the boxes were dealt; a shard's memory limit ends the run once all are idle
            examined = total.examined if total.level_done else None
            kept = 0.0 if reserve is None else reserve(total)
            if (
                total.finished
                or (enough is not None and enough(total))
                or budget.spent(examined=examined, memory_full=all(p.idle for p in parts), ahead_s=kept)
            ):
                complete = total.finished and not total.memory_limited
                break
            if max_boxes is not None and total.level_done:
                tau = min(tau, total.largest) * LEVEL_RATIO  # (no empty levels)
            if saving is not None and saving.checkpoint.due():
                _save(saving, tau, local, pool, parts, dealt)
            now = time.monotonic()
            seconds = max(0.0, min(SLICE_S, deadline - kept - now))
            ready = spread and now >= deal_after
            if pool is None and ready and local.frontier.count >= seeds:
                pool = opened.pool or opened.start()
                dealt = _Dealt(local.deal(pool.n))
                parts = [local.progress(tau)] + _started(pool, dealt.shares, tau)
            if pool is None:
                if spread and not ready:
                    seconds = min(seconds, max(deal_after - now, 0.01))
                parts = [local.step(tau, seconds, seeds if ready else None)]
                continue
            stepped = pool.each("step", [None if p.idle else (tau, seconds) for p in parts[1:]])
            parts[1:] = [q if p is None or p is LOST else p for p, q in zip(stepped, parts[1:])]
            dealt.replace(pool, parts, [k for k, p in enumerate(stepped) if p is LOST], tau)
            _balance(pool, parts, dealt, tau)
        if saving is not None and not _save(saving, tau, local, pool, parts, dealt):
            complete = False  # a worker lost meanwhile holds its first share again, unrefined
        refined = _gather(local, pool, parts, complete)
        refined.stopped, refined.moved = budget.stopped, dealt.boxes_moved
        return refined


@dataclass
class _Dealt:
    """The open boxes first dealt to each worker, and the boxes moved between workers since
    (`_balance`). A lost worker is given its share again and replays it; once boxes have moved, no
    share says alone what its worker held, so then every worker replays its own."""

    shares: list[list[Entry]]
    moved: bool = False
    boxes_moved: int = 0

    def replace(self, pool: Pool, parts: list[Progress], lost: list[int], tau: float) -> None:
        """Restart the lost workers (all of them, once boxes have moved) from their shares."""
        if lost and self.moved:
            lost, self.moved = list(range(len(self.shares))), False
        for k in lost:
            parts[k + 1] = _restarted(pool, k, self.shares[k], tau)


def _balance(pool: Pool, parts: list[Progress], dealt: _Dealt, tau: float) -> None:
    """Move half the open boxes above the level tau of the busiest workers to those done with the
    level (without levels, tau 0: those with no box left), so that the run does not wait for one of
    them. The boxes settled by the end of a level do not depend on where they were settled, so
    this changes no share."""
    takers = [k for k, p in enumerate(parts[1:]) if p.level_done and not p.memory_limited]
    givers = sorted(
        (k for k, p in enumerate(parts[1:]) if not p.level_done and p.above >= 2 * MIN_MOVED),
        key=lambda k: -parts[k + 1].above,
    )
    pairs = list(zip(givers, takers))
    if not pairs:
        return
    given = pool.each("give", _only(len(parts) - 1, {g: (tau, parts[g + 1].above // 2) for g, _ in pairs}))
    lost = [k for k, r in enumerate(given) if r is LOST]
    entries = {}
    for g, t in pairs:
        if given[g] is not LOST:
            entries[t], parts[g + 1] = given[g]
    dealt.moved = True  # (a giver lost meanwhile took its boxes with it: all replay)
    taken = pool.each("take", _only(len(parts) - 1, {t: (e, tau) for t, e in entries.items()}))
    lost += [k for k, p in enumerate(taken) if p is LOST]
    for t, e in entries.items():
        if taken[t] is not LOST:
            parts[t + 1] = taken[t]
            dealt.boxes_moved += sum(len(a[0]) for a in e)
    dealt.replace(pool, parts, lost, tau)


def _only(n: int, args: dict[int, tuple[Any, ...]]) -> list[tuple[Any, ...] | None]:
    """`Pool.each`'s arguments calling only these workers."""
    return [args.get(k) for k in range(n)]


def _save(saving: Saving, tau: float, local: Shard, pool: Pool | None, parts: list[Progress], dealt: _Dealt) -> bool:
    """Write the refinement's state: the level and every shard's (the driver's and the workers').
    False when a worker was lost meanwhile: it is given its share again and nothing is written (the
    previous checkpoint stays)."""
    t = time.perf_counter()
    states = [local.state()]
    if pool is not None:
        out = pool.each("state", [()] * (len(parts) - 1))
        lost = [k for k, s in enumerate(out) if s is LOST]
        dealt.replace(pool, parts, lost, tau)
        if lost:
            return False
        states += out
    saving.checkpoint.save({**saving.header, "tau": tau, "shards": states}, started=t)
    saving.written += 1
    saving.seconds += time.perf_counter() - t
    return True


def _restored(local: Shard, state: dict[str, Any], dlo: np.ndarray, dhi: np.ndarray, max_boxes: int | None) -> float:
    """Put a saved refinement into the driver's shard; returns the level to go on at: the saved one
    under a box budget (a run saved without one starts its levels at its largest open box)."""
    shards, tau = state.get("shards"), state.get("tau")
    if not (
        isinstance(shards, list)
        and 0 < len(shards) <= MAX_SAVED_SHARDS
        and all(isinstance(s, dict) for s in shards)
        and isinstance(tau, (int, float))
        and not isinstance(tau, bool)
        and math.isfinite(tau)
        and tau >= 0
    ):
        raise PropertyError("checkpoint: its state is incomplete or malformed (no shards or no level)")
    for s in shards:
        local.restore(s, dlo, dhi)
    if not local.settler.fits(local):
        raise PropertyError("checkpoint: its boxes or counts do not fit this domain and model")
    if max_boxes is None:
        return 0.0
    return float(tau) if tau > 0 else local.frontier.largest() * LEVEL_RATIO


def _started(pool: Pool, shares: list[list[Entry]], tau: float) -> list[Progress]:
    """Deal the shares out; each worker's progress says whether it holds boxes above the level tau
    (else the driver could end the level before they are taken)."""
    out = pool.each("start", [(s, tau) for s in shares])
    return [_restarted(pool, k, shares[k], tau) if p is LOST else p for k, p in enumerate(out)]


def _restarted(pool: Pool, k: int, share: list[Entry], tau: float) -> Progress:
    """Give a replaced worker its share again (its former totals are dropped), at the level tau."""
    while True:
        p = pool.each("start", [None] * k + [(share, tau)])[k]
        if isinstance(p, Progress):  # else LOST: again
            return p


def _gather(local: Shard, pool: Pool | None, parts: list[Progress], complete: bool) -> Refined:
    region, entries = local.result(with_open=True)
    if pool is None:
        return Refined(complete, region, entries, _sum(parts))
    with_open = sum(p.open_bytes for p in parts[1:]) <= local.limit_bytes
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
        self.parallel, self.shard = parallel, shard
        self.pool: Pool | None = None

    @property
    def restarts(self) -> int:
        return self.pool.restarts if self.pool is not None else 0

    def start(self) -> Pool:
        self.pool = self.parallel.open(self.shard.fresh())
        return self.pool

    def __enter__(self) -> _Maybe:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.close()
