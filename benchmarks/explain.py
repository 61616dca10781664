"""Where the unfair rows are: faircert's rules against a depth-3 decision tree and DivExplorer on the
same verdicts, for practitioner Pipelines (see `practitioner.py`).

Run `python benchmarks/explain.py [--datasets adult,german,bank,compas] [--models "A;B"] [--rows 2000]
[--max-rules 5] [--divexplorer-site DIR] [--data DIR]`; writes `benchmarks/results/explain.md` and `.json`.

For each model: the per-row audit of the held-out rows (as `practitioner.py` trains and holds them
out), with epsilon 0 (the flip test) and with the dataset's epsilon. The verdicts' decided rows are
split in two halves (`faircert.subgroups.frame.split_half`, the split `explain` itself uses); every
method finds at most K rules on the first half, and every rule is measured on the second half:
coverage is the share of that half's unfair rows held by the rules whose lift there (their unfair
rate over the half's) is at least 3.
- faircert: `explain_rows` (beam search over conjunctions, sequential covering); its wall time;
- tree: `DecisionTreeClassifier(max_depth=3)` on the verdicts (categories one-hot), its leaves by
  their unfair rate on the first half, the K highest above the half's rate;
- DivExplorer (where `--divexplorer-site` names a folder where it is installed): frequent patterns
  over the columns (numeric ones in 5 quantile bins of the first half), minimum support 2%, the K
  with the highest divergence of the unfair rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import practitioner

import faircert
from faircert.subgroups import explain_rows
from faircert.subgroups.frame import split_half

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
LIFT = 3.0
MODELS = [
    "LogisticRegression",
    "MLP(64,64)",
    "RandomForest 100x10",
    "HistGradientBoosting",
    "XGBoost 100x6",
    "LightGBM 100x31",
]
warnings.filterwarnings("ignore")


def score(masks: list[np.ndarray], unfair: np.ndarray, measured: np.ndarray) -> dict:
    """Coverage at lift >= LIFT of rules (row masks) on the measured half, and each rule's lift."""
    base = unfair[measured].mean()
    lifts, covered = [], np.zeros(len(unfair), dtype=bool)
    for m in masks:
        inside = m & measured
        lift = float(unfair[inside].mean() / base) if inside.any() and base > 0 else 0.0
        lifts.append(round(lift, 2))
        if lift >= LIFT:
            covered |= inside
    total = int((unfair & measured).sum())
    return {
        "rules": len(masks),
        "coverage": float((covered & unfair).sum() / total) if total else None,
        "lifts": lifts,
        "rows_covered": float((covered & measured).sum() / measured.sum()),
    }


def tree_rules(X: pd.DataFrame, unfair: np.ndarray, search: np.ndarray, k: int) -> list[np.ndarray]:
    from sklearn.tree import DecisionTreeClassifier

    encoded = pd.get_dummies(X, dtype=float).fillna(-1)
    tree = DecisionTreeClassifier(max_depth=3, min_samples_leaf=5, random_state=0)
    tree.fit(encoded[search], unfair[search])
    leaf = tree.apply(encoded)
    base = unfair[search].mean()
    rates = {v: unfair[search & (leaf == v)].mean() for v in np.unique(leaf[search])}
    best = sorted((v for v in rates if rates[v] > base), key=lambda v: -rates[v])[:k]
    return [leaf == v for v in best]


def divexplorer_rules(X: pd.DataFrame, unfair: np.ndarray, search: np.ndarray, k: int) -> list[np.ndarray]:
    from divexplorer import DivergenceExplorer

    discrete = pd.DataFrame(index=X.index)
    for c in X.columns:
        if pd.api.types.is_numeric_dtype(X[c]) and X[c].nunique() > 5:
            edges = np.unique(np.quantile(X.loc[search, c], np.linspace(0, 1, 6)))
            edges[0], edges[-1] = -np.inf, np.inf
            discrete[c] = pd.cut(X[c], edges, duplicates="drop").astype(str)
        else:
            discrete[c] = X[c].astype(str)
    frame = discrete[search].assign(unfair=unfair[search].astype(int)).reset_index(drop=True)
    patterns = DivergenceExplorer(frame).get_pattern_divergence(min_support=0.02, boolean_outcomes=["unfair"])
    patterns = patterns[patterns["length"] > 0].sort_values("unfair_div", ascending=False).head(k)
    out = []
    for itemset in patterns["itemset"]:
        m = np.ones(len(X), dtype=bool)
        for item in itemset:
            name, _, value = item.partition("=")
            m &= (discrete[name] == value).to_numpy()
        out.append(m)
    return out


def _audit(model, rows: pd.DataFrame, data: pd.DataFrame, **keywords):
    """The per-row audit of `rows` over the domain of `data` (`faircert.audit` where the package has
    it, `verify(rows=)` before)."""
    if hasattr(faircert, "audit"):
        return faircert.audit(model, rows, data, **keywords)
    return faircert.verify(model, data, rows=rows, **keywords)


def measure(dataset: str, model_name: str, args) -> list[dict]:
    df, protected, eps = practitioner.DATASETS[dataset]()
    model, X, _ = practitioner.fitted(dataset, model_name, args.rows)
    _, test = practitioner.held_out(len(df), args.rows)
    rows = X.iloc[test].reset_index(drop=True)
    out = []
    for audit_name, epsilon in (("flip", None), ("eps", eps)):
        t0 = time.perf_counter()
        audit = _audit(model, rows, X, protected=protected, epsilon=epsilon, time_limit=60, workers=1)
        audit_s = time.perf_counter() - t0
        verdicts = np.asarray(audit.verdicts)
        unfair, decided = verdicts == "unfair", verdicts != "unknown"
        search = split_half(unfair, decided, 0)
        measured = decided & ~search
        t0 = time.perf_counter()
        result = explain_rows(audit, rows, max_rules=args.max_rules, min_lift=args.min_lift, seed=0)
        explain_s = time.perf_counter() - t0
        line = {
            "dataset": dataset,
            "protected": protected,
            "model": model_name,
            "audit": audit_name,
            "rows": len(rows),
            "unfair": int(unfair.sum()),
            "unknown": int((~decided).sum()),
            "audit_s": round(audit_s, 2),
            "explain_s": round(explain_s, 3),
            "unfair_rate_measured": float(unfair[measured].mean()),
            "faircert": score([r.mask(rows) for r in result.rules], unfair, measured)
            | {"text": [str(r) for r in result.rules], "all_rows_coverage": result.coverage()},
        }
        t0 = time.perf_counter()
        line["tree"] = score(tree_rules(rows, unfair, search, args.max_rules), unfair, measured)
        line["tree"]["seconds"] = round(time.perf_counter() - t0, 3)
        if args.divexplorer_site:
            t0 = time.perf_counter()
            line["divexplorer"] = score(divexplorer_rules(rows, unfair, search, args.max_rules), unfair, measured)
            line["divexplorer"]["seconds"] = round(time.perf_counter() - t0, 3)
        print(json.dumps({k: v for k, v in line.items() if k != "faircert"} | {"faircert": line["faircert"]}))
        out.append(line)
    return out


def _cell(x: dict | None) -> str:
    if x is None:
        return "-"
    cov = "-" if x["coverage"] is None else f"{100 * x['coverage']:.1f}%"
    lifts = ", ".join(f"{v:.1f}" for v in x["lifts"]) or "none"
    return f"{cov} ({lifts})"


def _crowded(lines: list[dict]) -> str:
    """The audits whose unfair rate leaves no room for a lift of 3, named with their rates."""
    crowded = [x for x in lines if x["unfair_rate_measured"] * LIFT > 1]
    if not crowded:
        return ""
    rates = [100 * x["unfair_rate_measured"] for x in crowded]
    names = sorted({f"{x['dataset']} ({x['audit']})" for x in crowded})
    return (
        f"{len(crowded)} audits ({', '.join(names)}) have unfair rates of {min(rates):.0f}% to {max(rates):.0f}% "
        f"on the measured half: no rule can reach a lift of {LIFT:g} there, and they are left out of the means below."
    )


def summary(lines: list[dict], methods: list[str]) -> list[str]:
    """Mean coverage of each method over the audits whose global rate leaves room for a lift of 3,
    and faircert's wins, ties and losses against each other method there."""
    room = [x for x in lines if x["unfair_rate_measured"] * LIFT <= 1]
    out = [f"Over the {len(room)} audits whose unfair rate (on the measured half) is at most 1/{LIFT:g}:"]
    for m in methods:
        out.append(f"- {m}: mean coverage {100 * np.mean([x[m]['coverage'] or 0 for x in room]):.1f}%")
    for m in methods[1:]:
        pairs = [((x["faircert"]["coverage"] or 0), (x[m]["coverage"] or 0)) for x in room]
        wins, ties = sum(a > b for a, b in pairs), sum(a == b for a, b in pairs)
        out.append(f"- faircert against {m}: {wins} higher, {ties} equal, {len(pairs) - wins - ties} lower")
    return out


def markdown(lines: list[dict], args) -> str:
    div = any("divexplorer" in x for x in lines)
    out = [
        "# Explain: where the unfair rows are",
        "",
        f"Held-out rows of the practitioner Pipelines (`practitioner.py`), audited with epsilon 0 (flip) and the "
        f"dataset's epsilon (eps). Every method finds at most {args.max_rules} rules on one half of the decided "
        f"rows and is measured on the other half (the split `explain` uses): coverage = the share of that half's "
        f"unfair rows held by the rules with lift >= {LIFT:g} there; in brackets each rule's lift on that half. "
        "faircert: `explain_rows` (beam search, sequential covering); tree: the leaves of a depth-3 decision tree "
        "fitted on the verdicts, the highest-rate ones"
        + (
            "; DivExplorer: the most divergent frequent patterns (support >= 2%, numeric columns in 5 quantile bins)."
            if div
            else "."
        ),
        "Time: `explain_rows` alone (the audit's wall beside it, one process as in `practitioner.py`); the budget "
        "of `verify` is 60 s. Measured on a 2-core machine shared with other jobs (load 5 to 11): the seconds are "
        "upper figures.",
        "DivExplorer 0.2.6 ran from its own environment (`--divexplorer-site`; it needs matplotlib, plotly, "
        "python-igraph and mlxtend, which faircert does not depend on); its top patterns overlap, as it ranks "
        f"them one by one. {_crowded(lines)} German holds 250 held-out rows.",
        "",
        "| dataset (protected) | model | audit | rows | unfair | faircert coverage (lifts) | tree | "
        + ("DivExplorer | " if div else "")
        + "explain s | audit s | faircert's top rule |",
        "|---|---|---|---|---|---|---|" + ("---|" if div else "") + "---|---|---|",
    ]
    methods = ["faircert", "tree"] + (["divexplorer"] if div else [])
    out[-2:-2] = summary(lines, methods) + [
        f"- `explain_rows` took at most {max(x['explain_s'] for x in lines):.2f} s, and the audit with it at most "
        f"{max(x['explain_s'] + x['audit_s'] for x in lines):.1f} s (the budget of `verify` is 60 s)",
        "",
    ]
    for x in lines:
        top = x["faircert"]["text"][0] if x["faircert"]["text"] else "-"
        out.append(
            f"| {x['dataset']} ({x['protected']}) | {x['model']} | {x['audit']} | {x['rows']} | {x['unfair']} | "
            f"{_cell(x['faircert'])} | {_cell(x['tree'])} | "
            + (f"{_cell(x.get('divexplorer'))} | " if div else "")
            + f"{x['explain_s']:.2f} | {x['audit_s']:.1f} | {top.replace('|', '/')} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", default="adult,german,bank,compas")
    parser.add_argument("--models", default=";".join(MODELS), help="model names, separated by ;")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--max-rules", type=int, default=5)
    parser.add_argument("--min-lift", type=float, default=3.0)
    parser.add_argument("--divexplorer-site", default=None, help="a site-packages folder holding divexplorer")
    parser.add_argument("--data", default=str(practitioner.DATA), help="the shared benchmarks' data folder")
    parser.add_argument("--markdown-only", action="store_true", help="rewrite explain.md from explain.json")
    args = parser.parse_args()
    practitioner.DATA = Path(args.data)
    if args.divexplorer_site:
        sys.path.append(args.divexplorer_site)  # after ours: its numpy and pandas never replace the project's
    if args.markdown_only:
        (OUT / "explain.md").write_text(markdown(json.loads((OUT / "explain.json").read_text()), args))
        return
    lines = []
    for dataset in args.datasets.split(","):
        for model_name in args.models.split(";"):
            lines += measure(dataset, model_name, args)
    (OUT / "explain.json").write_text(json.dumps(lines, indent=2) + "\n")
    (OUT / "explain.md").write_text(markdown(lines, args))


if __name__ == "__main__":
    main()
