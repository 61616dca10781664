"""`explain` over data rows: split the rows in two, search rules on one half, measure them on the
other, and count them exactly on all rows.

Every column of the data may appear in a rule, the protected ones too (a region may be one group's);
leave a column out of the frame to keep it out of the rules. Rows whose verdict is unknown are left
out of the search and of every rate, and counted apart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, PropertyError
from ..results.explain import Condition, ExplainResult, GroupCell, Rate, Rule
from ..results.rows import RowsResult
from .changes import count_changes, decision_changes
from .features import Encoded, encode
from .rules import Search, Term, fair_rules, unfair_rules
from .stats import benjamini_hochberg, fisher_one_sided, is_number, rate

#: The least lift of an unfair rule over the global rate, where it is found (the search half): the
#: slices an auditor looks at first hold several times the global rate.
MIN_LIFT = 3.0
#: Unfair rows shown under each rule in the report.
EXAMPLES = 10
MISSING = "(missing)"


def explain_frame(
    data: pd.DataFrame,
    unfair: Sequence[bool] | np.ndarray,
    decided: Sequence[bool] | np.ndarray | None = None,
    *,
    protected: Sequence[str] = (),
    changes: pd.DataFrame | None = None,
    max_rules: int = 5,
    min_lift: float = MIN_LIFT,
    confidence: float = 0.95,
    seed: int = 0,
) -> ExplainResult:
    """Rules locating the rows marked `unfair` among the `decided` ones (all, by default): at most
    `max_rules`, each with an unfair rate at least `min_lift` times the global rate where found (or
    halfway from the global rate to 1, where that is lower).

    `changes` (optional, one line per row: `alone`, `moved`; see `decision_changes`) gives each
    rule the counts of what changes its unfair rows' decisions.
    """
    start = time.perf_counter()
    unfair_mask, decided_mask = _check(data, unfair, decided, protected, max_rules, confidence)
    if not is_number(min_lift) or not min_lift >= 1:
        raise PropertyError(f"min_lift must be at least 1, got {min_lift!r}")
    if changes is not None and len(changes) != len(data):
        raise DataError(f"the decision changes have {len(changes)} lines for {len(data)} rows")
    frame = data.reset_index(drop=True)
    search_half = split_half(unfair_mask, decided_mask, seed)
    held_out = decided_mask & ~search_half
    features = [encode(frame[c], search_half) for c in frame.columns]
    search = Search(features, unfair_mask & decided_mask)
    found = [_rule(search.features, t) for t in unfair_rules(search, search_half, max_rules, min_lift)]
    clean = [_rule(search.features, t) for t in fair_rules(search, search_half, max_rules)]

    global_k, global_n = int((unfair_mask & decided_mask).sum()), int(decided_mask.sum())
    overall = rate(global_k, global_n, confidence)
    measured = [
        _measure(frame, conditions, (unfair_mask, decided_mask, held_out), overall, confidence, greater)
        for conditions, greater in [(c, True) for c in found] + [(c, False) for c in clean]
    ]
    adjusted = benjamini_hochberg([r.p_value for r in measured])
    for r, p in zip(measured, adjusted):
        r.p_value = p
    covered = np.zeros(len(frame), dtype=bool)
    for r in measured[: len(found)]:
        inside = r.mask(frame)
        r.examples = _examples(frame, inside & unfair_mask)
        if changes is not None:
            r.changes = count_changes(changes, inside & unfair_mask)
        covered |= inside
    for r in measured[len(found) :]:
        r.evidence = "empirical"
    return ExplainResult(
        verdict="unfair" if global_k else "fair" if decided_mask.all() else "unknown",
        rules=measured[: len(found)],
        fair_rules=measured[len(found) :],
        unfair_rate=overall,
        population="rows",
        rows=len(frame),
        unfair_rows=global_k,
        unknown_rows=int((~decided_mask).sum()),
        protected=list(protected),
        features=[f.name for f in search.features],
        by_group=_by_group(frame, list(protected), unfair_mask, decided_mask, confidence),
        elapsed_s=time.perf_counter() - start,
        stats={
            "covered_unfair_rows": int((covered & unfair_mask & decided_mask).sum()),
            "search_rows": int(search_half.sum()),
            "measured_rows": int(held_out.sum()),
            "seed": seed,
            "max_rules": max_rules,
            "min_lift": min_lift,
            "p_values": "one-sided Fisher exact test on the held-out half (in-rule rate above the rest for "
            "unfair rules, below it for fair ones), Benjamini-Hochberg over every rule reported",
            "intervals": f"Clopper-Pearson, each at {confidence:g} (not simultaneous), on the held-out half",
        },
    )


def explain_rows(
    result: RowsResult,
    data: pd.DataFrame,
    *,
    max_rules: int = 5,
    min_lift: float = MIN_LIFT,
    confidence: float = 0.95,
    seed: int = 0,
) -> ExplainResult:
    """`explain_frame` over a per-row audit's verdicts: `data` holds the audited rows in their order
    (raw values, categories by name); the rules use the model's features."""
    if len(data) != result.n_rows:
        raise DataError(f"the data has {len(data)} rows but the audit decided {result.n_rows}")
    missing = [n for n in result.feature_names if n not in data.columns]
    if missing:
        raise DataError(f"the data lacks the model's features {missing}")
    verdicts = np.asarray(result.verdicts)
    explained = explain_frame(
        data[list(result.feature_names)],
        verdicts == "unfair",
        verdicts != "unknown",
        protected=result.protected,
        changes=decision_changes(result),
        max_rules=max_rules,
        min_lift=min_lift,
        confidence=confidence,
        seed=seed,
    )
    explained.population, explained.model, explained.engine = result.population, result.model, result.engine
    explained.stats["epsilon"] = dict(result.epsilon)
    if result.stopped and result.stopped != "done":  # why rows stayed unknown (the memory limit, the time limit)
        explained.stats["stopped"] = result.stopped
    return explained


def _check(
    data: pd.DataFrame,
    unfair: Sequence[bool] | np.ndarray,
    decided: Sequence[bool] | np.ndarray | None,
    protected: Sequence[str],
    max_rules: int,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"explain needs the rows as a pandas DataFrame, got {type(data).__name__}")
    if len(data) == 0 or data.shape[1] == 0:
        raise DataError("explain needs at least one row and one column")
    unknown = [p for p in protected if p not in data.columns]
    if unknown:
        raise DataError(f"protected features {unknown} are not columns of the data")
    if isinstance(max_rules, bool) or not isinstance(max_rules, int | np.integer) or max_rules < 1:
        raise PropertyError(f"max_rules must be a positive integer, got {max_rules!r}")
    if not is_number(confidence) or not 0.5 <= confidence < 1:
        raise PropertyError(f"confidence must be in [0.5, 1), got {confidence!r}")
    masks = []
    for name, given in (("unfair", unfair), ("decided", decided)):
        mask = np.ones(len(data), dtype=bool) if given is None else np.asarray(given)
        if mask.shape != (len(data),):
            raise DataError(f"`{name}` must hold one flag per row ({len(data)}), got shape {mask.shape}")
        if mask.dtype != bool:
            raise DataError(f"`{name}` must hold booleans, got {mask.dtype}")
        masks.append(mask)
    return masks[0], masks[1]


def split_half(unfair: np.ndarray, decided: np.ndarray, seed: int) -> np.ndarray:
    """Half the decided rows for the search, drawn within the unfair and the fair rows apart so both
    halves hold the same share of unfair rows."""
    rng = np.random.default_rng(seed)
    half = np.zeros(len(unfair), dtype=bool)
    for stratum in (decided & unfair, decided & ~unfair):
        idx = rng.permutation(np.flatnonzero(stratum))
        half[idx[: (len(idx) + 1) // 2]] = True
    return half


def _rule(features: list[Encoded], terms: tuple[Term, ...]) -> list[Condition]:
    out = []
    for j, what in terms:
        f = features[j]
        out.append(f.categories(what) if isinstance(what, frozenset) else f.interval(*what))
    return out


def _measure(
    frame: pd.DataFrame,
    conditions: list[Condition],
    masks: tuple[np.ndarray, np.ndarray, np.ndarray],
    overall: Rate,
    confidence: float,
    greater: bool,
) -> Rule:
    """The rule's exact counts on all rows, and its rate and (raw) p-value on the held-out half."""
    unfair, decided, held_out = masks
    inside = np.ones(len(frame), dtype=bool)
    for c in conditions:
        inside &= c.mask(frame)
    k_in, n_in = int((inside & held_out & unfair).sum()), int((inside & held_out).sum())
    k_all, n_all = int((held_out & unfair).sum()), int(held_out.sum())
    in_rule = rate(k_in, n_in, confidence)
    return Rule(
        conditions,
        share=float(inside.mean()),
        rows=int(inside.sum()),
        unfair_rows=int((inside & unfair & decided).sum()),
        unknown_rows=int((inside & ~decided).sum()),
        unfair_rate=in_rule,
        measured_rows=n_in,
        measured_unfair=k_in,
        lift=in_rule.estimate / overall.estimate if in_rule.estimate is not None and overall.estimate else None,
        p_value=fisher_one_sided(k_in, n_in, k_all - k_in, n_all - n_in, greater=greater),
    )


def _examples(frame: pd.DataFrame, rows: np.ndarray) -> list[dict[str, Any]]:
    picked = frame[rows].head(EXAMPLES)
    return [{"row": int(i), **{str(c): _plain(v) for c, v in r.items()}} for i, r in picked.iterrows()]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _by_group(
    frame: pd.DataFrame, protected: list[str], unfair: np.ndarray, decided: np.ndarray, confidence: float
) -> list[GroupCell]:
    """The unfair rate of each cell of the protected attributes' intersection (decided rows)."""
    if not protected:
        return []
    keys = frame[protected].astype(str).where(frame[protected].notna(), MISSING)[decided]
    counts = pd.DataFrame({"u": unfair[decided]}).set_index(keys.index).join(keys)
    cells = []
    for group, part in counts.groupby(protected, sort=True):
        values = group if isinstance(group, tuple) else (group,)
        k, n = int(part["u"].sum()), len(part)
        cells.append(GroupCell(dict(zip(protected, map(str, values))), n, k, rate(k, n, confidence)))
    return cells
