"""A stopped run keeps its sound work: SIGINT and SIGTERM write the partial result; outputs are
checked before a run and written whole or not at all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from boxes_oracle import random_network
from program_examples import FIG1, GAUSSIAN_SHIFT, GAUSSIAN_SHIFT_RATIO

from faircert.domain import Domain, Feature
from faircert.errors import FaircertError
from faircert.files import check_writable, write_atomic
from faircert.models.io.nnet import save_nnet

SRC = Path(__file__).resolve().parents[1] / "src"


def _hard_network(tmp_path: Path) -> list[str]:
    """A network and domain that no run decides within a minute."""
    save_nnet(random_network(np.random.default_rng(1), 6, [40, 40, 40]), tmp_path / "net.nnet")
    Domain(
        tuple(Feature(f"x{i}", "integer", 0, 1000) for i in range(5)) + (Feature("s", "binary", 0, 1, protected=True),)
    ).save(tmp_path / "domain.yaml")
    return ["verify", str(tmp_path / "net.nnet"), "--domain", str(tmp_path / "domain.yaml"), "--time-limit", "60"]


def _start(args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "faircert", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _signal_after(proc: subprocess.Popen, signum: int, seconds: float, again: bool = False) -> tuple[int, str, float]:
    time.sleep(seconds)
    t0 = time.monotonic()
    proc.send_signal(signum)
    if again:  # the other signal at once: a stopping run may otherwise finish before it arrives
        proc.send_signal(signal.SIGTERM if signum == signal.SIGINT else signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err, time.monotonic() - t0


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)], ids=["SIGINT", "SIGTERM"]
)
def test_a_signal_writes_the_sound_partial_result(tmp_path, signum):
    out = tmp_path / "result.json"
    proc = _start(_hard_network(tmp_path) + ["--json", str(out), "--counterexamples", str(tmp_path / "c.csv")])
    code, err, stop_s = _signal_after(proc, signum, 4.0)
    result = json.loads(out.read_text())
    assert code == {"unknown": 2, "unfair": 1}[result["verdict"]]
    assert result["stats"]["stopped"] == result["stopped"] == "interrupted"
    assert result["undecided"] > 0
    assert result["certified"] + result["falsified"] + result["undecided"] == pytest.approx(1.0, abs=1e-9)
    assert f"{signal.Signals(signum).name} received" in err and "Traceback" not in err
    assert stop_s < 15  # the run stops soon, not at its 60 s limit
    assert (tmp_path / "c.csv").read_text().startswith("x0,")


@pytest.mark.slow
def test_a_second_signal_aborts_without_results(tmp_path):
    out = tmp_path / "result.json"
    proc = _start(_hard_network(tmp_path) + ["--json", str(out)])
    code, err, _ = _signal_after(proc, signal.SIGINT, 5.0, again=True)
    assert code == 2 and "aborted: no result written" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.slow
def test_an_interrupted_program_run_says_so(tmp_path):
    program = tmp_path / "shift.fr"
    program.write_text(GAUSSIAN_SHIFT)
    out = tmp_path / "result.json"
    # the threshold at the program's true ratio: the bounds never settle the verdict
    proc = _start(
        ["program", str(program), "--epsilon", repr(1 - GAUSSIAN_SHIFT_RATIO), "--time-limit", "60", "--json", str(out)]
    )
    code, _, stop_s = _signal_after(proc, signal.SIGTERM, 4.0)
    result = json.loads(out.read_text())
    assert (code, result["verdict"], result["stopped"]) == (2, "unknown", "interrupted")
    assert result["ratio"]["low"] <= GAUSSIAN_SHIFT_RATIO <= result["ratio"]["high"]
    assert stop_s < 15


def test_an_unwritable_output_fails_before_the_run(tmp_path):
    t0 = time.monotonic()
    proc = _start(_hard_network(tmp_path) + ["--json", str(tmp_path / "missing" / "r.json")])
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3 and time.monotonic() - t0 < 20
    assert err.strip().splitlines()[-1] == (
        f"faircert: error: cannot write {tmp_path / 'missing' / 'r.json'}: "
        f"the directory {tmp_path / 'missing'} does not exist"
    )


def test_a_full_stdout_is_one_clear_error(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    (tmp_path / "fig1.fr").write_text(FIG1)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "faircert", "program", str(tmp_path / "fig1.fr"), "--json", "-", "--quiet"],
            env=env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip() == "faircert: error: cannot write to standard output: No space left on device"


def test_check_writable_names_the_problem(tmp_path):
    check_writable([None, "-", tmp_path / "fine.json"])
    with pytest.raises(FaircertError, match="it is a directory"):
        check_writable([tmp_path])


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "result.json"
    target.write_text("old")

    def half_then_fail(handle):
        handle.write("new, half written")
        raise OSError(28, "No space left on device")

    with pytest.raises(FaircertError, match="cannot write .*No space left on device"):
        write_atomic(target, half_then_fail)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    write_atomic(target, lambda handle: handle.write("new"))
    assert target.read_text() == "new"


@pytest.mark.parametrize("after", [0.02, 0.1, 0.3])
def test_a_signal_while_the_command_still_loads_is_a_quiet_abort(tmp_path, after):
    """SIGINT once the entry point runs but before any run started (while numpy and the engines
    import): one line, exit 2. The child says when it reaches the entry point; before that, the
    interpreter itself is starting, which no entry point can guard."""
    entry = "import sys; from faircert.cli import run; sys.stderr.write('ready\\n'); sys.stderr.flush(); run()"
    proc = subprocess.Popen(
        [sys.executable, "-c", entry, "verify", "missing.nnet", "--protected", "x0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stderr.readline() == b"ready\n"
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    text = err.decode()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    # the signal came while loading (aborted, 2), or after the run ended on the missing file (3; or
    # killed by the signal while the interpreter shut down, when Python has restored the default handler)
    assert (proc.returncode == 2 and text.strip() == "faircert: aborted: no result written") or (
        proc.returncode in (3, -signal.SIGINT) and "model file not found" in text
    )
