"""A slow black box still gets decided points within its time limit: model calls sized to its
measured pace (a fixed cost per call makes calls larger, never smaller), and `verify` drawing its
points in rounds so that a slow model's first points are decided before the limit."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.engines.rows.audit import ROUND_SECONDS, Pace

#: The fixed cost of every call of the slow model: above `ROUND_SECONDS`, as k-nearest neighbours'
#: calls are on a loaded machine.
CALL_S = 0.3


class SlowModel:
    """Label 1 iff x + (s == "M") > 5, after sleeping `CALL_S` whatever the number of rows."""

    feature_names_in_ = np.array(["x", "s"], dtype=object)
    classes_ = np.array([0, 1])

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        self.calls += 1
        time.sleep(CALL_S)
        return (frame["x"].to_numpy() + (frame["s"].to_numpy() == "M") > 5).astype(int)


def _sizes(cost, calls: int = 8, cap: int = 32_768) -> list[int]:
    """The sizes a pace chooses for calls that each take `cost(n)` seconds."""
    pace, sizes = Pace(cap), []
    for _ in range(calls):
        sizes.append(pace.size)
        pace.took(pace.size, cost(pace.size))
    return sizes


def test_a_fixed_cost_per_call_makes_calls_larger_not_smaller():
    sizes = _sizes(lambda n: CALL_S + 1e-5 * n)
    # one call cannot tell a fixed cost from a cost per twin: the second is sized by the first's
    # time per twin; from two sizes on, the fixed cost is seen, and amortised up to the cap
    assert sizes[:2] == [256, int(ROUND_SECONDS / ((CALL_S + 1e-5 * 256) / 256))]
    assert sizes[1:] == sorted(sizes[1:]) and sizes[-1] == 32_768
    # a cost per twin alone: calls of about ROUND_SECONDS, as before
    linear = _sizes(lambda n: 1e-3 * n)
    assert linear[-1] == pytest.approx(ROUND_SECONDS / 1e-3, rel=0.05)


def test_verify_on_a_slow_black_box_decides_points_within_its_time_limit():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"x": rng.integers(0, 10, 300), "s": rng.choice(["F", "M"], 300)})
    model = SlowModel()
    began = time.perf_counter()
    result = faircert.verify(model, data, protected="s", time_limit=4, seed=0)
    wall = time.perf_counter() - began
    s = result.statistical
    assert result.engine == "blackbox-sampling" and result.stopped == "time limit"
    assert wall < 4 + 2 * CALL_S  # at most a call or so past the limit
    assert s.samples >= 200 and result.stats["points_decided"] == s.samples  # every point drawn decided
    # unfair exactly where x = 5 (s flips the label): a tenth of the uniform domain
    assert s.ci_low <= 0.1 <= s.ci_high and s.ci_high - s.ci_low < 0.15
    assert result.certified == 0.0  # a black box is never proven fair


class FickleModel:
    """Label 1 iff x + (s == "M") > 5 for its first two calls; from then on it ignores s (a model
    whose labels depend on the batch, as k-nearest neighbours' distance ties can)."""

    feature_names_in_ = np.array(["x", "s"], dtype=object)
    classes_ = np.array([0, 1])

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        self.calls += 1
        male = (frame["s"].to_numpy() == "M") if self.calls <= 2 else 0
        return (frame["x"].to_numpy() + male > 5).astype(int)


def test_a_twin_the_black_box_labels_otherwise_when_asked_again_leaves_its_row_unknown():
    rows = pd.DataFrame({"x": [5, 5, 2, 9], "s": ["F", "M", "F", "M"]})
    model = FickleModel()
    result = faircert.audit(model, rows, domain=rows, protected="s")
    assert model.calls == 3  # labels, the flip test, the twins re-checked
    # row 0's twin (5, M) was labelled 1, then 0 as row 0 itself; row 1's twin (5, F) stays 0
    assert list(result.verdicts) == ["unknown", "unfair", "fair", "fair"]
    assert "labelled the twin otherwise when asked again" in result.methods[0]
    assert result.twins[0] is None and result.flip_unfair == 1
