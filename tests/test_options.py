"""Options are typed and checked once: the API and the CLI build the same frozen dataclasses and
get the same one-line errors."""

from __future__ import annotations

import dataclasses

import pytest

from faircert import PropertyError, verify
from faircert.cli import main
from faircert.options import (
    GroupOptions,
    GroupQuestion,
    ProgramOptions,
    ProgramQuestion,
    VerifyOptions,
)

BAD = [
    (VerifyOptions, {"time_limit": 0}, "time limit must be a positive number of seconds"),
    (VerifyOptions, {"time_limit": float("nan")}, "time limit must be a positive number of seconds"),
    (VerifyOptions, {"target_undecided": 1.5}, "target undecided share must lie in [0, 1]"),
    (VerifyOptions, {"confidence": 1.0}, "confidence must lie strictly between 0 and 1"),
    (VerifyOptions, {"seed": -1}, "seed must be an integer >= 0"),
    (VerifyOptions, {"max_counterexamples": 2.5}, "max counterexamples must be an integer >= 0"),
    (GroupOptions, {"method": "exact"}, "unknown method 'exact'"),
    (GroupOptions, {"delta": 0.0}, "delta must lie strictly between 0 and 1"),
    (ProgramOptions, {"bound": "chernoff"}, "unknown bound 'chernoff'"),
    (ProgramOptions, {"ratio_width": -1.0}, "ratio width must be a positive number"),
    (ProgramOptions, {"tolerance": float("inf")}, "tolerance must be a positive number"),
]


@pytest.mark.parametrize("cls, kwargs, message", BAD)
def test_bad_options_are_one_clear_error(cls, kwargs, message):
    with pytest.raises(PropertyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cls(**kwargs)


def test_options_are_frozen_and_normalised():
    options = VerifyOptions(time_limit=5)
    assert options.time_limit == 5.0 and isinstance(options.time_limit, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 3  # type: ignore[misc]
    assert VerifyOptions(time_limit=None).time_limit is None


def test_questions_check_their_own_values():
    with pytest.raises(PropertyError, match="the DI threshold must lie in"):
        GroupQuestion(population=None, protected=("sex",), threshold=1.2)
    with pytest.raises(PropertyError, match="the SP gap threshold must lie in"):
        GroupQuestion(population=None, protected=("sex",), gap_thresholds={"sp": -0.1})
    with pytest.raises(PropertyError, match="needs a probability query"):
        ProgramQuestion(above=0.5)


def test_api_and_cli_share_one_validation_path(tmp_path, capsys):
    """The same bad value gets the same message from Python and from the command line, before any
    model is read (the model path does not exist)."""
    missing = str(tmp_path / "no-such-model.nnet")
    with pytest.raises(PropertyError) as api_error:
        verify(missing, confidence=1.5)
    assert main(["verify", missing, "--confidence", "1.5"]) == 3
    assert f"faircert: error: {api_error.value}" in capsys.readouterr().err
    assert main(["group", missing, "--method", "sampling", "--delta", "2"]) == 3
    assert "delta must lie strictly between 0 and 1" in capsys.readouterr().err
    assert main(["program", missing, "--above", "0.3"]) == 3
    assert "needs a probability query" in capsys.readouterr().err


def test_options_and_the_keywords_they_hold_are_not_given_together(tmp_path):
    import numpy as np
    import pandas as pd

    import faircert
    from faircert.domain import Domain, Feature
    from faircert.models.linear import ColumnEncoding, LinearModel

    model = LinearModel(np.array([1.0, -0.5]), -0.2, (ColumnEncoding("s"), ColumnEncoding("x")))
    dom = Domain((Feature("s", "binary"), Feature("x", "integer", 0, 9)))
    with pytest.raises(PropertyError, match=r"give options= or the keywords it holds \(time_limit, seed\)"):
        verify(model, dom, protected="s", time_limit=5, seed=3, options=VerifyOptions(time_limit=9))
    # keywords left at their defaults beside options= are no clash; options= is what runs
    res = verify(model, dom, protected="s", options=VerifyOptions(time_limit=9, max_counterexamples=1))
    assert len(res.counterexamples) <= 1 and res.undecided == 0
    frame = pd.DataFrame({"s": [0, 1, 0, 1], "x": [1, 2, 3, 4]})
    with pytest.raises(PropertyError, match=r"\(checkpoint\)"):
        faircert.group(model, frame, protected="s", checkpoint=tmp_path / "c.json", options=GroupOptions())
    with pytest.raises(PropertyError, match=r"\(delta\)"):
        faircert.verify_program("x = gaussian(0, 1)", delta=0.01, options=ProgramOptions())


# ----- defaults are written once: in the options and question classes -----------------------------
ENTRY_POINTS = [
    ("verify", (VerifyOptions,)),
    ("group", (GroupOptions, GroupQuestion)),
    ("verify_program", (ProgramOptions, ProgramQuestion)),
]
#: where an entry point's default is its own on purpose
OWN_DEFAULTS = {("demo", "time_limit"), ("sample", "time_limit"), ("sample", "n")}


def _class_defaults(classes) -> dict:
    return {
        f.name: f.default for cls in classes for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


@pytest.mark.parametrize("name, classes", ENTRY_POINTS)
def test_the_api_takes_its_defaults_from_the_options(name, classes):
    """The options' fields are keywords declared once (never re-spelled with a default of their
    own); the question's parameters in the signature take their defaults from the question class."""
    import inspect

    import faircert
    from faircert.requests import keywords

    declared = {
        "verify": keywords.VerifyKeywords,
        "group": keywords.GroupKeywords,
        "verify_program": keywords.ProgramKeywords,
    }[name].__optional_keys__
    options, *question = classes
    fields = {f.name for f in dataclasses.fields(options)}
    params = inspect.signature(getattr(faircert, name)).parameters
    assert fields <= declared and not fields & set(params)
    defaults = _class_defaults(question)
    shared = [p for p in params if p in defaults]
    assert len(shared) >= (2 if question else 0)
    for p in shared:
        assert params[p].default == defaults[p], p


@pytest.mark.parametrize(
    "command, classes",
    [
        ("verify", (VerifyOptions,)),
        ("group", (GroupOptions, GroupQuestion)),
        ("program", (ProgramOptions, ProgramQuestion)),
    ],
)
def test_the_cli_takes_its_defaults_from_the_options(command, classes):
    from faircert.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    defaults = _class_defaults(classes)
    checked = 0
    for action in sub._actions:
        if action.dest in defaults and action.default is not None and (command, action.dest) not in OWN_DEFAULTS:
            given = defaults[action.dest]
            want = ",".join(given) if isinstance(given, tuple) else given
            assert action.default == want, action.dest
            if isinstance(want, float) and action.help and "(default" in action.help:  # the help says it
                assert f"default {want:g}" in action.help, action.dest
            checked += 1
    # the knobs gathered in --budget and --learn are not passed unless given: the options' own defaults hold
    assert checked >= 3
