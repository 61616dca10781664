"""Path-specific causal fairness."""

from __future__ import annotations

from .base import GroupMetric, conditional_rates, gap_interval


class PathSpecificCausalFairness(GroupMetric):
    """Path-specific causal fairness: max over groups of P[yhat=1 | g] with the mediators drawn as
    in the most favoured group, minus the min (0 is parity)."""

    name = "pcf"
    title = "PCF (max-min)"
    aliases = ("path_specific_causal_fairness",)
    needs = "mediators"
    order = 6

    def interval(self, groups, conditional):
        rates = conditional_rates(
            "path-specific causal fairness", conditional, "pcf", "the group probabilities with mediators redistributed"
        )
        return gap_interval(self.name, rates)


METRIC = PathSpecificCausalFairness()
