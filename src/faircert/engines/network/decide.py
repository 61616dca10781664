"""Complete and partitioned verification of networks: the registry's entry point and its result.

`--complete` decides the whole domain (one region); `--partition-size MS` decides every Fairify
partition (`partitions`) and aggregates: any unfair partition makes the model unfair, all fair
make it fair, otherwise unknown with the coverage (decided partitions / all). The sound shares are
kept: `certified` is the mass of the boxes proven fair, `falsified` the mass proven unfair
(enumerated points, boxes the bounds separate), the rest undecided.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import PropertyError
from ...models.network import ReluNetwork
from ...properties import IndividualFairness
from ...results import Result
from .complete import FAIR, UNFAIR, UNKNOWN, VERDICTS, decide_regions
from .partitions import partition_grid
from .problem import Problem
from .refine import epsilon_semantics


def answer(network: ReluNetwork, prop: IndividualFairness, options: Any,
           progress: Callable[[dict], None] | None = None) -> Result:
    """Registry entry point (method "complete")."""
    if prop.kappa is not None:
        raise PropertyError("kappa is supported for tree ensembles, not for networks")
    return decide_network(network, prop, time_limit=options.time_limit, partition_size=options.partition_size,
                          seed=options.seed, max_counterexamples=options.max_counterexamples, progress=progress)


def decide_network(network: ReluNetwork, prop: IndividualFairness, *, time_limit: float | None = None,
                   partition_size: int | None = None, seed: int = 0, max_counterexamples: int = 100,
                   progress: Callable[[dict], None] | None = None) -> Result:
    t0 = time.perf_counter()
    pb = Problem.build(network, prop)
    if partition_size is None:
        lo, hi = pb.lo[None].copy(), pb.hi[None].copy()
    else:
        lo, hi = partition_grid(pb, partition_size)
    size = pb.domain_size

    def report(info: dict) -> None:
        if progress is not None:
            progress(dict(info, certified=info["fair"] / lo.shape[0], falsified=info["unfair"] / lo.shape[0]))

    out = decide_regions(pb, lo, hi, time_limit=time_limit, seed=seed, progress=report)
    elapsed = time.perf_counter() - t0
    v = out.verdict
    n_fair, n_unfair, n_unknown = int((v == FAIR).sum()), int((v == UNFAIR).sum()), int((v == UNKNOWN).sum())
    verdict = "unfair" if n_unfair else ("fair" if n_unknown == 0 else "unknown")
    certified = float(out.fair_mass.sum()) / size
    falsified = float(out.unfair_mass.sum()) / size
    if verdict == "fair":
        certified, falsified = 1.0, 0.0
    undecided = max(0.0, 1.0 - certified - falsified)
    pairs = [p for p in out.pairs if p is not None]
    K = lo.shape[0]
    decision = dict(
        verdict=verdict,
        evidence=("counterexample" if n_unfair else "proof" if verdict == "fair" else "budget exhausted"),
        regions=K, fair=n_fair, unfair=n_unfair, unknown=n_unknown, coverage=(n_fair + n_unfair) / K,
        partition_size=partition_size, partitions_per_s=(n_fair + n_unfair) / max(elapsed, 1e-9))
    rows = None
    if partition_size is not None:
        rows = _rows(pb, prop, lo, hi, out)
    names = prop.domain.names
    stats = dict(out.stats, twins=pb.n_twins, tolerance=pb.tol)
    return Result(verdict=verdict, certified=certified, falsified=falsified, undecided=undecided, domain_size=size,
                  counterexamples=pairs[:max_counterexamples], statistical=None, elapsed_s=elapsed,
                  engine="network-complete", model=network.source, protected=prop.protected_names,
                  epsilon=prop.epsilon_by_name, stats=stats, feature_names=names,
                  epsilon_semantics=epsilon_semantics(prop), decision=decision, partitions=rows)


def _rows(pb: Problem, prop: IndividualFairness, lo: np.ndarray, hi: np.ndarray, out) -> list[dict]:
    """One row per partition: bounds of its cut features, verdict, seconds, evidence, pair."""
    names = [prop.domain.names[i] for i in pb.free]
    cut = np.flatnonzero(np.any(lo != pb.lo, axis=0) | np.any(hi != pb.hi, axis=0))
    rows = []
    for k in range(lo.shape[0]):
        pair = out.pairs[k]
        rows.append(dict(
            id=k, lower={names[i]: _num(lo[k, i]) for i in cut}, upper={names[i]: _num(hi[k, i]) for i in cut},
            verdict=VERDICTS[out.verdict[k]], seconds=float(out.seconds[k]), evidence=out.evidence[k] or None,
            counterexample=pair.to_dict() if pair is not None else None))
    return rows


def _num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)
