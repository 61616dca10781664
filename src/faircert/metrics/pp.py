"""Predictive parity."""

from __future__ import annotations

from .base import GroupMetric, conditional_rates, gap_interval


class PredictiveParity(GroupMetric):
    """Predictive parity difference: max over groups of the precision P[Y=1 | yhat=1, g] minus the
    min (0 is parity; a group never given the positive outcome has no precision and is left out)."""

    name = "pp"
    title = "PP (precision max-min)"
    aliases = ("predictive_parity", "predictive_parity_difference")
    needs = "predicted"
    order = 5

    def interval(self, groups, conditional):
        rates = conditional_rates(
            "predictive parity",
            conditional,
            "yhat=1",
            "P[Y=1 | yhat=1, group], which the data's rows give (population empirical)",
        )
        return gap_interval(self.name, rates, prefix="yhat=1: ")


METRIC = PredictiveParity()
