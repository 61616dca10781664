"""The undecided part of a tree-ensemble quantification that stopped early: uniform draws from it,
exact verdicts of single inputs, and a statistical estimate of the unfair share.

The refinement has settled part of the measured space exactly (sizes of confident inputs and of
unfair ones) and left open boxes, each with its open slices (protected combinations). The estimate
keeps the settled sizes and samples inputs uniformly from the open part only, so its interval is as
narrow as the open part is small:

    unfair share of X_kappa = (U_settled + O * p_unfair) / (C_settled + O * p_confident)

with O the open size and p the shares of sampled open inputs that are confident / unfair. Every
sampled input is classified exactly on the model: its own label and confidence by the model's
arithmetic; its twins with epsilon 0 by evaluating the other protected values, with epsilon > 0 by
an exact search of its epsilon-neighbourhood for the other label (`find_label`). A search cut off
by the time budget leaves the input "unknown", which widens the interval. The interval is a Wilson
interval for each share (Bonferroni over the two when kappa is given), clipped to the sound bounds:
a statistical statement, reported beside the sound figures, never instead of them.

Testing mode (`trees.sample_unfair`) uses the same draws and the same exact verdicts (with the twin
each one found) to keep its samples uniform over the exact unfair region.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from statistics import NormalDist

import numpy as np

from ... import compiled
from ...interrupt import requested as stop_requested
from ...models.trees import TreeEnsemble
from ...results import StatisticalEstimate
from ..network.sampling import wilson
from .boxes import NormalisedTrees, _scaled
from .dilated import find_label
from .joint import SliceBounds, _in_slice

EVAL_CHUNK = 16384  # samples per step with epsilon 0
SEARCH_CHUNK = 256  # samples per step with epsilon > 0
METHOD = (
    "stratified: settled boxes exact, uniform samples over the open boxes classified exactly on the "
    "model, Wilson intervals"
)


class OpenBoxes:
    """Uniform draws of inputs from the open part: a box by its size times its open slices, then one
    of its open slices, then a point of the box with the slice's protected values.

    `draw` picks each input's box by a search of the cumulative sizes (the estimate's small steps);
    `draws` picks how many inputs every box gets at once (multinomial) and yields them box after box
    (testing mode's millions). Either way the inputs are independent and uniform; only their order
    differs. The boxes stay in the refinement's chunks ("parts"): joining millions of them into one
    array costs seconds and gigabytes.

    Boxes are numbered in a canonical order (`canonical_order`), not the parts' order: the parts
    follow the refinement's history (its workers, and where a resumed run went on), so the same
    generator draws the same inputs from the same set of open boxes however the run got there.
    """

    def __init__(self, q) -> None:
        self.q = q
        self.parts = q.open_parts or []
        free = np.nonzero(measured(q))[0]
        n_sl = len(q.slices)
        sizes, n_open, open_slices = [], [], []
        every = True  # every slice of every box open (epsilon 0): no per-box slice record
        for lo, hi, part_open in self.parts:
            every &= part_open is None
            open_slices.append(np.ones((len(lo), n_sl), dtype=bool) if part_open is None else part_open)
            n_open.append(open_slices[-1].sum(axis=1))
            sizes.append(np.prod(hi[:, free] - lo[:, free], axis=1) * n_open[-1])
            if every:
                open_slices[-1] = n_open[-1] = None
        # per box over all parts (small arrays; the boxes' bounds stay in their parts)
        self.box_size = np.concatenate(sizes) if sizes else np.zeros(0)
        if every:
            self.open_slices = None
            self.n_open = np.broadcast_to(np.int64(n_sl), self.box_size.shape)
            self.all_open = True
        else:
            self.open_slices = np.concatenate(
                [np.ones((len(p[0]), n_sl), dtype=bool) if o is None else o for p, o in zip(self.parts, open_slices)]
            )
            self.n_open = self.open_slices.sum(axis=1)
            self.all_open = bool(self.open_slices.all())
        self.start = np.cumsum([0] + [len(p[0]) for p in self.parts])
        # box i (canonical) is box order[i] over the parts; the per-box arrays follow the canonical order
        self.order = canonical_order(self.parts, self.open_slices)
        self.box_size = self.box_size[self.order]
        if self.open_slices is not None:
            self.open_slices = self.open_slices[self.order]
            self.n_open = self.n_open[self.order]
        self.size = float(self.box_size.sum())
        self.cdf = np.cumsum(self.box_size) / self.size if self.size > 0 else self.box_size

    def draw(self, rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
        """m inputs and the index of each one's slice."""
        u = np.sort(rng.random(m))  # sorted: boxes come in canonical order (draws are exchangeable)
        return self._draw_in(rng, np.minimum(np.searchsorted(self.cdf, u, side="right"), len(self.cdf) - 1))

    def draws(self, rng: np.random.Generator, m: int, chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """m inputs (with their slices) in steps of at most `chunk`, grouped by box."""
        for box in multinomial_rows(rng, m, self.box_size, chunk):
            yield self._draw_in(rng, box)

    def _draw_in(self, rng: np.random.Generator, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An input in each of the given boxes (canonical indices) and the index of its slice."""
        m, width = len(box), len(self.q.eps)
        u = rng.random((m, width))
        x = np.empty((m, width))
        # the boxes over the parts, grouped by part (each part's points drawn at once)
        by = np.argsort(self.order[box], kind="stable")
        index = self.order[box][by]
        part = np.searchsorted(self.start, index, side="right") - 1
        edges = np.flatnonzero(np.diff(part)) + 1
        for a, b in zip(np.concatenate([[0], edges]), np.concatenate([edges, [m]])):
            plo, phi, _ = self.parts[part[a]]
            rows = by[a:b]
            x[rows] = points_in(u[rows], index[a:b] - self.start[part[a]], plo, phi, self.q.discrete)
        k = np.floor(rng.random(m) * self.n_open[box]).astype(np.int64)  # the k-th open slice of the box
        if self.all_open:
            slice_of = k
        else:
            assert self.open_slices is not None  # kept whenever some slice is closed
            slice_of = np.argmax(np.cumsum(self.open_slices[box], axis=1) > k[:, None], axis=1)
        if not self.q.robustness:
            prot = list(self.q.protected)
            x[:, prot] = self.q.slices[:, prot][slice_of]
        return x, slice_of


def canonical_order(parts: list, open_slices: np.ndarray | None) -> np.ndarray:
    """The boxes of all parts (their indices over the parts) in an order that depends on the set of
    boxes only: by a hash of each box's lower corner (`corner_keys`), and where boxes share a hash,
    by their bounds, feature by feature (lower, then upper), then their open slices.

    The open boxes are disjoint, so their corners differ and ties are rare (hash collisions). The
    hash is computed part by part (joining all the boxes' bounds costs as much memory as they hold)
    and sorts as one integer: an order of the bounds themselves would take a sort per feature.
    """
    start = np.cumsum([0] + [len(p[0]) for p in parts])
    n = int(start[-1])
    if n < 2:
        return np.arange(n)
    key = np.concatenate([corner_keys(lo) for lo, _, _ in parts])
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    same = ordered[1:] == ordered[:-1]
    tied = np.flatnonzero(np.concatenate([[False], same]) | np.concatenate([same, [False]]))
    if len(tied):  # the hash keeps each group of tied boxes together: those are sorted by their bounds
        index = order[tied]
        lo, hi = _rows(parts, start, index)
        columns = (
            [key[index]] + list(lo.T) + list(hi.T) + (list(open_slices[index].T) if open_slices is not None else [])
        )
        order[tied] = index[np.lexsort(columns[::-1])]
    return order


def corner_keys(lo: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row: the bits of each value mixed with its place (splitmix64's
    finaliser, arithmetic modulo 2**64), summed."""
    if compiled.available():
        from ..sampling.compiled import corner_keys as compiled_keys

        return compiled_keys(lo)
    bits = np.ascontiguousarray(lo, dtype=np.float64).view(np.uint64)
    x = bits + np.arange(bits.shape[1], dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (x ^ (x >> np.uint64(31))).sum(axis=1, dtype=np.uint64)


def _rows(parts: list, start: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bounds (lo, hi) of the boxes at the given indices over the parts."""
    part = np.searchsorted(start, index, side="right") - 1
    width = parts[0][0].shape[1]
    lo, hi = np.empty((len(index), width)), np.empty((len(index), width))
    for k in np.unique(part):
        at = part == k
        lo[at], hi[at] = parts[k][0][index[at] - start[k]], parts[k][1][index[at] - start[k]]
    return lo, hi


def multinomial_rows(rng: np.random.Generator, m: int, weight: np.ndarray, chunk: int) -> Iterator[np.ndarray]:
    """m independent draws of rows with probability proportional to `weight`, as sorted row indices in
    steps of at most `chunk` (one multinomial draw of every row's count: no search per draw)."""
    p = weight / math.fsum(weight)  # sums to 1 within a few ulps, as the multinomial requires
    counts = rng.multinomial(m, p)
    ends = np.cumsum(counts)
    starts = ends - counts
    for s in range(0, m, chunk):  # draws s..e-1 belong to rows a..b
        e = min(m, s + chunk)
        a, b = np.searchsorted(ends, [s, e - 1], side="right")
        within = np.minimum(ends[a : b + 1], e) - np.maximum(starts[a : b + 1], s)
        yield np.repeat(np.arange(a, b + 1), within)


def estimate_unfair_share(
    ir: TreeEnsemble,
    q,
    confidence: float,
    budget_s: float,
    seed: int = 0,
    max_samples: int = 200_000,
    deadline: float = np.inf,
) -> StatisticalEstimate | None:
    """Estimate of 1 - M (the unfair share of X_kappa) from quantification `q`; None if nothing is open.

    Samples are drawn in chunks until the time budget is spent (at least one chunk; with epsilon 0,
    where a sample costs a few model evaluations, at least 20,000 samples). The budget starts once
    the open boxes are indexed and the compiled kernels loaded (the first use in a process loads
    them: most of a second, which would otherwise cost a cold run most of its samples), and ends by
    the `deadline` (`time.monotonic()`: the caller's time limit) whichever comes first.
    """
    if not q.open_parts:
        return None
    rng = np.random.default_rng(seed)
    box = OpenBoxes(q)
    if box.size <= 0:
        return None
    checker = Checker(ir, q.nt, q)
    checker.verdicts(*box.draw(np.random.default_rng(0), 1))
    t_end = min(time.monotonic() + budget_s, deadline)
    # neighbourhood searches are costly: small chunks, so that the budget ends few of them early
    chunk, min_samples = (SEARCH_CHUNK, SEARCH_CHUNK) if checker.has_eps else (EVAL_CHUNK, 20_000)
    n = n_conf = n_unfair = n_unknown = 0
    while n < min_samples or (n < max_samples and time.monotonic() < t_end and not stop_requested()):
        x, slice_of = box.draw(rng, chunk)
        conf, unfair, unknown, _ = checker(x, slice_of, t_end)
        n += chunk
        n_conf += int(conf.sum())
        n_unfair += int(unfair.sum())
        n_unknown += int(unknown.sum())
    alpha = 1.0 - confidence
    exact_conf = q.kappa is None  # then every input is confident: p_confident = 1 exactly
    z = NormalDist().inv_cdf(1.0 - (alpha / 2 if exact_conf else alpha / 4))
    pc_lo, pc_hi = (1.0, 1.0) if exact_conf else wilson(n_conf, n, z)
    pu_lo = wilson(n_unfair, n, z)[0]
    pu_hi = wilson(n_unfair + n_unknown, n, z)[1]
    pu, pc = (n_unfair + n_unknown / 2) / n, n_conf / n

    conf_settled, unfair_settled = q.open_settled or (q.conf_settled, q.unfair)

    def share(p_unfair: float, p_conf: float) -> float:
        den = conf_settled + box.size * p_conf
        return min(1.0, (unfair_settled + box.size * p_unfair) / den) if den > 0 else 0.0

    m_lo, m_hi = q.bounds
    lo_s, hi_s = 1.0 - m_hi, 1.0 - m_lo  # the sound range of the unfair share
    clip = lambda v: float(min(hi_s, max(lo_s, v)))
    # the share grows with p_unfair and falls with p_confident; p_unfair <= p_confident always
    return StatisticalEstimate(
        unfair=clip(share(pu, max(pc, pu))),
        ci_low=clip(share(pu_lo, pc_hi)),
        ci_high=clip(share(pu_hi, max(pc_lo, pu_hi))),
        confidence=confidence,
        samples=n,
        method=METHOD
        + (
            f"; {n_unknown} samples whose neighbourhood search ran out of time count as either verdict"
            if n_unknown
            else ""
        ),
    )


def measured(q) -> np.ndarray:
    """The measured features: the non-protected ones for fairness, all for robustness."""
    free = np.ones(len(q.eps), dtype=bool)
    if not q.robustness:
        free[list(q.protected)] = False
    return free


def points_in(u: np.ndarray, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, discrete: np.ndarray) -> np.ndarray:
    """The points of boxes lo[rows], hi[rows] at uniforms u (as `uniform_points` from the same u)."""
    if compiled.available():  # no gather of the boxes' rows: millions of them in testing mode
        from ..sampling.compiled import points_in_boxes

        return points_in_boxes(u, rows, lo, hi, discrete)
    return _scaled(u, lo[rows], hi[rows], discrete)


class Verdicts:
    """(label, confident, unfair by another protected value at the same other features, that twin) of
    inputs, by the model's own arithmetic.

    Only the trees that read a protected feature are evaluated again under the other protected
    values. Compiled (`faircert.compiled`), every margin is summed as the framework sums. By numpy,
    a twin's margin is first summed in float64; where it lies farther from the decision threshold
    than the framework's rounding of its own sum could move it, that decides the label; the rest are
    summed as the framework sums.
    """

    def __init__(self, ir: TreeEnsemble, q) -> None:
        self.ir, self.q = ir, q
        self.prot = [] if q.robustness else list(q.protected)
        self.reading = ir.trees_reading(self.prot)
        self.sub = ir.sub_ensemble(self.reading) if len(self.reading) else None
        self.offset = ir.margin_view(None)[0]
        # how far the framework's own sum and the float64 one here may both be from the exact sum
        # (margin units): the rounding of the base, the leaves and every partial sum, each at most
        # |base| + the trees' largest |leaf| values, at half an ulp of float32 (running sum) or
        # float64, doubled for the sum here
        unit = (2.0**-23 if ir.sum_float32 else 2.0**-51) * (len(ir.trees) + 2)
        magnitude = abs(ir.base_score) + sum(float(np.abs(t.value).max()) for t in ir.trees)
        self.slack = unit * ir.scale * magnitude

    def __call__(self, x: np.ndarray, slice_of: np.ndarray) -> tuple[np.ndarray, ...]:
        if compiled.available() and self.sub is not None:
            return self._compiled(x, slice_of)
        ir, q, prot = self.ir, self.q, self.prot
        leaves = ir.leaf_values(x)
        label, conf = ir.label_and_confident(ir.score_of_leaves(leaves), q.kappa)
        unfair = np.zeros(len(x), dtype=bool)
        twin = x.copy()
        if self.sub is None:
            return label, conf, unfair, twin
        shared = leaves.sum(axis=1) - leaves[:, self.reading].sum(axis=1)  # the other trees' sum
        reading_under = self.sub.leaves_with(x, prot)
        for u in range(len(q.slices)):
            rows = np.nonzero((slice_of != u) & ~unfair)[0]
            reading = reading_under(q.slices[u][prot], rows)
            margin = self.offset + ir.scale * (shared[rows] + reading.sum(axis=1))
            label_u = (margin > 0).astype(label.dtype)
            near = np.nonzero(np.abs(margin) <= self.slack)[0]
            if len(near):  # too close to call: the framework's own sum decides
                full = leaves[rows[near]]
                full[:, self.reading] = reading[near]
                label_u[near] = ir.label_from_score(ir.score_of_leaves(full))
            flipped = rows[label_u != label[rows]]
            twin[np.ix_(flipped, prot)] = q.slices[u][prot]
            unfair[flipped] = True
        return label, conf, unfair & conf, twin

    def _compiled(self, x: np.ndarray, slice_of: np.ndarray) -> tuple[np.ndarray, ...]:
        """The same verdicts from every protected combination's score, each summed exactly as the
        framework sums (compiled: no float64 pre-check needed)."""
        from ...models import trees_compiled

        ir, q, prot = self.ir, self.q, self.prot
        scores = trees_compiled.slice_scores(ir, x, slice_of, prot, q.slices[:, prot], self.reading)
        label, conf = ir.label_and_confident(scores[np.arange(len(x)), slice_of], q.kappa)
        differs = ir.label_from_score(scores) != label[:, None]
        unfair = differs.any(axis=1)
        twin = x.copy()
        rows = np.nonzero(unfair)[0]
        twin[np.ix_(rows, prot)] = q.slices[np.argmax(differs[rows], axis=1)][:, prot]
        return label, conf, unfair & conf, twin


class Checker:
    """Exact per-input verdicts: (confident, unfair, unknown, a twin of each unfair input) for inputs
    of given slices; "unknown" only where a neighbourhood search ran past `t_end`."""

    def __init__(self, ir: TreeEnsemble, nt: NormalisedTrees, q) -> None:
        self.ir, self.nt, self.q = ir, nt, q
        self.prot = [] if q.robustness else list(q.protected)
        self.free = measured(q)
        self.has_eps = bool(np.any(q.eps[self.free] > 0))
        self.sb = SliceBounds(nt, self.prot, q.slices) if self.has_eps else None
        self.tol = ir.margin_view(q.kappa)[2]
        self.verdicts = Verdicts(ir, q)

    def __call__(self, x: np.ndarray, slice_of: np.ndarray, t_end: float):
        ir, q, prot = self.ir, self.q, self.prot
        label, conf, unfair, twin = self.verdicts(x, slice_of)
        n_sl = len(q.slices)
        unknown = np.zeros(len(x), dtype=bool)
        if self.sb is None:  # no epsilon: no neighbourhood to search
            return conf, unfair, unknown, twin
        ask = np.nonzero(conf & ~unfair)[0]
        if not len(ask):
            return conf, unfair, unknown, twin
        # the closed neighbourhood as a half-open box: [x - e, x + e + 1) on integers, up to the next
        # float above x + e on reals
        top = np.where(q.discrete, x[ask] + q.eps + 1.0, np.nextafter(x[ask] + q.eps, np.inf))
        lo = np.where(self.free, np.maximum(self.nt.dlo, x[ask] - q.eps), x[ask])
        hi = np.where(self.free, np.minimum(self.nt.dhi, top), top)
        if q.robustness:
            qi, sl = np.arange(len(ask)), np.zeros(len(ask), dtype=np.int64)
        else:
            qi, sl = np.nonzero(np.arange(n_sl)[None] != slice_of[ask][:, None])
        qlo, qhi = _in_slice(lo[qi], hi[qi], q.slices[sl], prot)
        want = np.where(label[ask][qi] == 1, -1, 1)
        point, resolved = find_label(
            ir, self.nt, self.sb, qlo, qhi, sl, want, self.tol, lambda: time.monotonic() > t_end
        )
        found = ~np.isnan(point[:, 0])
        hit = np.zeros(len(ask), dtype=bool)
        np.logical_or.at(hit, qi, found)
        missing = np.zeros(len(ask), dtype=bool)
        np.logical_or.at(missing, qi, ~resolved)
        twin[ask[qi[found]]] = point[found]  # (any one found point of an input will do)
        unfair[ask[hit]] = True
        unknown[ask[~hit & missing]] = True
        return conf, unfair, unknown, twin
