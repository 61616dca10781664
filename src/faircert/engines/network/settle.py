"""Settling open boxes of a network refinement: the work of one step of a shard (`boxes.shards`).

A box is bounded for all twins at once and settled whole when every twin is provably on one side
of 0 over it (certified), or when one twin is provably positive and another provably non-positive
everywhere in it (falsified); boxes with few grid points are enumerated exactly. An undecided box
is cut along its bounds' hyperplanes where that settles pieces, probed at random points for
counterexamples (around which unfair boxes are grown), and credited with the shares of its points
that its linear forms prove fair or unfair (Chernoff bounds) without locating them. It stays open
with the feature to split it along and its priority: its mass not credited, lowered for a box
known to hold a counterexample (it can never be certified whole).

An open box carries (bounded, split feature, priority, fair credit, unfair credit; the credits in
units of `CREDIT_GRID` of its mass, so that they add up exactly and fast). A box not yet bounded
(the domain, or a piece cut off a bounded box) is bounded as it is; a bounded one is split in two
along its feature and its halves are bounded.

Under a box budget, what settling a box gives depends on the box alone: its probes come from a
counter-based generator keyed by its coordinates (`BoxDraws`), and so does the draw that decides
whether unfair boxes are grown around its counterexample. So the boxes settled by the end of a
level are the same however the shards hold them, up to a bound that lands within a rounding error
of a threshold (a batched matrix product may round a row differently in another batch); the
credits and the cuts on real features, which such errors would move, are rounded to fixed grids.
A run limited by time instead grows around the heaviest counterexamples while growth keeps to its
share of the time: growing in small batches costs more.

On a device (`arrays.Backend`) a step's boxes come from the device (`resident`) and everything
above is computed there, in the same float64 operations as numpy's, but the exact enumerations (on
the model itself) and the growth around counterexamples, which take their few boxes to the host;
what comes to the host is what is added up exactly (the measures) and the evidence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...checkpoint import pack, unpack
from ...errors import PropertyError
from ..boxes.frontier import BoxCodec
from ..boxes.shards import Settler, Shard, Step
from ..boxes.sums import ExactSum
from . import arrays
from .arrays import namespace
from .counts import Counts
from .cuts import cut_boxes
from .draws import PROBES, BoxDraws, box_keys, probe_keys
from .exact import exact_boxes, exact_ok
from .grow import RADII, carve, grow
from .problem import Problem
from .resident import ResidentFrontier
from .sampling import draw_points, twin_split
from .symbolic import TwinBounds
from .tail import decided_shares

EXACT_POINTS = 200_000  # enumerate the whole domain directly when it has at most this many points
EXACT_PER_INPUT = 8  # enumerate boxes with at most this many points per free feature (+1)
CEX_STORE = 20_000  # counterexamples kept for reporting
GROW_SHARE = 0.02  # at most this share of the time goes into growing unfair boxes (measured: more costs undecided mass)
#: growth only in boxes of at most this share of the domain: carving larger ones into slabs cuts up
#: the top of the refinement (on BM-7 it cost certified share against no growth at all)
GROW_BELOW = 2.0**-16
GROW_BATCH = 64  # counterexamples grown around at once, the heaviest boxes' first
GROW_WORK = 0.02  # under a box budget, growth bounds about this share of the boxes bounded
CEX_SHARE = 0.1  # of the boxes bounded, the share that holds a counterexample (FairQuant models: 10-11%)
HOPELESS = 0.125  # priority factor of boxes known to hold a counterexample
ENTRY_BOXES = 128  # open boxes stored together: a box's priority depends on its bounds, not on its size
CREDIT_GRID = 2.0**-20  # credited shares are rounded down to multiples of this
#: what a shard adds up: the mass settled whole and its unfair part, the credits of the boxes it
#: opened and of those it took to settle or split (a shard may take boxes another one opened), and
#: the probes and their hits
MEASURES = ("settled", "unfair", "fair_opened", "fair_taken", "unfair_opened", "unfair_taken", "probes", "probe_hits")
#: what an open box carries besides its bounds (`boxes.shards.Shard`)
OPEN_DATA = (bool, np.int64, np.float64, np.float64, np.float64)


@dataclass
class Found:
    """What settling a chunk found besides its measures: counterexamples (x with twin a, x' with
    twin b: free features), boxes that cannot be split, and the counters of the work."""

    x: np.ndarray
    xp: np.ndarray
    a: np.ndarray
    b: np.ndarray
    stuck_lo: np.ndarray
    stuck_hi: np.ndarray
    counts: Counts


class Findings:
    """A shard's evidence (`boxes.shards.RegionStore`): distinct counterexamples (the first
    `CEX_STORE` kept, all counted), the boxes that cannot be split, and the work's counters."""

    def __init__(self, d: int, n_twins: int) -> None:
        self.d, self.n_twins = d, n_twins
        self.cex: dict[bytes, tuple[np.ndarray, np.ndarray, int, int]] = {}
        self.cex_found = 0
        self.stuck_lo: list[np.ndarray] = []
        self.stuck_hi: list[np.ndarray] = []
        self.counts = Counts()
        self.nbytes = 0

    @property
    def found(self) -> int:
        return self.cex_found

    def add(self, f: Found) -> None:
        self._record(f.x, f.xp, f.a, f.b)
        if len(f.stuck_lo):
            self.stuck_lo.append(f.stuck_lo)
            self.stuck_hi.append(f.stuck_hi)
            self.nbytes += f.stuck_lo.nbytes + f.stuck_hi.nbytes
        self.counts.absorb(f.counts)

    def _record(self, x: np.ndarray, xp: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Count the pairs not kept yet, in order, and keep the first distinct ones while there is
        room (a pair not kept counts each time it is found). Keys are the pairs' bytes, made in one
        go: thousands of pairs a step on a device."""
        if not len(x):
            return
        rows = np.ascontiguousarray(np.concatenate([x, xp], axis=1), dtype=np.float64)
        keys: list[bytes] = rows.view(np.dtype((np.void, rows.shape[1] * 8))).ravel().tolist()  # type: ignore[assignment]
        new = [i for i, k in enumerate(keys) if k not in self.cex]
        room = CEX_STORE - len(self.cex)
        kept: dict[bytes, int] = {}
        if room > 0:
            for i in new:  # the first `room` distinct ones, at their first place
                if len(kept) == room:
                    break
                kept.setdefault(keys[i], i)
        self.cex_found += len(kept) + sum(keys[i] not in kept for i in new)
        for k, i in kept.items():
            self.cex[k] = (x[i].copy(), xp[i].copy(), int(a[i]), int(b[i]))
        self.nbytes += len(kept) * (2 * x.itemsize * x.shape[1] + 64)

    def absorb(self, other: Findings) -> None:
        beyond = other.cex_found - len(other.cex)  # found there, not kept: counted as they are
        self.add(Found(*other.cex_arrays(), other.stuck(), other.stuck(high=True), other.counts))
        self.cex_found += beyond

    def cex_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The counterexamples kept (x, x', a, b), in a fixed order: by their coordinates."""
        items = list(self.cex.values())
        x = np.array([c[0] for c in items]).reshape(-1, self.d)
        xp = np.array([c[1] for c in items]).reshape(-1, self.d)
        a = np.array([c[2] for c in items], dtype=np.int64)
        b = np.array([c[3] for c in items], dtype=np.int64)
        order = np.lexsort(tuple(xp.T[::-1]) + tuple(x.T[::-1]))
        return x[order], xp[order], a[order], b[order]

    def stuck(self, high: bool = False) -> np.ndarray:
        parts = self.stuck_hi if high else self.stuck_lo
        return np.concatenate(parts) if parts else np.empty((0, self.d))

    def state(self) -> dict[str, Any]:
        return {
            "cex": [pack(a) for a in self.cex_arrays()],
            "cex_found": self.cex_found,
            "stuck": [pack(self.stuck()), pack(self.stuck(high=True))],
            "counts": self.counts.to_dict(),
        }

    def restore(self, state: dict[str, Any], dlo: np.ndarray, dhi: np.ndarray) -> None:
        """Add a saved store (a checkpoint is untrusted: every value checked, its points and boxes
        inside the domain box [dlo, dhi], its twins this network's)."""
        try:
            cex, stuck = state["cex"], state["stuck"]
            if not (isinstance(cex, list) and len(cex) == 4 and isinstance(stuck, list) and len(stuck) == 2):
                raise ValueError("not the counterexamples and boxes a network refinement keeps")
            x, xp, slo, shi = (unpack(v, "f8", self.d) for v in (cex[0], cex[1], stuck[0], stuck[1]))
            a, b = unpack(cex[2], "i8"), unpack(cex[3], "i8")
            found, counts = state["cex_found"], Counts.of_state(state["counts"])
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise PropertyError(f"checkpoint: its evidence is incomplete or malformed ({str(exc)[:80]})") from None
        ok = (
            x.shape == xp.shape
            and a.shape == b.shape == (len(x),)
            and slo.shape == shi.shape
            and all(np.all(v >= dlo) and np.all(v <= dhi) for v in (x, xp, slo, shi))
            and np.all(slo <= shi)
            and np.all((a >= 0) & (a < self.n_twins) & (b >= 0) & (b < self.n_twins))
            and type(found) is int
            and len(x) <= found
        )
        if not ok:
            raise PropertyError("checkpoint: its counterexamples or boxes do not fit this domain and network")
        before = len(self.cex)
        self.add(Found(x, xp, a, b, slo, shi, counts))
        self.cex_found += found - (len(self.cex) - before)


@dataclass
class _Work:
    """What settling one chunk has established so far."""

    d: int
    terms: dict[str, list[np.ndarray]] = field(default_factory=lambda: {m: [] for m in MEASURES})
    boxes: int = 0  # settled whole
    open: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    cex: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    stuck: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)

    def settle(self, mass: np.ndarray, unfair: np.ndarray) -> None:
        """Boxes settled whole: their mass, and the mass of their unfair points."""
        self.terms["settled"].append(mass)
        self.terms["unfair"].append(unfair)
        self.boxes += len(mass)

    def credit(self, fair: np.ndarray, unfair: np.ndarray, taken: bool = False) -> None:
        """Credits (in units) of boxes opened, or (`taken`) of open boxes taken to settle or split."""
        self.terms["fair_taken" if taken else "fair_opened"].append(fair)
        self.terms["unfair_taken" if taken else "unfair_opened"].append(unfair)

    def step(self) -> Step:
        # the measures are added up exactly on the host; the open boxes stay where they were computed
        measures = _on_host(self.terms)
        d = self.d
        if self.open:
            opened = tuple(namespace(a[0]).concatenate(a) for a in zip(*self.open))
        else:
            opened = (np.empty((0, d)), np.empty((0, d))) + tuple(np.zeros(0, dtype=t) for t in OPEN_DATA)
        if self.cex:
            x, xp, a, b = (np.concatenate(c) for c in zip(*self.cex))
        else:
            x, xp, a, b = np.empty((0, d)), np.empty((0, d)), np.zeros(0, np.int64), np.zeros(0, np.int64)
        slo, shi = (np.concatenate(s) for s in zip(*self.stuck)) if self.stuck else (np.empty((0, d)),) * 2
        return Step(measures, self.boxes, (Found(x, xp, a, b, slo, shi, self.counts),), opened)


def _on_host(terms: dict[str, list[Any]]) -> dict[str, np.ndarray]:
    """Each measure's terms (float64 vectors, numpy's or a device's) as one numpy array; those on a
    device come in one copy (each copy waits for the device)."""
    there = [a for t in terms.values() for a in t if not isinstance(a, np.ndarray)]
    if there:
        flat = arrays.to_numpy(namespace(there[0]).concatenate(there))
        pieces = iter(np.split(flat, np.cumsum([a.shape[0] for a in there])[:-1]))
        terms = {m: [a if isinstance(a, np.ndarray) else next(pieces) for a in t] for m, t in terms.items()}
    return {m: np.concatenate(t) if t else np.zeros(0) for m, t in terms.items()}


class BoxSettler(Settler):
    """The refinement's work on a chunk of open boxes (`boxes.shards.Settler`), runnable on a
    worker: it holds the problem once. `chunk` bounds at most that many boxes per bounding call,
    and a step takes about `step` // 2 open boxes (their halves make `step` boxes bounded: cuts,
    searches and credits run once per step); `tight` asks for full CROWN bounds; `by_time`, growth
    by its share of the time (else by a draw per box, for runs whose result may not depend on how
    the boxes were batched)."""

    measures = MEASURES
    open_data = OPEN_DATA
    entry_boxes = ENTRY_BOXES

    def __init__(self, pb: Problem, chunk: int, step: int, tight: bool, seed: int, by_time: bool = True) -> None:
        self.pb, self.chunk, self.tight, self.seed, self.by_time = pb, chunk, tight, seed, by_time
        self.t_start, self.t_grow = time.perf_counter(), 0.0  # a worker's own growth
        self.min_batch = max(1, step // 2)
        self.exact_limit = max(1, EXACT_PER_INPUT * (pb.d + 1))  # single points always exactly
        self.root_points = EXACT_POINTS  # read here: a worker gets the settler, not the module
        # a growth bounds 1 + d * RADII boxes: grow around that share of the counterexamples
        self.grow_chance = min(1.0, GROW_WORK / (CEX_SHARE * (1 + pb.d * RADII)))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _blas_on_one_thread()  # a spawned process or Ray actor: small batched GEMMs, as in the driver

    def device_bytes(self) -> int:
        return self.pb.backend.memory_used()

    def frontier(self, free: np.ndarray, chunk: int, codec: BoxCodec | None, limit_bytes: int) -> Any:
        """On a device the open boxes stay there (`resident`); on numpy, the host's frontier."""
        if self.pb.backend.numpy or codec is None:
            return super().frontier(free, chunk, codec, limit_bytes)
        return ResidentFrontier(chunk, codec, self.key, self.pb.backend.put, self.open_data, limit_bytes)

    def key(self, lo: Any, hi: Any, *data: Any) -> Any:
        """The order of open boxes: a bounded box's priority; a box not bounded yet comes first
        (a piece cut off a box is thin, and often settled or cut again at once)."""
        first = 2.0 * self.pb.domain_size
        if not data:
            return namespace(lo).zeros_like(lo[:, 0]) + first
        return namespace(lo).where(data[0], data[2], first)

    def fits(self, shard: Shard) -> bool:
        """Whether a refinement read from a checkpoint (its shards merged into `shard`) could be
        this one's: its open boxes carry a split feature of the problem's, a finite priority and
        credits within their mass; the open boxes' credits add up to what its sums say; and what
        it settled, its open boxes and its unsplittable boxes cover the domain's mass once."""
        lo, hi, bounded, split, prio, fair, unfair = shard.arrays()
        region, sums, pb = shard.region, shard.totals.sums, self.pb
        assert isinstance(region, Findings)  # the store this refinement gives its shards
        mass = pb.mass(lo, hi)
        covered = float(sums["settled"]) + float(mass.sum()) + float(pb.mass(region.stuck(), region.stuck(True)).sum())
        opened = [float(sums[f"{m}_opened"] - sums[f"{m}_taken"]) for m in ("fair", "unfair")]
        return bool(
            np.all((split >= 0) & (split < pb.d))
            and np.all(np.isfinite(prio) & (prio >= 0))
            and np.all((fair >= 0) & (unfair >= 0) & ((fair + unfair) * CREDIT_GRID <= mass * (1 + 1e-12)))
            and np.all(bounded | ((fair == 0) & (unfair == 0)))
            and abs(covered - pb.domain_size) <= 1e-9 * pb.domain_size
            and all(abs(o - float(c.sum())) <= 1e-9 * (1 + float(c.sum())) for o, c in zip(opened, (fair, unfair)))
        )

    def settle(self, lo: Any, hi: Any, *data: Any) -> Step:
        """Settle, cut or keep open these boxes (numpy arrays, or the device's: then everything but
        the exact enumerations and the growth around counterexamples is computed there)."""
        w = _Work(self.pb.d)
        if data:
            bounded, split, _, fair, unfair = data
            w.credit(fair, unfair, taken=True)  # their credits leave the open boxes' total
            xp = namespace(lo)
            clo, chi = self._split(lo[bounded], hi[bounded], split[bounded])
            lo, hi = xp.concatenate([lo[~bounded], clo]), xp.concatenate([hi[~bounded], chi])
        self._process(w, lo, hi)
        return w.step()

    def _split(self, lo: Any, hi: Any, split: Any) -> tuple[Any, Any]:
        pb = self.pb
        xp = namespace(lo)
        r = arrays.arange(xp, lo.shape[0], like=lo)
        a, b = lo[r, split], hi[r, split]
        disc = pb.here("discrete", lo)[split]
        mid = xp.where(disc, xp.floor((a + b) / 2), (a + b) / 2)
        if pb.weights is not None:  # halve the mass, not the range (the data's marginals are the host's)
            host = (arrays.to_numpy(v) for v in (split, a, b, mid))
            mid = arrays.like(pb.weights.median(*host), lo)
        left_hi = xp.copy(hi)
        left_hi[r, split] = mid
        right_lo = xp.copy(lo)
        right_lo[r, split] = xp.where(disc, mid + 1, mid)
        return xp.concatenate([lo, right_lo]), xp.concatenate([left_hi, hi])

    def _process(self, w: _Work, lo: Any, hi: Any) -> None:
        pb = self.pb
        xp = namespace(lo)
        held = pb.mass(lo, hi) > 0  # boxes of no mass (flat in a real feature, or missed by the data) count for nothing
        lo, hi = lo[held], hi[held]
        whole = xp.all(lo == pb.here("lo", lo), axis=1) & xp.all(hi == pb.here("hi", lo), axis=1)
        ex = exact_ok(pb, lo, hi, self.exact_limit)
        if bool(whole.any()):  # a small domain is enumerated at once
            ex |= whole & exact_ok(pb, lo, hi, self.root_points)
        if bool(ex.any()):  # the model itself, on the host
            self._exact(w, arrays.to_numpy(lo[ex]), arrays.to_numpy(hi[ex]))
            lo, hi = lo[~ex], hi[~ex]
        if lo.shape[0]:
            self._bound(w, lo, hi)

    def _bounds(self, lo: Any, hi: Any) -> tuple[TwinBounds, TwinBounds]:
        """`Problem.window_bounds` in as few calls of at most `chunk` boxes as fit, of equal sizes:
        a call's arrays then stay in the cache, while what follows the bounds runs once per step.
        On a device they stay there (`_decided` keeps the undecided boxes' only)."""
        calls = -(-lo.shape[0] // self.chunk)
        edges = np.cumsum([0] + [len(p) for p in np.array_split(np.arange(lo.shape[0]), calls)])
        parts = [self.pb.window_bounds(lo[a:b], hi[a:b], self.tight, host=False) for a, b in zip(edges, edges[1:])]
        own = TwinBounds.joined([p[1] for p in parts])
        return (own if parts[0][0] is parts[0][1] else TwinBounds.joined([p[0] for p in parts])), own

    def _decided(self, bd: TwinBounds, own: TwinBounds) -> tuple[Any, Any, TwinBounds, TwinBounds, Any]:
        """Which boxes the bounds settle whole (fair, unfair: masks), and the bounds of which boxes
        are kept (None: all). On a device the verdicts are taken there, and only the undecided
        boxes' bounds are kept: the same comparisons of the same float64 values."""
        tol = self.pb.tol
        xp = namespace(own.lower)
        fair = xp.all(bd.lower > tol, axis=1) | xp.all(bd.upper < -tol, axis=1)
        unfair = xp.any(own.lower > tol, axis=1) & xp.any(own.upper < -tol, axis=1) & ~fair
        if xp is np:
            return fair, unfair, bd, own, None
        open_ = xp.flatnonzero(~(fair | unfair))
        own_open = own.rows(open_)
        return fair, unfair, (own_open if bd is own else bd.rows(open_)), own_open, open_

    def _bound(self, w: _Work, lo: Any, hi: Any) -> None:
        """Bound boxes; settle them, or cut, search and credit the undecided ones. On a device all
        of it is computed there, beside the bounds, and the boxes left open stay there."""
        pb, counts = self.pb, w.counts
        xp = namespace(lo)
        t = time.perf_counter()
        bd, own = self._bounds(lo, hi)
        counts.t_bound += time.perf_counter() - t
        counts.boxes_bounded += lo.shape[0]
        mass = pb.mass(lo, hi)
        fair, unfair, bd, own, held = self._decided(bd, own)
        done = fair | unfair
        w.settle(mass[done], xp.where(unfair[done], mass[done], 0.0))
        rows = xp.flatnonzero(~done)
        if not rows.shape[0]:
            return
        lo, hi, mass = lo[rows], hi[rows], mass[rows]
        if held is not None:  # the bounds hold the undecided boxes only
            rows = arrays.arange(xp, rows.shape[0], like=lo)
        discrete = pb.here("discrete", lo)
        best, ok = self._split_features(own.sens[rows], lo, hi, discrete)
        src = rows  # each remaining box's row in the bounds
        if not pb.has_eps:
            cuts = cut_boxes(own, rows, lo, hi, discrete, pb.tol)
            if cuts.src.shape[0]:
                m = pb.mass(cuts.lo, cuts.hi)
                piece_done = cuts.fair | cuts.unfair
                w.settle(m[piece_done], xp.where(cuts.unfair[piece_done], m[piece_done], 0.0))
                counts.cuts += int(cuts.cut.sum())
                rest = ~piece_done
                self._open(w, cuts.lo[rest], cuts.hi[rest])
                keep = ~cuts.cut
                lo, hi, mass, best, ok, src = lo[keep], hi[keep], mass[keep], best[keep], ok[keep], src[keep]
        if not lo.shape[0]:
            return
        has_cex, keep = self._search(w, lo, hi, mass)
        lo, hi, mass, best, ok, has_cex, src = (v[keep] for v in (lo, hi, mass, best, ok, has_cex, src))
        fair_share, unfair_share = self._credit(w, bd, own, src, lo, hi)
        fair_c, unfair_c = fair_share * mass, unfair_share * mass  # in units of CREDIT_GRID
        open_ = mass - (fair_c + unfair_c) * CREDIT_GRID
        full = open_ <= 0  # credited whole: settled
        if bool(full.any()):
            w.settle(mass[full], xp.minimum(unfair_c[full] * CREDIT_GRID, mass[full]))
            keep = ~full
            lo, hi, best, ok, has_cex, open_ = (v[keep] for v in (lo, hi, best, ok, has_cex, open_))
            fair_c, unfair_c = fair_c[keep], unfair_c[keep]
        self._keep(w, lo, hi, best, ok, xp.where(has_cex, HOPELESS * open_, open_), fair_c, unfair_c)

    def _split_features(self, sens: Any, lo: Any, hi: Any, discrete: Any) -> tuple[Any, Any]:
        """Each box's feature to split it along: of highest score (its weight in the bounds' forms
        times its width), else (every score 0) its widest relative to the domain, among those that
        can be split; and whether any can. Computed where the bounds are."""
        pb = self.pb
        xp = namespace(lo)
        width = hi - lo
        can = xp.where(discrete, width > 0, width > pb.here("min_real", lo))
        score = xp.where(can, sens * width, -1.0)
        best = xp.argmax(score, axis=1)
        flat = score[arrays.arange(xp, len(best), like=score), best] <= 0
        if bool(flat.any()):
            fallback = xp.where(can, width / pb.here("span", lo), -1.0)
            best = xp.where(flat, xp.argmax(fallback, axis=1), best)
        return best, can.any(axis=1)

    def _credit(self, w: _Work, bd: Any, own: Any, src: Any, lo: Any, hi: Any) -> tuple[Any, Any]:
        """Shares of the boxes (rows `src` of the bounds) proven fair and unfair by their forms, in
        whole units of `CREDIT_GRID` (rounded down)."""
        pb = self.pb
        xp = namespace(lo)
        if pb.weights is not None:  # the tail bounds hold for points uniform in a box
            return arrays.zeros(xp, lo.shape[0], lo), arrays.zeros(xp, lo.shape[0], lo)
        t = time.perf_counter()
        fair_forms = None
        if pb.has_eps:
            # a point is fair when its whole epsilon-window is: the forms' worst case over it
            a = bd.form_a[:, src]
            fair_forms = (a, bd.form_c[:, src] - (namespace(a).abs(a) * pb.here("eps", lo)).sum(axis=3))
        fair, unfair = decided_shares(
            own.form_a[:, src],
            own.form_c[:, src],
            lo,
            hi,
            pb.here("discrete", lo),
            pb.tol,
            fair_forms,
            pb.every_discrete,
        )
        w.counts.t_credit += time.perf_counter() - t
        return xp.floor(fair / CREDIT_GRID), xp.floor(unfair / CREDIT_GRID)

    def _open(self, w: _Work, lo: Any, hi: Any) -> None:
        """Pieces to bound as they are (no priority: they are ordered by their mass; pieces of no
        mass count for nothing, and would never be taken)."""
        put = self.pb.backend.put
        lo, hi = put(lo), put(hi)
        held = self.pb.mass(lo, hi) > 0
        lo, hi = lo[held], hi[held]
        n = lo.shape[0]
        if n:
            xp = namespace(lo)
            none = tuple(arrays.zeros(xp, n, lo, d) for d in OPEN_DATA)
            w.open.append((lo, hi) + none)

    def _keep(self, w: _Work, lo: Any, hi: Any, best: Any, ok: Any, prio: Any, fair: Any, unfair: Any) -> None:
        """Open bounded boxes, each to split along its feature `best` (`_split_features`); boxes
        that cannot be split (not `ok`) are kept apart, undecided (on the host)."""
        bounded = ~arrays.zeros(namespace(lo), int(ok.sum()), lo, bool)
        w.open.append((lo[ok], hi[ok], bounded, best[ok], prio[ok], fair[ok], unfair[ok]))
        w.credit(fair[ok], unfair[ok])
        if bool((~ok).any()):
            w.stuck.append((arrays.to_numpy(lo[~ok]), arrays.to_numpy(hi[~ok])))

    def _search(self, w: _Work, lo: Any, hi: Any, mass: Any) -> tuple[Any, Any]:
        """Probe undecided boxes at points drawn from their keys; grow proven-unfair boxes around
        some of the counterexamples found (a draw per box). Returns which boxes hold a
        counterexample and which stay whole (the others were carved: their pieces are open), as
        masks where the boxes are."""
        pb = self.pb
        n = lo.shape[0]
        # uniform probes are drawn where the boxes are (a population's on the host): only the
        # logits, and the probes that found a counterexample, come to the host
        put = pb.backend.put if pb.weights is None else arrays.to_numpy
        dlo, dhi = put(lo), put(hi)
        keys = box_keys(self.seed, dlo, dhi)
        keep = np.ones(n, dtype=bool)
        xp = namespace(dlo)
        x = draw_points(BoxDraws(probe_keys(keys)), pb, xp.tile(dlo, (PROBES, 1)), xp.tile(dhi, (PROBES, 1)))
        z, bad, a, b = twin_split(pb, x)
        w.terms["probes"].append(np.array([float(x.shape[0])]))
        w.terms["probe_hits"].append(np.array([float(bad.sum())]))
        has = np.asarray(bad.reshape(PROBES, n).any(axis=0))
        there = pb.backend.put
        if not has.any():
            return there(has), there(keep)
        # one probe per box: the first unfair one
        first = np.argmax(bad.reshape(PROBES, n), axis=0)
        idx = np.flatnonzero(has)
        j = first[idx] * n + idx
        cex = arrays.to_numpy(x[put(j)])  # the probes that found one, brought to the host
        w.cex.append((cex, cex, a[j], b[j]))
        mass = arrays.to_numpy(mass)[idx]
        strong = (z[j, a[j]] > pb.tol) & (z[j, b[j]] < -pb.tol) & (mass > 1) & (mass <= GROW_BELOW * pb.domain_size)
        if self.by_time:
            now = time.perf_counter()
            points = GROW_BATCH if self.t_grow <= GROW_SHARE * (now - self.t_start) else 0
            m = np.flatnonzero(strong)
            m = m[np.argsort(-mass[m], kind="stable")[:points]]
        else:
            m = np.flatnonzero(strong & (BoxDraws(arrays.to_numpy(keys)[idx]).random(idx.size) < self.grow_chance))
        if not m.size:
            return there(has), there(keep)
        r = idx[m]
        t = time.perf_counter()
        rlo, rhi = arrays.to_numpy(lo[there(r)]), arrays.to_numpy(hi[there(r)])  # grown on the host
        glo, ghi, ok = grow(pb, cex[m], a[j[m]], b[j[m]], rlo, rhi, self.chunk)
        counts = w.counts
        counts.boxes_bounded_grow += int(m.size) * (1 + pb.d * RADII)
        gm = pb.mass(glo, ghi)
        use = ok & (gm > 1)
        counts.grow_calls += 1
        counts.t_grow += time.perf_counter() - t
        self.t_grow += time.perf_counter() - t
        if not use.any():
            return there(has), there(keep)
        r, glo, ghi, gm = r[use], glo[use], ghi[use], gm[use]
        w.settle(gm, gm)
        counts.boxes_grown += int(r.size)
        plo, phi = carve(rlo[use], rhi[use], glo, ghi, pb.discrete)
        self._open(w, plo, phi)
        keep[r] = False
        return there(has), there(keep)

    def _exact(self, w: _Work, lo: np.ndarray, hi: np.ndarray) -> None:
        """Settle boxes by enumerating their points (a whole domain in slices of a feature)."""
        pb = self.pb
        t = time.perf_counter()
        if pb.has_eps:
            elo, ehi = pb.enlarge(lo, hi)
            pts = np.prod(ehi - elo + 1, axis=1)
        else:
            pts = np.prod(hi - lo + 1, axis=1)
        if lo.shape[0] == 1 and pts[0] > self.root_points // 4 and not pb.has_eps:
            i = int(np.argmax(hi[0] - lo[0]))
            for v in np.arange(lo[0, i], hi[0, i] + 1):
                a, b = lo.copy(), hi.copy()
                a[0, i] = b[0, i] = v
                self._enumerate(w, a, b)
        else:
            start = 0
            csum = np.cumsum(pts)
            while start < lo.shape[0]:
                base = csum[start - 1] if start else 0
                end = max(start + 1, int(np.searchsorted(csum, base + self.root_points // 4, side="right")))
                self._enumerate(w, lo[start:end], hi[start:end])
                start = end
        w.counts.boxes_exact += lo.shape[0]
        w.counts.points_exact += int(pts.sum())
        w.counts.t_exact += time.perf_counter() - t

    def _enumerate(self, w: _Work, lo: np.ndarray, hi: np.ndarray) -> None:
        res = exact_boxes(self.pb, lo, hi)
        w.settle(self.pb.mass(lo, hi), res.unfair.astype(np.float64))
        w.cex.append((res.cex_x, res.cex_xp, res.cex_a, res.cex_b))


def _blas_on_one_thread() -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own setting
        return
    threadpool_limits(limits=1, user_api="blas")


def credited(sums: dict[str, ExactSum]) -> tuple[float, float]:
    """The masses proven fair and unfair inside the open boxes, from the shards' summed sums."""
    fair, unfair = (max(0.0, float(sums[f"{m}_opened"] - sums[f"{m}_taken"])) * CREDIT_GRID for m in ("fair", "unfair"))
    return fair, unfair
