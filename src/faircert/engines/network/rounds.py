"""Box refinement of networks in rounds of chunks, on worker processes or a Ray cluster.

The driver keeps the partition (decided masses, the pool of undecided boxes, the evidence). Each
round it splits the heaviest pool boxes and hands the children out in chunks; a worker bounds its
chunk's boxes, decides, cuts, searches and credits them (`ChunkWork.work`, the refinement's own
code on a copy of the run that it holds once) and returns what it established; the driver merges
the chunks in order. What a chunk does depends only on its boxes and on what the driver sends with
them: its random draws are seeded by (seed, round, chunk) and its share of the growth around
counterexamples is a budget counted in bounded boxes, not in seconds. So a run limited by work
(`max_boxes`) gives the same shares with 1, 2 or N workers, locally or on Ray; a run limited by
time stays sound (every merged chunk is sound) but depends on how far it got.

Counterexamples found on workers join the driver's store, which re-checks them on the real
network when the result is made. A stop request ends the run after the current round.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..boxes.workers import Parallelism
from .counts import Counts
from .resume import cex_arrays, pool_arrays, restore, state_of, stuck_arrays

#: chunks a round holds at most: fixed, so that a run limited by boxes is the same for any worker count
ROUND_CHUNKS = 8
#: bounding calls per chunk (a call takes 50 to 100 ms on the FairQuant networks: a chunk about 0.3 s)
CHUNK_CALLS = 4
#: growth around counterexamples may bound at most this share of the boxes bounded so far
GROW_WORK = 0.02


@dataclass
class Batch:
    """What one chunk established: decided masses, undecided boxes for the pool (with their split
    feature, priority and credits), boxes that cannot be split, cut pieces to bound next round,
    counterexamples, and counters."""

    cert: float
    fal: float
    pool: tuple[np.ndarray, ...]
    stuck_lo: np.ndarray
    stuck_hi: np.ndarray
    pend_lo: np.ndarray
    pend_hi: np.ndarray
    cex: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    cex_found: int
    counts: Counts
    probes: int
    probe_hits: int


class ChunkWork:
    """A worker's job: a copy of the run without its partition, refilled for each chunk."""

    def __init__(self, run: Any) -> None:
        self.run = copy.copy(run)
        self.run.progress = None
        self.run.clear()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _blas_on_one_thread()  # a spawned process or Ray actor: small batched GEMMs, as in the driver

    def work(self, lo: np.ndarray, hi: np.ndarray, seed: tuple[int, ...], grow_budget: float) -> Batch:
        run = self.run
        run.clear()
        run.rng = np.random.default_rng(seed)
        run.grow_budget = grow_budget
        pend_lo, pend_hi = run._process(lo, hi)
        return Batch(
            run.cert,
            run.fal,
            pool_arrays(run),
            *stuck_arrays(run),
            pend_lo,
            pend_hi,
            cex_arrays(run),
            run.cex_found,
            run.counts,
            run.probes,
            run.probe_hits,
        )


def absorb(run: Any, b: Batch) -> None:
    """Merge one chunk's batch into the driver's run."""
    run.cert += b.cert
    run.fal += b.fal
    run.pool.push(*b.pool)
    if b.stuck_lo.shape[0]:
        run.stuck_lo.append(b.stuck_lo)
        run.stuck_hi.append(b.stuck_hi)
    run._record(*b.cex)
    run.cex_found += b.cex_found - b.cex[0].shape[0]  # found in the chunk beyond the ones it kept
    run.counts.absorb(b.counts)
    run.probes += b.probes
    run.probe_hits += b.probe_hits


def chunks(n: int, bound_rows: int) -> list[slice]:
    """Contiguous chunks of a batch of n boxes: at most `ROUND_CHUNKS` of at least one bounding call
    each, more only for a batch larger than a full round; a function of n alone."""
    k = max(math.ceil(n / (CHUNK_CALLS * bound_rows)), min(ROUND_CHUNKS, math.ceil(n / bound_rows)), 1)
    edges = [n * i // k for i in range(k + 1)]
    return [slice(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def refine_in_rounds(
    run: Any,
    parallel: Parallelism,
    time_limit: float | None,
    target: float,
    max_boxes: int | None,
    checkpoint: Any = None,
    resume: bool = False,
) -> None:
    """`run.refine` (a `refine.Refinement`) with each round's box work in chunks on `parallel`'s
    workers; stops, besides, after the round that brings the boxes examined to `max_boxes`.

    With a `checkpoint`, the partition is saved between rounds when one is due and at the end;
    with `resume`, the run starts from the partition saved there."""
    budget = run.budget(time_limit, max_boxes)
    full = ROUND_CHUNKS * CHUNK_CALLS * run.chunk // 2  # pool boxes split per round, at most
    lo = hi = None
    examined = 0
    if resume:  # the saved round is done: go on from its checks
        pend_lo, pend_hi, examined = restore(run, checkpoint.load())
    else:
        lo, hi = run.first_batch()
    round_s = 0.0
    with parallel.open(ChunkWork(run)) as workers:
        run.stats["workers"] = workers.n
        while True:
            t = time.perf_counter()
            if resume:
                resume = False
            else:
                pend_lo, pend_hi, examined = _round(run, workers, lo, hi, examined)
                if checkpoint is not None and checkpoint.due():
                    checkpoint.save(state_of(run, pend_lo, pend_hi, examined))
            round_s = time.perf_counter() - t
            if run.finished(target, pend_lo, pend_hi):
                break
            # a round takes a while: start one only if it can end before the estimate's time
            ahead = 0.0 if time_limit is None else round_s + run._sampling_time(time_limit)
            if budget.spent(examined=examined, memory_full=run.pool_full(), ahead_s=ahead):
                break
            lo, hi = run.next_batch(pend_lo, pend_hi, full)
    run.record_stop(budget)
    if checkpoint is not None:
        checkpoint.save(state_of(run, pend_lo, pend_hi, examined))
        run.stats.update(checkpoints=checkpoint.saves, checkpoint_s=checkpoint.save_s)
    run.park(pend_lo, pend_hi)


def _round(
    run: Any, workers: Any, lo: np.ndarray | None, hi: np.ndarray | None, examined: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """One round: the boxes bounded in chunks on the workers, merged in order; returns the cut
    pieces for the next round and the boxes examined so far."""
    pend_lo = pend_hi = np.empty((0, run.pb.d))
    if lo is not None and hi is not None and lo.shape[0]:
        examined += lo.shape[0]
        # growth may catch up to its share of the boxes bounded by the end of this round;
        # the first chunk gets it all: split eight ways it would often pay for no growth
        budget = max(0.0, GROW_WORK * (run.counts.boxes_bounded + lo.shape[0]) - run.counts.boxes_bounded_grow)
        tasks = [
            (lo[s], hi[s], (run.seed, run.counts.rounds, i), budget if i == 0 else 0.0)
            for i, s in enumerate(chunks(lo.shape[0], run.chunk))
        ]
        pend = []
        for batch in workers.map("work", tasks):
            absorb(run, batch)
            pend.append((batch.pend_lo, batch.pend_hi))
        pend_lo = np.concatenate([p[0] for p in pend])
        pend_hi = np.concatenate([p[1] for p in pend])
        run.stats["workers_restarted"] = workers.restarts
    run.counts.rounds += 1
    run.stats["boxes_examined"] = examined
    run._report()
    return pend_lo, pend_hi, examined


def _blas_on_one_thread() -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own setting
        return
    threadpool_limits(limits=1, user_api="blas")
