"""The probability-bounds refinement with its trial splits evaluated on worker processes: the same
bounds, boxes and evaluations as in one process, and still around the closed-form value."""

from __future__ import annotations

import pytest
from program_examples import FIG1, GAUSSIAN_SHIFT, GAUSSIAN_SHIFT_RATIO

import faircert
from faircert.engines.boxes.workers import Parallelism
from faircert.engines.probability.bounds import program_fairness
from faircert.errors import PropertyError


@pytest.mark.parametrize("source", [FIG1, GAUSSIAN_SHIFT])
def test_two_workers_give_the_bounds_of_one(source):
    one = program_fairness(source, epsilon=0.1, time_limit=None, ratio_width=0.02)
    two = program_fairness(source, epsilon=0.1, time_limit=None, ratio_width=0.02, parallel=Parallelism(2))
    assert (two.ratio_low, two.ratio_high, two.verdict) == (one.ratio_low, one.ratio_high, one.verdict)
    assert two.stats == one.stats and two.probabilities == one.probabilities
    assert one.ratio_high - one.ratio_low <= 0.02


def test_the_api_and_the_bounds_on_workers_bracket_the_closed_form(tmp_path):
    path = tmp_path / "shift.fr"
    path.write_text(GAUSSIAN_SHIFT)
    res = faircert.verify_program(path, epsilon=0.15, workers=2, time_limit=30)
    assert res.ratio_low <= GAUSSIAN_SHIFT_RATIO <= res.ratio_high and res.verdict == "unfair"
    with pytest.raises(PropertyError, match="workers"):
        faircert.verify_program(path, workers=0)


def test_group_bounds_on_two_workers_equal_one(tmp_path):
    """Per-group bounds of a network under a population program, with EO: the same on 2 workers."""
    from test_equalized_odds_populations import NET, PROGRAM

    path = tmp_path / "pop.fr"
    path.write_text(PROGRAM)
    kw = dict(
        population=path,
        protected="sex < 1",
        label="qualified",
        metrics=["di", "sp", "eo"],
        time_limit=None,
        gap_thresholds={"eo": 0.1},
    )
    one, two = faircert.group(NET, **kw), faircert.group(NET, workers=2, **kw)
    assert [(g.low, g.high) for g in two.groups] == [(g.low, g.high) for g in one.groups]
    assert two.metrics["eo"].low == one.metrics["eo"].low and two.verdict == one.verdict == "unfair"
    assert two.stats["box_evaluations"] == one.stats["box_evaluations"] > 0


def test_bad_worker_counts_and_budgets_are_usage_errors(tmp_path, capsys):
    from faircert.cli import main

    prog = tmp_path / "shift.fr"
    prog.write_text(GAUSSIAN_SHIFT)
    model = tmp_path / "m.json"
    model.write_text('{"weights": [1.0, -1.0], "intercept": 0.0, "features": ["a", "b"]}')
    for args in (
        ["program", str(prog), "--workers", "0"],
        ["group", str(model), "--population", str(prog), "--protected", "x <= 0", "--workers", "-2"],
        ["verify", str(model), "--complete", "--max-boxes", "10"],
    ):
        code = main(args + ["--quiet"])
        err = capsys.readouterr().err
        assert code == 3 and "Traceback" not in err, args
        assert ("workers must be an integer >= 1" in err) or ("--max-boxes budgets" in err), err
