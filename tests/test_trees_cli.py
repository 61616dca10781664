"""The CLI on tree-ensemble model files: verify and sample-counterexamples."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from faircert import cli
from faircert.domain import Domain, Feature


@pytest.fixture(scope="module")
def xgb_model(tmp_path_factory):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.stack([rng.integers(0, 2, 800), rng.integers(0, 20, 800), rng.integers(0, 10, 800)], axis=1).astype(float)
    y = ((X[:, 1] + 4 * X[:, 0] - X[:, 2] + rng.normal(0, 3, 800)) > 10).astype(int)
    folder = tmp_path_factory.mktemp("trees")
    clf = xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    clf.save_model(folder / "m.json")
    dom = Domain((Feature("sex", "binary", 0, 1), Feature("score", "integer", 0, 19), Feature("age", "integer", 0, 9)))
    dom.save(folder / "d.yaml")
    return folder, clf


def test_verify_json_reports_exact_measure(xgb_model, capsys):
    folder, clf = xgb_model
    code = cli.main(
        [
            "verify",
            str(folder / "m.json"),
            "--domain",
            str(folder / "d.yaml"),
            "--protected",
            "sex",
            "--epsilon",
            "score=1",
            "--kappa",
            "0.6",
            "--json",
            "-",
            "--quiet",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "tree-boxes" and out["measure_lower"] == out["measure_upper"]
    grid = (
        np.array(np.meshgrid(np.arange(2), np.arange(20), np.arange(10), indexing="ij")).reshape(3, -1).T.astype(float)
    )
    proba = clf.predict_proba(grid)[:, 1]
    assert out["confident_size"] == np.sum(np.maximum(proba, 1 - proba) > 0.6)
    assert code == (1 if out["unfair_size"] else 0)
    assert out["falsified"] == pytest.approx(out["unfair_size"] / out["confident_size"])
    assert out["undecided"] == 0.0  # exact once converged, not a rounding residue


def test_verify_table_shows_the_measured_and_unfair_counts(xgb_model, capsys):
    folder, clf = xgb_model
    code = cli.main(
        [
            "verify",
            str(folder / "m.json"),
            "--domain",
            str(folder / "d.yaml"),
            "--protected",
            "sex",
            "--kappa",
            "0.6",
            "--json",
            str(folder / "r.json"),
        ]
    )
    out = json.loads((folder / "r.json").read_text())
    captured = capsys.readouterr()
    table = captured.out + captured.err
    assert code in (0, 1)
    assert f"measured inputs (confident) │ {out['confident_size']:g}".replace(" ", "") in table.replace(" ", "")
    assert f"unfair inputs (proven) │ {out['unfair_size']:g}".replace(" ", "") in table.replace(" ", "")


def test_sample_counterexamples_writes_rechecked_pairs(xgb_model, tmp_path, capsys):
    folder, clf = xgb_model
    out_csv = tmp_path / "idi.csv"
    code = cli.main(
        [
            "sample-counterexamples",
            str(folder / "m.json"),
            "--domain",
            str(folder / "d.yaml"),
            "--protected",
            "sex",
            "--epsilon-rate",
            "0.1",
            "-n",
            "500",
            "--out",
            str(out_csv),
            "--json",
            "-",
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    frame = pd.read_csv(out_csv)
    assert summary["region_complete"] and summary["region_exact"]
    if summary["unfair_size"] == 0:
        assert code == 0 and len(frame) == 0
        return
    assert code == 1 and len(frame) == 500 == summary["written"]
    x = frame[["sex", "score", "age"]].to_numpy(float)
    xp = frame[["sex_prime", "score_prime", "age_prime"]].to_numpy(float)
    assert np.all(clf.predict(x) != clf.predict(xp)) and np.all(x[:, 0] != xp[:, 0])
    assert np.all(np.abs(x[:, 1:] - xp[:, 1:]) <= np.array([1, 0]))  # floor(0.1 * 19) = 1, floor(0.9) = 0


def test_bad_inputs_exit_3(xgb_model, tmp_path):
    folder, _ = xgb_model
    assert (
        cli.main(
            ["verify", str(folder / "m.json"), "--domain", str(folder / "d.yaml"), "--protected", "nope", "--quiet"]
        )
        == 3
    )
    narrow = Domain((Feature("sex", "binary", 0, 1), Feature("score", "integer", 0, 19)))
    narrow.save(tmp_path / "n.yaml")
    assert (
        cli.main(
            ["verify", str(folder / "m.json"), "--domain", str(tmp_path / "n.yaml"), "--protected", "sex", "--quiet"]
        )
        == 3
    )
    assert (
        cli.main(
            [
                "sample-counterexamples",
                str(folder / "m.json"),
                "--domain",
                str(folder / "d.yaml"),
                "--protected",
                "sex",
                "-n",
                "-1",
                "--out",
                str(tmp_path / "x.csv"),
            ]
        )
        == 3
    )


def test_sample_counterexamples_refuses_a_bad_worker_count(xgb_model, tmp_path, capsys):
    folder, _ = xgb_model
    for workers in ("0", "-2"):
        code = cli.main(
            [
                "sample-counterexamples",
                str(folder / "m.json"),
                "--domain",
                str(folder / "d.yaml"),
                "--protected",
                "sex",
                "-n",
                "10",
                "--out",
                str(tmp_path / "x.csv"),
                "--workers",
                workers,
            ]
        )
        err = capsys.readouterr().err
        assert code == 3 and "workers must be an integer >= 1" in err and "Traceback" not in err
        assert not (tmp_path / "x.csv").exists()


def test_python_api_accepts_fitted_models():
    pytest.importorskip("sklearn")
    pytest.importorskip("lightgbm")
    import lightgbm as lgb
    from sklearn.ensemble import RandomForestClassifier

    import faircert

    rng = np.random.default_rng(1)
    X = np.stack([rng.integers(0, 3, 500), rng.integers(0, 12, 500), rng.integers(0, 6, 500)], axis=1).astype(float)
    y = ((X[:, 1] - X[:, 2] + 2 * X[:, 0] + rng.normal(0, 2, 500)) > 5).astype(int)
    dom = Domain((Feature("group", "categorical", 0, 2), Feature("a", "integer", 0, 11), Feature("b", "integer", 0, 5)))
    rf = RandomForestClassifier(6, max_depth=4, random_state=0).fit(X, y)
    res = faircert.verify(rf, dom, robustness=True, epsilon={"a": 1, "b": 1}, kappa=0.6)
    assert res.engine == "tree-boxes" and res.stats["converged"] and res.protected == []
    booster = lgb.LGBMClassifier(n_estimators=10, num_leaves=5, verbose=-1).fit(X, y).booster_
    res = faircert.verify(booster, dom, sensitive_features="group", epsilon_rate=0.2)
    assert res.measure_lower == res.measure_upper and res.epsilon == {"a": 2.0, "b": 1.0}
    for c in res.counterexamples:
        assert c.x[0] != c.x_prime[0] and (c.output > 0.5) != (c.output_prime > 0.5)


@pytest.mark.parametrize("level", ["1", "0", "1.5"])
def test_confidence_of_the_estimate_outside_0_1_exits_3(xgb_model, capsys, level):
    folder, _ = xgb_model
    code = cli.main(
        [
            "verify",
            str(folder / "m.json"),
            "--domain",
            str(folder / "d.yaml"),
            "--protected",
            "sex",
            "--confidence",
            level,
            "--quiet",
        ]
    )
    assert code == 3 and "confidence" in capsys.readouterr().err


def test_sample_counterexamples_escapes_formula_cells(xgb_model, tmp_path, capsys):
    folder, clf = xgb_model
    dom = Domain(
        (
            Feature("sex", "categorical", 0, 1, categories=("=1+1", "@SUM(A1)")),
            Feature("score", "integer", 0, 19),
            Feature("age", "integer", 0, 9),
        )
    )
    dom.save(tmp_path / "d.yaml")
    out_csv = tmp_path / "idi.csv"
    code = cli.main(
        [
            "sample-counterexamples",
            str(folder / "m.json"),
            "--domain",
            str(tmp_path / "d.yaml"),
            "--protected",
            "sex",
            "-n",
            "50",
            "--out",
            str(out_csv),
        ]
    )
    frame = pd.read_csv(out_csv)
    assert code == 1 and len(frame) == 50
    cells = set(frame["sex"]) | set(frame["sex_prime"])
    assert cells == {"'=1+1", "'@SUM(A1)"}
