"""The per-row audit's driver, shared by every model kind.

For each row x the twins are x' with another protected combination, each epsilon-feature within
its tolerance of x (clipped to the domain) and every other feature equal to x. The driver runs the
flip test (epsilon 0: one model call per twin) on every row, then hands the rows it leaves open to
the model kind's `decide`, in chunks, between which it honours the time limit and stop requests:
rows not reached stay `unknown`, and every row already decided is kept.

A model kind supplies `margins(X)` (label 1 iff margin > 0; margins within `tol` of 0 decide
nothing) and `decide(audit, rows, deadline)` (the deadline on the wall clock, `time.time()`).
Chunks of rows run on local worker processes or Ray actors (`--workers`, `--ray`) in rounds of
one chunk per worker; rows are independent, so the verdicts do not depend on where they ran.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...checkpoint import Checkpoint, fingerprint
from ...errors import PropertyError
from ...options import AuditOptions
from ...progress import Progress, ProgressEvent
from ...properties import RowAudit
from ...results.rows import RowsResult
from ..boxes.budget import Budget
from ..boxes.workers import SERIAL, Parallelism

#: Twins evaluated per model call (rows x ball points x protected combinations).
BATCH = 200_000
#: Most protected combinations a row's twins may take.
MAX_COMBOS = 4096
#: Rows handed to `decide` at once: the grain of the time limit, stop requests and progress.
ROW_CHUNK = 256

FAIR, UNFAIR, UNKNOWN = "fair", "unfair", "unknown"


@dataclass
class Decisions:
    """What `decide` found for some rows: verdict, method and twin (or None) per row."""

    verdicts: list[str]
    methods: list[str]
    twins: list[np.ndarray | None]


class RowModel(Protocol):
    """What the driver needs of a model kind."""

    name: str
    tol: float

    def margins(self, X: np.ndarray) -> np.ndarray: ...

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions: ...


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
    labels: np.ndarray = field(default=None)  # type: ignore[arg-type]

    @classmethod
    def of(cls, question: RowAudit) -> Audit:
        prop, X = question.prop, question.rows
        dom = prop.domain
        values = [dom.features[i].values() for i in prop.protected]
        count = int(np.prod([len(v) for v in values]))
        if count > MAX_COMBOS:
            raise PropertyError(f"the protected features have {count} combinations; at most {MAX_COMBOS}")
        combos = np.array(list(itertools.product(*values)), dtype=np.float64).reshape(count, len(values))
        index = {tuple(c): k for k, c in enumerate(combos)}
        own = np.array([index.get(tuple(r), -1) for r in X[:, list(prop.protected)]], dtype=np.int64)
        if np.any(own < 0):
            bad = int(np.flatnonzero(own < 0)[0])
            raise PropertyError(
                f"row {bad}: its protected values {X[bad, list(prop.protected)].tolist()} lie outside the domain"
            )
        disc = dom.discrete_mask
        eps = np.asarray(prop.epsilon, dtype=np.float64)
        eps = np.where(disc, np.floor(eps + 1e-12), eps)
        return cls(question, combos, own, eps, dom.lower, dom.upper, disc)

    @property
    def prop(self):
        return self.question.prop

    @property
    def rows(self) -> np.ndarray:
        return self.question.rows

    @property
    def has_eps(self) -> bool:
        return bool(np.any(self.eps > 0))

    def windows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's ball as a box (lower, upper corners), protected columns at the row's own values."""
        X = self.rows[rows]
        return np.maximum(X - self.eps, self.lower), np.minimum(X + self.eps, self.upper)

    def with_combo(self, Y: np.ndarray, combo: np.ndarray | int) -> np.ndarray:
        """Copies of points Y (..., d) with the protected columns set to the combinations numbered
        `combo` (one per point, or one for all)."""
        Y = np.array(Y, dtype=np.float64, copy=True)
        Y[..., list(self.prop.protected)] = self.combos[combo]
        return Y


def run(kind: RowModel, question: RowAudit, options: AuditOptions, progress: Progress | None) -> RowsResult:
    """Audit every row of `question` with `kind`; see the module docstring."""
    t0 = time.perf_counter()
    deadline = None if options.time_limit is None else t0 + options.time_limit
    audit = Audit.of(question)
    n = len(question.rows)
    margins = kind.margins(question.rows)
    audit.labels = (margins > 0).astype(np.int64)
    verdicts = [UNKNOWN] * n
    methods = ["not reached"] * n
    twins: list[np.ndarray | None] = [None] * n
    unsure = np.abs(margins) <= kind.tol
    for i in np.flatnonzero(unsure).tolist():
        methods[i] = "own margin within rounding tolerance"
    flip, flip_twin, flip_unsure = _flip_test(kind, audit)
    for i in np.flatnonzero(flip & ~unsure).tolist():
        verdicts[i], methods[i], twins[i] = UNFAIR, "flip test", flip_twin[i]
    open_rows = np.flatnonzero(~flip & ~unsure)
    if not audit.has_eps:
        for i in open_rows.tolist():
            if flip_unsure[i]:
                methods[i] = "twin margin within rounding tolerance"
            else:
                verdicts[i], methods[i] = FAIR, "flip test"
        open_rows = np.array([], dtype=np.int64)
    checkpoint = _checkpoint(question, options)
    if options.resume:  # rows a killed run decided stay decided; the rest continue
        assert checkpoint is not None  # resuming names its checkpoint
        restored = _restored(checkpoint.load(), n, question.rows.shape[1])
        _check_twins(kind, audit, restored)
        for i, v, m, t in restored:
            verdicts[i], methods[i], twins[i] = v, m, t
        open_rows = np.array([i for i in open_rows if methods[i] == "not reached"], dtype=np.int64)
    budget = Budget(deadline, clock=time.perf_counter)
    done = n - len(open_rows)
    _report(progress, verdicts, t0, done, n)
    chunks = [(open_rows[s : s + ROW_CHUNK],) for s in range(0, len(open_rows), ROW_CHUNK)]
    parallel = Parallelism.of(options.workers, options.ray_address) if chunks else SERIAL
    # the deadline on the wall clock: workers (and Ray nodes) read their own clocks
    job = _Job(kind, audit, None if deadline is None else time.time() + (deadline - time.perf_counter()))
    with parallel.open(job) as pool:
        for start in range(0, len(chunks), parallel.workers):
            if budget.spent():
                break
            batch = chunks[start : start + parallel.workers]
            for (rows,), found in zip(batch, pool.map("decide", batch)):
                for i, v, m, t in zip(rows, found.verdicts, found.methods, found.twins):
                    verdicts[i], methods[i], twins[i] = v, m, t
                done += len(rows)
            _report(progress, verdicts, t0, done, n)
            if checkpoint is not None and checkpoint.due():
                checkpoint.save(_state(verdicts, methods, twins))
    if checkpoint is not None:
        checkpoint.save(_state(verdicts, methods, twins))
    found = [i for i, t in enumerate(twins) if t is not None]
    rechecked: np.ndarray | list[bool] = kind.margins(np.stack([twins[i] for i in found])) > 0 if found else []
    twin_labels: list[int | None] = [None] * n
    for i, label in zip(found, rechecked):
        twin_labels[i] = int(label)
    for i in range(len(twins)):  # every unfair row's twin is re-checked on the model
        if verdicts[i] == UNFAIR and twin_labels[i] == int(audit.labels[i]):
            raise AssertionError(f"row {i}: the twin found does not change the decision")
    counts = {v: verdicts.count(v) for v in (FAIR, UNFAIR, UNKNOWN)}
    verdict = UNFAIR if counts[UNFAIR] else (FAIR if counts[FAIR] == n else UNKNOWN)
    prop = audit.prop
    dom = prop.domain
    return RowsResult(
        verdict=verdict,
        verdicts=verdicts,
        methods=methods,
        twins=[None if t is None else [float(v) for v in t] for t in twins],
        labels=[int(v) for v in audit.labels],
        twin_labels=twin_labels,
        flip_unfair=int(flip.sum()),
        groups=_group_names(audit),
        rows=question.rows,
        elapsed_s=time.perf_counter() - t0,
        engine=kind.name,
        protected=prop.protected_names,
        epsilon=prop.epsilon_by_name,
        feature_names=dom.names,
        categories={f.name: list(f.categories) for f in dom.features if f.categories is not None},
        stopped=budget.stopped,
        stats={
            "flip_rows": [bool(v) for v in flip],
            "methods": _tally(methods),
            "twins_per_row": len(audit.combos) - 1,
        },
    )


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


def _state(verdicts: list[str], methods: list[str], twins: list) -> dict[str, Any]:
    """Every row the chunks decided: [index, verdict, method, twin or None]."""
    chunked = [i for i, m in enumerate(methods) if m not in CHEAP_METHODS and m != "not reached"]
    return {
        "rows": [
            [i, verdicts[i], methods[i], None if twins[i] is None else [float(v) for v in twins[i]]] for i in chunked
        ]
    }


#: How the driver itself decides rows (recomputed on resume, so never stored).
CHEAP_METHODS = ("flip test", "own margin within rounding tolerance", "twin margin within rounding tolerance")


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
    """What a worker holds: the model kind and the audit; `decide` takes one chunk of rows."""

    kind: RowModel
    audit: Audit
    deadline: float | None  # time.time()

    def decide(self, rows: np.ndarray) -> Decisions:
        return self.kind.decide(self.audit, rows, self.deadline)


def _flip_test(kind: RowModel, audit: Audit) -> tuple[np.ndarray, list, np.ndarray]:
    """(rows some other protected combination flips, a flipping twin per such row, rows where a
    twin's margin sits within the tolerance)."""
    X, T = audit.rows, len(audit.combos)
    n = len(X)
    flip = np.zeros(n, dtype=bool)
    unsure = np.zeros(n, dtype=bool)
    twin: list = [None] * n
    step = max(1, BATCH // max(T, 1))
    for start in range(0, n, step):
        rows = np.arange(start, min(n, start + step))
        Y = audit.with_combo(np.repeat(X[rows], T, axis=0), np.tile(np.arange(T), len(rows)))
        M = kind.margins(Y).reshape(len(rows), T)
        other = np.arange(T)[None, :] != audit.own[rows][:, None]
        label = audit.labels[rows][:, None] == 1
        differs = other & (np.abs(M) > kind.tol) & ((M > 0) != label)
        unsure[rows] = np.any(other & (np.abs(M) <= kind.tol), axis=1)
        hit = np.flatnonzero(differs.any(axis=1))
        flip[rows[hit]] = True
        for r in hit:
            twin[rows[r]] = Y.reshape(len(rows), T, -1)[r, int(np.argmax(differs[r]))]
    return flip, twin, unsure


def enumerate_balls(
    kind: RowModel,
    audit: Audit,
    rows: np.ndarray,
    candidates: list[np.ndarray] | None = None,
    method: str = "enumeration",
) -> Decisions:
    """Decide rows by evaluating every twin: each ball point (or each row's `candidates`, points
    that meet every region where the model is constant) with every other protected combination.
    Twins of many rows go to the model in one call."""
    T = len(audit.combos)
    points = candidates if candidates is not None else _ball_points(audit, rows)
    twins_of = []
    for k, i in enumerate(rows):
        P = points[k]
        combo = np.tile(np.arange(T), len(P))
        Y = audit.with_combo(np.repeat(P, T, axis=0), combo)
        twins_of.append(Y[combo != audit.own[i]])
    out = Decisions([], [], [])
    start = 0
    while start < len(rows):
        stop, size = start, 0
        while stop < len(rows) and (stop == start or size + len(twins_of[stop]) <= BATCH):
            size += len(twins_of[stop])
            stop += 1
        Y = np.concatenate(twins_of[start:stop]) if size else np.zeros((0, audit.rows.shape[1]))
        M = kind.margins(Y) if size else np.zeros(0)
        offset = 0
        for k in range(start, stop):
            m = M[offset : offset + len(twins_of[k])]
            y = Y[offset : offset + len(twins_of[k])]
            offset += len(twins_of[k])
            differs = (np.abs(m) > kind.tol) & ((m > 0) != (audit.labels[rows[k]] == 1))
            if differs.any():
                verdict, why, twin = UNFAIR, method, y[int(np.argmax(differs))]
            elif np.any(np.abs(m) <= kind.tol):
                verdict, why, twin = UNKNOWN, "twin margin within rounding tolerance", None
            else:
                verdict, why, twin = FAIR, method, None
            out.verdicts.append(verdict)
            out.methods.append(why)
            out.twins.append(twin)
        start = stop
    return out


def ball_size(audit: Audit, rows: np.ndarray) -> np.ndarray:
    """Grid points of each row's ball over its epsilon-features (inf when a real feature moves)."""
    lo, hi = audit.windows(rows)
    moving = audit.eps > 0
    if np.any(moving & ~audit.discrete):
        return np.full(len(rows), np.inf)
    return np.prod(np.where(moving, hi - lo + 1.0, 1.0), axis=1)


def _ball_points(audit: Audit, rows: np.ndarray) -> list[np.ndarray]:
    lo, hi = audit.windows(rows)
    moving = np.flatnonzero(audit.eps > 0)
    out = []
    for k, i in enumerate(rows):
        axes = [np.arange(lo[k, j], hi[k, j] + 1) for j in moving]
        grid = np.array(list(itertools.product(*axes)), dtype=np.float64).reshape(-1, len(moving))
        P = np.repeat(audit.rows[i][None], len(grid), axis=0)
        P[:, moving] = grid
        out.append(P)
    return out


def _group_names(audit: Audit) -> list[str]:
    dom = audit.prop.domain
    names = []
    for combo in audit.combos:
        parts = []
        for v, i in zip(combo, audit.prop.protected):
            f = dom.features[i]
            parts.append(f.categories[int(v)] if f.categories is not None else f"{int(v)}")
        names.append("/".join(parts))
    return [names[k] for k in audit.own]


def _tally(methods: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in methods:
        out[m] = out.get(m, 0) + 1
    return out


def _report(progress, verdicts: list[str], t0: float, done: int, n: int) -> None:
    if progress is None:
        return
    total = max(n, 1)
    fair, unfair = verdicts.count(FAIR), verdicts.count(UNFAIR)
    progress(
        ProgressEvent(
            elapsed_s=time.perf_counter() - t0,
            certified=fair / total,
            falsified=unfair / total,
            undecided=1.0 - (fair + unfair) / total,
            rows_done=done,
            rows=n,
        )
    )
