"""Checkpoints of the complete and partitioned decision: what each region has shown, and the
branch and bound's open boxes.

The state has two parts. The regions' part (verdicts, proven masses, seconds, evidence, and each
unfair region's pair as free features and twins) is all the parallel driver keeps between its
rounds. The serial branch and bound adds its frontier (open boxes with owner, depth, split and
flags) and its random state, so that a resumed run takes the rounds the killed run would have
taken. A state of either kind resumes in either mode: without a frontier the undecided regions
start again from their whole boxes, keeping the masses already proven.

Every value is checked on the way in (the file is untrusted), and every pair is re-checked on the
model before it may make a region unfair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...checkpoint import Checkpoint, fingerprint, pack, rng_state, set_rng_state, unpack
from ...errors import PropertyError
from ...options import VerifyOptions
from .counts import RegionCounts

KIND = "network-complete"
#: the frontier's arrays and their kinds
FRONTIER = {"lo": "f8", "hi": "f8", "owner": "i8", "depth": "i8", "split": "i8", "stuck": "i8", "ripe": "i8"}
MAX_EVIDENCE_CHARS = 200


def checkpoint_for(network: Any, prop: Any, options: VerifyOptions) -> Checkpoint | None:
    """Where the decision's state goes, and what it must match: the network, the domain, the
    question, the partition size and the seed (time limits and workers may change)."""
    return Checkpoint.of(
        options,
        KIND,
        lambda: {
            "model": fingerprint(network),
            "domain": fingerprint(prop.domain.to_dict()),
            "question": fingerprint(
                [
                    list(prop.protected),
                    np.asarray(prop.epsilon, dtype=np.float64),
                    prop.robustness,
                    options.seed,
                    options.partition_size,
                ]
            ),
        },
    )


def regions_state(pb: Any, out: Any) -> dict[str, Any]:
    """The regions' part of a state, from a `RegionOutcome` or a `BranchAndBound` (same fields)."""
    unfair = [k for k, p in enumerate(out.pairs) if p is not None]
    args = [pair_args(pb, out.pairs[k]) for k in unfair]
    return {
        "verdict": pack(np.asarray(out.verdict, dtype=np.int64)),
        "seconds": pack(np.asarray(out.seconds)),
        "fair_mass": pack(np.asarray(out.fair_mass)),
        "unfair_mass": pack(np.asarray(out.unfair_mass)),
        "evidence": list(out.evidence),
        "stats": out.counts.to_dict(),
        "pairs": {
            "region": pack(np.array(unfair, dtype=np.int64)),
            "x": pack(np.array([a[0] for a in args]).reshape(-1, pb.d)),
            "xp": pack(np.array([a[1] for a in args]).reshape(-1, pb.d)),
            "a": pack(np.array([a[2] for a in args], dtype=np.int64)),
            "b": pack(np.array([a[3] for a in args], dtype=np.int64)),
        },
    }


def frontier_state(bb: Any) -> dict[str, Any]:
    """The serial branch and bound's open boxes and random state."""
    return {
        "frontier": {
            name: pack(np.asarray(getattr(bb, name), dtype=np.float64 if kind == "f8" else np.int64))
            for name, kind in FRONTIER.items()
        },
        "rng": rng_state(bb.rng),
    }


def pair_args(pb: Any, pair: Any) -> tuple[np.ndarray, np.ndarray, int, int]:
    """A counterexample as `recheck` takes it: free features of x and x', and their twins."""
    X, XP = np.asarray(pair.x, dtype=np.float64), np.asarray(pair.x_prime, dtype=np.float64)
    return X[pb.free], XP[pb.free], _twin(pb, X), _twin(pb, XP)


def _twin(pb: Any, X: np.ndarray) -> int:
    if not pb.protected:
        return 0
    hit = np.flatnonzero(np.all(pb.combos == X[pb.protected], axis=1))
    return int(hit[0]) if hit.size else 0


def restore_regions(pb: Any, out: Any, state: dict[str, Any], recheck: Any) -> None:
    """Put a state's regions' part into `out` (a `RegionOutcome` or `BranchAndBound` of as many
    regions): arrays checked, each pair re-checked on the model."""
    K = out.verdict.shape[0]
    try:
        verdict = unpack(state["verdict"], "i8")
        seconds, fair, unfair = (unpack(state[k], "f8") for k in ("seconds", "fair_mass", "unfair_mass"))
        evidence, pairs = state["evidence"], state["pairs"]
        counts = RegionCounts.of_state(state["stats"])
        region = unpack(pairs["region"], "i8")
        x, xp = unpack(pairs["x"], "f8", pb.d), unpack(pairs["xp"], "f8", pb.d)
        a, b = unpack(pairs["a"], "i8"), unpack(pairs["b"], "i8")
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise PropertyError(
            f"checkpoint: its state is incomplete or malformed ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None
    n = region.shape[0]
    ok = (
        all(v.shape == (K,) for v in (verdict, seconds, fair, unfair))
        and np.all((verdict >= 0) & (verdict <= 2))
        and all(np.all(v >= 0) for v in (seconds, fair, unfair))
        and isinstance(evidence, list)
        and len(evidence) == K
        and all(isinstance(e, str) and len(e) <= MAX_EVIDENCE_CHARS for e in evidence)
        and x.shape == xp.shape == (n, pb.d)
        and a.shape == b.shape == (n,)
        and np.all((region >= 0) & (region < K))
        and np.unique(region).size == n
        and np.all((a >= 0) & (a < pb.n_twins) & (b >= 0) & (b < pb.n_twins))
    )
    if not ok:
        raise PropertyError("checkpoint: its regions do not fit this domain, network and partition size")
    pair_list: list[Any] = [None] * K
    for i in range(n):
        pair = recheck(pb, x[i], xp[i], int(a[i]), int(b[i]))
        if pair is None:
            raise PropertyError("checkpoint: a counterexample in it does not re-check on this model")
        pair_list[int(region[i])] = pair
    if any((verdict[k] == 2) != (pair_list[k] is not None) for k in range(K)):
        raise PropertyError("checkpoint: its unfair regions and counterexamples do not match")
    out.verdict[:] = verdict
    out.seconds[:] = seconds
    out.fair_mass[:] = fair
    out.unfair_mass[:] = unfair
    out.evidence[:] = evidence
    out.pairs[:] = pair_list
    out.counts = counts


def restore_frontier(bb: Any, state: dict[str, Any]) -> bool:
    """Put a state's open boxes and random state into a fresh branch and bound; False when the
    state has none (it came from the parallel driver)."""
    if "frontier" not in state:
        return False
    pb = bb.pb
    try:
        arrays = {
            name: unpack(state["frontier"][name], kind, pb.d if name in ("lo", "hi") else None)
            for name, kind in FRONTIER.items()
        }
    except (KeyError, TypeError) as exc:
        raise PropertyError(f"checkpoint: its open boxes are malformed ({type(exc).__name__})") from None
    n = arrays["lo"].shape[0]
    lo, hi = arrays["lo"], arrays["hi"]
    ok = (
        all(arrays[k].shape == (n,) for k in FRONTIER if k not in ("lo", "hi"))
        and hi.shape == lo.shape
        and np.all(lo >= pb.lo)
        and np.all(hi <= pb.hi)
        and np.all(lo <= hi)
        and np.all((arrays["owner"] >= 0) & (arrays["owner"] < bb.verdict.shape[0]))
        and np.all(arrays["depth"] >= 0)
        and np.all((arrays["split"] >= -1) & (arrays["split"] < max(pb.d, 1)))
        and all(np.all((arrays[k] == 0) | (arrays[k] == 1)) for k in ("stuck", "ripe"))
    )
    # an open box must lie inside its region: a proof about it is a proof about the region
    ok = ok and bool(np.all(lo >= bb.lo[arrays["owner"]]) and np.all(hi <= bb.hi[arrays["owner"]])) if n else ok
    if not ok:
        raise PropertyError("checkpoint: its open boxes do not fit this domain and partition size")
    set_rng_state(bb.rng, state.get("rng"))
    bb.lo, bb.hi, bb.owner, bb.depth, bb.split = lo, hi, arrays["owner"], arrays["depth"], arrays["split"]
    bb.stuck, bb.ripe = arrays["stuck"].astype(bool), arrays["ripe"].astype(bool)
    return True
