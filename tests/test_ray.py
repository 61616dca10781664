"""Box work on a Ray cluster: a local cluster and a two-node one on this machine give the same
shares as one process (tree ensembles and networks); a dead actor loses no chunk; an unreachable
cluster is one clear error. Skipped where Ray is not installed; slow (each cluster takes seconds
to start)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from faircert.engines.boxes.workers import Parallelism, RayWorkers
from faircert.errors import FaircertError

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def local_cluster():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": f"{TESTS}{os.pathsep}{SRC}"}},
    )
    yield
    ray.shutdown()


def _same_shares(parallel: Parallelism) -> None:
    from test_workers import _adult_like

    from faircert.engines.trees.quantify import quantify
    from faircert.engines.trees.run import TreeOptions
    from faircert.properties import individual_fairness

    ir, dom = _adult_like()
    prop = individual_fairness(dom, "s", kappa=0.5)
    for budget in (400, None):
        one = quantify(ir, prop, 120, options=TreeOptions(max_boxes=budget))
        other = quantify(ir, prop, 120, options=TreeOptions(parallel=parallel, max_boxes=budget))
        assert (one.bounds, one.unfair, one.complete) == (other.bounds, other.unfair, other.complete)


def _same_network_shares(ray_address: str) -> None:
    from test_network_parallel import large_case

    import faircert

    net, dom = large_case()
    one = faircert.verify(net, dom, "p", max_boxes=6000, max_counterexamples=10)
    other = faircert.verify(net, dom, "p", max_boxes=6000, max_counterexamples=10, workers=2, ray_address=ray_address)
    assert (one.certified, one.falsified, one.undecided) == (other.certified, other.falsified, other.undecided)
    assert one.stats["boxes_examined"] == other.stats["boxes_examined"] >= 6000
    # a non-trivial case: undecided boxes left and re-checked counterexamples found (the proven-unfair
    # share comes from growing boxes around them, which gets a share of the time, not of the boxes)
    assert 0 < one.undecided < 0.5 and one.verdict == "unfair" and one.counterexamples
    assert [c.x for c in one.counterexamples] == [c.x for c in other.counterexamples]


def test_a_local_cluster_gives_the_same_shares(local_cluster):
    _same_shares(Parallelism(workers=2, ray_address="auto"))


def test_a_local_cluster_gives_the_same_network_shares(local_cluster):
    _same_network_shares("auto")


def test_a_driver_resumed_on_the_cluster_restarts_its_workers_and_gives_the_uninterrupted_shares(
    local_cluster, tmp_path
):
    """A run checkpointed on the cluster, then continued by a new driver call on the cluster: the
    workers are started afresh (actors hold no state a checkpoint lacks) and the shares are those of
    one uninterrupted process."""
    from test_network_parallel import large_case

    import faircert

    net, dom = large_case()
    path = tmp_path / "run.ckpt"
    faircert.verify(net, dom, "p", max_boxes=3000, workers=2, ray_address="auto", checkpoint=path)
    resumed = faircert.verify(net, dom, "p", max_boxes=6000, workers=2, ray_address="auto", resume=path)
    whole = faircert.verify(net, dom, "p", max_boxes=6000, workers=1)
    assert (resumed.certified, resumed.falsified, resumed.undecided) == (
        whole.certified,
        whole.falsified,
        whole.undecided,
    )
    assert resumed.stats["workers"] == 2 and [c.x for c in resumed.counterexamples] == [
        c.x for c in whole.counterexamples
    ]


def test_a_local_cluster_gives_the_same_row_verdicts(local_cluster):
    from test_rows import _network_audit

    from faircert.engines.registry import find_engine
    from faircert.options import VerifyOptions

    net, question = _network_audit()
    one = find_engine(net, question).run(net, question, VerifyOptions(workers=1), None)
    on_ray = find_engine(net, question).run(net, question, VerifyOptions(ray_address="auto"), None)
    assert one.verdicts == on_ray.verdicts and one.twins == on_ray.twins


def test_a_dead_actor_loses_no_chunk(local_cluster, tmp_path):
    from test_workers import Squares

    with RayWorkers(Squares(tmp_path / "marker"), 2, "auto") as pool:
        assert pool.map("square", [(i,) for i in range(8)]) == [i * i for i in range(8)]
        assert pool.restarts >= 1


def test_a_dead_actor_loses_no_box_of_its_share(local_cluster, tmp_path):
    from test_shards import SIDE, Halves, _run, _totals

    out = _run(Halves(os.getpid(), tmp_path / "marker"), Parallelism(workers=2, ray_address="auto"))
    assert (tmp_path / "marker").exists() and out.workers == 2
    assert out.complete and float(out.totals.sums["settled"]) == SIDE * SIDE
    budget = _run(Halves(os.getpid(), tmp_path / "again"), Parallelism(workers=2, ray_address="auto"), 3000)
    assert _totals(budget) == _totals(_run(Halves(), max_boxes=3000))


def test_an_unreachable_cluster_is_one_clear_error():
    port = _free_port()  # nothing listens there
    with pytest.raises(FaircertError, match=f"cannot reach the Ray cluster at '127.0.0.1:{port}'"):
        Parallelism(2, f"127.0.0.1:{port}").open(object())


def test_the_command_line_says_so_in_one_line(tmp_path):
    xgb = pytest.importorskip("xgboost")
    import numpy as np

    from faircert.domain import Domain, Feature

    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, (300, 3)).astype(float)
    xgb.XGBClassifier(n_estimators=5, max_depth=2, n_jobs=1).fit(
        X, (X.sum(axis=1) > 13).astype(int)
    ).get_booster().save_model(str(tmp_path / "m.json"))
    Domain(tuple(Feature(f"f{i}", "integer", 0, 9) for i in range(3))).save(tmp_path / "d.yaml")
    port = _free_port()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "faircert",
            "verify",
            str(tmp_path / "m.json"),
            "--domain",
            str(tmp_path / "d.yaml"),
            "--protected",
            "f0",
            "--ray",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"faircert: error: cannot reach the Ray cluster at '127.0.0.1:{port}': Connection refused"
    )


@pytest.mark.skipif(
    shutil.which("ray") is None and not (Path(sys.executable).parent / "ray").exists(),
    reason="the ray command is not installed",
)
def test_a_two_node_cluster_on_this_machine_gives_the_same_shares(tmp_path):
    ray_cmd = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=f"{TESTS}{os.pathsep}{SRC}", RAY_USAGE_STATS_ENABLED="0")
    head = [
        ray_cmd,
        "start",
        "--head",
        f"--port={port}",
        "--num-cpus=1",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    node = [ray_cmd, "start", f"--address=127.0.0.1:{port}", "--num-cpus=1", "--disable-usage-stats"]
    try:
        subprocess.run(head, check=True, capture_output=True, env=env, timeout=120)
        subprocess.run(node, check=True, capture_output=True, env=env, timeout=120)
        ray.init(
            address=f"127.0.0.1:{port}",
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": f"{TESTS}{os.pathsep}{SRC}"}},
        )
        assert ray.cluster_resources().get("CPU") == 2 and len(ray.nodes()) == 2
        _same_shares(Parallelism(workers=2, ray_address="auto"))
        _same_network_shares("auto")
    finally:
        ray.shutdown()
        subprocess.run([ray_cmd, "stop", "--force"], capture_output=True, env=env, timeout=120)
