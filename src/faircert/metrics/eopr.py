"""Equal opportunity, as a ratio."""

from __future__ import annotations

from .base import GroupMetric, label_keys, ratio_interval


class EqualOpportunityRatio(GroupMetric):
    """Equal opportunity ratio: min over groups of the true-positive rate P[yhat=1 | g, Y=1]
    divided by the max (1 is parity; checked against the ratio threshold, as DI)."""

    name = "eopr"
    title = "EOp ratio (TPR min/max)"
    aliases = ("equal_opportunity_ratio", "true_positive_rate_ratio")
    direction = ">="
    needs = "label"
    order = 4

    def interval(self, groups, conditional):
        positive = label_keys("equal opportunity", conditional)[-1]
        return ratio_interval(self.name, conditional[positive], prefix=f"{positive}: ")


METRIC = EqualOpportunityRatio()
