"""Child process: a CatBoost model file's raw scores of raw rows (numbers, and categories by name).

Run as a script by `catboost.file_reference` with `python -P` (never imported): argv is PATH, stdin a
JSON object {"columns": [...], "rows": [[...], ...]}, stdout an .npy array of raw scores. A library
error is one line on stderr prefixed `faircert-child:` and exit status 3; a native crash kills only
this process.
"""

import io
import json
import os
import resource
import sys

import numpy as np


def main() -> int:
    limit = int(os.environ.get("FAIRCERT_CHILD_MEMORY", "0"))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if limit > 0:  # never above a limit the parent already runs under
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    path = sys.argv[1]
    try:
        import pandas as pd
        from catboost import CatBoost

        given = json.loads(sys.stdin.buffer.read())
        model = CatBoost()
        model.load_model(path, format="json" if path.endswith(".json") else "cbm")
        frame = pd.DataFrame(given["rows"], columns=given["columns"])
        out = np.asarray(model.predict(frame, prediction_type="RawFormulaVal"), dtype=np.float64).reshape(-1)
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
