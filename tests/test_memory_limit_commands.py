"""`--budget memory=` (`--memory-limit`) on `group`, `compare`, `program` and `explain`: a tiny limit
ends the run at once, far below its time limit, with a sound partial result (its bounds hold the
answer of an unlimited run), says `memory limit` in the result and its JSON, and the command
exits 2 (undecided)."""

from __future__ import annotations

import json
import time

import joblib
import numpy as np
import pandas as pd
import pytest
from program_examples import FIG1

import faircert
from faircert.cli import main
from faircert.memory import MIN_BYTES, STOPPED
from faircert.models.linear import LinearModel

#: a time limit no run here comes near, and the wall time a run stopped by its memory limit keeps
#: (a run that ignored the limit would take the whole time limit; margins for a busy machine)
TIME_LIMIT = 60
QUICK_S = 15


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A forest that reads the protected s, a linear model beside it, their data, and their files."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(2)
    n = 600
    frame = pd.DataFrame(
        {"s": rng.integers(0, 2, n), "x": rng.normal(0, 1, n), "y": rng.normal(0, 1, n), "z": rng.integers(0, 4, n)}
    )
    label = (frame.x + 0.5 * frame.s + rng.normal(0, 0.5, n) > 0).astype(int)
    forest = RandomForestClassifier(n_estimators=20, max_depth=6, random_state=0).fit(frame, label)
    linear = LinearModel.plain([0.1, 1.0, 0.2, -0.1], -0.1, ["s", "x", "y", "z"])
    path = tmp_path_factory.mktemp("memcap")
    joblib.dump(forest, path / "forest.pkl")
    (path / "linear.json").write_text(json.dumps(linear.to_dict()))
    frame.to_csv(path / "data.csv", index=False)
    return frame, forest, linear, path


def _quick(run):
    """The run's result and that it returned far below its time limit."""
    started = time.perf_counter()
    result = run()
    assert time.perf_counter() - started < QUICK_S
    return result


def _cli(argv: list[str], out) -> dict:
    """The command's JSON, after asserting it exits 2 (undecided)."""
    assert main([*argv, "--time-limit", str(TIME_LIMIT), "--budget", "memory=2KiB", "--json", str(out), "--quiet"]) == 2
    return json.loads(out.read_text())


def _contains(limited, whole) -> None:
    """Every group's bounds under the limit hold the unlimited run's bounds."""
    for part, full in zip(limited.groups, whole.groups):
        assert part.group == full.group and part.low <= full.low + 1e-12 and full.high <= part.high + 1e-12


def test_group_stops_at_the_limit_with_sound_rates(case, tmp_path):
    frame, forest, _, path = case
    asked = {"protected": "s", "population": "independent", "time_limit": TIME_LIMIT}
    whole = faircert.group(forest, frame, **asked)
    assert whole.stats["stopped"] == "converged" and whole.verdict == "unfair"
    limited = _quick(lambda: faircert.group(forest, frame, memory_limit=MIN_BYTES, **asked))
    assert limited.stats["stopped"] == STOPPED == limited.stopped and limited.stats["memory_limited"]
    assert limited.verdict == "unknown" and limited.exit_code == 2 and limited.estimate is None
    assert limited.engine == whole.engine == "tree-population-group"
    _contains(limited, whole)
    assert max(g.high - g.low for g in limited.groups) > 0.1  # stopped short, not converged
    argv = ["group", str(path / "forest.pkl"), "--trust-pickle", "--data", str(path / "data.csv")]
    out = _quick(lambda: _cli([*argv, "--protected", "s", "--population", "independent"], tmp_path / "g.json"))
    assert out["stats"]["stopped"] == STOPPED and out["stopped"] == STOPPED


def test_compare_stops_every_model_at_the_limit(case, tmp_path):
    frame, forest, linear, path = case
    models = {"forest": forest, "linear": linear}
    asked = {"population": "independent", "time_limit": TIME_LIMIT}
    whole = faircert.compare(models, frame, "s", **asked)
    limited = _quick(lambda: faircert.compare(models, frame, "s", memory_limit=MIN_BYTES, **asked))
    assert limited.verdict == "unknown" and limited.exit_code == 2
    assert limited.stopped == STOPPED and whole.stopped == "done"
    for part, full in zip(limited.results, whole.results):
        assert part.stats["stopped"] == STOPPED == part.stopped and full.stats["stopped"] == "converged"
        _contains(part, full)
    assert all(line.endswith(f"(stopped: {STOPPED})") for line in str(limited).splitlines()[1:])
    argv = ["compare", str(path / "forest.pkl"), str(path / "linear.json"), "--trust-pickle"]
    argv += ["--data", str(path / "data.csv"), "--protected", "s", "--population", "independent"]
    out = _quick(lambda: _cli(argv, tmp_path / "c.json"))
    assert [m["stats"]["stopped"] for m in out["models"]] == [STOPPED, STOPPED] and out["stopped"] == STOPPED


def test_program_stops_at_the_limit_with_sound_bounds(tmp_path):
    program = tmp_path / "fig1.fr"
    program.write_text(FIG1)
    whole = faircert.verify_program(program, time_limit=TIME_LIMIT, workers=1)
    assert whole.stopped == "" and whole.verdict != "unknown"
    limited = _quick(lambda: faircert.verify_program(program, time_limit=TIME_LIMIT, workers=1, memory_limit=MIN_BYTES))
    assert limited.stopped == STOPPED and limited.verdict == "unknown" and limited.exit_code == 2
    assert limited.ratio_low <= whole.ratio_low and whole.ratio_high <= limited.ratio_high
    for name, (low, high) in limited.probabilities.items():
        full_low, full_high = whole.probabilities[name]
        assert low <= full_low + 1e-12 and full_high <= high + 1e-12
    out = _quick(lambda: _cli(["program", str(program), "--workers", "1"], tmp_path / "p.json"))
    assert out["stopped"] == STOPPED


def test_explain_stops_at_the_limit_with_its_rows_undecided(case, tmp_path):
    frame, forest, _, path = case
    whole = faircert.explain(forest, frame, "s", time_limit=TIME_LIMIT)
    assert whole.unknown_rows == 0 and whole.unfair_rows > 0
    limited = _quick(lambda: faircert.explain(forest, frame, "s", time_limit=TIME_LIMIT, memory_limit=MIN_BYTES))
    assert limited.stats["stopped"] == STOPPED and limited.exit_code == 2
    # sound: a row is called unfair only where the unlimited run found it unfair, and the rest are open
    assert limited.unfair_rows + limited.unknown_rows == len(frame) and limited.unfair_rows <= whole.unfair_rows
    assert f"unknown left out (stopped: {STOPPED})" in str(limited)
    argv = ["explain", str(path / "forest.pkl"), "--trust-pickle", "--data", str(path / "data.csv")]
    out = _quick(lambda: _cli([*argv, "--protected", "s"], tmp_path / "e.json"))
    assert out["stats"]["stopped"] == STOPPED and out["unknown_rows"] > 0


def test_explain_under_a_domain_population_stops_at_the_limit(case):
    """The drawn points' audit and the boxes both stop at the limit; the boxes' proven shares stay
    below the unlimited run's (which decides the whole domain)."""
    from faircert.models.network import ReluNetwork

    frame = case[0]
    net = ReluNetwork(
        [
            np.array([[0.3, 0.8, -0.5, 0.2], [1.0, -0.4, 0.6, 0.3], [-0.2, 0.5, 0.9, -0.6]]),
            np.array([[1.0, -1.0, 0.5]]),
        ],
        [np.array([0.1, -0.2, 0.0]), np.array([-0.1])],
        input_names=["s", "x", "y", "z"],
    )
    asked = {"population": "independent", "time_limit": TIME_LIMIT, "workers": 1}
    whole = faircert.explain(net, frame, "s", **asked)
    assert whole.stats["undecided"] == 0 and whole.stats["proven_unfair"] > 0 and "stopped" not in whole.stats
    limited = _quick(lambda: faircert.explain(net, frame, "s", memory_limit=MIN_BYTES, **asked))
    assert limited.stats["stopped"] == STOPPED and limited.stats["undecided"] > 0
    # the points stay undecided, but the whole domain's re-checked counterexamples prove it unfair
    assert limited.stats["counterexamples"] > 0 and limited.exit_code == 1
    assert limited.stats["proven_unfair"] <= whole.stats["proven_unfair"] + 1e-12
    assert limited.stats["certified"] <= whole.stats["certified"] + 1e-12
    assert limited.stats["boxes_verified"] == 1  # the whole domain's only: no box after the limit


@pytest.mark.parametrize(
    "command", ["verify", "audit", "group", "compare", "program", "explain", "sample-counterexamples"]
)
def test_every_help_gives_the_memory_limit_exit_code_of_the_table(command, capsys):
    """Exit 2 is "undecided" in the exit-code table: a run that had already proven or refuted its
    answer when the limit stopped it exits 0 or 1, and the help says so."""
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "memory=BYTES" in text and "--memory-limit" not in text  # the former flag stays hidden
    assert (
        "reaching it ends the run at once with its sound partial result (stopped: memory limit; exit 2, "
        "undecided, unless it had already proven or refuted the answer)" in text
    )
