"""The sequential statistical test: verdicts with a stated error probability."""

import numpy as np
import pytest
from program_examples import FIG1, FIG1_FIXED

from faircert import verify_program
from faircert.engines.sampling.sequential import _hoeffding, sequential_test
from faircert.errors import PropertyError


@pytest.mark.parametrize("bound", ["binomial", "hoeffding"])
def test_sampling_decides_the_fig1_examples(bound):
    bad = verify_program(FIG1, epsilon=0.1, method="sampling", bound=bound, time_limit=20)
    assert bad.verdict == "unfair" and bad.method == "sampling"
    assert bad.ratio_low <= 0.484 <= bad.ratio_high < 0.9
    assert "1e-06" in bad.guarantee and bad.samples > 0
    good = verify_program(FIG1_FIXED, epsilon=0.1, method="sampling", bound=bound, time_limit=20)
    assert good.verdict == "fair" and 0.9 < good.ratio_low <= 0.949 <= good.ratio_high
    data = good.to_dict()
    assert data["samples"] == good.samples and data["guarantee"].startswith("P[wrong verdict]")


def test_intervals_cover_the_truth_at_every_look():
    # a Bernoulli(0.3) event: every interval reported along the way contains 0.3
    seen = []

    def decide(lo, hi):
        seen.append((lo[0], hi[0]))
        return "done" if hi[0] - lo[0] < 0.01 else None

    out = sequential_test(lambda rng, n: (rng.random(n) < 0.3)[:, None], 1, decide, delta=1e-3, seed=1)
    assert out.verdict == "done" and len(seen) >= 3
    assert all(lo <= 0.3 <= hi for lo, hi in seen)


def test_adaptive_hoeffding_radius_shrinks_and_bad_options_are_rejected():
    assert _hoeffding(10_000, 4, 1e-6) > _hoeffding(1_000_000, 4, 1e-6) > 0
    with pytest.raises(PropertyError):
        sequential_test(lambda rng, n: np.zeros((n, 1)), 1, lambda lo, hi: None, delta=2.0)
    with pytest.raises(PropertyError):
        verify_program(FIG1, method="magic")
