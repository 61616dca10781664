"""Box work on several cores: long-lived worker processes that each hold the job once.

A box engine's driver keeps the frontier and hands out rounds of chunks; `Workers.map` runs the
job's method on each chunk and returns the results in chunk order, so a round's merge (and so the
whole run, up to a box budget) is the same with 1, 2 or N workers. With one worker everything runs
in this process, today's path.

Workers are forked where the platform can (no re-import of the caller's main module, so scripts
need no `if __name__ == "__main__"` guard; the job is inherited, not sent) and spawned elsewhere;
they hold the job (model and question) once and ignore SIGINT: a stop request reaches the driver, which ends
after its current round with a sound partial result. A worker that dies loses nothing: its chunks
go back into the round, on a fresh pool.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ...errors import FaircertError

MAX_RESTARTS = 3  # pools replaced after worker deaths before the run gives up

_job: Any = None


def _hold(job: Any) -> None:
    global _job
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _job = job


def _run(method: str, chunk: tuple) -> Any:
    return getattr(_job, method)(*chunk)


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Workers:
    """`n` processes holding `job`; `map(method, chunks)` = [job.method(*chunk) for chunk in chunks]."""

    def __init__(self, job: Any, n: int) -> None:
        self.job, self.n = job, n
        self.restarts = 0
        self._pool: ProcessPoolExecutor | None = self._start() if n > 1 else None

    def _start(self) -> ProcessPoolExecutor:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        return ProcessPoolExecutor(self.n, mp_context=context, initializer=_hold, initargs=(self.job,))

    def map(self, method: str, chunks: Sequence[tuple]) -> list[Any]:
        if self._pool is None:
            return [getattr(self.job, method)(*chunk) for chunk in chunks]
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
        self.restarts += 1
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self.restarts > MAX_RESTARTS:
            self._pool = None
            raise FaircertError(f"worker processes died {self.restarts} times (out of memory?); "
                                "run with fewer workers or with --workers 1")
        self._pool = self._start()

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests that kill one)."""
        if self._pool is None:
            return [os.getpid()]
        return sorted(self._pool._processes)  # the executor's live processes, by pid

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
