"""The practitioner benchmark: scikit-learn Pipelines on the raw columns of Adult, German, Bank and COMPAS.

Run `python benchmarks/practitioner.py [--datasets adult,german,bank,compas] [--models ...]
[--time-limit 60] [--rows 2000]`; each dataset's numbers go to
`benchmarks/results/practitioner/<dataset>.json`, and the table of every dataset measured so far to
`benchmarks/results/practitioner.md` and `.json`.

Every model is `Pipeline(ColumnTransformer(OneHotEncoder on the categorical columns, StandardScaler
on the numeric ones), classifier)`, trained with fixed seeds on all rows but a held-out set. For
each: accuracy on the held-out rows; `verify` over the uniform domain inferred from the data (the
time limit per model); the per-row audit of up to `--rows` held-out rows with epsilon 0 (the flip
test) and with the epsilon of the dataset (age 2, hours or duration 5, every other integer feature
its unit), with the wall time of each run beside its limit. One worker process per run, so the
times are those of one core.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import faircert

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "benchmarks" / "data"
OUT = ROOT / "benchmarks" / "results" / "practitioner"
warnings.filterwarnings("ignore")


# ----- datasets: raw columns, label, protected attribute, per-row epsilon ---------------------------
def adult():
    cols = [
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education-num",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
        "native-country",
        "y",
    ]
    df = pd.read_csv(DATA / "adult" / "adult.data", names=cols, skipinitialspace=True, na_values="?").dropna()
    df = df.drop(columns="fnlwgt")
    df["y"] = (df["y"] == ">50K").astype(int)
    eps = {"age": 2, "hours-per-week": 5, "education-num": 1, "capital-gain": 1, "capital-loss": 1}
    return df.reset_index(drop=True), "sex", eps


def german():
    names = [
        "checking",
        "duration",
        "history",
        "purpose",
        "amount",
        "savings",
        "employment",
        "rate",
        "status_sex",
        "debtors",
        "residence",
        "property",
        "age",
        "plans",
        "housing",
        "credits",
        "job",
        "liable",
        "telephone",
        "foreign",
        "y",
    ]
    df = pd.read_csv(DATA / "german" / "german.data", sep=r"\s+", header=None, names=names)
    df["sex"] = np.where(df["status_sex"].isin(["A92", "A95"]), "female", "male")
    df = df.drop(columns="status_sex")
    df["y"] = (df["y"] == 1).astype(int)
    eps = {"age": 2, "duration": 5, "amount": 1, "rate": 1, "residence": 1, "credits": 1, "liable": 1}
    return df, "sex", eps


def bank():
    df = pd.read_csv(DATA / "bank" / "bank-additional.csv", sep=";")
    df["y"] = (df["y"] == "yes").astype(int)
    eps = {"age": 2, "duration": 5, "campaign": 1, "pdays": 1, "previous": 1}
    return df, "marital", eps


def compas():
    raw = pd.read_csv(DATA / "compas" / "compas-scores-two-years.csv")
    df = (
        raw[
            [
                "sex",
                "age",
                "race",
                "juv_fel_count",
                "juv_misd_count",
                "juv_other_count",
                "priors_count",
                "c_charge_degree",
                "two_year_recid",
            ]
        ]
        .rename(columns={"two_year_recid": "y"})
        .dropna()
    )
    eps = {"age": 2, "juv_fel_count": 1, "juv_misd_count": 1, "juv_other_count": 1, "priors_count": 1}
    return df.reset_index(drop=True), "race", eps


DATASETS = {"adult": adult, "german": german, "bank": bank, "compas": compas}


# ----- models ----------------------------------------------------------------------------------------
def classifiers() -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    out = {
        "LogisticRegression": lambda: LogisticRegression(max_iter=1000),
        "MLP(64,64)": lambda: MLPClassifier((64, 64), max_iter=200, early_stopping=True, random_state=0),
        "RandomForest 100x10": lambda: RandomForestClassifier(100, max_depth=10, random_state=0, n_jobs=1),
        "HistGradientBoosting": lambda: HistGradientBoostingClassifier(random_state=0),
    }
    try:
        from xgboost import XGBClassifier

        out["XGBoost 100x6"] = lambda: XGBClassifier(n_estimators=100, max_depth=6, random_state=0, n_jobs=1)
    except ImportError:
        pass
    try:
        from lightgbm import LGBMClassifier

        out["LightGBM 100x31"] = lambda: LGBMClassifier(
            n_estimators=100, num_leaves=31, random_state=0, n_jobs=1, verbose=-1
        )
    except ImportError:
        pass
    return out


def pipeline(X: pd.DataFrame, classifier):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    categorical = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    numeric = [c for c in X.columns if c not in categorical]
    prep = ColumnTransformer(
        [
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
            ("num", StandardScaler(), numeric),
        ]
    )
    return Pipeline([("prep", prep), ("clf", classifier)])


# ----- runs ------------------------------------------------------------------------------------------
def timed(call):
    t0 = time.perf_counter()
    try:
        return call(), time.perf_counter() - t0, None
    except faircert.errors.FaircertError as exc:
        return None, time.perf_counter() - t0, str(exc).splitlines()[0]


def held_out(n: int, n_rows: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Training and held-out row indices (fixed seed): min(n_rows, n / 4) rows held out."""
    test = np.random.default_rng(0).permutation(n)[: min(n_rows, n // 4)]
    return np.setdiff1d(np.arange(n), test), test


def fitted(name: str, model_name: str, n_rows: int = 2000):
    """(the fitted pipeline, the raw columns, the protected attribute) as `measure` trains them."""
    df, protected, _ = DATASETS[name]()
    X, y = df.drop(columns="y"), df["y"]
    train, _ = held_out(len(df), n_rows)
    return pipeline(X, classifiers()[model_name]()).fit(X.iloc[train], y.iloc[train]), X, protected


PARTS = ("uniform", "independent", "bayesnet", "rows")


def measure(
    name: str, model_names: list[str], time_limit: float, n_rows: int, parts: tuple[str, ...] = PARTS
) -> list[dict]:
    df, protected, eps = DATASETS[name]()
    X, y = df.drop(columns="y"), df["y"]
    train, test = held_out(len(df), n_rows)
    rows = []
    for model_name, make in classifiers().items():
        if model_names and model_name not in model_names:
            continue
        model = pipeline(X, make()).fit(X.iloc[train], y.iloc[train])
        row = {
            "dataset": name,
            "model": model_name,
            "protected": protected,
            "rows": len(test),
            "accuracy": float((model.predict(X.iloc[test]) == y.iloc[test]).mean()),
            "time_limit": time_limit,
        }
        if "uniform" in parts:
            result, wall, error = timed(
                lambda: faircert.verify(model, X, protected=protected, time_limit=time_limit, workers=1)
            )
            row["uniform"] = (
                {"error": error}
                if result is None
                else {
                    "engine": result.engine,
                    "certified": result.certified,
                    "falsified": result.falsified,
                    "undecided": result.undecided,
                    "exact": result.exact,
                    "engine_s": result.elapsed_s,
                    "wall_s": wall,
                    "statistical_unfair": result.statistical.unfair if result.statistical else None,
                    "statistical": result.statistical.to_dict() if result.statistical else None,
                    "stopped": result.stopped,
                }
            )
        for population in ("independent", "bayesnet"):
            if population in parts:
                result, wall, error = timed(
                    lambda: faircert.verify(
                        model, X, protected=protected, population=population, data=X, time_limit=time_limit, workers=1
                    )
                )
                row[population] = (
                    {"error": error}
                    if result is None
                    else {
                        "engine": result.engine,
                        "certified": result.certified,
                        "falsified": result.falsified,
                        "undecided": result.undecided,
                        "exact": result.exact,
                        "wall_s": wall,
                        "estimate": result.statistical.unfair if result.statistical else None,
                        "statistical": result.statistical.to_dict() if result.statistical else None,
                    }
                )
        for key, epsilon in (("rows_flip", None), ("rows_eps", eps)) if "rows" in parts else ():
            result, wall, error = timed(
                lambda: faircert.audit(
                    model, X.iloc[test], X, protected=protected, epsilon=epsilon, time_limit=time_limit, workers=1
                )
            )
            row[key] = (
                {"error": error}
                if result is None
                else {
                    "engine": result.engine,
                    **result.counts(),
                    "flip_unfair": result.flip_unfair,
                    "engine_s": result.elapsed_s,
                    "wall_s": wall,
                    "stopped": result.stopped,
                }
            )
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# ----- tables ----------------------------------------------------------------------------------------
def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.4g}%"


def markdown(rows: list[dict]) -> str:
    out = [
        "# Practitioner benchmark: scikit-learn Pipelines on raw columns",
        "",
        "More models (CatBoost with categorical features, AdaBoost, Bagging, Voting, PyTorch MLPs with tanh "
        "and GELU, TargetEncoder + GradientBoosting, RBF SVC, KNN): see "
        "[practitioner_more.md](practitioner_more.md).",
        "",
        "One-hot encoding and scaling before each classifier; trained with fixed seeds; one core per run. "
        "Uniform: `verify` over the domain inferred from the data (grid counts); `exact` says whether the "
        "shares are exact (otherwise sound bounds whose gap is the undecided share). Rows: the per-row audit "
        "of held-out rows, with epsilon 0 (flip test) and with the dataset's epsilon. Wall: seconds of the "
        "whole call (binding the pipeline included) against the time limit.",
        "",
        "| dataset (protected) | model | accuracy | uniform: certified / unfair / undecided | uniform: "
        "statistical unfair share [99% CI] (width) | exact | engine | wall / limit | independent: P[unfair] | "
        "bayesnet: P[unfair] (estimate) | rows | flip: unfair / unknown | eps: unfair / unknown | "
        "rows wall (flip, eps) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        u = r["uniform"]
        uni = (
            u["error"] if "error" in u else f"{_pct(u['certified'])} / {_pct(u['falsified'])} / {_pct(u['undecided'])}"
        )
        flip, eps = r["rows_flip"], r["rows_eps"]

        def counts(x):
            return x["error"] if "error" in x else f"{x['unfair']} / {x['unknown']}"

        def wall(x):
            return "-" if "error" in x else f"{x['wall_s']:.1f}"

        ind, bn = (_probability(r.get(p) or {"error": "not measured"}) for p in ("independent", "bayesnet"))
        out.append(
            f"| {r['dataset']} ({r['protected']}) | {r['model']} | {r['accuracy']:.3f} | {uni} | "
            f"{_interval(u.get('statistical')) if 'statistical' in u else 'not measured'} | "
            f"{u.get('exact', '-')} | {u.get('engine', '-')} | "
            f"{u.get('wall_s', 0):.1f} / {r['time_limit']:g} | {ind} | {bn} | {r['rows']} | {counts(flip)} | "
            f"{counts(eps)} | {wall(flip)}, {wall(eps)} |"
        )
    out += [
        "",
        "Independent: `verify --population independent` (each feature drawn from the data, features "
        "independent): P[a person has an unfair twin], exact for linear pipelines, sound bounds [proven unfair, "
        "proven unfair + undecided] for networks (box refinement under the data's marginals; a real "
        "feature's box holds the data values in [lo, hi), so a value on a cut counts once), with the sampled "
        "estimate in brackets, exact for tree ensembles (the uniform engine on each feature's grid stretched "
        "by its counts) when its bounds meet, sound bounds otherwise. Bayesnet: `verify --population bayesnet` (a "
        "Bayesian network learned "
        "from the data, numeric columns in 10 bins holding the data's values): sound bounds on the same "
        "probability (score histograms for linear pipelines, box refinement of the network's CDF space for "
        "the others), with the estimate from 20,000 draws of the network where the bounds stay apart. "
        "Rows: the held-out rows are min(2000, a quarter of the data).",
    ]
    return "\n".join(out) + "\n"


def _interval(block: dict | None) -> str:
    """A statistical block as value [low, high] (width); "-" where the engine samples nothing (the
    shares are exact, or bounds within rounding)."""
    if not block:
        return "-"
    if block["samples"] == 0 and block["low"] == block["high"]:
        return f"{_pct(block['value'])} (exact)"
    width = block["high"] - block["low"]
    return f"{_pct(block['value'])} [{_pct(block['low'])}, {_pct(block['high'])}] ({_pct(width)})"


def _probability(x: dict) -> str:
    """P[unfair] under a population: exact, or [lower, upper] (the statistical answer beside them,
    with its interval where measured)."""
    if "error" in x:
        return x["error"]
    if x["undecided"] < 1e-12:
        return _pct(x["falsified"])
    if x.get("statistical"):
        estimate = f" ({_interval(x['statistical'])})"
    else:
        estimate = f" ({_pct(x['estimate'])})" if x.get("estimate") is not None else ""
    return f"[{_pct(x['falsified'])}, {_pct(x['falsified'] + x['undecided'])}]{estimate}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--models", default="")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help="which measurements to run (a run of some parts keeps the others' stored numbers)",
    )
    args = parser.parse_args()
    parts = tuple(p for p in args.parts.split(",") if p)
    if not set(parts) <= set(PARTS):
        parser.error(f"--parts: choose among {', '.join(PARTS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    models = [m for m in re.split(r",(?![^(]*\))", args.models) if m]  # "MLP(64,64)" is one name
    for name in args.datasets.split(","):
        rows = measure(name, models, args.time_limit, args.rows, parts)
        path = OUT / f"{name}.json"
        stored = {r["model"]: r for r in json.loads(path.read_text())} if path.exists() else {}
        # a run of some parts keeps the stored numbers of the others (the same model, trained alike)
        rows = [{**stored.get(r["model"], {}), **r} for r in rows]
        if models and path.exists():  # a run of some models replaces theirs and keeps the others
            kept = [r for r in stored.values() if r["model"] not in models]
            order = list(classifiers())
            rows = sorted(kept + rows, key=lambda r: order.index(r["model"]) if r["model"] in order else len(order))
        path.write_text(json.dumps(rows, indent=1) + "\n")
    everything = [
        r
        for name in DATASETS
        if (OUT / f"{name}.json").exists()
        for r in json.loads((OUT / f"{name}.json").read_text())
    ]
    (OUT.parent / "practitioner.json").write_text(json.dumps(everything, indent=1) + "\n")
    (OUT.parent / "practitioner.md").write_text(markdown(everything))


if __name__ == "__main__":
    main()
