"""Killing a command part way, as a power loss or the OOM killer would (for the resume tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def killed_after(args: list[str], seconds: float) -> bool:
    """Run `args`, SIGKILL it after `seconds` if it is still running; whether it was killed."""
    child = subprocess.Popen(args)
    time.sleep(seconds)
    killed = child.poll() is None
    if killed:
        os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    return killed


def killed_after_checkpoint(args: list[str], checkpoint, seconds: float) -> bool:
    """Run `args`, SIGKILL it `seconds` after it wrote `checkpoint` (however long it took to start,
    on a busy machine) if it is still running; whether it was killed."""
    child = subprocess.Popen(args)
    while child.poll() is None and not checkpoint.exists():
        time.sleep(0.01)
    time.sleep(seconds)
    killed = child.poll() is None
    if killed:
        os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    return killed


def rerun(args: list[str], checkpoint, out) -> int:
    """Run `args` again, writing JSON to `out`: resumed from `checkpoint` when the killed run wrote
    one, afresh otherwise; the exit code."""
    resume = ["--resume", str(checkpoint)] if checkpoint.exists() else []
    return subprocess.run(args + resume + ["--json", str(out)], check=False, timeout=300).returncode
