"""Equal opportunity, as a ratio."""

from __future__ import annotations

from .eop import EqualOpportunity


class EqualOpportunityRatio(EqualOpportunity):
    """Equal opportunity ratio: min over groups of the true-positive rate P[yhat=1 | g, Y=1]
    divided by the max (1 is parity; checked against the ratio threshold, as DI)."""

    name = "eopr"
    title = "EOp ratio (TPR min/max)"
    aliases = ("equal_opportunity_ratio", "true_positive_rate_ratio")
    direction = ">="
    order = 4


METRIC = EqualOpportunityRatio()
