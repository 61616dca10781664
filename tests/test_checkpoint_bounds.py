"""Checkpoint and resume of the sound probability bounds (programs, and group rates of any model):
a refinement stopped after any step and resumed ends where the uninterrupted one ends; a group
question with equalized odds keeps one part per refinement; another program, population or
question, and damaged states, are refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from killing import killed_after
from program_examples import FIG1
from test_equalized_odds_populations import NET, PROGRAM

import faircert
from faircert.checkpoint import Checkpoint
from faircert.engines.boxes import budget
from faircert.errors import PropertyError


def _stop_after(monkeypatch, steps: int) -> None:
    """A stop request once the refinements have taken `steps` steps in all (as a SIGINT would)."""
    calls = iter(range(10**6))
    monkeypatch.setattr(budget, "stop_requested", lambda: next(calls) >= steps)


def _program(tmp_path, **options):
    return faircert.verify_program(FIG1, epsilon=0.1, ratio_width=2e-3, time_limit=None, workers=1, **options)


@pytest.mark.parametrize("steps", [1, 7, 20])
def test_a_program_stopped_after_any_step_resumes_to_the_uninterrupted_bounds(tmp_path, monkeypatch, steps):
    whole = _program(tmp_path)
    assert whole.stats["iterations"] > 20
    path = tmp_path / "p.json"
    with monkeypatch.context() as m:
        _stop_after(m, steps)
        part = _program(tmp_path, checkpoint=path)
    assert part.stats["iterations"] == steps and part.stats["checkpoints"] >= 1
    resumed = _program(tmp_path, resume=path)
    assert (resumed.ratio_low, resumed.ratio_high, resumed.verdict) == (
        whole.ratio_low,
        whole.ratio_high,
        whole.verdict,
    )
    assert resumed.probabilities == whole.probabilities and resumed.stats["iterations"] == whole.stats["iterations"]
    assert resumed.ratio_low >= part.ratio_low and resumed.ratio_high <= part.ratio_high  # never looser


def _group(program, **options):
    return faircert.group(
        NET,
        population=program,
        protected="sex < 1",
        label="qualified",
        metrics=["di", "sp", "eo"],
        time_limit=None,
        workers=1,
        **options,
    )


def _rates(result):
    return (
        [(g.low, g.high) for g in result.groups],
        {k: [(g.low, g.high) for g in v] for k, v in result.conditional.items()},
    )


@pytest.fixture(scope="module")
def population(tmp_path_factory):
    path = tmp_path_factory.mktemp("pop") / "pop.fr"
    path.write_text(PROGRAM)
    return path


def test_group_rates_with_label_conditions_resume_part_by_part(tmp_path, monkeypatch, population):
    whole = _group(population)
    path = tmp_path / "g.json"
    for steps in (3, 40):  # inside the first refinement, and inside a label condition's
        with monkeypatch.context() as m:
            _stop_after(m, steps)
            _group(population, checkpoint=path)
        parts = json.loads(path.read_text())["state"]["parts"]
        # a stop request ends every refinement still to come at once: each saves where it stands
        done = [p["iterations"] for p in parts.values()]
        assert done == [3, 0, 0] if steps == 3 else (len(done) == 3 and min(done) > 0 and sum(done) <= steps)
        resumed = _group(population, resume=path, checkpoint=tmp_path / "after.json")
        assert _rates(resumed) == _rates(whole)


def test_another_program_population_or_question_is_refused(tmp_path, monkeypatch, population):
    path = tmp_path / "p.json"
    with monkeypatch.context() as m:
        _stop_after(m, 3)
        _program(tmp_path, checkpoint=path)
    with pytest.raises(PropertyError, match="another model"):
        faircert.verify_program(FIG1.replace("25,100", "26,100"), epsilon=0.1, ratio_width=2e-3, resume=path)
    with pytest.raises(PropertyError, match="another question"):
        faircert.verify_program(FIG1, epsilon=0.2, ratio_width=2e-3, resume=path)
    with pytest.raises(PropertyError, match="not of 'probability-bounds'"):
        _group(population, resume=path)
    g = tmp_path / "g.json"
    with monkeypatch.context() as m:
        _stop_after(m, 3)
        _group(population, checkpoint=g)
    with pytest.raises(PropertyError, match="another question"):
        faircert.group(
            NET, population=population, protected="sex < 1", label="qualified", metrics=["di", "sp"], resume=g
        )


def test_engines_without_checkpoints_refuse_them(tmp_path):
    with pytest.raises(PropertyError, match=r"this run \(program-sequential-test\) starts afresh"):
        faircert.verify_program(FIG1, method="sampling", checkpoint=tmp_path / "c.json")


@pytest.mark.parametrize(
    "damage,message",
    [
        ("box upside down", "do not fit"),
        ("mass above one", "do not fit"),
        ("huge exponent", "malformed"),
        ("missing", "malformed"),
        ("parts", "parts are malformed"),
    ],
)
def test_damaged_states_are_refused(tmp_path, monkeypatch, damage, message):
    path = tmp_path / "p.json"
    with monkeypatch.context() as m:
        _stop_after(m, 5)
        _program(tmp_path, checkpoint=path)
    state = json.loads(path.read_text())["state"]
    part = state["parts"]["0"]
    if damage == "box upside down":
        from faircert.checkpoint import pack, unpack

        lo = unpack(part["lo"], "f8", 3)
        part["hi"] = pack(lo - 0.5)
    elif damage == "mass above one":
        part["true"][0], part["false"][0] = "3/4", "1/2"
    elif damage == "huge exponent":
        part["true"][0] = "1e999999999"
    elif damage == "missing":
        del part["iterations"]
    else:
        state["parts"] = {"0": [1, 2]}
    damaged = Checkpoint(tmp_path / "d.json", "program-bounds", json.loads(path.read_text())["identity"])
    damaged.save(state)
    with pytest.raises(PropertyError, match=message):
        _program(tmp_path, resume=tmp_path / "d.json")


@pytest.mark.slow
def test_a_killed_program_command_resumes_to_bounds_at_least_as_tight(tmp_path):
    """SIGKILL at four moments of `faircert program`, each then resumed: every resumed run ends with
    the uninterrupted run's verdict, and bounds at least as tight as the checkpoint it resumed."""
    source = tmp_path / "fig1.fr"
    source.write_text(FIG1)
    base = [
        sys.executable,
        "-m",
        "faircert",
        "program",
        str(source),
        "--epsilon",
        "0.1",
        "--ratio-width",
        "1e-4",
        "--workers",
        "1",
        "--time-limit",
        "8",
        "--quiet",
    ]
    whole = tmp_path / "whole.json"
    subprocess.run(base + ["--json", str(whole)], check=False, timeout=120)
    expected = json.loads(whole.read_text())
    resumed_after_kill = 0
    for k, after in enumerate(np.linspace(2.0, 5.0, 4)):
        path = tmp_path / f"run{k}.ckpt"
        killed = killed_after(base + ["--checkpoint", str(path), "--checkpoint-every", "0.05"], after)
        if not path.exists():
            continue
        resumed_after_kill += killed
        saved = json.loads(path.read_text())["state"]["parts"]["0"]
        out = tmp_path / f"resumed{k}.json"
        code = subprocess.run(base + ["--resume", str(path), "--json", str(out)], check=False, timeout=120).returncode
        got = json.loads(out.read_text())
        assert code == 1 and got["verdict"] == expected["verdict"] == "unfair"
        assert got["stats"]["iterations"] >= saved["iterations"]
    assert resumed_after_kill >= 2
