"""Group fairness under the empirical population: the model run on every data row, exactly.

P[yhat = 1 | group] is the share of the group's rows the model labels positive (fairlearn's
selection rate). Linear scores within rounding of 0 are recomputed in exact rational
arithmetic; for networks and trees such a row counts as undecided, so the result is an interval
only where floating point could flip a decision. With a label column, the metrics that need it
condition on each of its values, as fairlearn's equalized_odds_difference does, and predictive
parity on the model's positive decision: P[Y = positive | yhat = 1, group].
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ...data import encode_table, infer_domain
from ...errors import DataError, PropertyError
from ...metrics import needing, spelled
from ...metrics.base import label_keys
from ...models.binding import bind
from ...models.pipeline import PipelineModel
from ...options import GroupOptions
from ...progress import ProgressEvent
from ...results import GroupProbability, GroupResult

if TYPE_CHECKING:
    from ...models.linear import LinearModel
    from ...models.network import ReluNetwork
    from ...models.trees import TreeEnsemble

#: Margins this close to 0 may be decided differently by the framework's own rounding.
TOLERANCE = 1e-9


def decisions(model: Any, frame: Any, label: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(surely positive, undecided) for every row of the raw data (each IR's `sure_labels`)."""
    model, inputs = _read(model, frame, label)
    return model.sure_labels(inputs, TOLERANCE)


def margins(model: Any, frame: Any, label: str | None) -> np.ndarray:
    """The model's score of every row of the raw data: positive iff the decision is (a linear score,
    a network's logit, an ensemble's margin), for ranking rows, as a bias audit's scoring rate does."""
    model, inputs = _read(model, frame, label)
    return np.asarray(model.accept(_Margins(inputs)), dtype=np.float64).reshape(-1)


def _read(model: Any, frame: Any, label: str | None) -> tuple[Any, Any]:
    """The model bound to the raw data, and the data as it reads them."""
    if isinstance(model, PipelineModel):
        domain = infer_domain(frame[model.used_columns])
        model, domain = bind(model, domain)
        return model, encode_table(frame, domain)
    if hasattr(model, "accept"):
        return model, model.accept(_Inputs(frame, label))
    raise PropertyError(f"the empirical population needs a classifier; got a {type(model).__name__}")


class _Margins:
    """Each kind of model's score of rows it reads."""

    def __init__(self, inputs: Any) -> None:
        self.inputs = inputs

    def linear(self, model: LinearModel) -> np.ndarray:
        return model.decision_function(self.inputs)

    def network(self, model: ReluNetwork) -> np.ndarray:
        return model.logit(self.inputs)

    def trees(self, model: TreeEnsemble) -> np.ndarray:
        offset = model.margin_view(None)[0]
        return np.asarray(offset + model.scale * model.leaf_values(self.inputs).sum(axis=1))


class _Inputs:
    """The data's rows as each kind of model reads them."""

    def __init__(self, frame: Any, label: str | None) -> None:
        self.frame, self.label = frame, label

    def linear(self, model: LinearModel) -> Any:
        return self.frame  # it reads the raw columns itself

    def network(self, model: ReluNetwork | TreeEnsemble) -> np.ndarray:
        return _matrix(model, self.frame, self.label)

    trees = network


def _matrix(model: Any, frame: Any, label: str | None) -> np.ndarray:
    names = getattr(model, "input_names", None) or getattr(model, "feature_names", None)
    width = getattr(model, "n_inputs", None) or getattr(model, "n_features", None)
    have = [str(c) for c in frame.columns]
    if names and all(str(n) in have for n in names):
        columns = [str(n) for n in names]
    else:
        columns = [c for c in have if c != label]
        if len(columns) != width:
            hint = (
                "; if it was trained on encoded columns (one-hot, scaled), give its fitted preprocessing "
                "(preprocessor=PREP / --preprocessor PREP.pkl) or the whole scikit-learn Pipeline"
                if width is not None and width > len(columns)
                else ""
            )
            raise DataError(
                f"the model takes {width} unnamed inputs but the data has {len(columns)} columns besides "
                f"the label; give the data exactly the model's columns in order{hint}"
            )
    try:
        return frame[columns].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            "the model reads numbers but the data has text columns; encode them as the model was "
            "trained, or pass the whole scikit-learn Pipeline"
        ) from None


#: A protected group of the rows: its values by name and its members' positions in the frame.
Group = tuple[dict[str, Any], np.ndarray]


def _groups(frame: Any, protected: tuple[str, ...], names: Any = None) -> list[Group]:
    """The protected groups of the rows, in sorted order (values as text, from `names` where given)."""
    keys = (names if names is not None else frame[list(protected)]).loc[:, list(protected)].astype(str)
    by = list(protected) if len(protected) > 1 else protected[0]  # one column: scalar keys in every pandas
    return [
        (dict(zip(protected, v if isinstance(v, tuple) else (v,))), np.asarray(frame.index.get_indexer(index)))
        for v, index in keys.groupby(by, sort=True).groups.items()
    ]


def _rates(groups: list[Group], positive: np.ndarray, unsure: np.ndarray, rows: np.ndarray) -> list[GroupProbability]:
    """P[yhat = 1 | group] per group among the `rows` (a group with none of them is left out)."""
    total = int(rows.sum())
    out = []
    for group, members in groups:
        members = members[rows[members]]
        if n := len(members):
            sure = int(positive[members].sum())
            maybe = int(unsure[members].sum())
            out.append(GroupProbability(group, sure / n, (sure + maybe) / n, n / total))
    return out


def _precisions(
    groups: list[Group], positive: np.ndarray, unsure: np.ndarray, good: np.ndarray
) -> list[GroupProbability]:
    """P[Y = positive | yhat = 1, group] per group, as an interval over the undecided rows'
    decisions (it falls as undecided rows with Y negative turn positive and rises as those with Y
    positive do); a group the model never labels positive has none and is left out. Sizes:
    P[group | yhat = 1]."""
    out, picked_all, unsure_all = [], int(positive.sum()), int(unsure.sum())
    for group, m in groups:
        hits, picked = int((positive[m] & good[m]).sum()), int(positive[m].sum())
        maybe_good, maybe_bad = int((unsure[m] & good[m]).sum()), int((unsure[m] & ~good[m]).sum())
        maybe = maybe_good + maybe_bad
        if picked + maybe == 0:
            continue
        low = hits / (picked + maybe_bad) if picked + maybe_bad else 1.0
        high = (hits + maybe_good) / (picked + maybe_good) if picked + maybe_good else 0.0
        size = picked / (picked_all + unsure_all - maybe) if picked else 0.0
        size_high = min(1.0, (picked + maybe) / (picked_all + maybe)) if unsure_all else None
        out.append(GroupProbability(group, low, high, size, size_high))
    if not out:
        raise PropertyError("predictive parity: the model labels no row positive, so no group has a precision")
    return out


def answer(model: Any, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: exact selection rates per group over the data's rows."""
    start = time.perf_counter()
    pop = question.population
    if "pcf" in question.metrics:
        raise PropertyError("path-specific causal fairness needs a causal population (bayesnet), not the data's rows")
    if question.influence:
        raise PropertyError(
            "fairness influence makes a feature's distribution uniform, which needs a learned "
            "population (independent or bayesnet), not the data's rows"
        )
    frame = pop.frame
    positive, unsure = decisions(model, frame, pop.label)
    members = _groups(frame, pop.protected, pop.groups)
    groups = _rates(members, positive, unsure, np.ones(len(frame), dtype=bool))
    conditional = {}
    asked = needing(question.metrics, "label") + needing(question.metrics, "predicted")
    if asked:
        if pop.label is None:
            raise PropertyError(f"{spelled(asked)}: needs the label column (label=... / --label NAME)")
        truth = frame[pop.label].astype(str)
        values = sorted(truth.unique())
        if len(values) != 2:
            raise PropertyError(f"{spelled(asked)}: needs a label with two values; {pop.label!r} has {len(values)}")
        for value in values:
            conditional[f"Y={value}"] = _rates(members, positive, unsure, (truth == value).to_numpy())
        if needing(question.metrics, "predicted"):
            good = (truth == label_keys("predictive parity", conditional)[-1][2:]).to_numpy()
            conditional["yhat=1"] = _precisions(members, positive, unsure, good)
    if progress is not None:
        progress(ProgressEvent(elapsed_s=time.perf_counter() - start))
    stats = {
        "rows": len(frame),
        "rows_dropped_missing": pop.info.get("rows_dropped_missing", 0),
        "rows_undecided": int(unsure.sum()),
        "stopped": "converged",
    }
    return GroupResult.build(
        groups,
        engine="empirical",
        population=pop.describe(),
        **question.judged_by(),
        conditional=conditional,
        elapsed_s=time.perf_counter() - start + question.learning_s,
        model=question.model_name,
        protected=list(pop.protected),
        label=pop.label,
        stats=stats,
    )
