"""Small valid files of every format faircert reads, and the mutations a fuzzer applies to them.

Shared by the hardening regression tests and the fuzz tests. Builders write into a folder and
return the path; frameworks (xgboost, lightgbm, catboost) are only needed for their formats.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import numpy as np

from faircert.models.io.nnet import save_nnet
from faircert.models.io.onnx import save_onnx
from faircert.models.network import ReluNetwork

RNG = np.random.default_rng(7)
W1, B1 = RNG.normal(size=(3, 4)), RNG.normal(size=3)
W2, B2 = RNG.normal(size=(1, 3)), RNG.normal(size=1)


def network() -> ReluNetwork:
    return ReluNetwork([W1, W2], [B1, B2], input_lower=np.zeros(4), input_upper=np.full(4, 5.0))


def nnet_file(folder: Path) -> Path:
    save_nnet(network(), folder / "m.nnet")
    return folder / "m.nnet"


def onnx_file(folder: Path) -> Path:
    save_onnx(network(), folder / "m.onnx")
    return folder / "m.onnx"


def keras_config(use_bias: bool = True) -> dict:
    layers = [
        {
            "class_name": "Dense",
            "config": {
                "name": "d1",
                "units": 3,
                "activation": "relu",
                "use_bias": use_bias,
                "batch_input_shape": [None, 4],
            },
        },
        {"class_name": "Dense", "config": {"name": "d2", "units": 1, "activation": "sigmoid", "use_bias": True}},
    ]
    return {"class_name": "Sequential", "config": {"name": "s", "layers": layers}}


def keras_file(folder: Path, name: str = "m.h5", weights: dict | None = None, config: dict | None = None) -> Path:
    """The Keras 2 `.h5` layout: model_config + model_weights/<layer>/<layer>/<w>:0."""
    weights = weights or {"d1": {"kernel": W1.T, "bias": B1}, "d2": {"kernel": W2.T, "bias": B2}}
    path = folder / name
    with h5py.File(path, "w") as f:
        f.attrs["model_config"] = json.dumps(config or keras_config())
        group = f.create_group("model_weights")
        for layer, arrays in weights.items():
            g = group.create_group(layer)
            names = [f"{layer}/{k}:0" for k in arrays]
            g.attrs["weight_names"] = [np.bytes_(n) for n in names]
            for n, v in zip(names, arrays.values()):
                g.create_dataset(n, data=np.asarray(v, dtype=np.float32))
    return path


def _tree_data(n: int = 300, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, 4)).astype(float)
    return X, (X[:, 0] + 2 * X[:, 1] + rng.normal(size=n) > 7).astype(int)


def xgboost_file(folder: Path, suffix: str = ".json") -> Path:
    import xgboost as xgb

    X, y = _tree_data()
    booster = xgb.train(
        {"objective": "binary:logistic", "max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y), num_boost_round=3
    )
    path = folder / f"m{suffix}"
    booster.save_model(str(path))
    return path


def lightgbm_file(folder: Path) -> Path:
    import lightgbm as lgb

    X, y = _tree_data()
    booster = lgb.train(
        {"objective": "binary", "num_leaves": 4, "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5},
        lgb.Dataset(X, y),
        num_boost_round=3,
    )
    path = folder / "m.txt"
    booster.save_model(str(path))
    return path


def catboost_file(folder: Path, suffix: str = ".json") -> Path:
    import catboost

    X, y = _tree_data()
    model = catboost.CatBoostClassifier(
        iterations=3, depth=2, verbose=0, random_seed=0, thread_count=1, allow_writing_files=False
    ).fit(X, y)
    path = folder / f"m{suffix}"
    model.save_model(str(path), format="json" if suffix == ".json" else "cbm")
    return path


def catboost_categorical_file(folder: Path, suffix: str = ".json") -> Path:
    """A CatBoost model over a number and two categorical columns: one-hot and CTR splits."""
    import catboost
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"a": rng.normal(size=300), "c": rng.choice(list("vwxyz"), 300), "d": rng.choice(["p", "q"], 300)}
    )
    y = ((frame.a > 0) ^ (frame.c == "x") | (frame.d == "q")).astype(int)
    model = catboost.CatBoostClassifier(
        iterations=4,
        depth=3,
        verbose=0,
        random_seed=0,
        thread_count=1,
        allow_writing_files=False,
        cat_features=["c", "d"],
        one_hot_max_size=2,
        max_ctr_complexity=1,
    ).fit(frame, y)
    path = folder / f"m{suffix}"
    model.save_model(str(path), format="json" if suffix == ".json" else "cbm")
    return path


def linear_file(folder: Path) -> Path:
    path = folder / "lin.json"
    path.write_text(json.dumps({"weights": [0.5, -1.0, 2.0], "intercept": -0.25, "features": ["a", "b", "c"]}))
    return path


DOMAIN_YAML = """features:
  - {name: age, kind: integer, min: 18, max: 90}
  - {name: sex, kind: binary, protected: true}
  - {name: income, kind: real, min: 0.0, max: 1.5}
  - {name: job, kind: categorical, min: 0, max: 3, categories: [a, b, c, d]}
"""

PROGRAM = """def popModel():
    sex = step([(0, 1, 0.3), (1, 2, 0.7)])
    if sex < 1:
        capital = gaussian(568.4105, 24248365.5428)
    else:
        capital = gaussian(1329.3700, 69327473.1006)
    sensitiveAttribute(sex < 1)

def F():
    t = 0.0006 * capital + -0.5 * sex
    fairnessTarget(t > 0)
"""

CSV = "age,sex,income,label\n25,M,1.5,1\n40,F,0.25,0\n33,F,1.0,1\n51,M,0.75,0\n"


def text_file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


# ----- mutations -------------------------------------------------------------------------------
#: What a fuzzer puts in place of a number.
HOSTILE_NUMBERS = [b"nan", b"inf", b"-inf", b"1e400", b"-1", b"0", b"9" * 400, b"1e9", b"2147483648", b"-0.5"]
NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def mutate(data: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    """Apply mutations (kind, position, choice): positions and choices are taken modulo what fits."""
    for kind, pos, choice in ops:
        if not data:
            break
        p = pos % len(data)
        if kind == "flip":
            data = data[:p] + bytes([data[p] ^ (1 << (choice % 8))]) + data[p + 1 :]
        elif kind == "truncate":
            data = data[:p]
        elif kind == "number":
            numbers = list(NUMBER.finditer(data))
            if numbers:
                m = numbers[pos % len(numbers)]
                data = data[: m.start()] + HOSTILE_NUMBERS[choice % len(HOSTILE_NUMBERS)] + data[m.end() :]
        elif kind == "delete_line":
            lines = data.split(b"\n")
            del lines[pos % len(lines)]
            data = b"\n".join(lines)
        elif kind == "duplicate_line":
            lines = data.split(b"\n")
            k = pos % len(lines)
            lines.insert(k, lines[k])
            data = b"\n".join(lines)
    return data


MUTATION_KINDS = ("flip", "truncate", "number", "delete_line", "duplicate_line")


# ----- readers, by format ----------------------------------------------------------------------
def _xgboost_parse(path: Path):
    from faircert.models.io.xgboost import read_model_document, xgboost_from_dict

    return xgboost_from_dict(read_model_document(path), str(path))


def _lightgbm_parse(path: Path):
    from faircert.models.io.lightgbm import lightgbm_from_text, read_model_text

    return lightgbm_from_text(read_model_text(path), str(path))


def _catboost_parse(path: Path):
    from faircert.errors import ModelFormatError
    from faircert.limits import loads_json, read_text
    from faircert.models.io.catboost import catboost_from_dict

    data = loads_json(read_text(path, ModelFormatError, "CatBoost JSON"), str(path), ModelFormatError)
    return catboost_from_dict(data, str(path))


def _load_model(path: Path):
    from faircert.models.io import load_model

    return load_model(path)


def _load_domain(path: Path):
    from faircert.domain import Domain

    return Domain.load(path)


def _load_program(path: Path):
    from faircert.models.program import load_program

    return load_program(path)


def _infer_domain(path: Path):
    from faircert.data import infer_domain

    return infer_domain(path, label="label")


def _audit_rows(path: Path):
    """The per-row audit of a CSV's rows (the domain inferred from them) by a small linear model."""
    import faircert
    from faircert.models.linear import ColumnEncoding, LinearModel

    model = LinearModel(
        np.array([0.05, 1.0, -0.5]),
        -1.0,
        (ColumnEncoding("age"), ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("income")),
    )
    return faircert.audit(model, path, protected="sex", epsilon={"age": 1}, time_limit=10)


#: format -> (file name, builder(folder) -> path, reader(path)). The `_parse` readers stop before the
#: framework's cross-check (pure Python); `load_model` runs everything, native parts in children.
FORMATS = {
    "nnet": ("m.nnet", nnet_file, _load_model),
    "keras": ("m.h5", keras_file, _load_model),
    "onnx": ("m.onnx", onnx_file, _load_model),
    "xgboost_json": ("m.json", xgboost_file, _xgboost_parse),
    "xgboost_ubj": ("m.ubj", lambda d: xgboost_file(d, ".ubj"), _xgboost_parse),
    "lightgbm": ("m.txt", lightgbm_file, _lightgbm_parse),
    "xgboost_full": ("m.json", xgboost_file, _load_model),
    "xgboost_ubj_full": ("m.ubj", lambda d: xgboost_file(d, ".ubj"), _load_model),
    "lightgbm_full": ("m.txt", lightgbm_file, _load_model),
    "catboost_json": ("m.json", catboost_file, _catboost_parse),
    "catboost_full": ("m.cbm", lambda d: catboost_file(d, ".cbm"), _load_model),
    "catboost_categorical_json": ("m.json", catboost_categorical_file, _catboost_parse),
    "catboost_categorical_full": ("m.cbm", lambda d: catboost_categorical_file(d, ".cbm"), _load_model),
    "linear": ("lin.json", linear_file, _load_model),
    "program": ("p.fr", lambda d: text_file(d, "p.fr", PROGRAM), _load_program),
    "domain_yaml": ("d.yaml", lambda d: text_file(d, "d.yaml", DOMAIN_YAML), _load_domain),
    "domain_json": (
        "d.json",
        lambda d: text_file(
            d,
            "d.json",
            json.dumps(
                {
                    "features": [
                        {"name": "age", "kind": "integer", "min": 18, "max": 90},
                        {"name": "sex", "kind": "binary", "protected": True},
                        {"name": "income", "kind": "real", "min": 0.0, "max": 1.5},
                    ]
                }
            ),
        ),
        _load_domain,
    ),
    "csv": ("d.csv", lambda d: text_file(d, "d.csv", CSV), _infer_domain),
    "rows_csv": ("rows.csv", lambda d: text_file(d, "rows.csv", CSV), _audit_rows),
}
