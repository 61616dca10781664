"""Box work on several processes: the same answers as one process, and no chunk lost when a worker
dies."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from faircert import PropertyError
from faircert.engines.boxes.workers import Parallelism, Workers
from faircert.options import VerifyOptions


class Squares:
    """A job whose first call in any worker kills that worker (once per marker file)."""

    def __init__(self, marker: Path | None = None) -> None:
        self.marker = marker

    def square(self, x: int) -> int:
        if self.marker is not None and not self.marker.exists():
            self.marker.write_text("died once")
            os._exit(1)
        return x * x


def test_map_returns_results_in_chunk_order_in_process_and_on_workers():
    chunks = [(i,) for i in range(9)]
    with Workers(Squares(), 1) as one, Workers(Squares(), 2) as two:
        assert one.map("square", chunks) == two.map("square", chunks) == [i * i for i in range(9)]
        assert one.pids() == [os.getpid()]


def test_a_dead_worker_loses_no_chunk(tmp_path):
    with Workers(Squares(tmp_path / "marker"), 2) as pool:
        assert pool.map("square", [(i,) for i in range(8)]) == [i * i for i in range(8)]
        assert pool.restarts == 1


def _adult_like():
    pytest.importorskip("xgboost")
    import xgboost as xgb

    from faircert.domain import Domain, Feature
    from faircert.models.io import load_model

    rng = np.random.default_rng(0)
    X = np.stack(
        [rng.integers(0, 60, 3000), rng.integers(0, 2, 3000), rng.integers(0, 40, 3000), rng.integers(0, 30, 3000)],
        axis=1,
    ).astype(float)
    y = ((X[:, 0] / 60 + X[:, 2] / 40 + 0.3 * X[:, 1] + rng.normal(0, 0.3, 3000)) > 1.1).astype(int)
    clf = xgb.XGBClassifier(n_estimators=30, max_depth=4, random_state=0, n_jobs=1).fit(X, y)
    dom = Domain(
        (
            Feature("a", "integer", 0, 59),
            Feature("s", "binary", 0, 1),
            Feature("b", "integer", 0, 39),
            Feature("c", "integer", 0, 29),
        )
    )
    return load_model(clf), dom


def test_trees_give_the_same_shares_on_one_and_two_workers():
    from faircert.engines.trees.quantify import quantify
    from faircert.engines.trees.run import TreeOptions
    from faircert.properties import individual_fairness

    ir, dom = _adult_like()
    prop = individual_fairness(dom, "s", kappa=0.5)
    for budget in (400, None):  # a box budget (stopped early), and to the end
        one = quantify(ir, prop, 120, options=TreeOptions(max_boxes=budget))
        two = quantify(ir, prop, 120, options=TreeOptions(parallel=Parallelism(workers=2), max_boxes=budget))
        assert one.bounds == two.bounds and one.unfair == two.unfair and one.complete == two.complete
        assert one.complete == (budget is None)
    assert one.bounds[0] == one.bounds[1] < 1.0


def test_worker_counts_and_box_budgets_are_checked():
    with pytest.raises(PropertyError, match="workers must be an integer >= 1"):
        VerifyOptions(workers=0)
    with pytest.raises(PropertyError, match="max boxes must be an integer >= 1"):
        VerifyOptions(max_boxes=-3)


def test_the_api_takes_workers_and_a_box_budget(tmp_path):
    import faircert

    ir, dom = _adult_like()
    one = faircert.verify(ir, dom, "s", kappa=0.5, max_boxes=400, max_counterexamples=0)
    two = faircert.verify(ir, dom, "s", kappa=0.5, max_boxes=400, max_counterexamples=0, workers=2)
    assert (one.certified, one.falsified, one.undecided) == (two.certified, two.falsified, two.undecided)
    assert one.undecided > 0 and one.verdict == "unknown"


def test_the_default_is_every_core_started_once_a_run_outlasts_a_second(monkeypatch):
    from faircert.engines.boxes import workers

    monkeypatch.setattr(workers, "usable_cores", lambda: 4)
    assert Parallelism.of(None) == Parallelism(4, None, workers.START_AFTER_S)
    assert Parallelism.of(3) == Parallelism(3) and Parallelism.of(1) == workers.SERIAL
    assert Parallelism.of(None, "auto") == Parallelism(1, "auto")  # one actor per CPU of the cluster
    monkeypatch.setattr(workers, "usable_cores", lambda: 1)
    assert Parallelism.of(None) == workers.SERIAL
    assert VerifyOptions().workers is None


def test_workers_start_only_after_the_delay():
    import time

    with Workers(Squares(), 2, start_after=0.3) as pool:
        assert pool.map("square", [(i,) for i in range(4)]) == [0, 1, 4, 9]
        assert pool.pids() == [os.getpid()]  # a short run: everything here
        time.sleep(0.35)
        assert pool.map("square", [(i,) for i in range(4)]) == [0, 1, 4, 9]
        assert len(pool.pids()) == 2 and os.getpid() not in pool.pids()


def test_a_short_tree_run_keeps_its_boxes_here_and_a_long_one_deals_them():
    from faircert.engines.trees.quantify import quantify
    from faircert.engines.trees.run import TreeOptions
    from faircert.properties import individual_fairness

    ir, dom = _adult_like()
    prop = individual_fairness(dom, "s", kappa=0.5)
    lazy = quantify(ir, prop, 120, options=TreeOptions(parallel=Parallelism(2, None, start_after=30.0)))
    eager = quantify(ir, prop, 120, options=TreeOptions(parallel=Parallelism(2)))
    assert lazy.stats["workers"] == 0 and eager.stats["workers"] == 2
    assert lazy.bounds == eager.bounds and lazy.complete and eager.complete
