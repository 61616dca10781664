"""Quantification: any-time bounds on the epsilon-kappa fairness / robustness measure of a tree ensemble.

Semantics (DESIGN.md, notes on the tree-ensemble paper): the measured population is X_kappa, the
inputs whose own confidence exceeds kappa (all inputs when kappa is not given). An input x of
X_kappa is unfair when some twin x' (fairness: any other combination of protected values and every
other feature within epsilon; robustness: every feature within epsilon) gets the other label.
M = 1 - |X_unfair| / |X_kappa|, sizes by grid counts (integer features) and volume (real ones).

How (no grid enumeration, no solver), by box refinement with margin bounds (the partial sum of
the trees' reachable leaf ranges):
1. Epsilon 0 fairness: one refinement of the non-protected features; a box is settled once every
   protected combination's label and confidence are decided on it (`joint`).
2. Epsilon > 0 or robustness: one refinement in which each (box, protected
   combination) is settled as soon as its own verdict and its twins' (over the box's epsilon-
   neighbourhood) are decided; boxes whose points all reach the same cells are decided by an exact
   search of the neighbourhood (`dilated`).
3. The region path, region by region: for every protected combination v, split the
   region tree by tree into boxes on which the label and the confidence status are constant
   (`boxes.partition`); the unfair part of the confident l-boxes of v is their intersection
   with the union of the epsilon-dilated (1-l)-boxes of the other slices, sized exactly by a k-d
   recursion (`union.covered`).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import PropertyError
from ...models.trees import TreeEnsemble
from ...progress import Progress, ProgressEvent
from ...properties import IndividualFairness
from ..boxes.budget import DONE, MEMORY_LIMIT, Budget
from ..boxes.shards import Saving
from .boxes import (
    NEG,
    POS,
    NormalisedTrees,
    Partition,
    domain_box,
    inner_points,
    normalise,
    partition,
)
from .dilated import dilated_quantify
from .joint import joint_quantify
from .leafsplit import check_split
from .resume import known_bounds, save_regions, saving_for
from .run import DEFAULTS, Tally, TreeOptions, TreeRun
from .unfair import UnfairBoxes
from .union import covered

MAX_SLICES = 100_000


@dataclass
class Quantification:
    """Everything the engine established: sizes, bounds, and the unfair region as disjoint boxes."""

    total: float
    nonconf: float  # size proven not confident
    conf_settled: float  # size of confident boxes whose unfair part is known
    unfair: float  # proven unfair size
    unfair_upper_extra: float  # unfair size that only near-tie twins could cause (0 without ties)
    complete: bool
    part: Partition
    piece_lo: np.ndarray  # unfair region, full input space
    piece_hi: np.ndarray
    piece_twin: np.ndarray  # index (into part) of a twin box for every point of the piece
    eps: np.ndarray
    discrete: np.ndarray
    protected: tuple[int, ...]
    robustness: bool
    kappa: float | None
    elapsed: float
    stats: dict = field(default_factory=dict)
    stopped: str = DONE  # why the quantification ended (`boxes.budget`)
    known: tuple[float, float] = (0.0, 1.0)  # bounds proven by an earlier phase (see `quantify`)
    # the undecided part of an unfinished refinement: chunks of boxes (lo, hi) with, per box, its
    # open slices (None: all open); see `open_boxes`
    open_parts: list | None = None
    slices: np.ndarray | None = None  # the slices' start boxes (protected values)
    # (confident, unfair) sizes settled outside the open boxes; None: conf_settled and unfair
    open_settled: tuple[float, float] | None = None
    nt: NormalisedTrees | None = None  # the trees the quantification ran on
    # epsilon 0: the unfair region as boxes stored once with their unfair slices (`unfair.UnfairBoxes`),
    # instead of piece_lo / piece_hi / piece_twin (then empty)
    unfair_boxes: UnfairBoxes | None = None

    @property
    def region_whole(self) -> bool:
        """Whether every proven unfair piece is kept (else only the largest, for counterexamples)."""
        return self.unfair_boxes is None or self.unfair_boxes.whole

    @property
    def n_pieces(self) -> int:
        return self.unfair_boxes.pieces if self.unfair_boxes is not None else len(self.piece_lo)

    def explicit(self) -> Quantification:
        """The same quantification with the unfair region as explicit pieces (one per box and unfair
        slice, each with its twin box): the layout of the region path, for small runs."""
        if self.unfair_boxes is None:
            return self
        plo, phi, tlo, thi = self.unfair_boxes.pieces_as_boxes()
        m = len(tlo)
        part = Partition.of_twins(tlo, thi)
        return dataclasses.replace(
            self, part=part, piece_lo=plo, piece_hi=phi, piece_twin=np.arange(m), unfair_boxes=None
        )

    def open_boxes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The open boxes as arrays (lo, hi, open slices: boxes x slices)."""
        assert self.slices is not None  # every path records its slices
        n, n_sl = len(self.eps), len(self.slices)
        parts = self.open_parts or []
        if not parts:
            return np.zeros((0, n)), np.zeros((0, n)), np.zeros((0, n_sl), dtype=bool)
        lo = np.concatenate([p[0] for p in parts])
        hi = np.concatenate([p[1] for p in parts])
        sl = np.concatenate([np.ones((len(p[0]), n_sl), dtype=bool) if p[2] is None else p[2] for p in parts])
        return lo, hi, sl

    @property
    def measured_upper(self) -> float:
        """Upper bound of |X_kappa| (exact once the partition is complete)."""
        return self.total - self.nonconf

    @property
    def bounds(self) -> tuple[float, float]:
        den = self.measured_upper
        # volumes (real features) are float sums: a residue of their rounding is no confident input
        if den <= (0.0 if self.discrete.all() else 1e-12 * self.total):
            return 1.0, 1.0
        lo = (self.conf_settled - self.unfair - self.unfair_upper_extra) / den
        hi = (den - self.unfair) / den
        hi = min(1.0, hi, self.known[1])
        return min(max(0.0, lo, self.known[0]), hi), hi  # (lo > hi only by rounding of volume sums)


def _epsilon(prop: IndividualFairness, discrete: np.ndarray) -> np.ndarray:
    eps = np.asarray(prop.epsilon, dtype=np.float64).copy()
    eps[discrete] = np.floor(eps[discrete] + 1e-9)  # |x - x'| <= e on integers means <= floor(e)
    return eps


def _slices(prop: IndividualFairness, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One start box per combination of protected values (one box for robustness)."""
    if prop.robustness or not prop.protected:
        return lo[None].copy(), hi[None].copy()
    ranges = [np.arange(lo[i], hi[i]) for i in prop.protected]
    count = int(np.prod([len(r) for r in ranges]))
    if count > MAX_SLICES:
        raise PropertyError(
            f"the protected features have {count} value combinations; at most {MAX_SLICES} "
            "are supported (protect fewer features or narrow their domains)"
        )
    combos = np.array(list(itertools.product(*ranges)), dtype=np.float64)
    slo = np.repeat(lo[None], len(combos), axis=0)
    shi = np.repeat(hi[None], len(combos), axis=0)
    for k, i in enumerate(prop.protected):
        slo[:, i] = combos[:, k]
        shi[:, i] = combos[:, k] + 1
    return slo, shi


def _regions(
    nt, lo: np.ndarray, hi: np.ndarray, ydims: np.ndarray, eps: np.ndarray, count: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split the domain into about `count` boxes, most complex first (most split cells), at the
    median boundary of the feature with most boundaries inside, only along measured features wide
    enough that a region's epsilon-margin stays small."""
    import heapq

    inner = nt.node_left >= 0
    bounds = {int(i): np.unique(nt.node_bound[inner & (nt.node_feat == i)]) for i in ydims}

    def entry(rlo, rhi):
        best, cut, cells = 0, None, 0.0
        for i, b in bounds.items():
            b = b[(b > rlo[i]) & (b < rhi[i])]
            cells += float(np.log1p(len(b)))
            if len(b) > best and rhi[i] - rlo[i] > 4 * eps[i] + 1:
                best, cut = len(b), (i, b[len(b) // 2])
        return (-cells, id(rlo), rlo, rhi, cut)

    heap = [entry(lo.copy(), hi.copy())]
    done: list[tuple[np.ndarray, np.ndarray]] = []
    while heap and len(heap) + len(done) < count:
        _, _, rlo, rhi, cut = heapq.heappop(heap)
        if cut is None:
            done.append((rlo, rhi))
            continue
        i, v = cut
        left_hi, right_lo = rhi.copy(), rlo.copy()
        left_hi[i], right_lo[i] = v, v
        heapq.heappush(heap, entry(rlo, left_hi))
        heapq.heappush(heap, entry(right_lo, rhi))
    return done + [(e[2], e[3]) for e in heap]


REGIONS_SHARE = 1 / 3  # of the time limit, for the region path before the refinement (method "auto")


def quantify(
    ir: TreeEnsemble,
    prop: IndividualFairness,
    time_limit: float | None = None,
    progress: Progress | None = None,
    options: TreeOptions = DEFAULTS,
) -> Quantification:
    """Quantify by one of the three paths of the module docstring.

    Epsilon 0 fairness always takes the joint refinement. Otherwise the options' `method` picks:
    "regions" (the region path: fastest to converge where it converges), "refinement" (bounds
    tighten from the start even where nothing converges) or "auto": with a box budget, the
    refinement; with a time limit, the region path for a third of the time, then, if it has not
    finished, the refinement for the rest, keeping the better of the two phases' bounds; the region
    path otherwise. The refinements
    (joint, and the epsilon > 0 / robustness refinement of "refinement" and of the second phase of
    "auto") run as `parallel` says and stop after examining `max_boxes` boxes (then the same for
    any worker count); the region path runs in this process and takes no box budget. With
    `keep_pieces` the joint refinement keeps only the unfair boxes holding that many largest pieces
    of the unfair region (enough for as many counterexamples; testing mode needs the whole region),
    so its memory goes to open boxes. `split` says how it cuts open boxes ("node" or "leaves",
    `leafsplit`).

    With a `checkpoint` (`checkpoint.Checkpoint`) the refinements write their state to it when one
    is due and at the end; with `resume` they go on from the state it holds (`resume`): a resumed
    "auto" run goes straight to its refinement, with the bounds its region path had proved.
    """
    if options.method not in ("auto", "regions", "refinement"):
        raise PropertyError(f"unknown method {options.method!r}; use 'auto', 'regions' or 'refinement'")
    t0 = time.monotonic()
    nt = normalise(ir, prop.domain)
    if time_limit:  # normalising a large ensemble takes seconds of the same budget
        time_limit = max(time_limit - (time.monotonic() - t0), 0.1 * time_limit)
    check_split(options.split)
    q = _quantify(_started(ir, nt, prop, time_limit, progress, options), time_limit, progress)
    q.nt = nt
    return q


def _started(ir, nt, prop, time_limit, progress, options: TreeOptions) -> TreeRun:
    """The run of the question `prop` on `ir` (normalised: `nt`), its clock started now."""
    t0 = time.monotonic()
    discrete = prop.domain.discrete_mask
    _, c, tol = ir.margin_view(prop.kappa)
    dlo, dhi = domain_box(prop.domain)
    total = float(np.prod(dhi - dlo))
    return TreeRun(
        ir=ir,
        nt=nt,
        prop=prop,
        c=c,
        tol=tol,
        dlo=dlo,
        dhi=dhi,
        eps=_epsilon(prop, discrete),
        discrete=discrete,
        total=total,
        t0=t0,
        deadline=t0 + time_limit if time_limit else np.inf,
        report=_reporter(progress, total, t0),
        options=options,
    )


def _quantify(run: TreeRun, time_limit, progress) -> Quantification:
    prop, options = run.prop, run.options
    ydims = np.array([i for i in range(len(run.dlo)) if prop.robustness or i not in prop.protected], dtype=np.int64)
    if not prop.robustness and prop.protected and not np.any(run.eps[ydims] > 0):
        return _quantify_joint(run, saving_for(options.checkpoint, options.resume, "joint", options.split))
    saving = saving_for(options.checkpoint, options.resume, "dilated")
    resumed = saving is not None and saving.state is not None
    # a box budget bounds the refinement only: "auto" then goes straight to it, so that the run's
    # work (and its answer) does not depend on the clock
    budgeted = options.max_boxes is not None
    if options.method == "refinement" or (options.method == "auto" and (time_limit or resumed or budgeted)):
        if saving is not None and resumed:  # the region path of "auto" ended before this state was written
            known = known_bounds(saving)
        elif options.method == "auto" and not budgeted:
            first_deadline = min(run.deadline, run.t0 + REGIONS_SHARE * time_limit)
            first = _quantify_regions(dataclasses.replace(run, deadline=first_deadline), ydims)
            if first.complete or first.stopped == MEMORY_LIMIT:  # (the refinement would hold more)
                first.stats.update(save_regions(saving, first.bounds, first.complete))
                return first
            known = first.bounds
        else:
            known = (0.0, 1.0)
        if saving is not None:
            saving.header["known"] = list(known)
        q = _quantify_dilated(dataclasses.replace(run, report=_reporter(progress, run.total, run.t0, known)), saving)
        q.known = known
        return q
    q = _quantify_regions(run, ydims)
    q.stats.update(save_regions(saving, q.bounds, q.complete))
    return q


def _quantify_regions(run: TreeRun, ydims: np.ndarray) -> Quantification:
    """Region by region, partition (each region plus its epsilon-margin) and measure the unfair part.

    Each finished region adds its confident size to `conf_settled` and its non-confident size to
    `nonconf`, so the bounds tighten monotonically; regions left when time runs out count as
    undecided.
    """
    ir, nt, prop, dlo, dhi, eps = run.ir, run.nt, run.prop, run.dlo, run.dhi, run.eps
    tally = Tally()
    parts: list[Partition] = []
    pieces_lo: list[np.ndarray] = []
    pieces_hi: list[np.ndarray] = []
    twins: list[np.ndarray] = []
    complete, offset = True, 0
    regions = _regions(nt, dlo, dhi, ydims, eps, run.options.regions)
    boxes = sorted(regions, key=lambda r: -float(np.prod(r[1] - r[0])))
    for rlo, rhi in boxes:  # largest first: the bounds tighten fastest
        if Budget(run.deadline).spent():
            complete = False
            break
        plo, phi = np.maximum(dlo, rlo - eps), np.minimum(dhi, rhi + eps)  # region and its twins
        slo, shi = _slices(prop, plo, phi)
        early = _early_accounting(run, tally, slo, rlo, rhi, ydims)
        part = _resolve_ties(ir, nt, prop, partition(nt, slo, shi, run.c, run.tol, run.deadline, on_done=early))
        n_twins = len(twins)
        # an unfinished partition adds nothing more than what `early` counted as it went
        done = part.complete and _measure_region(run, tally, part, rlo, rhi, ydims, (pieces_lo, pieces_hi, twins))
        if not part.complete:
            tally.boxes += len(part.lo)
        complete &= done and not part.tie.any()
        # keep only the twin boxes that pieces refer to (the partition itself can be large)
        used = np.unique(np.concatenate(twins[n_twins:])) if len(twins) > n_twins else np.zeros(0, np.int64)
        for k in range(n_twins, len(twins)):
            twins[k] = offset + np.searchsorted(used, twins[k])
        parts.append(
            Partition(
                part.lo[used],
                part.hi[used],
                part.start[used],
                part.label[used],
                part.confident[used],
                part.tie[used],
                part.complete,
                0.0,
            )
        )
        offset += len(used)
        run.report(tally)
        if part.memory_limited:
            tally.memory_limited = True
            break
    n = len(dlo)
    if tally.early_pieces:  # pieces proven unfair during the partition, with their twin boxes
        plo, phi, tlo, thi = (np.concatenate(a) for a in zip(*tally.early_pieces))
        pieces_lo.append(plo)
        pieces_hi.append(phi)
        twins.append(offset + np.arange(len(tlo)))
        parts.append(Partition.of_twins(tlo, thi))
    cat = lambda xs, shape, dt: np.concatenate(xs) if xs else np.zeros(shape, dtype=dt)
    part = Partition(
        cat([p.lo for p in parts], (0, n), float),
        cat([p.hi for p in parts], (0, n), float),
        cat([p.start for p in parts], (0,), np.int64),
        cat([p.label for p in parts], (0,), np.int64),
        cat([p.confident for p in parts], (0,), bool),
        cat([p.tie for p in parts], (0,), bool),
        complete,
        0.0,
    )
    pieces = (cat(pieces_lo, (0, n), float), cat(pieces_hi, (0, n), float), cat(twins, (0,), np.int64))
    q = _quantification(run, tally, complete, part, pieces, unfair_upper_extra=tally.extra)
    q.slices = _slices(prop, dlo, dhi)[0]
    q.stats = {
        "slices": len(q.slices),
        "boxes": int(tally.boxes),
        "pieces": len(q.piece_lo),
        "regions": len(parts),
        "kd_nodes": int(tally.kd),
        "terms": int(tally.terms),
        "near_tie_size": float(tally.tie_size),
        "memory_limited": bool(tally.memory_limited),
    }
    if not complete:  # no record of which boxes are settled: the estimate samples the whole space
        q.open_parts = [(dlo[None].copy(), dhi[None].copy(), None)]
        q.open_settled = (0.0, 0.0)
    return q


def _quantify_joint(run: TreeRun, saving: Saving | None) -> Quantification:
    """Epsilon 0 fairness: one joint partition of the non-protected features (`joint`)."""
    tally = Tally()
    slo, _ = _slices(run.prop, run.dlo, run.dhi)
    complete, region, open_parts = joint_quantify(run, tally, slo, saving)
    n = len(run.dlo)
    none = Partition(
        np.zeros((0, n)),
        np.zeros((0, n)),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        np.zeros(0, bool),
        np.zeros(0, bool),
        True,
        0.0,
        np.zeros(0, bool),
    )
    found = (complete, none, np.zeros((0, n)), np.zeros((0, n)), np.zeros(0, np.int64), open_parts)
    q = _refined(run, tally, found, slo)
    q.unfair_boxes = region
    q.stats.update(pieces=region.pieces, unfair_boxes=region.found, unfair_boxes_stored=region.boxes)
    return q


def _quantify_dilated(run: TreeRun, saving: Saving | None) -> Quantification:
    """Epsilon > 0 or robustness: one box refinement (`dilated`), run as the options' `parallel` says."""
    tally = Tally()
    slo, _ = _slices(run.prop, run.dlo, run.dhi)
    return _refined(run, tally, dilated_quantify(run, tally, slo, saving), slo)


def _refined(run: TreeRun, tally: Tally, found: tuple, slo: np.ndarray) -> Quantification:
    """The Quantification of a refinement's (complete, partition, pieces lo/hi, twins, open boxes)."""
    complete, part, plo, phi, twin, open_parts = found
    q = _quantification(
        run, tally, complete, part, (plo, phi, twin), unfair_upper_extra=0.0, open_parts=open_parts, slices=slo
    )
    q.stats = {
        "slices": len(slo),
        "boxes": int(tally.boxes),
        "pieces": len(plo),
        "regions": 1,
        "kd_nodes": 0,
        "terms": 0,
        "near_tie_size": 0.0,
        "memory_limited": bool(tally.memory_limited),
        "examined": int(tally.examined),
        "workers": int(tally.workers),
        "workers_restarted": int(tally.workers_restarted),
        "open_boxes_gathered": bool(tally.open_gathered),
    }
    if tally.checkpoints is not None:
        q.stats.update(checkpoints=int(tally.checkpoints), checkpoint_s=float(tally.checkpoint_s))
    return q


def _quantification(
    run: TreeRun, tally: Tally, complete: bool, part: Partition, pieces: tuple, **more: Any
) -> Quantification:
    """A path's Quantification: the run's sizes and property, `tally`'s counts, the unfair `pieces`
    (lo, hi, twin index into `part`) and `more` fields."""
    plo, phi, twin = pieces
    prop = run.prop
    return Quantification(
        total=run.total,
        nonconf=tally.nonconf,
        conf_settled=tally.settled,
        unfair=tally.unfair,
        complete=complete,
        part=part,
        piece_lo=plo,
        piece_hi=phi,
        piece_twin=twin,
        eps=run.eps,
        discrete=run.discrete,
        protected=tuple(prop.protected),
        robustness=prop.robustness,
        kappa=prop.kappa,
        elapsed=time.monotonic() - run.t0,
        stopped=_stopped(run, tally, complete),
        **more,
    )


def _stopped(run: TreeRun, tally: Tally, complete: bool) -> str:
    """Why a path ended: as its sharded refinement says, else by the run's limits now."""
    if tally.stopped != DONE:
        return tally.stopped
    return Budget(run.deadline).ended(complete, tally.memory_limited)


def _early_accounting(run: TreeRun, tally: Tally, slo, rlo, rhi, ydims):
    """Callback for `partition`: as boxes are settled, count their part inside the region right away
    when they are non-confident, confident with every twin provably of the same label (margin
    bounds of every other slice over the box's epsilon-neighbourhood decide that label), or, for
    fairness, confident with the same box in another slice provably of the other label (then every
    input of the box is unfair; the box becomes a piece of the unfair region)."""
    nt, prop, eps, dlo, dhi, tol = run.nt, run.prop, run.eps, run.dlo, run.dhi, run.tol
    prot = list(prop.protected)

    def bounds_in_slice(lo, hi, v):
        if not prop.robustness:
            lo, hi = lo.copy(), hi.copy()
            lo[:, prot] = slo[v, prot]
            hi[:, prot] = slo[v, prot] + 1.0
        vmin, vmax = nt.bounds(lo, hi)[:2]
        return nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)

    def on_done(lo, hi, st, label, conf, tie) -> np.ndarray:
        inside, clo, chi = _clip(lo, hi, rlo, rhi)
        size = np.where(inside, np.prod(chi - clo, axis=1), 0.0)
        certain = ~tie
        nonconf = certain & ~conf
        tally.nonconf += float(size[nonconf].sum())
        cand = np.nonzero(certain & conf & inside)[0]
        fair = np.zeros(len(lo), dtype=bool)
        unfair = np.zeros(len(lo), dtype=bool)
        if len(cand):
            nlo, nhi = lo[cand].copy(), hi[cand].copy()
            nlo[:, ydims] = np.maximum(dlo[ydims], nlo[:, ydims] - eps[ydims])
            nhi[:, ydims] = np.minimum(dhi[ydims], nhi[:, ydims] + eps[ydims])
            same = np.ones(len(cand), dtype=bool)
            lab = label[cand]
            for v in range(len(slo)):
                rows = np.arange(len(cand)) if prop.robustness else np.nonzero(st[cand] != v)[0]
                if not len(rows):
                    continue
                mlo, mhi = bounds_in_slice(nlo[rows], nhi[rows], v)
                same[rows] &= np.where(lab[rows] == POS, mlo > tol, mhi < -tol)
                if prop.robustness:
                    continue
                if np.any(eps[ydims] > 0):
                    mlo, mhi = bounds_in_slice(lo[cand][rows], hi[cand][rows], v)
                flip = np.where(lab[rows] == POS, mhi < -tol, mlo > tol) & ~unfair[cand[rows]]
                if flip.any():
                    k = cand[rows[flip]]
                    unfair[k] = True
                    twin_lo, twin_hi = lo[k].copy(), hi[k].copy()
                    twin_lo[:, prot] = slo[v, prot]
                    twin_hi[:, prot] = slo[v, prot] + 1.0
                    tally.early_pieces.append((clo[k], chi[k], twin_lo, twin_hi))
            fair[cand[same]] = True
            tally.settled += float(size[fair].sum() + size[unfair].sum())
            tally.unfair += float(size[unfair].sum())
        if nonconf.any() or fair.any() or unfair.any():
            run.report(tally)
        return fair | nonconf | unfair

    return on_done


def _clip(lo, hi, rlo, rhi):
    clo, chi = np.maximum(lo, rlo), np.minimum(hi, rhi)
    keep = np.all(clo < chi, axis=1)
    return keep, clo, chi


def _measure_region(
    run: TreeRun, tally: Tally, part: Partition, rlo, rhi, ydims, pieces: tuple[list, list, list]
) -> bool:
    """Add region [rlo, rhi)'s sizes to `tally` and its unfair part to `pieces` (lo, hi, twin index
    lists); False if it could not be finished."""
    prop, eps, deadline = run.prop, run.eps, run.deadline
    pieces_lo, pieces_hi, twins = pieces
    assert part.early is not None  # a partition of the region path marks its early pieces
    certain = ~part.tie
    inside, clo, chi = _clip(part.lo, part.hi, rlo, rhi)
    csize = np.where(inside, np.prod(chi - clo, axis=1), 0.0)
    tally.boxes += len(part.lo)
    tally.tie_size += float(csize[part.tie].sum())
    nonconf = float(csize[certain & ~part.confident & ~part.early].sum())
    lo_y, hi_y = part.lo[:, ydims], part.hi[:, ydims]
    dil_lo, dil_hi = lo_y - eps[ydims], hi_y + eps[ydims]
    r_lo, r_hi = rlo[ydims], rhi[ydims]
    settled = unfair = extra = 0.0
    complete = part.complete
    for v in range(int(part.start.max()) + 1 if len(part.start) else 0):
        for label in (POS, NEG):
            a_idx = np.nonzero(
                (part.start == v) & part.confident & certain & (part.label == label) & inside & ~part.early
            )[0]
            if not len(a_idx) or Budget(deadline).spent():
                complete &= not len(a_idx)
                continue
            other = np.ones(len(part.lo), dtype=bool) if prop.robustness else part.start != v
            u_idx = _dedupe(np.nonzero(other & certain & (part.label != label))[0], dil_lo, dil_hi)
            a_lo, a_hi = np.maximum(lo_y[a_idx], r_lo), np.minimum(hi_y[a_idx], r_hi)
            res = covered(a_lo, a_hi, dil_lo[u_idx], dil_hi[u_idx], deadline)
            tally.terms += 1
            tally.kd += res.regions
            complete &= res.complete
            settled += res.settled
            unfair += res.covered
            if res.piece_lo:
                pa = a_idx[np.concatenate(res.piece_a)]
                plo, phi = part.lo[pa].copy(), part.hi[pa].copy()
                plo[:, ydims], phi[:, ydims] = np.concatenate(res.piece_lo), np.concatenate(res.piece_hi)
                pieces_lo.append(plo)
                pieces_hi.append(phi)
                twins.append(u_idx[np.concatenate(res.piece_u)])
            t_idx = np.nonzero(other & part.tie)[0]
            if len(t_idx):
                both = np.concatenate([u_idx, t_idx])
                res_t = covered(a_lo, a_hi, dil_lo[both], dil_hi[both], deadline, keep_pieces=False)
                if res_t.complete and res.complete:
                    extra += max(0.0, res_t.covered - res.covered)
                else:  # unknown twins could make every settled input unfair
                    extra += res.settled - res.covered
                    complete = False
    if not complete:
        return False  # partial sums of an unfinished region are not used: its size stays undecided
    tally.nonconf += nonconf
    tally.settled += settled
    tally.unfair += unfair
    tally.extra += extra
    return True


def _resolve_ties(ir: TreeEnsemble, nt: NormalisedTrees, prop: IndividualFairness, part: Partition) -> Partition:
    """Decide near-tie boxes with the model's own arithmetic.

    Once the partition is complete, a tie box is one where every tree's reachable leaves share one
    value, so the model computes the same margin at each of its points: one point decides it.
    """
    tie = np.nonzero(part.tie)[0]
    if len(tie) == 0 or not part.complete:
        return part
    lo, hi = part.lo[tie], part.hi[tie]
    x = inner_points(nt, lo, hi)
    label, confident = part.label.copy(), part.confident.copy()
    label[tie] = np.where(ir.predict(x) == 1, POS, NEG)
    confident[tie] = ir.confidence(x) > prop.kappa if prop.kappa is not None else True
    return Partition(
        part.lo,
        part.hi,
        part.start,
        label,
        confident,
        np.zeros(len(part.lo), dtype=bool),
        part.complete,
        part.pending_size,
        part.early,
    )


def _dedupe(idx: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Drop twin boxes whose dilation repeats another's (slices often share boxes)."""
    if len(idx) < 2:
        return idx
    _, first = np.unique(np.hstack([lo[idx], hi[idx]]), axis=0, return_index=True)
    return idx[np.sort(first)]


def _reporter(progress, total: float, t0: float, known: tuple[float, float] = (0.0, 1.0)) -> Callable[[Tally], None]:
    def report(tally: Tally) -> None:
        if progress is None:
            return
        den = total - tally.nonconf
        lo = (tally.settled - tally.unfair - tally.extra) / den if den > 0 else 1.0
        hi = (den - tally.unfair) / den if den > 0 else 1.0
        lo, hi = max(lo, 0.0, known[0]), min(hi, known[1])
        progress(
            ProgressEvent(
                elapsed_s=time.monotonic() - t0,
                certified=lo,
                falsified=tally.unfair / den if den > 0 else 0.0,
                measure_lower=lo,
                measure_upper=hi,
                boxes=tally.boxes,
            )
        )

    return report


def check_not_vacuous(confident_size: float, complete: bool, prop: IndividualFairness) -> None:
    """A measure over no input certifies nothing: for users, say so instead of reporting it fair."""
    if complete and confident_size <= 0:
        raise PropertyError(
            f"no input of the domain is confident at kappa {prop.kappa:g} (the model's confidence "
            "never exceeds it), so the measure says nothing; choose a lower kappa"
        )
