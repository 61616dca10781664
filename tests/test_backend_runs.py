"""Whole runs on the torch backend (torch on the CPU standing in for a GPU; the CUDA cases skip
without a device): box-budgeted refinements of several small networks give numpy's shares, boxes
and counterexamples; a run checkpointed on the device resumes there to the uninterrupted answer
(stopped at a level, or killed); the per-row audit's verdicts, methods and twins are numpy's."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from boxes_oracle import random_network
from killing import killed_after_checkpoint, rerun
from test_network_parallel import large_case, shares
from test_network_population import raw_pipeline

import faircert
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.engines.registry import find_engine
from faircert.errors import PropertyError
from faircert.models.activations import Activation
from faircert.options import AuditOptions
from faircert.properties import RowAudit, individual_fairness

torch = pytest.importorskip("torch")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]

#: Adult-like: an integer age, a protected sex and race, categorical and integer features
MIXED = Domain(
    (
        Feature("age", "integer", 17, 90),
        Feature("sex", "binary", 0, 1),
        Feature("race", "categorical", 0, 4),
        Feature("edu", "categorical", 0, 15),
        Feature("hours", "integer", 1, 99),
        Feature("gain", "integer", 0, 20),
    )
)


def _cases():
    """(network, domain, protected, epsilon): a deep ReLU pyramid over a mixed grid with two
    protected features (ten twins), the same with epsilon, a tanh network over real features."""
    rng = np.random.default_rng(11)
    deep = random_network(rng, 6, [24, 16, 8], scale=0.4)
    smooth = random_network(np.random.default_rng(6), 4, [12, 8], scale=2.0)
    smooth.activations = (Activation("tanh"),) * 2
    real = Domain(
        (
            Feature("s", "binary", 0, 1),
            Feature("u", "real", -1.0, 1.0),
            Feature("v", "real", -1.0, 1.0),
            Feature("w", "real", 0.0, 2.0),
        )
    )
    return {
        "deep-mixed": (deep, MIXED, ["sex", "race"], None),
        "deep-mixed-eps": (deep, MIXED, ["sex"], {"age": 2, "hours": 3}),
        "tanh-real": (smooth, real, ["s"], None),
    }


def _same(a, b) -> None:
    assert shares(a) == shares(b)
    for key in ("boxes_bounded", "boxes_examined", "cuts", "counterexamples_found"):
        assert a.stats[key] == b.stats[key], key
    assert [(c.x, c.x_prime) for c in a.counterexamples] == [(c.x, c.x_prime) for c in b.counterexamples]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(_cases()))
def test_box_budgeted_shares_equal_numpys_on_several_networks(small_chunks, case, device):
    net, dom, protected, eps = _cases()[case]

    def run(dev):
        return faircert.verify(
            net, dom, protected=protected, epsilon=eps, workers=1, max_boxes=1500, time_limit=120, device=dev
        )

    want, got = run(None), run(device)
    assert 0 < want.undecided < 1 and want.stats["boxes_examined"] >= 1500
    _same(want, got)
    assert got.stats.get("stopped") == want.stats.get("stopped")


def _verify(device, **options):
    net, dom = large_case()
    options.setdefault("time_limit", 60)  # the box budget ends the run first
    options.setdefault("workers", 1)
    return faircert.verify(net, dom, protected="p", device=device, **options)


@pytest.mark.parametrize("stop", [1, 1000])
def test_a_run_checkpointed_on_the_device_resumes_there_to_the_uninterrupted_answer(tmp_path, small_chunks, stop):
    path = tmp_path / "run.ckpt"
    whole = _verify("cpu", max_boxes=3000)
    part = _verify("cpu", max_boxes=stop, checkpoint=path)
    assert part.stats["boxes_examined"] < whole.stats["boxes_examined"] and part.stats["checkpoints"] >= 1
    resumed = _verify("cpu", max_boxes=3000, resume=path)
    _same(whole, resumed)
    _same(whole, _verify(None, max_boxes=3000))  # and numpy's


@pytest.mark.slow
def test_a_killed_device_command_resumes_to_the_uninterrupted_answer(tmp_path):
    """SIGKILL part way through a box-budget run on torch-CPU, then resumed: the same JSON answer."""
    from faircert.models.io.nnet import save_nnet

    net, dom = large_case()
    save_nnet(net, tmp_path / "net.nnet")
    dom.save(tmp_path / "dom.json")
    base = [sys.executable, "-m", "faircert", "verify", str(tmp_path / "net.nnet"), "--domain"]
    base += [str(tmp_path / "dom.json"), "--protected", "p", "--epsilon", "a=2", "--device", "cpu"]
    base += ["--max-boxes", "15000", "--time-limit", "600", "--quiet"]
    whole = tmp_path / "whole.json"
    assert rerun(base, tmp_path / "none.ckpt", whole) in (0, 1, 2)
    expected = json.loads(whole.read_text())
    path = tmp_path / "run.ckpt"
    assert killed_after_checkpoint(base + ["--checkpoint", str(path), "--checkpoint-every", "0.05"], path, 0.5)
    resumed = tmp_path / "resumed.json"
    assert rerun(base, path, resumed) in (0, 1, 2)
    got = json.loads(resumed.read_text())
    for key in ("certified", "falsified", "undecided", "counterexamples"):
        assert got[key] == expected[key], key


def _rows_question(smooth: bool):
    dom = Domain((Feature("x0", "binary", 0, 1), Feature("x1", "real", -2.0, 2.0), Feature("x2", "integer", 0, 9)))
    net = random_network(np.random.default_rng(7), 3, [16, 12])
    if smooth:
        net.activations = (Activation("sigmoid"),) * 2
    rng = np.random.default_rng(1)
    rows = np.stack([rng.integers(0, 2, 120), rng.uniform(-2, 2, 120), rng.integers(0, 10, 120)], axis=1)
    return net, RowAudit(individual_fairness(dom, "x0", epsilon={"x1": 0.8, "x2": 2}), rows)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("smooth", [False, True])
def test_per_row_audit_verdicts_equal_numpys(device, smooth):
    """Bounds, search and MILP (ReLU) or splitting (sigmoid): the same verdicts, methods, twins."""
    net, question = _rows_question(smooth)

    def run(dev):
        return find_engine(net, question).run(net, question, AuditOptions(workers=1, device=dev), None)

    want, got = run(None), run(device)
    assert want.counts()["unknown"] == 0 and "bounds" in want.methods
    assert got.verdicts == want.verdicts and got.methods == want.methods and got.twins == want.twins


def test_audit_takes_device_for_networks_only(tmp_path, capsys):
    import pandas as pd

    from faircert.models.io.nnet import save_nnet

    net, question = _rows_question(False)
    save_nnet(net, tmp_path / "net.nnet")
    dom = question.prop.domain
    dom.save(tmp_path / "dom.json")
    pd.DataFrame(question.rows, columns=dom.names).to_csv(tmp_path / "rows.csv", index=False)
    args = ["audit", str(tmp_path / "net.nnet"), str(tmp_path / "rows.csv"), "--domain", str(tmp_path / "dom.json")]
    args += ["--protected", "x0", "--epsilon", "x1=0.8", "--quiet", "--json", str(tmp_path / "out.json")]
    code = main(args + ["--device", "cpu"])
    got = json.loads((tmp_path / "out.json").read_text())
    assert main(args) == code
    assert json.loads((tmp_path / "out.json").read_text())["counts"] == got["counts"]
    with pytest.raises(PropertyError, match=r"--device bounds a network's rows \(rows-network\)"):
        faircert.audit(_Always(), question.rows, dom, protected="x0", device="cpu")


class _Always:
    """A classifier no IR holds (audited as a black box)."""

    classes_ = np.array([0, 1])

    def predict(self, X):
        return np.ones(len(X), dtype=int)


def test_on_a_device_the_bounds_stay_there(small_chunks, monkeypatch):
    """The verdicts of a step's boxes are taken on the device, only the undecided boxes' bounds
    are kept there, and what is computed from them (split features, cuts, credits) is computed
    there: no bounds come to the host."""
    from faircert.engines.network.settle import BoxSettler
    from faircert.engines.network.symbolic import TwinBounds

    seen, to_host = [], []
    real = BoxSettler._decided

    def spy(self, bd, own):
        out = real(self, bd, own)
        fair, unfair, _, kept, held = out
        seen.append((len(fair), int((~(fair | unfair)).sum()), kept.lower.shape[0], type(kept.form_a), held))
        return out

    monkeypatch.setattr(BoxSettler, "_decided", spy)
    monkeypatch.setattr(TwinBounds, "to_numpy", lambda self: to_host.append(1))
    res = _verify("cpu", max_boxes=3000)
    assert all(n == kept and kind is torch.Tensor and len(held) == n for _, n, kept, kind, held in seen)
    bounded, kept = sum(s[0] for s in seen), sum(s[2] for s in seen)
    assert bounded == res.stats["boxes_bounded"] and 0 < kept < bounded
    assert res.stats["cuts"] > 0 and res.stats["credited_fair"] > 0
    assert not to_host
    assert shares(res) == shares(_verify(None, max_boxes=3000))


@needs_cuda
def test_a_cuda_runs_memory_counts_its_own_peak_not_an_earlier_ones(small_chunks):
    """A run after a larger one on the same device is not stopped by the earlier run's peak."""
    big = torch.empty(1 << 28, dtype=torch.float64, device="cuda")  # 2 GiB, then freed
    del big
    res = _verify("cuda", max_boxes=3000, memory_limit="1G")
    assert not res.stats.get("memory_limited")


@pytest.mark.parametrize("device", [None, "cpu"])
def test_the_open_boxes_are_kept_compactly_and_exactly(small_chunks, device):
    """Integer features' coordinates as offsets on their grid (1 or 2 bytes), real ones as float64:
    half the bytes of the raw rows here, decoded to the same boxes."""
    from faircert.engines.network.refine import Refinement

    net, dom = large_case()  # free: a 0..200, b -50..50, c real, d 0..300, e real
    run = Refinement(net, individual_fairness(dom, [dom.names.index("p")]), 0, None, device=device)
    run.refine(60.0, max_boxes=2000)
    codec = run.shard.frontier.codec
    assert codec.bytes_per_box == 2 * (1 + 1 + 8 + 2 + 8) < 16 * 5
    lo, hi = run.open_boxes()[:2]
    assert len(lo) == run.totals.open_boxes > 0
    back = codec.decode(codec.encode(lo, hi))
    assert np.array_equal(back[0], lo) and np.array_equal(back[1], hi)
    assert np.all(lo[:, [0, 1, 3]] == np.round(lo[:, [0, 1, 3]]))


def test_a_pipeline_under_independent_marginals_on_the_device_gives_numpys_shares(small_chunks):
    """A scikit-learn Pipeline trained on raw columns (one-hot names, scaled numbers), measured
    under the data's independent marginals: the probes are then the data's values, drawn on the
    host, and the device run's shares, boxes and counterexamples are numpy's."""
    model, df = raw_pipeline(60, 40, 9, (16, 8))

    def run(device):
        return faircert.verify(
            model, df, protected="sex", population="independent", data=df, workers=1, max_boxes=600, time_limit=120,
            device=device,
        )  # fmt: skip

    want, got = run(None), run("cpu")
    assert want.engine == got.engine == "network-boxes"
    assert want.falsified > 0 and want.certified > 0  # both kinds of boxes decided
    _same(got, want)


class _Threads:
    """A job that says how many threads torch computes with in its worker."""

    def threads(self) -> int:
        return torch.get_num_threads()


def test_device_workers_are_spawned_and_share_the_cores():
    from faircert.engines.boxes.workers import Workers, usable_cores

    with Workers(_Threads(), 2, spawn=True) as pool:
        assert pool.each("threads", [(), ()]) == [max(1, usable_cores() // 2)] * 2


@pytest.mark.parametrize("device", DEVICES)
def test_workers_on_the_device_give_one_processs_shares_and_evidence(small_chunks, device, monkeypatch):
    """Two spawned workers refining on the device (on a GPU, sharing it), boxes often moved
    between them within levels: the shares, boxes and counterexamples of numpy in one process (the
    levels make them independent of how the boxes were dealt). The hand-over itself is pinned,
    clock aside, by `test_resident`'s shard test."""
    from faircert.engines.boxes import shards

    monkeypatch.setattr(shards, "MIN_MOVED", 1)  # a worker done with its level takes boxes at once,
    monkeypatch.setattr(shards, "SLICE_S", 0.02)  # and the workers are often asked
    want, got = _verify(None, max_boxes=3000), _verify(device, max_boxes=3000, workers=2)
    assert got.stats["workers"] == 2 and 0 < want.undecided < 1
    assert shares(got) == shares(want)
    for key in ("boxes_bounded", "boxes_examined", "cuts", "counterexamples_found"):
        assert got.stats[key] == want.stats[key], key
    assert {(tuple(c.x), tuple(c.x_prime)) for c in got.counterexamples} <= {
        (tuple(c.x), tuple(c.x_prime)) for c in _verify(None, max_boxes=3000, max_counterexamples=10**4).counterexamples
    }


def test_a_run_checkpointed_on_device_workers_resumes_in_one_numpy_process(tmp_path, small_chunks):
    """The workers' shards are gathered into the checkpoint as the host's records: a run stopped
    on two device workers resumes in one numpy process to the uninterrupted answer."""
    path = tmp_path / "run.ckpt"
    whole = _verify(None, max_boxes=3000)
    part = _verify("cpu", max_boxes=1000, workers=2, checkpoint=path)
    assert part.stats["workers"] == 2 and part.stats["checkpoints"] >= 1
    assert part.stats["boxes_examined"] < whole.stats["boxes_examined"]
    _same(whole, _verify(None, max_boxes=3000, resume=path))


def test_the_per_row_audit_on_device_workers_gives_numpys_verdicts():
    net, question = _rows_question(False)

    def run(dev, workers):
        return find_engine(net, question).run(net, question, AuditOptions(workers=workers, device=dev), None)

    want, got = run(None, 1), run("cpu", 2)
    assert want.counts()["fair"] > 0 and want.counts()["unfair"] > 0
    assert got.verdicts == want.verdicts and got.methods == want.methods and got.twins == want.twins
