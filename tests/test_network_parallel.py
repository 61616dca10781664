"""The network refinement on several processes: under a box budget the same shares and evidence as
one process, sound partial results, and nothing lost when a worker dies."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from boxes_oracle import random_network, unfair_points
from timing import wall

import faircert
from faircert import interrupt
from faircert.domain import Domain, Feature
from faircert.engines.network.refine import verify_network
from faircert.engines.network.settle import BoxSettler
from faircert.properties import individual_fairness

# brute-force domains: 630 and 24,000 free points, protected p (3 values) and q (2)
SMALL = (
    Feature("a", "integer", 0, 9),
    Feature("p", "integer", 0, 2),
    Feature("b", "integer", -3, 5),
    Feature("c", "integer", 0, 6),
    Feature("q", "binary"),
)
MEDIUM = (
    Feature("a", "integer", 0, 39),
    Feature("p", "integer", 0, 2),
    Feature("b", "integer", -15, 14),
    Feature("c", "integer", 0, 19),
    Feature("q", "binary"),
)
# too large to finish in a test: a run stops at its box budget
LARGE = (
    Feature("a", "integer", 0, 200),
    Feature("p", "binary"),
    Feature("b", "integer", -50, 50),
    Feature("c", "real", 0, 10),
    Feature("d", "integer", 0, 300),
    Feature("e", "real", -1, 1),
)


def brute_force_case(seed: int, features=SMALL):
    rng = np.random.default_rng(seed)
    net = random_network(rng, 5, [8, 6], scale=0.6)
    net.weights[0][:, 1] *= 0.3  # a mild protected effect: mostly fair, some unfair points
    dom = Domain(features)
    return net, dom, unfair_points(net, dom, [1, 4])


def large_case():
    rng = np.random.default_rng(3)
    net = random_network(rng, 6, [16, 12], scale=0.5)
    net.weights[0][:, 1] *= 0.3
    return net, Domain(LARGE)


def shares(res) -> tuple[float, float, float]:
    return res.certified, res.falsified, res.undecided


def check_counterexamples(net, res, protected=(1,)) -> None:
    """Every reported pair differs only in the protected features and is labelled differently."""
    assert res.counterexamples
    for c in res.counterexamples:
        x, xp = np.array(c.x), np.array(c.x_prime)
        assert (net.logit(x[None])[0] > 0) != (net.logit(xp[None])[0] > 0)
        assert np.array_equal(np.delete(x, protected), np.delete(xp, protected))


def test_two_workers_give_the_shares_of_one_under_a_box_budget(small_chunks):
    net, dom = large_case()
    one = faircert.verify(net, dom, "p", max_boxes=3000, max_counterexamples=20, workers=1)
    two = faircert.verify(net, dom, "p", max_boxes=3000, max_counterexamples=20, workers=2)
    assert shares(one) == shares(two)
    assert sum(shares(one)) == pytest.approx(1.0, abs=1e-12)
    assert 0 < one.undecided < 0.5 and one.verdict == "unfair" and one.stats["counterexamples_found"] > 0
    # the budget stopped both at the end of the same level, with the same boxes and evidence
    for key in ("boxes_examined", "boxes_bounded", "boxes_grown", "cuts", "counterexamples_found"):
        assert one.stats[key] == two.stats[key], key
    assert 3000 <= one.stats["boxes_examined"] < 2 * 3000 and one.stats["box_budget_reached"]
    assert (one.stats["workers"], two.stats["workers"]) == (1, 2)
    assert one.stopped == two.stopped == "box budget"
    assert [(c.x, c.x_prime) for c in one.counterexamples] == [(c.x, c.x_prime) for c in two.counterexamples]
    check_counterexamples(net, two)
    # the driver draws the statistical estimate's samples from the run's seed, over the same boxes
    assert (one.statistical.unfair, one.statistical.samples) == (two.statistical.unfair, two.statistical.samples)
    # a larger budget examines more boxes and leaves less undecided
    more = faircert.verify(net, dom, "p", max_boxes=6000, max_counterexamples=0, workers=2)
    assert more.stats["boxes_examined"] > one.stats["boxes_examined"] and more.undecided < one.undecided


@pytest.mark.slow
def test_with_epsilon_two_workers_give_the_shares_of_one_under_a_box_budget(small_chunks):
    net, dom = large_case()
    eps = {"a": 2, "c": 0.5}
    one = faircert.verify(net, dom, "p", epsilon=eps, max_boxes=3000, max_counterexamples=5, workers=1)
    two = faircert.verify(net, dom, "p", epsilon=eps, max_boxes=3000, max_counterexamples=5, workers=2)
    assert shares(one) == shares(two) and one.stats["boxes_bounded"] == two.stats["boxes_bounded"]
    assert 0.9 < one.certified < 1 and 0 < one.undecided and two.stats["workers"] == 2
    assert [c.x for c in one.counterexamples] == [c.x for c in two.counterexamples] != []


def test_one_process_without_a_budget_runs_as_before():
    net, dom = large_case()
    prop = individual_fairness(dom, "p")
    plain = verify_network(net, prop, time_limit=0.5)
    assert "boxes_examined" not in plain.stats and "workers" not in plain.stats
    assert plain.certified > 0.5 and plain.stats["boxes_bounded"] > 100
    assert sum(shares(plain)) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.slow
def test_two_workers_to_the_end_equal_brute_force(small_chunks):
    net, dom, truth = brute_force_case(2, MEDIUM)
    size = 40 * 30 * 20
    res = faircert.verify(net, dom, ["p", "q"], workers=2, time_limit=None)
    assert res.undecided == 0 and res.stats["boxes_examined"] > 1000 and res.stats["workers"] == 2
    assert truth == 3104 and round(res.falsified * size) == truth
    assert res.certified == pytest.approx(1 - truth / size, abs=1e-12)
    assert res.verdict == "unfair"
    check_counterexamples(net, res, [1, 4])


def test_a_worker_killed_mid_run_changes_nothing(small_chunks, monkeypatch, tmp_path):
    net, dom = large_case()
    serial = faircert.verify(net, dom, "p", max_boxes=3000, max_counterexamples=0, workers=1)
    marker = tmp_path / "died"
    settle, driver = BoxSettler.settle, os.getpid()

    def dies_once_in_a_worker(self, *boxes):
        if os.getpid() != driver:
            try:  # created by one worker only: both may get here at the same moment
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return settle(self, *boxes)
            os._exit(1)
        return settle(self, *boxes)

    monkeypatch.setattr(BoxSettler, "settle", dies_once_in_a_worker)  # the forked workers inherit it
    res = faircert.verify(net, dom, "p", max_boxes=3000, max_counterexamples=0, workers=2)
    assert marker.exists() and res.stats["workers_restarted"] == 1
    assert sum(shares(res)) == pytest.approx(1.0, abs=1e-12)
    assert shares(res) == shares(serial)


def test_a_stop_request_ends_after_the_slice_with_sound_shares(small_chunks):
    net, dom, truth = brute_force_case(0)
    assert truth == 106
    reports = []

    def stop_at_the_first_report(p):
        reports.append(p)
        interrupt.request()

    try:
        res = faircert.verify(net, dom, ["p", "q"], workers=2, time_limit=None, progress=stop_at_the_first_report)
    finally:
        interrupt.clear()
    assert res.stats["interrupted"] and res.stopped == "interrupted" and res.undecided > 0
    # sound: never more proven fair or unfair than there is
    assert res.certified <= 1 - truth / 630 + 1e-12 and res.falsified <= truth / 630 + 1e-12
    assert sum(shares(res)) == pytest.approx(1.0, abs=1e-12)


def test_a_time_limited_run_on_two_workers_stops_in_time_with_checked_evidence(small_chunks):
    net, dom = large_case()
    res = faircert.verify(net, dom, "p", workers=2, time_limit=1.5, max_counterexamples=5)
    assert res.elapsed_s < wall(1.5) and 0 < res.undecided < 1
    assert sum(shares(res)) == pytest.approx(1.0, abs=1e-12)
    check_counterexamples(net, res)


def test_the_command_line_takes_workers_and_a_box_budget_for_networks(small_chunks, tmp_path, capsys):
    from faircert.cli import main
    from faircert.models.io.nnet import save_nnet

    net, dom = large_case()
    save_nnet(net, tmp_path / "m.nnet")
    dom.save(tmp_path / "d.yaml")
    out = {}
    for workers in ("1", "2"):
        args = [
            "verify",
            str(tmp_path / "m.nnet"),
            "--domain",
            str(tmp_path / "d.yaml"),
            "--protected",
            "p",
            "--workers",
            workers,
            "--max-boxes",
            "3000",
            "--quiet",
            "--json",
            str(tmp_path / f"{workers}.json"),
        ]
        assert main(args) == 1  # unfair: counterexamples found
        out[workers] = json.loads((tmp_path / f"{workers}.json").read_text())
    shares = [{k: o[k] for k in ("certified", "falsified", "undecided")} for o in out.values()]
    assert shares[0] == shares[1] and 0 < shares[0]["undecided"] < 0.5
