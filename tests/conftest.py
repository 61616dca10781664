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


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few dozen boxes, so that a short run takes many steps; no whole-domain
    enumeration (the boxes are bounded and split)."""
    from faircert.engines.network import refine, settle

    monkeypatch.setattr(refine, "ROWS_PER_STEP", 2000)
    monkeypatch.setattr(settle, "EXACT_POINTS", 0)
    monkeypatch.setattr(settle, "EXACT_PER_INPUT", 1)
