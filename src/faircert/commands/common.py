"""Argument helpers shared by subcommands."""

from __future__ import annotations

from pathlib import Path

from ..errors import FaircertError


def name_values(items: list[str] | None) -> dict[str, float]:
    """Parse ["age=2", "hours=1.5,edu=1"] into {"age": 2.0, ...}."""
    out: dict[str, float] = {}
    for item in items or []:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip():
                raise FaircertError(f"expected NAME=VALUE, got {part!r}")
            try:
                out[name.strip()] = float(value)
            except ValueError:
                raise FaircertError(f"{name.strip()}: expected a number, got {value!r}") from None
    return out


def write_text(path: str | Path, text: str) -> None:
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise FaircertError(f"cannot write {path}: {exc}") from None


def emit_json(text: str, destination: str | None) -> None:
    """Write JSON to a file, to stdout for '-', or nowhere when no destination was asked for."""
    if destination == "-":
        print(text)
    elif destination:
        write_text(destination, text + "\n")
