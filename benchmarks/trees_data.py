"""Integer encodings of Adult, Bank, COMPAS and German for the tree-ensemble benchmark.

Every attribute becomes an integer code; numeric attributes stay integers (ages in decades, as the
fairness-testing encodings do), categorical ones are codes in sorted category order. The domain of
each attribute is its data range [min, max] (integer grid), categorical ones are marked categorical
(epsilon 0 under an epsilon rate, as in the paper).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faircert.domain import Domain, Feature

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATA = SHARED / "benchmarks" / "data"


def _codes(series: pd.Series) -> np.ndarray:
    return pd.Categorical(series.astype(str).str.strip()).codes.astype(np.int64)


def _finish(frame: pd.DataFrame, label: np.ndarray, categorical: set[str]):
    X = frame.to_numpy(dtype=np.float64)
    feats = tuple(
        Feature(c, "categorical" if c in categorical else "integer", int(frame[c].min()), int(frame[c].max()))
        for c in frame.columns
    )
    return X, label.astype(np.int64), Domain(feats)


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
    out = pd.DataFrame(
        {
            "age": df["age"] // 10,
            "workclass": _codes(df["workclass"]),
            "education": _codes(df["education"]),
            "education-num": df["education-num"],
            "marital-status": _codes(df["marital-status"]),
            "occupation": _codes(df["occupation"]),
            "relationship": _codes(df["relationship"]),
            "race": _codes(df["race"]),
            "sex": _codes(df["sex"]),
            "capital-gain": np.minimum(df["capital-gain"] // 5000, 19),
            "capital-loss": np.minimum(df["capital-loss"] // 250, 19),
            "hours-per-week": df["hours-per-week"],
            "native-country": _codes(df["native-country"]),
        }
    )
    cat = {"workclass", "education", "marital-status", "occupation", "relationship", "race", "sex", "native-country"}
    return _finish(out, (df["y"].str.strip() == ">50K").to_numpy(), cat)


def bank():
    df = pd.read_csv(DATA / "bank" / "bank-additional.csv", sep=";")
    cat = ["job", "marital", "education", "default", "housing", "loan", "contact", "month", "day_of_week", "poutcome"]
    out = pd.DataFrame({"age": df["age"] // 10})
    for c in cat:
        out[c] = _codes(df[c])
    out["duration"] = np.minimum(df["duration"] // 10, 300)
    out["campaign"] = np.minimum(df["campaign"], 50)
    out["pdays"] = np.where(df["pdays"] == 999, 30, np.minimum(df["pdays"], 29))
    out["previous"] = df["previous"]
    out["emp.var.rate"] = np.round(df["emp.var.rate"]).astype(int)
    return _finish(out, (df["y"] == "yes").to_numpy(), set(cat))


def compas():
    df = pd.read_csv(DATA / "compas" / "compas-scores-two-years.csv")
    df = df[
        (df["days_b_screening_arrest"] <= 30)
        & (df["days_b_screening_arrest"] >= -30)
        & (df["is_recid"] != -1)
        & (df["c_charge_degree"] != "O")
    ]
    out = pd.DataFrame(
        {
            "sex": _codes(df["sex"]),
            "age": df["age"] // 10,
            "race": _codes(df["race"]),
            "priors_count": np.minimum(df["priors_count"], 38),
            "juv_count": np.minimum(df["juv_fel_count"] + df["juv_misd_count"], 10),
            "charge_degree": _codes(df["c_charge_degree"]),
        }
    )
    return _finish(out, df["two_year_recid"].to_numpy(), {"sex", "race", "charge_degree"})


def german():
    df = pd.read_csv(DATA / "german" / "german.data", sep=" ", header=None)
    names = [
        "status",
        "month",
        "credit_history",
        "purpose",
        "credit_amount",
        "savings",
        "employment",
        "installment_rate",
        "sex",
        "other_debtors",
        "residence_since",
        "property",
        "age",
        "installment_plans",
        "housing",
        "number_of_credits",
        "skill_level",
        "people_liable",
        "telephone",
        "foreign_worker",
    ]
    out = pd.DataFrame()
    numeric = {1, 4, 7, 10, 12, 15, 17}
    for i, name in enumerate(names):
        col = df[i]
        if name == "sex":
            out[name] = col.isin(["A92", "A95"]).astype(int)  # female
        elif name == "age":
            out[name] = col // 10
        elif name == "credit_amount":
            out[name] = col // 500
        elif i in numeric:
            out[name] = col
        else:
            out[name] = _codes(col)
    cat = {n for i, n in enumerate(names) if i not in numeric and n not in ("age",)}
    return _finish(out, (df[20] == 1).to_numpy(), cat)


DATASETS = {
    "adult": (adult, ["age", "race", "sex"]),
    "bank": (bank, ["age"]),
    "compas": (compas, ["race", "sex"]),
    "german": (german, ["age", "sex"]),
}
