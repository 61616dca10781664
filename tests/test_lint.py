"""Static checks in the suite: ruff's findings (pyflakes, pycodestyle, import order, pyupgrade,
bugbear; configured in pyproject.toml) and any layout that `ruff format` would change fail it, in
the package, the tests, the benchmarks and the documentation hooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ["src", "tests", "benchmarks", "docs"]


def _ruff(*arguments: str) -> subprocess.CompletedProcess:
    pytest.importorskip("ruff")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *arguments, "--no-cache", *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ruff_finds_nothing():
    run = _ruff("check", "--output-format", "concise")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "All checks passed" in run.stdout


def test_the_code_is_laid_out_as_ruff_format_lays_it_out():
    run = _ruff("format", "--check")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "already formatted" in run.stdout
