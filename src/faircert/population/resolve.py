"""The population a question is asked under, from what the user gave: a kind learned from data
("independent", "bayesnet", "empirical"), a saved population (.json), a population program (.fr
file, program text or a parsed Program) or a population object. Resolved before any engine is
chosen: the engines receive the population itself."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..data import read_table
from ..errors import DataError, PropertyError
from ..models.linear import LinearModel
from ..models.program import Program
from .discrete import DiscretePopulation
from .empirical import EmpiricalPopulation
from .learn import learn_population
from .program import ProgramPopulation
from .spec import LEARNED_KINDS, PopulationSpec


def bind_to_frame(model: LinearModel, frame: Any, label: str | None) -> LinearModel:
    """The model with its columns named as in the data (a model without names reads them in order)."""
    have = [str(c) for c in frame.columns]
    missing = [c for c in model.columns if c not in have]
    if not missing:
        return model
    default = [f"x{i}" for i in range(len(model.encoding))]
    if model.columns != default or len(missing) != len(model.columns):
        raise DataError(f"unknown column(s) {missing}: the model reads them but the data has only: {', '.join(have)}")
    candidates = [c for c in have if c != label]
    if len(candidates) != len(model.encoding):
        raise DataError(
            f"the model takes {len(model.encoding)} unnamed inputs but the data has {len(candidates)} "
            "columns besides the label; give the data exactly the model's columns in order, "
            "or fit the model on a DataFrame so it knows its column names"
        )
    encoding = tuple(replace(e, column=c) for e, c in zip(model.encoding, candidates))
    return LinearModel(
        model.weights, model.intercept, encoding, model.strict, model.source, model.classes, dict(model.metadata)
    )


def resolve_population(
    population: Any, data: Any, model: Any, protected: list[str], label: str | None
) -> tuple[Any, Any, Any, float]:
    """(model, population, data frame or None, learning seconds) from what the user gave (a kind
    learned from data, as a `PopulationSpec` or its name, or a population itself); a model without
    column names gets the data's."""
    frame = read_table(data) if data is not None else None
    if isinstance(population, DiscretePopulation):
        return model, _with_protected(population, protected), frame, 0.0
    if isinstance(population, (str, Path)) and str(population) in LEARNED_KINDS:
        population = PopulationSpec(str(population))
    if isinstance(population, PopulationSpec):
        spec = population
        if frame is None:
            raise DataError(f"a {spec.kind} population is learned from data: pass data (CLI: --data DATA.csv)")
        if not protected:
            raise PropertyError("no protected attribute given (protected=[...] / --protected NAME[,NAME])")
        have = [str(c) for c in frame.columns]
        for name in protected + ([label] if label else []):
            if name not in have:
                raise DataError(f"unknown column {name!r}; the data has: {', '.join(have)}")
        if isinstance(model, LinearModel):
            model = bind_to_frame(model, frame, label)
            columns = model.columns
        else:
            names = getattr(model, "input_names", None) or getattr(model, "feature_names", None)
            columns = [c for c in (names or have) if c != label]
        if label and label in protected:
            raise PropertyError(f"{label!r} is both the label and a protected attribute")
        start = time.perf_counter()
        if spec.kind == "empirical":
            rows = EmpiricalPopulation.from_data(frame, columns, protected, label, spec.bins, spec.max_bins)
            return model, rows, frame, time.perf_counter() - start
        learned = learn_population(frame, columns, protected, spec, label=label)
        return model, learned, frame, time.perf_counter() - start
    if isinstance(population, (str, Path)):
        path = Path(population)
        if path.suffix.lower() == ".json":
            return model, _with_protected(DiscretePopulation.load(path), protected), frame, 0.0
        looks_like_program = isinstance(population, str) and "\n" in population
        if path.suffix.lower() == ".fr" or looks_like_program or (not path.suffix and os.path.isfile(path)):
            return model, ProgramPopulation.load(population), frame, 0.0
        if not path.suffix:  # a word that names no population (a typo of one, most likely)
            raise PropertyError(
                f"unknown population {str(population)!r}: choose independent, bayesnet, empirical, a "
                "saved population (.json) or a population program (.fr file or program text)"
            )
        raise DataError(
            f"unknown population {population!r}: use independent, bayesnet, empirical, a saved population (.json) "
            "or a population program (.fr)"
        )
    if isinstance(population, Program):
        return model, ProgramPopulation(population), frame, 0.0
    return model, ProgramPopulation.given_as(population), frame, 0.0  # a population object, or refused


def _with_protected(pop: DiscretePopulation, protected: list[str]) -> DiscretePopulation:
    if protected:
        for p in protected:
            if p not in pop.variables:
                raise DataError(f"unknown protected attribute {p!r}; the population has: {', '.join(pop.variables)}")
        pop = replace(pop, protected=tuple(protected))
    if not pop.protected:
        raise PropertyError("no protected attribute given (protected=[...] / --protected NAME[,NAME])")
    return pop
