"""Checkpoints of the network box refinement.

The state is the sharded refinement's (`boxes.shards`: the level, and every shard's open boxes with
their split feature, priority and credits, its counterexamples, unsplittable boxes and counters,
and its exact sums), with a header saying which refinement wrote it. The sums are exact and what
settling a box gives depends on the box alone (`settle`), so under a box budget a resumed run
gives the uninterrupted run's shares; under a time limit its bounds start from the saved ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...checkpoint import Checkpoint, fingerprint
from ...errors import PropertyError
from ...options import Budget
from ..boxes.shards import Saving

HEADER = {"refinement": "network boxes"}


def checkpoint_for(network: Any, prop: Any, options: Budget) -> Checkpoint | None:
    """Where this refinement's state goes, and what it must match: the network, the domain, the
    question and the seed (time limits, box budgets and workers may change between runs)."""
    return Checkpoint.of(
        options,
        "network-boxes",
        lambda: {
            "model": fingerprint(network),
            "domain": fingerprint(prop.domain.to_dict()),
            "question": fingerprint(
                [list(prop.protected), np.asarray(prop.epsilon, dtype=np.float64), prop.robustness, options.seed]
            ),
        },
    )


def saving_for(checkpoint: Checkpoint | None, resume: bool) -> Saving | None:
    """The refinement's checkpoint, with the state it goes on from when resuming (refused when
    another refinement wrote it)."""
    if checkpoint is None:
        return None
    state = checkpoint.load() if resume else None
    if state is not None and any(state.get(k) != v for k, v in HEADER.items()):
        raise PropertyError("checkpoint: not written by the network box refinement")
    return Saving(checkpoint, dict(HEADER), state)
