"""Box refinement: quantified individual fairness of ReLU networks (generalises FairQuant).

The measured space (the free features) is partitioned into boxes, refined by the sharded box
runner (`boxes.shards`) with the network's settler (`settle.BoxSettler`): open boxes are taken by
priority (their mass not yet proven fair or unfair), bounded for all twins at once, and settled
whole, cut, searched for counterexamples, or credited with the shares their linear forms prove and
split further. The shares are sound at every moment; a stratified sample over the undecided boxes
estimates the rest.

The same runner holds the boxes on worker processes or a Ray cluster (`parallel`), stops at a box
budget (`max_boxes`: at the end of the first priority level that examined that many), and writes
and resumes checkpoints; under a box budget the shares and evidence do not depend on the number
of workers, nor on where a run was stopped and resumed (see `settle` for the one proviso).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...errors import DeviceMemoryError, PropertyError
from ...memory import default_limit
from ...models.network import ReluNetwork
from ...options import VerifyOptions
from ...progress import Progress, ProgressEvent
from ...properties import IndividualFairness
from ...results import Counterexample, Result
from ..boxes.budget import DONE, Budget
from ..boxes.frontier import BoxCodec
from ..boxes.shards import Progress as Totals
from ..boxes.shards import Refined, Shard, refine
from ..boxes.workers import SERIAL, Parallelism
from .counts import Counts
from .draws import box_keys
from .problem import Problem
from .resume import saving_for
from .sampling import Sampler, random_points, twin_split
from .settle import CREDIT_GRID, BoxSettler, Findings, credited
from .symbolic import crown_cost_ratio

#: elements of one linear-form array (twins x (inputs + 1) x widest layer, per box) over the boxes
#: bounded in one step (memory), and in one bounding call on networks with a layer of WIDE neurons
#: or more. Measured on the FairQuant models (`benchmarks/results/bound_calls.md`): calls of
#: 100,000 bound such networks 1.1-2.0x as fast as one call per step (whole refinements 1.0-1.6x),
#: narrower ones 0.86-1.2x (whole refinements 0.76-1.1x)
ROWS_PER_STEP = 1_500_000
ROWS_PER_CALL = 100_000
WIDE = 48
#: on a CUDA device a step is one bounding call of at most this many boxes (a GPU is only busy with
#: large batches), and of as many as fit half the memory limit at the call's peak (`device_step`)
DEVICE_STEP_BOXES = 1 << 17
#: a bounding call's peak, per box, in elements: this many linear-form arrays (twins x (inputs + 1)
#: x widest layer) and, with full CROWN, back-substituted arrays (2 x twins x the largest product of
#: two consecutive widths); numpy's allocations under tracemalloc on AC-3, AC-5, BM-4, GC-2 and GC-5
#: peaked at 3.2-4.4 and 3.1-3.2 of them (torch's arrays are the same ones)
FORM_COPIES = 5
CROWN_COPIES = 4
TIGHT_MAX_RATIO = 4.0  # full CROWN when it costs at most this many forward passes
TIGHT_MAX_DEPTH = 6  # ... and the network has at most this many layers
SAMPLE_HALFWIDTH = 0.0009  # target half-width of the estimate's interval (share units)
REFINE_SHARE = 0.97  # of the time limit, for the refinement (the estimate keeps its own time too)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Small batched GEMMs run faster on one BLAS thread than on several."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own setting
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@contextlib.contextmanager
def one_thread(device: str | None) -> Iterator[None]:
    """One BLAS thread, and one torch thread on the CPU: on 2 loaded cores, torch's default of one
    thread per core bounded several times slower (`benchmarks/results/gpu.md`)."""
    with _one_blas_thread():
        if device != "cpu":
            yield
            return
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)


def device_step(pb: Problem, tight: bool, limit_bytes: int) -> int:
    """Boxes per bounding call on a CUDA device: as many as fit half of `limit_bytes` (float64) at
    the call's peak, from 16 to `DEVICE_STEP_BOXES`."""
    w = pb.bounder.widths
    per_box = FORM_COPIES * pb.n_twins * (pb.d + 1) * max(w)
    if tight:
        per_box += CROWN_COPIES * 2 * pb.n_twins * max((a * b for a, b in zip(w[1:], w[:-1])), default=0)
    return int(np.clip(limit_bytes // 2 // (8 * per_box), 16, DEVICE_STEP_BOXES))


def step_sizes(pb: Problem, tight: bool, limit: int, device: str | None) -> tuple[int, int]:
    """Boxes per bounding call and per step: on a CUDA device one call a step (`device_step`);
    on numpy, and torch on the CPU, the same steps (so the same boxes in each call), in calls of
    `ROWS_PER_CALL` rows on wide networks."""
    if device == "cuda":
        step = device_step(pb, tight, min(limit, pb.backend.capacity()))
        return step, step
    widest = max(pb.bounder.widths)
    rows = pb.n_twins * (pb.d + 1) * widest
    step = int(np.clip(ROWS_PER_STEP // rows, 16, 1024))
    return (min(step, max(16, ROWS_PER_CALL // rows)) if widest >= WIDE else step), step


def verify_network(
    network: ReluNetwork,
    prop: IndividualFairness,
    *,
    time_limit: float | None = None,
    target_undecided: float = 0.0,
    confidence: float = 0.99,
    seed: int = 0,
    max_counterexamples: int = 100,
    progress: Progress | None = None,
    parallel: Parallelism = SERIAL,
    max_boxes: int | None = None,
    checkpoint: Any = None,
    resume: bool = False,
    memory_limit: int | None = None,
) -> Result:
    """Sound certified / falsified / undecided shares of `prop` on `network`, with evidence.

    Refines on `parallel`'s workers, until `time_limit`, the undecided share `target_undecided`,
    or the box budget `max_boxes`; writes to `checkpoint` and, with `resume`, goes on from it. The
    open boxes (and, on "cuda", the device's memory) stop growing at `memory_limit` bytes (default
    `memory.default_limit()`). `parallel.device` ("cpu" or "cuda") computes the bounds and the
    logits with torch there, in float64 (`arrays`), in this process and in each worker; None: numpy."""
    device = parallel.device
    with one_thread(device):
        run = Refinement(network, prop, seed, progress, memory_limit, device, parallel.processes)
        try:
            run.refine(time_limit, target_undecided, parallel, max_boxes, checkpoint, resume)
        except Exception as exc:  # the memory limit keeps a run inside it; a device that holds less fails
            if run.pb.backend.out_of_memory(exc):
                raise DeviceMemoryError(f"the {device} device ran out of memory: give a lower --memory-limit") from None
            raise
        return run.result(time_limit, confidence, max_counterexamples)


class Refinement:
    """One run: the problem, the settler and the shard it refines with, and what refining gave."""

    def __init__(
        self,
        network: ReluNetwork,
        prop: IndividualFairness,
        seed: int,
        progress: Progress | None,
        memory_limit: int | None = None,
        device: str | None = None,
        processes: int = 1,
    ) -> None:
        self.t0 = time.perf_counter()
        self.network, self.prop, self.progress = network, prop, progress
        self.pb = pb = Problem.build(network, prop, device)
        self.rng = np.random.default_rng(seed)  # the estimate's samples
        # measured: pays off on deep pyramids (GC-5: undecided / 2.5), not on very deep narrow nets
        tight = crown_cost_ratio(pb.bounder, pb.d) <= TIGHT_MAX_RATIO and len(pb.bounder.widths) <= TIGHT_MAX_DEPTH
        limit = default_limit() if memory_limit is None else memory_limit
        if device == "cuda":  # the processes refining on one GPU (`processes`) share its memory
            limit = min(limit, pb.backend.capacity() // processes)
        self.chunk, step = step_sizes(pb, tight, limit, device)
        self.settler = BoxSettler(pb, self.chunk, step, tight, seed)
        # half a step of open boxes at a time: split in two, they make the step's boxes
        half = self.settler.min_batch
        # the open boxes kept compactly: integer features as offsets on their grid (exactly)
        codec = BoxCodec(pb.lo, pb.hi, pb.discrete)
        self.shard = Shard(self.settler, np.ones(pb.d, bool), half, codec, Findings(pb.d, pb.n_twins), limit)
        self.totals = self.shard.progress(0.0)
        self.out: Refined | None = None
        self.stats: dict[str, Any] = {}
        self.stopped = DONE
        self.point_cost = 0.0
        self._last_report = 0.0  # when progress was last reported (perf_counter)

    def refine(
        self,
        time_limit: float | None,
        target: float = 0.0,
        parallel: Parallelism = SERIAL,
        max_boxes: int | None = None,
        checkpoint: Any = None,
        resume: bool = False,
    ) -> None:
        """Refine the domain until the time limit (less what the estimate will take), the
        undecided `target` share, the box budget or the memory limit; with a `checkpoint`,
        writing it and (`resume`) going on from it."""
        pb = self.pb
        elapsed = time.perf_counter() - self.t0
        budget = Budget.of(
            time_limit, max_boxes=max_boxes, share=REFINE_SHARE, elapsed=elapsed, clock=time.perf_counter
        )
        saving = saving_for(checkpoint, resume)
        self.settler.by_time = max_boxes is None  # under a box budget, nothing may depend on time

        def enough(totals: Totals) -> bool:
            return self._undecided_mass(totals) <= target * pb.domain_size

        def reserve(totals: Totals) -> float:
            return 0.0 if time_limit is None else self._sampling_time(totals, time_limit)

        self.out = out = refine(
            self.shard, pb.lo[None].copy(), pb.hi[None].copy(), budget, parallel, self._watch, saving,
            enough=enough, reserve=reserve,
        )  # fmt: skip
        self.totals, self.stopped = out.totals, out.stopped
        self.stats.update(budget.flags())
        if max_boxes is not None or parallel != SERIAL:
            self.stats.update(boxes_examined=out.totals.examined, workers=max(out.workers, 1))
        if saving is not None:
            self.stats.update(checkpoints=saving.written, checkpoint_s=saving.seconds)
        self._report(force=True)

    def _watch(self, totals: Totals, restarts: int) -> None:
        self.totals = totals
        if restarts:
            self.stats["workers_restarted"] = restarts
        self._report()

    # ----- the shares --------------------------------------------------------------------------
    def shares(self) -> tuple[float, float, float]:
        """Sound certified, falsified and undecided shares."""
        sums, size = self.totals.sums, self.pb.domain_size
        credit_fair, credit_unfair = credited(sums)
        settled, unfair = float(sums["settled"]), float(sums["unfair"])
        fal = (unfair + credit_unfair) / size
        if self.out is not None and self.out.complete and not self._findings().stuck_lo:
            return 1.0 - fal, fal, 0.0  # everything decided: the certified share is the exact rest
        cert = (settled - unfair + credit_fair) / size
        return cert, fal, max(0.0, 1.0 - cert - fal)

    def _undecided_mass(self, totals: Totals) -> float:
        return self.pb.domain_size - float(totals.sums["settled"]) - sum(credited(totals.sums))

    def _sampling_time(self, totals: Totals, time_limit: float) -> float:
        """Expected time of the final estimate (samples its interval needs x cost per sample),
        at most 30% of the time limit."""
        pb = self.pb
        if not self.point_cost:  # calibrate once on a batch of the size the sampler uses
            rng = np.random.default_rng(0)
            x = random_points(rng, np.tile(pb.lo, (4096, 1)), np.tile(pb.hi, (4096, 1)), pb.discrete)
            t = time.perf_counter()
            twin_split(pb, x, fast=True)
            self.point_cost = (time.perf_counter() - t) / 4096 * (20 if pb.has_eps else 1)
        und = (pb.domain_size - float(totals.sums["settled"])) / pb.domain_size
        probes, hits = float(totals.sums["probes"]), float(totals.sums["probe_hits"])
        p = min(0.5, max(hits / probes, 0.01)) if probes >= 1000 else 0.25
        need = min(Sampler.max_samples, (2.6 * und) ** 2 * p * (1 - p) / SAMPLE_HALFWIDTH**2)
        return min(1.3 * need * self.point_cost, 0.3 * time_limit)

    def _report(self, force: bool = False) -> None:
        if self.progress is None:
            return
        now = time.perf_counter()
        if not force and now - self._last_report < 0.25:
            return
        self._last_report = now
        cert, fal, und = self.shares()
        self.progress(
            ProgressEvent(
                elapsed_s=now - self.t0,
                certified=cert,
                falsified=fal,
                undecided=und,
                boxes=self.totals.examined,
            )
        )

    # ----- the evidence ------------------------------------------------------------------------
    def _findings(self) -> Findings:
        region = self.out.region if self.out is not None else self.shard.region
        assert isinstance(region, Findings)  # the store this refinement gave its shard
        return region

    def counterexamples(self, limit: int) -> list[Counterexample]:
        """Stored counterexamples, re-checked on the real model (pairs it labels differently)."""
        x, xp, a, b = self._findings().cex_arrays()
        if not len(x):
            return []
        pb = self.pb
        X, XP = pb.full(x, a), pb.full(xp, b)
        o, op = self.network.logit(X), self.network.logit(XP)
        real = np.flatnonzero(((o > 0) != (op > 0)) & pb.pairs[a, b])
        return [Counterexample(X[i].tolist(), XP[i].tolist(), float(o[i]), float(op[i])) for i in real[:limit]]

    def open_boxes(self) -> tuple[np.ndarray, ...] | None:
        """The open boxes (lo, hi, bounded, split, priority, fair credit, unfair credit: as
        `settle` keeps them, credits in mass) in a fixed order (by their keys); None when they
        were not gathered."""
        entries = self.out.open_entries if self.out is not None else None
        if self.out is not None and entries is None:
            return None
        boxes = self.shard.arrays(entries)
        order = np.argsort(box_keys(0, boxes[0], boxes[1]), kind="stable")
        boxes = tuple(a[order] for a in boxes)
        return boxes[:5] + (boxes[5] * CREDIT_GRID, boxes[6] * CREDIT_GRID)

    def undecided_boxes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The boxes not decided whole (open and unsplittable; lo, hi, mass) in a fixed order, or
        the whole domain when the open boxes were not gathered."""
        pb, findings, boxes = self.pb, self._findings(), self.open_boxes()
        if boxes is None:
            return pb.lo[None].copy(), pb.hi[None].copy(), np.array([pb.domain_size])
        lo, hi = np.concatenate([boxes[0], findings.stuck()]), np.concatenate([boxes[1], findings.stuck(high=True)])
        return lo, hi, pb.mass(lo, hi)

    def result(self, time_limit: float | None, confidence: float, max_counterexamples: int) -> Result:
        pb = self.pb
        cert, fal, und = self.shares()
        t_refine = time.perf_counter() - self.t0
        lo, hi, mass = self.undecided_boxes()
        gathered = self.out is None or self.out.open_entries is not None
        settled_unfair = float(self.totals.sums["unfair"]) / pb.domain_size if gathered else 0.0
        deadline = None if time_limit is None else self.t0 + time_limit
        # the samples cover the undecided boxes whole, credits included: start from the boxes
        # decided whole, then keep the interval inside the sound one (which holds the truth surely)
        est = Sampler(pb, self.rng, confidence, SAMPLE_HALFWIDTH).estimate(
            lo, hi, mass, settled_unfair, deadline, self.chunk
        )
        est = dataclasses.replace(
            est,
            unfair=float(np.clip(est.unfair, fal, fal + und)),
            ci_low=float(np.clip(est.ci_low, fal, fal + und)),
            ci_high=float(np.clip(est.ci_high, fal, fal + und)),
        )
        cexs = self.counterexamples(max_counterexamples)
        if und == 0 and fal == 0 and not cexs:
            verdict = "fair"
        elif fal > 0 or cexs:
            verdict = "unfair"
        else:
            verdict = "unknown"
        findings = self._findings()
        counts: Counts = findings.counts
        bounded = counts.boxes_bounded + counts.boxes_bounded_grow
        credited_fair, credited_unfair = credited(self.totals.sums)
        st: dict[str, Any] = counts.to_dict() | self.stats
        st.update(
            elapsed_refine_s=t_refine,
            open_boxes=self.totals.open_boxes,
            open_boxes_gathered=gathered,
            twins=pb.n_twins,
            counterexamples_found=findings.cex_found,
            boxes_per_s=bounded / max(t_refine, 1e-9),
            twin_boxes_per_s=bounded * pb.n_twins / max(t_refine, 1e-9),
            tolerance=pb.tol,
            full_crown=self.settler.tight,
            credited_fair=credited_fair / pb.domain_size,
            credited_unfair=credited_unfair / pb.domain_size,
        )
        return Result.about(
            self.prop,
            verdict=verdict,
            certified=cert,
            falsified=fal,
            undecided=und,
            domain_size=pb.domain_size,
            counterexamples=cexs,
            statistical=est,
            elapsed_s=time.perf_counter() - self.t0,
            engine="network-boxes",
            model=self.network.source,
            stats=st,
            epsilon_semantics=epsilon_semantics(self.prop),
            stopped=self.stopped,
        )


def epsilon_semantics(prop: IndividualFairness) -> str:
    """What a twin may do, for the result's JSON: take another protected combination (fairness,
    non-protected features within epsilon) or keep it (robustness: every feature within epsilon)."""
    return "robustness" if prop.robustness else "other_protected_value"


def answer(
    network: ReluNetwork, prop: IndividualFairness, options: VerifyOptions, progress: Progress | None = None
) -> Result:
    """Registry entry point: `verify_network` with the command's options."""
    from .resume import checkpoint_for

    return verify_network(
        network,
        prop,
        **run_keywords(prop, options, progress),
        target_undecided=options.target_undecided,
        confidence=options.confidence,
        parallel=Parallelism.of(options.workers, options.ray_address, options.device),
        max_boxes=options.max_boxes,
        checkpoint=checkpoint_for(network, prop, options),
    )


def run_keywords(prop: IndividualFairness, options: VerifyOptions, progress: Progress | None) -> dict[str, Any]:
    """What both network engines (`verify_network`, `decide.decide_network`) take alike from the
    command's options; a question on a network has no kappa."""
    if prop.kappa is not None:
        raise PropertyError("kappa is supported for tree ensembles, not for networks")
    return {
        "time_limit": options.time_limit,
        "seed": options.seed,
        "max_counterexamples": options.max_counterexamples,
        "progress": progress,
        "resume": bool(options.resume),
        "memory_limit": options.memory_limit,
    }
