"""No worker outlives its driver: a driver killed with SIGKILL at random moments, while its workers
run, leaves no process of its run behind (Linux: the run's processes are found by a marker in
their environment, which every process it starts inherits)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from faircert import orphans

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
MARKER = "FAIRCERT_TEST_RUN"
START_S = 60  # for a driver to start its workers, on a busy machine
GONE_S = 3  # for its workers to end once it is killed


def _processes() -> dict[int, tuple[int, bytes, list[bytes]]]:
    """Every live process (no zombie): its parent, command line and environment."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                state, ppid = f.read().rpartition(")")[2].split()[:2]
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if state != "Z":
            found[int(entry.name)] = (int(ppid), cmdline, environ)
    return found


def _run_processes(token: str, known: set[int], spare: tuple[bytes, ...] = ()) -> set[int]:
    """The live processes of a run: those whose environment holds the marker `token`, the `known`
    ones (a process may overwrite its environment with its title) and their children, but for
    those whose command line starts with one of `spare`."""
    table = _processes()
    wanted = f"{MARKER}={token}".encode()
    run = {pid for pid, (_, _, environ) in table.items() if wanted in environ} | (known & table.keys())
    while True:
        more = {pid for pid, (ppid, _, _) in table.items() if ppid in run} - run
        if not more:
            break
        run |= more
    return {pid for pid in run if not table[pid][1].startswith(spare)}


def _leftovers_after_killing(mode: str, delay: float, spare: tuple[bytes, ...] = ()) -> list[int]:
    """Start a driver in `mode`, SIGKILL it `delay` seconds after its two workers are up; the
    processes of its run still alive `GONE_S` seconds later (killed here, so that none leaks),
    but for those `spare` names (`_run_processes`)."""
    token = uuid.uuid4().hex
    env = {**os.environ, MARKER: token, "PYTHONPATH": os.pathsep.join([str(TESTS), str(SRC)])}
    driver = subprocess.Popen([sys.executable, str(TESTS / "orphan_driver.py"), mode], env=env, stdout=subprocess.PIPE)
    try:
        end = time.monotonic() + START_S
        if mode == "ray":
            assert driver.stdout is not None and driver.stdout.readline() == b"ready\n"
        while len(_run_processes(token, {driver.pid})) < 3:  # the driver and its two workers
            assert driver.poll() is None, f"the {mode} driver ended by itself ({driver.returncode})"
            assert time.monotonic() < end, f"the {mode} driver started no workers in {START_S} s"
            time.sleep(0.01)
        time.sleep(delay)
    finally:
        known = _run_processes(token, {driver.pid})
        driver.kill()
        driver.wait()
    end = time.monotonic() + GONE_S
    while _run_processes(token, known, spare) and time.monotonic() < end:
        time.sleep(0.05)
    left = _run_processes(token, known, spare)
    for pid in _run_processes(token, known):
        os.kill(pid, signal.SIGKILL)
    return sorted(left)


@pytest.mark.parametrize("mode", ["chunks", "watchdog", "shards", "network"])
def test_workers_end_with_a_killed_driver(mode):
    for delay in (0.0, random.Random(mode).uniform(0.05, 0.5)):
        assert _leftovers_after_killing(mode, delay) == [], (mode, delay)


@pytest.mark.slow
def test_workers_end_with_a_driver_killed_at_twenty_random_moments():
    rng = random.Random(20)
    for k in range(20):
        mode, delay = ["chunks", "watchdog", "shards", "network"][k % 4], rng.uniform(0.0, 1.5)
        assert _leftovers_after_killing(mode, delay) == [], (mode, delay)


@pytest.mark.slow
def test_ray_actors_end_with_a_killed_driver():
    """faircert's actors, and the cluster the driver started (seconds to start). Ray's own agents
    are spared: they end later, on Ray's own schedule (more than a minute here)."""
    pytest.importorskip("ray")
    ray_agents = (b"ray::DashboardAgent", b"ray::RuntimeEnvAgent")
    for delay in (0.0, 0.7):
        assert _leftovers_after_killing("ray", delay, ray_agents) == [], delay


def test_a_process_whose_parent_is_already_gone_ends_at_once():
    code = "import os; from faircert import orphans; orphans.exit_with_parent(os.getppid() + 1); print('ran on')"
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True, timeout=60
    )
    assert out.returncode == orphans.EXIT_CODE and b"ran on" not in out.stdout


def test_a_driver_is_watched_only_where_it_is_found():
    me = orphans.identity()
    assert me is not None and me[1] == os.getpid()
    orphans.exit_without(None)  # (nothing to watch: returns)
    orphans.exit_without((me[0], me[1], "0"))  # another process with this pid, or another machine's
    orphans.exit_without(("another boot", me[1], me[2]))
    time.sleep(2 * orphans.POLL_S)  # (a wrong watchdog would have ended this process by now)
