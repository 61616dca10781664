"""Child process: a native library (XGBoost, LightGBM, CatBoost, HDF5) run on an untrusted model file.

Run as a script by `isolated.run_isolated` with `python -P` (so that this folder's xgboost.py and
lightgbm.py do not shadow the libraries; never imported); a native crash kills only this process.
argv is JOB and its arguments; stdout is the job's answer:
- `xgboost|lightgbm|catboost PATH`: stdin an .npy array of inputs, stdout an .npy array of raw
  scores (margins);
- `catboost-json PATH`: stdout the `.cbm` file as CatBoost's JSON export;
- `catboost-rows PATH`: stdin a JSON object {"columns": [...], "rows": [[...], ...]} of raw rows
  (categories by name), stdout an .npy array of raw scores;
- `catboost-serve PATH`: the model loaded once, then one request after another until stdin closes
  (`serve`): each an 8-byte length and a `catboost-rows` object, each answered by a status byte
  (0: an .npy array of raw scores follows; 3: a one-line reason follows), an 8-byte length and
  the bytes;
- `hdf5 PATH MAX_NODES MAX_VALUES MAX_DEPTH` (PATH `-`: the file's bytes on stdin): stdout an .npz
  with the file's groups, attributes and numeric datasets, a JSON manifest (`manifest`) and one
  array per dataset (`d0`, `d1`, ...). Links to other files, external or virtual storage and soft
  links are refused, not followed.
A library error or a refusal is one line on stderr prefixed `faircert-child:` and exit status 3.
"""

import io
import json
import os
import resource
import sys
from collections.abc import Callable
from functools import partial

import numpy as np


class Refused(Exception):
    """The file is readable but not acceptable."""


def _limit_memory() -> None:
    limit = int(os.environ.get("FAIRCERT_CHILD_MEMORY", "0"))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if limit > 0:  # never above a limit the parent already runs under
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _npy(out) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(out, dtype=np.float64).reshape(-1), allow_pickle=False)
    return buffer.getvalue()


# ----- frameworks ---------------------------------------------------------------------------------
def _scores(framework: str, path: str, stdin: bytes) -> bytes:
    X = np.load(io.BytesIO(stdin), allow_pickle=False)
    if framework == "xgboost":
        import xgboost as xgb

        booster = xgb.Booster(model_file=path)
        return _npy(booster.predict(xgb.DMatrix(X), output_margin=True, validate_features=False))
    if framework == "lightgbm":
        import lightgbm as lgb

        return _npy(lgb.Booster(model_file=path).predict(X, raw_score=True))
    if framework == "catboost":
        return _npy(_catboost(path).predict(X, prediction_type="RawFormulaVal"))
    raise ValueError(f"unknown framework {framework!r}")


def _catboost(path: str):
    from catboost import CatBoost

    model = CatBoost()
    model.load_model(path, format="json" if path.endswith(".json") else "cbm")
    return model


def _catboost_json(path: str, stdin: bytes) -> bytes:
    """The `.cbm` file at `path` as CatBoost's JSON export."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "model.json")
        _catboost(path).save_model(out, format="json")
        with open(out, "rb") as f:
            return f.read()


def _catboost_rows(path: str, stdin: bytes, model=None) -> bytes:
    import pandas as pd

    given = json.loads(stdin)
    frame = pd.DataFrame(given["rows"], columns=given["columns"])
    model = _catboost(path) if model is None else model
    return _npy(model.predict(frame, prediction_type="RawFormulaVal"))


def serve(path: str) -> int:
    """`catboost-serve`: one process answers every batch of a run, so the start (Python, CatBoost,
    the model) is paid once. A file CatBoost cannot load ends the process as any job does."""
    try:
        model = _catboost(path)
    except Exception as exc:  # noqa: BLE001 - any library error is "cannot read this file"
        print(f"faircert-child: {_reason('catboost-rows', exc)}", file=sys.stderr)
        return 3
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while len(head := stdin.read(8)) == 8:
        given = stdin.read(int.from_bytes(head, "little"))
        try:
            status, out = 0, _catboost_rows(path, given, model)
        except Exception as exc:  # noqa: BLE001 - these rows cannot be scored; the next may be
            status, out = 3, _reason("catboost-rows", exc).encode("utf-8", "replace")
        stdout.write(bytes([status]) + len(out).to_bytes(8, "little") + out)
        stdout.flush()
    return 0


# ----- HDF5 ---------------------------------------------------------------------------------------
def _hdf5(source: str, max_nodes: str, max_values: str, max_depth: str, stdin: bytes) -> bytes:
    import h5py

    arrays: list[np.ndarray] = []  # filled by _walk, through state["arrays"]
    state = {
        "nodes": 0,
        "values": 0,
        "arrays": arrays,
        "max_nodes": int(max_nodes),
        "max_values": int(max_values),
        "max_depth": int(max_depth),
    }
    with h5py.File(io.BytesIO(stdin) if source == "-" else source, "r") as f:
        tree = _walk(h5py, f, "", 0, state)
    buffer = io.BytesIO()
    named = {f"d{k}": a for k, a in enumerate(arrays)}
    # mypy also matches **named against savez's allow_pickle: bool
    np.savez(buffer, manifest=np.array(json.dumps(tree)), **named)  # type: ignore[arg-type]
    return buffer.getvalue()


def _attrs(obj) -> dict:
    out = {}
    for key in obj.attrs:
        value = obj.attrs[key]
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, np.ndarray) and value.dtype.kind in "SOU" and value.ndim <= 1:
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in value.tolist()]
        elif isinstance(value, (np.generic, np.ndarray)) and np.asarray(value).dtype.kind in "iufb":
            value = np.asarray(value).tolist()
        elif not isinstance(value, str):
            continue  # other attribute types are never read by faircert
        out[key] = value
    return out


def _walk(h5py, group, path: str, depth: int, state: dict) -> dict:
    if depth > state["max_depth"]:
        raise Refused(f"groups nested more than {state['max_depth']} levels deep")
    node = {"attrs": _attrs(group), "children": {}}
    for name in group:
        state["nodes"] += 1
        if state["nodes"] > state["max_nodes"]:
            raise Refused(f"more than {state['max_nodes']} groups and datasets")
        where = f"{path}/{name}"
        link = group.get(name, getlink=True)
        if isinstance(link, h5py.ExternalLink):
            raise Refused(
                f"{where} is a link to another file ({link.filename[:80]}); faircert reads only the file it is given"
            )
        if isinstance(link, h5py.SoftLink):
            raise Refused(f"{where} is a soft link, which faircert does not follow")
        obj = group[name]
        if isinstance(obj, h5py.Group):
            node["children"][name] = _walk(h5py, obj, where, depth + 1, state)
            continue
        if not isinstance(obj, h5py.Dataset):
            continue  # named datatypes
        if obj.external or obj.is_virtual:
            raise Refused(
                f"{where}: the data is stored in other files (HDF5 external or virtual storage); faircert "
                "reads only the file it is given"
            )
        entry = {"attrs": _attrs(obj), "shape": list(obj.shape), "dtype": obj.dtype.str}
        if obj.dtype.kind in "iufb":
            state["values"] += int(obj.size)
            if state["values"] > state["max_values"]:
                raise Refused(f"more than {state['max_values']} stored values")
            entry["array"] = f"d{len(state['arrays'])}"
            state["arrays"].append(np.asarray(obj[()]))
        node["children"][name] = entry
    return node


# ----- the job ------------------------------------------------------------------------------------
JOBS: dict[str, Callable[..., bytes]] = {
    "xgboost": partial(_scores, "xgboost"),
    "lightgbm": partial(_scores, "lightgbm"),
    "catboost": partial(_scores, "catboost"),
    "catboost-json": _catboost_json,
    "catboost-rows": _catboost_rows,
    "hdf5": _hdf5,
}


def _reason(job: str, exc: Exception) -> str:
    """The library's error on one line, as each job has always reported it."""
    if isinstance(exc, Refused):
        return str(exc)
    if job == "hdf5":
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    text = str(exc) if job == "catboost-json" else str(exc).split("Stack trace", 1)[0]
    return " ".join(text.split()) or type(exc).__name__


def main() -> int:
    _limit_memory()
    job, args = sys.argv[1], sys.argv[2:]
    if job == "catboost-serve":
        return serve(*args)
    try:
        out = JOBS[job](*args, sys.stdin.buffer.read())
    except Exception as exc:  # noqa: BLE001 - any library error is "cannot read this file"
        print(f"faircert-child: {_reason(job, exc)}", file=sys.stderr)
        return 3
    sys.stdout.buffer.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
