"""The practitioner benchmark's second zoo, "more models": what a practitioner trains beyond the first
zoo, on the raw columns of Adult and COMPAS.

Run `python benchmarks/practitioner_more.py [--datasets adult,compas] [--models ...] [--time-limit 15]
[--rows 300] [--train 6000]`; the table goes to `benchmarks/results/practitioner_more.md` and `.json`.

Datasets, held-out rows and per-row epsilons are those of `practitioner.py`; each model is trained
with fixed seeds on `--train` of its training rows. The models: CatBoost on the raw columns with
categorical features (100 trees of depth 6; one-column CTRs, read exactly, and CatBoost's default
CTRs over combinations of up to 4 columns, a black box), AdaBoost, Bagging and soft Voting over trees, two PyTorch MLPs
(tanh, GELU) exported to ONNX and read with their fitted preprocessing, TargetEncoder + gradient
boosting, an RBF SVC and k-nearest neighbours (scikit-learn Pipelines on the practitioner zoo's
encoding where they need one). For each: the per-row audit of `--rows` held-out rows at the
dataset's epsilon (decided share, engine), `explain` of those rows (its top rule), `verify` over the
domain inferred from the data (sound shares and the statistical answer, engine), and `group` over
the held-out rows (the data's rows, then a population with independent features learned from them:
engine, DI with its interval). Each call gets the time limit; one worker process per call.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from practitioner import DATASETS, held_out, pipeline, timed

import faircert
from faircert.subgroups import explain_rows

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
NAMES = ("adult", "compas")
warnings.filterwarnings("ignore")


# ----- models: (X, y) -> (the model as faircert takes it, loading keywords) ---------------------------
def _categorical(X: pd.DataFrame) -> list[str]:
    return [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]


def catboost_model(combinations: bool):
    def fit(X, y, folder):
        from catboost import CatBoostClassifier

        model = CatBoostClassifier(
            iterations=100,
            depth=6,
            random_seed=0,
            thread_count=1,
            verbose=0,
            allow_writing_files=False,
            cat_features=_categorical(X),
            max_ctr_complexity=4 if combinations else 1,
        )
        return model.fit(X, y), {}

    return fit


def sklearn_model(make):
    def fit(X, y, folder):
        return pipeline(X, make()).fit(X, y), {}

    return fit


def target_encoded(X, y, folder):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import TargetEncoder

    prep = ColumnTransformer(
        [("cat", TargetEncoder(random_state=0), _categorical(X))], remainder="passthrough", sparse_threshold=0
    )
    model = Pipeline([("prep", prep), ("clf", GradientBoostingClassifier(random_state=0))])
    return model.fit(X, y), {}


def torch_mlp(activation: str):
    def fit(X, y, folder):
        import torch

        prep = pipeline(X, None).steps[0][1].fit(X)  # the practitioner zoo's encoding, fitted alone
        Z = torch.tensor(np.asarray(prep.transform(X), dtype=np.float32))
        target = torch.tensor(np.asarray(y, dtype=np.float32))[:, None]
        torch.manual_seed(0)
        unit = {"tanh": torch.nn.Tanh, "gelu": torch.nn.GELU}[activation]
        net = torch.nn.Sequential(
            torch.nn.Linear(Z.shape[1], 32), unit(), torch.nn.Linear(32, 32), unit(), torch.nn.Linear(32, 1)
        )
        optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
        for _ in range(150):  # full-batch training: a few seconds
            optimiser.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(Z), target)
            loss.backward()
            optimiser.step()
        path = Path(folder) / f"mlp_{activation}.onnx"
        torch.onnx.export(net, (Z[:1],), str(path), input_names=["x"], output_names=["logit"], dynamo=False)
        return str(path), {"preprocessor": prep}

    return fit


def models() -> dict:
    from sklearn.ensemble import (
        AdaBoostClassifier,
        BaggingClassifier,
        ExtraTreesClassifier,
        RandomForestClassifier,
        VotingClassifier,
    )
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    return {
        "CatBoost 100x6 (one-column CTRs)": catboost_model(combinations=False),
        "CatBoost 100x6 (CTR combinations)": catboost_model(combinations=True),
        "AdaBoost 50 stumps": sklearn_model(lambda: AdaBoostClassifier(n_estimators=50, random_state=0)),
        "Bagging 30 trees (depth 8)": sklearn_model(
            lambda: BaggingClassifier(DecisionTreeClassifier(max_depth=8), n_estimators=30, random_state=0)
        ),
        "Voting soft (RF, ExtraTrees, tree)": sklearn_model(
            lambda: VotingClassifier(
                [
                    ("rf", RandomForestClassifier(30, max_depth=8, random_state=0)),
                    ("et", ExtraTreesClassifier(30, max_depth=8, random_state=0)),
                    ("dt", DecisionTreeClassifier(max_depth=6, random_state=0)),
                ],
                voting="soft",
            )
        ),
        "MLP 32x32 tanh (PyTorch, ONNX)": torch_mlp("tanh"),
        "MLP 32x32 GELU (PyTorch, ONNX)": torch_mlp("gelu"),
        "TargetEncoder + GradientBoosting": target_encoded,
        "SVC (RBF)": sklearn_model(lambda: SVC(kernel="rbf", random_state=0)),
        "KNN (k=15)": sklearn_model(lambda: KNeighborsClassifier(15)),
    }


# ----- runs ------------------------------------------------------------------------------------------
def _accuracy(model, loading, X, y) -> float | None:
    if isinstance(model, str):  # an ONNX network: faircert's own reading of it decides the rows
        return None
    return float((np.asarray(model.predict(X)) == np.asarray(y)).mean())


def rows_part(model, loading, X, test_rows, protected, eps, limit) -> tuple[dict, dict]:
    """The per-row audit of the held-out rows, and `explain` of its verdicts."""
    audited, wall, error = timed(
        lambda: faircert.audit(
            model, test_rows, X, protected=protected, epsilon=eps, time_limit=limit, workers=1, **loading
        )
    )
    if audited is None:
        return {"error": error}, {"error": error}
    counts = audited.counts()
    rows = {
        "engine": audited.engine,
        **counts,
        "decided": (counts["fair"] + counts["unfair"]) / max(len(test_rows), 1),
        "wall_s": wall,
        "stopped": audited.stopped,
    }
    explained, explain_wall, error = timed(lambda: explain_rows(audited, test_rows.reset_index(drop=True), seed=0))
    if explained is None:
        return rows, {"error": error}
    top = explained.rules[0] if explained.rules else None
    return rows, {
        "engine": audited.engine,
        "rules": len(explained.rules),
        "top_rule": str(top) if top else None,
        "top_lift": None if top is None else top.lift,
        "top_rows": None if top is None else top.rows,
        "wall_s": explain_wall,
    }


def verify_part(model, loading, X, protected, limit) -> dict:
    result, wall, error = timed(
        lambda: faircert.verify(model, X, protected=protected, time_limit=limit, workers=1, **loading)
    )
    if result is None:
        return {"error": error}
    return {
        "engine": result.engine,
        "certified": result.certified,
        "falsified": result.falsified,
        "undecided": result.undecided,
        "statistical": result.statistical.to_dict() if result.statistical else None,
        "black_box": result.stats.get("black_box"),
        "wall_s": wall,
        "stopped": result.stopped,
    }


def group_part(model, loading, data, protected, limit, population) -> dict:
    result, wall, error = timed(
        lambda: faircert.group(
            model, data, protected=protected, label="y", population=population, time_limit=limit, **loading
        )
    )
    if result is None:
        return {"error": error}
    di = result.metrics["di"]
    _, metrics = result.statistical_blocks()
    return {
        "engine": result.engine,
        "di_low": di.low,
        "di_high": di.high,
        "di_statistical": metrics.get("di"),
        "wall_s": wall,
    }


def measure(name: str, names: list[str], limit: float, n_rows: int, n_train: int, folder: str) -> list[dict]:
    df, protected, eps = DATASETS[name]()
    X, y = df.drop(columns="y"), df["y"]
    train, test = held_out(len(df), 2000)
    train = np.random.default_rng(1).permutation(train)[:n_train]
    test_rows, test_data = X.iloc[test[:n_rows]], df.iloc[test]
    out = []
    for model_name, fit in models().items():
        if names and model_name not in names:
            continue
        t0 = time.perf_counter()
        model, loading = fit(X.iloc[train], y.iloc[train], folder)
        row = {
            "dataset": name,
            "model": model_name,
            "protected": protected,
            "train_rows": len(train),
            "fit_s": time.perf_counter() - t0,
            "accuracy": _accuracy(model, loading, X.iloc[test], y.iloc[test]),
            "time_limit": limit,
            "audited_rows": len(test_rows),
        }
        row["rows"], row["explain"] = rows_part(model, loading, X, test_rows, protected, eps, limit)
        row["verify"] = verify_part(model, loading, X, protected, limit)
        row["group_rows"] = group_part(model, loading, test_data, protected, limit, "empirical")
        row["group_independent"] = group_part(model, loading, test_data, protected, limit, "independent")
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


# ----- tables ----------------------------------------------------------------------------------------
def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.3g}%"


def _interval(block: dict | None) -> str:
    if not block:
        return "-"
    return f"{_pct(block['value'])} [{_pct(block['low'])}, {_pct(block['high'])}]"


def _verify_cell(v: dict) -> str:
    if "error" in v:
        return f"error: {v['error']}"
    sound = f"{_pct(v['certified'])} / {_pct(v['falsified'])} / {_pct(v['undecided'])}"
    return f"{sound}; statistical unfair {_interval(v['statistical'])}"


def _group_cell(g: dict) -> str:
    if "error" in g:
        return f"error: {g['error']}"
    sound = f"{g['di_low']:.3f}" if g["di_low"] == g["di_high"] else f"[{g['di_low']:.3f}, {g['di_high']:.3f}]"
    block = g.get("di_statistical")
    sampled = f"; sampled {block['value']:.3f} [{block['low']:.3f}, {block['high']:.3f}]" if block else ""
    return f"{sound}{sampled} ({g['engine']})"


def _rows_cell(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    return f"{_pct(r['decided'])} ({r['unfair']} unfair, {r['unknown']} unknown)"


def _explain_cell(e: dict) -> str:
    if "error" in e:
        return f"error: {e['error']}"
    if not e["top_rule"]:
        return "no rule (none reaches lift 3)"
    return f"{e['top_rule']} (lift {e['top_lift']:.2g}, {e['top_rows']} rows)".replace("|", "/")


def markdown(rows: list[dict]) -> str:
    out = [
        '# Practitioner benchmark, "more models"',
        "",
        "Written by `benchmarks/practitioner_more.py`. Datasets, held-out rows and per-row epsilons as in "
        "`practitioner.md`; each model trained on 6,000 of its training rows with fixed seeds. Every call "
        f"ran with a {rows[0]['time_limit']:g} s time limit and one worker, on a machine shared with other "
        "jobs (timings are under load). Rows: the per-row audit of the first "
        f"{rows[0]['audited_rows']} held-out rows at the dataset's epsilon: the share decided (fair or "
        "unfair; a black box never answers fair where its ball was too large to enumerate) and its engine. "
        "Explain: the top rule locating the unfair rows among them (rules need a lift of 3). Verify: the "
        "domain inferred from the data, uniform measure: certified / proven unfair / undecided, then the "
        "statistical unfair share with its 99% interval. Group: DI over the 2,000 held-out rows (the data's "
        "rows), then under independent features learned from them (sound bounds; sampled estimate with its "
        "interval where given).",
        "",
        "| dataset (protected) | model | accuracy | rows: decided (engine) | explain: top rule | verify "
        "(engine): certified / unfair / undecided; statistical | group: DI over the rows | group: DI, "
        "independent population |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        acc = "-" if r["accuracy"] is None else f"{r['accuracy']:.3f}"
        rows_engine = r["rows"].get("engine", "-")
        verify_engine = r["verify"].get("engine", "-")
        out.append(
            f"| {r['dataset']} ({r['protected']}) | {r['model']} | {acc} | {_rows_cell(r['rows'])} "
            f"({rows_engine}) | {_explain_cell(r['explain'])} | ({verify_engine}) {_verify_cell(r['verify'])} | "
            f"{_group_cell(r['group_rows'])} | {_group_cell(r['group_independent'])} |"
        )
    black = sorted({(r["model"], r["verify"]["black_box"]) for r in rows if r["verify"].get("black_box")})
    if black:
        out += ["", "Why a model is a black box (the reader's words):", ""]
        out += [f"- {model}: {reason}" for model, reason in dict(black).items()]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(NAMES))
    parser.add_argument("--models", default="", help="model names separated by ';'")
    parser.add_argument("--time-limit", type=float, default=15.0)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--train", type=int, default=6000)
    parser.add_argument("--out", default=str(OUT / "practitioner_more"), help="output path without suffix")
    args = parser.parse_args()
    names = [m for m in args.models.split(";") if m]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.datasets.split(","):
            rows += measure(name, names, args.time_limit, args.rows, args.train, folder)
    out = Path(args.out)
    stored = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else []
    if names:  # a run of some models replaces their rows and keeps the others, in the zoo's order
        fresh = {(r["dataset"], r["model"]) for r in rows}
        order = list(models())
        rows = [r for r in stored if (r["dataset"], r["model"]) not in fresh] + rows
        rows.sort(key=lambda r: (NAMES.index(r["dataset"]), order.index(r["model"])))
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
