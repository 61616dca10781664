"""Equal opportunity, as a difference."""

from __future__ import annotations

from .base import GroupMetric, gap_interval, label_keys, ratio_interval


class EqualOpportunity(GroupMetric):
    """Equal opportunity difference: max over groups of the true-positive rate P[yhat=1 | g, Y=1]
    minus the min (0 is parity)."""

    name = "eop"
    title = "EOp (TPR max-min)"
    aliases = ("equal_opportunity_difference", "true_positive_rate_difference")
    needs = "label"
    order = 3

    def interval(self, groups, conditional):
        positive = label_keys("equal opportunity", conditional)[-1]
        combined = ratio_interval if self.direction == ">=" else gap_interval  # the ratio subclass
        return combined(self.name, conditional[positive], prefix=f"{positive}: ")


METRIC = EqualOpportunity()
