"""What users hand the tree path: models fitted on DataFrames, domains that must match the model's
named inputs, damaged model files, and properties that would certify nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.cli import main as cli
from faircert.domain import Domain, Feature
from faircert.engines.trees.verify import verify_trees
from faircert.errors import DomainError, ModelFormatError, PropertyError
from faircert.models.io import load_model
from faircert.properties import individual_fairness

NAMES = ["age", "sex", "inc", "hrs"]


def _frame(seed=0, n=800):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "age": rng.integers(0, 10, n),
            "sex": rng.integers(0, 2, n),
            "inc": rng.integers(0, 8, n),
            "hrs": rng.integers(0, 6, n),
        }
    )
    y = (X["age"] + 2 * X["sex"] + X["inc"] - X["hrs"] + rng.normal(0, 2, n) > 6).astype(int)
    return X, y


def _domain(order=NAMES):
    bounds = {"age": (0, 9), "sex": (0, 1), "inc": (0, 7), "hrs": (0, 5)}
    return Domain(tuple(Feature(n, "integer", *bounds[n]) for n in order))


def _brute_unfair(predict, dom):
    """Inputs of the grid (all features) whose label changes with sex, by the framework's predict."""
    grid = np.stack(np.meshgrid(*[np.arange(f.min, f.max + 1) for f in dom.features], indexing="ij"), -1)
    X = grid.reshape(-1, len(dom.features)).astype(float)
    s = dom.names.index("sex")
    labels = []
    for v in (0, 1):
        Z = X.copy()
        Z[:, s] = v
        labels.append(predict(Z))
    return int((labels[0] != labels[1]).sum())


def test_xgboost_fitted_on_a_dataframe_loads_and_is_exact(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y = _frame()
    clf = xgb.XGBClassifier(n_estimators=20, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    clf.save_model(tmp_path / "m.json")
    truth = _brute_unfair(lambda Z: clf.predict(pd.DataFrame(Z, columns=NAMES)), _domain())
    assert truth > 0
    for model in (clf, clf.get_booster(), tmp_path / "m.json"):
        ir = load_model(model)
        assert ir.feature_names == NAMES
        r = faircert.verify(model, _domain(), protected="sex", time_limit=30)
        assert r.unfair_size == truth
        assert r.verdict == "unfair" and r.exit_code == 1


def test_domain_in_another_order_or_with_unknown_names_is_refused(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y = _frame()
    clf = lgb.LGBMClassifier(n_estimators=20, num_leaves=8, random_state=0, verbose=-1).fit(X, y)
    clf.booster_.save_model(str(tmp_path / "m.txt"))
    for model in (clf, tmp_path / "m.txt"):
        with pytest.raises(DomainError, match="'sex' as feature 0, but input 0 of the model is 'age'"):
            faircert.verify(model, _domain(["sex", "age", "inc", "hrs"]), protected="sex")
        with pytest.raises(DomainError, match="no input named 'hours'"):
            faircert.verify(
                model, Domain(_domain().features[:3] + (Feature("hours", "integer", 0, 5),)), protected="sex"
            )
    # a DataFrame domain is matched the same way: reordered columns are refused, not taken by position
    with pytest.raises(DomainError, match="model's order: age, sex, inc, hrs"):
        faircert.verify(clf, X[["inc", "age", "sex", "hrs"]], protected="sex")
    # names the framework made up (a model fitted on an array) say nothing about the order
    bare = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, random_state=0, verbose=-1).fit(X.to_numpy(), y)
    assert faircert.verify(bare, _domain(), protected="sex", time_limit=30).stats["converged"]


def test_truncated_or_foreign_lightgbm_text_is_a_clear_error(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y = _frame()
    clf = lgb.LGBMClassifier(n_estimators=20, num_leaves=8, random_state=0, verbose=-1).fit(X, y)
    text = clf.booster_.model_to_string()
    for size in (600, 1500, len(text) // 2):
        (tmp_path / "t.txt").write_text(text[:size])
        with pytest.raises(ModelFormatError, match="incomplete"):
            load_model(tmp_path / "t.txt")
    (tmp_path / "g.txt").write_text("hello\n")
    with pytest.raises(ModelFormatError, match="not a LightGBM model text file"):
        load_model(tmp_path / "g.txt")


def test_undecided_run_still_reports_counterexamples_from_the_open_part():
    xgb = pytest.importorskip("xgboost")
    X, y = _frame()
    clf = xgb.XGBClassifier(n_estimators=20, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    ir = load_model(clf)
    prop = individual_fairness(_domain(), "sex")
    # so short a limit that the bounds stop before settling anything: every counterexample comes from
    # draws of the undecided part, classified by the model
    r = verify_trees(ir, prop, time_limit=1e-6, max_counterexamples=20)
    assert r.measure_lower == 0.0 and r.measure_upper == 1.0
    assert r.verdict == "unfair" and len(r.counterexamples) == 20
    x = np.array([c.x for c in r.counterexamples])
    xp = np.array([c.x_prime for c in r.counterexamples])
    assert np.array_equal(np.delete(x, 1, axis=1), np.delete(xp, 1, axis=1))
    assert np.all(ir.predict(x) != ir.predict(xp))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kappa": 0.3}, r"kappa must lie in \[0.5, 1\)"),
        ({"kappa": 1.0}, r"kappa must lie in \[0.5, 1\)"),
        ({"epsilon_rate": 2.0}, r"epsilon rate must lie in \[0, 1\]"),
        ({"epsilon": {"kind": 1}}, "categorical feature 'kind'"),
    ],
)
def test_property_choices_are_checked_the_same_in_python_and_cli(kwargs, message):
    dom = Domain(_domain().features + (Feature("kind", "categorical", 0, 3),))
    with pytest.raises(PropertyError, match=message):
        individual_fairness(dom, "sex", **kwargs)


def test_robustness_without_tolerance_and_vacuous_kappa_are_refused():
    xgb = pytest.importorskip("xgboost")
    X, y = _frame()
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=2, random_state=0, n_jobs=1).fit(X, y)
    with pytest.raises(PropertyError, match="holds trivially"):
        faircert.verify(clf, _domain(), robustness=True)
    grid = np.stack(np.meshgrid(*[np.arange(f.min, f.max + 1) for f in _domain().features], indexing="ij"), -1)
    assert load_model(clf).confidence(grid.reshape(-1, 4).astype(float)).max() < 0.9999  # no input qualifies
    with pytest.raises(PropertyError, match="no input of the domain is confident at kappa 0.9999"):
        faircert.verify(clf, _domain(), protected="sex", kappa=0.9999)


def test_sample_command_reads_trusted_pickles_and_refuses_zero_samples(tmp_path, capsys):
    import pickle

    from sklearn.ensemble import RandomForestClassifier

    X, y = _frame()
    rf = RandomForestClassifier(5, max_depth=3, random_state=0).fit(X.to_numpy(), y)
    (tmp_path / "rf.pkl").write_bytes(pickle.dumps(rf))
    _domain().save(tmp_path / "d.yaml")
    base = [
        "sample-counterexamples",
        str(tmp_path / "rf.pkl"),
        "--domain",
        str(tmp_path / "d.yaml"),
        "--protected",
        "sex",
        "--out",
        str(tmp_path / "c.csv"),
    ]
    assert cli(base + ["-n", "0", "--trust-pickle"]) == 3
    assert "number of counterexamples must be >= 1" in capsys.readouterr().err
    assert cli(base + ["-n", "10", "--trust-pickle"]) == 1
    rows = pd.read_csv(tmp_path / "c.csv")
    assert len(rows) == 10


def test_python_testing_mode_returns_rechecked_pairs_uniform_over_the_region():
    lgb = pytest.importorskip("lightgbm")
    X, y = _frame()
    clf = lgb.LGBMClassifier(n_estimators=20, num_leaves=8, random_state=0, verbose=-1).fit(X, y)
    truth = _brute_unfair(lambda Z: clf.predict(pd.DataFrame(Z, columns=NAMES)), _domain())
    frame = faircert.sample_counterexamples(clf, X, "sex", 3000, seed=1)
    summary = frame.attrs["summary"]
    assert list(frame.columns) == NAMES + [f"{n}_prime" for n in NAMES] + ["output", "output_prime"]
    assert len(frame) == summary["written"] == 3000 and summary["region_exact"]
    assert summary["unfair_size"] == truth
    x = pd.DataFrame(frame[NAMES].to_numpy(), columns=NAMES)
    xp = pd.DataFrame(frame[[f"{n}_prime" for n in NAMES]].to_numpy(), columns=NAMES)
    assert np.all(clf.predict(x) != clf.predict(xp))
    assert np.array_equal(x.drop(columns="sex").to_numpy(), xp.drop(columns="sex").to_numpy())
    assert summary["distinct"] == len(x.drop_duplicates()) > 0.5 * summary["unfair_size"]


def test_damaged_ubj_file_is_a_one_line_error(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y = _frame()
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=2, random_state=0, n_jobs=1).fit(X, y)
    clf.save_model(tmp_path / "m.ubj")
    data = (tmp_path / "m.ubj").read_bytes()
    for name, content in (("empty.ubj", b""), ("cut.ubj", data[:200])):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ModelFormatError, match="not a readable XGBoost model") as err:
            load_model(tmp_path / name)
        assert "\n" not in str(err.value) and "Stack trace" not in str(err.value)


def test_testing_mode_needs_a_tree_ensemble():
    from faircert.models.network import ReluNetwork

    net = ReluNetwork([np.ones((1, 4))], [np.zeros(1)])
    with pytest.raises(PropertyError, match="counterexample sampling needs a tree ensemble"):
        faircert.sample_counterexamples(net, _domain(), "sex", 10)
