"""Fuzzing every reader: mutated small files (byte flips, truncation, numbers replaced by nan, inf,
huge, negative or zero values, lines deleted or repeated) must end in a result or a one-line
FaircertError, within a wall and memory bound.

Pure-Python readers run in this process. Readers that hand bytes to native code in this process
(ONNX's protobuf parser) run in a worker process with a memory limit, so a crash fails the test
instead of killing pytest; HDF5, XGBoost, LightGBM and CatBoost already run their native code in children of
faircert's own. The default run is a fast slice; `-m slow` runs many more examples.
"""

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import hostile_files as hf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faircert.errors import FaircertError

WORKER = Path(__file__).with_name("fuzz_worker.py")
WORKER_MEMORY = 3 * 2**30
MEMORY_GROWTH = 2**30  # in-process readers: the most one small file may add to the peak
SECONDS_PER_FILE = 20  # the bound: every file settles well within it
MESSAGE_CHARS = 2000  # a message never quotes unbounded input

MUTATIONS = st.lists(
    st.tuples(st.sampled_from(hf.MUTATION_KINDS), st.integers(0, 2**20), st.integers(0, 2**10)), min_size=1, max_size=4
)
IN_PROCESS = [
    "nnet",
    "keras",
    "xgboost_json",
    "xgboost_ubj",
    "lightgbm",
    "catboost_json",
    "catboost_categorical_json",
    "linear",
    "program",
    "domain_yaml",
    "domain_json",
    "csv",
    "rows_csv",
]
FRAMEWORKS = {
    "xgboost_json": "xgboost",
    "xgboost_ubj": "xgboost",
    "lightgbm": "lightgbm",
    "xgboost_full": "xgboost",
    "xgboost_ubj_full": "xgboost",
    "lightgbm_full": "lightgbm",
    "catboost_json": "catboost",
    "catboost_full": "catboost",
    "catboost_categorical_json": "catboost",
    "catboost_categorical_full": "catboost",
}
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
SLOW = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    """One valid file per format (formats whose framework is missing are left out)."""
    folder = tmp_path_factory.mktemp("seeds")
    out = {}
    for fmt, (_name, build, _) in hf.FORMATS.items():
        if fmt in FRAMEWORKS:
            try:
                __import__(FRAMEWORKS[fmt])
            except ImportError:
                continue
        sub = folder / fmt
        sub.mkdir()
        out[fmt] = build(sub).read_bytes()
    return out


def _check_in_process(fmt, seeds, ops, folder):
    if fmt not in seeds:
        pytest.skip(f"{FRAMEWORKS.get(fmt)} is not installed")
    name, _, read = hf.FORMATS[fmt]
    path = folder / name
    path.write_bytes(hf.mutate(seeds[fmt], ops))
    start, peak = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        read(path)
    except FaircertError as exc:
        message = str(exc)
        assert "\n" not in message.strip() and len(message) < MESSAGE_CHARS, message[:300]
    assert time.monotonic() - start < SECONDS_PER_FILE
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak  # the process's peak, in KiB on Linux
    assert grown_kib * 1024 < MEMORY_GROWTH, f"reading one small file raised peak memory by {grown_kib} KiB"


def _check_in_worker(fmt, seeds, batch, folder):
    if fmt not in seeds:
        pytest.skip(f"{FRAMEWORKS.get(fmt)} is not installed")
    name = hf.FORMATS[fmt][0]
    files = []
    for k, ops in enumerate(batch):
        path = folder / f"{k}{Path(name).suffix}"
        path.write_bytes(hf.mutate(seeds[fmt], ops))
        files.append(str(path))
    done = subprocess.run(
        [sys.executable, str(WORKER), fmt, str(WORKER_MEMORY), *files],
        capture_output=True,
        text=True,
        timeout=SECONDS_PER_FILE * len(files),
        check=False,
    )
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, f"the worker died ({done.returncode}) after {len(reports)} files: {done.stderr[-500:]}"
    for r in reports:
        assert r["outcome"] in ("ok", "error"), r
        assert "\n" not in r["message"].strip() and len(r["message"]) < MESSAGE_CHARS, r["message"][:300]
    assert len(reports) == len(files)


@pytest.mark.parametrize("fmt", IN_PROCESS)
@FAST
@given(ops=MUTATIONS)
def test_fuzz_reader(fmt, seeds, ops, tmp_path_factory):
    _check_in_process(fmt, seeds, ops, tmp_path_factory.mktemp(fmt))


@pytest.mark.parametrize("fmt", ["onnx"])
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(batch=st.lists(MUTATIONS, min_size=12, max_size=12))
def test_fuzz_native_reader_in_a_worker(fmt, seeds, batch, tmp_path_factory):
    _check_in_worker(fmt, seeds, batch, tmp_path_factory.mktemp(fmt))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", IN_PROCESS)
@SLOW
@given(ops=MUTATIONS)
def test_fuzz_reader_long(fmt, seeds, ops, tmp_path_factory):
    _check_in_process(fmt, seeds, ops, tmp_path_factory.mktemp(fmt))


@pytest.mark.slow
@pytest.mark.parametrize(
    "fmt",
    [
        "onnx",
        "keras",
        "xgboost_full",
        "xgboost_ubj_full",
        "lightgbm_full",
        "catboost_full",
        "catboost_categorical_full",
    ],
)
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(batch=st.lists(MUTATIONS, min_size=40, max_size=40))
def test_fuzz_native_reader_in_a_worker_long(fmt, seeds, batch, tmp_path_factory):
    """The whole load, framework cross-checks included, in a worker with bounded memory."""
    _check_in_worker(fmt, seeds, batch, tmp_path_factory.mktemp(fmt))
