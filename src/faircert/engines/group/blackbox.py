"""Group fairness of a classifier known only by its predictions (an RBF SVC, k-nearest neighbours, a
pipeline with a step faircert does not translate).

Nothing is proven from its parameters. Over the data's rows (the empirical population) every row is
decided on the model itself, so the rates are the model's own, exactly. Under any other population
(learned, saved, a program), points are drawn from it and decided on the model: the rates and
metrics are the sampled estimate (each group drawn from its own conditional population where the
population is discrete; intervals that hold together with confidence 1 - `ESTIMATE_DELTA`), and
the sound bounds stay [0, 1]: a statistical answer, labelled as one.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import PropertyError
from ...models.blackbox import BlackBoxModel, column_names
from ...options import GroupOptions
from ...progress import ProgressEvent
from ...results import GroupProbability, GroupResult

NAME = "blackbox-group-sampling"
ROWS = "blackbox-empirical"


def black_box(estimator: Any, data: Any, reason: str) -> BlackBoxModel:
    """The estimator as a black box over the data's columns it reads; `reason` says why no IR holds it."""
    from ...data import infer_domain, read_table

    model, _ = BlackBoxModel.of(estimator, infer_domain(read_table(data)))
    model.reason = reason
    return model


class RawLabels:
    """A black box as the group engines read a model: raw columns by name in (numbers, categories by
    name), labels out; nothing is ever uncertain about a label it gives."""

    def __init__(self, model: BlackBoxModel) -> None:
        self.model = model
        self.source = model.source

    def named_inputs(self) -> list[str]:
        return list(self.model.columns)

    @property
    def input_names(self) -> list[str]:
        return list(self.model.columns)

    def accept(self, visitor: Any) -> Any:
        return visitor.linear(self)  # the engines' way to a model that reads named raw columns

    def predict(self, values: Any) -> np.ndarray:
        """Labels 0/1 of rows given column by column (a dict of arrays or a DataFrame)."""
        import pandas as pd

        est = self.model.estimator
        frame = pd.DataFrame({c: np.asarray(values[c]) for c in self.model.columns})
        named = column_names(est) is not None
        labels = np.asarray(est.predict(frame if named else frame.to_numpy()))
        classes = getattr(est, "classes_", None)
        return (labels == (classes[1] if classes is not None else 1)).astype(np.int64)

    def sure_labels(self, frame: Any, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
        """(positive, undecided) of the data's rows: the model's own labels, none undecided."""
        positive = self.predict(frame).astype(bool)
        return positive, np.zeros(len(positive), dtype=bool)


def answer_rows(model: BlackBoxModel, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: over the data's rows, every row decided on the model (exact rates)."""
    from . import empirical

    result = empirical.answer(RawLabels(model), question, options, progress)
    result.approximations.append(f"{_note(model)}: every data row decided on the model's own predictions (exact rates)")
    result.engine = ROWS
    result.stats["black_box"] = model.reason
    return result


def answer(model: BlackBoxModel, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: rates sampled from the population, decided on the model."""
    result = _sampled(RawLabels(model), question, options)
    result.approximations.append(
        f"{_note(model)}: nothing proven; the rates are sampled from the population and decided on the model "
        "(a statistical answer, see the estimate)"
    )
    result.stats["black_box"] = model.reason
    if progress is not None:
        progress(ProgressEvent(elapsed_s=result.elapsed_s))
    return result


def _note(model: BlackBoxModel) -> str:
    return f"black box ({model.reason})" if model.reason else "black box"


def _sampled(labels: RawLabels, question: Any, options: GroupOptions) -> GroupResult:
    """Sound bounds [0, 1] (nothing is proven) beside the estimate sampled from the population."""
    from ..sampling.sequential import estimate_group
    from .estimate import sample_rates

    start = time.perf_counter()
    if options.method == "sampling":
        estimate = estimate_group(labels, question, options.time_limit, options.seed, options.delta)
    else:  # as beside any engine's sound bounds: each group drawn from its own conditional population
        estimate = sample_rates(labels, question, options.time_limit, options.seed)
    if not estimate.stats.get("samples"):
        raise PropertyError("the black box could not be sampled within the time limit; give it more time")
    unproven = [GroupProbability(g.group, 0.0, 1.0, g.size, g.size_high) for g in estimate.groups]
    conditional = {
        k: [GroupProbability(g.group, 0.0, 1.0, g.size, g.size_high) for g in v]
        for k, v in estimate.conditional.items()
    }
    result = GroupResult.build(
        unproven,
        engine=NAME,
        population=question.population.describe(),
        **question.judged_by(),
        conditional=conditional,
        elapsed_s=time.perf_counter() - start + question.learning_s,
        model=question.model_name,
        protected=list(estimate.protected),
        label=question.label,
        stats={"samples": estimate.stats.get("samples"), "stopped": estimate.stats.get("stopped", "")},
    )
    result.estimate = estimate
    result.most_favoured, result.least_favoured = estimate.most_favoured, estimate.least_favoured
    return result
