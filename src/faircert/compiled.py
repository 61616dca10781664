"""Compiled kernels (numba) for the hot loops that numpy cannot vectorise well.

numba is optional (the `fast` extra, part of `all`): without it, or with the environment variable
FAIRCERT_NO_COMPILE=1, `available()` is False and every caller runs its numpy path, which gives
the same results (the tests compare the two). Modules of kernels are imported only once
`available()` says so (numba takes a while to import); kernels compile on first use and are cached
on disk. An engine whose kernels take seconds to compile warms them (`warm`) before its clock
starts, so that a first run keeps its time limit; the seconds spent compiling are reported apart
(`compile_seconds`).

Large inputs are split among threads of our own (the kernels release the GIL) rather than numba's
parallel loops: numba's OpenMP workers keep spinning after each call, which slowed the numpy work
between calls several times over on two cores.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import pairwise

SPLIT_FROM = 8192  # rows from which a kernel's rows are split among the cores


def available() -> bool:
    return os.environ.get("FAIRCERT_NO_COMPILE", "") != "1" and _numba_installed()


@cache
def _numba_installed() -> bool:
    if importlib.util.find_spec("numba") is None:
        return False
    try:  # numba and LLVM may fail to load, e.g. under a tight memory limit: the numpy path still works
        import numba  # noqa: F401
    except (ImportError, OSError, MemoryError):
        return False
    return True


def jit(f):
    """`f` compiled on its first call (numba's no-Python mode, releasing the GIL, cached on disk).
    The first call that compiles says so on stderr: it takes seconds with nothing else on screen."""
    return _Announced(_njit(f))


_compiling_s = 0.0  # seconds this process's first calls of kernels spent compiling them


def compile_seconds() -> float:
    """Seconds this process has spent compiling kernels (first calls with no cached machine code)."""
    return _compiling_s


def warm(call: Callable[[], object]) -> float:
    """Run `call` (which calls kernels on tiny inputs, so that they compile) where kernels are
    cached on disk, before an engine's clock starts; the seconds it spent compiling (0 once
    cached). Where nothing can be cached, nothing is run: each run would compile what it may never
    need."""
    if not available() or not _can_cache():
        return 0.0
    before = _compiling_s
    call()
    return _compiling_s - before


class _Announced:
    """A compiled kernel that, on a first call with no cached machine code, says it is compiling
    (and counts the seconds in `compile_seconds`)."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.checked = False

    def __call__(self, *args):
        global _compiling_s
        if not self.checked:
            self.checked = True
            if not self.kernel.signatures and not _cached(self.kernel):
                announce_compiling()
                t0 = time.perf_counter()
                out = self.kernel(*args)
                _compiling_s += time.perf_counter() - t0
                return out
        return self.kernel(*args)


def _cached(kernel) -> bool:
    try:
        return os.path.exists(kernel._cache._cache_file._index_path)
    except AttributeError:  # no disk cache (or numba's layout changed): assume it compiles
        return False


@cache
def announce_compiling() -> None:
    """Once per process."""
    import sys

    print("compiling kernels (first run only)", file=sys.stderr, flush=True)


def jit_inline(f):
    """`f` compiled into every compiled function that calls it (for small helpers of hot loops)."""
    return _njit(f, inline="always")


def _njit(f, **options):
    global _uncached
    import numba

    try:
        return numba.njit(cache=True, nogil=True, **options)(f)
    except RuntimeError:  # nowhere writable to cache (read-only install and home): compile in each process
        _uncached = True
        return numba.njit(nogil=True, **options)(f)


_uncached = False  # a kernel found nowhere to cache its machine code


def _can_cache() -> bool:
    return not _uncached


_thread_cap: int | None = None


def limit_threads(n: int) -> None:
    """Split kernels over at most n threads in this process: a worker process shares the cores with
    the other workers, so more threads would only compete with them."""
    global _thread_cap
    _thread_cap = max(1, n)


def over_rows(kernel, n_rows: int, *args) -> None:
    """kernel(*args, start, stop) for rows 0..n_rows, in one block per core (the calling thread
    takes the first; at most `limit_threads` blocks); small inputs run on the calling thread alone."""
    cores = min(_cores(), _thread_cap or _cores())
    if n_rows < SPLIT_FROM or cores == 1:
        kernel(*args, 0, n_rows)
        return
    edges = [n_rows * k // cores for k in range(cores + 1)]
    pool = _pool(cores - 1)
    futures = [pool.submit(kernel, *(*args, a, b)) for a, b in pairwise(edges[1:])]
    kernel(*args, edges[0], edges[1])
    for f in futures:
        f.result()


@cache
def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="faircert-kernel")
