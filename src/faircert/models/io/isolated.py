"""Framework libraries run on untrusted model files in a child process.

The XGBoost and LightGBM loaders are native code that can abort or segfault on a malformed file.
faircert reads those files itself (the IR never needs the library); the library is only asked for
its predictions on sample inputs, to cross-check the import, and it is asked in a child process
with bounded memory and time. A crash there becomes a `ModelFormatError`, not the end of faircert.
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
from ...limits import CHILD_MEMORY_BYTES, CHILD_SECONDS

CHILD = Path(__file__).with_name("_framework_child.py")
FRAMEWORKS = {"xgboost": "XGBoost", "lightgbm": "LightGBM"}


def framework_outputs(framework: str, path: Path, X: np.ndarray) -> np.ndarray:
    """The framework's raw scores (margins) for the rows of X, computed from the file at `path`."""
    name = FRAMEWORKS[framework]
    payload = io.BytesIO()
    np.save(payload, np.ascontiguousarray(X, dtype=np.float64), allow_pickle=False)
    env = dict(os.environ, OMP_NUM_THREADS="1", FAIRCERT_CHILD_MEMORY=str(CHILD_MEMORY_BYTES))
    try:
        done = subprocess.run([sys.executable, "-P", str(CHILD), framework, str(path)], input=payload.getvalue(),
                              capture_output=True, timeout=CHILD_SECONDS, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise ModelFormatError(f"{path}: {name} did not load this file within {CHILD_SECONDS} s") from None
    if done.returncode < 0:
        signame = signal.Signals(-done.returncode).name if -done.returncode in signal.valid_signals() else "?"
        raise ModelFormatError(f"{path}: the {name} library crashed reading this file ({signame}); the file is "
                               "malformed")
    if done.returncode != 0:
        reason = _first_line(done.stderr) or f"exit status {done.returncode}"
        raise ModelFormatError(f"{path}: {name} cannot read this file: {reason}")
    try:
        out = np.load(io.BytesIO(done.stdout), allow_pickle=False)
    except (ValueError, OSError, EOFError):
        raise ModelFormatError(f"{path}: {name} returned no readable predictions") from None
    if out.shape != (len(X),):
        raise ModelFormatError(f"{path}: {name} returned {out.size} predictions for {len(X)} inputs")
    return out


def _first_line(stderr: bytes) -> str:
    """The library's reason, one line: XGBoost prefixes `[time] source:line: ` and appends a stack."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[-1].startswith("faircert-child:") else lines[0]
    line = line.removeprefix("faircert-child:").strip().split("\nStack trace", 1)[0]
    return line.split(": ", 1)[-1][:200] if line.startswith("[") else line[:200]
