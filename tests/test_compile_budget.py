"""Compiling kernels does not eat a run's time limit: the tree engine builds them before its clock
starts and reports the seconds apart; once cached, a run compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from timing import wall

import faircert
from faircert import compiled
from faircert.engines.trees import verify

TESTS = Path(__file__).resolve().parent


def test_compiling_before_the_clock_is_reported_and_not_counted(monkeypatch):
    from test_workers import _adult_like

    def slow_compile(ir):  # as a cold cache would: seconds spent compiling
        time.sleep(0.5)
        monkeypatch.setattr(compiled, "_compiling_s", compiled._compiling_s + 0.5)

    monkeypatch.setattr(compiled, "available", lambda: True)
    monkeypatch.setattr(verify, "_warm", slow_compile)
    ir, dom = _adult_like()
    start = time.monotonic()
    r = faircert.verify(ir, dom, protected="s", kappa=0.5, epsilon={"a": 1}, workers=1, time_limit=5)
    wall_s = time.monotonic() - start
    assert r.stats["kernels_compile_s"] == 0.5
    assert r.elapsed_s <= wall_s - 0.5  # the engine's clock started after the compiling


def test_nothing_is_compiled_ahead_where_nothing_can_be_cached(monkeypatch):
    monkeypatch.setattr(compiled, "_uncached", True)
    assert compiled.warm(lambda: pytest.fail("compiled ahead with no cache")) == 0.0


@pytest.mark.slow
def test_a_first_run_on_a_cold_cache_keeps_its_time_limit(tmp_path):
    """A fresh kernel cache: the first run compiles (tens of seconds on a busy machine) before its
    clock starts; the second compiles nothing."""
    pytest.importorskip("numba")
    code = (
        "import json, sys; from test_workers import _adult_like; import faircert; ir, dom = _adult_like(); "
        "r = faircert.verify(ir, dom, protected='s', kappa=0.5, epsilon={'a': 1}, workers=1, time_limit=2); "
        "print(json.dumps([r.elapsed_s, r.stats['kernels_compile_s']]))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=600).stdout)
        for _ in range(2)
    ]
    (first_s, first_compile), (second_s, second_compile) = runs
    assert first_compile > 0 and second_compile == 0
    assert first_s < wall(2) and second_s < wall(2)
