"""Individual fairness of the practitioner logistic regression under each measure of the domain.

Run `python benchmarks/verify_populations.py [--time-limit 60]`; the table goes to
`benchmarks/results/verify_populations.md` and `.json`.

The LogisticRegression pipeline of `practitioner.py` (raw Adult, fixed seed, protected `sex`,
epsilon 0) verified with `population` uniform (the domain's grid), independent (the data's
marginals) and bayesnet (a network learned from the data): the certified, proven-unfair and
undecided probability, re-checked counterexamples, and the wall time (learning included).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from practitioner import DATASETS, classifiers, pipeline

import faircert

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
warnings.filterwarnings("ignore")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    df, protected, _ = DATASETS["adult"]()
    X, y = df.drop(columns="y"), df["y"]
    model = pipeline(X, classifiers()["LogisticRegression"]()).fit(X, y)
    rows = []
    for population in ("uniform", "independent", "bayesnet"):
        t0 = time.perf_counter()
        r = faircert.verify(model, X, protected=protected, population=population, time_limit=args.time_limit)
        rows.append(
            {
                "population": population,
                "certified": r.certified,
                "unfair": r.falsified,
                "undecided": r.undecided,
                "counterexamples": len(r.counterexamples),
                "engine": r.engine,
                "wall_s": round(time.perf_counter() - t0, 2),
                "time_limit_s": args.time_limit,
                "learning_s": r.stats.get("learning_s"),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "verify_populations.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# Individual fairness (epsilon 0, sex) of the LogisticRegression pipeline on raw Adult, by measure",
        "",
        "Written by `benchmarks/verify_populations.py` on 2 cores. Shares are of the domain's points "
        "(uniform) or probabilities of drawing an x with an unfair twin (independent, bayesnet).",
        "",
        "| measure | certified | proven unfair | undecided | counterexamples | engine | wall s (limit) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['population']} | {r['certified']:.6f} | {r['unfair']:.6f} | {r['undecided']:.2e} | "
            f"{r['counterexamples']} | {r['engine']} | {r['wall_s']} ({r['time_limit_s']:g}) |"
        )
    (OUT / "verify_populations.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
