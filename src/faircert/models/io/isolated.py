"""Native libraries run on untrusted model files in a child process.

The XGBoost, LightGBM and CatBoost loaders and the HDF5 library are native code that can abort or
segfault on a malformed file. faircert reads XGBoost and LightGBM files and CatBoost's JSON itself
(the IR never needs the library); the library is only asked for its predictions on sample inputs,
to cross-check the import, and CatBoost for the JSON of a binary `.cbm` file. HDF5 files are
copied out of HDF5 by a child (`keras/hdf5_tree.py`). Children run with bounded memory and time; a
crash there becomes a `ModelFormatError`, not the end of faircert.
"""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ...errors import ModelFormatError
from ...limits import CHILD_MEMORY_BYTES, CHILD_SECONDS, child_seconds

#: The child script that runs the native libraries (`_child.py`: its jobs and their arguments).
CHILD = Path(__file__).with_name("_child.py")
FRAMEWORKS = {"xgboost": "XGBoost", "lightgbm": "LightGBM", "catboost": "CatBoost"}


def framework_outputs(framework: str, path: Path, X: np.ndarray) -> np.ndarray:
    """The framework's raw scores (margins) for the rows of X, computed from the file at `path`."""
    name = FRAMEWORKS[framework]
    payload = io.BytesIO()
    np.save(payload, np.ascontiguousarray(X, dtype=np.float64), allow_pickle=False)
    stdout = run_isolated(CHILD, [framework, str(path)], payload.getvalue(), name, str(path))
    try:
        out = np.load(io.BytesIO(stdout), allow_pickle=False)
    except (ValueError, OSError, EOFError):
        raise ModelFormatError(f"{path}: {name} returned no readable predictions") from None
    if out.shape != (len(X),):
        raise ModelFormatError(f"{path}: {name} returned {out.size} predictions for {len(X)} inputs")
    return out


def catboost_json(path: Path) -> str:
    """A `.cbm` file as CatBoost's JSON export, written by CatBoost in a child process."""
    stdout = run_isolated(CHILD, ["catboost-json", str(path)], b"", "CatBoost", str(path))
    return stdout.decode("utf-8", "replace")


def run_isolated(
    script: Path,
    args: list[str],
    stdin: bytes,
    library: str,
    source: str,
    cannot_read: str = "",
    seconds: float | None = None,
) -> bytes:
    """Run a child script (`CHILD`, with `args` its job and the job's arguments); its stdout, or a
    `ModelFormatError` if the library failed, crashed, or ran out of time or memory on the file. The
    child gets `seconds` (default `CHILD_SECONDS`), and never more than the command's time left
    (`limits.time_budget`)."""
    seconds = child_seconds() if seconds is None else child_seconds(seconds)
    env = dict(os.environ, OMP_NUM_THREADS="1", FAIRCERT_CHILD_MEMORY=str(CHILD_MEMORY_BYTES))
    try:
        # -P: this folder (the script's) must not come first on the path, or its xgboost.py would
        # shadow the library
        done = subprocess.run(
            [sys.executable, "-P", str(script), *args],
            input=stdin,
            capture_output=True,
            timeout=seconds,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ModelFormatError(
            f"{source}: {library} did not read this file within {seconds:.1f} s (the time limit "
            "left, or faircert.limits' cap); the file is malformed or too large"
        ) from None
    if done.returncode != 0:
        raise _failure(done.returncode, done.stderr, library, source, cannot_read)
    return done.stdout


def _failure(returncode: int, stderr: bytes, library: str, source: str, cannot_read: str = "") -> ModelFormatError:
    """The error of a child that ended with `returncode` (a signal when negative)."""
    if returncode < 0:
        signame = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else "?"
        return ModelFormatError(
            f"{source}: the {library} library crashed reading this file ({signame}); the file is malformed"
        )
    reason = _first_line(stderr) or f"exit status {returncode}"
    return ModelFormatError(f"{source}: {cannot_read or f'{library} cannot read this file'}: {reason}")


class Served:
    """A child that serves one request after another (`_child.py`'s `catboost-serve`), started on
    the first and kept for the run, under the same memory limit as every child. Each answer must
    come within `CHILD_SECONDS`; a crash, a refusal or a late answer is a `ModelFormatError` (the
    child is then stopped; the next request starts a fresh one). `close` ends it; so does the
    object's collection, or the interpreter's exit."""

    def __init__(self, args: list[str], library: str, source: str) -> None:
        self.args, self.library, self.source = args, library, source
        self._proc: subprocess.Popen | None = None
        self._stderr: Any = None
        self._finalizer: Any = None
        self._owner = 0  # the process that started the child: only it asks and stops it

    def ask(self, request: bytes) -> bytes:
        """The child's answer to one request (its bytes, from a status-0 answer)."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        deadline = time.monotonic() + CHILD_SECONDS
        try:
            proc.stdin.write(len(request).to_bytes(8, "little") + request)
            proc.stdin.flush()
        except OSError:  # the child is gone: its exit status says why
            pass
        head = self._read(proc, 9, deadline)
        body = self._read(proc, int.from_bytes(head[1:], "little"), deadline)
        if head[0] != 0:
            reason = body.decode("utf-8", "replace")[:200]
            raise ModelFormatError(f"{self.source}: {self.library} cannot score these rows: {reason}")
        return body

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._proc = self._finalizer = None

    def __getstate__(self) -> dict:
        # a copy (a worker's) starts its own child
        return {"args": self.args, "library": self.library, "source": self.source}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["args"], state["library"], state["source"])  # type: ignore[misc]

    def _start(self) -> subprocess.Popen:
        if self._proc is not None and self._owner == os.getpid():
            return self._proc
        if self._finalizer is not None:  # a forked worker's copy: the parent's child stays the parent's
            self._finalizer.detach()
        env = dict(os.environ, OMP_NUM_THREADS="1", FAIRCERT_CHILD_MEMORY=str(CHILD_MEMORY_BYTES))
        self._stderr = tempfile.TemporaryFile()  # a file: a chatty child never blocks on a full pipe
        self._proc = subprocess.Popen(
            [sys.executable, "-P", str(CHILD), *self.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            bufsize=0,
        )
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._stderr, self._owner)
        return self._proc

    def _read(self, proc: subprocess.Popen, n: int, deadline: float) -> bytes:
        """n bytes of the child's answer, or the error that ended it."""
        assert proc.stdout is not None
        out = bytearray()
        while len(out) < n:
            ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0.0))
            chunk = os.read(proc.stdout.fileno(), n - len(out)) if ready else None
            if not chunk:
                self._fail(proc, timed_out=chunk is None)
            out += chunk or b""
        return bytes(out)

    def _fail(self, proc: subprocess.Popen, timed_out: bool) -> NoReturn:
        stderr = self._stderr
        if timed_out:
            self.close()
            raise ModelFormatError(f"{self.source}: {self.library} did not answer within {CHILD_SECONDS} s")
        try:
            returncode = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            returncode = -signal.SIGKILL
        stderr.seek(0)
        text = stderr.read()
        self.close()
        raise _failure(returncode or 3, text, self.library, self.source)


def _stop(proc: subprocess.Popen, stderr: Any, owner: int) -> None:
    """End a served child: its stdin closed (it then exits), killed if it does not within 2 s."""
    if os.getpid() != owner:  # a forked copy at its exit: the child is not its own
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    stderr.close()


def _first_line(stderr: bytes) -> str:
    """The library's reason, one line: XGBoost prefixes `[time] source:line: ` and appends a stack."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[-1].startswith("faircert-child:") else lines[0]
    line = line.removeprefix("faircert-child:").strip().split("\nStack trace", 1)[0]
    return line.split(": ", 1)[-1][:200] if line.startswith("[") else line[:200]
