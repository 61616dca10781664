"""How a population is learned from data: its kind and the knobs of learning it, in one value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import PropertyError

#: The kinds of population learned from data (the data then holds the label column).
LEARNED_KINDS = ("independent", "bayesnet", "empirical")

#: Default cap on the configurations a message holds when the network is eliminated (protected
#: attributes fixed): what keeps a linear model's group rates within about 1e-3 in seconds.
MAX_WIDTH = 2000


@dataclass(frozen=True)
class PopulationSpec:
    """A population to learn from data.

    `kind`: "independent" (each column's own distribution), "bayesnet" (a Bayesian network whose
    structure is searched with `score`, at most `max_indegree` parents a variable, kept to
    `max_width` configurations per elimination step by dropping its weakest edges; None: never) or
    "empirical" (the rows themselves). Continuous columns are binned into at most `max_bins`
    `binning` ("quantile" or "width") bins unless `bins` gives a column its count or edges; a bin
    stands for the data's values in it (`bin_value` "data"), their mean or its midpoint.
    """

    kind: str = "independent"
    bins: Mapping[str, Any] | None = None
    max_bins: int = 10
    binning: str = "quantile"
    bin_value: str = "data"
    score: str = "k2"
    max_indegree: int = 3
    max_width: int | None = MAX_WIDTH

    def __post_init__(self) -> None:
        if self.kind not in LEARNED_KINDS:
            raise PropertyError(f"unknown population kind {self.kind!r}; choose one of {', '.join(LEARNED_KINDS)}")
