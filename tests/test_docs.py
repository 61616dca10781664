"""The documentation site builds without a warning (mkdocs --strict), and its generated pages hold
every subcommand, metric and engine, and the README's introduction."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _text(path: Path) -> str:
    page = re.sub(r"<script.*?</script>", " ", path.read_text(), flags=re.S)
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


@pytest.mark.slow
def test_the_site_builds_strictly_with_every_command_metric_and_engine(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    from faircert.engines.registry import ENGINES
    from faircert.metrics import METRICS

    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cli = _text(tmp_path / "cli" / "index.html")
    for command in ("verify", "group", "compare", "program", "sample-counterexamples", "export-vnnlib", "demo"):
        assert f"faircert {command}" in cli and f"usage: faircert {command}" in cli
    metrics = _text(tmp_path / "metrics" / "index.html")
    assert all(m.title in metrics and all(a in metrics for a in m.aliases) for m in METRICS.values())
    engines = _text(tmp_path / "engines" / "index.html")
    assert all(e.name in engines for e in ENGINES)
    assert "Prove, quantify and explain the fairness" in _text(tmp_path / "index.html")
    api = _text(tmp_path / "api" / "index.html")
    assert "faircert . api . verify (" in api and "GroupResult" in api
    assert "What it answers" in _text(tmp_path / "index.html") and "The per-row audit" in _text(
        tmp_path / "guide" / "index.html"
    )
