"""Checkpoint and resume of the per-row audit: a killed run, resumed, ends where an uninterrupted
one does; another model, rows or question, or a damaged file, is refused in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from boxes_oracle import random_network
from test_rows import DOM, EPS, _rows

from faircert.checkpoint import Checkpoint, fingerprint
from faircert.engines.registry import find_engine
from faircert.errors import PropertyError
from faircert.options import VerifyOptions
from faircert.properties import RowAudit, individual_fairness


def _audit(eps=EPS, n: int = 900, seed: int = 6):
    net = random_network(np.random.default_rng(3), 4, [8, 6])
    return net, RowAudit(individual_fairness(DOM, "s", epsilon=eps), _rows(n, seed=seed), fingerprint(net))


def _run(net, question, **options):
    return find_engine(net, question).run(net, question, VerifyOptions(**options), None)


def test_a_resumed_audit_equals_an_uninterrupted_one(tmp_path):
    net, question = _audit()
    path = tmp_path / "audit.ckpt"
    whole = _run(net, question, checkpoint=str(path))
    state = json.loads(path.read_text())
    chunked = state["state"]["rows"]
    assert state["format"] == "faircert-checkpoint" and len(chunked) > 100
    # a run killed half way: only part of the chunked rows were saved
    Checkpoint(path, "rows", state["identity"]).save({"rows": chunked[: len(chunked) // 2]})
    resumed = _run(net, question, resume=str(path))
    assert resumed.verdicts == whole.verdicts and resumed.twins == whole.twins and resumed.methods == whole.methods
    assert len(json.loads(path.read_text())["state"]["rows"]) == len(chunked)  # it kept writing to the same file


def test_resuming_with_another_model_rows_or_question_is_refused(tmp_path):
    net, question = _audit()
    path = tmp_path / "audit.ckpt"
    _run(net, question, checkpoint=str(path))
    other_net = random_network(np.random.default_rng(4), 4, [8, 6])
    other = RowAudit(question.prop, question.rows, fingerprint(other_net))
    with pytest.raises(PropertyError, match="written for another model"):
        _run(other_net, other, resume=str(path))
    _, fewer = _audit(n=800)
    with pytest.raises(PropertyError, match="written for another rows"):
        _run(net, fewer, resume=str(path))
    _, wider = _audit(eps={"a": 1, "b": 1})
    with pytest.raises(PropertyError, match="written for another question"):
        _run(net, wider, resume=str(path))


@pytest.mark.parametrize("damage", ["", "{", '{"format": "x"}', "bad row", "changed row"])
def test_damaged_checkpoints_are_refused_in_one_line(tmp_path, damage):
    net, question = _audit(n=50)
    path = tmp_path / "bad.ckpt"
    path.write_text(damage)
    message = "JSON|json|not a faircert checkpoint"
    if damage == "bad row":  # right identity and digest, a malformed row entry
        Checkpoint(path, "rows", _identity(question)).save({"rows": [[0, "maybe", "", None]]})
        message = "malformed row entry"
    elif damage == "changed row":  # a verdict edited by hand
        Checkpoint(path, "rows", _identity(question)).save({"rows": [[0, "fair", "bounds", None]]})
        path.write_text(path.read_text().replace('"fair"', '"unfair"'))
        message = "digest"
    with pytest.raises(PropertyError, match=message):
        _run(net, question, resume=str(path))
    with pytest.raises(PropertyError, match="not found"):
        _run(net, question, resume=str(tmp_path / "missing.ckpt"))


def _identity(question):
    from faircert.engines.rows.audit import _checkpoint

    return _checkpoint(question, VerifyOptions(checkpoint="x")).identity


@pytest.mark.slow
def test_a_killed_command_resumes_to_the_uninterrupted_answer(tmp_path):
    """SIGKILL at whatever point the run has reached, then --resume: the same verdicts and twins."""
    pytest.importorskip("sklearn")
    import joblib
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame({"sex": rng.integers(0, 2, n), "age": rng.integers(18, 70, n), "hours": rng.integers(1, 80, n)})
    y = ((df.age / 50 + df.hours / 60 + 0.3 * df.sex + rng.normal(0, 0.3, n)) > 1.4).astype(int)
    joblib.dump(MLPClassifier((16,), max_iter=300, random_state=0).fit(df, y), tmp_path / "m.pkl")
    df.to_csv(tmp_path / "rows.csv", index=False)
    base = [
        sys.executable,
        "-m",
        "faircert",
        "audit",
        str(tmp_path / "m.pkl"),
        str(tmp_path / "rows.csv"),
        "--protected",
        "sex",
        "--trust-pickle",
        "--epsilon",
        "age=3,hours=4",
        "--workers",
        "1",
        "--quiet",
    ]
    whole = tmp_path / "whole.json"
    subprocess.run(base + ["--json", str(whole)], check=False, timeout=300)
    path = tmp_path / "run.ckpt"
    child = subprocess.Popen(base + ["--checkpoint", str(path), "--checkpoint-every", "0.05"])
    deadline = time.monotonic() + 120
    while not path.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    killed = child.poll() is None
    if killed:
        os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    saved = len(json.loads(path.read_text())["state"]["rows"])
    resumed = tmp_path / "resumed.json"
    code = subprocess.run(base + ["--resume", str(path), "--json", str(resumed)], check=False, timeout=300).returncode
    a, b = json.loads(whole.read_text()), json.loads(resumed.read_text())
    assert code in (0, 1) and a["counts"] == b["counts"]
    assert a["row_verdicts"] == b["row_verdicts"] and a["unfair"] == b["unfair"]
    assert killed and 0 < saved < b["rows"]  # it was killed part way, after a checkpoint


def test_checkpoint_intervals_out_of_range_are_refused(tmp_path):
    with pytest.raises(PropertyError, match="checkpoint interval"):
        VerifyOptions(checkpoint=str(tmp_path / "c"), checkpoint_every=0)


def test_a_costly_checkpoint_is_written_less_often(tmp_path):
    """Checkpoints take at most 5% of a run: after a save of 1 s the next is due in 20 s, not in `every`."""
    from faircert.checkpoint import MAX_SHARE, Checkpoint

    c = Checkpoint(tmp_path / "c.json", "k", {"m": "1"}, every=0.001)
    c.save({"x": 1}, started=time.perf_counter() - 1.0)  # gathering the state took a second
    time.sleep(0.01)
    assert MAX_SHARE == 0.05 and not c.due() and 1.0 <= c.save_s < 2.0
    c._last -= 25.0
    assert c.due()
