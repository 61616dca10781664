"""Box refinement: quantified individual fairness of ReLU networks (generalises FairQuant).

The measured space (the free features) is partitioned into boxes. Each round bounds a batch of
boxes for all twins at once; a box is certified when every twin is provably on the same side
of 0 over it (over its epsilon-enlargement), falsified when some twin is provably positive and
another provably non-positive everywhere in it. Boxes with few grid points are enumerated
exactly. Undecided boxes are searched for counterexamples, the heaviest are split further, and
proven-unfair boxes are grown around counterexamples; inside each undecided box, Chernoff bounds
on its linear forms prove a share of its points fair or unfair without locating them. The shares
are sound at every moment; a stratified sample over the undecided boxes estimates the rest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

import numpy as np

from ...errors import PropertyError
from ...memory import default_limit
from ...models.network import ReluNetwork
from ...progress import Progress, ProgressEvent
from ...properties import IndividualFairness
from ...results import Counterexample, Result
from ..boxes.budget import DONE, Budget
from ..boxes.pool import Pool
from ..boxes.workers import SERIAL, Parallelism
from .counts import Counts
from .cuts import cut_boxes
from .exact import exact_boxes, exact_ok
from .grow import RADII, carve, grow
from .problem import Problem
from .rounds import refine_in_rounds
from .sampling import Sampler, draw_points, random_points, twin_split
from .symbolic import crown_cost_ratio
from .tail import decided_shares

ROWS_PER_CHUNK = 1_500_000  # elements of one linear-form array per bounding call (memory/speed)
EXACT_POINTS = 200_000  # enumerate the whole domain directly when it has at most this many points
EXACT_PER_INPUT = 8  # enumerate boxes with at most this many points per free feature (+1)
CEX_STORE = 20_000  # counterexamples kept for reporting and growth
GROW_SHARE = 0.02  # at most this share of the time goes into growing unfair boxes (measured: more costs undecided mass)
GROW_BATCH = 64
TIGHT_MAX_RATIO = 4.0  # full CROWN when it costs at most this many forward passes
TIGHT_MAX_DEPTH = 6  # ... and the network has at most this many layers
SAMPLE_HALFWIDTH = 0.0009  # target half-width of the estimate's interval (share units)
PROBES = 4  # random points tried per undecided box
HOPELESS = 0.125  # priority factor of boxes known to hold a counterexample


@contextlib.contextmanager
def _one_blas_thread():
    """Small batched GEMMs run faster on one BLAS thread than on several."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own setting
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


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

    With several workers (`parallel`), a box budget (`max_boxes`: stop after the round that
    examines that many boxes) or a `checkpoint` the refinement runs in rounds of chunks (`rounds`),
    whose result up to a box budget does not depend on where the chunks ran, nor on a resume
    from a checkpoint between them. The pool of undecided boxes stops growing at `memory_limit`
    bytes (default `memory.default_limit()`)."""
    with _one_blas_thread():
        run = Refinement(network, prop, seed, progress, memory_limit)
        if parallel == SERIAL and max_boxes is None and checkpoint is None:
            run.refine(time_limit, target_undecided)
        else:
            refine_in_rounds(run, parallel, time_limit, target_undecided, max_boxes, checkpoint, resume)
        return run.result(time_limit, confidence, max_counterexamples)


class Refinement:
    """State of one run: the partition (decided masses + pool of undecided boxes) and evidence."""

    def __init__(
        self,
        network: ReluNetwork,
        prop: IndividualFairness,
        seed: int,
        progress: Progress | None,
        memory_limit: int | None = None,
    ) -> None:
        self.t0 = time.perf_counter()
        self.memory_limit = default_limit() if memory_limit is None else memory_limit
        self.network, self.prop = network, prop
        self.pb = pb = Problem.build(network, prop)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.progress = progress
        self.clear()
        width = max(pb.bounder.widths)
        self.chunk = int(np.clip(ROWS_PER_CHUNK // (pb.n_twins * (pb.d + 1) * width), 16, 1024))
        # measured: pays off on deep pyramids (GC-5: undecided / 2.5), not on very deep narrow nets
        self.tight = crown_cost_ratio(pb.bounder, pb.d) <= TIGHT_MAX_RATIO and len(pb.bounder.widths) <= TIGHT_MAX_DEPTH
        self.exact_limit = max(1, EXACT_PER_INPUT * (pb.d + 1))  # single points always exactly
        self.min_real = 1e-9 * np.maximum(pb.hi - pb.lo, 1.0)
        self._last_report = 0.0
        self.started = False
        self.point_cost = 0.0
        #: boxes that growth around counterexamples may bound; None: a share of the time (GROW_SHARE)
        self.grow_budget: float | None = None

    def clear(self) -> None:
        """Empty the partition and the evidence: decided masses, pool, stuck boxes, counters."""
        self.pool = Pool(self.pb.d)
        self.stuck_lo: list[np.ndarray] = []
        self.stuck_hi: list[np.ndarray] = []
        self.cert = 0.0
        self.fal = 0.0
        self.cex: dict[bytes, tuple] = {}
        self.cex_found = 0
        self.counts = Counts()
        self.stats: dict[str, Any] = {}  # what the run reports besides its counts
        self.probes = self.probe_hits = 0
        self.stopped = DONE

    # ----- the loop ---------------------------------------------------------------------------
    def refine(self, time_limit: float | None, target: float, max_rounds: int | None = None) -> None:
        """Refine until the time limit, the undecided target, or (for tests) a number of rounds."""
        pb = self.pb
        budget = self.budget(time_limit)
        lo, hi = self.first_batch()
        while True:
            round_started = time.perf_counter()
            pend_lo = pend_hi = np.empty((0, pb.d))
            if lo is not None and hi is not None and lo.shape[0]:
                pend_lo, pend_hi = self._process(lo, hi)
            self.counts.rounds += 1
            self._report()
            if self.finished(target, pend_lo, pend_hi):
                break
            # stop before a round like the last would end past the limit
            ahead = 0.0 if time_limit is None else time.perf_counter() - round_started + self._sampling_time(time_limit)
            if budget.spent(ahead_s=ahead, memory_full=self.pool_full()):
                break
            if max_rounds is not None and self.counts.rounds >= max_rounds:
                break
            lo, hi = self.next_batch(pend_lo, pend_hi, 4 * self.chunk)
        self.record_stop(budget)
        self.park(pend_lo, pend_hi)

    def budget(self, time_limit: float | None, max_boxes: int | None = None) -> Budget:
        """The refinement's limits: the time it leaves the final estimate (3%, besides the
        estimate's own time that the loops keep free) counted from the run's start."""
        elapsed = time.perf_counter() - self.t0
        return Budget.of(time_limit, max_boxes=max_boxes, share=0.97, elapsed=elapsed, clock=time.perf_counter)

    def finished(self, target: float, pend_lo: np.ndarray, pend_hi: np.ndarray) -> bool:
        """Whether the undecided mass (cut pieces not bounded yet included) is down to `target`,
        or nothing is left open."""
        und = self.undecided_mass() + float(self.pb.mass(pend_lo, pend_hi).sum())
        return und <= target * self.pb.domain_size or (not pend_lo.shape[0] and len(self.pool) == 0)

    def record_stop(self, budget: Budget) -> None:
        """Keep why the refinement ended, for the result (`stopped`, and its flag in `stats`)."""
        self.stopped = budget.stopped
        self.stats.update(budget.flags())

    def next_batch(self, pend_lo: np.ndarray, pend_hi: np.ndarray, full: int) -> tuple[np.ndarray, np.ndarray]:
        """The next boxes to bound: the cut pieces of the last round, then the children of the
        heaviest pool boxes, about `full` in all."""
        k = int(np.clip(len(self.pool) // 8, self.chunk // 2, full))
        if pend_lo.shape[0]:
            k = max(0, min(k, full - pend_lo.shape[0] // 2))
        lo, hi = pend_lo, pend_hi
        if k and len(self.pool):
            plo, phi, _, split = self.pool.pop_heaviest(k)
            clo, chi = self._split(plo, phi, split)
            lo, hi = np.concatenate([lo, clo]), np.concatenate([hi, chi])
        return lo, hi

    def park(self, pend_lo: np.ndarray, pend_hi: np.ndarray) -> None:
        """Pieces not bounded yet stay undecided; a later call starts with them."""
        self.stuck_lo.append(pend_lo)
        self.stuck_hi.append(pend_hi)
        self._report(force=True)

    def pool_full(self) -> bool:
        """Whether the undecided boxes take the memory refining may use."""
        return len(self.pool) * (16 * self.pb.d + 32) > self.memory_limit

    def first_batch(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The boxes a (resumed) refinement starts from: the whole domain, enumerated at once when
        small, or the boxes left unbounded or unsplittable by an earlier call."""
        pb = self.pb
        lo = hi = None
        if self.stuck_lo:  # resume: unbounded or unsplittable boxes first
            lo, hi = np.concatenate(self.stuck_lo), np.concatenate(self.stuck_hi)
            self.stuck_lo, self.stuck_hi = [], []
        if not self.started:
            self.started = True
            lo, hi = pb.lo[None].copy(), pb.hi[None].copy()
            if exact_ok(pb, lo, hi, EXACT_POINTS).all():
                self._exact(lo, hi)
                lo = hi = None
        return lo, hi

    def _sampling_time(self, time_limit: float) -> float:
        """Expected time of the final estimate (samples its interval needs x cost per sample),
        at most 30% of the time limit."""
        if not self.point_cost:  # calibrate once on a batch of the size the sampler uses
            x = random_points(
                self.rng, np.tile(self.pb.lo, (4096, 1)), np.tile(self.pb.hi, (4096, 1)), self.pb.discrete
            )
            t = time.perf_counter()
            twin_split(self.pb, x, fast=True)
            self.point_cost = (time.perf_counter() - t) / 4096 * (20 if self.pb.has_eps else 1)
        und = self._open_mass() / self.pb.domain_size
        p = min(0.5, max(self.probe_hits / self.probes, 0.01)) if self.probes >= 1000 else 0.25
        need = min(Sampler.max_samples, (2.6 * und) ** 2 * p * (1 - p) / SAMPLE_HALFWIDTH**2)
        return min(1.3 * need * self.point_cost, 0.3 * time_limit)

    def undecided_mass(self) -> float:
        """Mass not proven fair or unfair."""
        return self._open_mass() - sum(self.pool.credited())

    def _open_mass(self) -> float:
        """Mass of the boxes not decided whole (the pool and the stuck boxes)."""
        stuck = sum(float(self.pb.mass(a, b).sum()) for a, b in zip(self.stuck_lo, self.stuck_hi))
        return self.pool.total() + stuck

    def _split(self, lo, hi, split):
        r = np.arange(lo.shape[0])
        a, b = lo[r, split], hi[r, split]
        disc = self.pb.discrete[split]
        mid = np.where(disc, np.floor((a + b) / 2), (a + b) / 2)
        if self.pb.weights is not None:  # halve the mass, not the range
            mid = self.pb.weights.median(split, a, b, mid)
        left_hi = hi.copy()
        left_hi[r, split] = mid
        right_lo = lo.copy()
        right_lo[r, split] = np.where(disc, mid + 1, mid)
        return np.concatenate([lo, right_lo]), np.concatenate([left_hi, hi])

    # ----- one batch of new boxes ------------------------------------------------------------
    def _process(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Decide a batch of new boxes; undecided ones go to the pool, cut pieces are returned."""
        pb = self.pb
        if pb.weights is not None:  # boxes the data's values miss count for nothing
            held = pb.mass(lo, hi) > 0
            lo, hi = lo[held], hi[held]
        ex = exact_ok(pb, lo, hi, self.exact_limit)
        if ex.any():
            self._exact(lo[ex], hi[ex])
            lo, hi = lo[~ex], hi[~ex]
        pending = []
        for s in range(0, lo.shape[0], self.chunk):
            pending += self._bound_chunk(lo[s : s + self.chunk], hi[s : s + self.chunk])
        if not pending:
            return np.empty((0, pb.d)), np.empty((0, pb.d))
        return np.concatenate([p[0] for p in pending]), np.concatenate([p[1] for p in pending])

    def _bound_chunk(self, lo: np.ndarray, hi: np.ndarray) -> list:
        """Bound boxes; decide them, cut or search the undecided; return pieces to bound next."""
        pb = self.pb
        t = time.perf_counter()
        bd, own = pb.window_bounds(lo, hi, self.tight)
        self.counts.t_bound += time.perf_counter() - t
        self.counts.boxes_bounded += lo.shape[0]
        mass = pb.mass(lo, hi)
        fair = np.all(bd.lower > pb.tol, axis=1) | np.all(bd.upper < -pb.tol, axis=1)
        unfair = np.any(own.lower > pb.tol, axis=1) & np.any(own.upper < -pb.tol, axis=1) & ~fair
        self.cert += float(mass[fair].sum())
        self.fal += float(mass[unfair].sum())
        rows = np.flatnonzero(~(fair | unfair))
        if not rows.size:
            return []
        lo, hi, mass = lo[rows], hi[rows], mass[rows]
        score = own.sens[rows] * (hi - lo)
        src = rows  # each remaining box's row in the bounds
        pending = []
        if not pb.has_eps:
            cuts = cut_boxes(own, rows, lo, hi, pb.discrete, pb.tol)
            if cuts.src.size:
                m = pb.mass(cuts.lo, cuts.hi)
                self.cert += float(m[cuts.fair].sum())
                self.fal += float(m[cuts.unfair].sum())
                self.counts.cuts += int(cuts.cut.sum())
                rest = ~(cuts.fair | cuts.unfair)
                pending.append((cuts.lo[rest], cuts.hi[rest]))
                keep = ~cuts.cut
                lo, hi, mass, score, src = lo[keep], hi[keep], mass[keep], score[keep], src[keep]
        if lo.shape[0]:
            has_cex, carved = self._search(lo, hi, mass)
            if carved is not None:
                keep, plo, phi = carved
                lo, hi, mass, score, has_cex = lo[keep], hi[keep], mass[keep], score[keep], has_cex[keep]
                src = src[keep]
                pending.append((plo, phi))
            fair, unfair = self._credit(bd, own, src, lo, hi)
            fair, unfair = fair * mass, unfair * mass
            # boxes holding a counterexample can never be certified whole: refine them later
            open_ = mass - fair - unfair
            self._push(lo, hi, mass, score, np.where(has_cex, HOPELESS * open_, open_), fair, unfair)
        return [p for p in pending if p[0].shape[0]]

    def _credit(self, bd, own, src, lo, hi) -> tuple[np.ndarray, np.ndarray]:
        """Shares of the boxes (rows `src` of the bounds) proven fair and unfair by their forms."""
        pb = self.pb
        if pb.weights is not None:  # the tail bounds hold for points uniform in a box
            return np.zeros(lo.shape[0]), np.zeros(lo.shape[0])
        t = time.perf_counter()
        fair_forms = None
        if pb.has_eps:
            # a point is fair when its whole epsilon-window is: the forms' worst case over it
            a = bd.form_a[:, src]
            fair_forms = (a, bd.form_c[:, src] - (np.abs(a) * pb.eps).sum(axis=3))
        shares = decided_shares(own.form_a[:, src], own.form_c[:, src], lo, hi, pb.discrete, pb.tol, fair_forms)
        self.counts.t_credit += time.perf_counter() - t
        return shares

    def _push(self, lo, hi, mass, score, prio, fair, unfair) -> None:
        pb = self.pb
        width = hi - lo
        can = np.where(pb.discrete, width > 0, width > self.min_real)
        score = np.where(can, score, -1.0)
        fallback = np.where(can, width / np.maximum(pb.hi - pb.lo, 1e-300), -1.0)
        best = np.argmax(score, axis=1)
        r = np.arange(lo.shape[0])
        flat = score[r, best] <= 0
        best[flat] = np.argmax(fallback[flat], axis=1)
        ok = can.any(axis=1)
        self.pool.push(lo[ok], hi[ok], mass[ok], best[ok], prio[ok], fair[ok], unfair[ok])
        if (~ok).any():
            self.stuck_lo.append(lo[~ok])
            self.stuck_hi.append(hi[~ok])

    # ----- evidence ----------------------------------------------------------------------------
    def _search(self, lo, hi, mass):
        """Probe undecided boxes at random points; grow proven-unfair boxes around what is found.

        Returns which boxes hold a counterexample and, when some boxes were carved, (kept-box mask,
        carved pieces).
        """
        pb = self.pb
        n = lo.shape[0]
        x = draw_points(self.rng, pb, np.tile(lo, (PROBES, 1)), np.tile(hi, (PROBES, 1)))
        z, bad, a, b = twin_split(pb, x)
        self.probes += x.shape[0]
        self.probe_hits += int(bad.sum())
        has = bad.reshape(PROBES, n).any(axis=0)
        if not has.any():
            return has, None
        # one probe per box: the first unfair one
        first = np.argmax(bad.reshape(PROBES, n), axis=0)
        idx = np.flatnonzero(has)
        j = first[idx] * n + idx
        self._record(x[j], x[j], a[j], b[j])
        x, a, b = x[j], a[j], b[j]
        z = z[j]
        points = self._grow_points()
        if not points:
            return has, None
        m = np.arange(idx.size)
        strong = (z[m, a] > pb.tol) & (z[m, b] < -pb.tol) & (mass[idx] > 1)
        m = m[strong]
        if not m.size:
            return has, None
        m = m[np.argsort(-mass[idx[m]])[:points]]
        r = idx[m]
        t = time.perf_counter()
        glo, ghi, ok = grow(pb, x[m], a[m], b[m], lo[r], hi[r], self.chunk)
        self.counts.boxes_bounded_grow += int(m.size) * (1 + pb.d * RADII)
        gm = pb.mass(glo, ghi)
        use = ok & (gm > 1)
        self.counts.grow_calls += 1
        self.counts.t_grow += time.perf_counter() - t
        if not use.any():
            return has, None
        r, glo, ghi, gm = r[use], glo[use], ghi[use], gm[use]
        self.fal += float(gm.sum())
        self.counts.boxes_grown += int(r.size)
        plo, phi = carve(lo[r], hi[r], glo, ghi, pb.discrete)
        keep = np.ones(lo.shape[0], dtype=bool)
        keep[r] = False
        return has, (keep, plo, phi)

    def _grow_points(self) -> int:
        """Counterexamples to grow unfair boxes around now: GROW_BATCH while growth stays within its
        share of the time, or as many as the budget in boxes pays for (1 + d * RADII each)."""
        if self.grow_budget is None:
            return GROW_BATCH if self.counts.t_grow <= GROW_SHARE * (time.perf_counter() - self.t0) else 0
        left = self.grow_budget - self.counts.boxes_bounded_grow
        return int(min(GROW_BATCH, max(0.0, left) // (1 + self.pb.d * RADII)))

    def _record(self, x, xp, a, b) -> None:
        for i in range(x.shape[0]):
            key = x[i].tobytes() + xp[i].tobytes()
            if key not in self.cex:
                self.cex_found += 1
                if len(self.cex) < CEX_STORE:
                    self.cex[key] = (x[i].copy(), xp[i].copy(), int(a[i]), int(b[i]))

    def _exact(self, lo: np.ndarray, hi: np.ndarray) -> None:
        pb = self.pb
        t = time.perf_counter()
        if pb.has_eps:
            elo, ehi = pb.enlarge(lo, hi)
            pts = np.prod(ehi - elo + 1, axis=1)
        else:
            pts = np.prod(hi - lo + 1, axis=1)
        if lo.shape[0] == 1 and pts[0] > EXACT_POINTS // 4 and not pb.has_eps:
            # a whole small domain: enumerate it in slices of its first splittable feature
            self._exact_slices(lo[0], hi[0])
        else:
            start = 0
            csum = np.cumsum(pts)
            while start < lo.shape[0]:
                base = csum[start - 1] if start else 0
                end = max(start + 1, int(np.searchsorted(csum, base + EXACT_POINTS // 4, side="right")))
                res = exact_boxes(pb, lo[start:end], hi[start:end])
                m = pb.mass(lo[start:end], hi[start:end])
                self.fal += float(res.unfair.sum())
                self.cert += float((m - res.unfair).sum())
                self._record(res.cex_x, res.cex_xp, res.cex_a, res.cex_b)
                start = end
        self.counts.boxes_exact += lo.shape[0]
        self.counts.points_exact += int(pts.sum())
        self.counts.t_exact += time.perf_counter() - t

    def _exact_slices(self, lo: np.ndarray, hi: np.ndarray) -> None:
        i = int(np.argmax(hi - lo))
        for v in np.arange(lo[i], hi[i] + 1):
            a, b = lo.copy(), hi.copy()
            a[i] = b[i] = v
            res = exact_boxes(self.pb, a[None], b[None])
            self.fal += float(res.unfair.sum())
            self.cert += float(self.pb.mass(a[None], b[None]).sum() - res.unfair.sum())
            self._record(res.cex_x, res.cex_xp, res.cex_a, res.cex_b)

    # ----- reporting ---------------------------------------------------------------------------
    def shares(self) -> tuple[float, float, float]:
        size = self.pb.domain_size
        fair, unfair = self.pool.credited()
        cert, fal = (self.cert + fair) / size, (self.fal + unfair) / size
        if self._open_mass() == 0:  # everything decided: the certified share is the exact rest
            return 1.0 - fal, fal, 0.0
        return cert, fal, max(0.0, 1.0 - cert - fal)

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
                boxes=self.counts.boxes_bounded + self.counts.boxes_exact,
            )
        )

    def counterexamples(self, limit: int) -> list[Counterexample]:
        """Stored counterexamples, re-checked on the real model (pairs it labels differently)."""
        items = list(self.cex.values())
        if not items:
            return []
        pb = self.pb
        x = np.array([c[0] for c in items])
        xp = np.array([c[1] for c in items])
        a = np.array([c[2] for c in items])
        b = np.array([c[3] for c in items])
        X, XP = pb.full(x, a), pb.full(xp, b)
        o, op = self.network.logit(X), self.network.logit(XP)
        real = np.flatnonzero(((o > 0) != (op > 0)) & pb.pairs[a, b])
        return [Counterexample(X[i].tolist(), XP[i].tolist(), float(o[i]), float(op[i])) for i in real[:limit]]

    def result(self, time_limit: float | None, confidence: float, max_counterexamples: int) -> Result:
        pb = self.pb
        cert, fal, und = self.shares()
        t_refine = time.perf_counter() - self.t0
        lo, hi, mass = self._undecided_boxes()
        deadline = None if time_limit is None else self.t0 + time_limit
        # the samples cover the undecided boxes whole, credits included: start from the boxes
        # decided whole, then keep the interval inside the sound one (which holds the truth surely)
        est = Sampler(pb, self.rng, confidence, SAMPLE_HALFWIDTH).estimate(
            lo, hi, mass, self.fal / pb.domain_size, deadline, self.chunk
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
        elapsed = time.perf_counter() - self.t0
        st: dict[str, Any] = self.counts.to_dict() | self.stats
        bounded = self.counts.boxes_bounded + self.counts.boxes_bounded_grow
        credited_fair, credited_unfair = self.pool.credited()
        st.update(
            elapsed_refine_s=t_refine,
            peak_pool=self.pool.peak,
            pool=len(self.pool),
            twins=pb.n_twins,
            counterexamples_found=self.cex_found,
            boxes_per_s=bounded / max(t_refine, 1e-9),
            twin_boxes_per_s=bounded * pb.n_twins / max(t_refine, 1e-9),
            tolerance=pb.tol,
            full_crown=self.tight,
            credited_fair=credited_fair / pb.domain_size,
            credited_unfair=credited_unfair / pb.domain_size,
        )
        dom = self.prop.domain
        return Result(
            verdict=verdict,
            certified=cert,
            falsified=fal,
            undecided=und,
            domain_size=pb.domain_size,
            counterexamples=cexs,
            statistical=est,
            elapsed_s=elapsed,
            engine="network-boxes",
            model=self.network.source,
            protected=self.prop.protected_names,
            epsilon=self.prop.epsilon_by_name,
            stats=st,
            feature_names=dom.names,
            epsilon_semantics=epsilon_semantics(self.prop),
            stopped=self.stopped,
        )

    def _undecided_boxes(self):
        lo, hi, mass = self.pool.arrays()
        if self.stuck_lo:
            slo = np.concatenate(self.stuck_lo)
            shi = np.concatenate(self.stuck_hi)
            lo, hi = np.concatenate([lo, slo]), np.concatenate([hi, shi])
            mass = np.concatenate([mass, self.pb.mass(slo, shi)])
        return lo, hi, mass


def epsilon_semantics(prop: IndividualFairness) -> str:
    """What a twin may do, for the result's JSON: take another protected combination (fairness,
    non-protected features within epsilon) or keep it (robustness: every feature within epsilon)."""
    return "robustness" if prop.robustness else "other_protected_value"


def answer(network: ReluNetwork, prop: IndividualFairness, options: Any, progress: Progress | None = None) -> Result:
    """Registry entry point: `verify_network` with the command's options."""
    from .resume import checkpoint_for

    if prop.kappa is not None:
        raise PropertyError("kappa is supported for tree ensembles, not for networks")
    return verify_network(
        network,
        prop,
        time_limit=options.time_limit,
        target_undecided=options.target_undecided,
        confidence=options.confidence,
        seed=options.seed,
        max_counterexamples=options.max_counterexamples,
        progress=progress,
        parallel=Parallelism.of(options.workers, options.ray_address),
        max_boxes=options.max_boxes,
        checkpoint=checkpoint_for(network, prop, options),
        resume=bool(options.resume),
        memory_limit=options.memory_limit,
    )
