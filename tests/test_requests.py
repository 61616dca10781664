"""The entry points' shape: keywords declared once, options or keywords (not both), the per-row
audit as its own function and command, and the old spellings as aliases that say so."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_rows import DOM, EPS, MODELS, _rows

import faircert
from faircert.cli import main
from faircert.errors import PropertyError
from faircert.models.io.nnet import save_nnet
from faircert.options import AuditOptions, VerifyOptions
from faircert.population import PopulationSpec


def _frame(n: int = 40) -> pd.DataFrame:
    rows = _rows(n)
    return pd.DataFrame({f.name: rows[:, j] for j, f in enumerate(DOM.features)})


def test_verify_with_rows_is_the_audit_and_says_so():
    model, frame = MODELS["network"][0], _frame()
    audited = faircert.audit(model, frame, DOM, protected="s", epsilon=EPS)
    with pytest.warns(FutureWarning, match="faircert.audit"):
        alias = faircert.verify(model, DOM, protected="s", rows=frame, epsilon=EPS)
    assert alias.verdicts == audited.verdicts and alias.population == "rows"
    with pytest.warns(FutureWarning):
        empirical = faircert.verify(model, DOM, protected="s", population="empirical", data=frame, epsilon=EPS)
    assert empirical.verdicts == audited.verdicts and empirical.population == "empirical"
    with pytest.warns(FutureWarning), pytest.raises(PropertyError, match="not both"):
        faircert.verify(model, DOM, protected="s", rows=frame, population="independent")


def test_keywords_are_checked_as_python_checks_them():
    model, frame = MODELS["linear"][0], _frame(5)
    with pytest.raises(TypeError, match="audit\\(\\) got an unexpected keyword argument 'complete'"):
        faircert.audit(model, frame, DOM, protected="s", complete=True)
    with pytest.raises(TypeError, match="'time_limt'"):
        faircert.verify(model, DOM, protected="s", time_limt=3)
    with pytest.raises(PropertyError, match=r"not both.*options replaces them"):
        faircert.audit(model, frame, DOM, protected="s", time_limit=5, options=AuditOptions())
    with pytest.raises(PropertyError, match="options= must be a AuditOptions"):
        faircert.audit(model, frame, DOM, protected="s", options=VerifyOptions())
    given = faircert.verify(model, DOM, protected="s", options=VerifyOptions(time_limit=5, seed=3))
    spelled = faircert.verify(model, DOM, protected="s", time_limit=5, seed=3)
    assert (given.certified, given.falsified) == (spelled.certified, spelled.falsified)


def test_the_audit_command_and_its_verify_alias_give_the_same_rows(tmp_path, capsys):
    net = MODELS["network"][0]
    save_nnet(net, tmp_path / "m.nnet")
    (tmp_path / "d.json").write_text(json.dumps(DOM.to_dict()))
    _frame().to_csv(tmp_path / "rows.csv", index=False)
    common = ["--domain", str(tmp_path / "d.json"), "--protected", "s", "--epsilon", "a=2,b=1"]
    code = main(["audit", str(tmp_path / "m.nnet"), str(tmp_path / "rows.csv"), *common, "--json", str(tmp_path / "a")])
    assert "now `faircert audit" not in capsys.readouterr().err
    alias = ["verify", str(tmp_path / "m.nnet"), "--rows", str(tmp_path / "rows.csv"), *common]
    assert main([*alias, "--json", str(tmp_path / "v")]) == code
    assert "the per-row audit is now `faircert audit MODEL DATA.csv`" in capsys.readouterr().err
    audited, aliased = (json.loads((tmp_path / n).read_text()) for n in ("a", "v"))
    assert audited["counts"] == aliased["counts"] and audited["row_verdicts"] == aliased["row_verdicts"]
    assert main(["audit", str(tmp_path / "m.nnet"), str(tmp_path / "rows.csv"), "--complete"]) == 3


def test_a_population_spec_and_its_knobs_learn_the_same_population():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 400), "age": rng.integers(18, 80, 400)})
    model = faircert.models.linear.LinearModel(
        np.array([0.8, 0.05]),
        -2.5,
        (
            faircert.models.linear.ColumnEncoding("sex", "onehot", ("M",)),
            faircert.models.linear.ColumnEncoding("age"),
        ),
    )
    spec = PopulationSpec("independent", max_bins=4, binning="width", bin_value="midpoint")
    by_spec = faircert.group(model, df, protected="sex", population=spec)
    by_knobs = faircert.group(
        model, df, protected="sex", population="independent", max_bins=4, binning="width", bin_value="midpoint"
    )
    by_default = faircert.group(model, df, protected="sex", population="independent")
    assert [g.low for g in by_spec.groups] == [g.low for g in by_knobs.groups]
    assert [g.low for g in by_spec.groups] != [g.low for g in by_default.groups]
    with pytest.raises(PropertyError, match="not both"):
        faircert.group(model, df, protected="sex", population=spec, max_bins=3)
    with pytest.raises(PropertyError, match="unknown population kind 'bayes'"):
        PopulationSpec("bayes")


def test_the_per_row_budgets_are_flags_of_the_audit_command(capsys):
    """A tree row whose ball holds more cells than `--budget cells=N` is left open, named by its
    reason; with more cells the same row is decided."""
    trees = MODELS["trees"][0]
    frame = _frame(20)
    tight = faircert.audit(trees, frame, DOM, protected="s", epsilon=EPS, max_cells=1)
    loose = faircert.audit(trees, frame, DOM, protected="s", epsilon=EPS, max_cells=10_000)
    assert "unknown" not in loose.verdicts
    opened = [i for i, v in enumerate(tight.verdicts) if v == "unknown"]
    assert opened and all("max_cells" in tight.methods[i] for i in opened)
    assert all(tight.verdicts[i] == loose.verdicts[i] for i in range(20) if i not in opened)
    assert main(["audit", "--help"]) == 0
    shown = capsys.readouterr().out
    assert all(key in shown for key in ("--budget", "cells=N", "twins=N", "milp-seconds=S"))


def test_impossible_budgets_and_rule_counts_are_one_clear_error():
    model, frame = MODELS["linear"][0], _frame(5)
    for bad in ({"max_cells": 0}, {"max_twins": -1}, {"milp_seconds": 0.0}):
        with pytest.raises(PropertyError, match="max cells|max twins|milp seconds"):
            faircert.audit(model, frame, DOM, protected="s", **bad)
    with pytest.raises(faircert.errors.FaircertError, match="rules"):
        faircert.explain(model, frame, "s", max_rules=0, domain=DOM)
    assert main(["audit", "m.nnet", "d.csv", "--max-cells", "many"]) == 3
