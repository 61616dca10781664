"""Result objects: what engines return and reports present, one module per family.

- `verify`: individual fairness (`Result`, `Counterexample`, `StatisticalEstimate`);
- `group`: group fairness under a population (`GroupResult`, `GroupProbability`, `MetricInterval`);
- `program`: program fairness and probability queries (`ProgramResult`);
- `compare`: several models' group fairness side by side (`Comparison`);
- `base`: verdict words, exit codes and the versioned JSON envelope (`SCHEMA_VERSION`).
"""

from .base import (
    DECISION_TOLERANCE,
    EXIT_CODES,
    SCHEMA_VERSION,
    VERDICTS,
    VNNCOMP_WORDS,
    Verdict,
    jsonable,
)
from .compare import Comparison
from .group import (
    GROUP_METRICS,
    GroupProbability,
    GroupResult,
    Influence,
    MetricInterval,
    di_interval,
    gap_interval,
)
from .program import ProgramResult
from .verify import Counterexample, Result, StatisticalEstimate, TreeMeasure

__all__ = [
    "DECISION_TOLERANCE",
    "EXIT_CODES",
    "GROUP_METRICS",
    "SCHEMA_VERSION",
    "VERDICTS",
    "VNNCOMP_WORDS",
    "Comparison",
    "Counterexample",
    "GroupProbability",
    "GroupResult",
    "Influence",
    "MetricInterval",
    "ProgramResult",
    "Result",
    "StatisticalEstimate",
    "TreeMeasure",
    "Verdict",
    "di_interval",
    "gap_interval",
    "jsonable",
]
