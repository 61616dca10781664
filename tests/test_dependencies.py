"""Every core dependency is imported by the package (an unused one only costs every install)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout (the package may be installed elsewhere)
IMPORT_NAMES = {"PyYAML": "yaml"}


def test_every_core_dependency_is_imported_somewhere():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "faircert").rglob("*.py"))
    for dep in deps:
        name = re.split(r"[<>=!~\[ ]", dep, maxsplit=1)[0]
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        assert re.search(rf"^\s*(import|from) {module}\b", source, re.MULTILINE), f"{name} is never imported"
