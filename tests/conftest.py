"""Shared test helpers: where the shared benchmark files live."""

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
BENCHMARKS = SHARED / "benchmarks"


@pytest.fixture
def shared_benchmarks() -> Path:
    if not BENCHMARKS.is_dir():
        pytest.skip("shared benchmark files are not present")
    return BENCHMARKS
