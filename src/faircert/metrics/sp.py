"""Statistical parity."""

from __future__ import annotations

from .base import GroupMetric, gap_interval


class StatisticalParity(GroupMetric):
    """Statistical parity difference: max over groups of P[yhat=1 | g] minus the min (0 is parity)."""

    name = "sp"
    title = "SP (max-min)"
    aliases = ("demographic_parity_difference", "statistical_parity", "statistical_parity_difference")
    order = 1

    def interval(self, groups, conditional):
        return gap_interval(self.name, groups)


METRIC = StatisticalParity()
