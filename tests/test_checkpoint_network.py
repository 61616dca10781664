"""Checkpoint and resume of the network box refinement: under a box budget a run stopped at any
level (or killed at any moment) and resumed gives the uninterrupted run's shares, boxes and
counterexamples; another network, domain or question, or a changed or damaged file, is refused."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from killing import killed_after, rerun
from test_network_parallel import large_case, shares

import faircert
from faircert.checkpoint import Checkpoint
from faircert.engines.boxes.frontier import BoxCodec, records_text, text_records
from faircert.engines.network.problem import Problem
from faircert.errors import PropertyError
from faircert.properties import individual_fairness

BUDGET = 3000


def _verify(net, dom, **options):
    options.setdefault("time_limit", 60)  # a box budget ends the run first
    return faircert.verify(net, dom, protected="p", workers=1, **options)


def _same(a, b) -> None:
    assert shares(a) == shares(b)
    for key in ("boxes_bounded", "boxes_examined", "cuts", "counterexamples_found"):
        assert a.stats[key] == b.stats[key], key
    assert [(c.x, c.x_prime) for c in a.counterexamples] == [(c.x, c.x_prime) for c in b.counterexamples]


@pytest.mark.parametrize("stop", [1, 600, 2000])
def test_a_run_stopped_at_any_level_resumes_to_the_uninterrupted_answer(tmp_path, small_chunks, stop):
    net, dom = large_case()
    whole = _verify(net, dom, max_boxes=BUDGET)
    path = tmp_path / "run.ckpt"
    part = _verify(net, dom, max_boxes=stop, checkpoint=path)
    assert part.stats["boxes_examined"] < whole.stats["boxes_examined"] and part.stats["checkpoints"] >= 1
    resumed = _verify(net, dom, max_boxes=BUDGET, resume=path)
    _same(whole, resumed)
    # the resumed run kept writing to the same file: resuming its end changes nothing
    _same(whole, _verify(net, dom, max_boxes=BUDGET, resume=path))


def test_resuming_into_another_file_leaves_the_first_one(tmp_path, small_chunks):
    net, dom = large_case()
    first, second = tmp_path / "a.ckpt", tmp_path / "b.ckpt"
    _verify(net, dom, max_boxes=1000, checkpoint=first)
    before = first.read_text()
    _verify(net, dom, max_boxes=2000, resume=first, checkpoint=second)
    assert first.read_text() == before
    assert sum(s["examined"] for s in json.loads(second.read_text())["state"]["shards"]) >= 2000


def test_another_network_domain_or_question_is_refused(tmp_path, small_chunks):
    net, dom = large_case()
    path = tmp_path / "run.ckpt"
    _verify(net, dom, max_boxes=500, checkpoint=path)
    other = large_case()[0]
    other.weights[0][0, 0] += 1.0
    with pytest.raises(PropertyError, match="written for another model"):
        _verify(other, dom, resume=path, max_boxes=600)
    with pytest.raises(PropertyError, match="written for another question"):
        _verify(net, dom, resume=path, max_boxes=600, seed=1)
    wider = faircert.domain.Domain(
        tuple(f if f.name != "d" else faircert.domain.Feature("d", "integer", 0, 301) for f in dom.features)
    )
    with pytest.raises(PropertyError, match="written for another domain"):
        _verify(net, wider, resume=path, max_boxes=600)


def _state(path):
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "damage",
    [
        "digest",
        "truncated",
        "boxes outside",
        "credits beyond a box",
        "split feature off the domain",
        "counterexample outside",
        "negative count",
        "count missing",
        "version",
        "release",
    ],
)
def test_changed_or_damaged_checkpoints_are_refused(tmp_path, small_chunks, damage):
    net, dom = large_case()
    path = tmp_path / "run.ckpt"
    _verify(net, dom, max_boxes=500, checkpoint=path)
    body = _state(path)
    shard = body["state"]["shards"][0]
    records, rows = shard["open"]["records"], shard["open"]["boxes"]
    if damage == "digest":  # one number changed by hand
        body["state"]["tau"] = body["state"]["tau"] + 1.0
        path.write_text(json.dumps(body))
    elif damage == "truncated":
        path.write_text(path.read_text()[: len(path.read_text()) // 2])
    elif damage == "boxes outside":  # a consistent file whose boxes leave the domain
        pb = Problem.build(net, individual_fairness(dom, [dom.names.index("p")]))
        codec = BoxCodec(pb.lo, pb.hi, pb.discrete)  # as the refinement keeps its open boxes
        boxes = text_records(records[0], codec.dtype, rows)
        boxes["h0"][0] = np.iinfo(boxes["h0"].dtype).max  # an integer feature's offset past its range
        boxes["l2"][0] = -1e9  # a real feature's value below it
        records[0] = records_text([boxes])
        Checkpoint(path, "network-boxes", body["identity"]).save(body["state"])
    elif damage == "credits beyond a box":  # an open box credited with more than it holds
        fair = text_records(records[4], np.dtype(np.float64), rows)
        fair[:] = 1e300
        records[4] = records_text([fair])
        Checkpoint(path, "network-boxes", body["identity"]).save(body["state"])
    elif damage == "split feature off the domain":
        split = text_records(records[2], np.dtype(np.int64), rows)
        split[0] = 99
        records[2] = records_text([split])
        Checkpoint(path, "network-boxes", body["identity"]).save(body["state"])
    elif damage == "counterexample outside":  # a consistent file whose pair lies far outside the domain
        from faircert.checkpoint import pack

        x = np.full((1, 5), -1e300)
        shard["region"]["cex"] = [pack(x), pack(x), pack(np.array([0])), pack(np.array([1]))]
        shard["region"]["cex_found"] = max(1, shard["region"]["cex_found"])
        Checkpoint(path, "network-boxes", body["identity"]).save(body["state"])
    elif damage in ("negative count", "count missing"):  # consistent files with a counter out of bounds, or none
        if damage == "negative count":
            shard["region"]["counts"]["cuts"] = -1
        else:
            del shard["region"]["counts"]["boxes_bounded"]
        Checkpoint(path, "network-boxes", body["identity"]).save(body["state"])
    elif damage == "version":
        body["version"] = 1
        path.write_text(json.dumps(body))
    else:  # written by another release of faircert
        body["faircert"] = "0.0.9"
        path.write_text(json.dumps(body))
    message = {
        "digest": "digest",
        "truncated": "JSON|json",
        "boxes outside": "do not fit",
        "credits beyond a box": "do not fit",
        "split feature off the domain": "do not fit",
        "counterexample outside": "do not fit",
        "negative count": "malformed .*cuts",
        "count missing": "malformed .*boxes_bounded",
        "version": "version 1",
        "release": "written by faircert 0.0.9; this is faircert",
    }[damage]
    with pytest.raises(PropertyError, match=message):
        _verify(net, dom, resume=path, max_boxes=600)


def test_other_engines_refuse_checkpoints(tmp_path):
    from sklearn.linear_model import LogisticRegression

    _, dom = large_case()
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(dom.lower, dom.upper, size=(200, len(dom))), columns=dom.names)
    model = LogisticRegression(max_iter=2000).fit(X, X["a"] > 100)
    with pytest.raises(PropertyError, match=r"this run \(linear-exact\) starts afresh"):
        _verify(model, dom, checkpoint=tmp_path / "c", time_limit=5)


@pytest.mark.slow
def test_a_killed_command_resumes_to_the_uninterrupted_answer(tmp_path):
    """SIGKILL at eight moments of a box-budget run, each then resumed: the same JSON answer."""
    from faircert.models.io.nnet import save_nnet

    net, dom = large_case()
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
        "--epsilon",
        "a=2",
        "--workers",
        "1",
        "--max-boxes",
        "60000",
        "--time-limit",
        "600",
        "--quiet",
    ]
    whole = tmp_path / "whole.json"
    subprocess.run(base + ["--json", str(whole)], check=False, timeout=300)
    expected = json.loads(whole.read_text())
    resumed_after_kill = 0
    for k, after in enumerate(np.linspace(1.2, 4.5, 8)):
        path = tmp_path / f"run{k}.ckpt"
        killed = killed_after(base + ["--checkpoint", str(path), "--checkpoint-every", "0.05"], after)
        resumed = tmp_path / f"resumed{k}.json"
        resumed_after_kill += killed and path.exists()
        code = rerun(base, path, resumed)
        got = json.loads(resumed.read_text())
        assert code in (0, 1, 2)
        for key in ("certified", "falsified", "undecided", "counterexamples"):
            assert got[key] == expected[key], (k, after, key)
    assert resumed_after_kill >= 4  # most kills hit a run part way, after a checkpoint
