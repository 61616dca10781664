"""Child process: load a model file with its framework library and print raw scores.

Run as a script by `isolated.framework_outputs` with `python -P` (so that this folder's xgboost.py and
lightgbm.py do not shadow the libraries; never imported): argv is FRAMEWORK PATH, stdin an
.npy array of inputs, stdout an .npy array of raw scores (margins); FRAMEWORK catboost-json: no
stdin, stdout the `.cbm` file as CatBoost's JSON export. A library error is one line on
stderr prefixed `faircert-child:` and exit status 3; a native crash kills only this process.
"""

import io
import os
import resource
import sys

import numpy as np


def _limit_memory() -> None:
    limit = int(os.environ.get("FAIRCERT_CHILD_MEMORY", "0"))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if limit > 0:  # never above a limit the parent already runs under
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _scores(framework: str, path: str, X: np.ndarray) -> np.ndarray:
    if framework == "xgboost":
        import xgboost as xgb

        booster = xgb.Booster(model_file=path)
        return booster.predict(xgb.DMatrix(X), output_margin=True, validate_features=False)
    if framework == "lightgbm":
        import lightgbm as lgb

        return lgb.Booster(model_file=path).predict(X, raw_score=True)
    if framework == "catboost":
        return _catboost(path).predict(X, prediction_type="RawFormulaVal")
    raise ValueError(f"unknown framework {framework!r}")


def _catboost(path: str):
    from catboost import CatBoost

    model = CatBoost()
    model.load_model(path, format="json" if path.endswith(".json") else "cbm")
    return model


def _catboost_json(path: str) -> bytes:
    """The `.cbm` file at `path` as CatBoost's JSON export."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "model.json")
        _catboost(path).save_model(out, format="json")
        with open(out, "rb") as f:
            return f.read()


def main() -> int:
    _limit_memory()
    framework, path = sys.argv[1], sys.argv[2]
    if framework == "catboost-json":  # no inputs: the file converted
        try:
            sys.stdout.buffer.write(_catboost_json(path))
        except Exception as exc:  # noqa: BLE001 - any library error is "cannot read this file"
            print(f"faircert-child: {' '.join(str(exc).split()) or type(exc).__name__}", file=sys.stderr)
            return 3
        return 0
    X = np.load(io.BytesIO(sys.stdin.buffer.read()), allow_pickle=False)
    try:
        out = np.asarray(_scores(framework, path, X), dtype=np.float64).reshape(-1)
    except Exception as exc:  # noqa: BLE001 - any library error is "cannot read this file"
        message = " ".join(str(exc).split("Stack trace", 1)[0].split())
        print(f"faircert-child: {message or type(exc).__name__}", file=sys.stderr)
        return 3
    buffer = io.BytesIO()
    np.save(buffer, out, allow_pickle=False)
    sys.stdout.buffer.write(buffer.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
