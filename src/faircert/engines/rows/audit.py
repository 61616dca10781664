"""The per-row audit's driver, shared by every model kind.

For each row x the twins are x' with another protected combination, each epsilon-feature within
its tolerance of x and every other feature equal to x. The domain clips the epsilon-moves only: a
row's value outside the domain stays as it is, and its moves reach no further than the domain or
the row itself (the window of feature j is [max(x_j - eps_j, min(lo_j, x_j)), min(x_j + eps_j,
max(hi_j, x_j))]). A row the model cannot evaluate at all (a missing value, a code that is no
category of the domain, a protected value outside the domain's combinations) is `unknown` with
its reason; the other rows are audited as usual.

The driver runs the flip test (epsilon 0: one model call per twin) on every row, then hands the
rows it leaves open to the model kind's `decide`, in chunks sized to take about `ROUND_SECONDS`,
so that progress moves and a stop request, the time limit or the memory limit ends the run within
a chunk. Model calls are sized from the model's pace (`Pace`), and `decide` checks the deadline
row by row and between calls, so long work of one row (a MILP, a large ball) gets no more than the
time left. The memory limit counts the rows' bookkeeping, the twins found and one call's twins.
Rows not reached are `unknown` ("time limit", "memory limit", or "not reached" after a stop
request), and every row already decided is kept. The time limit counts from the call's start
(`limits.time_budget`: reading the rows and the model count against it), and the audit ends
`FINISH_ROW_S` a row before it, so that building the result and writing its files fit in it too.

A model kind is built by the driver from the question over the domain widened to hold every
readable row (`reach`), so its bounds and tolerances cover the rows' own values. It supplies
`margins(X)` (label 1 iff margin > 0; margins within `tol` of 0 decide nothing),
`decide(audit, rows, deadline)` (the deadline on the wall clock, `time.time()`) and, where a
costly last stage leaves rows `DEFERRED`, `finish(audit, rows, deadline)`, run on those rows once
every open row has been through `decide` (a time limit then leaves open only rows that need the
costly stage). Its per-row
budgets are `RowLimits`, named in the reason of every row they leave `unknown`. Chunks run on
local worker processes or Ray actors (`--workers`, `--ray`) in rounds of one chunk per worker;
rows are independent and each row's random search is seeded by the row's index, so the verdicts
do not depend on where, or in which chunk, they ran.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from ... import memory
from ...checkpoint import Checkpoint, fingerprint
from ...domain import MAX_BOUND, Domain
from ...errors import PropertyError
from ...limits import command_deadline
from ...options import AuditOptions
from ...progress import Progress, ProgressEvent
from ...properties import IndividualFairness, RowAudit
from ...results.rows import RowsResult
from ..boxes.budget import DONE, INTERRUPTED, MEMORY_LIMIT, TIME_LIMIT, Budget
from ..boxes.workers import Parallelism

#: Twins evaluated per model call (rows x ball points x protected combinations), at most: a
#: model that encodes its inputs (one-hot columns) holds a few times this many values a call.
BATCH = 32_768
#: Twins re-checked on the model at a time as the result is built.
RECHECK = 8_192
#: Most protected combinations a row's twins may take.
MAX_COMBOS = 4096
#: Seconds one round of chunks should take: the grain of progress, stop requests and the limits.
ROUND_SECONDS = 0.25
#: Twins of the first model call of a run of calls (later ones follow the model's pace).
FIRST_CALL = 256
#: The most of a call's time its fixed cost may take (`Pace`).
FIXED_SHARE = 0.25
#: Rows of the first chunk, and the most a chunk may hold.
FIRST_CHUNK = 1
MAX_CHUNK = 4096
#: Bytes the audit keeps per row (verdict, method, twin slot, label, flags; its copy of the row's
#: features comes on top) and per twin found beside its features (an array's header): what the
#: memory limit counts, with the twins of the model call in progress.
ROW_BYTES = 64
TWIN_BYTES = 112

#: Seconds a row takes after the audit: its result built, the rows CSV and the JSON written (about
#: 4 us on a 10^6-row audit, more on a loaded machine: benchmarks/results/resume.md). The audit
#: ends this much before the time limit, so that the limit holds for reading, auditing and writing;
#: at most `FINISH_SHARE` of the limit is kept back.
FINISH_ROW_S = 4e-6
FINISH_SHARE = 0.4

FAIR, UNFAIR, UNKNOWN = "fair", "unfair", "unknown"
#: The reason of a row the run never decided: after a stop request, or at a limit (its words).
NOT_REACHED = "not reached"
#: The reason of a row `decide` left to the kind's `finish` (its costly last stage, a MILP).
DEFERRED = "deferred to the last stage"
UNDONE = (NOT_REACHED, DEFERRED, TIME_LIMIT, MEMORY_LIMIT)
#: The reason of a row whose flipping twin a black box labelled otherwise when asked again.
UNSTABLE = "the model labelled the twin otherwise when asked again (its labels depend on the batch)"
#: Rows checked at a time for values the model cannot evaluate.
CHECK_BLOCK = 65_536
#: Kinds whose values are codes: a value that is no code of the domain has no meaning to the model.
CODED = ("binary", "categorical")
#: The reason of a row the model cannot evaluate starts with this.
UNREADABLE = "cannot be evaluated: "


@dataclass(frozen=True)
class RowLimits:
    """The per-row budgets of the model kinds (`AuditOptions`' fields of the same names, checked
    there). A row one of them leaves open is `unknown`, with a reason that names it; a re-run with a
    larger value decides more rows."""

    max_cells: int = AuditOptions.max_cells
    max_twins: int | None = AuditOptions.max_twins
    milp_seconds: float = AuditOptions.milp_seconds

    @classmethod
    def of(cls, options: AuditOptions) -> RowLimits:
        """The budgets `options` sets (options without them keep the defaults)."""
        given = {f.name: getattr(options, f.name, None) for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in given.items() if v is not None})

    def twins(self, default: int) -> int:
        return default if self.max_twins is None else self.max_twins


@dataclass
class Decisions:
    """What `decide` found for some rows: verdict, method and twin (or None) per row."""

    verdicts: list[str]
    methods: list[str]
    twins: list[np.ndarray | None]

    @classmethod
    def open(cls, n: int, why: str = NOT_REACHED) -> Decisions:
        """n rows, none decided yet."""
        return cls([UNKNOWN] * n, [why] * n, [None] * n)

    def set(self, k: int, verdict: str, method: str, twin: np.ndarray | None = None) -> None:
        self.verdicts[k], self.methods[k], self.twins[k] = verdict, method, twin

    def merge(self, where: Any, found: Decisions) -> None:
        """Rows `where` of these decisions are `found`'s, in order."""
        for k, v, m, t in zip(where, found.verdicts, found.methods, found.twins):
            self.set(int(k), v, m, t)


class RowModel(Protocol):
    """What the driver needs of a model kind."""

    name: str
    tol: float

    def margins(self, X: np.ndarray) -> np.ndarray: ...

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions: ...


class StagedRowModel(RowModel, Protocol):
    """A model kind whose `decide` leaves rows at `DEFERRED` for a costly last stage."""

    def finish(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions: ...


@dataclass
class Pace:
    """How many twins the next model call (or rows the next chunk) should take: calls sized to
    last about `ROUND_SECONDS` (learned from the calls made), at most `cap`, growing at most
    fourfold, so that the deadline is checked between the calls of a slow model too (a black box
    may take a millisecond a twin).

    A call's time is fitted as a fixed cost plus a cost per twin, through the last two sizes
    measured. A model whose every call has a fixed cost near `ROUND_SECONDS` or above (a pipeline's
    checks, k-nearest neighbours' threads on a loaded machine) gets calls long enough that the
    fixed cost is at most `FIXED_SHARE` of each: sized by the time per twin alone, its calls
    shrank call after call, each costing as much as the last, and a 15 s run decided nothing."""

    cap: int
    size: int = FIRST_CALL
    #: (size, seconds) of the last call measured
    last: tuple[int, float] | None = None
    #: the fixed cost of a call, as last fitted
    fixed: float = 0.0

    def __post_init__(self) -> None:
        self.size = max(1, min(self.size, self.cap))

    def margins(self, kind: RowModel, Y: np.ndarray) -> np.ndarray:
        began = time.perf_counter()
        M = kind.margins(Y) if len(Y) else np.zeros(0)
        if len(Y) >= self.size // 2:  # a small call says little of the model's pace
            self.took(len(Y), time.perf_counter() - began)
        return M

    def took(self, n: int, seconds: float) -> None:
        """A call of `n` took `seconds`: the next call's size."""
        if self.last is not None and self.last[0] != n:  # two sizes: the fixed cost apart
            per = max((seconds - self.last[1]) / (n - self.last[0]), 0.0)
            self.fixed = min(max(seconds - per * n, 0.0), seconds)
        else:  # one size: the fixed cost as last fitted (none at first)
            self.fixed = min(self.fixed, seconds)
            per = (seconds - self.fixed) / n
        self.last = (n, seconds)
        target = max(ROUND_SECONDS, self.fixed / FIXED_SHARE)
        fits = (target - self.fixed) / per if per > 0 else float(self.cap)
        self.size = int(min(self.cap, 4 * self.size, max(1, fits)))


def past(deadline: float | None) -> bool:
    """Whether the wall-clock `deadline` (None: none) has passed."""
    return deadline is not None and time.time() >= deadline


def row_rng(seed: int, row: int) -> np.random.Generator:
    """The random draws of one row's search: the same wherever and in whichever chunk it runs."""
    return np.random.default_rng([seed, row])


def unreadable(domain: Domain, protected: tuple[int, ...], X: np.ndarray) -> dict[int, str]:
    """The rows the model cannot evaluate, each with the reason (the first column at fault)."""
    # whole-table tests find the rows at fault (a column of a wide row-major table is slow to walk);
    # their reasons are then read off those rows alone
    lo = np.array([f.min for f in domain.features], dtype=np.float64)
    hi = np.array([f.max for f in domain.features], dtype=np.float64)
    bounded = np.array([f.kind in CODED or j in protected for j, f in enumerate(domain.features)])
    whole_only = np.array([f.kind in CODED or f.is_discrete for f in domain.features])
    lo, hi = np.where(bounded, lo, -np.inf), np.where(bounded, hi, np.inf)
    faulty = np.zeros(len(X), dtype=bool)
    with np.errstate(invalid="ignore"):
        for start in range(0, len(X), CHECK_BLOCK):  # blocks of rows: small temporaries
            B = np.asarray(X[start : start + CHECK_BLOCK], dtype=np.float64)
            bad = ~(np.abs(B) <= MAX_BOUND) | (B < lo) | (B > hi) | (whole_only & (B != np.round(B)))
            faulty[start : start + len(B)] = bad.any(axis=1)
    rows = np.flatnonzero(faulty)
    return {int(rows[k]): why for k, why in _reasons(domain, protected, np.asarray(X[rows], dtype=np.float64)).items()}


def _reasons(domain: Domain, protected: tuple[int, ...], X: np.ndarray) -> dict[int, str]:
    """`unreadable`'s answer on rows X, feature by feature."""
    out: dict[int, str] = {}
    whole = X == np.round(X)
    combos_inside = set(protected)
    for j, f in enumerate(domain.features):
        x = X[:, j]
        with np.errstate(invalid="ignore"):
            faults = [
                (~np.isfinite(x), "no value (missing, or a category the domain does not name)"),
                (np.abs(x) > MAX_BOUND, "a value too large to evaluate"),
            ]
            if f.kind in CODED:
                codes = "0 or 1" if f.kind == "binary" else "a category"
                faults.append(((x < f.min) | (x > f.max) | ~whole[:, j], f"a code that is not {codes} of the domain"))
            elif f.is_discrete:
                faults.append((~whole[:, j], "a value that is not a whole number"))
            if j in combos_inside:
                faults.append(((x < f.min) | (x > f.max), "a protected value outside the domain's"))
        for bad, why in faults:
            for i in np.flatnonzero(bad).tolist():
                out.setdefault(i, f"{UNREADABLE}{f.name}: {why}")
    return out


#: The last question's unreadable rows, by a weak reference to the question: the registry's
#: predicate, the model kind and the audit each ask for them. A question is immutable and made anew
#: for each audit, so the answer never outlives the rows it was computed on.
_last_unread: list[Any] = [None, {}]


def unread_rows(question: RowAudit) -> dict[int, str]:
    """`unreadable` on the question's rows."""
    ref, answer = _last_unread
    if ref is None or ref() is not question:
        answer = unreadable(question.prop.domain, question.prop.protected, cast(Any, question.rows))
        _last_unread[:] = [weakref.ref(question), answer]
    return dict(answer)


def reach(question: RowAudit) -> IndividualFairness:
    """The question's property over its domain widened to hold every readable row's values, where
    the model kinds build their bounds and tables."""
    prop, X = question.prop, question.rows
    bad = unread_rows(question)
    if len(bad) == len(X):
        return prop
    if bad:  # a copy of the readable rows only then
        keep = np.ones(len(X), dtype=bool)
        keep[list(bad)] = False
        X = X[keep]
    low, high = X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64)
    features = []
    for j, f in enumerate(prop.domain.features):
        if f.kind in CODED or j in prop.protected:
            features.append(f)  # codes outside make a row unreadable: the domain holds every readable one
        else:
            lo, hi = min(f.min, low[j]), max(f.max, high[j])
            features.append(f if (lo, hi) == (f.min, f.max) else dataclasses.replace(f, min=lo, max=hi))
    return dataclasses.replace(prop, domain=dataclasses.replace(prop.domain, features=tuple(features)))


@dataclass
class Audit:
    """The audit's fixed data: rows, protected combinations, tolerances and windows."""

    question: RowAudit
    combos: np.ndarray  # (T, p) protected combinations
    own: np.ndarray  # (n,) index of each row's own combination
    eps: np.ndarray  # (d,) tolerance per feature (floored on discrete features)
    lower: np.ndarray  # (d,) domain bounds
    upper: np.ndarray
    discrete: np.ndarray
    #: the rows as the model kinds read them: an unreadable row is replaced by the domain's
    #: lower corner, so batches stay whole (its verdict is set apart)
    readable: np.ndarray = field(default=None)  # type: ignore[arg-type]
    unread: dict[int, str] = field(default_factory=dict)
    limits: RowLimits = field(default_factory=RowLimits)
    #: twins per model call (the kind's batch, within a share of the memory limit)
    batch: int = BATCH
    seed: int = 0
    #: the model's label of each row (-1: a row not labelled before the run stopped)
    labels: np.ndarray = field(default=None)  # type: ignore[arg-type]

    @classmethod
    def of(cls, question: RowAudit, limits: RowLimits | None = None, seed: int = 0) -> Audit:
        prop, X = question.prop, question.rows
        dom = prop.domain
        values = [dom.features[i].values() for i in prop.protected]
        count = int(np.prod([len(v) for v in values]))
        if count > MAX_COMBOS:
            raise PropertyError(f"the protected features have {count} combinations; at most {MAX_COMBOS}")
        combos = np.array(list(itertools.product(*values)), dtype=np.float64).reshape(count, len(values))
        unread = unread_rows(question)
        readable = X  # float64, or float32 holding the same values (`take` reads them as float64)
        if unread:  # a copy only then: a large audit's rows are its largest array
            readable = readable.copy()
            readable[list(unread)] = dom.lower
        # combinations in itertools.product's order: a row's own is its values' mixed-radix number
        offsets = [readable[:, i] - dom.features[i].min for i in prop.protected]
        own = np.ravel_multi_index(tuple(o.astype(np.int64) for o in offsets), [len(v) for v in values])
        own = np.asarray(own, dtype=np.int64).reshape(len(X))
        disc = dom.discrete_mask
        eps = np.asarray(prop.epsilon, dtype=np.float64)
        eps = np.where(disc, np.floor(eps + 1e-12), eps)
        return cls(
            question, combos, own, eps, dom.lower, dom.upper, disc, readable, unread, limits or RowLimits(), seed=seed
        )

    @property
    def prop(self):
        return self.question.prop

    @property
    def rows(self) -> np.ndarray:
        return self.readable

    def take(self, rows: Any) -> np.ndarray:
        """Rows `rows` (indices or a slice) in float64: arithmetic on them stays exact."""
        return np.asarray(self.readable[rows], dtype=np.float64)

    @property
    def has_eps(self) -> bool:
        return bool(np.any(self.eps > 0))

    def windows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's ball as a box (lower, upper corners), protected columns at the row's own
        values: the epsilon-moves clipped to the domain, which is widened to hold the row itself."""
        X = self.take(rows)
        return np.maximum(X - self.eps, np.minimum(self.lower, X)), np.minimum(X + self.eps, np.maximum(self.upper, X))

    def others(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), T): the combinations each row's twins may take (all but its own)."""
        return np.arange(len(self.combos))[None, :] != self.own[rows][:, None]

    def with_combo(self, Y: np.ndarray, combo: np.ndarray | int) -> np.ndarray:
        """Copies of points Y (..., d) with the protected columns set to the combinations numbered
        `combo` (one per point, or one for all)."""
        Y = np.array(Y, dtype=np.float64, copy=True)
        Y[..., list(self.prop.protected)] = self.combos[combo]
        return Y


@dataclass
class _Book:
    """Every row's verdict, reason and twin as the run goes; what the memory limit counts."""

    verdicts: list[str]
    methods: list[str]
    twins: list[np.ndarray | None]
    #: rows `decide` settled (what a checkpoint keeps; the driver's own decisions are recomputed)
    chunked: np.ndarray
    found: int = 0
    done: int = 0
    #: rows per verdict, kept as verdicts change: progress reports read them without a pass over the rows
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, n: int) -> _Book:
        return cls([UNKNOWN] * n, [NOT_REACHED] * n, [None] * n, np.zeros(n, dtype=bool), counts={UNKNOWN: n})

    def set(self, i: int, verdict: str, method: str, twin: np.ndarray | None = None) -> None:
        if twin is not None and self.twins[i] is None:
            self.found += 1
        self.counts[self.verdicts[i]] -= 1
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        self.verdicts[i], self.methods[i], self.twins[i] = verdict, method, twin

    def fill(self, rows: np.ndarray, verdict: str, method: str) -> None:
        """The same verdict and method, no twin, for many rows at once."""
        verdicts, methods, counts = self.verdicts, self.methods, self.counts
        for i in rows.tolist():
            counts[verdicts[i]] -= 1
            verdicts[i], methods[i] = verdict, method
        counts[verdict] = counts.get(verdict, 0) + len(rows)

    def take(self, rows: np.ndarray, found: Decisions) -> None:
        for i, v, m, t in zip(rows.tolist(), found.verdicts, found.methods, found.twins):
            self.set(i, v, m, t)
            self.chunked[i] = m not in UNDONE
            self.done += m not in UNDONE

    def full(self, audit: Audit, limit: int) -> bool:
        """Whether the state kept, with the twins of one model call, passes `limit` bytes."""
        d = audit.rows.shape[1]
        held = len(self.verdicts) * (ROW_BYTES + 8 * d) + self.found * (8 * d + TWIN_BYTES)  # rows: their copy
        return held + audit.batch * 8 * d > limit


def run(
    make: Callable[[IndividualFairness], RowModel], question: RowAudit, options: AuditOptions, progress: Progress | None
) -> RowsResult:
    """Audit every row of `question` with the model kind `make` builds over `reach(question)`; see
    the module docstring."""
    t0 = time.perf_counter()
    n = len(question.rows)
    read_s, reserve = _before(options.time_limit), _reserve(options.time_limit, n)
    budget = Budget.of(options.time_limit, elapsed=read_s + reserve)
    limit = options.memory_limit or memory.limit()
    audit = Audit.of(question, RowLimits.of(options), options.seed)
    kind = make(reach(question))
    d = audit.rows.shape[1]
    # one model call's twins take at most a quarter of the memory limit
    audit.batch = max(1, min(getattr(kind, "batch", BATCH), limit // (32 * d)))
    book = _Book.of(n)
    for i, why in audit.unread.items():
        book.set(i, UNKNOWN, why)
    margins = _labelled(kind, audit, budget)
    audit.labels = np.where(np.isnan(margins), -1, margins > 0).astype(np.int64)
    flip, open_rows = _flip_test(kind, audit, book, budget, limit, np.abs(margins) <= kind.tol)
    checkpoint = _checkpoint(question, options)
    if options.resume:  # rows a killed run decided stay decided; the rest continue
        assert checkpoint is not None  # resuming names its checkpoint
        state = checkpoint.load()
        restored = _restored(state, n, question.rows.shape[1])
        if state.get("limits") != dataclasses.asdict(audit.limits):  # other budgets: open rows are tried again
            restored = [r for r in restored if r[1] != UNKNOWN]
        _check_twins(kind, audit, restored)
        for i, v, m, t in restored:
            book.set(i, v, m, t)
            book.chunked[i] = True
        open_rows = open_rows[~book.chunked[open_rows]]
    book.done = sum(m not in UNDONE for m in book.methods)
    _report(progress, book, t0)
    _decide_open(kind, audit, book, open_rows, budget, limit, options, checkpoint, lambda: _report(progress, book, t0))
    if checkpoint is not None:
        checkpoint.save(_state(book, audit.limits))
    result = _result(kind, audit, book, flip, budget, t0)
    result.timings = {"read_s": read_s, "audit_s": result.elapsed_s, "finish_reserve_s": reserve}
    return result


def _before(time_limit: float | None) -> float:
    """Seconds the call spent before the audit began (reading the rows and the model), counted
    against its time limit: the call's deadline (`limits.time_budget`) is `time_limit` after its start."""
    deadline = command_deadline()
    if time_limit is None or deadline is None:
        return 0.0
    return max(0.0, time.monotonic() - (deadline - time_limit))


def _reserve(time_limit: float | None, n: int) -> float:
    """Seconds of the time limit the audit leaves for building its result and writing the rows
    (`FINISH_ROW_S` a row), at most `FINISH_SHARE` of the limit."""
    return 0.0 if time_limit is None else min(FINISH_SHARE * time_limit, n * FINISH_ROW_S)


def _margins(kind: RowModel, X: np.ndarray, batch: int) -> np.ndarray:
    """The model's margins of X, `batch` rows per call."""
    if len(X) <= batch:
        return np.asarray(kind.margins(X), dtype=np.float64).reshape(len(X))
    return np.concatenate([kind.margins(X[s : s + batch]) for s in range(0, len(X), batch)])


def _labelled(kind: RowModel, audit: Audit, budget: Budget) -> np.ndarray:
    """The model's margin of each row, in calls of its pace; NaN for the rows a stop or the
    deadline leaves (a slow model may not even label every row in time)."""
    n = len(audit.rows)
    out, start, pace = np.full(n, np.nan), 0, Pace(audit.batch)
    while start < n and not (start and budget.spent()):
        piece = audit.take(slice(start, start + pace.size))
        out[start : start + len(piece)] = pace.margins(kind, piece)
        start += len(piece)
    return out


def _flip_test(
    kind: RowModel, audit: Audit, book: _Book, budget: Budget, limit: int, own_unsure: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Decides the rows the flip test settles (rows whose own margin is `own_unsure` stay
    unknown), and returns (the rows some other protected combination flips, the rows left to
    `decide`: the others when epsilon-moves remain to be checked, none otherwise)."""
    n, T = len(audit.rows), len(audit.combos)
    flip = np.zeros(n, dtype=bool)
    left: list[np.ndarray] = []
    readable = np.ones(n, dtype=bool)
    readable[list(audit.unread)] = False
    has_eps = audit.has_eps
    pace, start = Pace(audit.batch), 0
    while start < n and not budget.spent(memory_full=book.full(audit, limit)):
        rows = np.arange(start, min(n, start + max(1, pace.size // T)))
        start += len(rows)
        Y = audit.with_combo(np.repeat(audit.take(rows), T, axis=0), np.tile(np.arange(T), len(rows)))
        M = pace.margins(kind, Y).reshape(len(rows), T)
        margins = np.abs(M) > kind.tol
        differs = audit.others(rows) & margins & ((M > 0) != (audit.labels[rows][:, None] == 1))
        unsure = np.any(audit.others(rows) & ~margins, axis=1)
        Y = Y.reshape(len(rows), T, -1)
        sure = readable[rows] & ~own_unsure[rows]
        book.fill(rows[readable[rows] & own_unsure[rows]], UNKNOWN, "own margin within rounding tolerance")
        hit = sure & differs.any(axis=1)
        pick = np.argmax(differs, axis=1)
        flip[rows[hit]] = True
        for r in np.flatnonzero(hit).tolist():  # each twin its own array: the batch's memory is let go
            book.set(int(rows[r]), UNFAIR, "flip test", Y[r, pick[r]].copy())
        rest = sure & ~hit
        if has_eps:
            left.append(rows[rest])
        else:
            book.fill(rows[rest & unsure], UNKNOWN, "twin margin within rounding tolerance")
            book.fill(rows[rest & ~unsure], FAIR, "flip test")
    return flip, np.concatenate(left) if left else np.zeros(0, dtype=np.int64)


def _decide_open(
    kind: RowModel,
    audit: Audit,
    book: _Book,
    open_rows: np.ndarray,
    budget: Budget,
    limit: int,
    options: AuditOptions,
    checkpoint: Checkpoint | None,
    report: Callable[[], None],
) -> None:
    """`decide` on the open rows, chunk by chunk, then the kind's `finish` on the rows it deferred,
    until all are decided or a limit is reached: every row gets the cheap stages before any row
    gets the costly one, so a time limit leaves open only rows that need it."""
    if not len(open_rows):
        return
    # on a device: this process, or the workers asked for (spawned)
    parallel = Parallelism.of(options.workers, options.ray_address, options.device)
    # the deadline on the wall clock: workers (and Ray nodes) read their own clocks
    job = _Job(kind, audit, None if budget.deadline is None else time.time() + budget.left())
    with parallel.open(job) as pool:
        for stage in ("decide", "finish"):
            if stage == "finish":
                open_rows = np.array([i for i in open_rows.tolist() if book.methods[i] == DEFERRED], dtype=np.int64)
            for chunks in _rounds(open_rows, parallel.workers):
                if budget.spent(memory_full=book.full(audit, limit)):
                    return
                for (rows,), found in zip(chunks, pool.map(stage, chunks)):
                    book.take(rows, found)
                report()
                if checkpoint is not None and checkpoint.due():
                    checkpoint.save(_state(book, audit.limits))


def _rounds(rows: np.ndarray, workers: int) -> Iterator[list[tuple[np.ndarray]]]:
    """Rounds of one chunk of `rows` per worker, each chunk sized from the last round's pace so
    that a round takes about `ROUND_SECONDS` (a slow row holds up only a small first chunk)."""
    pace, start = Pace(MAX_CHUNK, FIRST_CHUNK), 0
    while start < len(rows):
        chunks = []
        for _ in range(workers):
            if start < len(rows):
                chunks.append((rows[start : start + pace.size],))
                start += pace.size
        began = time.perf_counter()
        yield chunks
        # grow at most fourfold a round: one fast round says little of the next rows
        pace.took(max(len(c) for (c,) in chunks), time.perf_counter() - began)


def _result(kind: RowModel, audit: Audit, book: _Book, flip: np.ndarray, budget: Budget, t0: float) -> RowsResult:
    """The result, every unfair row's twin re-checked on the model."""
    n = len(book.verdicts)
    stopped = budget.stopped
    if stopped == DONE and TIME_LIMIT in book.methods:  # a worker reached the deadline first
        stopped = TIME_LIMIT
    undone = {NOT_REACHED: stopped, DEFERRED: stopped} if stopped in (TIME_LIMIT, MEMORY_LIMIT) else {}
    undone |= {DEFERRED: NOT_REACHED} if stopped == INTERRUPTED else {}
    methods = book.methods
    for i in (i for i, m in enumerate(methods) if m in undone):  # in place: a large audit's list is long
        methods[i] = undone[methods[i]]
    twins, verdicts = book.twins, book.verdicts
    found = [i for i, t in enumerate(twins) if t is not None]
    twin_labels: list[int | None] = [None] * n
    for start in range(0, len(found), RECHECK):  # in pieces: a large audit's twins are many
        some = found[start : start + RECHECK]
        rechecked = _margins(kind, np.stack([twins[i] for i in some]), audit.batch) > 0  # type: ignore[misc]
        for i, label in zip(some, rechecked.tolist()):
            twin_labels[i] = int(label)
    for i in found:  # every unfair row's twin is re-checked on the model
        if verdicts[i] == UNFAIR and twin_labels[i] == int(audit.labels[i]):
            if not getattr(kind, "batch_dependent", False):
                raise AssertionError(f"row {i}: the twin found does not change the decision")
            # a black box may label a point otherwise in another batch (k-nearest neighbours break
            # distance ties by the batch's arithmetic): no pair it labels apart, nothing claimed
            verdicts[i], book.methods[i], twins[i], twin_labels[i] = UNKNOWN, UNSTABLE, None, None
            flip[i] = False
    counts = {v: verdicts.count(v) for v in (FAIR, UNFAIR, UNKNOWN)}
    verdict = UNFAIR if counts[UNFAIR] else (FAIR if counts[FAIR] == n else UNKNOWN)
    prop = audit.prop
    dom = prop.domain
    return RowsResult(
        verdict=verdict,
        verdicts=verdicts,
        methods=book.methods,
        twins=_listed(twins),
        labels=_labels(audit),
        twin_labels=twin_labels,
        flip_unfair=int(flip.sum()),
        groups=_group_names(audit),
        rows=audit.question.rows,
        elapsed_s=time.perf_counter() - t0,
        engine=kind.name,
        protected=prop.protected_names,
        epsilon=prop.epsilon_by_name,
        feature_names=dom.names,
        categories={f.name: list(f.categories) for f in dom.features if f.categories is not None},
        stopped=stopped,
        stats={
            "flip_rows": flip,  # one byte a row (a list would take eight)
            "methods": _tally(book.methods),
            "twins_per_row": len(audit.combos) - 1,
            "limits": dataclasses.asdict(audit.limits),
        }
        | ({"memory_limited": True} if stopped == MEMORY_LIMIT else {})
        | ({"interrupted": True} if stopped == INTERRUPTED else {}),
    )


def _labels(audit: Audit) -> list[int | None]:
    """The model's label of each row; None for a row it cannot evaluate or did not label."""
    out: list[int | None] = [None if v < 0 else v for v in audit.labels.tolist()]
    for i in audit.unread:
        out[i] = None
    return out


def _listed(twins: list[np.ndarray | None]) -> list[list[float] | None]:
    """The twins as lists, each array let go once listed, and equal values one float object (a
    large audit's twins are many, and mostly small codes)."""
    shared: dict[float, float] = {}
    out: list[list[float] | None] = []
    for k, t in enumerate(twins):
        out.append(None if t is None else [shared.setdefault(v, v) for v in t.tolist()])
        twins[k] = None
    return out


def _checkpoint(question: RowAudit, options: AuditOptions) -> Checkpoint | None:
    """Where this audit's state goes, and what it must match: the model, the rows, the domain and
    the question (the time limit and workers do not change any row's verdict)."""
    prop = question.prop
    return Checkpoint.of(
        options,
        "rows",
        lambda: {
            "model": question.model_id,
            "rows": fingerprint(question.rows),
            "domain": fingerprint(prop.domain.to_dict()),
            "question": fingerprint([list(prop.protected), np.asarray(prop.epsilon, dtype=np.float64)]),
        },
    )


def _state(book: _Book, limits: RowLimits) -> dict[str, Any]:
    """Every row the chunks decided: [index, verdict, method, twin or None], and the per-row
    budgets they were decided under."""
    t = book.twins
    return {
        "rows": [
            [i, book.verdicts[i], book.methods[i], None if t[i] is None else [float(v) for v in t[i]]]  # type: ignore[union-attr]
            for i in np.flatnonzero(book.chunked).tolist()
        ],
        "limits": dataclasses.asdict(limits),
    }


def _restored(state: dict[str, Any], n: int, width: int) -> list[tuple[int, str, str, np.ndarray | None]]:
    """The rows of a checkpoint's state, each checked (the file is untrusted input)."""
    rows = state.get("rows")
    if not isinstance(rows, list):
        raise PropertyError("checkpoint: its state has no list of rows")
    out = []
    seen: set[int] = set()
    for item in rows:  # an unfair row has its twin, other rows none; each row once; no true/false for numbers
        ok = (
            isinstance(item, list)
            and len(item) == 4
            and type(item[0]) is int
            and 0 <= item[0] < n
            and item[0] not in seen
            and item[1] in (FAIR, UNFAIR, UNKNOWN)
            and isinstance(item[2], str)
            and len(item[2]) <= 200
            and (item[3] is None) == (item[1] != UNFAIR)
            and (
                item[3] is None
                or (
                    isinstance(item[3], list)
                    and len(item[3]) == width
                    and all(type(v) in (int, float) for v in item[3])
                )
            )
        )
        if not ok:
            raise PropertyError(f"checkpoint: malformed row entry {repr(item)[:80]}")
        seen.add(item[0])
        out.append((item[0], item[1], item[2], None if item[3] is None else np.asarray(item[3], dtype=np.float64)))
    return out


#: How far a restored twin's feature may lie outside its row's ball, relative to 1 + |the ball's
#: nearest value| (a solver's twin is feasible to its tolerance, about 1e-7).
TWIN_SLACK = 1e-6


def _check_twins(kind: RowModel, audit: Audit, restored: list) -> None:
    """A restored unfair row's twin is checked as the run checks the twins it finds: one of the
    row's twins (another protected combination of the domain; every other feature within the row's
    ball, discrete ones whole) that the model decides the other way."""
    found = [(i, t) for i, v, _, t in restored if v == UNFAIR]
    if not found:
        return
    rows = np.array([i for i, _ in found], dtype=np.int64)
    twins = np.stack([t for _, t in found])
    lo, hi = audit.windows(rows)
    protected = list(audit.prop.protected)
    inside = np.clip(twins, lo, hi)
    near = np.abs(twins - inside) <= TWIN_SLACK * (1.0 + np.abs(inside))
    near[:, protected] = True
    whole = np.where(audit.discrete, twins == np.round(twins), True)
    combos = {tuple(c): k for k, c in enumerate(audit.combos)}
    other = np.array(
        [combos.get(tuple(t[protected]), audit.own[i]) != audit.own[i] or not protected for i, t in zip(rows, twins)]
    )
    ok = near.all(axis=1) & whole.all(axis=1) & other
    if ok.all():  # the model sees only twins inside the domain (no overflow on numbers far outside)
        ok &= (kind.margins(twins) > 0) != (audit.labels[rows] == 1)
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise PropertyError(
            f"checkpoint: the twin of row {int(rows[bad[0]])} is not a twin the model decides "
            "differently (changed or damaged); start afresh without --resume"
        )


@dataclass
class _Job:
    """What a worker holds: the model kind and the audit; `decide` and `finish` take one chunk of
    rows each."""

    kind: RowModel
    audit: Audit
    deadline: float | None  # time.time()

    def decide(self, rows: np.ndarray) -> Decisions:
        return self.kind.decide(self.audit, rows, self.deadline)

    def finish(self, rows: np.ndarray) -> Decisions:
        staged = cast(StagedRowModel, self.kind)  # rows are deferred only by kinds that finish them
        return staged.finish(self.audit, rows, self.deadline)


def enumerate_balls(
    kind: RowModel,
    audit: Audit,
    rows: np.ndarray,
    points: Callable[[int], np.ndarray] | list[np.ndarray] | None = None,
    method: str = "enumeration",
    deadline: float | None = None,
) -> Decisions:
    """Decide rows by evaluating every twin: each ball point (or the points `points` gives for
    rows[k], `points(k)` or `points[k]`, which meet every region where the model is constant) with
    every other protected combination. Twins of many rows go to the model together, in calls sized
    by `Pace` (one large ball takes several); rows the deadline cuts short are left at "time
    limit", unless a twin evaluated already flips them."""
    T = len(audit.combos)
    out = Decisions.open(len(rows))
    pending: list[tuple[int, np.ndarray]] = []
    pace = Pace(audit.batch)

    def flush() -> None:
        Y = np.concatenate([y for _, y in pending])
        M, done = np.empty(len(Y)), 0
        while done < len(Y) and not (done and past(deadline)):  # one large ball in calls of the model's pace
            piece = Y[done : done + pace.size]
            M[done : done + len(piece)] = pace.margins(kind, piece)
            done += len(piece)
        offset = 0
        for k, y in pending:
            m = M[offset : min(offset + len(y), done)]
            offset += len(y)
            differs = (np.abs(m) > kind.tol) & ((m > 0) != (audit.labels[rows[k]] == 1))
            if differs.any():  # a flipping twin decides the row, even where the deadline cut its ball short
                out.set(k, UNFAIR, method, y[int(np.argmax(differs))].copy())
            elif offset > done:
                out.set(k, UNKNOWN, TIME_LIMIT)
            elif np.any(np.abs(m) <= kind.tol):
                out.set(k, UNKNOWN, "twin margin within rounding tolerance")
            else:
                out.set(k, FAIR, method)
        pending.clear()

    size = 0
    for k, i in enumerate(rows.tolist()):
        if past(deadline):  # the rows waiting for a call and those after them
            for r in [p for p, _ in pending] + list(range(k, len(rows))):
                out.set(r, UNKNOWN, TIME_LIMIT)
            pending.clear()
            break
        P = _ball_points(audit, i) if points is None else points(k) if callable(points) else points[k]
        combo = np.tile(np.arange(T), len(P))
        Y = audit.with_combo(np.repeat(P, T, axis=0), combo)
        Y = Y[combo != audit.own[i]]
        if pending and size + len(Y) > pace.size:
            flush()
            size = 0
        pending.append((k, Y))
        size += len(Y)
    if pending and past(deadline):
        for k, _ in pending:
            out.set(k, UNKNOWN, TIME_LIMIT)
    elif pending:
        flush()
    return out


def ball_size(audit: Audit, rows: np.ndarray) -> np.ndarray:
    """Grid points of each row's ball over its epsilon-features (inf when a real feature moves)."""
    lo, hi = audit.windows(rows)
    moving = audit.eps > 0
    if np.any(moving & ~audit.discrete):
        return np.full(len(rows), np.inf)
    return np.prod(np.where(moving, hi - lo + 1.0, 1.0), axis=1)


def _ball_points(audit: Audit, i: int) -> np.ndarray:
    """Every grid point of row i's ball."""
    lo, hi = audit.windows(np.array([i]))
    moving = np.flatnonzero(audit.eps > 0)
    axes = [np.arange(lo[0, j], hi[0, j] + 1) for j in moving]
    grid = np.array(list(itertools.product(*axes)), dtype=np.float64).reshape(-1, len(moving))
    P = np.repeat(audit.take(i)[None], len(grid), axis=0)
    P[:, moving] = grid
    return P


def _group_names(audit: Audit) -> list[str]:
    """Each row's protected group, by name (a row the model cannot read: by its own values)."""
    dom = audit.prop.domain
    X = audit.question.rows

    def name(i: int, v: float) -> str:
        f = dom.features[i]
        if f.categories is not None and float(v).is_integer() and 0 <= v < len(f.categories):
            return f.categories[int(v)]
        return f"{int(v)}" if float(v).is_integer() else f"{v:g}"

    names = ["/".join(name(i, v) for v, i in zip(combo, audit.prop.protected)) for combo in audit.combos]
    out = np.array(names, dtype=object)[audit.own].tolist()
    for r in audit.unread:
        out[r] = "/".join(name(i, float(X[r, i])) for i in audit.prop.protected)
    return out


def _tally(methods: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in methods:
        out[m] = out.get(m, 0) + 1
    return out


def _report(progress: Progress | None, book: _Book, t0: float) -> None:
    if progress is None:
        return
    total = max(len(book.verdicts), 1)
    fair, unfair = book.counts.get(FAIR, 0), book.counts.get(UNFAIR, 0)
    progress(
        ProgressEvent(
            elapsed_s=time.perf_counter() - t0,
            certified=fair / total,
            falsified=unfair / total,
            undecided=1.0 - (fair + unfair) / total,
            rows_done=book.done,
            rows=len(book.verdicts),
        )
    )
