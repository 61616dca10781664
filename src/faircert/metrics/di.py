"""Disparate impact."""

from __future__ import annotations

from .base import GroupMetric, ratio_interval


class DisparateImpact(GroupMetric):
    """Disparate impact: min over groups of P[yhat=1 | g] divided by the max (1 is parity; the
    four-fifths rule asks for at least 0.8)."""

    name = "di"
    title = "DI (min/max)"
    aliases = ("demographic_parity_ratio", "disparate_impact")
    direction = ">="
    order = 0

    def interval(self, groups, conditional):
        return ratio_interval(self.name, groups)


METRIC = DisparateImpact()
