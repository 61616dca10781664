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
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from ...errors import ModelFormatError
from ...limits import CHILD_MEMORY_BYTES, child_seconds

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
    if done.returncode < 0:
        signame = signal.Signals(-done.returncode).name if -done.returncode in signal.valid_signals() else "?"
        raise ModelFormatError(
            f"{source}: the {library} library crashed reading this file ({signame}); the file is malformed"
        )
    if done.returncode != 0:
        reason = _first_line(done.stderr) or f"exit status {done.returncode}"
        raise ModelFormatError(f"{source}: {cannot_read or f'{library} cannot read this file'}: {reason}")
    return done.stdout


def _first_line(stderr: bytes) -> str:
    """The library's reason, one line: XGBoost prefixes `[time] source:line: ` and appends a stack."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[-1].startswith("faircert-child:") else lines[0]
    line = line.removeprefix("faircert-child:").strip().split("\nStack trace", 1)[0]
    return line.split(": ", 1)[-1][:200] if line.startswith("[") else line[:200]
