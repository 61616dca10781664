"""mypy over the package (configured in pyproject.toml), with no module excused."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_package_type_checks(tmp_path):
    pytest.importorskip("mypy")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_no_module_is_excused_from_type_checking():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["src/faircert"]
    assert config["check_untyped_defs"] and not config.get("ignore_errors")  # every function's body
    assert all(config[flag] for flag in ("strict_equality", "warn_unreachable", "warn_unused_ignores"))
    excused = [m for o in config["overrides"] if o.get("ignore_errors") for m in o["module"]]
    assert excused == []


def test_the_contracts_are_checked_strictly():
    """The protocols engines rely on (models, populations, metrics, progress), the box runner and
    the results are typed in full: no untyped or partly typed function, no bare generic, no `Any`
    returned."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [o for o in config["overrides"] if o.get("disallow_untyped_defs")]
    modules = {m for o in strict for m in o["module"]}
    assert {
        "faircert.engines.protocols",
        "faircert.metrics.base",
        "faircert.progress",
        "faircert.engines.boxes.*",  # the box runner: workers, shards, frontier, limits, sums
        "faircert.results.*",
    } <= modules
    assert all(o.get(flag) for o in strict for flag in ("disallow_any_generics", "warn_return_any"))
