"""Checkpoints of the tree-ensemble refinements (`joint` at epsilon 0, `dilated` otherwise).

The state is the sharded refinement's (`boxes.shards`: the level, and every shard's open boxes,
unfair boxes, exact sums and counts) with a header saying which refinement wrote it (and how it
cuts boxes) and, for `dilated` after the region path of method "auto", the bounds that path
proved: a resumed run skips that path and keeps them. The region path itself keeps no boxes: a
run that ends there writes a checkpoint of its bounds only (refinement `REGIONS`), and a run
resumed from it runs that path again. The sums are exact, so under a box budget a resumed run
gives the uninterrupted run's shares; under a time limit its bounds start from the saved ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...checkpoint import Checkpoint, fingerprint
from ...errors import PropertyError
from ...options import Budget
from ..boxes.shards import Saving

#: the refinement a checkpoint names when the region path ended the run (its state: the bounds)
REGIONS = "regions"


def checkpoint_for(ir: Any, prop: Any, options: Budget) -> Checkpoint | None:
    """Where this refinement's state goes (the options' `checkpoint`, `resume`, `checkpoint_every`),
    and what it must match (`identity`)."""
    return Checkpoint.of(options, "tree-boxes", lambda: identity(ir, prop, options.seed))


def identity(ir: Any, prop: Any, seed: int) -> dict[str, str]:
    """What a checkpoint must match: the ensemble, the domain, the question and the seed (time
    limits, box budgets and workers may change between runs)."""
    return {
        "model": fingerprint(ir),
        "domain": fingerprint(prop.domain.to_dict()),
        "question": fingerprint(
            [list(prop.protected), np.asarray(prop.epsilon, dtype=np.float64), prop.kappa, prop.robustness, seed]
        ),
    }


def saving_for(checkpoint: Checkpoint | None, resume: bool, refinement: str, split: str | None = None) -> Saving | None:
    """The checkpoint of one refinement ("joint" or "dilated", cutting by `split`), with the state
    it goes on from when resuming (refused when another refinement wrote it)."""
    if checkpoint is None:
        return None
    header = {"refinement": refinement, "split": split}
    state = checkpoint.load() if resume else None
    if state is not None and state.get("refinement") == REGIONS:
        state = None  # the region path ended that run, and keeps no boxes: it runs again
    if state is not None and [state.get(k) for k in header] != list(header.values()):
        raise PropertyError(
            f"checkpoint: written by the tree refinement {state.get('refinement')!r} "
            f"(split {state.get('split')!r}), not {refinement!r} (split {split!r})"
        )
    return Saving(checkpoint, header, state)


def save_regions(saving: Saving | None, bounds: tuple[float, float], complete: bool) -> dict[str, Any]:
    """The final checkpoint of a run the region path ended (its bounds; the path keeps no boxes),
    and the stats that say so (none without a checkpoint)."""
    if saving is None:
        return {}
    checkpoint = saving.checkpoint
    checkpoint.save({"refinement": REGIONS, "split": None, "known": [float(b) for b in bounds], "complete": complete})
    return {"checkpoints": checkpoint.saves, "checkpoint_s": checkpoint.save_s}


def known_bounds(saving: Saving) -> tuple[float, float]:
    """The bounds an earlier phase proved, as a resumed state holds them (checked)."""
    known = (saving.state or {}).get("known")
    ok = (
        isinstance(known, list)
        and len(known) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in known)
        and 0.0 <= known[0] <= known[1] <= 1.0
    )
    if not ok:
        raise PropertyError("checkpoint: its bounds of the first phase are missing or malformed")
    assert isinstance(known, list)  # checked above
    return float(known[0]), float(known[1])
