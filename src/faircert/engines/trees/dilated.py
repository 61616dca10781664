"""Exact epsilon > 0 fairness and robustness of tree ensembles, by one box refinement.

Boxes B of the measured features are refined until every slice v (protected combination; one
slice for robustness) of B is settled, and each settled (B, v) is counted at once, so the bounds
tighten from the first second:

* not confident: the margin bounds over B in v decide |margin| <= c;
* fair: B is confident with label l in v and the bounds over the epsilon-neighbourhood D(B) decide
  label l in every twin slice (the other slices; v itself for robustness);
* unfair: some twin slice has label -l over B itself (x keeps its other features), or, for
  robustness, over the core of B (the points within epsilon of every point of B);
* otherwise B is cut: at the widest tree's cutting node while its own label is open, else at a
  boundary b +- epsilon inside B (the median of the feature with most), which is where the
  neighbourhoods of its points start or stop reaching b.
When no b +- epsilon lies inside B, every point of B reaches the same cells of the ensemble's
partition, so a search of D(B) for a point of label -l decides all of B at once: that search is
exact (it refines D(B) down to single cells when needed) and the cell it finds is the twin box.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...checkpoint import pack, unpack
from ...errors import PropertyError
from ...models.trees import TreeEnsemble
from ..boxes.budget import Budget
from ..boxes.frontier import OpenParts, RawBoxes
from ..boxes.shards import Saving, Settler, Shard, Step
from .boxes import NormalisedTrees, Partition, inner_points
from .joint import SliceBounds, SliceModel, _in_slice, slice_status
from .run import Tally, TreeRun, refine_into


def dilated_quantify(
    run: TreeRun, tally: Tally, slo: np.ndarray, saving: Saving | None = None, chunk: int = 512
) -> tuple:
    """Fill `tally` (nonconf, settled, unfair, boxes, examined); return (complete, twin boxes, pieces
    lo, hi, twin, open boxes): the open boxes as a sequence of (lo, hi, open slices) chunks (None when
    the workers held more than this process may gather). `slo`: the slices' start boxes.

    The refinement runs in shards (`boxes.shards`): here, or on local processes or a Ray cluster as
    the options' `parallel` says, each worker keeping its share of the open boxes; their
    `max_boxes` stops it at the end of the first level of box sizes by which that many boxes were
    examined (then the same for any worker count, when the time limit does not cut it first). With
    `saving` it writes checkpoints and goes on from the state it holds (`shards.refine`)."""
    prop, width = run.prop, len(run.dlo)
    prot = [] if prop.robustness else list(prop.protected)
    free = np.ones(width, dtype=bool)
    free[prot] = False
    # the neighbourhood searches run on the workers, maybe other machines: their deadline is on the wall clock
    wall = time.time() + (run.deadline - time.monotonic()) if np.isfinite(run.deadline) else math.inf
    model = SliceModel(run.ir, run.nt, prot, slo, run.c, prop.kappa, run.tol)
    neighbourhoods = Neighbourhoods(prop.robustness, run.eps, run.dlo, run.dhi, _candidates(run.nt, run.eps, free))
    settler = DilatedSettler(model, neighbourhoods, wall)
    out = refine_into(run, tally, Shard(settler, free, chunk, None, _Pieces(width)), saving)
    open_parts = (
        OpenParts(RawBoxes(width), out.open_entries).map(_open_slices) if out.open_entries is not None else None
    )
    pieces = out.region
    assert isinstance(pieces, _Pieces)  # the store this refinement gave its shard
    return (out.complete,) + pieces.result() + (open_parts,)


@dataclass(frozen=True)
class Neighbourhoods:
    """Who the twins of a point are: every feature within `eps` (robustness), or the other slices
    with the measured features within `eps` (fairness), inside the domain box [dlo, dhi); and
    `candidates`, per feature, the positions b +- eps of the split boundaries b (`_candidates`)."""

    robustness: bool
    eps: np.ndarray
    dlo: np.ndarray
    dhi: np.ndarray
    candidates: list[np.ndarray]


class DilatedSettler(Settler):
    """The work on one chunk of boxes, runnable in a worker process (it holds the model once).

    `settle(lo, hi, settled)` takes boxes with their settled slices (None: none settled, the
    domain box the refinement starts from) and returns a `shards.Step`: the sizes newly settled
    (per box, exact to add in any order), the unfair pieces found (arguments of `_Pieces.add`) and
    the boxes left open with their settled slices. `deadline` (epoch seconds, `time.time`; inf:
    none) cuts the neighbourhood searches: a search cut off leaves its box whole and open."""

    def __init__(self, model: SliceModel, hoods: Neighbourhoods, deadline: float = math.inf) -> None:
        self.model, self.hoods, self.deadline = model, hoods, deadline
        self.free = np.ones(len(hoods.dlo), dtype=bool)
        self.free[model.prot] = False
        self._sb: SliceBounds | None = None
        self.open_data = ((bool, (len(model.slo),)),)  # an open box's settled slices

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_sb": None}  # rebuilt in the worker: cheaper than sending it

    def settle(self, lo: np.ndarray, hi: np.ndarray, settled: np.ndarray | None = None) -> Step:
        model, hoods = self.model, self.hoods
        if self._sb is None:
            self._sb = SliceBounds(model.nt, model.prot, model.slo)
        nt, sb, prot, slo, tol = model.nt, self._sb, model.prot, model.slo, model.tol
        robustness, eps, dlo, dhi = hoods.robustness, hoods.eps, hoods.dlo, hoods.dhi
        n_sl = len(slo)
        if settled is None:
            settled = np.zeros((len(lo), n_sl), dtype=bool)
        found = _Pieces(lo.shape[1])
        label, conf, spread, widest = slice_status(model, sb, lo, hi)
        dlo_b, dhi_b = np.maximum(dlo, lo - eps), np.minimum(dhi, hi + eps)
        hood = _Hood(dlo_b, dhi_b, *_labels(nt, sb, dlo_b, dhi_b, tol, widest=True))
        size = np.prod(np.where(self.free, hi - lo, 1.0), axis=1)
        own = (conf == 1) & (label != 0)
        if robustness:
            twin_fair = hood.label == label
            klo, khi = _core(nt, lo, hi, eps, dlo, dhi)
            core = np.all(klo < khi, axis=1)
            klabel = np.zeros_like(label)
            if core.any():
                klabel[core] = _labels(nt, sb, klo[core], khi[core], tol)
            twin_unfair = own & (klabel == -label)
            twin_of = np.zeros(label.shape, dtype=np.int64)
        else:
            # fair: every other slice decided l over D(B); unfair: some other slice -l over B itself
            twin_fair = np.ones_like(own)
            twin_unfair = np.zeros_like(own)
            twin_of = np.zeros(label.shape, dtype=np.int64)
            for v in range(n_sl):
                others = np.arange(n_sl) != v
                twin_fair[:, v] = (hood.label[:, others] == label[:, v, None]).all(axis=1)
                opp = (label == -label[:, v, None]) & others
                twin_unfair[:, v] = own[:, v] & opp.any(axis=1)
                twin_of[:, v] = np.argmax(opp, axis=1)
        new = ~settled
        fair = new & own & twin_fair & ~twin_unfair
        unfair = new & twin_unfair
        nonconf = new & (conf == -1)
        if not robustness and unfair.any():
            rows, vs = np.nonzero(unfair)
            tw = twin_of[rows, vs]
            found.add(*_in_slice(lo[rows], hi[rows], slo[vs], prot), *_in_slice(lo[rows], hi[rows], slo[tw], prot))
        if robustness and unfair.any():
            rows = np.nonzero(unfair[:, 0])[0]
            found.add(lo[rows], hi[rows], klo[rows], khi[rows])
        # (B, v) decided own but open twins, with no b +- eps inside B: search D(B) exactly
        open_twins = new & own & ~fair & ~unfair
        inside = _count_inside(hoods.candidates, lo, hi)
        finest = open_twins & (inside.sum(axis=1) == 0)[:, None]
        recut_f, recut_b = np.zeros(len(lo), dtype=np.int64), np.full(len(lo), np.nan)
        if finest.any():
            f_fair, f_unfair, recut_f, recut_b = self._decide_finest(label, lo, hi, hood, finest, found)
            fair |= f_fair
            unfair |= f_unfair
        settled = settled | fair | unfair | nonconf
        done = settled.all(axis=1)
        # per box, the size of its newly settled slices of each kind (the shards add them exactly)
        step = Step(
            {"nonconf": _terms(size, nonconf), "settled": _terms(size, fair | unfair), "unfair": _terms(size, unfair)},
            int(done.sum()),
            found.arguments(),
            (np.zeros((0, lo.shape[1])), np.zeros((0, lo.shape[1])), np.zeros((0, n_sl), dtype=bool)),
        )
        keep = ~done
        if not keep.any():
            return step
        lo, hi, settled = lo[keep], hi[keep], settled[keep]
        label, conf, spread, widest, inside = label[keep], conf[keep], spread[keep], widest[keep], inside[keep]
        # slices whose own status is still open
        own_open = ~settled & ((conf == 0) | ((conf == 1) & (label == 0))) & (spread > 0)
        f, b = self._split(lo, hi, own_open, spread, widest, inside)
        self._twin_cut(lo, hi, _Hood(*(a[keep] for a in hood)), own_open, f, b)
        recut = np.isfinite(recut_b[keep])  # a found cell out of some points' reach (rounding, reals)
        f[recut], b[recut] = recut_f[keep][recut], recut_b[keep][recut]
        rows = np.arange(len(lo))
        cut = b > lo[rows, f]  # no cut only after an interrupted search: the box goes back whole
        left_hi = hi.copy()
        left_hi[rows, f] = b
        right_lo = lo.copy()
        right_lo[rows, f] = b
        step.open = (
            np.concatenate([lo[~cut], lo[cut], right_lo[cut]]),
            np.concatenate([hi[~cut], left_hi[cut], hi[cut]]),
            np.concatenate([settled[~cut], settled[cut], settled[cut]]),
        )
        return step

    def _split(self, lo, hi, own_open, spread, widest, inside):
        """Cut at the widest tree's node where an open slice's own status is unknown (`own_open`),
        else at the median candidate of the feature with most candidates inside (boxes with
        neither stay whole)."""
        model, cand = self.model, self.hoods.candidates
        f = np.argmax(inside, axis=1)
        b = np.where(inside.max(axis=1) > 0, np.nan, lo[np.arange(len(lo)), f])
        for g in np.unique(f[np.isnan(b)]):
            r = np.nonzero(np.isnan(b) & (f == g))[0]
            i0 = np.searchsorted(cand[g], lo[r, g], "right")
            b[r] = cand[g][i0 + (inside[r, g] - 1) // 2]
        need = own_open.any(axis=1)
        if need.any():
            r = np.nonzero(need)[0]
            v = np.argmax(np.where(own_open[r], spread[r], -1.0), axis=1)
            vlo, vhi = _in_slice(lo[r], hi[r], model.slo[v], model.prot)
            f[r], b[r] = model.nt.cut(vlo, vhi, None, widest[r, v])
        return f, b

    def _twin_cut(self, lo, hi, hood: _Hood, own_open, f, b) -> None:
        """For boxes whose open slices only wait on twins: cut where the neighbourhoods start or stop
        reaching the first cutting node of the widest tree over D(B) in an undecided twin slice."""
        model, eps = self.model, self.hoods.eps
        twin_open = hood.label == 0
        r = np.nonzero(~own_open.any(axis=1) & twin_open.any(axis=1))[0]
        if not len(r):
            return
        w = np.argmax(twin_open[r], axis=1)
        vlo, vhi = _in_slice(hood.lo[r], hood.hi[r], model.slo[w], model.prot)
        g, c = model.nt.cut(vlo, vhi, None, hood.widest[r, w])
        for sign in (-1.0, 1.0):
            s = c + sign * eps[g]
            ok = (s > lo[r, g]) & (s < hi[r, g])
            f[r[ok]], b[r[ok]] = g[ok], s[ok]
            r, g, c = r[~ok], g[~ok], c[~ok]

    def _decide_finest(self, label, lo, hi, hood: _Hood, finest, out: _Pieces):
        """Settle (box, slice) pairs whose points all reach the same cells: fair iff no twin slice has
        a point of the other label in D(B) (exact search), else unfair with that point's cell as twin.

        On real features "all reach the same cells" holds up to the rounding of b +- epsilon: a cell
        the search finds is checked to be within epsilon of every point of B (`_reached`); where it
        is not, the pair stays open and the box gets a cut where its points stop reaching that cell.
        Returns (fair, unfair, cut feature, cut position; NaN where none). The searches stop at the
        settler's deadline: a pair whose search was cut off stays open.
        """
        model, hoods, sb = self.model, self.hoods, self._sb
        assert sb is not None  # built by `settle` before it decides
        nt, slo, prot, robustness, eps = model.nt, model.slo, model.prot, hoods.robustness, hoods.eps
        n, n_sl = label.shape
        fair = np.zeros((n, n_sl), dtype=bool)
        unfair = np.zeros((n, n_sl), dtype=bool)
        cut_f, cut_b = np.zeros(n, dtype=np.int64), np.full(n, np.nan)
        # one search per distinct (box, twin slice, wanted label)
        want = np.zeros((n, n_sl, 2), dtype=bool)  # [..., 0]: a -1 point wanted, [..., 1]: a +1 point
        for v in range(n_sl):
            rows = np.nonzero(finest[:, v])[0]
            side = (label[rows, v] < 0).astype(np.int64)  # label +1 wants -1 (index 0), -1 wants +1
            for w in [v] if robustness else [w for w in range(n_sl) if w != v]:
                want[rows, w, side] = True
        qr, qw, qs = np.nonzero(want)
        q_lo, q_hi = _in_slice(*_inward(nt, eps, hood.lo[qr], hood.hi[qr], hoods.dlo, hoods.dhi), slo[qw], prot)
        point, resolved = find_label(
            model.ir, nt, sb, q_lo, q_hi, qw, np.where(qs == 1, 1, -1), model.tol, self._expired
        )
        hit_q = np.isfinite(point[:, 0])
        clo, chi = np.full(point.shape, np.nan), np.full(point.shape, np.nan)
        if hit_q.any():
            clo[hit_q], chi[hit_q] = _in_slice(*cell_of(nt, point[hit_q]), slo[qw[hit_q]], prot)
            ok, f, b = _reached(nt, eps, lo[qr[hit_q]], hi[qr[hit_q]], clo[hit_q], chi[hit_q], prot)
            far = np.nonzero(hit_q)[0][~ok]
            cut_f[qr[far]], cut_b[qr[far]] = f[~ok], b[~ok]
            hit_q[far] = False
        found = np.zeros((n, n_sl, 2), dtype=bool)
        unknown = np.zeros((n, n_sl, 2), dtype=bool)
        where = np.full((n, n_sl, 2), -1)
        found[qr, qw, qs] = hit_q
        unknown[qr, qw, qs] = ~resolved | (np.isfinite(point[:, 0]) & ~hit_q)
        where[qr, qw, qs] = np.arange(len(qr))
        for v in range(n_sl):
            rows = np.nonzero(finest[:, v])[0]
            side = (label[rows, v] < 0).astype(np.int64)
            twins = [v] if robustness else [w for w in range(n_sl) if w != v]
            f = found[rows][:, twins, :][np.arange(len(rows)), :, side]  # (rows, twins)
            u = unknown[rows][:, twins, :][np.arange(len(rows)), :, side]
            hit = f.any(axis=1)
            clear = ~hit & ~u.any(axis=1)
            fair[rows[clear], v] = True
            unfair[rows[hit], v] = True
            if hit.any():
                r = rows[hit]
                k = where[r, np.array(twins)[np.argmax(f[hit], axis=1)], side[hit]]
                out.add(*_in_slice(lo[r], hi[r], slo[np.full(len(r), v)], prot), clo[k], chi[k])
        return fair, unfair, cut_f, cut_b

    def _expired(self) -> bool:
        return Budget(self.deadline, clock=time.time).spent()  # a worker's or Ray node's own wall clock


class _Hood(NamedTuple):
    """The epsilon-neighbourhoods D(B) of boxes (within the domain) with, per slice, the label their
    margin bounds decide (+1/-1, 0: none) and the tree of widest range."""

    lo: np.ndarray
    hi: np.ndarray
    label: np.ndarray
    widest: np.ndarray


def _terms(size: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per box with any slice in `mask`, its size times the number of those slices."""
    count = mask.sum(axis=1)
    return size[count > 0] * count[count > 0]


def _open_slices(chunk: tuple) -> tuple:
    """An open chunk of the refinement as (lo, hi, its boxes' open slices; None: all, as for the
    domain box the refinement starts from, which has no settled slices yet)."""
    lo, hi = chunk[:2]
    return lo, hi, (~chunk[2] if len(chunk) > 2 else None)


def _core(nt, lo, hi, eps, dlo, dhi):
    """The points within epsilon of every point of each box (as half-open boxes; empty where lo >= hi):
    [hi - 1 - e, lo + e] on integers, [hi - e, lo + e) on reals."""
    klo = np.where(nt.discrete, hi - 1.0 - eps, hi - eps)
    khi = np.where(nt.discrete, lo + eps + 1.0, lo + eps)
    return np.maximum(dlo, klo), np.minimum(dhi, khi)


def _labels(nt, sb, lo, hi, tol, widest: bool = False):
    """+1 / -1 where the bounds over the boxes decide the label in each slice, else 0 (and the
    tree with the widest range in each slice)."""
    out = np.zeros((len(lo), len(sb.prot_ok)), dtype=np.int8)
    wide = np.zeros((len(lo), len(sb.prot_ok)), dtype=np.int64)
    for v, (vmin, vmax) in enumerate(sb.bounds(lo, hi)):
        mlo, mhi = nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)
        out[:, v] = np.where(mlo > tol, 1, np.where(mhi < -tol, -1, 0))
        wide[:, v] = np.argmax(vmax - vmin, axis=1)
    return (out, wide) if widest else out


def _candidates(nt: NormalisedTrees, eps: np.ndarray, free: np.ndarray) -> list[np.ndarray]:
    """Per feature, the sorted positions b - eps and b + eps of every split boundary b (none if not free)."""
    inner = nt.node_left >= 0
    out = []
    for f in range(len(eps)):
        b = np.unique(nt.node_bound[inner & (nt.node_feat == f)]) if free[f] else np.zeros(0)
        out.append(np.unique(np.concatenate([b - eps[f], b + eps[f]])))
    return out


def _count_inside(cand, lo, hi) -> np.ndarray:
    """Number of candidate positions strictly inside each box, per feature."""
    out = np.zeros(lo.shape, dtype=np.int64)
    for f, cf in enumerate(cand):
        if len(cf):
            out[:, f] = np.searchsorted(cf, hi[:, f], "left") - np.searchsorted(cf, lo[:, f], "right")
    return out


def _inward(nt, eps, lo, hi, dlo, dhi) -> tuple[np.ndarray, np.ndarray]:
    """Neighbourhoods [lo - e, hi + e) whose ends were rounded (real features, inside the domain)
    moved one float inwards, so that they hold no point beyond the exact neighbourhood."""
    rounded = ~nt.discrete & (eps > 0)
    lo = np.where(rounded & (lo > dlo), np.nextafter(lo, np.inf), lo)
    hi = np.where(rounded & (hi < dhi), np.nextafter(hi, -np.inf), hi)
    return lo, hi


def _reached(nt, eps, lo, hi, clo, chi, prot):
    """Whether every point of each box [lo, hi) is within epsilon of the cell [clo, chi) on the
    non-protected features (up to a few floats for the rounding of b +- epsilon on real features),
    and otherwise a cut (feature, position) of the box where its points start or stop
    reaching the cell."""
    slack = np.where(nt.discrete, 0.0, 8 * np.spacing(np.maximum(np.abs(lo), np.abs(hi)) + eps))
    low = clo > lo + eps + slack  # points near lo do not reach up to the cell
    high = chi < hi - eps - slack  # points near hi do not reach down to it
    bad = low | high
    bad[:, prot] = False
    ok = ~bad.any(axis=1)
    f = np.argmax(bad, axis=1)
    rows = np.arange(len(lo))
    b = np.where(low[rows, f], clo[rows, f] - eps[f], chi[rows, f] + eps[f])
    lo_f, hi_f = lo[rows, f], hi[rows, f]
    # a position rounded onto the box's edge: cut one float inside it instead
    b = np.where(b <= lo_f, np.nextafter(lo_f, np.inf), np.where(b >= hi_f, np.nextafter(hi_f, -np.inf), b))
    return ok, f, b


def find_label(
    ir: TreeEnsemble,
    nt: NormalisedTrees,
    sb: SliceBounds,
    lo: np.ndarray,
    hi: np.ndarray,
    slices: np.ndarray,
    want: np.ndarray,
    tol: float,
    expired: Callable[[], bool] = lambda: Budget().spent(),
) -> tuple[np.ndarray, np.ndarray]:
    """A point of label `want` (+1/-1) in each box (in its slice), or a row of NaN if none, and
    whether each query was answered before the search `expired`. Boxes are cut at the widest tree's
    node until their bounds decide; single cells are decided by the model."""
    point = np.full(lo.shape, np.nan)
    resolved = np.ones(len(lo), dtype=bool)
    qid = np.arange(len(lo))
    while len(qid):
        if expired():
            resolved[qid] = ~np.isnan(point[qid, 0])
            break
        vmin, vmax = sb.bounds_at(lo, hi, slices)
        mlo, mhi = nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)
        lab = np.where(mlo > tol, 1, np.where(mhi < -tol, -1, 0))
        width = vmax - vmin
        mid = inner_points(nt, lo, hi)
        # a box with no float strictly inside on a real feature may hold only a boundary, which the
        # framework's rounding can send either way: no point is taken from it (it has no volume)
        thin = np.any(~nt.discrete & ((mid <= lo) | (mid >= hi)), axis=1)
        exact = (width.sum(axis=1) <= 0) & (lab == 0) & ~thin
        if exact.any():
            lab[exact] = np.where(ir.predict(mid[exact]) == 1, 1, -1)
        hit = (lab == want) & np.isnan(point[qid, 0]) & ~thin
        for k in np.nonzero(hit)[0]:  # first hit per query
            if np.isnan(point[qid[k], 0]):
                point[qid[k]] = mid[k]
        live = (lab == 0) & np.isnan(point[qid, 0]) & ~(thin & (width.sum(axis=1) <= 0))
        if not live.any():
            break
        lo, hi, want, qid, slices, width = lo[live], hi[live], want[live], qid[live], slices[live], width[live]
        f, b = nt.cut(lo, hi, None, np.argmax(width, axis=1))
        rows = np.arange(len(lo))
        left_hi = hi.copy()
        left_hi[rows, f] = b
        right_lo = lo.copy()
        right_lo[rows, f] = b
        lo, hi = np.concatenate([lo, right_lo]), np.concatenate([left_hi, hi])
        want, qid, slices = (np.concatenate([a, a]) for a in (want, qid, slices))
    return point, resolved


def cell_of(nt: NormalisedTrees, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cell of the ensemble's partition (intersection of one leaf box per tree) holding each point."""
    lo = np.full(x.shape, -np.inf)
    hi = np.full(x.shape, np.inf)
    for llo, lhi in zip(nt.leaf_lo, nt.leaf_hi):
        inside = np.all((llo[None] <= x[:, None]) & (x[:, None] < lhi[None]), axis=2)
        leaf = np.argmax(inside, axis=1)
        lo = np.maximum(lo, llo[leaf])
        hi = np.minimum(hi, lhi[leaf])
    return lo, hi


class _Pieces:
    """Unfair boxes (own slice fixed) and the twin box each point of a piece has a twin in: the
    region store of the sharded refinement (`add`, `absorb`, `nbytes`, `found`)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.count = 0
        self.nbytes = 0
        self.merged = False  # holds pieces absorbed from other stores (workers' shares)

    @property
    def found(self) -> int:
        """Pieces found."""
        return self.count

    def add(self, plo, phi, tlo, thi) -> None:
        if len(plo):
            self.parts.append((plo, phi, tlo, thi))
            self.count += len(plo)
            self.nbytes += plo.nbytes + phi.nbytes + tlo.nbytes + thi.nbytes

    def absorb(self, other: _Pieces) -> None:
        """Add the pieces another store holds: a worker's part of the region."""
        for part in other.parts:
            self.add(*part)
        self.merged = True

    def state(self) -> dict:
        """The pieces and their twin boxes as JSON for a checkpoint."""
        return {"pieces": [pack(a) for a in self.arguments() or (np.zeros((0, self.width)),) * 4]}

    def restore(self, state: dict, dlo: np.ndarray, dhi: np.ndarray) -> None:
        """Add the pieces a checkpoint's `state` holds (as a worker's part, `absorb`), every box
        checked to lie in the domain box [dlo, dhi]."""
        try:
            arrays = state["pieces"]
            if not isinstance(arrays, list) or len(arrays) != 4:
                raise ValueError("not four arrays of pieces")
            boxes = [unpack(a, "f8", self.width) for a in arrays]
        except (KeyError, TypeError, ValueError) as exc:
            raise PropertyError(
                f"checkpoint: its unfair pieces are incomplete or malformed ({str(exc)[:80]})"
            ) from None
        if not (
            all(b.shape == boxes[0].shape for b in boxes)
            and all(np.all(b >= dlo) and np.all(b <= dhi) for b in boxes)
            and all(np.all(a <= b) for a, b in (boxes[:2], boxes[2:]))
        ):
            raise PropertyError("checkpoint: its unfair pieces do not fit this domain")
        saved = _Pieces(self.width)
        saved.add(*boxes)
        self.absorb(saved)

    def arguments(self) -> tuple:
        """The pieces as one call's arguments of `add` (empty: none)."""
        if not self.parts:
            return ()
        return self.parts[0] if len(self.parts) == 1 else tuple(np.concatenate(a) for a in zip(*self.parts))

    def result(self):
        """(twin boxes as a Partition, pieces lo, pieces hi, each piece's twin index). After a run
        on workers, or one resumed from a checkpoint, the pieces come sorted by their lower corner
        (then upper): an order that does not depend on how the boxes were dealt; those of one
        process keep the order they were found in."""
        if self.parts:
            plo, phi, tlo, thi = (np.concatenate(a) for a in zip(*self.parts))
        else:
            plo = phi = tlo = thi = np.zeros((0, self.width))
        if self.merged and len(plo) > 1:
            order = np.lexsort(np.hstack([plo, phi]).T[::-1])
            plo, phi, tlo, thi = plo[order], phi[order], tlo[order], thi[order]
        return Partition.of_twins(tlo, thi), plo, phi, np.arange(len(tlo))
