"""The epsilon > 0 / robustness tree refinement in shards (`boxes.shards`): the same shares, unfair
pieces and open boxes on one process and on two workers under a box budget, the exact measure at
the end, sound bounds when the time limit cuts a run on workers, and testing mode on workers."""

from __future__ import annotations

import numpy as np
import pytest
from test_trees_engine import _models, _small_problem, brute_force
from test_trees_joint import _xgb
from test_workers import _adult_like

from faircert.engines.boxes.workers import Parallelism
from faircert.engines.trees import quantify as quantify_module
from faircert.engines.trees import sampling
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.options import VerifyOptions
from faircert.properties import UnfairSamples, individual_fairness

KAPPA = 0.55


def _rows(*arrays: np.ndarray) -> np.ndarray:
    """The rows of the arrays side by side, in one canonical order (to compare sets of boxes)."""
    rows = np.hstack(arrays)
    return rows[np.lexsort(rows.T[::-1])] if len(rows) else rows


def _same_run(one, two) -> None:
    assert one.bounds == two.bounds and one.unfair == two.unfair and one.complete == two.complete
    assert one.conf_settled == two.conf_settled and one.nonconf == two.nonconf
    assert one.stats["examined"] == two.stats["examined"] and one.stats["boxes"] == two.stats["boxes"]
    assert one.stats["workers"] == 0 and two.stats["workers"] == 2  # the second run was dealt out
    assert np.array_equal(
        _rows(one.piece_lo, one.piece_hi, one.part.lo[one.piece_twin], one.part.hi[one.piece_twin]),
        _rows(two.piece_lo, two.piece_hi, two.part.lo[two.piece_twin], two.part.hi[two.piece_twin]),
    )
    assert np.array_equal(_rows(*one.open_boxes()), _rows(*two.open_boxes()))


def _cases():
    X, y, dom = _small_problem(0, n_features=5)
    xgb_model = _xgb(X, y, 0, n=30, depth=4)
    yield (
        "xgboost fairness",
        xgb_model,
        individual_fairness(dom, "p", epsilon={"f1": 1, "f2": 1, "f3": 1, "f4": 1}, kappa=KAPPA),
        300,
    )
    yield (
        "xgboost robustness",
        xgb_model,
        individual_fairness(dom, None, epsilon=1.0, kappa=KAPPA, robustness=True),
        2000,
    )
    pytest.importorskip("sklearn")
    X, y, dom = _small_problem(3, n_features=5)
    forest = list(_models(X, y, 3))[2]  # a scikit-learn random forest
    yield "forest robustness", forest, individual_fairness(dom, None, epsilon=1.0, kappa=KAPPA, robustness=True), 700


@pytest.mark.parametrize("case", range(3))
def test_one_and_two_workers_agree_under_a_box_budget_and_reach_the_exact_measure(case):
    pytest.importorskip("xgboost")
    name, ir, prop, budget = list(_cases())[case]
    conf, unfair = brute_force(ir, prop.domain, prop.protected, prop.epsilon, KAPPA, prop.robustness)
    assert 0 < unfair < conf, name
    truth = 1 - unfair / conf
    stopped = [
        quantify(ir, prop, options=TreeOptions(method="refinement", parallel=Parallelism(w), max_boxes=budget))
        for w in (1, 2)
    ]
    _same_run(*stopped)
    one = stopped[0]
    assert not one.complete and one.stats["examined"] >= budget and one.stopped == "box budget", name
    assert one.bounds[0] <= truth <= one.bounds[1] and one.bounds[1] - one.bounds[0] > 0, name
    assert one.open_parts is not None and len(one.open_boxes()[0]) > 0
    full = [quantify(ir, prop, options=TreeOptions(method="refinement", parallel=Parallelism(w))) for w in (1, 2)]
    _same_run(*full)
    for q in full:
        assert q.complete and q.measured_upper == conf and q.unfair == unfair and q.conf_settled == conf, name
        assert q.bounds == ((conf - unfair) / conf,) * 2 and len(q.open_boxes()[0]) == 0
        assert np.prod(q.piece_hi - q.piece_lo, axis=1).sum() == unfair  # the pieces are the exact region


@pytest.mark.parametrize("robustness", [False, True])
def test_a_time_limited_run_on_two_workers_brackets_the_truth(robustness):
    ir, dom = _adult_like()
    if robustness:
        prop = individual_fairness(dom, None, epsilon=1.0, kappa=0.5, robustness=True)
    else:
        prop = individual_fairness(dom, "s", epsilon={"a": 2, "b": 1, "c": 1}, kappa=0.5)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.5, robustness)
    truth = 1 - unfair / conf
    # well short of what each needs to finish (robustness finds its first unfair boxes later)
    q = quantify(
        ir, prop, 1.0 if robustness else 0.2, options=TreeOptions(method="refinement", parallel=Parallelism(2))
    )
    assert q.stats["workers"] == 2 and not q.complete
    lo, hi = q.bounds
    assert lo <= truth <= hi and 0 < hi - lo < 1
    assert 0 < q.unfair <= unfair and q.nonconf <= q.total - conf and q.conf_settled <= conf
    # the open boxes gathered from the workers and the settled part cover the domain exactly once
    olo, ohi, osl = q.open_boxes()
    free = np.ones(len(dom.features), dtype=bool)
    free[list(prop.protected)] = False
    open_size = float((np.prod(np.where(free, ohi - olo, 1.0), axis=1) * osl.sum(axis=1)).sum())
    assert open_size + q.conf_settled + q.nonconf == q.total


@pytest.mark.parametrize("budget", [None, 300])
def test_testing_mode_on_two_workers_returns_rechecked_counterexamples(monkeypatch, budget):
    pytest.importorskip("xgboost")
    X, y, dom = _small_problem(0, n_features=5)
    ir = _xgb(X, y, 0, n=30, depth=4)
    prop = individual_fairness(dom, "p", epsilon={"f1": 1, "f2": 1, "f3": 1, "f4": 1}, kappa=KAPPA)
    _, conf_mask, unfair_mask = _masks(ir, prop)
    # no time for the region path: the refinement that follows it gets the workers and the budget
    monkeypatch.setattr(quantify_module, "REGIONS_SHARE", 0.0)
    seen = []

    def spy(*args, **kwargs):
        q = quantify(*args, **kwargs)
        seen.append((kwargs["options"].parallel, kwargs["options"].max_boxes, q))
        return q

    monkeypatch.setattr(sampling, "quantify", spy)
    options = VerifyOptions(time_limit=60, seed=3, workers=2, max_boxes=budget)
    frame = sampling.answer_samples(ir, UnfairSamples(prop, 400), options)
    ((parallel, max_boxes, q),) = seen
    assert parallel == Parallelism(2) and max_boxes == budget and q.stats["workers"] == 2
    assert q.complete == (budget is None)
    summary = frame.attrs["summary"]
    assert summary["written"] == len(frame) == 400 and summary["region_exact"]
    names = dom.names
    x = frame[names].to_numpy(float)
    xp = frame[[f"{n}_prime" for n in names]].to_numpy(float)
    # genuine counterexamples on the model: other protected value, others within epsilon, other label,
    # x confident; and x lies in the brute-force unfair region
    assert np.all(x[:, 0] != xp[:, 0]) and np.all(np.abs(x[:, 1:] - xp[:, 1:]) <= 1)
    assert np.all(ir.predict(x) != ir.predict(xp)) and np.all(ir.confidence(x) > KAPPA)
    sizes = np.array([f.max - f.min + 1 for f in dom.features])
    index = np.ravel_multi_index(x.astype(int).T, sizes)
    assert unfair_mask[index].all() and conf_mask[index].all()
    assert np.allclose(frame["output"], ir.predict_proba(x)) and np.allclose(
        frame["output_prime"], ir.predict_proba(xp)
    )


def _masks(ir, prop):
    from test_trees_engine import brute_force_masks

    return brute_force_masks(ir, prop.domain, prop.protected, prop.epsilon, KAPPA, prop.robustness)
