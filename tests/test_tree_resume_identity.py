"""Kill and resume of a tree ensemble under a box budget: a run killed (SIGKILL) at any moment
after its first checkpoint, then resumed, gives the uninterrupted run's shares, bounds and boxes,
to the last bit, and the same counterexamples in the same order: where nothing is proven unfair
they are drawn from the open boxes, in an order of the set of boxes (not of the run's history)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

import faircert
from faircert.domain import Domain, Feature

#: Boxes of the budget: a run of about two seconds, which the kills below cut part way.
BUDGET = 10_000


@pytest.fixture(scope="module")
def forest():
    """150 trees, as many as the runs that a box budget must bound."""
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    rng = np.random.default_rng(1)
    n = 3000
    X = np.column_stack([rng.integers(0, 2, n)] + [rng.integers(0, 50, n) for _ in range(4)]).astype(float)
    y = ((X[:, 1] / 50 + X[:, 2] / 50 + 0.3 * X[:, 0] + rng.normal(0, 0.3, n)) > 1.1).astype(int)
    clf = xgb.XGBClassifier(n_estimators=150, max_depth=4, random_state=0, n_jobs=1).fit(X, y)
    dom = Domain((Feature("s", "binary", 0, 1),) + tuple(Feature(f"x{j}", "integer", 0, 49) for j in range(1, 5)))
    return load_model(clf), dom


def _run(ir, dom, **options):
    return faircert.verify(
        ir, dom, protected="s", kappa=0.5, max_boxes=BUDGET, time_limit=600, workers=1, checkpoint_every=0.05, **options
    )


def _answer(r) -> tuple:
    return (
        r.certified,
        r.falsified,
        r.undecided,
        r.measure_lower,
        r.measure_upper,
        r.stats["boxes"],
        r.stats["examined"],
        r.stats["unfair_boxes"],
        [(c.x, c.x_prime) for c in r.counterexamples],
    )


def _killed(ir, dom, path, after: float) -> bool:
    """A run writing `path`, SIGKILLed `after` seconds past its first checkpoint; whether it was
    still running then (a forked process: no start-up to wait for)."""
    child = multiprocessing.get_context("fork").Process(target=_run, args=(ir, dom), kwargs={"checkpoint": path})
    child.start()
    deadline = time.monotonic() + 120
    while not path.exists() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(after)
    alive = child.is_alive()
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    return alive and child.exitcode == -signal.SIGKILL


def test_a_killed_tree_run_resumes_to_the_uninterrupted_answer(forest, tmp_path):
    ir, dom = forest
    whole = _run(ir, dom)
    assert whole.stopped == "box budget" and whole.undecided > 0  # the budget, not the work, ended it
    # nothing proven unfair: the counterexamples are drawn from the open boxes
    assert whole.stats["unfair_boxes"] == 0 and whole.falsified == 0.0 and len(whole.counterexamples) == 100
    cut = 0
    for k, after in enumerate((0.0, 0.4)):
        path = tmp_path / f"run{k}.ckpt"
        cut += _killed(ir, dom, path, after)
        resumed = _run(ir, dom, resume=path, checkpoint=tmp_path / f"next{k}.ckpt")
        assert _answer(resumed) == _answer(whole), (k, after)
        for c in resumed.counterexamples:  # each pair decided differently by the model
            assert ir.predict(np.array([c.x]))[0] != ir.predict(np.array([c.x_prime]))[0]
    assert cut >= 1  # a kill hit a run part way (on a fast machine the later one may come after its end)
