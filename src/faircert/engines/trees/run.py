"""One quantification of a tree ensemble: how it is asked to run (`TreeOptions`), what all its steps
share (`TreeRun`) and what they add up (`Tally`), and the sharded refinement that keeps a tally up
to date (`refine_into`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...models.trees import TreeEnsemble
from ...properties import IndividualFairness
from ..boxes.budget import DONE, Budget
from ..boxes.shards import Progress, Refined, Saving, Shard, refine
from ..boxes.workers import SERIAL, Parallelism
from .boxes import NormalisedTrees
from .leafsplit import DEFAULT_SPLIT


@dataclass(frozen=True)
class TreeOptions:
    """How `quantify.quantify` goes about it: the `method` ("auto", "regions" or "refinement"), the
    number of `regions` of the region path, how the refinements run (`parallel`), when they stop
    (`max_boxes` examined), how many of the largest unfair pieces the joint refinement keeps
    (`keep_pieces`; None: all), how open boxes are cut (`split`, `leafsplit`), and the
    `checkpoint` (`checkpoint.Checkpoint`) the refinements write to, and go on from with `resume`."""

    method: str = "auto"
    regions: int = 1
    parallel: Parallelism = SERIAL
    max_boxes: int | None = None
    keep_pieces: int | None = None
    split: str = DEFAULT_SPLIT
    checkpoint: Any = None
    resume: bool = False


DEFAULTS = TreeOptions()


@dataclass
class Tally:
    """Sizes and counts one path of a quantification has established so far (every path starts
    from a fresh one)."""

    nonconf: float = 0.0  # size proven not confident
    settled: float = 0.0  # confident size whose unfair part is known
    unfair: float = 0.0  # proven unfair size
    extra: float = 0.0  # unfair size that only near-tie twins could cause
    kd: int = 0  # k-d nodes of the region path's union sizing
    terms: int = 0  # union sizings run by the region path
    boxes: int = 0
    tie_size: float = 0.0
    # region path: unfair pieces proven while partitioning, as (lo, hi, twin lo, twin hi) arrays
    early_pieces: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    memory_limited: bool = False
    # the refinements' (`refine_into`)
    examined: int = 0
    unfair_boxes: int = 0
    workers_restarted: int = 0
    workers: int = 0
    open_gathered: bool = True
    checkpoints: int | None = None  # None: the run wrote no checkpoint
    checkpoint_s: float = 0.0
    stopped: str = DONE  # why the refinement ended (`boxes.budget`)


@dataclass(frozen=True)
class TreeRun:
    """What every step of one quantification shares: the model and the question, the domain box
    [dlo, dhi) with its size, the margin threshold `c` (None without kappa) and tolerance, the
    clock (`t0`, and the `deadline` on `time.monotonic`), the progress reporter and the options."""

    ir: TreeEnsemble
    nt: NormalisedTrees
    prop: IndividualFairness
    c: float | None
    tol: float
    dlo: np.ndarray
    dhi: np.ndarray
    eps: np.ndarray
    discrete: np.ndarray
    total: float
    t0: float
    deadline: float
    report: Callable[[Tally], None]
    options: TreeOptions


def refine_into(run: TreeRun, tally: Tally, shard: Shard, saving: Saving | None = None) -> Refined:
    """`shards.refine` of the domain box, keeping `tally` up to date (its sizes, boxes settled and
    examined, unfair boxes found, restarts, memory limit; at the end the workers used, whether the
    open boxes were gathered and, with `saving`, the checkpoints written and their seconds) and
    reporting it after every step."""

    def on_progress(totals: Progress, restarts: int) -> None:
        tally.nonconf = float(totals.sums["nonconf"])
        tally.settled = float(totals.sums["settled"])
        tally.unfair = float(totals.sums["unfair"])
        tally.boxes = totals.boxes
        tally.examined = totals.examined
        tally.unfair_boxes = totals.found
        tally.workers_restarted = restarts
        if totals.memory_limited:
            tally.memory_limited = True
        run.report(tally)

    lo, hi = run.dlo[None].copy(), run.dhi[None].copy()
    budget = Budget(run.deadline, run.options.max_boxes)
    out = refine(shard, lo, hi, budget, run.options.parallel, on_progress, saving)
    tally.stopped = out.stopped
    tally.open_gathered, tally.workers = out.open_entries is not None, out.workers
    if saving is not None:
        tally.checkpoints, tally.checkpoint_s = saving.written, saving.seconds
    return out
