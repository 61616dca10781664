"""Where the proofs stop, the statistical answer leads: one JSON shape for it everywhere, reports
that put it first (labelled as statistical, the proofs labelled as proofs), and an explicit gate
for CI on it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_coverage import DOMAIN, _network, _truth

import faircert
from faircert.cli import main
from faircert.models.io.nnet import save_nnet
from faircert.properties import individual_fairness
from faircert.results.base import statistical_block

SHARED_KEYS = set(statistical_block(0.0, 0.0, 0.0, 0.9, 0, "").keys())


@pytest.fixture(scope="module")
def open_result():
    """A network run stopped after a few boxes: most of the domain undecided."""
    from faircert.engines.network import refine, settle

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(refine, "ROWS_PER_STEP", 2000)
        patch.setattr(settle, "EXACT_POINTS", 0)
        patch.setattr(settle, "EXACT_PER_INPUT", 1)
        net = _network()
        result = faircert.verify(net, DOMAIN, "s", max_boxes=6, workers=1, time_limit=None)
    return net, result


def test_a_mostly_undecided_result_leads_with_its_statistical_answer(open_result):
    net, result = open_result
    s = result.statistical
    assert result.undecided > 0.5 and result.statistical_first
    assert s.ci_low <= _truth(net, individual_fairness(DOMAIN, "s")) <= s.ci_high
    lines = str(result).splitlines()
    assert lines[3].startswith("unfair share (statistical, 99% CI, not a proof)")
    assert lines[4].startswith("proofs: certified fair")
    block = json.loads(result.to_json())["statistical"]
    assert SHARED_KEYS <= set(block)  # the shared shape, beside the names it had first
    assert (block["value"], block["low"], block["high"]) == (block["unfair"], block["ci_low"], block["ci_high"])
    from faircert.report.verify import render_result

    page = render_result(result)
    assert page.index("not a proof") < page.index("certified fair (proof)")


def test_a_decided_result_keeps_the_proofs_first():
    net = faircert.ReluNetwork([np.array([[1.0, 0.0]]), np.array([[1.0]])], [np.zeros(1), np.array([-0.5])])
    domain = faircert.Domain((faircert.Feature("a", "integer", 0, 3), faircert.Feature("s", "integer", 0, 1)))
    result = faircert.verify(net, domain, "s")
    assert result.undecided == 0 and not result.statistical_first
    assert str(result).splitlines()[3].startswith("certified fair: 100.0000%")


def test_the_statistical_gate_reads_the_interval_against_a_tolerated_share(open_result):
    _, result = open_result
    s = result.statistical
    assert result.statistical_exit_code(min(1.0, s.ci_high + 0.01)) == 0
    assert result.statistical_exit_code(max(0.0, s.ci_low - 0.01)) == 1
    assert result.statistical_exit_code(0.5 * (s.ci_low + s.ci_high)) == 2
    assert result.exit_code == 1  # the proofs' verdict is unchanged: a re-checked pair was found


def test_the_gate_on_the_command_line(tmp_path, capsys):
    save_nnet(_network(), tmp_path / "m.nnet")
    (tmp_path / "d.json").write_text(json.dumps(DOMAIN.to_dict()))
    base = ["verify", str(tmp_path / "m.nnet"), "--domain", str(tmp_path / "d.json"), "--protected", "s"]
    base += ["--time-limit", "5", "--quiet", "--workers", "1"]
    assert main(base + ["--gate-statistical", "0.99"]) == 0
    assert main(base + ["--gate-statistical", "0.001"]) == 1
    assert main(base + ["--gate-statistical", "1.5"]) == 3
    assert "--gate-statistical takes a share in [0, 1]" in capsys.readouterr().err


def test_group_estimates_carry_the_shared_block_per_rate_and_metric(monkeypatch):
    from test_group_estimate import _driven_by_one_feature

    from faircert.engines.group import estimate

    monkeypatch.setattr(estimate, "ESTIMATE_WIDTH", -1.0)  # every bound counts as wide here
    df, pipe = _driven_by_one_feature()
    result = faircert.group(pipe, df, protected="s", population="independent", time_limit=6)
    assert result.estimate is not None
    payload = json.loads(result.to_json())
    delta = result.estimate.stats["delta"]
    for g in payload["groups"]:
        block = g["statistical"]
        assert set(block) == SHARED_KEYS and block["low"] <= block["value"] <= block["high"]
        assert block["confidence"] == pytest.approx(1 - delta) and block["samples"] > 0
    assert set(payload["metrics"]["di"]["statistical"]) == SHARED_KEYS
    text = str(result)
    if result.statistical_first:
        assert text.index("statistical answer") < text.index("proofs (sound bounds)")
    else:
        assert text.index("P[yhat=1 |") < text.index("statistical answer")
    expected = {"fair": 0, "unfair": 1, "unknown": 2}[result.estimate.verdict]
    assert result.statistical_exit_code() == expected
