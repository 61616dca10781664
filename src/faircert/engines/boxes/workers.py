"""Box work on several cores or a Ray cluster: long-lived workers that each hold the job once.

An engine's driver may hand out rounds of chunks (partitions, rows, trial splits); `Workers.map`
runs the job's method on each chunk and returns the results in chunk order, so a round's merge is
the same with 1, 2 or N workers. With one worker everything runs
in this process, today's path.

Workers are forked where the platform can (no re-import of the caller's main module, so scripts
need no `if __name__ == "__main__"` guard; the job is inherited, not sent) and spawned elsewhere,
or where the job computes on a device (torch's thread pool and a CUDA context do not survive a
fork): each spawned worker then makes its own, and the caller's script needs that guard. They
hold the job (model and question) once and ignore SIGINT: a stop request reaches the driver, which
ends after its current round with a sound partial result. A worker that dies loses nothing: its chunks
go back into the round, on a fresh pool. A driver that dies takes its workers with it
(`orphans.exit_with_parent`), whatever killed it.

`each(method, args)` calls worker k's own copy of the job with args[k]: for engines whose workers
keep state between calls (a share of the open boxes, `shards`). A worker that dies there is
replaced by a fresh one and reported as `LOST`, for the driver to give its share again.

On a Ray cluster (`RayWorkers`, the `ray` extra) the job goes into Ray's object store once and each
worker is an actor holding it; a dead actor is replaced and its chunks resubmitted. Every machine
of the cluster needs faircert installed in the same version.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from ... import compiled, orphans
from ...errors import FaircertError

MAX_RESTARTS = 3  # pools replaced after worker deaths before the run gives up
#: With the default worker count, work stays in this process for a run's first seconds: starting
#: workers costs more than they save on short runs.
START_AFTER_S = 1.0

_job: Any = None

LOST = object()  # `each`'s result for a worker that died during the call (it has been replaced)


def _hold(job: Any, threads: int, driver: int, spawned: bool = False) -> None:
    global _job
    orphans.exit_with_parent(driver)  # a worker ends with its driver, however the driver ended
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    compiled.limit_threads(threads)  # the cores are the workers' together
    torch = sys.modules.get("torch")  # loaded by a job on a device: its kernels share the cores too
    if spawned and torch is not None:  # (a forked worker leaves torch's inherited thread pool alone)
        torch.set_num_threads(threads)
    _job = job


def _run(method: str, chunk: tuple[Any, ...]) -> Any:
    return getattr(_job, method)(*chunk)


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Workers:
    """`n` processes holding `job`; `map(method, chunks)` = [job.method(*chunk) for chunk in chunks].
    For the first `start_after` seconds `map` runs here (the same results, without starting workers).
    `spawn`: start them afresh, never forked (a job on a device)."""

    def __init__(self, job: Any, n: int, start_after: float = 0.0, spawn: bool = False) -> None:
        self.job, self.n, self.spawn = job, n, spawn
        self.restarts = 0
        self.start_at = time.monotonic() + start_after
        self._pool: ProcessPoolExecutor | None = None  # started at the first call that needs it
        self._pinned: list[ProcessPoolExecutor] = []

    def _start(self, n: int | None = None) -> ProcessPoolExecutor:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() and not self.spawn else "spawn"
        context = multiprocessing.get_context(method)
        threads = max(1, usable_cores() // self.n)
        return ProcessPoolExecutor(
            n or self.n,
            mp_context=context,
            initializer=_hold,
            initargs=(self.job, threads, os.getpid(), method == "spawn"),
        )

    def each(self, method: str, args: Sequence[tuple[Any, ...] | None]) -> list[Any]:
        """[worker k's job.method(*args[k])] (None where args[k] is None, `LOST` where worker k died)."""
        if self.n == 1:
            return [None if a is None else getattr(self.job, method)(*a) for a in args[:1]]
        if self._pool is not None:  # `map` and `each` do not share workers: their jobs differ in state
            self._pool.shutdown(wait=True)
            self._pool = None
        if not self._pinned:
            self._pinned = [self._start(1) for _ in range(self.n)]
        futures = [None if a is None else self._pinned[k].submit(_run, method, a) for k, a in enumerate(args)]
        results: list[Any] = []
        for k, future in enumerate(futures):
            try:
                results.append(None if future is None else future.result())
            except BrokenProcessPool:
                results.append(LOST)
                self._pinned[k].shutdown(wait=False, cancel_futures=True)
                self._count_restart()
                self._pinned[k] = self._start(1)
        return results

    def map(self, method: str, chunks: Sequence[tuple[Any, ...]]) -> list[Any]:
        if self.n == 1 or (self._pool is None and time.monotonic() < self.start_at):
            return [getattr(self.job, method)(*chunk) for chunk in chunks]
        if self._pool is None:
            self._pool = self._start()
        results: list[Any] = [None] * len(chunks)
        todo = list(range(len(chunks)))
        while todo:
            futures = [(i, self._pool.submit(_run, method, chunks[i])) for i in todo]
            lost = []
            for i, future in futures:
                try:
                    results[i] = future.result()
                except BrokenProcessPool:
                    lost.append(i)
            if lost:
                self._replace_pool()
            todo = lost
        return results

    def _replace_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._count_restart()
        self._pool = self._start()

    def _count_restart(self) -> None:
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            self.close()
            raise FaircertError(
                f"worker processes died {self.restarts} times (out of memory?); "
                "run with fewer workers or with --workers 1"
            )

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests that kill one)."""
        if self._pinned:
            return sorted(p for ex in self._pinned for p in ex._processes)
        if self._pool is None:
            return [os.getpid()]
        return sorted(self._pool._processes)  # the executor's live processes, by pid

    def close(self) -> None:
        for ex in [self._pool] + self._pinned:
            if ex is not None:
                ex.shutdown(wait=True, cancel_futures=True)
        self._pool, self._pinned = None, []

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: How long connecting to a Ray cluster's port may take before it counts as unreachable.
RAY_CONNECT_S = 5


class RayWorkers:
    """The same as `Workers`, on Ray actors: `address` "local" starts a cluster on this machine,
    "auto" joins the running one (or RAY_ADDRESS), anything else is a cluster address."""

    def __init__(self, job: Any, n: int | None, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise FaircertError("running on a Ray cluster needs Ray: pip install 'faircert[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
            _check_reachable(os.environ.get("RAY_ADDRESS", "") if address == "auto" else address)
            try:
                if address == "local":
                    ray.init(num_cpus=n or usable_cores(), **quiet)
                else:
                    ray.init(address=address, **quiet)
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise FaircertError(f"cannot reach the Ray cluster at {address!r}: {first[:300]}") from None
            self._started = True
        self.n = n or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.restarts = 0
        self._last_error = ""
        self._job = ray.put(job)
        self._holder = ray.remote(num_cpus=1, max_restarts=0)(_Holder)
        self._driver = orphans.identity()
        self._actors = [self._holder.remote(self._job, self._driver) for _ in range(self.n)]

    def map(self, method: str, chunks: Sequence[tuple[Any, ...]]) -> list[Any]:
        ray = self._ray
        results: list[Any] = [None] * len(chunks)
        todo = list(range(len(chunks)))
        while todo:
            refs = [
                (i, self._actors[k % self.n], self._actors[k % self.n].run.remote(method, chunks[i]))
                for k, i in enumerate(todo)
            ]
            lost = []
            for i, actor, ref in refs:
                try:
                    results[i] = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                    lost.append(i)
                    self._last_error = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
                    self._replace(actor)
            todo = lost
        return results

    def each(self, method: str, args: Sequence[tuple[Any, ...] | None]) -> list[Any]:
        """As `Workers.each`, on actor k."""
        ray = self._ray
        refs = [None if a is None else self._actors[k].run.remote(method, a) for k, a in enumerate(args)]
        results: list[Any] = []
        for k, ref in enumerate(refs):
            try:
                results.append(None if ref is None else ray.get(ref))
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                results.append(LOST)
                self._last_error = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
                self._replace(self._actors[k])
        return results

    def _replace(self, actor: Any) -> None:
        if actor not in self._actors:  # already replaced for an earlier chunk of this round
            return
        self.restarts += 1
        if self.restarts > MAX_RESTARTS * self.n:
            raise FaircertError(
                f"Ray workers died {self.restarts} times (last: {self._last_error}); "
                "run with fewer workers or without --ray"
            )
        self._actors[self._actors.index(actor)] = self._holder.remote(self._job, self._driver)

    def pids(self) -> list[int]:
        return sorted(self._ray.get([a.pid.remote() for a in self._actors]))

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
        if self._started:
            self._ray.shutdown()

    def __enter__(self) -> RayWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_reachable(address: str) -> None:
    """Ray retries an unreachable cluster for minutes: try its port first, for a one-line error."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "local", "auto" without RAY_ADDRESS, or a form Ray itself resolves
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_S).close()
    except OSError as exc:
        raise FaircertError(f"cannot reach the Ray cluster at {address!r}: {exc.strerror or exc}") from None


class _Holder:
    """A Ray actor holding the job; it ends with its driver where that runs on the same machine."""

    def __init__(self, job: Any, driver: tuple[str, int, str] | None = None) -> None:
        orphans.exit_without(driver)
        compiled.limit_threads(1)  # an actor holds one CPU of the cluster
        self.job = job

    def run(self, method: str, chunk: tuple[Any, ...]) -> Any:
        return getattr(self.job, method)(*chunk)

    def pid(self) -> int:
        return os.getpid()


@dataclass(frozen=True)
class Parallelism:
    """Where box work runs: `workers` local processes (1: this process), or Ray actors when
    `ray_address` is given (`workers` then caps them; 1 means one per CPU of the cluster). Local
    workers start once a run has lasted `start_after` seconds (the work runs here until then).
    A `device` ("cpu" or "cuda": torch, for the engines that bound on one) is every process's: the
    driver's and each worker's (spawned; on "cuda" they share the GPU, each with its own context)."""

    workers: int = 1
    ray_address: str | None = None
    start_after: float = 0.0
    device: str | None = None

    def __post_init__(self) -> None:
        if self.device is not None and self.ray_address:
            raise FaircertError("--device bounds on this machine's processes: leave out --ray")

    @classmethod
    def of(cls, workers: int | None, ray_address: str | None = None, device: str | None = None) -> Parallelism:
        """From the options: `workers` None is the default, every usable core (started after
        `START_AFTER_S`) or, on Ray, one actor per CPU of the cluster; with a `device`, this process
        unless `workers` says how many share it."""
        if device is not None:
            return cls(workers or 1, ray_address, device=device)
        if workers is not None:
            return cls(workers, ray_address)
        if ray_address:
            return cls(1, ray_address)
        cores = usable_cores()
        return cls(cores, None, START_AFTER_S) if cores > 1 else SERIAL

    def open(self, job: Any) -> Pool:
        if self.ray_address:
            return RayWorkers(job, self.workers if self.workers > 1 else None, self.ray_address)
        return Workers(job, self.workers, self.start_after, spawn=self.device is not None)

    @property
    def processes(self) -> int:
        """The local processes a run holds: the driver, and its workers if it has any."""
        return 1 if self.workers <= 1 or self.ray_address else self.workers + 1


SERIAL = Parallelism()


#: Workers of either kind: local processes or Ray actors (the same calls).
Pool = Workers | RayWorkers
