"""A driver that keeps worker processes busy until it is killed (for tests/test_orphans.py):
`python orphan_driver.py MODE`, MODE one of `MODES`."""

from __future__ import annotations

import math
import sys
import time

import numpy as np


class Naps:
    def nap(self, seconds: float) -> float:
        time.sleep(seconds)
        return seconds


def chunks() -> None:
    """Rounds of chunks on a pool (`Workers.map`)."""
    from faircert.engines.boxes.workers import Workers

    with Workers(Naps(), 2) as pool:
        while True:
            pool.map("nap", [(0.02,)] * 4)


def watchdog() -> None:
    """`chunks` with no parent-death signal: the workers' watchdog alone ends them."""
    from faircert import orphans

    orphans._death_signal = lambda: None
    chunks()


def ray() -> None:
    """`chunks` on Ray actors of a cluster the driver starts."""
    from faircert.engines.boxes.workers import Parallelism

    with Parallelism(2, "local").open(Naps()) as pool:
        pool.map("nap", [(0.02,)] * 4)
        print("ready", flush=True)  # (the cluster's own processes come long before the actors)
        while True:
            pool.map("nap", [(0.02,)] * 4)


def shards() -> None:
    """Open boxes held by the workers (`shards.refine`, `Workers.each`), round after round."""
    from test_shards import Count, Halves

    from faircert.engines.boxes import shards
    from faircert.engines.boxes.budget import Budget
    from faircert.engines.boxes.workers import Parallelism

    class Slow(Halves):
        def settle(self, lo, hi):
            time.sleep(0.002)
            return super().settle(lo, hi)

    shards.SEEDS_PER_WORKER = 4
    while True:
        shard = shards.Shard(Slow(), np.ones(2, dtype=bool), 16, None, Count(), None)
        shards.refine(shard, np.zeros((1, 2)), np.full((1, 2), 256.0), Budget(math.inf, None), Parallelism(2))


def network() -> None:
    """The network engine on two workers, with no budget that would end it soon."""
    from test_network_parallel import large_case

    import faircert

    net, dom = large_case()
    while True:
        faircert.verify(net, dom, protected="p", workers=2, time_limit=600)


MODES = {"chunks": chunks, "watchdog": watchdog, "shards": shards, "network": network, "ray": ray}

if __name__ == "__main__":
    MODES[sys.argv[1]]()
