"""Complete and partitioned verification of networks: the registry's entry point and its result.

`--complete` decides the whole domain (one region); `--partition-size MS` decides every Fairify
partition (`partitions`) and aggregates: any unfair partition makes the model unfair, all fair
make it fair, otherwise unknown with the coverage (decided partitions / all). The sound shares are
kept: `certified` is the mass of the boxes proven fair, `falsified` the mass proven unfair
(enumerated points, boxes the bounds separate), the rest undecided.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from ...models.network import ReluNetwork
from ...options import VerifyOptions
from ...progress import Progress
from ...properties import IndividualFairness
from ...results import Result
from ..boxes.budget import DONE, MEMORY_LIMIT, Budget
from ..boxes.workers import SERIAL, Parallelism
from .complete import FAIR, UNFAIR, UNKNOWN, VERDICTS, RegionOutcome, decide_regions, recheck, regions_event
from .partitions import partition_grid
from .problem import Problem
from .refine import epsilon_semantics, run_keywords
from .regions_resume import checkpoint_for, regions_state, restore_regions


def answer(
    network: ReluNetwork, prop: IndividualFairness, options: VerifyOptions, progress: Progress | None = None
) -> Result:
    """Registry entry point (method "complete")."""
    return decide_network(
        network,
        prop,
        **run_keywords(prop, options, progress),
        partition_size=options.partition_size,
        parallel=Parallelism.of(options.workers, options.ray_address),
        checkpoint=checkpoint_for(network, prop, options),
    )


def decide_network(
    network: ReluNetwork,
    prop: IndividualFairness,
    *,
    time_limit: float | None = None,
    partition_size: int | None = None,
    seed: int = 0,
    max_counterexamples: int = 100,
    progress: Progress | None = None,
    parallel: Parallelism = SERIAL,
    checkpoint: Any = None,
    resume: bool = False,
    memory_limit: int | None = None,
) -> Result:
    """Decide the whole domain or every partition; with a `checkpoint` the state is saved as the
    run goes and at its end, and `resume` continues from the saved state (`regions_resume`)."""
    t0 = time.perf_counter()
    pb = Problem.build(network, prop)
    if partition_size is None:
        lo, hi = pb.lo[None].copy(), pb.hi[None].copy()
    else:
        lo, hi = partition_grid(pb, partition_size)
    size = pb.domain_size

    if parallel == SERIAL or lo.shape[0] == 1:
        out = decide_regions(
            pb,
            lo,
            hi,
            time_limit=time_limit,
            seed=seed,
            progress=progress,
            checkpoint=checkpoint,
            resume=resume,
            memory_limit=memory_limit,
        )
    else:
        job = RegionJob(pb, seed, memory_limit)
        out = decide_in_parallel(job, lo, hi, time_limit, parallel, progress, checkpoint, resume)
    elapsed = time.perf_counter() - t0
    v = out.verdict
    n_fair, n_unfair, n_unknown = int((v == FAIR).sum()), int((v == UNFAIR).sum()), int((v == UNKNOWN).sum())
    verdict = "unfair" if n_unfair else ("fair" if n_unknown == 0 else "unknown")
    certified = float(out.fair_mass.sum()) / size
    falsified = float(out.unfair_mass.sum()) / size
    if verdict == "fair":
        certified, falsified = 1.0, 0.0
    undecided = max(0.0, 1.0 - certified - falsified)
    pairs = [p for p in out.pairs if p is not None]
    K = lo.shape[0]
    decision = dict(
        verdict=verdict,
        evidence=("counterexample" if n_unfair else "proof" if verdict == "fair" else "budget exhausted"),
        regions=K,
        fair=n_fair,
        unfair=n_unfair,
        unknown=n_unknown,
        coverage=(n_fair + n_unfair) / K,
        partition_size=partition_size,
        partitions_per_s=(n_fair + n_unfair) / max(elapsed, 1e-9),
    )
    rows = None
    if partition_size is not None:
        rows = _rows(pb, prop, lo, hi, out)
    stats = out.counts.to_dict() | out.stats | {"twins": pb.n_twins, "tolerance": pb.tol}
    return Result.about(
        prop,
        verdict=verdict,
        certified=certified,
        falsified=falsified,
        undecided=undecided,
        domain_size=size,
        counterexamples=pairs[:max_counterexamples],
        statistical=None,
        elapsed_s=elapsed,
        engine="network-complete",
        model=network.source,
        stats=stats,
        epsilon_semantics=epsilon_semantics(prop),
        decision=decision,
        partitions=rows,
        stopped=out.stopped,
    )


#: Chunks of partitions per worker and round (the pool hands them out as workers free up).
CHUNKS_PER_WORKER = 4
#: The first round's longest slice per chunk (a stop request waits at most this long in that round);
#: each later round doubles it, so hard regions get longer runs.
SLICE_S = 10.0


class RegionJob:
    """What workers hold: the problem; `decide` runs the branch and bound on a chunk of regions."""

    def __init__(self, pb: Problem, seed: int, memory_limit: int | None = None) -> None:
        self.pb, self.seed, self.memory_limit = pb, seed, memory_limit

    def decide(self, lo: np.ndarray, hi: np.ndarray, seconds: float | None) -> tuple[RegionOutcome, bool]:
        """The chunk's outcome, and whether it ran out of time (else its unknown regions are stuck:
        boxes the branch and bound cannot split further, which more time would not decide)."""
        t0 = time.perf_counter()
        out = decide_regions(self.pb, lo, hi, time_limit=seconds, seed=self.seed, memory_limit=self.memory_limit)
        return out, seconds is not None and time.perf_counter() - t0 >= 0.95 * seconds


def decide_in_parallel(
    job: RegionJob,
    lo: np.ndarray,
    hi: np.ndarray,
    time_limit: float | None,
    parallel: Parallelism,
    report: Progress | None,
    checkpoint: Any = None,
    resume: bool = False,
) -> RegionOutcome:
    """The `job`'s regions decided in rounds of contiguous chunks (neighbouring partitions share evidence) on
    `parallel`'s workers. A round gives every chunk an equal share of the time left, at most its
    slice (`SLICE_S`, doubled for every round a region has already had); the regions a chunk left
    unknown when its slice ran out are decided again, from the start, in the next round with the
    longer slice, and those it left unknown before that (stuck) are not. Masses proven inside a
    region still unknown are kept from the round that proved the most (each is sound on its own).
    Without a time limit every chunk runs until its regions are decided or stuck. A checkpoint is
    saved after every round that finds one due, and at the end; a resumed run decides the regions
    the saved state left unknown."""
    K = lo.shape[0]
    out = RegionOutcome(np.full(K, UNKNOWN, dtype=np.int8), [None] * K, np.zeros(K), np.zeros(K), np.zeros(K), [""] * K)
    if resume:
        restore_regions(job.pb, out, checkpoint.load(), recheck)
    t0 = time.perf_counter()
    budget = Budget.of(time_limit, clock=time.perf_counter)
    retry = np.ones(K, dtype=bool)
    # rounds give every chunk a share of the time: the workers start at once, not after a run's first second
    with replace(parallel, start_after=0.0).open(job) as workers:
        slice_s = SLICE_S
        while True:
            todo = np.flatnonzero((out.verdict == UNKNOWN) & retry)
            if not todo.size or budget.spent(ahead_s=0.05):
                break
            left = None if time_limit is None else budget.left()
            chunks = [c for c in np.array_split(todo, min(todo.size, CHUNKS_PER_WORKER * workers.n)) if c.size]
            share = None if left is None else max(min(slice_s, left * workers.n / len(chunks)), 0.05)
            results = workers.map("decide", [(lo[c], hi[c], share) for c in chunks])
            for c, (res, timed_out) in zip(chunks, results):
                _merge(out, c, res)
                retry[c] = timed_out
            slice_s *= 2
            if checkpoint is not None and checkpoint.due():
                checkpoint.save(regions_state(job.pb, out))
            if report is not None:
                report(regions_event(out.verdict, time.perf_counter() - t0))
        out.stats["workers"] = workers.n
        out.stats["workers_restarted"] = workers.restarts
    out.stats.update(budget.flags())
    # chunks that stopped at their memory limit left their regions open: the run did not end done
    out.stopped = MEMORY_LIMIT if budget.stopped == DONE and out.stats.get("memory_limited") else budget.stopped
    if checkpoint is not None:
        checkpoint.save(regions_state(job.pb, out))
        out.stats.update(checkpoints=checkpoint.saves, checkpoint_s=checkpoint.save_s)
    return out


def _merge(out: RegionOutcome, idx: np.ndarray, res: RegionOutcome) -> None:
    out.verdict[idx] = res.verdict
    out.seconds[idx] += res.seconds
    out.fair_mass[idx] = np.maximum(out.fair_mass[idx], res.fair_mass)
    out.unfair_mass[idx] = np.maximum(out.unfair_mass[idx], res.unfair_mass)
    for j, k in enumerate(idx):
        out.pairs[k], out.evidence[k] = res.pairs[j], res.evidence[j]
    out.counts.absorb(res.counts)
    if res.stopped == MEMORY_LIMIT:
        out.stats["memory_limited"] = True


def _rows(pb: Problem, prop: IndividualFairness, lo: np.ndarray, hi: np.ndarray, out) -> list[dict]:
    """One row per partition: bounds of its cut features, verdict, seconds, evidence, pair."""
    names = [prop.domain.names[i] for i in pb.free]
    cut = np.flatnonzero(np.any(lo != pb.lo, axis=0) | np.any(hi != pb.hi, axis=0))
    rows = []
    for k in range(lo.shape[0]):
        pair = out.pairs[k]
        rows.append(
            dict(
                id=k,
                lower={names[i]: _num(lo[k, i]) for i in cut},
                upper={names[i]: _num(hi[k, i]) for i in cut},
                verdict=VERDICTS[out.verdict[k]],
                seconds=float(out.seconds[k]),
                evidence=out.evidence[k] or None,
                counterexample=pair.to_dict() if pair is not None else None,
            )
        )
    return rows


def _num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)
