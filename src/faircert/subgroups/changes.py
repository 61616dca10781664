"""What changes each unfair row's decision: the protected attribute alone (the flip test finds it),
or only with epsilon-moves of other features, and which ones moved (read off the re-checked twin)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..results.rows import RowsResult


def decision_changes(result: RowsResult) -> pd.DataFrame:
    """One line per row of the audit: `alone` (True where flipping the protected attribute alone
    changes the decision; None unless the row is unfair) and `moved` (the other features the twin
    changes, joined by ", ")."""
    flip = result.stats.get("flip_rows", [False] * result.n_rows)
    protected = set(result.protected)
    alone: list[bool | None] = []
    moved: list[str] = []
    for i, verdict in enumerate(result.verdicts):
        twin = result.twins[i]
        if verdict != "unfair" or twin is None:
            alone.append(None)
            moved.append("")
            continue
        changed = [
            name
            for j, name in enumerate(result.feature_names)
            if name not in protected and not np.isclose(twin[j], result.rows[i, j], rtol=0.0, atol=1e-12)
        ]
        alone.append(bool(flip[i]) or not changed)
        moved.append(", ".join(changed))
    return pd.DataFrame({"alone": alone, "moved": moved})


def count_changes(changes: pd.DataFrame, rows: np.ndarray) -> dict[str, Any]:
    """Over the unfair rows selected by `rows`: how many flip on the protected attribute alone, how
    many only with moves, and how often each feature moved among the latter."""
    picked = changes[rows & changes["alone"].notna().to_numpy()]
    alone = picked["alone"].astype(bool)
    moved: dict[str, int] = {}
    for names in picked.loc[~alone, "moved"]:
        for name in filter(None, str(names).split(", ")):
            moved[name] = moved.get(name, 0) + 1
    return {
        "protected_alone": int(alone.sum()),
        "with_moves": int((~alone).sum()),
        "moved": dict(sorted(moved.items(), key=lambda kv: -kv[1])),
    }
