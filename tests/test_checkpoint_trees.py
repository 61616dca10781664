"""Checkpoint and resume of the tree-ensemble refinement ("tree-boxes"): under a box budget a run
stopped after any level (or killed at any moment) and resumed gives the uninterrupted run's shares,
boxes and counterexamples, on one process or two workers; another ensemble, domain or question, or
a changed or damaged file, is refused in one line."""

from __future__ import annotations

import base64
import json
import math
import struct
import subprocess
import sys

import numpy as np
import pytest
from killing import killed_after_checkpoint, rerun
from test_trees_dilated_parallel import _cases, _rows
from test_workers import _adult_like

import faircert
from faircert.checkpoint import Checkpoint, pack, unpack
from faircert.domain import Domain, Feature
from faircert.engines.boxes import shards
from faircert.engines.boxes.sums import ExactSum
from faircert.engines.boxes.workers import Parallelism
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.resume import checkpoint_for
from faircert.engines.trees.run import TreeOptions
from faircert.errors import PropertyError
from faircert.options import VerifyOptions

BUDGET = 2000


@pytest.fixture(scope="module")
def case():
    return _adult_like()


def _verify(ir, dom, **options):
    options.setdefault("time_limit", 20)  # a box budget ends the run first
    options.setdefault("workers", 1)
    return faircert.verify(ir, dom, protected="s", kappa=0.5, **options)


def _answer(r) -> tuple:
    return (
        r.certified,
        r.falsified,
        r.undecided,
        r.measure_lower,
        r.measure_upper,
        r.confident_size,
        r.unfair_size,
        r.stats["boxes"],
        r.stats["examined"],
        r.stats["unfair_boxes"],
        [(c.x, c.x_prime) for c in r.counterexamples],
    )


@pytest.mark.parametrize("stop", [1, 300, 1000])
def test_a_run_stopped_after_any_level_resumes_to_the_uninterrupted_answer(tmp_path, case, stop):
    ir, dom = case
    whole = _verify(ir, dom, max_boxes=BUDGET)
    assert not whole.stats["converged"]  # the budget, not the end of the refinement, stops it
    path = tmp_path / "run.ckpt"
    part = _verify(ir, dom, max_boxes=stop, checkpoint=path)
    assert part.stats["examined"] < whole.stats["examined"] and part.stats["checkpoints"] >= 1
    assert part.stats["checkpoint_s"] >= 0
    resumed = _verify(ir, dom, max_boxes=BUDGET, resume=path)
    assert _answer(resumed) == _answer(whole)
    # the resumed run kept writing to the same file: resuming its end changes nothing
    assert _answer(_verify(ir, dom, max_boxes=BUDGET, resume=path)) == _answer(whole)


def test_runs_on_two_workers_save_their_shards_and_resume_either_way(tmp_path, case):
    ir, dom = case
    whole = _verify(ir, dom, max_boxes=BUDGET)
    first, second = tmp_path / "a.ckpt", tmp_path / "b.ckpt"
    # saved at every slice while the shards are on the workers, and at the end
    part = _verify(ir, dom, max_boxes=1000, checkpoint=first, workers=2, checkpoint_every=1e-3)
    assert part.stats["workers"] == 2 and part.stats["checkpoints"] >= 2
    before = first.read_text()
    assert len(json.loads(before)["state"]["shards"]) == 3  # the driver's and each worker's
    on_one = _verify(ir, dom, max_boxes=BUDGET, resume=first, checkpoint=second)
    assert first.read_text() == before  # resumed into another file: the first one is left as it was
    on_two = _verify(ir, dom, max_boxes=BUDGET, resume=first, workers=2)
    assert _answer(on_one) == _answer(on_two) == _answer(whole)


def _ckpt(ir, prop, **options):
    return checkpoint_for(ir, prop, VerifyOptions(seed=0, **options))


def _same(one, two) -> None:
    """The same shares, counts, unfair pieces with their twin boxes, and open boxes."""
    assert (one.bounds, one.unfair, one.conf_settled, one.nonconf, one.complete) == (
        two.bounds,
        two.unfair,
        two.conf_settled,
        two.nonconf,
        two.complete,
    )
    assert one.stats["boxes"] == two.stats["boxes"] and one.stats["examined"] == two.stats["examined"]

    def region(q):
        return _rows(q.piece_lo, q.piece_hi, q.part.lo[q.piece_twin], q.part.hi[q.piece_twin])

    assert np.array_equal(region(one), region(two))
    assert np.array_equal(_rows(*one.open_boxes()), _rows(*two.open_boxes()))


@pytest.mark.parametrize("which", [0, 1])  # fairness with epsilon > 0, robustness
def test_the_epsilon_refinement_resumes_to_the_uninterrupted_answer(tmp_path, monkeypatch, which):
    pytest.importorskip("xgboost")
    monkeypatch.setattr(shards, "SEEDS_PER_WORKER", 8)  # deal out to the workers even this small a run
    name, ir, prop, budget = list(_cases())[which]
    whole = quantify(ir, prop, options=TreeOptions(method="refinement", max_boxes=budget))
    assert not whole.complete, name
    path = tmp_path / "run.ckpt"
    part = quantify(
        ir,
        prop,
        options=TreeOptions(method="refinement", max_boxes=budget // 3, checkpoint=_ckpt(ir, prop, checkpoint=path)),
    )
    assert part.stats["examined"] < whole.stats["examined"]
    # "auto" resumed from a refinement's state goes straight on with it (no region path first)
    resumed = quantify(
        ir,
        prop,
        60,
        options=TreeOptions(
            method="auto",
            max_boxes=budget,
            resume=True,
            checkpoint=_ckpt(ir, prop, resume=path, checkpoint=tmp_path / "auto.ckpt"),
        ),
    )
    _same(resumed, whole)
    on_two = quantify(
        ir,
        prop,
        options=TreeOptions(
            method="refinement",
            max_boxes=budget,
            parallel=Parallelism(2),
            resume=True,
            checkpoint=_ckpt(ir, prop, resume=path, checkpoint=tmp_path / "two.ckpt"),
        ),
    )
    _same(on_two, whole)
    assert on_two.stats["workers"] == 2


def test_a_time_limited_run_resumes_at_least_as_tight(tmp_path, case):
    ir, dom = case
    path = tmp_path / "run.ckpt"
    part = _verify(ir, dom, max_boxes=500, checkpoint=path)
    resumed = _verify(ir, dom, resume=path, time_limit=1.0)
    assert resumed.measure_lower >= part.measure_lower and resumed.measure_upper <= part.measure_upper
    assert resumed.falsified * resumed.confident_size >= part.falsified * part.confident_size


def test_another_ensemble_domain_or_question_is_refused(tmp_path, case):
    ir, dom = case
    path = tmp_path / "run.ckpt"
    _verify(ir, dom, max_boxes=300, checkpoint=path)
    other = _adult_like()[0]
    other.trees[0].value[0] += 0.25
    with pytest.raises(PropertyError, match="written for another model"):
        _verify(other, dom, resume=path, max_boxes=600)
    with pytest.raises(PropertyError, match="written for another question"):
        _verify(ir, dom, resume=path, max_boxes=600, seed=1)
    with pytest.raises(PropertyError, match="written for another question"):
        faircert.verify(ir, dom, protected="s", kappa=0.6, resume=path, max_boxes=600, workers=1)
    wider = Domain(tuple(f if f.name != "c" else Feature("c", "integer", 0, 30) for f in dom.features))
    with pytest.raises(PropertyError, match="written for another domain"):
        _verify(ir, wider, resume=path, max_boxes=600)
    with pytest.raises(PropertyError, match="checkpoint not found"):
        _verify(ir, dom, resume=tmp_path / "none.ckpt", max_boxes=600)


def _damage(path, change) -> None:
    """Change a checkpoint's state and save it again with a valid digest (a consistent, wrong file)."""
    body = json.loads(path.read_text())
    change(body["state"])
    Checkpoint(path, "tree-boxes", body["identity"]).save(body["state"])


def _edit_bytes(records: list, k: int, edit) -> None:
    """Apply `edit` to the bytes of the k-th array of records (base64 text) in place."""
    raw = bytearray(base64.b64decode(records[k]))
    edit(raw)
    records[k] = base64.b64encode(bytes(raw)).decode()


def _off_the_tables(state) -> None:
    # the epsilon-0 refinement stores a box as indices into each feature's cut positions (one byte
    # each here, lo then hi per feature): an index past every table
    _edit_bytes(state["shards"][0]["open"]["records"], 0, lambda raw: raw.__setitem__(0, 255))


def _upside_down(state) -> None:
    def edit(raw):
        raw[0], raw[1] = raw[1], raw[0]  # the first box's lower and upper ends of feature 0, swapped

    _edit_bytes(state["shards"][0]["open"]["records"], 0, edit)


DAMAGES = {
    "digest": (None, "digest"),
    "truncated": (None, "JSON|json"),
    "off the tables": (_off_the_tables, "malformed"),
    "upside down": (_upside_down, "do not fit this domain"),
    "unfair box off the tables": (
        lambda s: _edit_bytes(s["shards"][0]["region"]["records"], 0, lambda raw: raw.__setitem__(1, 255)),
        "unfair boxes are incomplete or malformed",
    ),
    "records short": (lambda s: s["shards"][0]["open"].update(boxes=s["shards"][0]["open"]["boxes"] + 1), "malformed"),
    "negative count": (lambda s: s["shards"][0].update(examined=-1), "do not fit"),
    "sum": (lambda s: s["shards"][0]["sums"]["settled"].update(whole="many"), "malformed"),
    "negative sum": (lambda s: s["shards"][0]["sums"]["unfair"].update(whole="-3"), "do not fit"),
    "level": (lambda s: s.update(tau="deep"), "malformed"),
    "refinement": (lambda s: s.update(refinement="dilated"), "written by the tree refinement 'dilated'"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_changed_or_damaged_checkpoints_are_refused(tmp_path, case, damage):
    ir, dom = case
    path = tmp_path / "run.ckpt"
    _verify(ir, dom, max_boxes=500, checkpoint=path)
    change, message = DAMAGES[damage]
    if damage == "digest":  # one number changed by hand
        body = json.loads(path.read_text())
        body["state"]["tau"] += 1.0
        path.write_text(json.dumps(body))
    elif damage == "truncated":
        path.write_text(path.read_text()[: len(path.read_text()) // 2])
    else:
        _damage(path, change)
    with pytest.raises(PropertyError, match=message) as info:
        _verify(ir, dom, resume=path, max_boxes=600)
    assert "\n" not in str(info.value)


def _move_out(which: str, k: int):
    """A change of the epsilon refinement's state (boxes stored as float64 rows lo, hi): the first
    box of `which` moved out of the domain."""

    def change(state):
        shard = state["shards"][0]
        records = shard["open"]["records"] if which == "open" else shard["region"]["pieces"]
        if which == "open":
            _edit_bytes(records, 0, lambda raw: raw.__setitem__(slice(0, 8), struct.pack("<d", -7.0)))
        else:
            rows = unpack(records[k], "f8", 5)
            rows[0, 1] = 1e6
            records[k] = pack(rows)

    return change


@pytest.mark.parametrize("damage", ["open box", "piece", "twin box", "settled flag"])
def test_damaged_checkpoints_of_the_epsilon_refinement_are_refused(tmp_path, damage):
    pytest.importorskip("xgboost")
    _, ir, prop, budget = next(iter(_cases()))
    path = tmp_path / "run.ckpt"
    quantify(
        ir,
        prop,
        options=TreeOptions(method="refinement", max_boxes=budget, checkpoint=_ckpt(ir, prop, checkpoint=path)),
    )
    if damage == "settled flag":  # per open box, one 0/1 flag per slice
        change = lambda s: _edit_bytes(s["shards"][0]["open"]["records"], 1, lambda raw: raw.__setitem__(0, 2))
    else:
        change = _move_out("open" if damage == "open box" else "pieces", 0 if damage == "piece" else 2)
    _damage(path, change)
    with pytest.raises(PropertyError, match="do not fit this domain"):
        quantify(
            ir,
            prop,
            options=TreeOptions(
                method="refinement", max_boxes=budget, checkpoint=_ckpt(ir, prop, resume=path), resume=True
            ),
        )


def test_exact_sums_round_trip_exactly():
    rng = np.random.default_rng(3)
    values = rng.random(2000) * 10.0 ** rng.integers(-12, 12, 2000)
    values[::5] = np.floor(values[::5])
    total = ExactSum()
    total.add(values)
    total.add(np.array([2.0**60, 0.1, -(2.0**60)]))
    again = ExactSum.of_state(json.loads(json.dumps(total.state())))
    assert again.state() == total.state() and float(again) == float(total)
    for s in (total, again):
        s.add(np.array([1e-300, 3.5, 1e20]))
    assert float(again) == float(total) == math.fsum(values.tolist() + [0.1, 1e-300, 3.5, 1e20])
    for bad in (
        {"whole": "0", "partials": ["inf"]},
        {"whole": "1.5", "partials": []},
        {"whole": "0"},
        {"whole": "0", "partials": ["0x1p-1"] * 101},
    ):
        with pytest.raises(ValueError):
            ExactSum.of_state(bad)


def _tree_files(folder):
    """An XGBoost ensemble (80 trees, depth 6) and its domain, saved: an epsilon-0 refinement of some
    seconds under the box budget of the test below."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.stack(
        [
            rng.integers(0, 60, 3000),
            rng.integers(0, 2, 3000),
            rng.integers(0, 40, 3000),
            rng.integers(0, 30, 3000),
            rng.integers(0, 20, 3000),
        ],
        axis=1,
    ).astype(float)
    y = ((X[:, 0] / 60 + X[:, 2] / 40 + 0.3 * X[:, 1] - X[:, 4] / 40 + rng.normal(0, 0.3, 3000)) > 1.0).astype(int)
    xgb.XGBClassifier(n_estimators=80, max_depth=6, random_state=0, n_jobs=1).fit(X, y).save_model(folder / "m.json")
    Domain(
        (
            Feature("a", "integer", 0, 59),
            Feature("s", "binary", 0, 1),
            Feature("b", "integer", 0, 39),
            Feature("c", "integer", 0, 29),
            Feature("d", "integer", 0, 19),
        )
    ).save(folder / "d.json")


@pytest.mark.slow
def test_a_killed_command_resumes_to_the_uninterrupted_answer(tmp_path):
    """SIGKILL at six random moments after the first checkpoint of a box-budget run, each then
    resumed: the same JSON answer."""
    _tree_files(tmp_path)
    base = [
        sys.executable,
        "-m",
        "faircert",
        "verify",
        str(tmp_path / "m.json"),
        "--domain",
        str(tmp_path / "d.json"),
        "--protected",
        "s",
        "--kappa",
        "0.5",
        "--workers",
        "1",
        "--max-boxes",
        "100000",
        "--time-limit",
        "600",
        "--quiet",
    ]
    whole = tmp_path / "whole.json"
    subprocess.run(base + ["--json", str(whole)], check=False, timeout=300)
    expected = json.loads(whole.read_text())
    assert expected["undecided"] > 0  # stopped by the budget
    resumed_after_kill = 0
    for k, after in enumerate(np.random.default_rng(6).uniform(0.0, 4.0, 6)):
        path = tmp_path / f"run{k}.ckpt"
        killed = killed_after_checkpoint(base + ["--checkpoint", str(path), "--checkpoint-every", "0.1"], path, after)
        resumed = tmp_path / f"resumed{k}.json"
        resumed_after_kill += killed and path.exists()
        code = rerun(base, path, resumed)
        got = json.loads(resumed.read_text())
        assert code in (0, 1, 2)
        for key in (
            "certified",
            "falsified",
            "undecided",
            "measure_lower",
            "measure_upper",
            "confident_size",
            "unfair_size",
            "counterexamples",
        ):
            assert got[key] == expected[key], (k, after, key)
        assert got["stats"]["boxes"] == expected["stats"]["boxes"], (k, after)
        assert got["stats"]["examined"] == expected["stats"]["examined"], (k, after)
    assert resumed_after_kill >= 3  # most kills hit a run part way, after a checkpoint


@pytest.mark.parametrize("time_limit", [None, 60])
def test_a_box_budget_bounds_an_auto_run_as_it_bounds_the_refinement(time_limit):
    """Under a box budget "auto" takes no region path (which has no budget and depends on the
    clock): it does the refinement's work, to the box."""
    pytest.importorskip("xgboost")
    name, ir, prop, budget = list(_cases())[0]
    refinement = quantify(ir, prop, options=TreeOptions(method="refinement", max_boxes=budget))
    auto = quantify(ir, prop, time_limit, options=TreeOptions(method="auto", max_boxes=budget))
    assert auto.stopped == refinement.stopped == "box budget" and not auto.complete
    assert budget <= auto.stats["examined"] < 4 * budget
    _same(auto, refinement)


@pytest.mark.slow
def test_a_killed_command_with_epsilon_resumes_to_the_uninterrupted_answer(tmp_path):
    """SIGKILL at random moments after the first checkpoint of a box-budget run with epsilon > 0,
    each then resumed: the same JSON answer as the uninterrupted run."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 100, (3000, 8)).astype(float)
    X[:, 0] = rng.integers(0, 4, 3000)
    y = np.sin(X[:, 1] / 9) + X[:, 2] / 50 - X[:, 3] / 70 + 0.3 * X[:, 0] + rng.normal(0, 0.5, 3000) > 0.8
    model = xgb.XGBClassifier(n_estimators=30, max_depth=4, random_state=0, n_jobs=1).fit(X, y.astype(int))
    model.save_model(tmp_path / "m.json")
    features = [Feature("p", "categorical", 0, 3)] + [Feature(f"f{i}", "integer", 0, 99) for i in range(1, 8)]
    Domain(tuple(features)).save(tmp_path / "dom.json")
    base = [
        sys.executable,
        "-m",
        "faircert",
        "verify",
        str(tmp_path / "m.json"),
        "--domain",
        str(tmp_path / "dom.json"),
    ]
    base += ["--protected", "p", "--kappa", "0.5", "--epsilon", "f1=2,f2=2", "--workers", "1", "--max-boxes", "100000"]
    base += ["--time-limit", "600", "--quiet"]
    whole = tmp_path / "whole.json"
    subprocess.run(base + ["--json", str(whole)], check=False, timeout=300)
    expected = json.loads(whole.read_text())
    assert expected["stopped"] == "box budget"
    resumed_after_kill = 0
    for k, after in enumerate(np.random.default_rng(5).uniform(0.0, 2.0, 5)):
        path = tmp_path / f"run{k}.ckpt"
        killed = killed_after_checkpoint(base + ["--checkpoint", str(path), "--checkpoint-every", "0.05"], path, after)
        resumed = tmp_path / f"resumed{k}.json"
        resumed_after_kill += killed and path.exists()
        assert rerun(base, path, resumed) in (0, 1, 2)
        got = json.loads(resumed.read_text())
        for key in ("certified", "falsified", "undecided", "counterexamples"):
            assert got[key] == expected[key], (k, after, key)
        assert got["stats"]["examined"] == expected["stats"]["examined"]
    assert resumed_after_kill >= 3  # kills that hit a run part way, after a checkpoint
