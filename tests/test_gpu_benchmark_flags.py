"""`benchmarks/gpu.py`'s flags: a bad value is a one-line usage error (exit 2) before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu  # noqa: E402


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "--jobs: must be above 0"),
        (["--jobs", "two"], "--jobs: not a number"),
        (["--cap", "-5"], "--cap: must be above 0"),
        (["--max-boxes", "0"], "--max-boxes: must be above 0"),
        (["--wide-steps", "lots"], "--wide-steps: memory limit must be a number of bytes"),
        (["--long", "AC-99:240"], "--long: unknown model 'AC-99'"),
        (["--long", "AC-5:soon"], "--long: not a number"),
        (["--long", "AC-5:240:0"], "--long: must be above 0"),
        (["--long", "AC-5:240:many"], "--long: not a number"),
        (["--models", "AC-3,XX-1"], "--models: unknown XX-1"),
    ],
)
def test_a_bad_flag_is_a_usage_error(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        gpu.main([*args, "--out", str(tmp_path / "gpu")])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing measured, nothing written


def test_good_flags_are_read_as_numbers_and_pairs():
    assert gpu._positive(int)("8") == 8 and gpu._positive(float)("240") == 240.0
    assert gpu._model_seconds("AC-5:240") == ("AC-5", 240.0, 1)
    assert gpu._model_seconds("AC-5:240:8") == ("AC-5", 240.0, 8)  # on 8 workers
    assert gpu._memory("2G") == 2 * 10**9
