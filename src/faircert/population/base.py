"""What every population answers, so that the engines ask it rather than test its type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PropertyError


class Population:
    """A distribution a group question is asked under. Each kind overrides what it can do; the
    defaults say plainly what it cannot."""

    def describe(self) -> str:
        """The population in a few words, for reports."""
        return type(self).__name__

    def group_name(self, group: dict[str, Any]) -> dict[str, Any]:
        """A protected group's values as reports name them (codes by their labels)."""
        return group

    def expanded(self) -> Population:
        """The population the engines read (a learned one's bins made variables the model reads)."""
        return self

    def save(self, path: str | Path) -> None:
        raise PropertyError(f"a {type(self).__name__} cannot be saved: only learned discrete populations can")

    def label_conditions(self, label: str, protected: list[str], asking: str) -> list:
        raise PropertyError(f"{asking}: a {type(self).__name__} knows no label to compare the groups given")

    def accept(self, visitor: Any) -> Any:
        raise PropertyError(
            f"unsupported population {type(self).__name__}; give a ProductPopulation, a learned or saved "
            "population, or a population program (.fr path or text)"
        )
