"""Compiled kernels (numba) for the hot loops that numpy cannot vectorise well.

numba is optional (the `fast` extra, part of `all`): without it, or with the environment variable
FAIRCERT_NO_COMPILE=1, `available()` is False and every caller runs its numpy path, which gives
the same results (the tests compare the two). Modules of kernels are imported only once
`available()` says so (numba takes a while to import); kernels compile on first use and are cached
on disk.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache


def available() -> bool:
    return os.environ.get("FAIRCERT_NO_COMPILE", "") != "1" and _numba_installed()


@cache
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def jit(f):
    """`f` compiled on its first call (numba's no-Python mode, cached on disk)."""
    from numba import njit
    return njit(cache=True, nogil=True)(f)


def jit_inline(f):
    """`f` compiled into every compiled function that calls it (for small helpers of hot loops)."""
    from numba import njit
    return njit(cache=True, nogil=True, inline="always")(f)


def jit_parallel(f):
    """`f` compiled on its first call, its `prange` loops run on all cores."""
    from numba import njit
    return njit(cache=True, nogil=True, parallel=True)(f)

