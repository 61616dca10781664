"""Exact epsilon = 0 fairness of tree ensembles by one joint partition of the non-protected features.

With epsilon 0 the twins of x are the same non-protected values under every other protected
combination (slice), so there is no need for one label-constant partition per slice and a union
step: a box B of the non-protected features is settled as soon as, for every slice v, the margin
bounds over B (protected fixed to v) decide v's confidence and, for every confident slice, either
some other slice's label is decided opposite (all of B is unfair in v) or every other slice's label
is decided equal (all of B is fair in v). Open boxes are cut at the first cutting node of the
widest tree of the widest open slice, or, with `split="leaves"`, along every leaf of that tree
(`leafsplit`). A (box, slice) whose margin is constant (every tree at one
leaf) but near a threshold is decided by the model's own arithmetic at one point of the box.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...models.trees import TreeEnsemble
from ..boxes.frontier import BoxCodec, OpenParts
from ..boxes.shards import Saving, Settler, Shard, Step
from . import pairs
from .boxes import NormalisedTrees, PathChecks, inner_points
from .leafsplit import DEFAULT_SPLIT, LeafSplitter, check_split
from .run import Tally, TreeRun, refine_into
from .unfair import UnfairBoxes


def joint_quantify(
    run: TreeRun, tally: Tally, slo: np.ndarray, saving: Saving | None = None, chunk: int = 4096
) -> tuple:
    """Fill `tally` (nonconf, settled, unfair, boxes) and return (complete, unfair boxes, open boxes):
    the unfair region as `UnfairBoxes` (only the options' `keep_pieces` largest boxes when given),
    the open boxes, as a sequence of (lo, hi, None) chunks, undecided in every slice (None when the
    workers held more than this process may gather). `slo`: the slices' start boxes.

    The refinement runs in shards (`boxes.shards`): here, or on local processes or a Ray cluster as
    the options' `parallel` says, each worker keeping its share of the open boxes; their
    `max_boxes` stops it at the end of the first level of box sizes by which that many boxes were
    examined (then the same for any worker count). Open and unfair boxes are stored compactly
    (`BoxCodec`: indices into each feature's cut positions). Their `split` says how open boxes are
    cut (`leafsplit`). With `saving` it writes checkpoints and goes on from the state it holds
    (`shards.refine`)."""
    nt, prot = run.nt, list(run.prop.protected)
    free = np.ones(len(run.dlo), dtype=bool)
    free[prot] = False
    inner = nt.node_left >= 0
    codec = BoxCodec.for_cuts(run.dlo, run.dhi, nt.discrete, nt.node_feat[inner], nt.node_bound[inner])
    region = UnfairBoxes(codec, free, slo, prot, nt.discrete, run.options.keep_pieces)
    model = SliceModel(run.ir, nt, prot, slo, run.c, run.prop.kappa, run.tol)
    settler = JointSettler(model, free, check_split(run.options.split))
    out = refine_into(run, tally, Shard(settler, free, chunk, codec, region), saving)
    open_parts = OpenParts(codec, out.open_entries).map(_all_open) if out.open_entries is not None else None
    return out.complete, out.region, open_parts


def _all_open(chunk: tuple) -> tuple:
    """An open chunk of the joint refinement: every slice of its boxes is open."""
    return chunk[0], chunk[1], None


@dataclass(frozen=True)
class SliceModel:
    """The ensemble as the settlers of a refinement see it: the slices' start boxes `slo` (protected
    values at `prot`), the margin threshold `c` of confidence `kappa` (None: none) and the tolerance
    within which margin bounds decide nothing. Sent to every worker."""

    ir: TreeEnsemble
    nt: NormalisedTrees
    prot: list[int]
    slo: np.ndarray
    c: float | None
    kappa: float | None
    tol: float


class JointSettler(Settler):
    """The work on one chunk of boxes, runnable in a worker process (it holds the model once)."""

    def __init__(self, model: SliceModel, free: np.ndarray, split: str = DEFAULT_SPLIT) -> None:
        self.model, self.free, self.split = model, free, split
        self._sb: SliceBounds | None = None
        self._leaves: LeafSplitter | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_sb": None, "_leaves": None}  # rebuilt in the worker: cheaper than sending it

    def settle(self, lo: np.ndarray, hi: np.ndarray) -> Step:
        model = self.model
        if self._sb is None:
            self._sb = SliceBounds(model.nt, model.prot, model.slo)
        nt, prot, slo, free = model.nt, model.prot, model.slo, self.free
        label, conf, spread_sum, widest = slice_status(model, self._sb, lo, hi)
        has_pos = (label == 1).any(axis=1)
        has_neg = (label == -1).any(axis=1)
        unknown = (label == 0).sum(axis=1)
        # a confident slice is unfair if another slice is decided opposite, fair if all others agree
        unfair_v = (conf == 1) & (((label == 1) & has_neg[:, None]) | ((label == -1) & has_pos[:, None]))
        fair_v = (conf == 1) & (unknown == 0)[:, None] & ~unfair_v
        open_v = (conf == 0) | ((conf == 1) & ~unfair_v & ~fair_v)
        done = ~open_v.any(axis=1)
        width = lo.shape[1]
        # per settled box, the size of its slices of each kind (the shards add them exactly)
        size = np.prod(np.where(free, hi[done] - lo[done], 1.0), axis=1)
        out = Step(
            {
                "nonconf": size * (conf[done] == -1).sum(axis=1),
                "settled": size * (conf[done] == 1).sum(axis=1),
                "unfair": size * unfair_v[done].sum(axis=1),
            },
            int(done.sum()),
            (),
            (np.zeros((0, width)), np.zeros((0, width))),
        )
        rows = np.nonzero(unfair_v[done].any(axis=1))[0]
        if len(rows):
            # twin of an unfair slice: the first slice whose label is decided opposite
            lab = label[done][rows]
            out.found = (
                lo[done][rows],
                hi[done][rows],
                unfair_v[done][rows],
                lab == 1,
                np.argmax(lab == -1, axis=1),
                np.argmax(lab == 1, axis=1),
            )
        keep = ~done
        if not keep.any():
            return out
        lo, hi = lo[keep], hi[keep]
        label, conf, open_v, spread_sum, widest = label[keep], conf[keep], open_v[keep], spread_sum[keep], widest[keep]
        # refine the slices whose status is open, or whose unknown label keeps a confident slice open
        need = (conf == 0) | ((label == 0) & (open_v & (conf == 1)).any(axis=1)[:, None])
        need &= spread_sum > 0
        v = np.argmax(np.where(need, spread_sum, -1.0), axis=1)
        rows = np.arange(len(lo))
        if self.split == "leaves":
            if self._leaves is None:
                self._leaves = LeafSplitter(nt, prot, self._sb.prot_ok)
            out.open = self._leaves.split(lo, hi, widest[rows, v], free)
            return out
        vlo, vhi = _in_slice(lo, hi, slo[v], prot)
        f, b = nt.cut(vlo, vhi, None, widest[rows, v])
        left_hi = hi.copy()
        left_hi[rows, f] = b
        right_lo = lo.copy()
        right_lo[rows, f] = b
        out.open = (np.concatenate([lo, right_lo]), np.concatenate([left_hi, hi]))
        return out


def slice_status(model: SliceModel, sb: SliceBounds, lo: np.ndarray, hi: np.ndarray) -> tuple:
    """Label (+1/-1/0: unknown) and confidence (+1/-1/0) of every (box, slice) from the margin bounds,
    with each slice's total spread and widest tree (where to cut)."""
    ir, nt, prot, slo, c, kappa, tol = model.ir, model.nt, model.prot, model.slo, model.c, model.kappa, model.tol
    n, n_sl = len(lo), len(slo)
    label = np.zeros((n, n_sl), dtype=np.int8)
    conf = np.zeros((n, n_sl), dtype=np.int8)
    spread = np.zeros((n, n_sl))
    widest = np.zeros((n, n_sl), dtype=np.int64)
    bounds = sb.bounds(lo, hi)
    for v in range(n_sl):
        vmin, vmax = next(bounds)
        mlo, mhi = nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)
        label[:, v] = np.where(mlo > tol, 1, np.where(mhi < -tol, -1, 0))
        if c is None:
            conf[:, v] = 1
        else:
            conf[:, v] = np.where(
                (mlo > c + tol) | (mhi < -c - tol), 1, np.where((mlo > -c + tol) & (mhi < c - tol), -1, 0)
            )
        width = vmax - vmin
        spread[:, v] = width.sum(axis=1)
        widest[:, v] = np.argmax(width, axis=1)
        tie = (spread[:, v] <= 0) & ((label[:, v] == 0) | (conf[:, v] == 0))
        if tie.any():  # constant margin near a threshold: the model's own arithmetic decides
            x = inner_points(nt, *_in_slice(lo[tie], hi[tie], slo[v], prot))
            label[tie, v] = np.where(ir.predict(x) == 1, 1, -1)
            conf[tie, v] = 1 if c is None else np.where(ir.confidence(x) > kappa, 1, -1)
    return label, conf, spread, widest


def _in_slice(lo: np.ndarray, hi: np.ndarray, s: np.ndarray, prot: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The boxes with their protected features fixed to slice values s (one row, or one per box)."""
    lo, hi = lo.copy(), hi.copy()
    sv = np.broadcast_to(s, lo.shape)[:, prot]
    lo[:, prot] = sv
    hi[:, prot] = sv + 1.0
    return lo, hi


class SliceBounds:
    """Reachable leaf ranges of every tree in every slice; the path constraints on non-protected
    features are checked once per box, those on protected features once per slice."""

    def __init__(self, nt: NormalisedTrees, prot: list[int], slo: np.ndarray) -> None:
        self.nt = nt
        is_prot = np.isin(nt.c_feat, prot) & np.isfinite(nt.c_bound)
        sval = slo[:, nt.c_feat]  # slices x leaves x depth
        sat = np.where(nt.c_upper, sval < nt.c_bound, sval + 1.0 > nt.c_bound)
        self.prot_ok = np.asarray(np.where(is_prot, sat, True).all(axis=2))  # slices x leaves
        leaf_tree = np.repeat(np.arange(nt.n_trees), np.diff(nt.start))
        self.reads = np.zeros(nt.n_trees, dtype=bool)
        self.reads[leaf_tree[is_prot.any(axis=1)]] = True
        p_trees = np.nonzero(self.reads)[0]
        self.p_cols = nt.ranges.columns(p_trees)
        self.p_ranges = nt.ranges.subset(p_trees)
        self.prot_ok_dense = self.prot_ok[:, self.p_ranges.idx]  # slices x dense protected-tree leaves
        self.reach = PathChecks(nt, prot)

    def _ok(self, lo: np.ndarray, hi: np.ndarray):
        """The leaves reachable on the non-protected path constraints (dense layout of
        `nt.ranges`), and every tree's range on those constraints alone."""
        ok = self.reach(lo, hi)
        vmin, vmax = self.nt.ranges.reduce(ok)
        return ok, vmin, vmax

    def _fill_slice(self, ok, vmin, vmax, v: int):
        """Overwrite the ranges of the trees that read protected features with slice v's, then
        tighten them by merged pairs where asked (`pairs`)."""
        if self.reads.any():
            vmin[:, self.reads], vmax[:, self.reads] = self.p_ranges.reduce(ok[:, self.p_cols] & self.prot_ok_dense[v])
        if pairs.MERGE_PAIRS:
            W = self.nt.ranges.width
            prot_ok = self.prot_ok_all[v]
            self.nt.tree_pairs.tighten(lambda t: ok[:, t * W : (t + 1) * W] & prot_ok[t * W : (t + 1) * W], vmin, vmax)

    @functools.cached_property
    def prot_ok_all(self) -> np.ndarray:
        """slices x every tree's leaves in the dense layout: reachable on the slice's protected values."""
        return self.prot_ok[:, self.nt.ranges.idx]

    def bounds(self, lo: np.ndarray, hi: np.ndarray):
        """Yields (vmin, vmax) (boxes x trees) for each slice in turn."""
        ok, vmin, vmax = self._ok(lo, hi)
        for v in range(len(self.prot_ok)):
            if not self.reads.any() and not pairs.MERGE_PAIRS:
                yield vmin, vmax
                continue
            vmin_v, vmax_v = vmin.copy(), vmax.copy()
            self._fill_slice(ok, vmin_v, vmax_v, v)
            yield vmin_v, vmax_v

    def bounds_at(self, lo: np.ndarray, hi: np.ndarray, slices: np.ndarray):
        """(vmin, vmax) (boxes x trees) of each box in its own slice."""
        ok, vmin, vmax = self._ok(lo, hi)
        if self.reads.any() or pairs.MERGE_PAIRS:
            for v in np.unique(slices):
                r = slices == v
                a, b = vmin[r], vmax[r]
                self._fill_slice(ok[r], a, b, int(v))
                vmin[r], vmax[r] = a, b
        return vmin, vmax
