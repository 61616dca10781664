"""The open boxes kept on the device (`resident.ResidentFrontier`): the boxes a step takes are the
host frontier's (those of largest key above the level), stored exactly as integer offsets where
every feature is an integer one, handed to the host as the host's encoded records; and a whole
refinement on the device keeps its boxes there, and its checkpoints resume on numpy."""

from __future__ import annotations

import numpy as np
import pytest
from test_network_parallel import large_case, shares

import faircert
from faircert.engines.boxes.frontier import BoxCodec, Frontier
from faircert.engines.network.arrays import Backend, to_numpy
from faircert.engines.network.resident import ResidentFrontier
from faircert.engines.network.settle import OPEN_DATA
from faircert.errors import DeviceMemoryError

torch = pytest.importorskip("torch")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
DEVICES = [None, "cpu", pytest.param("cuda", marks=needs_cuda)]
DATA = (bool, np.int64, np.float64)
LIMIT = 1 << 30  # bytes the open boxes may take


def _key(lo, hi, *data):
    """The key of the settler's kind: a per-box priority, boxes without data first."""
    if not data:
        return lo[:, 0] * 0 + 1e9
    return data[2] + 0.0


def _boxes(rng, n, dlo, dhi):
    lo = np.floor(dlo + rng.random((n, len(dlo))) * (dhi - dlo + 1))
    hi = np.minimum(lo + np.floor(rng.random(lo.shape) * 5), dhi)
    data = (rng.random(n) < 0.8, rng.integers(0, len(dlo), n), np.round(rng.random(n) * 50, 1))
    return (lo, hi) + data


def _rows(boxes) -> set:
    return {tuple(np.concatenate([a[i].ravel() for a in boxes])) for i in range(len(boxes[0]))}


@pytest.mark.parametrize("device", DEVICES)
def test_a_step_takes_the_host_frontiers_boxes(device):
    """Pushes and takes above falling levels, with limits: each take holds the boxes of largest key
    above the level, as many as the host's frontier takes, and the same boxes where that is every
    box above the level (a set: the order within a take is free)."""
    rng = np.random.default_rng(0)
    dlo, dhi = np.array([0.0, -50, 17]), np.array([200.0, 50, 90])
    codec = BoxCodec(dlo, dhi, np.ones(3, bool))
    host = Frontier(np.ones(3, bool), 64, codec, _key, 8)
    there = ResidentFrontier(64, codec, _key, Backend(device).put, DATA, LIMIT)
    assert there.code == np.int16
    for tau, limit in ((40.0, 500), (30.0, 17), (10.0, None), (0.0, 1), (10.0, None)):
        boxes = _boxes(rng, 150, dlo, dhi)
        host.push(*boxes)
        there.push(*boxes)
        held = np.concatenate([np.concatenate(a) for a in zip(*(p[4:5] for p in there.parts()))])
        assert there.count == host.count == len(held) and there.largest() == host.largest() == held.max()
        assert there.count_above(tau) == int((held > tau).sum())
        want, got = host.pop_above(tau, limit), tuple(to_numpy(a) for a in there.pop_above(tau, limit))
        assert [a.dtype for a in got] == [a.dtype for a in want] and len(got[0]) == len(want[0])
        assert np.array_equal(np.sort(got[4]), np.sort(held[held > tau])[::-1][: len(got[0])][::-1])
        if len(want[0]) < min(limit or 64, 64):  # every box above the level: the same boxes
            assert _rows(got) == _rows(want)
        assert there.count == host.count


def test_the_keys_above_a_level_are_counted_and_taken_largest_first():
    rng = np.random.default_rng(1)
    dlo, dhi = np.zeros(2), np.full(2, 9.0)
    there = ResidentFrontier(1000, BoxCodec(dlo, dhi, np.ones(2, bool)), _key, Backend("cpu").put, DATA, LIMIT)
    boxes = _boxes(rng, 300, dlo, dhi)
    there.push(*boxes)
    prio = boxes[4]
    assert there.count_above(20.0) == int((prio > 20).sum()) and there.largest() == prio.max()
    got = to_numpy(there.pop_above(20.0, 10)[4])
    assert np.array_equal(np.sort(got), np.sort(prio)[-10:])  # the ten largest
    rest = to_numpy(there.pop_above(20.0)[4])
    assert np.array_equal(np.sort(np.concatenate([got, rest])), np.sort(prio[prio > 20]))
    assert there.count == int((prio <= 20).sum()) and there.largest() == prio[prio <= 20].max()


@pytest.mark.parametrize("device", DEVICES)
def test_boxes_are_stored_exactly_and_handed_to_the_host_as_its_records(device):
    """Integer offsets in int16 (int32 for wider ranges), half the bytes of float64 rows or less;
    float64 where a feature is real; the host gets the codec's records, which push back the same."""
    rng = np.random.default_rng(2)
    put = Backend(device).put
    for dhi, code in ((np.array([200.0, 90]), np.int16), (np.array([40000.0, 90]), np.int32)):
        dlo = np.array([0.0, 17])
        codec = BoxCodec(dlo, dhi, np.ones(2, bool))
        there = ResidentFrontier(1000, codec, _key, put, DATA, LIMIT)
        boxes = _boxes(rng, 100, dlo, dhi)
        there.push(*boxes)
        assert there.code == code and there.arrays[0].dtype == getattr(torch if device else np, np.dtype(code).name)
        per_box = there.nbytes / there.keys.shape[0]  # its buffers: coordinates, data, key
        assert per_box == 2 * 2 * np.dtype(code).itemsize + 1 + 8 + 8 + 8 < 2 * 2 * 8 + 1 + 8 + 8 + 8
        entries = there.take_all()
        assert not there and there.count == 0
        back = tuple(np.concatenate(a) for a in zip(*(codec.decode(e[0]) + tuple(e[1:]) for e in entries)))
        assert _rows(back) == _rows(boxes)
        for e in entries:
            there.push_encoded(e)
        assert _rows(tuple(to_numpy(a) for a in there.pop_above(-1.0, 1000))) == _rows(boxes)
    real = BoxCodec(np.zeros(2), np.ones(2), np.array([True, False]))
    assert ResidentFrontier(64, real, _key, put, DATA, LIMIT).code is None  # a real feature: float64
    wide = BoxCodec(np.zeros(2), np.array([1.0, 3e9]), np.ones(2, bool))
    assert ResidentFrontier(64, wide, _key, put, DATA, LIMIT).code is None  # beyond int32: float64


def test_a_coordinate_off_the_grid_is_refused_not_rounded():
    codec = BoxCodec(np.zeros(2), np.full(2, 9.0), np.ones(2, bool))
    there = ResidentFrontier(64, codec, _key, Backend("cpu").put, DATA, LIMIT)
    with pytest.raises(ValueError, match="grid"):
        there.push(np.array([[0.5, 1.0]]), np.array([[2.0, 3.0]]))
    assert there.count == 0


def _verify(device, **options):
    net, dom = large_case()
    return faircert.verify(net, dom, protected="p", workers=1, device=device, time_limit=60, **options)


def test_on_a_device_the_whole_step_stays_there(small_chunks, monkeypatch):
    """Every step takes its boxes from the device and leaves its open boxes there: what comes to
    the host is what it adds up (the measures) and the evidence."""
    from faircert.engines.network.settle import BoxSettler

    seen = []
    real = BoxSettler.settle

    def spy(self, *boxes):
        step = real(self, *boxes)
        seen.append((boxes, step))
        return step

    monkeypatch.setattr(BoxSettler, "settle", spy)
    res = _verify("cpu", max_boxes=3000)
    assert len(seen) > 10
    for boxes, step in seen:
        assert all(isinstance(a, torch.Tensor) for a in boxes)
        assert all(isinstance(a, torch.Tensor) for a in step.open) or not len(step.open[0])
        assert all(isinstance(v, np.ndarray) for v in step.measures.values())
    assert shares(res) == shares(_verify(None, max_boxes=3000))


@pytest.mark.parametrize(("first", "then"), [("cpu", None), (None, "cpu")])
def test_a_checkpoint_written_on_one_backend_resumes_on_the_other(tmp_path, small_chunks, first, then):
    """The checkpoint holds the host's records whichever kept the boxes: a run stopped on the device
    resumes on numpy (and the other way round) to the uninterrupted answer."""
    path = tmp_path / "run.ckpt"
    whole = _verify(None, max_boxes=3000)
    part = _verify(first, max_boxes=1000, checkpoint=path)
    assert part.stats["boxes_examined"] < whole.stats["boxes_examined"] and part.stats["checkpoints"] >= 1
    resumed = _verify(then, max_boxes=3000, resume=path)
    assert shares(resumed) == shares(whole)
    for key in ("boxes_bounded", "boxes_examined", "cuts", "counterexamples_found"):
        assert resumed.stats[key] == whole.stats[key], key


@pytest.mark.parametrize("device", [None, "cpu"])
def test_the_buffers_grow_and_compact_without_losing_a_box(device):
    """Rounds of pushes and takes past the buffers' first size: the open boxes are always those
    pushed and not taken, and the buffers stay within 4x the most that were open with a push."""
    rng = np.random.default_rng(3)
    dlo, dhi = np.zeros(3), np.full(3, 60.0)
    there = ResidentFrontier(10_000, BoxCodec(dlo, dhi, np.ones(3, bool)), _key, Backend(device).put, DATA, LIMIT)
    held: set = set()
    peak = 0
    for k in range(25):
        boxes = _boxes(rng, 700 if k < 15 else 50, dlo, dhi)
        boxes = boxes[:4] + (boxes[4] + k * 1e-3,)  # distinct rows
        there.push(*boxes)
        held |= _rows(boxes)
        peak = max(peak, len(held))
        taken = tuple(to_numpy(a) for a in there.pop_above(rng.random() * 40, int(rng.integers(1, 500))))
        assert _rows(taken) <= held
        held -= _rows(taken)
        open_ = tuple(np.concatenate(a) for a in zip(*there.parts()))
        assert there.count == len(held) and _rows(open_) == held
        assert there.keys.shape[0] <= max(1024, 4 * peak)


def test_the_buffers_grow_within_the_memory_limit():
    """Doubling stops at the shard's memory limit: past it a push gets the rows it needs, no more
    (the shard then stops refining at its next step, as on the host)."""
    dlo, dhi = np.zeros(3), np.full(3, 60.0)
    row = 2 * 3 * 2 + 1 + 8 + 8 + 8  # int16 coordinates, the data, the key
    there = ResidentFrontier(10_000, BoxCodec(dlo, dhi, np.ones(3, bool)), _key, Backend("cpu").put, DATA, 3000 * row)
    rng = np.random.default_rng(4)
    sizes = []
    for _ in range(6):
        there.push(*_boxes(rng, 900, dlo, dhi))
        sizes.append(int(there.keys.shape[0]))
    assert sizes == [1024, 2048, 3000, 3600, 4500, 5400]  # 2x, the limit, then what the pushes need
    assert there.count == 5400 and there.nbytes == 5400 * row


def test_a_device_out_of_memory_is_a_memory_error_not_a_crash(small_chunks, monkeypatch):
    """The device's own out-of-memory error (a CUDA device holding less than the memory limit lets
    the run take) is the run's MemoryError, which the command reports as such."""
    from faircert.engines.network.settle import BoxSettler

    def full(self, *boxes):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(BoxSettler, "settle", full)
    with pytest.raises(DeviceMemoryError, match="lower --memory-limit"):
        _verify("cpu", max_boxes=3000)
    with pytest.raises(torch.cuda.OutOfMemoryError):  # on numpy the error is not the device's
        _verify(None, max_boxes=3000)


def test_a_shard_travels_to_a_worker_empty_and_keeps_its_boxes_there():
    """A worker's shard is pickled from the driver's empty one (spawned workers on a device): it
    arrives with its settler and limits, and makes its own frontier on the device."""
    import pickle

    from faircert.engines.network.refine import Refinement
    from faircert.properties import individual_fairness

    net, dom = large_case()
    run = Refinement(net, individual_fairness(dom, ["p"]), 0, None, 1 << 28, "cpu")
    shard = run.shard.fresh()
    shard.frontier.push(run.pb.lo[None].copy(), run.pb.hi[None].copy())
    assert shard.frontier.count == 1
    there = pickle.loads(pickle.dumps(shard))
    assert isinstance(there.frontier, ResidentFrontier) and there.frontier.count == 0
    assert there.limit_bytes == 1 << 28 and there.chunk == shard.chunk and there.settler.chunk == run.settler.chunk
    there.frontier.push(run.pb.lo[None].copy(), run.pb.hi[None].copy())
    assert there.frontier.count == 1 and all(isinstance(a, torch.Tensor) for a in there.frontier.arrays)


def test_a_device_step_copies_no_number_from_the_host(small_chunks, monkeypatch):
    """On a GPU a number copied from the host as a tensor waits for every kernel queued before it:
    a step's operations take numbers as they are (the same float64 results)."""
    from faircert.engines.network import arrays

    copied = []
    real = arrays.TorchOps._as.__func__

    def spy(cls, x, like):
        if not isinstance(x, torch.Tensor):
            copied.append(x)
        return real(cls, x, like)

    monkeypatch.setattr(arrays.TorchOps, "_as", classmethod(spy))
    got = _verify("cpu", max_boxes=3000)
    assert copied == []
    assert shares(got) == shares(_verify(None, max_boxes=3000))


def test_a_shard_on_the_device_gives_boxes_as_the_hosts_records():
    """A worker done with its level takes boxes from another (`shards._balance`): a shard on the
    device hands them over as the host's encoded records, which a numpy shard takes."""
    from faircert.engines.network.refine import Refinement
    from faircert.properties import individual_fairness

    net, dom = large_case()
    prop = individual_fairness(dom, ["p"])
    there = Refinement(net, prop, 0, None, 1 << 28, "cpu").shard.fresh()
    here = Refinement(net, prop, 0, None, 1 << 28, None).shard.fresh()
    pb = Refinement(net, prop, 0, None, 1 << 28, None).pb
    rng = np.random.default_rng(5)
    x = pb.lo + rng.uniform(size=(300, pb.d)) * (pb.hi - pb.lo)
    lo = np.where(pb.discrete, np.floor(x), x)
    hi = np.where(pb.discrete, np.minimum(lo + 1, pb.hi), np.minimum(lo + 0.1, pb.hi))
    there.frontier.push(lo, hi)
    entries, progress = there.give(-1.0, 120)
    assert all(isinstance(a, np.ndarray) for e in entries for a in e)
    assert sum(len(e[0]) for e in entries) == 120 and progress.open_boxes == 180
    assert here.take(entries, -1.0).open_boxes == 120
    given = _rows(tuple(np.concatenate(a) for a in zip(*(here.frontier._decoded(e) for e in entries))))
    kept = _rows(tuple(to_numpy(a) for a in there.frontier.pop_above(-1.0, 1000)))
    assert not given & kept and given | kept == _rows((lo, hi) + tuple(np.zeros(300, d) for d in OPEN_DATA))
