"""Checkpoints of the network box refinement: the partition between two rounds, and back.

The state is what the next round depends on: the decided masses, the pool in its order (the
heaviest boxes are taken by priority, ties by position), the unsplittable boxes, the cut pieces
waiting for the next round, the counterexamples in the order found, the counters that seed the
chunks (`rounds`) and budget the growth, and the driver's random state. A run resumed from it
therefore takes the same rounds as the run that wrote it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...checkpoint import Checkpoint, fingerprint, pack, rng_state, set_rng_state, unpack
from ...errors import PropertyError
from .counts import Counts

POOL = ("lo", "hi", "mass", "split", "prio", "fair", "unfair")


def checkpoint_for(network: Any, prop: Any, options: Any) -> Checkpoint | None:
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


def cex_arrays(run: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The run's stored counterexamples in the order found: x, x' (n, d) and their twins (n,)."""
    d = run.pb.d
    items = list(run.cex.values())
    return (
        np.array([c[0] for c in items]).reshape(-1, d),
        np.array([c[1] for c in items]).reshape(-1, d),
        np.array([c[2] for c in items], dtype=np.int64),
        np.array([c[3] for c in items], dtype=np.int64),
    )


def pool_arrays(run: Any) -> tuple[np.ndarray, ...]:
    """Copies of the pool's arrays (as `POOL` names them), in the pool's order."""
    n = len(run.pool)
    return tuple(getattr(run.pool, name)[:n].copy() for name in POOL)


def stuck_arrays(run: Any) -> tuple[np.ndarray, np.ndarray]:
    """The boxes that cannot be split (lo, hi)."""
    d = run.pb.d
    lo, hi = (np.concatenate(s) if s else np.empty((0, d)) for s in (run.stuck_lo, run.stuck_hi))
    return lo, hi


def state_of(run: Any, pend_lo: np.ndarray, pend_hi: np.ndarray, examined: int) -> dict[str, Any]:
    return {
        "cert": run.cert,
        "fal": run.fal,
        "examined": examined,
        "cex_found": run.cex_found,
        "probes": run.probes,
        "probe_hits": run.probe_hits,
        "stats": run.counts.to_dict(),
        "pool": {name: pack(a) for name, a in zip(POOL, pool_arrays(run))},
        "stuck": [pack(a) for a in stuck_arrays(run)],
        "pending": [pack(pend_lo), pack(pend_hi)],
        "cex": [pack(a) for a in cex_arrays(run)],
        "rng": rng_state(run.rng),
    }


def restore(run: Any, state: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """Put a checkpoint's partition into a fresh run (every value checked: the file is untrusted
    input); returns the pending pieces and the boxes examined so far."""
    pb, d = run.pb, run.pb.d
    try:
        pool = {
            name: unpack(state["pool"][name], "i8" if name == "split" else "f8", d if name in ("lo", "hi") else None)
            for name in POOL
        }
        stuck = [unpack(a, "f8", d) for a in _pair(state["stuck"])]
        pend = [unpack(a, "f8", d) for a in _pair(state["pending"])]
        cx, cxp = unpack(state["cex"][0], "f8", d), unpack(state["cex"][1], "f8", d)
        ca, cb = unpack(state["cex"][2], "i8"), unpack(state["cex"][3], "i8")
        scalars = [state[k] for k in ("cert", "fal")]
        counts = [state[k] for k in ("examined", "cex_found", "probes", "probe_hits")]
        done = Counts.of_state(state["stats"])
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise PropertyError(
            f"checkpoint: its state is incomplete or malformed ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None
    n = pool["lo"].shape[0]
    # counterexamples are grown into boxes: each point must be one of the domain's
    boxes = [pool["lo"], pool["hi"], stuck[0], stuck[1], pend[0], pend[1], cx, cx, cxp, cxp]
    ok = (
        all(pool[k].shape == (n,) for k in POOL[2:])
        and stuck[0].shape == stuck[1].shape
        and pend[0].shape == pend[1].shape
        and cx.shape == cxp.shape
        and ca.shape == cb.shape == (cx.shape[0],)
        and all(np.all(b >= pb.lo) and np.all(b <= pb.hi) for b in boxes)
        and all(np.all(a <= b) for a, b in zip(boxes[::2], boxes[1::2]))
        and np.all((pool["split"] >= 0) & (pool["split"] < d))
        and np.all((ca >= 0) & (ca < pb.n_twins) & (cb >= 0) & (cb < pb.n_twins))
        and all(_finite_amount(v) for v in scalars)
        and state["cert"] + state["fal"] <= pb.domain_size * (1 + 1e-9)  # masses of this domain
        and all(isinstance(v, int) and v >= 0 for v in counts)
    )
    if not ok:
        raise PropertyError("checkpoint: its boxes or counts do not fit this domain and network")
    set_rng_state(run.rng, state.get("rng"))
    run.started = True
    run.cert, run.fal = float(state["cert"]), float(state["fal"])
    run.pool.push(*(pool[k] for k in POOL))
    if stuck[0].shape[0]:
        run.stuck_lo.append(stuck[0])
        run.stuck_hi.append(stuck[1])
    run.cex = {cx[i].tobytes() + cxp[i].tobytes(): (cx[i], cxp[i], int(ca[i]), int(cb[i])) for i in range(cx.shape[0])}
    run.cex_found = state["cex_found"]
    run.probes, run.probe_hits = state["probes"], state["probe_hits"]
    run.counts = done
    return pend[0], pend[1], state["examined"]


def _pair(value: Any) -> list:
    """The two arrays (lo, hi) a state lists, or ValueError."""
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("not a pair of arrays")
    return value


def _finite_amount(value: Any) -> bool:
    """A non-negative finite number as JSON gives one (an integer may exceed every float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value)) and value >= 0
    except OverflowError:
        return False
