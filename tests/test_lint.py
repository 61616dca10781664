"""Static checks in the suite: ruff's findings (pyflakes, pycodestyle, import order, pyupgrade,
bugbear; configured in pyproject.toml) fail it, in the package, the tests, the benchmarks and the
documentation hooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "--no-cache",
                          "src", "tests", "benchmarks", "docs"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "All checks passed" in run.stdout
