"""The torch backend of the network bounds: its kernels equal numpy's on random networks and boxes
(ReLU, smooth units, input tables, no hidden layer), a box-budgeted refinement gives numpy's shares,
boxes and counterexamples, and a device that cannot be used is one clear error. The CUDA tests
skip without a device."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from boxes_oracle import random_network
from test_network_parallel import large_case, shares

import faircert
from faircert.engines.network import arrays
from faircert.engines.network.arrays import Backend, BackendError
from faircert.engines.network.symbolic import TwinNet, bound_twins
from faircert.errors import FaircertError, PropertyError
from faircert.models.activations import Activation
from faircert.models.io.nnet import save_nnet
from faircert.models.network import ReluNetwork
from faircert.options import VerifyOptions

torch = pytest.importorskip("torch")
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]
FIELDS = ("lower", "upper", "sens", "score", "form_a", "form_c")


def _twins(rng, act: str | None, sizes=(6, 16, 12, 8, 1), twins=3) -> TwinNet:
    ws = [rng.normal(size=(b, a)) for a, b in zip(sizes[:-1], sizes[1:])]
    bs = [rng.normal(size=b) for b in sizes[1:]]
    acts = {} if act is None else {"activations": (Activation(act),) * (len(sizes) - 2)}
    combos = np.arange(twins, dtype=np.float64)[:, None]
    return TwinNet.build(ReluNetwork(ws, bs, **acts), list(range(sizes[0] - 1)), [sizes[0] - 1], combos)


def _boxes(rng, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    lo = rng.uniform(-1.5, 1.0, size=(n, d))
    return lo, lo + rng.uniform(0.0, 1.0, size=(n, d)) * rng.integers(0, 2, size=(n, d))  # some widths 0


def _same_bounds(net: TwinNet, lo: np.ndarray, hi: np.ndarray, device: str, tight: bool) -> None:
    be = Backend(device)
    want = bound_twins(net, lo, hi, tight)
    got = bound_twins(net.to(be.put), be.put(lo), be.put(hi), tight).to_numpy()
    for name in FIELDS:
        a, b = getattr(want, name), getattr(got, name)
        assert a.shape == b.shape, name
        if net.relu_only:
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=name)
        else:  # a smooth unit's lines bisect for a root: a bound that rounds differently by 1e-16
            # may flip a bisection step, moving a line within the bisection's resolution (2^-24)
            np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10, err_msg=name)
            assert np.mean(np.isclose(b, a, rtol=1e-12, atol=1e-12)) >= 0.99, name
    if not net.tables:  # and they hold the logits of points in the boxes
        for t in (0.0, 0.5, 1.0):
            z = net.logits(lo + t * (hi - lo))
            assert np.all(z >= got.lower - 1e-9) and np.all(z <= got.upper + 1e-9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", [None, "tanh", "sigmoid", "gelu", "silu", "elu"])
@pytest.mark.parametrize("tight", [False, True])
def test_bounds_and_logits_equal_numpys(device, act, tight):
    rng = np.random.default_rng(7)
    net = _twins(rng, act)
    lo, hi = _boxes(rng, 120, 5)
    _same_bounds(net, lo, hi, device, tight)
    be = Backend(device)
    x = rng.uniform(-2, 2, size=(50, 5))
    np.testing.assert_allclose(arrays.to_numpy(net.to(be.put).logits(be.put(x))), net.logits(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_a_network_without_hidden_layers_bounds_as_numpy(device):
    rng = np.random.default_rng(2)
    net = _twins(rng, None, sizes=(4, 1), twins=2)
    _same_bounds(net, *_boxes(rng, 30, 3), device, False)


@pytest.mark.parametrize("device", DEVICES)
def test_bounds_through_input_tables_equal_numpys(device):
    pytest.importorskip("sklearn")
    from test_input_tables import _fitted

    from faircert.data import infer_domain
    from faircert.models.binding import bind_to_domain
    from faircert.models.io import load_model

    model, df = _fitted(0)
    net, dom = bind_to_domain(load_model(model), infer_domain(df), keep={"sex"})
    p = dom.names.index("sex")
    free = [j for j in range(len(dom)) if j != p]
    tn = TwinNet.build(net, free, [p], np.array([[0.0], [1.0]]), lookups=True)
    assert tn.tables
    rng = np.random.default_rng(3)
    sizes = np.array([dom.features[j].size for j in free])
    starts = np.array([dom.features[j].min for j in free])
    lo = np.floor(rng.random((80, len(free))) * sizes)
    hi = np.minimum(lo + np.floor(rng.random(lo.shape) * sizes), sizes - 1)
    for tight in (False, True):
        _same_bounds(tn, lo + starts, hi + starts, device, tight)
    be = Backend(device)
    x = lo + starts
    np.testing.assert_allclose(arrays.to_numpy(tn.to(be.put).logits(be.put(x))), tn.logits(x), rtol=1e-12, atol=1e-12)


def _undecided_bounds(seed: int, n: int = 300):
    """Bounds (full CROWN) of random small boxes of a random twin network (three twins, a heavy
    protected weight) over integer and real features, with the boxes' ranges and the features'
    kinds."""
    rng = np.random.default_rng(seed)
    sizes = (6, 16, 12, 1)
    ws = [rng.normal(size=(b, a)) for a, b in zip(sizes[:-1], sizes[1:])]
    ws[0][:, -1] *= 4.0
    net = TwinNet.build(
        ReluNetwork(ws, [rng.normal(size=b) for b in sizes[1:]]), list(range(5)), [5], np.arange(3.0)[:, None]
    )
    discrete = np.array([True, False, True, True, False])
    lo = rng.uniform(-2.0, 1.0, size=(n, 5))
    hi = lo + rng.uniform(0.0, 0.4, size=(n, 5))
    lo[:, discrete], hi[:, discrete] = np.floor(lo[:, discrete]), np.ceil(hi[:, discrete])
    return net, bound_twins(net, lo, hi, True), lo, hi, discrete


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", [0, 2])
def test_cuts_and_credits_equal_numpys(device, seed):
    """Computed from bounds on the device, the cuts (slabs, sources, verdicts) and the credited
    shares are numpy's: exactly where no rounding lands on a grid, within 1e-12 otherwise."""
    from faircert.engines.network.cuts import cut_boxes
    from faircert.engines.network.tail import decided_shares

    net, bd, lo, hi, discrete = _undecided_bounds(seed)
    be = Backend(device)
    on = bound_twins(net.to(be.put), be.put(lo), be.put(hi), True)
    rows = np.arange(0, len(lo), 2)
    want = cut_boxes(bd, rows, lo[rows], hi[rows], discrete, 1e-9)
    got = cut_boxes(on, be.put(rows), be.put(lo[rows]), be.put(hi[rows]), be.put(discrete), 1e-9).to_numpy()
    assert want.cut.sum() > 10 and len(want.src) > 20  # cuts were made
    assert type(got.lo) is np.ndarray
    for name in ("src", "fair", "unfair", "cut"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    np.testing.assert_allclose(got.lo, want.lo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.hi, want.hi, rtol=1e-12, atol=1e-12)
    wf, wu = decided_shares(bd.form_a[:, rows], bd.form_c[:, rows], lo[rows], hi[rows], discrete, 1e-9)
    at = be.put(rows)
    gf, gu = decided_shares(
        on.form_a[:, at], on.form_c[:, at], be.put(lo[rows]), be.put(hi[rows]), be.put(discrete), 1e-9
    )
    assert (wf > 0).sum() > 10 and (wu > 0).sum() > 0  # fair and unfair shares were credited
    np.testing.assert_allclose(arrays.to_numpy(gf), wf, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(arrays.to_numpy(gu), wu, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_split_features_equal_numpys(device):
    """Each undecided box's split feature, chosen on the device: the highest weight x width among
    the features that can be split, the widest where every weight is 0, none for a point."""
    from faircert.engines.network.problem import Problem
    from faircert.engines.network.settle import BoxSettler
    from faircert.properties import individual_fairness

    net, dom = large_case()
    pb_numpy = Problem.build(net, individual_fairness(dom, [dom.names.index("p")]), None)
    pb = Problem.build(net, individual_fairness(dom, [dom.names.index("p")]), device)
    rng = np.random.default_rng(4)
    n = 200
    lo = np.floor(pb.lo + rng.random((n, pb.d)) * (pb.hi - pb.lo + 1))
    hi = np.minimum(lo + np.floor(rng.random((n, pb.d)) * 4), pb.hi)
    hi[:5] = lo[:5]  # points: nothing to split
    sens = rng.random((n, pb.d)) * (rng.random((n, pb.d)) < 0.7)
    sens[5:15] = 0.0  # no weight: the widest feature
    want = BoxSettler(pb_numpy, 16, 32, False, 0)._split_features(sens, lo, hi, pb.discrete)
    be = pb.backend
    got = BoxSettler(pb, 16, 32, False, 0)._split_features(be.put(sens), be.put(lo), be.put(hi), be.put(pb.discrete))
    assert all(type(v).__module__.startswith("torch") for v in got)  # they stay on the device
    got = tuple(arrays.to_numpy(v) for v in got)
    np.testing.assert_array_equal(got[0][want[1]], want[0][want[1]])
    np.testing.assert_array_equal(got[1], want[1])
    assert not want[1][:5].any() and want[1][5:].all()
    widest = np.argmax((hi - lo) / np.maximum(pb.hi - pb.lo, 1e-300), axis=1)
    np.testing.assert_array_equal(want[0][5:15], widest[5:15])
    score = np.where(hi - lo > 0, sens * (hi - lo), -1.0)
    rest = np.arange(15, n)[(score[15:] > 0).any(axis=1)]
    np.testing.assert_array_equal(want[0][rest], np.argmax(score[rest], axis=1))


@pytest.mark.parametrize("device", DEVICES)
def test_keyed_draws_and_probe_points_are_numpys_bit_for_bit(device, monkeypatch):
    """Box keys (in blocks too), probe keys, two calls' draws and the probes' points, computed in
    torch's int64 on the device, are numpy's uint64 results bit for bit (extreme seeds and
    coordinates included: the sign bit set, negative zero, large and tiny magnitudes)."""
    from faircert.engines.network import draws
    from faircert.engines.network.draws import BoxDraws, box_keys, probe_keys
    from faircert.engines.network.sampling import random_points

    be = Backend(device)
    rng = np.random.default_rng(5)
    lo = np.floor(rng.uniform(-1e6, 1e6, size=(90, 4)))
    lo[:3] = [[-0.0, 1e-300, -1e300, 2.0**62], [0.0, -7.5, 3.25, 1.0], [5.0, 5.0, 5.0, 5.0]]
    hi = lo + np.floor(rng.uniform(0, 50, size=lo.shape))
    discrete = np.array([True, False, True, False])
    monkeypatch.setattr(draws, "KEY_ROWS", 32)  # three blocks, the last short
    for seed in (0, 7, 2**63 + 11, -1):
        keys = box_keys(seed, lo, hi)
        on = box_keys(seed, be.put(lo), be.put(hi))
        assert keys.dtype == np.uint64 and len(set(keys.tolist())) == len(keys)
        np.testing.assert_array_equal(arrays.to_numpy(on).view(np.uint64), keys)
        want, got = BoxDraws(probe_keys(keys)), BoxDraws(probe_keys(on))
        big_lo, big_hi = np.tile(lo, (4, 1)), np.tile(hi, (4, 1))
        for _ in range(2):
            x = random_points(want, big_lo, big_hi, discrete)
            y = random_points(got, be.put(big_lo), be.put(big_hi), be.put(discrete))
            np.testing.assert_array_equal(arrays.to_numpy(y).view(np.uint64), x.view(np.uint64))
        np.testing.assert_array_equal(arrays.to_numpy(got.random((len(on) * 4, 3))), want.random((len(keys) * 4, 3)))


def _verify(device, **options):
    net, dom = large_case()
    options.setdefault("time_limit", 60)  # the box budget ends the run first
    options.setdefault("max_boxes", 3000)
    return faircert.verify(net, dom, protected="p", workers=1, device=device, **options)


@pytest.mark.parametrize("device", DEVICES)
def test_a_box_budgeted_run_gives_numpys_shares_and_evidence(small_chunks, device):
    want, got = _verify(None), _verify(device)
    assert 0 < want.undecided < 1 and want.falsified > 0  # a run with something left to decide
    assert shares(got) == shares(want)
    for key in ("boxes_bounded", "boxes_examined", "cuts", "counterexamples_found"):
        assert got.stats[key] == want.stats[key], key
    assert [(c.x, c.x_prime) for c in got.counterexamples] == [(c.x, c.x_prime) for c in want.counterexamples]


def test_a_device_run_resumes_into_numpys_answer(tmp_path, small_chunks):
    """The checkpoint holds numpy arrays: a run stopped on the device resumes on numpy (and back)."""
    path = tmp_path / "run.ckpt"
    whole = _verify(None)
    _verify("cpu", max_boxes=1000, checkpoint=path)
    resumed = _verify(None, resume=path)
    assert shares(resumed) == shares(whole)
    assert resumed.stats["boxes_examined"] == whole.stats["boxes_examined"]


def test_device_memory_over_the_limit_stops_the_refinement(small_chunks, monkeypatch):
    whole = _verify(None)
    monkeypatch.setattr(Backend, "memory_used", lambda self: 0 if self.numpy else 1 << 50)  # as a full GPU's
    res = _verify("cpu", memory_limit="1G")
    assert res.stats["memory_limited"] and res.stopped == "memory limit"
    assert res.stats["boxes_examined"] < whole.stats["boxes_examined"]
    assert res.undecided > whole.undecided and res.certified + res.falsified + res.undecided == pytest.approx(1.0)


def test_a_cuda_step_is_as_many_boxes_as_fit_half_the_memory_limit():
    from faircert.engines.network.problem import Problem
    from faircert.engines.network.refine import DEVICE_STEP_BOXES, device_step
    from faircert.properties import individual_fairness

    net, dom = large_case()  # 6 inputs (one protected, two twins), widths 16, 12, 1
    pb = Problem.build(net, individual_fairness(dom, [dom.names.index("p")]))
    forms = 5 * 2 * 6 * 16  # FORM_COPIES x twins x (free inputs + 1) x widest
    crown = 4 * 2 * 2 * 16 * 12  # CROWN_COPIES x 2 x twins x largest product of consecutive widths
    assert device_step(pb, False, 2 * 8 * forms * 1000) == 1000
    assert device_step(pb, True, 2 * 8 * (forms + crown) * 1000) == 1000
    assert device_step(pb, True, 1 << 40) == DEVICE_STEP_BOXES and device_step(pb, True, 1000) == 16


def test_a_device_that_cannot_be_used_is_one_clear_error(monkeypatch):
    with pytest.raises(PropertyError, match="device must be one of cpu, cuda"):
        VerifyOptions(device="gpu")
    if not CUDA:
        with pytest.raises(BackendError, match="torch sees no CUDA device"):
            Backend("cuda")
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(BackendError, match=r"needs torch: pip install 'faircert\[torch\]'"):
        Backend("cpu")


def test_device_on_ray_or_another_engine_is_refused():
    net, dom = large_case()
    with pytest.raises(FaircertError, match="--device bounds on this machine's processes: leave out --ray"):
        faircert.verify(net, dom, protected="p", ray_address="local", max_boxes=100, device="cpu")
    with pytest.raises(PropertyError, match=r"\(network-boxes\); this question goes to network-complete"):
        faircert.verify(net, dom, protected="p", complete=True, time_limit=5, device="cpu")


@pytest.mark.skipif(CUDA, reason="checks the error without a CUDA device")
def test_the_command_says_no_cuda_in_one_line_and_exits_3(tmp_path):
    nnet = tmp_path / "net.nnet"
    save_nnet(random_network(np.random.default_rng(0), 3, [4]), nnet)
    cmd = [sys.executable, "-m", "faircert", "verify", str(nnet), "--protected", "x2", "--device", "cuda", "--quiet"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3
    assert out.stderr.strip().splitlines() == ["faircert: error: device 'cuda': torch sees no CUDA device here"]
