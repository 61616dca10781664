"""A network refinement's evidence (`settle.Findings`): counterexamples are counted and kept as they
are found one by one (the first distinct ones while there is room, a pair not kept counted each
time it is found), in batches of thousands."""

from __future__ import annotations

import numpy as np
import pytest

from faircert.engines.network import settle
from faircert.engines.network.counts import Counts
from faircert.engines.network.settle import Findings, Found


def _one_by_one(batches, store):
    """The rule, pair by pair: a pair not kept is counted, and kept while there is room."""
    kept: dict = {}
    found = 0
    for x, xp, a, b in batches:
        for i in range(len(x)):
            key = x[i].tobytes() + xp[i].tobytes()
            if key not in kept:
                found += 1
                if len(kept) < store:
                    kept[key] = (tuple(x[i]), tuple(xp[i]), int(a[i]), int(b[i]))
    return found, sorted(kept.values())


@pytest.mark.parametrize("store", [3, 40, 10_000])
def test_counterexamples_are_counted_and_kept_as_one_by_one(monkeypatch, store):
    monkeypatch.setattr(settle, "CEX_STORE", store)
    rng = np.random.default_rng(store)
    d = 3
    batches = []
    for _ in range(12):
        n = int(rng.integers(0, 60))
        x = rng.integers(0, 4, (n, d)).astype(np.float64)  # few values: repeats within and across batches
        x[rng.random(n) < 0.1, 0] = -0.0  # -0.0 is a point of its own bytes, kept apart from 0.0
        xp = x.copy()
        a, b = rng.integers(0, 3, n), rng.integers(0, 3, n)
        batches.append((x, xp, a, b))
    findings = Findings(d, 3)
    empty = np.empty((0, d))
    for x, xp, a, b in batches:
        findings.add(Found(x, xp, a, b, empty, empty, Counts()))
    want_found, want_kept = _one_by_one(batches, store)
    assert findings.cex_found == want_found
    x, xp, a, b = findings.cex_arrays()
    got = sorted((tuple(x[i]), tuple(xp[i]), int(a[i]), int(b[i])) for i in range(len(x)))
    assert [(g[0], g[2], g[3]) for g in got] == [(w[0], w[2], w[3]) for w in want_kept]
    assert len(got) == min(store, len(want_kept)) and findings.nbytes == len(got) * (2 * 8 * d + 64)
