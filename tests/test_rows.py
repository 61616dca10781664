"""Per-row audits: every row's verdict against brute force over its ball, for every model kind."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from boxes_oracle import random_network

import faircert
from faircert import interrupt
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.engines.registry import find_engine
from faircert.engines.rows.audit import run
from faircert.engines.rows.network import NetworkRows
from faircert.models.linear import LinearModel
from faircert.models.network import ReluNetwork
from faircert.models.trees import Tree, TreeEnsemble
from faircert.options import AuditOptions, VerifyOptions
from faircert.properties import RowAudit, individual_fairness

DOM = Domain(
    (
        Feature("a", "integer", 0, 6),
        Feature("s", "categorical", 0, 2),
        Feature("b", "integer", -3, 3),
        Feature("c", "integer", 0, 4),
    )
)
EPS = {"a": 2, "b": 1}


def _rows(n: int = 60, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(f.min, f.max + 1, n) for f in DOM.features], axis=1).astype(float)


def _brute(predict, rows: np.ndarray, eps: dict[str, int]) -> list[str]:
    """fair / unfair per row by evaluating every twin of its ball."""
    s = DOM.index("s")
    out = []
    for x in rows:
        axes = []
        for j, f in enumerate(DOM.features):
            e = eps.get(f.name, 0)
            axes.append(
                [v for v in f.values() if v != x[s]]
                if j == s
                else range(int(max(f.min, x[j] - e)), int(min(f.max, x[j] + e)) + 1)
            )
        twins = np.array(list(itertools.product(*axes)), dtype=float)
        own = predict(x[None])[0]
        out.append("unfair" if np.any(predict(twins) != own) else "fair")
    return out


def _check(result, predict, rows, eps):
    assert result.verdicts == _brute(predict, rows, eps or {})
    assert result.counts()["unknown"] == 0
    s = DOM.index("s")
    for i, v in enumerate(result.verdicts):
        if v != "unfair":
            assert result.twins[i] is None
            continue
        twin = np.array(result.twins[i])
        assert twin[s] != rows[i, s] and predict(twin[None])[0] != predict(rows[i][None])[0]
        for j, f in enumerate(DOM.features):  # inside the ball, equal elsewhere
            if j != s:
                assert abs(twin[j] - rows[i, j]) <= EPS.get(f.name, 0) * (eps is not None and bool(eps))


def _trees() -> TreeEnsemble:
    def tree(nodes):
        f, t, left, right, v = zip(*nodes)
        return Tree(f, t, left, right, v)

    t1 = tree([(1, 1, 1, 2, 0), (0, 3, 3, 4, 0), (-1, 0, -1, -1, 0.9), (-1, 0, -1, -1, -0.6), (-1, 0, -1, -1, 0.4)])
    t2 = tree([(2, 0, 1, 2, 0), (-1, 0, -1, -1, -0.5), (-1, 0, -1, -1, 0.3)])
    t3 = tree([(3, 2.5, 1, 2, 0), (-1, 0, -1, -1, 0.2), (-1, 0, -1, -1, -0.35)])
    return TreeEnsemble([t1, t2, t3], 4, split="<", input_float32=False)


MODELS = {
    "linear": (LinearModel.plain([0.4, -0.9, 0.3, -0.2], 0.1, names=DOM.names), "rows-linear"),
    "network": (random_network(np.random.default_rng(3), 4, [8, 6]), "rows-network"),
    "trees": (_trees(), "rows-trees"),
}


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("eps", [None, EPS], ids=["flip", "epsilon"])
def test_row_verdicts_equal_brute_force(kind, eps):
    model, engine = MODELS[kind]
    rows = _rows()
    frame = pd.DataFrame({f.name: rows[:, j] for j, f in enumerate(DOM.features)})
    result = faircert.audit(model, frame, DOM, protected="s", epsilon=eps)
    predict = (
        model.predict
        if not isinstance(model, LinearModel)
        else (lambda X: (np.asarray(X, float) @ np.array([0.4, -0.9, 0.3, -0.2]) + 0.1 > 0).astype(int))
    )
    assert result.engine == engine
    _check(result, predict, rows, eps)
    flip = _brute(predict, rows, {})
    assert result.flip_unfair == flip.count("unfair")
    assert result.verdict == ("unfair" if "unfair" in result.verdicts else "fair")
    assert result.by_group["rows"].sum() == len(rows)
    assert result.by_group.loc["1", "unfair"] == sum(v == "unfair" for v, r in zip(result.verdicts, rows) if r[1] == 1)


def test_the_linear_closed_form_agrees_with_enumeration_on_the_same_network():
    net = ReluNetwork([np.array([[0.4, -0.9, 0.3, -0.2]])], [np.array([0.1])])
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _rows(200, seed=4))
    closed = find_engine(net, question).run(net, question, VerifyOptions(), None)
    enumerated = run(lambda prop: NetworkRows(net, prop), question, VerifyOptions(), None)
    assert closed.engine == "rows-linear" and enumerated.engine == "rows-network"
    decided = [i for i, v in enumerate(enumerated.verdicts) if v != "unknown"]
    assert [closed.verdicts[i] for i in decided] == [enumerated.verdicts[i] for i in decided]
    assert "unfair" in closed.verdicts and "fair" in closed.verdicts and closed.counts()["unknown"] == 0
    # scores of exactly 0 (weights on a 0.1 grid) leave float enumeration unsure; the closed form decides them
    assert len(decided) < len(closed.verdicts)


def test_networks_with_a_real_feature_use_bounds_and_the_milp_soundly():
    dom = Domain((Feature("s", "binary", 0, 1), Feature("t", "real", -2.0, 2.0), Feature("k", "integer", 0, 3)))
    net = random_network(np.random.default_rng(7), 3, [6])
    rng = np.random.default_rng(1)
    rows = np.stack([rng.integers(0, 2, 80), rng.uniform(-2, 2, 80), rng.integers(0, 4, 80)], axis=1)
    question = RowAudit(individual_fairness(dom, "s", epsilon={"t": 0.5}), rows)
    result = find_engine(net, question).run(net, question, VerifyOptions(time_limit=60), None)
    methods = set(result.methods)
    assert result.counts()["unknown"] == 0 and methods & {"bounds", "milp", "search"}
    for i, x in enumerate(rows):  # a dense grid of the ball never contradicts a fair row
        t = np.linspace(max(-2, x[1] - 0.5), min(2, x[1] + 0.5), 801)
        twins = np.stack([np.full_like(t, 1 - x[0]), t, np.full_like(t, x[2])], axis=1)
        flips = np.any(net.predict(twins) != net.predict(x[None])[0])
        if result.verdicts[i] == "fair":
            assert not flips
        else:
            twin = np.array(result.twins[i])
            assert abs(twin[1] - x[1]) <= 0.5 and twin[0] != x[0] and twin[2] == x[2]
            assert net.predict(twin[None])[0] != net.predict(x[None])[0]


def test_trees_with_a_real_feature_are_decided_on_their_cells():
    def tree(nodes):
        f, t, left, right, v = zip(*nodes)
        return Tree(f, t, left, right, v)

    ir = TreeEnsemble(
        [
            tree(
                [(1, 0.25, 1, 2, 0), (0, 1, 3, 4, 0), (-1, 0, -1, -1, 0.5), (-1, 0, -1, -1, -0.7), (-1, 0, -1, -1, 0.2)]
            ),
            tree([(1, -0.5, 1, 2, 0), (-1, 0, -1, -1, -0.3), (-1, 0, -1, -1, 0.1)]),
        ],
        2,
        split="<=",
    )
    dom = Domain((Feature("s", "binary", 0, 1), Feature("t", "real", -2.0, 2.0)))
    rng = np.random.default_rng(2)
    rows = np.stack([rng.integers(0, 2, 100), np.round(rng.uniform(-2, 2, 100), 2)], axis=1)
    rows[:4, 1] = [0.25, -0.5, 0.75, -0.25]  # on and at eps from the thresholds
    question = RowAudit(individual_fairness(dom, "s", epsilon={"t": 0.5}), rows)
    result = find_engine(ir, question).run(ir, question, VerifyOptions(), None)
    for i, x in enumerate(rows):  # every float32 and float64 value around each threshold, and a grid
        t = np.linspace(max(-2, x[1] - 0.5), min(2, x[1] + 0.5), 2001)
        t = np.concatenate(
            [
                t,
                [
                    c
                    for th in (0.25, -0.5)
                    for c in (th, np.nextafter(th, 9), np.nextafter(th, -9))
                    if abs(c - x[1]) <= 0.5 and -2 <= c <= 2
                ],
            ]
        )
        twins = np.stack([np.full_like(t, 1 - x[0]), t], axis=1)
        flips = bool(np.any(ir.predict(twins) != ir.predict(x[None])[0]))
        assert result.verdicts[i] == ("unfair" if flips else "fair"), (i, x)


def test_a_stop_request_keeps_the_rows_already_decided():
    net = random_network(np.random.default_rng(3), 4, [8, 6])
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _rows(1200, seed=5))
    calls = []

    def progress(info):
        calls.append(info)
        if info.rows_done > 0:
            interrupt.request()

    try:
        result = find_engine(net, question).run(net, question, VerifyOptions(), progress)
    finally:
        interrupt.clear()
    counts = result.counts()
    assert result.stopped == "interrupted" and counts["unknown"] > 0 and counts["fair"] + counts["unfair"] > 0
    assert all(m == "not reached" for v, m in zip(result.verdicts, result.methods) if v == "unknown")


def test_rows_outside_the_domain_are_audited_and_unreadable_rows_alone_are_unknown():
    """The domain clips the twins' moves only: a row beyond it is decided like any other; a value
    the model cannot read (not an integer of an integer feature) leaves that row alone unknown."""
    model = MODELS["linear"][0]
    predict = lambda X: (np.asarray(X, float) @ np.array([0.4, -0.9, 0.3, -0.2]) + 0.1 > 0).astype(int)
    frame = pd.DataFrame({"a": [9, 1, 2], "s": [0, 0.5, 1], "b": [0, 0, -3], "c": [0, 0, 4]})
    result = faircert.audit(model, frame, DOM, protected="s")
    assert result.verdicts[0] in ("fair", "unfair") and result.verdicts[2] in ("fair", "unfair")
    flips = lambda r: [np.array([r[0], v, r[2], r[3]], dtype=float) for v in (0, 1, 2) if v != r[1]]
    own = lambda r: predict(np.array([r], dtype=float))[0]
    expected = [
        "unfair" if any(predict(t[None])[0] != own(r) for t in flips(r)) else "fair"
        for r in ([9, 0, 0, 0], [2, 1, -3, 4])
    ]
    assert [result.verdicts[0], result.verdicts[2]] == expected
    assert result.verdicts[1] == "unknown" and result.methods[1].startswith("cannot be evaluated")


def test_cli_writes_one_line_per_row_and_gates_on_the_verdict(tmp_path, capsys):
    pytest.importorskip("sklearn")
    import joblib
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame(
        {
            "job": rng.choice(["=cmd", "b", "c"], n),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.integers(18, 60, n),
            "hours": rng.integers(1, 60, n),
        }
    )
    y = ((df["age"] > 35) ^ (df["sex"] == "M") ^ (rng.random(n) < 0.2)).astype(int)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["job", "sex"]), ("num", StandardScaler(), ["age", "hours"])])
    joblib.dump(Pipeline([("prep", prep), ("clf", LogisticRegression())]).fit(df, y), tmp_path / "m.pkl")
    df.to_csv(tmp_path / "rows.csv", index=False)
    out, js, page = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "r.html"
    code = main(
        [
            "audit",
            str(tmp_path / "m.pkl"),
            str(tmp_path / "rows.csv"),
            "--protected",
            "sex",
            "--trust-pickle",
            "--epsilon",
            "age=2",
            "--rows-csv",
            str(out),
            "--json",
            str(js),
            "--html",
            str(page),
            "--quiet",
        ]
    )
    written = pd.read_csv(out)
    payload = json.loads(js.read_text())
    assert len(written) == n and list(written["row"]) == list(range(n))
    assert code == (1 if payload["counts"]["unfair"] else 0)
    assert (
        payload["counts"]["fair"] + payload["counts"]["unfair"] == n
        and payload["flip_test"]["unfair"] <= payload["counts"]["unfair"]
    )
    unfair = written[written["verdict"] == "unfair"]
    assert len(unfair) == payload["counts"]["unfair"] and unfair["sex_prime"].notna().all()
    for column in ("job", "job_prime"):  # formula cells escaped, the row's own as its twin's
        assert not written[column].dropna().astype(str).str.startswith("=").any()
    assert (written["job"].astype(str) != "=cmd").all() and written["job"].astype(str).str.endswith("=cmd").any()
    assert "per protected group" in page.read_text()
    assert (
        main(
            [
                "verify",
                str(tmp_path / "m.pkl"),
                "--rows-csv",
                str(out),
                "--protected",
                "sex",
                "--trust-pickle",
                "--domain",
                str(tmp_path / "rows.csv"),
            ]
        )
        == 3
    )
    assert (
        main(
            [
                "verify",
                str(tmp_path / "m.pkl"),
                "--rows",
                str(tmp_path / "rows.csv"),
                "--protected",
                "sex",
                "--trust-pickle",
                "--complete",
            ]
        )
        == 3
    )


def _network_audit(n: int = 1500):
    net = random_network(np.random.default_rng(3), 4, [8, 6])
    return net, RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _rows(n, seed=6))


def test_rows_on_two_worker_processes_get_the_same_verdicts():
    net, question = _network_audit()
    one = find_engine(net, question).run(net, question, VerifyOptions(workers=1), None)
    two = find_engine(net, question).run(net, question, VerifyOptions(workers=2), None)
    assert one.verdicts == two.verdicts and one.twins == two.twins and one.counts()["unknown"] == 0


@pytest.mark.parametrize("name", ["HistGradientBoostingClassifier", "RidgeClassifier", "Perceptron"])
def test_more_scikit_learn_classifiers_are_read_and_audited(name):
    pytest.importorskip("sklearn")
    import sklearn.ensemble
    import sklearn.linear_model
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame(
        {
            "job": rng.choice(["a", "b", "c"], n),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.integers(18, 40, n),
            "hours": rng.integers(1, 30, n),
        }
    )
    y = ((df["age"] + 3 * (df["sex"] == "M") + rng.normal(0, 3, n)) > 30).astype(int)
    cls = getattr(sklearn.ensemble, name, None) or getattr(sklearn.linear_model, name)
    prep = ColumnTransformer(
        [("cat", OneHotEncoder(sparse_output=False), ["job", "sex"]), ("num", StandardScaler(), ["age", "hours"])]
    )
    model = Pipeline([("prep", prep), ("clf", cls(random_state=0) if name != "RidgeClassifier" else cls())]).fit(df, y)
    result = faircert.audit(model, df, protected="sex", epsilon={"age": 1})
    expected = "rows-trees" if name.startswith("Hist") else "rows-linear"
    assert result.engine == expected and result.counts()["unknown"] == 0
    flipped = df.assign(sex=np.where(df["sex"] == "M", "F", "M"))
    assert result.flip_unfair == int((model.predict(df) != model.predict(flipped)).sum())
    own = model.predict(df)
    unfair = np.zeros(n, dtype=bool)
    for step in (-1, 0, 1):  # brute force over age +-1 (inside the data's range) with the other sex
        twins = flipped.assign(age=np.clip(df["age"] + step, df["age"].min(), df["age"].max()))
        unfair |= model.predict(twins) != own
    assert result.verdicts == ["unfair" if u else "fair" for u in unfair]


@pytest.mark.parametrize("name", ["svc", "knn"])
def test_classifiers_no_ir_holds_are_audited_as_black_boxes(name):
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.svm import SVC

    rng = np.random.default_rng(2)
    n = 150
    df = pd.DataFrame(
        {
            "job": rng.choice(["a", "b"], n),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.integers(18, 40, n),
            "hours": rng.uniform(1, 10, n),
        }
    )
    y = ((df["age"] + 4 * (df["sex"] == "M") + rng.normal(0, 3, n)) > 30).astype(int)
    clf = SVC(kernel="rbf") if name == "svc" else KNeighborsClassifier(5)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["job", "sex"]), ("num", StandardScaler(), ["age", "hours"])])
    model = Pipeline([("prep", prep), ("clf", clf)]).fit(df, y)
    result = faircert.audit(model, df, protected="sex", epsilon={"age": 1})
    assert result.engine == "rows-blackbox" and result.counts()["unknown"] == 0
    own = model.predict(df)
    flipped = df.assign(sex=np.where(df["sex"] == "M", "F", "M"))
    unfair = np.zeros(n, dtype=bool)
    for step in (-1, 0, 1):
        unfair |= model.predict(flipped.assign(age=np.clip(df["age"] + step, 18, 39))) != own
    assert result.verdicts == ["unfair" if u else "fair" for u in unfair] and any(unfair)
    # a real feature that moves: a search can find flips but never proves a row fair
    moving = faircert.audit(model, df, protected="sex", epsilon={"hours": 0.5})
    assert "fair" not in [v for v, m in zip(moving.verdicts, moving.methods) if m != "flip test"]
    # over the domain, the same classifier gets a statistical answer, never a proof
    domain = faircert.verify(model, df, protected="sex", time_limit=20, workers=1)
    assert domain.engine == "blackbox-sampling" and domain.certified == domain.falsified == 0.0


def test_rows_with_missing_values_are_unknown_alone_with_their_reason():
    model = MODELS["linear"][0]
    frame = pd.DataFrame({"a": [1, None, 2], "s": [0, 1, 2], "b": [0, 0, np.nan], "c": [0, 1, 2]})
    result = faircert.audit(model, frame, DOM, protected="s")
    assert result.verdicts[0] in ("fair", "unfair")
    assert result.verdicts[1:] == ["unknown", "unknown"]
    assert all(m.startswith("cannot be evaluated") for m in result.methods[1:])


def test_network_rows_left_open_by_the_bounds_are_decided_by_the_milp_soundly(monkeypatch):
    import faircert.engines.rows.network as rows_network

    monkeypatch.setattr(rows_network, "PROBES", 1)  # no search: the MILP decides what the bounds leave
    dom = Domain((Feature("s", "binary", 0, 1), Feature("t", "real", -2.0, 2.0), Feature("u", "real", -2.0, 2.0)))
    net = random_network(np.random.default_rng(3), 3, [12, 12])
    rng = np.random.default_rng(1)
    rows = np.stack([rng.integers(0, 2, 60), rng.uniform(-2, 2, 60), rng.uniform(-2, 2, 60)], axis=1)
    question = RowAudit(individual_fairness(dom, "s", epsilon={"t": 1.0, "u": 1.0}), rows)
    result = find_engine(net, question).run(net, question, VerifyOptions(), None)
    assert result.stats["methods"].get("milp", 0) >= 10 and result.counts()["unknown"] == 0
    for i, x in enumerate(rows):  # a 121 x 121 grid of each ball never contradicts a fair row
        t, u = np.meshgrid(
            np.linspace(max(-2, x[1] - 1), min(2, x[1] + 1), 121), np.linspace(max(-2, x[2] - 1), min(2, x[2] + 1), 121)
        )
        twins = np.stack([np.full(t.size, 1 - x[0]), t.ravel(), u.ravel()], axis=1)
        if result.verdicts[i] == "fair":
            assert np.all(net.predict(twins) == net.predict(x[None])[0])
        else:
            twin = np.array(result.twins[i])
            assert twin[0] != x[0] and np.all(np.abs(twin[1:] - x[1:]) <= 1.0 + 1e-12)
            assert net.predict(twin[None])[0] != net.predict(x[None])[0]


def test_tree_balls_with_too_many_cells_are_searched_and_never_called_fair():
    ir = _trees()
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _rows(80, seed=9))
    result = find_engine(ir, question).run(ir, question, AuditOptions(max_cells=1), None)
    searched = [v for v, m in zip(result.verdicts, result.methods) if m != "flip test"]
    assert searched and "fair" not in searched and "unfair" in searched
    for i, v in enumerate(result.verdicts):
        if v == "unfair":
            assert ir.predict(np.array([result.twins[i]]))[0] != ir.predict(question.rows[i][None])[0]
    open_rows = [i for i, v in enumerate(result.verdicts) if v == "unknown"]
    assert open_rows and {result.methods[i] for i in open_rows} == {
        "too many cells: searched, not proven (raise max_cells, now 1)"
    }
    # the budget the reason names decides them all on a re-run, as brute force does
    bigger = find_engine(ir, question).run(ir, question, AuditOptions(max_cells=100), None)
    assert bigger.counts()["unknown"] == 0
    assert bigger.verdicts == _brute(ir.predict, question.rows, EPS)
    assert all(bigger.verdicts[i] == result.verdicts[i] for i, v in enumerate(result.verdicts) if v != "unknown")


@pytest.mark.parametrize("options", [{"max_cells": 0}, {"max_twins": 1.5}, {"milp_seconds": -1}, {"max_cells": True}])
def test_row_budgets_are_checked(options):
    with pytest.raises(faircert.errors.PropertyError, match="must be"):
        AuditOptions(**options)


def test_classifiers_no_ir_holds_get_a_statistical_answer_over_the_domain(tmp_path, capsys):
    """`verify` on a classifier no IR reads: points of the domain (or the data's marginals) decided on
    the model itself; no share is proven, the interval holds the truth the grid gives, every pair
    is a real one, and the result says what made the model a black box."""
    pytest.importorskip("sklearn")
    import joblib
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.svm import SVC

    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame(
        {"job": rng.choice(["a", "b"], n), "sex": rng.choice(["F", "M"], n), "age": rng.integers(18, 40, n)}
    )
    y = ((df["age"] + 6 * (df["sex"] == "M") + rng.normal(0, 3, n)) > 30).astype(int)
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["job", "sex"])], remainder="passthrough")
    model = Pipeline([("prep", prep), ("clf", SVC(kernel="rbf"))]).fit(df, y)
    result = faircert.verify(model, df, protected="sex", time_limit=30, workers=1)
    grid = pd.DataFrame([(j, a) for j in ("a", "b") for a in range(18, 40)], columns=["job", "age"])
    labels = [model.predict(grid.assign(sex=s)[["job", "sex", "age"]]) for s in ("F", "M")]
    truth = float(np.mean(labels[0] != labels[1]))
    s = result.statistical
    assert result.engine == "blackbox-sampling" and (result.certified, result.falsified) == (0.0, 0.0)
    assert s.ci_low <= truth <= s.ci_high and 0 < truth < 1 and s.samples > 1000
    assert "black box" in s.method and "SVC" in result.stats["black_box"]
    assert result.verdict == "unfair" and result.counterexamples
    independent = faircert.verify(model, df, protected="sex", population="independent", workers=1, time_limit=30)
    assert independent.engine == "blackbox-sampling" and independent.population == "independent"
    with pytest.raises(faircert.PropertyError, match="as a black box it is answered under"):
        faircert.verify(model, df, protected="sex", population="bayesnet")
    joblib.dump(model, tmp_path / "m.pkl")
    df.to_csv(tmp_path / "d.csv", index=False)
    argv = ["verify", str(tmp_path / "m.pkl"), "--domain", str(tmp_path / "d.csv"), "--protected", "sex"]
    assert main(argv + ["--trust-pickle", "--quiet", "--workers", "1", "--json", str(tmp_path / "v.json")]) == 1
    assert json.loads((tmp_path / "v.json").read_text())["engine"] == "blackbox-sampling"
