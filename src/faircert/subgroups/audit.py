"""Audit tables: the selection rate of each protected category, alone and intersected, with its
interval, the impact ratio against the most selected category, and (for score outputs) the scoring
rate: the share scored above the median score of all rows.

Rows with a missing protected value are counted apart in each table they would belong to, never
refused and never folded into a category.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, PropertyError
from ..results.audit import AuditCell, AuditTable, AuditTables
from .stats import is_number, rate

#: LL 144 lets an auditor leave categories under 2% of the data out of the impact ratios.
SMALL_SHARE = 0.02


def audit_tables(
    data: pd.DataFrame,
    decisions: Sequence[int] | np.ndarray,
    protected: Sequence[str],
    *,
    scores: Sequence[float] | np.ndarray | None = None,
    confidence: float = 0.95,
    small_share: float = SMALL_SHARE,
    exclude_small: bool = False,
) -> AuditTables:
    """One table per protected attribute, and one for their intersection where there are several.

    `decisions` holds the model's 0/1 decision per row (1: selected); `scores`, where the model
    scores, the score per row. With `exclude_small`, cells under `small_share` of the rows keep their
    counts and rates but have no impact ratio, and are not the reference of the others'.
    """
    selected, score = _check(data, decisions, protected, scores, confidence, small_share)
    median = None if score is None else float(np.nanmedian(score))
    # a row without a score (one the model could not read) is neither above nor below
    above = None if score is None else np.where(np.isnan(score), np.nan, score > median)
    groups = [[p] for p in protected] + ([list(protected)] if len(protected) > 1 else [])
    tables = [
        _table(data, attributes, selected, above, (confidence, small_share, exclude_small)) for attributes in groups
    ]
    return AuditTables(
        tables,
        rows=len(data),
        confidence=confidence,
        small_share=small_share,
        exclude_small=exclude_small,
        median_score=median,
        stats={"selected": int(selected.sum())},
    )


def _check(
    data: pd.DataFrame,
    decisions: Sequence[int] | np.ndarray,
    protected: Sequence[str],
    scores: Sequence[float] | np.ndarray | None,
    confidence: float,
    small_share: float,
) -> tuple[np.ndarray, np.ndarray | None]:
    if not isinstance(data, pd.DataFrame) or len(data) == 0:
        raise DataError("an audit table needs the rows as a non-empty pandas DataFrame")
    if isinstance(protected, str) or not protected:
        raise PropertyError("an audit table needs a list of one or more protected columns")
    if len(set(protected)) < len(protected):
        raise PropertyError(f"protected columns named more than once: {list(protected)}")
    unknown = [p for p in protected if p not in data.columns]
    if unknown:
        raise DataError(f"protected features {unknown} are not columns of the data")
    if not is_number(confidence) or not 0.5 <= confidence < 1:
        raise PropertyError(f"confidence must be in [0.5, 1), got {confidence!r}")
    if not is_number(small_share) or not 0 <= small_share < 1:
        raise PropertyError(f"the small-cell share must be in [0, 1), got {small_share!r}")
    given = np.asarray(decisions)
    if given.shape != (len(data),):
        raise DataError(f"the decisions must hold one value per row ({len(data)}), got shape {given.shape}")
    if given.dtype.kind not in "biuf" or not np.isin(given, (0, 1)).all():
        raise DataError("the decisions must be 0 or 1 (1: selected)")
    score = None
    if scores is not None:
        score = np.asarray(scores, dtype=np.float64)
        if score.shape != (len(data),):
            raise DataError(f"the scores must hold one value per row ({len(data)}), got shape {score.shape}")
        if np.isnan(score).all():
            raise DataError("every score is missing")
    return given.astype(bool), score


def _table(
    data: pd.DataFrame,
    attributes: list[str],
    selected: np.ndarray,
    above: np.ndarray | None,
    settings: tuple[float, float, bool],
) -> AuditTable:
    confidence, small_share, exclude_small = settings
    keys = data[attributes]
    present = keys.notna().all(axis=1).to_numpy()
    frame = keys[present].astype(str).assign(_selected=selected[present])
    if above is not None:
        frame["_above"] = above[present]
    cells = []
    for group, part in frame.groupby(attributes, sort=True):
        values = group if isinstance(group, tuple) else (group,)
        n = len(part)
        k = int(part["_selected"].sum())
        cell = AuditCell(
            dict(zip(attributes, map(str, values))),
            count=n,
            share=n / len(data),
            selected=k,
            selection_rate=rate(k, n, confidence),
            impact_ratio=None,
            small=n / len(data) < small_share,
        )
        if above is not None:
            cell.scored_above = int((part["_above"] == 1).sum())
            cell.scoring_rate = rate(cell.scored_above, int(part["_above"].notna().sum()), confidence)
        cells.append(cell)
    counted = [c for c in cells if not (exclude_small and c.small)]
    _ratios(counted, lambda c: c.selection_rate, "impact_ratio")
    if above is not None:
        _ratios(counted, lambda c: c.scoring_rate, "scoring_impact_ratio")
    return AuditTable(attributes, cells, missing=int((~present).sum()))


def _ratios(cells: list[AuditCell], rate, name: str) -> None:
    """Each cell's rate over the highest of the cells (none where the highest is 0)."""
    top = max((rate(c).estimate for c in cells), default=0.0)
    for c in cells:
        setattr(c, name, rate(c).estimate / top if top else None)
