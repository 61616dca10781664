"""Complete decision of individual fairness of ReLU networks, region by region (generalises Fairify).

The question for each region (a box of the free features: the whole domain, or one partition):
are there x in the region and x' within epsilon of x (in the domain), under protected combinations
a != b (the twin keeps them only for robustness), that the model labels differently? Answers:
`fair` (proven), `unfair` (a pair re-checked on the real model), `unknown` (budget spent).

Branch and bound over boxes, all regions' boxes in one frontier, cheapest evidence first:

1. boxes with few grid points (over their epsilon-window) are enumerated exactly on the model;
2. the symbolic twin bounds decide a box fair when every twin is on one side of 0 over its
   epsilon-enlargement, unfair when one twin is provably positive and another non-positive on it
   (both by the strict tolerance of `Problem.tol`);
3. random points probe the open boxes for pairs;
4. boxes still open are split on the feature that widens their bounds most; from depth
   `milp_depth` on, an open box goes to the MILP of the twin network (`milp.solve_box`), whose
   proofs carry a tolerance-derived margin; a MILP time-out or an unconfirmed candidate splits the
   box again, an unsplittable one stays open (its region is unknown). A network with smooth units
   has no MILP: its boxes are split until the bounds decide them or they cannot be split.

Every pair, from any step, is re-checked on the real model (`recheck`) before a region is called
unfair. A region is fair once all its boxes are closed by proofs. The regions are decided
together, so a verdict that follows from a parent box (a whole-domain bound, a box covering
several partitions' worth of evidence) costs nothing per partition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...memory import default_limit
from ...progress import Progress, ProgressEvent
from ...results import Counterexample
from ..boxes.budget import DONE, Budget
from .counts import RegionCounts
from .exact import exact_boxes, exact_ok
from .milp import solve_box
from .phases import prove_by_phases
from .problem import Problem
from .regions_resume import frontier_state, regions_state, restore_frontier, restore_regions
from .sampling import random_points, twin_split
from .symbolic import crown_cost_ratio

UNKNOWN, FAIR, UNFAIR = 0, 1, 2
VERDICTS = ("unknown", "fair", "unfair")

BATCH = 2048  # boxes bounded per round
EXACT_POINTS = 512  # enumerate boxes with at most this many grid points (window included)
PROBES = 8  # random points tried per open box and round
PROBES_FIRST = 256  # ... and on the first round (the regions themselves)
MAX_CORNER_TWINS = 8  # directed corner probes for up to this many protected combinations
CLIMB_STEPS = 12  # coordinate moves of the local pair search per open box and round
MILP_DEPTH = 6  # open boxes at this depth or deeper go to the MILP (measured: 2 leaves Adult partitions to slow MILPs)
MILP_TIME = 5.0  # seconds per MILP call (a time-out splits the box)
MILP_SHARE = 0.5  # the MILP gets at least this share of the time while bounding could go on
MILP_SLICE = 2.0  # seconds of MILP calls between bounding rounds
ROWS_PER_CHUNK = 1_500_000
TIGHT_MAX_RATIO = 8.0  # measured: full CROWN pays off on the deep 6-layer AC-7 and BM-8 here
TIGHT_MAX_DEPTH = 6
#: Try neuron splitting (`phases`) on boxes before their MILP call. Off: measured at 60 s on Fairify's
#: BM-8 it proved 4 boxes in 8.2 s where the MILP proved 90 in 45 s, on AC-7 none in 19 s
#: (`benchmarks/results/bounds.md`).
NEURON_SPLITS = False
PHASE_GROUP = 8  # boxes given to neuron splitting at once, before their MILP calls


@dataclass
class RegionOutcome:
    """Per-region verdicts (UNKNOWN / FAIR / UNFAIR), re-checked pairs, seconds and proven masses;
    the run's counts, and why it ended."""

    verdict: np.ndarray
    pairs: list[Counterexample | None]
    seconds: np.ndarray
    fair_mass: np.ndarray
    unfair_mass: np.ndarray
    evidence: list[str]
    counts: RegionCounts = field(default_factory=RegionCounts)
    stats: dict[str, Any] = field(default_factory=dict)  # flags and figures besides the counts
    stopped: str = DONE  # why the run ended (`boxes.budget`)


def recheck(pb: Problem, x: np.ndarray, xp: np.ndarray, a: int, b: int) -> Counterexample | None:
    """The pair as a counterexample if the real model labels it differently and it is a legal pair:
    both in the domain, free features within epsilon, an allowed twin pair."""
    if not pb.pairs[a, b]:
        return None
    x, xp = np.asarray(x, np.float64), np.asarray(xp, np.float64)
    inside = np.all((x >= pb.lo) & (x <= pb.hi) & (xp >= pb.lo) & (xp <= pb.hi))
    grid = np.all(~pb.discrete | ((x == np.round(x)) & (xp == np.round(xp))))
    if not (inside and grid and np.all(np.abs(x - xp) <= pb.eps)):
        return None
    X, XP = pb.full(x[None], np.array([a])), pb.full(xp[None], np.array([b]))
    o, op = float(pb.network.logit(X)[0]), float(pb.network.logit(XP)[0])
    if (o > 0) == (op > 0):
        return None
    return Counterexample(X[0].tolist(), XP[0].tolist(), o, op)


class BranchAndBound:
    """The frontier of open boxes of all regions and what is known about each region."""

    def __init__(
        self,
        pb: Problem,
        lo: np.ndarray,
        hi: np.ndarray,
        seed: int = 0,
        progress: Progress | None = None,
        memory_limit: int | None = None,
    ) -> None:
        self.pb = pb
        self.memory_limit = default_limit() if memory_limit is None else memory_limit
        K = lo.shape[0]
        self.lo, self.hi = lo.astype(np.float64), hi.astype(np.float64)
        self.owner = np.arange(K)
        self.depth = np.zeros(K, dtype=np.int64)
        self.verdict = np.zeros(K, dtype=np.int8)
        self.pairs: list[Counterexample | None] = [None] * K
        self.evidence = [""] * K
        self.seconds = np.zeros(K)
        self.fair_mass = np.zeros(K)
        self.unfair_mass = np.zeros(K)
        self.stuck = np.zeros(K, dtype=bool)  # a box that could not be decided nor split
        self.ripe = np.zeros(K, dtype=bool)  # bounded and still open: waiting for the MILP
        self.rng = np.random.default_rng(seed)
        self.milp_depth, self.milp_time = MILP_DEPTH, MILP_TIME
        # the MILP encodes ReLUs only: smooth units are refined by bounds and splits alone, down to
        # boxes too small to split (which leave their region unknown)
        self.milp = pb.network.piecewise_linear
        if not self.milp:
            self.milp_depth = np.iinfo(np.int64).max
        self.progress = progress
        width = max(pb.twin.widths)
        self.chunk = int(np.clip(ROWS_PER_CHUNK // (pb.n_twins * (pb.d + 1) * width), 16, 1024))
        self.tight = crown_cost_ratio(pb.twin, pb.d) <= TIGHT_MAX_RATIO and len(pb.twin.widths) <= TIGHT_MAX_DEPTH
        self.split = np.full(K, -1, dtype=np.int64)
        self.end: float | None = None  # the run's deadline: long steps stop at it
        self.counts = RegionCounts()
        self.stats: dict[str, Any] = {}  # what the run reports besides its counts

    # ----- driving ------------------------------------------------------------------------------
    def run(self, time_limit: float | None, checkpoint: Any = None, resume: bool = False) -> RegionOutcome:
        """Decide the regions; with a `checkpoint`, the state is saved between rounds when one is
        due and at the end; with `resume`, the run starts from the state saved there."""
        t0 = time.perf_counter()
        budget = Budget.of(time_limit, clock=time.perf_counter)
        end = self.end = budget.deadline
        if resume:
            state = checkpoint.load()
            restore_regions(self.pb, self, state, recheck)
            restore_frontier(self, state)
        while True:
            if checkpoint is not None and checkpoint.due():
                checkpoint.save(self.state())
            self._drop_decided()
            live = ~self.stuck
            if not live.any() or budget.spent(memory_full=self.stored_bytes() > self.memory_limit):
                break
            self.counts.rounds += 1
            fresh = np.flatnonzero(live & ~self.ripe)
            # boxes the bounds already left open once (ripe ones, and children of open boxes)
            tried = np.flatnonzero(live & (self.ripe | (self.depth >= 1)))
            now = time.perf_counter()
            milp_due = self.counts.milp_s < MILP_SHARE * (now - t0)
            if self.milp and tried.size and (milp_due or not fresh.size):
                stop = end if not fresh.size else now + MILP_SLICE if end is None else min(end, now + MILP_SLICE)
                self._milp_round(tried, stop, end)
            else:
                self._bound_round(fresh[np.argsort(self.depth[fresh], kind="stable")[:BATCH]])
            self._close_regions()
            self._report(t0)
        self._close_regions()
        if checkpoint is not None:
            checkpoint.save(self.state())
            self.stats.update(checkpoints=checkpoint.saves, checkpoint_s=checkpoint.save_s)
        return RegionOutcome(
            self.verdict.copy(),
            list(self.pairs),
            self.seconds,
            self.fair_mass,
            self.unfair_mass,
            list(self.evidence),
            self.counts,
            dict(self.stats, **budget.flags()),
            budget.stopped,
        )

    def state(self) -> dict[str, Any]:
        """What a resumed run needs (`regions_resume`): the regions and the open boxes."""
        self._drop_decided()
        return dict(regions_state(self.pb, self), **frontier_state(self))

    def stored_bytes(self) -> int:
        """What the open boxes take (their bounds, owners, depths, splits and flags)."""
        return sum(getattr(self, name).nbytes for name in ("lo", "hi", "owner", "depth", "split", "stuck", "ripe"))

    def _late(self) -> bool:
        return self.end is not None and time.perf_counter() >= self.end

    def _take(self, idx: np.ndarray):
        keep = np.ones(self.lo.shape[0], dtype=bool)
        keep[idx] = False
        out = (self.lo[idx], self.hi[idx], self.owner[idx], self.depth[idx], self.split[idx])
        for name in ("lo", "hi", "owner", "depth", "split", "stuck", "ripe"):
            setattr(self, name, getattr(self, name)[keep])
        return out

    def _push(self, lo, hi, owner, depth, split, stuck=None, ripe=False) -> None:
        self.lo = np.concatenate([self.lo, lo])
        self.hi = np.concatenate([self.hi, hi])
        self.owner = np.concatenate([self.owner, owner])
        self.depth = np.concatenate([self.depth, depth])
        self.split = np.concatenate([self.split, split])
        self.stuck = np.concatenate([self.stuck, np.zeros(lo.shape[0], bool) if stuck is None else stuck])
        self.ripe = np.concatenate([self.ripe, np.full(lo.shape[0], ripe)])

    def _drop_decided(self) -> None:
        gone = self.verdict[self.owner] != UNKNOWN
        if gone.any():
            self._take(np.flatnonzero(gone))

    def _close_regions(self) -> None:
        """Regions with no box left and no pair are proven fair."""
        left = np.bincount(self.owner, minlength=self.verdict.shape[0])
        done = (left == 0) & (self.verdict == UNKNOWN)
        self.verdict[done] = FAIR
        for k in np.flatnonzero(done):
            self.evidence[k] = self.evidence[k] or "proof"

    def _charge(self, owner: np.ndarray, seconds: float) -> None:
        if owner.size:
            np.add.at(self.seconds, owner, seconds / owner.size)

    def _unfair(self, k: int, pair: Counterexample, how: str) -> None:
        if self.verdict[k] == UNKNOWN:
            self.verdict[k] = UNFAIR
            self.pairs[k] = pair
            self.evidence[k] = how

    # ----- cheap steps, batched ---------------------------------------------------------------
    def _bound_round(self, idx: np.ndarray) -> None:
        """Enumerate, bound and probe new boxes; open ones are split (shallow) or wait for the MILP."""
        pb = self.pb
        t = time.perf_counter()
        lo, hi, owner, depth, _ = self._take(idx)
        charged = owner
        ex = exact_ok(pb, lo, hi, EXACT_POINTS)
        if ex.any():
            self._exact(lo[ex], hi[ex], owner[ex], depth[ex])
        lo, hi, owner, depth = lo[~ex], hi[~ex], owner[~ex], depth[~ex]
        # probes first: a pair settles the region without bounding it (many probes on the first visit)
        reps = PROBES_FIRST if depth.size and depth.max() == 0 else PROBES
        found = np.zeros(lo.shape[0], dtype=bool)
        step = max(PROBES, 1)
        for _ in range(0, reps, step):  # in slices: memory stays that of PROBES points per box
            if self._late():
                break
            rest = np.flatnonzero(~found)
            found[rest] = self._probe(lo[rest], hi[rest], owner[rest], min(step, reps))
        lo, hi, owner, depth = lo[~found], hi[~found], owner[~found], depth[~found]
        open_ = np.zeros(lo.shape[0], dtype=bool)
        split = np.zeros(lo.shape[0], dtype=np.int64)
        for s in range(0, lo.shape[0], self.chunk):
            if self._late():  # the rest go back unbounded
                self._push(lo[s:], hi[s:], owner[s:], depth[s:], np.zeros(lo.shape[0] - s, np.int64))
                lo, hi, owner, depth, open_, split = lo[:s], hi[:s], owner[:s], depth[:s], open_[:s], split[:s]
                break
            sl = slice(s, s + self.chunk)
            open_[sl], split[sl] = self._bound(lo[sl], hi[sl], owner[sl])
        open_ &= self.verdict[owner] == UNKNOWN
        lo, hi, owner, depth, split = lo[open_], hi[open_], owner[open_], depth[open_], split[open_]
        found = self._climb(lo, hi, owner)
        lo, hi, owner, depth, split = lo[~found], hi[~found], owner[~found], depth[~found], split[~found]
        deep = depth >= self.milp_depth
        self._push(lo[deep], hi[deep], owner[deep], depth[deep], split[deep], ripe=True)
        self._children(lo[~deep], hi[~deep], owner[~deep], depth[~deep], split[~deep])
        self._charge(charged, time.perf_counter() - t)

    def _exact(self, lo, hi, owner, depth) -> None:
        pb = self.pb
        self.counts.boxes_exact += lo.shape[0]
        res = exact_boxes(pb, lo, hi, want_cex=lo.shape[0])
        mass = pb.mass(lo, hi)
        bad = res.unfair > 0
        np.add.at(self.fair_mass, owner[~bad], mass[~bad])
        np.add.at(self.unfair_mass, owner[bad], res.unfair[bad])
        if not bad.any():
            return
        box_of = np.full(res.cex_x.shape[0], -1)
        for i in range(res.cex_x.shape[0]):  # which box each witness lies in
            inside = np.all((res.cex_x[i] >= lo) & (res.cex_x[i] <= hi), axis=1)
            box_of[i] = np.argmax(inside) if inside.any() else -1
        for i in range(res.cex_x.shape[0]):
            k = owner[box_of[i]] if box_of[i] >= 0 else -1
            if k < 0 or self.verdict[k] != UNKNOWN:
                continue
            pair = recheck(pb, res.cex_x[i], res.cex_xp[i], int(res.cex_a[i]), int(res.cex_b[i]))
            if pair is not None:
                self._unfair(k, pair, "counterexample (enumeration)")
            else:
                self.counts.pairs_rejected += 1
        # a count without a confirmed witness: the box stays, stuck, and its region unknown
        stuck = bad & (self.verdict[owner] == UNKNOWN)
        if stuck.any():
            self._push(
                lo[stuck],
                hi[stuck],
                owner[stuck],
                depth[stuck],
                np.zeros(int(stuck.sum()), np.int64),
                np.ones(int(stuck.sum()), bool),
            )

    def _bound(self, lo, hi, owner) -> tuple[np.ndarray, np.ndarray]:
        """Bound boxes: close fair ones, settle regions with provably unfair ones; (open, split)."""
        pb = self.pb
        self.counts.boxes_bounded += lo.shape[0]
        bd, own = pb.window_bounds(lo, hi, self.tight)
        mass = pb.mass(lo, hi)
        fair = np.all(bd.lower > pb.tol, axis=1) | np.all(bd.upper < -pb.tol, axis=1)
        np.add.at(self.fair_mass, owner[fair], mass[fair])
        pos = own.lower > pb.tol
        neg = own.upper < -pb.tol
        unfair = pos.any(axis=1) & neg.any(axis=1) & ~fair
        for r in np.flatnonzero(unfair):
            k = owner[r]
            self.unfair_mass[k] += mass[r]
            if self.verdict[k] != UNKNOWN:
                continue
            x = np.where(pb.discrete, np.ceil(lo[r]), lo[r])
            pair = recheck(pb, x, x, int(np.argmax(pos[r])), int(np.argmax(neg[r])))
            if pair is not None:
                self._unfair(k, pair, "counterexample (bounds)")
        self._corners(own, lo, hi, owner, ~(fair | unfair))
        score = own.sens * (hi - lo)
        can = np.where(pb.discrete, hi > lo, hi - lo > pb.min_real)
        score = np.where(can, score + 1e-300, -1.0)
        return ~(fair | unfair), np.argmax(score, axis=1)

    def _corners(self, bd, lo, hi, owner, open_) -> None:
        """Directed probes: for each pair of twins (a, b), the corner of the box that pushes a's
        lower linear form up and b's upper form down (the bounds' own guess at a pair)."""
        pb = self.pb
        rows = np.flatnonzero(open_ & (self.verdict[owner] == UNKNOWN))
        T = pb.n_twins
        if not rows.size or T < 2 or T > MAX_CORNER_TWINS:
            return
        a_idx, b_idx = np.nonzero(pb.pairs)
        up = bd.form_a[0][rows][:, a_idx]  # (R, P, d): f_a >= up . x + c
        down = bd.form_a[1][rows][:, b_idx]  # (R, P, d): -f_b >= down . x + c
        x = np.where(up + down > 0, hi[rows][:, None, :], lo[rows][:, None, :]).reshape(-1, pb.d)
        _, bad, a, b = twin_split(pb, x, single=True)
        P = a_idx.size
        for j in np.flatnonzero(bad):
            k = owner[rows[j // P]]
            if self.verdict[k] != UNKNOWN:
                continue
            pair = recheck(pb, x[j], x[j], int(a[j]), int(b[j]))
            if pair is not None:
                self._unfair(k, pair, "counterexample (bounds' corner)")

    def _pair_score(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For logits z (n, T): the best allowed pair's min(z_a, -z_b) (> 0: a pair), and a, b."""
        T = z.shape[1]
        score = np.minimum(z[:, :, None], -z[:, None, :])
        score = np.where(self.pb.pairs[None], score, -np.inf).reshape(z.shape[0], -1)
        best = np.argmax(score, axis=1)
        return score[np.arange(z.shape[0]), best], best // T, best % T

    def _climb(self, lo, hi, owner) -> np.ndarray:
        """Local search for pairs in open boxes: from a random point, coordinate moves of shrinking
        size that raise the best twin pair's min(f_a, -f_b); marks boxes whose region became unfair."""
        pb = self.pb
        n = lo.shape[0]
        if not n or pb.n_twins < 2 or not CLIMB_STEPS or self._late():
            return np.zeros(n, dtype=bool)
        x = random_points(self.rng, lo, hi, pb.discrete)
        best, _, _ = self._pair_score(pb.twin.single.logits(x))
        step = (hi - lo) / 2
        d = pb.d
        for _ in range(CLIMB_STEPS):
            step = np.where(pb.discrete, np.maximum(np.floor(step), 1.0), step)
            cand = np.repeat(x[:, None, :], 2 * d, axis=1)  # (n, 2d, d)
            idx = np.arange(d)
            cand[:, idx, idx] += step
            cand[:, d + idx, idx] -= step
            cand = np.clip(cand, lo[:, None, :], hi[:, None, :]).reshape(-1, d)
            sc, _, _ = self._pair_score(pb.twin.single.logits(cand))
            sc = sc.reshape(n, 2 * d)
            j = np.argmax(sc, axis=1)
            up = sc[np.arange(n), j] > best
            x[up] = cand.reshape(n, 2 * d, d)[np.flatnonzero(up), j[up]]
            best = np.where(up, sc[np.arange(n), j], best)
            step = np.where(up[:, None], step, step / 2)
        _, a, b = self._pair_score(pb.twin.single.logits(x))
        found = np.flatnonzero(best > 0)
        return self._rechecked(owner, found, (x[found], x[found], a[found], b[found]), "counterexample (local search)")

    def _probe(self, lo, hi, owner, reps: int) -> np.ndarray:
        """Random pairs in open boxes; marks the boxes whose region turned out unfair."""
        pb = self.pb
        n = lo.shape[0]
        if not n or not reps:
            return np.zeros(n, dtype=bool)
        x = random_points(self.rng, np.tile(lo, (reps, 1)), np.tile(hi, (reps, 1)), pb.discrete)
        z, bad, a, b = twin_split(pb, x, single=True)
        xp, bp = x, b
        if pb.has_eps and not bad.all():
            # a twin of x against an allowed twin of a random point of x's window
            wlo, whi = pb.enlarge(x, x)
            xw = random_points(self.rng, wlo, whi, pb.discrete)
            zw = pb.twin.single.logits(xw)
            own = z > 0
            near = zw > 0
            diff = (own[:, :, None] != near[:, None, :]) & pb.pairs[None]
            hit = diff.reshape(x.shape[0], -1).any(axis=1) & ~bad
            ab = np.argmax(diff.reshape(x.shape[0], -1), axis=1)
            T = pb.n_twins
            a = np.where(hit, ab // T, a)
            bp = np.where(hit, ab % T, b)
            xp = np.where(hit[:, None], xw, x)
            bad = bad | hit
        found = np.flatnonzero(bad)
        return self._rechecked(
            owner, found % n, (x[found], xp[found], a[found], bp[found]), "counterexample (sampling)"
        )

    def _rechecked(self, owner, boxes: np.ndarray, pairs: tuple, how: str) -> np.ndarray:
        """Mark open box `owner[boxes[i]]` unfair when the i-th candidate pair `pairs` (x, twin,
        their outputs a and b) rechecks on the network; which of `owner` are now decided."""
        for k, x, xp, a, b in zip(owner[boxes], *pairs):
            if self.verdict[k] != UNKNOWN:
                continue
            pair = recheck(self.pb, x, xp, int(a), int(b))
            if pair is not None:
                self._unfair(k, pair, how)
        return self.verdict[owner] != UNKNOWN

    def _children(self, lo, hi, owner, depth, split) -> None:
        """Split boxes in two on their chosen feature; unsplittable ones become stuck."""
        pb = self.pb
        if not lo.shape[0]:
            return
        r = np.arange(lo.shape[0])
        a, b = lo[r, split], hi[r, split]
        disc = pb.discrete[split]
        can = np.where(disc, b > a, b - a > pb.min_real[split])
        if (~can).any():
            self._push(lo[~can], hi[~can], owner[~can], depth[~can], split[~can], np.ones((~can).sum(), bool))
        lo, hi, owner, depth, split, a, b, disc = (v[can] for v in (lo, hi, owner, depth, split, a, b, disc))
        r = np.arange(lo.shape[0])
        mid = np.where(disc, np.floor((a + b) / 2), (a + b) / 2)
        left_hi = hi.copy()
        left_hi[r, split] = mid
        right_lo = lo.copy()
        right_lo[r, split] = np.where(disc, mid + 1, mid)
        self._push(
            np.concatenate([lo, right_lo]),
            np.concatenate([left_hi, hi]),
            np.tile(owner, 2),
            np.tile(depth + 1, 2),
            np.tile(split, 2),
        )

    # ----- the exact back end -----------------------------------------------------------------
    def _milp_round(self, idx: np.ndarray, end: float | None, hard_end: float | None) -> None:
        """MILP on boxes the bounds left open, shallowest first, then regions with the fewest open
        boxes; no call starts after `end`, none runs past `hard_end`; boxes not reached go back as
        they were."""
        pb = self.pb
        left = np.bincount(self.owner, minlength=self.verdict.shape[0])
        idx = idx[np.lexsort((left[self.owner[idx]], self.depth[idx]))]
        ripe = self.ripe[idx]
        lo, hi, owner, depth, split = self._take(idx)
        back = np.zeros(lo.shape[0], dtype=bool)  # boxes to split again
        proven = np.zeros(lo.shape[0], dtype=bool)  # by neuron splits, before their MILP
        for i in range(lo.shape[0]):
            k = owner[i]
            if self.verdict[k] != UNKNOWN:
                continue
            if NEURON_SPLITS and i % PHASE_GROUP == 0 and not self._late():
                proven[i : i + PHASE_GROUP] = self._phases(lo[i : i + PHASE_GROUP], hi[i : i + PHASE_GROUP])
            if proven[i]:
                self.fair_mass[k] += float(pb.mass(lo[i : i + 1], hi[i : i + 1])[0])
                continue
            now = time.perf_counter()
            if end is not None and now >= end:
                # out of time: the rest stay open, as they were
                for flag in (True, False):
                    sel = np.flatnonzero(ripe[i:] == flag) + i
                    self._push(lo[sel], hi[sel], owner[sel], depth[sel], split[sel], ripe=flag)
                # boxes already tried keep their flags: a failed one is split below, never dropped
                lo, hi, owner, depth, split, back = lo[:i], hi[:i], owner[:i], depth[:i], split[:i], back[:i]
                break
            limit = self.milp_time if hard_end is None else min(self.milp_time, hard_end - now)
            ans = solve_box(pb, lo[i], hi[i], limit, True)
            self.counts.milp_calls += 1
            self.counts.milp_s += ans.elapsed
            self.seconds[k] += time.perf_counter() - now
            if ans.status == "fair":
                self.counts.milp_fair += 1
                self.fair_mass[k] += float(pb.mass(lo[i : i + 1], hi[i : i + 1])[0])
                if not self.evidence[k]:
                    self.evidence[k] = "proof"
                continue
            if ans.status == "pair":
                assert ans.x is not None and ans.xp is not None  # a pair comes with its points
                pair = recheck(pb, ans.x, ans.xp, ans.a, ans.b)
                if pair is not None:
                    self.counts.milp_pairs += 1
                    self._unfair(k, pair, "counterexample (MILP)")
                    continue
                self.counts.pairs_rejected += 1
            else:
                self.counts.milp_unknown += 1
            back[i] = True
        self._children(lo[back], hi[back], owner[back], depth[back], split[back])

    def _phases(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Which boxes neuron splitting proves fair (`phases`); its time counts as the MILP's."""
        pb = self.pb
        t = time.perf_counter()
        wlo, whi = pb.enlarge(lo, hi) if pb.has_eps else (lo, hi)
        proven = prove_by_phases(pb.bounder, wlo, whi, pb.tol, same_side=pb.has_eps)
        spent = time.perf_counter() - t
        self.counts.phases_fair += int(proven.sum())
        self.counts.phases_s += spent
        self.counts.milp_s += spent
        return proven

    def _report(self, t0: float) -> None:
        if self.progress is None:
            return
        self.progress(regions_event(self.verdict, time.perf_counter() - t0, int(self.lo.shape[0])))


def regions_event(verdict: np.ndarray, elapsed_s: float, open_boxes: int | None = None) -> ProgressEvent:
    """Progress of the regions' verdicts (UNKNOWN / FAIR / UNFAIR)."""
    K = verdict.shape[0]
    fair, unfair = int((verdict == FAIR).sum()), int((verdict == UNFAIR).sum())
    return ProgressEvent(
        elapsed_s=elapsed_s,
        certified=fair / K,
        falsified=unfair / K,
        undecided=1.0 - (fair + unfair) / K,
        boxes=open_boxes,
        decided=fair + unfair,
        partitions=K,
    )


def decide_regions(
    pb: Problem,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    checkpoint: Any = None,
    resume: bool = False,
    memory_limit: int | None = None,
) -> RegionOutcome:
    """Decide every region [lo[k], hi[k]] (boxes of the free features) within the time limit and
    `memory_limit` bytes of open boxes."""
    bb = BranchAndBound(pb, lo, hi, seed, progress, memory_limit)
    return bb.run(time_limit, checkpoint, resume)
