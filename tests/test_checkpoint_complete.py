"""Checkpoint and resume of the complete and partitioned decision of networks: a run stopped after
any round and resumed decides every partition as brute force does (and, serially, exactly as the
uninterrupted run); the state resumes in the other mode; another partition size, a pair that does
not re-check or boxes outside their region are refused."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
from killing import killed_after_checkpoint, rerun
from test_network_complete import _brute_region
from test_network_parallel import MEDIUM, brute_force_case

import faircert
from faircert.checkpoint import Checkpoint, pack, unpack
from faircert.engines.boxes import budget
from faircert.engines.boxes.workers import Parallelism
from faircert.engines.network import complete
from faircert.engines.network.decide import decide_network
from faircert.engines.network.partitions import partition_grid
from faircert.engines.network.problem import Problem
from faircert.errors import PropertyError
from faircert.properties import individual_fairness

SIZE = 10  # partition size: 24 partitions of the medium domain


@pytest.fixture
def many_rounds(monkeypatch):
    """Small rounds and little enumeration, so that a run takes a dozen rounds."""
    monkeypatch.setattr(complete, "BATCH", 4)
    monkeypatch.setattr(complete, "EXACT_POINTS", 8)


def medium_case():
    net, dom, _ = brute_force_case(0, MEDIUM)
    return net, dom, individual_fairness(dom, ["p", "q"], epsilon={"b": 1})


def _checkpoint(path, every=0.0, source=None):
    return Checkpoint(path, "network-complete", {"model": "m"}, every=every, source=source)


def _stop_after(monkeypatch, rounds: int) -> None:
    """A stop request once the branch and bound has run `rounds` rounds (as a SIGINT would)."""
    calls = iter(range(10**6))
    monkeypatch.setattr(budget, "stop_requested", lambda: next(calls) >= rounds)


def _truth(net, prop, size=SIZE):
    pb = Problem.build(net, prop)
    lo, hi = partition_grid(pb, size)
    return ["unfair" if _brute_region(pb, lo[k], hi[k]) else "fair" for k in range(lo.shape[0])]


def _verdicts(res):
    return [row["verdict"] for row in res.partitions]


@pytest.mark.parametrize("rounds", [1, 5, 11])
def test_a_serial_run_stopped_after_any_round_resumes_to_the_uninterrupted_answer(
    tmp_path, monkeypatch, many_rounds, rounds
):
    net, _, prop = medium_case()
    whole = decide_network(net, prop, time_limit=60, partition_size=SIZE)
    assert whole.stats["rounds"] > 11
    path = tmp_path / "c.json"
    with monkeypatch.context() as m:
        _stop_after(m, rounds)
        part = decide_network(net, prop, time_limit=60, partition_size=SIZE, checkpoint=_checkpoint(path))
    assert part.stats["interrupted"] and part.stats["rounds"] == rounds
    resumed = decide_network(net, prop, time_limit=60, partition_size=SIZE, checkpoint=_checkpoint(path), resume=True)
    assert _verdicts(resumed) == _verdicts(whole) == _truth(net, prop)
    assert (resumed.certified, resumed.falsified) == (whole.certified, whole.falsified)
    assert (
        resumed.stats["rounds"] == whole.stats["rounds"]
        and resumed.stats["boxes_bounded"] == whole.stats["boxes_bounded"]
    )
    assert [r["counterexample"] for r in resumed.partitions] == [r["counterexample"] for r in whole.partitions]
    # the partial run's sound shares are never looser after resuming
    assert resumed.certified >= part.certified and resumed.falsified >= part.falsified


def test_states_resume_in_the_other_mode(tmp_path, monkeypatch, many_rounds):
    """A serial state continued on two workers, and a parallel state continued serially."""
    net, _, prop = medium_case()
    truth = _truth(net, prop)
    serial, parallel = tmp_path / "s.json", tmp_path / "p.json"
    with monkeypatch.context() as m:
        _stop_after(m, 2)
        decide_network(net, prop, time_limit=60, partition_size=SIZE, checkpoint=_checkpoint(serial))
    res = decide_network(
        net,
        prop,
        time_limit=60,
        partition_size=SIZE,
        parallel=Parallelism(2),
        checkpoint=_checkpoint(parallel, source=serial),
        resume=True,
    )
    assert _verdicts(res) == truth and res.stats["checkpoints"] >= 1
    state = json.loads(parallel.read_text())["state"]
    assert "frontier" not in state and unpack(state["verdict"], "i8").tolist() == [
        {"fair": 1, "unfair": 2}[v] for v in truth
    ]
    res = decide_network(
        net,
        prop,
        time_limit=60,
        partition_size=SIZE,
        checkpoint=_checkpoint(tmp_path / "x.json", source=parallel),
        resume=True,
    )
    # nothing was left to do: no box bounded beyond the saved state's
    assert _verdicts(res) == truth and res.stats["boxes_bounded"] == state["stats"]["boxes_bounded"]


def test_the_api_checkpoints_partitions_and_refuses_another_partition_size(tmp_path, monkeypatch, many_rounds):
    net, dom, prop = medium_case()
    path = tmp_path / "c.json"
    with monkeypatch.context() as m:
        _stop_after(m, 2)
        faircert.verify(
            net, dom, protected=["p", "q"], epsilon={"b": 1}, partition_size=SIZE, checkpoint=path, workers=1
        )
    res = faircert.verify(net, dom, protected=["p", "q"], epsilon={"b": 1}, partition_size=SIZE, resume=path, workers=1)
    assert [row["verdict"] for row in res.partitions] == _truth(net, prop)
    with pytest.raises(PropertyError, match="another question"):
        faircert.verify(net, dom, protected=["p", "q"], epsilon={"b": 1}, partition_size=9, resume=path, workers=1)


@pytest.fixture(scope="module")
def saved_state(tmp_path_factory):
    """A partitioned run's state after three rounds."""
    net, _, prop = medium_case()
    path = tmp_path_factory.mktemp("saved") / "c.json"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(complete, "BATCH", 4)
        m.setattr(complete, "EXACT_POINTS", 8)
        _stop_after(m, 3)
        decide_network(net, prop, time_limit=60, partition_size=SIZE, checkpoint=_checkpoint(path))
    return json.loads(path.read_text())["state"]


@pytest.mark.parametrize(
    "damage,message",
    [
        ("pair", "does not re-check"),
        ("box outside its region", "open boxes do not fit"),
        ("unfair without a pair", "do not match"),
        ("verdict", "regions do not fit"),
        ("missing", "incomplete"),
        ("negative count", "incomplete"),
        ("count missing", "incomplete"),
    ],
)
def test_damaged_states_are_refused(tmp_path, saved_state, damage, message):
    def change(state):
        if damage == "pair":
            state["pairs"]["b"] = state["pairs"]["a"]  # a point against itself
        elif damage == "box outside its region":
            lo = unpack(state["frontier"]["lo"], "f8", 3)
            hi = unpack(state["frontier"]["hi"], "f8", 3)
            owner = unpack(state["frontier"]["owner"], "i8")
            assert owner.size and lo.shape == hi.shape
            owner[:] = (owner + 1) % 24
            state["frontier"]["owner"] = pack(owner)
        elif damage == "unfair without a pair":
            state["pairs"] = {
                k: pack(
                    unpack(v, "i8" if k in ("region", "a", "b") else "f8", None if k in ("region", "a", "b") else 3)[:0]
                )
                for k, v in state["pairs"].items()
            }
        elif damage == "verdict":
            state["verdict"] = pack(np.full(24, 7, dtype=np.int64))
        elif damage == "negative count":
            state["stats"]["milp_calls"] = -1
        elif damage == "count missing":
            del state["stats"]["rounds"]
        else:
            del state["seconds"]

    state = copy.deepcopy(saved_state)
    change(state)
    damaged = _checkpoint(tmp_path / "d.json")
    damaged.save(state)
    net, _, prop = medium_case()
    with pytest.raises(PropertyError, match=message):
        decide_network(net, prop, time_limit=60, partition_size=SIZE, checkpoint=damaged, resume=True)


@pytest.mark.slow
def test_a_killed_partitioned_command_resumes_to_the_same_verdicts(tmp_path):
    """SIGKILL at five moments of a run over 6,000 partitions, each then resumed: every partition's
    verdict is the uninterrupted run's."""
    from faircert.models.io.nnet import save_nnet

    net, dom, _ = medium_case()
    save_nnet(net, tmp_path / "net.nnet")
    dom.save(tmp_path / "dom.json")
    base = [
        sys.executable,
        "-m",
        "faircert",
        "verify",
        str(tmp_path / "net.nnet"),
        "--domain",
        str(tmp_path / "dom.json"),
        "--protected",
        "p",
        "--protected",
        "q",
        "--epsilon",
        "b=1",
        "--partition-size",
        "2",
        "--workers",
        "1",
        "--time-limit",
        "600",
        "--quiet",
    ]
    whole = tmp_path / "whole.json"
    subprocess.run(base + ["--json", str(whole)], check=False, timeout=300)
    expected = [row["verdict"] for row in json.loads(whole.read_text())["partitions"]]
    assert len(expected) == 6000 and "unknown" not in expected
    resumed_after_kill = 0
    for k, after in enumerate(np.linspace(0.2, 1.5, 5)):  # seconds after the first checkpoint, however late
        path = tmp_path / f"run{k}.ckpt"
        killed = killed_after_checkpoint(base + ["--checkpoint", str(path), "--checkpoint-every", "0.05"], path, after)
        out = tmp_path / f"resumed{k}.json"
        resumed_after_kill += killed and path.exists()
        code = rerun(base, path, out)
        assert code == 1  # unfair
        assert [row["verdict"] for row in json.loads(out.read_text())["partitions"]] == expected, (k, after)
    assert resumed_after_kill >= 2
