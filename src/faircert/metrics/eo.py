"""Equalized odds."""

from __future__ import annotations

from .base import GroupMetric, MetricInterval, conditional_rates, gap_interval, label_keys


class EqualizedOdds(GroupMetric):
    """Equalized odds difference: the larger, over the two label values y, of max_g P[yhat=1 | g,
    Y=y] minus min_g (the gaps in true- and false-positive rates; 0 is parity)."""

    name = "eo"
    title = "EO (worse label gap)"
    aliases = ("equalized_odds_difference", "equalized_odds")
    needs = "label"
    order = 2

    def interval(self, groups, conditional):
        parts = [
            gap_interval(self.name, conditional_rates(self.name, conditional, k, "the label"), prefix=f"{k}: ")
            for k in label_keys("equalized odds", conditional)
        ]
        worst = max(parts, key=lambda m: (m.high, m.low))
        return MetricInterval(self.name, max(m.low for m in parts), max(m.high for m in parts), detail=worst.detail)


METRIC = EqualizedOdds()
