"""`--memory-limit`: every growing engine stops at the limit with its sound partial result, says
`stopped: memory limit`, and the command exits 2; limits are read as users write them."""

from __future__ import annotations

import json
import time

import pytest
from program_examples import FIG1
from test_checkpoint_complete import medium_case
from test_equalized_odds_populations import NET, PROGRAM
from test_network_parallel import large_case
from timing import wall

import faircert
from faircert.cli import main
from faircert.errors import PropertyError
from faircert.memory import MIN_BYTES, default_limit, machine_bytes, parse_bytes
from faircert.options import GroupOptions, VerifyOptions


@pytest.mark.parametrize(
    "text,value",
    [
        ("800000000", 800_000_000),
        ("800M", 800_000_000),
        ("1.5G", 1_500_000_000),
        ("2GiB", 2 * 2**30),
        ("64kib", 65536),
        (" 3 mb ", 3_000_000),
    ],
)
def test_limits_are_read_as_users_write_them(text, value):
    assert parse_bytes(text) == value
    assert VerifyOptions(memory_limit=text).memory_limit == value


@pytest.mark.parametrize("bad", ["lots", "1e9", "-5M", "", 0, 100, -1, True, float("nan"), float("inf")])
def test_impossible_limits_are_refused(bad):
    with pytest.raises(PropertyError, match="memory limit"):
        GroupOptions(memory_limit=bad)


def test_the_default_is_a_share_of_the_machine():
    total = machine_bytes()
    assert VerifyOptions().memory_limit == default_limit() >= MIN_BYTES
    if total:
        assert default_limit() == total // 16


def _fair_case():
    """A network that ignores the protected attribute: only the memory limit can stop its refinement."""
    net, dom = large_case()
    net.weights[0][:, 1] = 0.0
    return net, dom


def _partial(result) -> None:
    assert result.stats["stopped"] == "memory limit" and result.stats["memory_limited"]
    assert result.stopped == "memory limit"
    assert result.undecided > 0 and result.verdict == "unknown" and result.falsified == 0
    assert abs(result.certified + result.falsified + result.undecided - 1) < 1e-12


def test_the_network_refinement_stops_at_the_limit():
    net, dom = _fair_case()
    whole = faircert.verify(net, dom, protected="p", time_limit=4, workers=1, seed=1)
    res = faircert.verify(net, dom, protected="p", time_limit=60, workers=1, seed=1, memory_limit=20_000)
    _partial(res)
    assert res.elapsed_s < 20 and res.stats["boxes_bounded"] < whole.stats["boxes_bounded"]


def test_the_complete_decision_stops_at_the_limit():
    net, dom, _ = medium_case()
    res = faircert.verify(
        net, dom, protected=["p", "q"], epsilon={"b": 1}, partition_size=2, workers=1, memory_limit=MIN_BYTES
    )
    assert res.stats["stopped"] == "memory limit" and res.decision["unknown"] > 0 and res.verdict != "fair"
    assert res.stopped == "memory limit"


def test_the_probability_bounds_stop_at_the_limit(tmp_path):
    res = faircert.verify_program(FIG1, query="expRank > -5", tolerance=1e-12, workers=1, memory_limit=200_000)
    low, high = res.probabilities["expRank > -5"]
    assert res.stopped == "memory limit" and 0 < low < high < 1
    pop = tmp_path / "pop.fr"
    pop.write_text(PROGRAM)
    started = time.perf_counter()
    g = faircert.group(NET, population=pop, protected="sex < 1", workers=1, memory_limit=MIN_BYTES, time_limit=20)
    assert g.stats["stopped"] == "memory limit" and all(x.low <= x.high for x in g.groups)
    # the run returns at once: no statistical estimate is sampled after the limit stopped it
    assert g.estimate is None and time.perf_counter() - started < wall(1.0)


def test_the_command_exits_2_and_says_why(tmp_path, capsys):
    from faircert.models.io.nnet import save_nnet

    net, dom = _fair_case()
    save_nnet(net, tmp_path / "net.nnet")
    dom.save(tmp_path / "dom.json")
    out = tmp_path / "out.json"
    code = main(
        [
            "verify",
            str(tmp_path / "net.nnet"),
            "--domain",
            str(tmp_path / "dom.json"),
            "--protected",
            "p",
            "--workers",
            "1",
            "--memory-limit",
            "20K",
            "--json",
            str(out),
        ]
    )
    assert code == 2 and json.loads(out.read_text())["stats"]["stopped"] == "memory limit"
    assert "memory limit" in capsys.readouterr().err
    program = tmp_path / "fig1.fr"
    program.write_text(FIG1)
    assert (
        main(
            [
                "program",
                str(program),
                "--probability",
                "expRank > -5",
                "--tolerance",
                "1e-12",
                "--workers",
                "1",
                "--memory-limit",
                "200K",
                "--quiet",
            ]
        )
        == 2
    )
    assert (
        main(
            [
                "verify",
                str(tmp_path / "net.nnet"),
                "--domain",
                str(tmp_path / "dom.json"),
                "--protected",
                "p",
                "--memory-limit",
                "much",
            ]
        )
        == 3
    )
    assert "memory limit must be a number of bytes" in capsys.readouterr().err


def test_linear_rates_on_score_grids_stay_sound_within_the_limit():
    """A small limit keeps the grids coarse: wider bounds around the same truth, and the result says why."""
    import numpy as np
    import pandas as pd

    from faircert.models.linear import LinearModel

    rng = np.random.default_rng(2)
    n = 3000
    frame = pd.DataFrame(
        {"s": rng.integers(0, 2, n), "x": rng.normal(0, 1, n), "y": rng.normal(0, 1, n), "z": rng.integers(0, 4, n)}
    )
    model = LinearModel.plain([0.4, 1.3, 0.7, -0.2], -0.3, ["s", "x", "y", "z"])  # too many sums: grids
    fine = faircert.group(model, frame, protected="s", population="independent", time_limit=30)
    coarse = faircert.group(model, frame, protected="s", population="independent", time_limit=30, memory_limit=64_000)
    assert coarse.stats["stopped"] == "memory limit" and fine.stats["stopped"] == "converged"
    assert (
        coarse.engine == fine.engine == "subset-sum"
        and coarse.method == fine.method == "score histograms, sound bounds"
    )
    for f, c in zip(fine.groups, coarse.groups):
        assert c.low <= f.low + 1e-12 and f.high <= c.high + 1e-12
    assert max(c.high - c.low for c in coarse.groups) > max(f.high - f.low for f in fine.groups)


def test_the_tree_refinement_stops_at_the_limit():
    from test_trees_memory import _large_problem

    ir, dom = _large_problem()
    res = faircert.verify(ir, dom, protected="p", kappa=0.5, workers=1, time_limit=60, memory_limit=400_000)
    assert res.stats["stopped"] == "memory limit" and res.stats["memory_limited"]
    assert res.measure_lower < res.measure_upper and res.elapsed_s < 30


@pytest.mark.parametrize("epsilon", [None, {"f1": 2, "f2": 2}])
def test_a_tree_run_at_its_memory_limit_ends_at_once(monkeypatch, epsilon):
    """Neither the refinement after a region path stopped by the limit, nor the statistical
    estimate after the bounds, runs on to the time limit."""
    from test_trees_memory import _large_problem

    from faircert.engines.trees import quantify, verify

    def refinement(*args):
        raise AssertionError("the refinement ran after the region path reached the memory limit")

    budgets = []
    estimate = verify.estimate_unfair_share
    monkeypatch.setattr(verify, "estimate_unfair_share", lambda *a, **k: budgets.append(a[3]) or estimate(*a, **k))
    if epsilon:
        monkeypatch.setattr(quantify, "_quantify_dilated", refinement)
    ir, dom = _large_problem()
    res = faircert.verify(
        ir, dom, protected="p", kappa=0.5, epsilon=epsilon, workers=1, time_limit=60, memory_limit=20_000
    )
    assert res.stopped == "memory limit" and res.stats["memory_limited"] and res.verdict != "fair"
    assert budgets == [verify.MIN_ESTIMATE_S] and res.statistical is not None  # its least sample only
    assert res.measure_lower < res.measure_upper
