"""A CatBoost file with a CTR over a combination of columns: a black box CatBoost scores in a child
process, answered by the black-box engines with the reason; a broken file or child is one error."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.cli import main
from faircert.errors import ModelFormatError, UnsupportedModelError
from faircert.models.io.catboost import CatBoostFile, load_catboost

catboost = pytest.importorskip("catboost")


@pytest.fixture(scope="module")
def combined(tmp_path_factory):
    """A model whose CTRs read pairs of columns, saved as .cbm and as JSON, and its data."""
    rng = np.random.default_rng(0)
    n = 1500
    frame = pd.DataFrame(
        {
            "a": rng.integers(18, 60, n),
            "c": rng.choice(list("vwxyz"), n),
            "s": rng.choice(["Female", "Male"], n),
            "e": rng.choice(["HS", "BSc", "MSc"], n),
        }
    )
    y = ((frame.c.map(ord) * 7 + frame.e.str.len() * 3) % 5 < 2) | ((frame.s == "Male") & (frame.a > 40))
    model = catboost.CatBoostClassifier(
        iterations=20,
        depth=4,
        verbose=0,
        random_seed=0,
        thread_count=1,
        allow_writing_files=False,
        cat_features=["c", "s", "e"],
        one_hot_max_size=1,
        max_ctr_complexity=2,
    ).fit(frame, y.astype(int))
    folder = tmp_path_factory.mktemp("combined")
    model.save_model(str(folder / "m.cbm"))
    model.save_model(str(folder / "m.json"), format="json")
    frame.to_csv(folder / "d.csv", index=False)
    return model, frame, folder


def test_the_refusal_offers_the_file_as_a_black_box_scored_by_catboost(combined):
    model, frame, folder = combined
    for name in ("m.cbm", "m.json"):
        with pytest.raises(UnsupportedModelError, match="combination of 2 features") as refused:
            load_catboost(folder / name)
        box = refused.value.black_box
        assert isinstance(box, CatBoostFile) and box.feature_names_in_ == ["a", "c", "s", "e"]
        box.BATCH = 700  # three requests to one child
        assert np.array_equal(box.predict(frame), model.predict(frame))
        box.close()


def test_verify_audit_and_group_on_the_file_give_the_black_box_engines(combined):
    model, frame, folder = combined
    path = folder / "m.cbm"
    result = faircert.verify(path, frame, "s", time_limit=20, seed=0)
    assert result.engine == "blackbox-sampling" and "combination" in result.stats["black_box"]
    assert result.certified == 0.0 and result.undecided == 1.0  # a black box is never proven fair
    assert result.statistical is not None and result.statistical.samples > 0
    assert 0.0 < result.statistical.ci_low <= result.statistical.ci_high < 1.0
    assert "black box" in result.model and "combination" in result.model
    for c in result.counterexamples[:5]:  # each pair labelled differently by CatBoost itself
        pair = pd.DataFrame([c.x, c.x_prime], columns=result.feature_names)
        assert len(set(model.predict(_raw(pair, frame)))) == 2

    grouped = faircert.group(path, data=frame, protected="s", time_limit=20)
    assert grouped.engine == "blackbox-empirical" and "combination" in grouped.stats["black_box"]
    rates = model.predict(frame).astype(bool)
    by_sex = {g: rates[(frame.s == g).to_numpy()].mean() for g in ("Female", "Male")}
    assert all(g.low == g.high for g in grouped.groups)  # every row decided: the model's own rates
    assert {g.group["s"]: g.low for g in grouped.groups} == pytest.approx(by_sex, abs=1e-12)


def _raw(codes: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Domain codes back to raw values (categories by name, sorted as an inferred domain sorts them)."""
    out = codes.copy()
    for c in ("c", "s", "e"):
        out[c] = [sorted(frame[c].unique())[int(v)] for v in codes[c]]
    return out[list(frame.columns)]


def test_per_row_verdicts_equal_brute_force_over_each_ball(combined):
    model, frame, folder = combined
    rows = frame.head(60)
    result = faircert.audit(folder / "m.cbm", rows, domain=frame, protected="s", epsilon={"a": 2}, time_limit=30)
    assert result.engine == "rows-blackbox" and "combination" in result.stats["black_box"]
    lo, hi = frame.a.min(), frame.a.max()
    expected = []
    for _, row in rows.iterrows():  # a twin takes the other protected value, a within 2 (in the domain)
        other = "Male" if row.s == "Female" else "Female"
        twins = [dict(row, a=a, s=other) for a in range(max(lo, row.a - 2), min(hi, row.a + 2) + 1)]
        labels = model.predict(pd.DataFrame([dict(row)] + twins)[list(frame.columns)])
        expected.append("fair" if len(set(labels)) == 1 else "unfair")
    assert list(result.verdicts) == expected and "unfair" in expected and "fair" in expected


def test_the_cli_says_why_the_file_is_a_black_box(combined, capsys):
    _, _, folder = combined
    given = ["verify", str(folder / "m.json"), "--domain", str(folder / "d.csv"), "--protected", "s"]
    assert main([*given, "--time-limit", "5"]) == 1  # counterexamples found
    captured = capsys.readouterr()
    printed = " ".join((captured.out + captured.err).split())
    assert "m.json (CatBoost, black box: CTR over a combination of 2 features" in printed
    out_json = folder / "v.json"
    main([*given, "--time-limit", "5", "--json", str(out_json)])
    assert "combination" in json.loads(out_json.read_text())["stats"]["black_box"]
    assert main(["audit", str(folder / "m.cbm"), str(folder / "d.csv"), "--protected", "s"]) == 1
    captured = capsys.readouterr()
    assert "black box: " in captured.out + captured.err and "rows-blackbox" in captured.out + captured.err


def test_a_corrupted_file_is_one_line_error(combined, tmp_path, capsys):
    _, _, folder = combined
    broken = tmp_path / "broken.cbm"
    data = (folder / "m.cbm").read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    code = main(["verify", str(broken), "--domain", str(folder / "d.csv"), "--protected", "s"])
    err = capsys.readouterr().err.strip()
    assert code == 3 and len(err.splitlines()) == 1 and "broken.cbm" in err


def test_a_child_that_dies_is_one_clear_error(combined):
    model, frame, folder = combined
    with pytest.raises(UnsupportedModelError) as refused:
        load_catboost(folder / "m.cbm")
    box = refused.value.black_box
    assert len(box.predict(frame.head(3))) == 3
    os.kill(box._child._proc.pid, signal.SIGSEGV)  # as a native crash would end it
    with pytest.raises(ModelFormatError, match="CatBoost library crashed.*SIGSEGV"):
        box.predict(frame)
    assert np.array_equal(box.predict(frame.head(50)), model.predict(frame.head(50)))  # a fresh child
    box.close()
