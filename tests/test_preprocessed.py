"""Networks and tree ensembles trained on encoded columns, checked on raw columns with the fitted
scikit-learn preprocessing given beside them (`preprocessor=`, `--preprocessor`): the shares equal
brute force over the raw grid, computed with each framework's own predictions."""

from __future__ import annotations

import itertools
import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.cli import main
from faircert.errors import ModelFormatError

pytest.importorskip("sklearn")
joblib = pytest.importorskip("joblib")
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

warnings.filterwarnings("ignore", category=UserWarning)


def _people(n=500, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "sex": rng.choice(["Female", "Male"], n),
            "race": rng.choice(["A", "B", "C"], n),
            "age": rng.integers(18, 31, n),
            "hours": rng.integers(2, 10, n),
        }
    )
    df.loc[:1, "age"], df.loc[2:3, "age"] = 18, 30  # the data's range is the domain's
    df.loc[:1, "hours"], df.loc[2:3, "hours"] = 2, 9
    score = df.age / 12 + (df.sex == "Male") * 0.7 + (df.race == "B") * 0.4 + df.hours / 8 + rng.normal(0, 0.3, n)
    df["income"] = np.where(score > 3.0, ">50K", "<=50K")
    return df


@pytest.fixture(scope="module")
def trained():
    df = _people()
    X, y = df.drop(columns="income"), (df.income == ">50K").astype(int)
    prep = ColumnTransformer(
        [
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["sex", "race"]),
            ("num", StandardScaler(), ["age", "hours"]),
        ]
    )
    Z = prep.fit_transform(X)
    mlp = MLPClassifier((6,), max_iter=600, random_state=0).fit(Z, y)
    return df, X, y, prep, Z, mlp


def _unfair_share(df: pd.DataFrame, prep, predict) -> float:
    """Brute force: the share of (race, age, hours) grid points whose label changes with sex."""
    grid = pd.DataFrame(
        list(itertools.product(["A", "B", "C"], range(18, 31), range(2, 10))), columns=["race", "age", "hours"]
    )
    labels = [predict(prep.transform(grid.assign(sex=s)[["sex", "race", "age", "hours"]])) for s in ("Female", "Male")]
    return float(np.mean(labels[0] != labels[1]))


def _torch_net(mlp):
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(mlp.coefs_[0].shape[0], 6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    with torch.no_grad():
        for layer, w, b in zip((net[0], net[2]), mlp.coefs_, mlp.intercepts_):
            layer.weight.copy_(torch.tensor(w.T)), layer.bias.copy_(torch.tensor(b))
    return net.double()


def test_torch_module_with_preprocessor_matches_brute_force(trained):
    torch = pytest.importorskip("torch")
    df, X, _, prep, _, mlp = trained
    net = _torch_net(mlp)
    truth = _unfair_share(df, prep, lambda z: (net(torch.tensor(z)).detach().numpy()[:, 0] > 0).astype(int))
    assert 0 < truth < 1
    r = faircert.verify(net, df, protected="sex", preprocessor=prep, time_limit=30)
    assert r.falsified == pytest.approx(truth, abs=1e-12) and r.certified == pytest.approx(1 - truth, abs=1e-12)
    pairs = r.counterexamples_frame()
    assert len(pairs) and set(pairs["sex"]) | set(pairs["sex_prime"]) == {"Female", "Male"}


def _onnx_file(net, n_in, path):
    torch = pytest.importorskip("torch")
    try:
        torch.onnx.export(
            net,
            torch.zeros(1, n_in, dtype=torch.float64),
            str(path),
            dynamo=False,
            input_names=["x"],
            dynamic_axes={"x": {0: "n"}},
        )
    except Exception as exc:  # noqa: BLE001 - the exporter is optional
        pytest.skip(f"torch.onnx.export unavailable: {exc}")
    return path


def _keras_file(mlp, path):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    model = keras.Sequential(
        [
            keras.Input((mlp.coefs_[0].shape[0],)),
            keras.layers.Dense(6, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.set_weights([mlp.coefs_[0], mlp.intercepts_[0], mlp.coefs_[1], mlp.intercepts_[1]])
    model.save(path)
    return path


@pytest.mark.slow
def test_the_cli_checks_framework_files_on_raw_columns(trained, tmp_path, capsys):
    """Keras, ONNX (from PyTorch), XGBoost and LightGBM files trained on encoded columns: one command each,
    on the raw CSV, with shares equal to brute force on each framework's own predictions."""
    df, X, y, prep, Z, mlp = trained
    df.to_csv(tmp_path / "people.csv", index=False)
    joblib.dump(prep, tmp_path / "prep.pkl")
    net_truth = _unfair_share(df, prep, lambda z: mlp.predict(z))
    files = {
        "keras": (_keras_file(mlp, tmp_path / "m.keras"), net_truth),
        "onnx": (_onnx_file(_torch_net(mlp), Z.shape[1], tmp_path / "m.onnx"), net_truth),
    }
    xgb = pytest.importorskip("xgboost")
    booster = xgb.XGBClassifier(n_estimators=6, max_depth=3, random_state=0).fit(Z, y)
    booster.save_model(tmp_path / "m.json")
    files["xgboost"] = (tmp_path / "m.json", _unfair_share(df, prep, booster.predict))
    lgb = pytest.importorskip("lightgbm")
    gbm = lgb.LGBMClassifier(n_estimators=6, num_leaves=6, min_child_samples=5, verbose=-1).fit(Z, y)
    gbm.booster_.save_model(str(tmp_path / "m.txt"))
    files["lightgbm"] = (tmp_path / "m.txt", _unfair_share(df, prep, gbm.predict))
    for kind, (path, truth) in files.items():
        code = main(
            [
                "verify",
                str(path),
                "--preprocessor",
                str(tmp_path / "prep.pkl"),
                "--trust-pickle",
                "--domain",
                str(tmp_path / "people.csv"),
                "--protected",
                "sex",
                "--json",
                "-",
                "--quiet",
            ]
        )
        out = json.loads(capsys.readouterr().out)
        assert out["falsified"] == pytest.approx(truth, abs=1e-12), kind
        assert out["certified"] == pytest.approx(1 - truth, abs=1e-12), kind
        assert code == (1 if truth > 0 else 0), kind
        code = main(
            [
                "group",
                str(path),
                "--preprocessor",
                str(tmp_path / "prep.pkl"),
                "--trust-pickle",
                "--data",
                str(tmp_path / "people.csv"),
                "--protected",
                "sex",
                "--population",
                "empirical",
                "--json",
                "-",
                "--quiet",
            ]
        )
        out = json.loads(capsys.readouterr().out)
        labels = {
            "keras": mlp.predict(Z),
            "onnx": mlp.predict(Z),
            "xgboost": booster.predict(Z),
            "lightgbm": gbm.predict(Z),
        }[kind]
        groups = {g["name"]: g for g in out["groups"]}
        for sex in ("Female", "Male"):
            rate = labels[(X.sex == sex).to_numpy()].mean()
            assert groups[f"sex={sex}"]["low"] == pytest.approx(rate, abs=1e-9), kind
            assert groups[f"sex={sex}"]["high"] == pytest.approx(rate, abs=1e-9), kind


def test_bad_preprocessors_get_one_clear_error(trained, tmp_path, capsys):
    df, X, y, prep, Z, mlp = trained
    net = _torch_net(mlp)
    with pytest.raises(ModelFormatError, match="ends in a model"):
        faircert.verify(net, df, protected="sex", preprocessor=Pipeline([("p", prep), ("m", LogisticRegression())]))
    with pytest.raises(ModelFormatError, match="must be fitted scikit-learn preprocessing"):
        faircert.verify(net, df, protected="sex", preprocessor="not a transformer".split())
    narrow = ColumnTransformer([("c", OrdinalEncoder(), ["race"])]).fit(X)
    with pytest.raises(ModelFormatError, match="gives 1 features but the model reads 7"):
        faircert.verify(net, df, protected="sex", preprocessor=narrow)
    whole = Pipeline([("p", prep), ("m", LogisticRegression())]).fit(X, y)
    with pytest.raises(ModelFormatError, match="includes its own preprocessing"):
        faircert.verify(whole, df, protected="sex", preprocessor=prep)
    joblib.dump(prep, tmp_path / "prep.pkl")
    df.to_csv(tmp_path / "people.csv", index=False)
    _onnx_file(net, Z.shape[1], tmp_path / "m.onnx")
    for extra, message in ([], "--trust-pickle"), (["--trust-pickle"], None):
        args = [
            "verify",
            str(tmp_path / "m.onnx"),
            "--preprocessor",
            str(tmp_path / "prep.pkl"),
            *extra,
            "--domain",
            str(tmp_path / "people.csv"),
            "--protected",
            "sex",
            "--quiet",
            "--time-limit",
            "5",
        ]
        code = main(args)
        err = capsys.readouterr().err
        if message:
            assert code == 3 and message in err and "Traceback" not in err
        else:
            assert code in (0, 1)
    code = main(
        [
            "verify",
            str(tmp_path / "m.onnx"),
            "--preprocessor",
            str(tmp_path / "missing.pkl"),
            "--trust-pickle",
            "--domain",
            str(tmp_path / "people.csv"),
            "--quiet",
        ]
    )
    assert code == 3 and "preprocessor file not found" in capsys.readouterr().err
