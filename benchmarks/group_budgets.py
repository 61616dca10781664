"""Time limits and learning costs of `group` on raw Adult, the figures the README and notes quote.

Run `python benchmarks/group_budgets.py`; the table goes to `benchmarks/results/group_budgets.md`
and `.json`. Measured: learning the Bayesian network (structure search and tables, with the width
cap); the README example (LogisticRegression pipeline, race x sex, DI/SP/EO, `bayesnet`) at time
limits 10 and 60 s; a RandomForest(100, depth 10) pipeline under `independent` at 10 and 30 s.
Wall time covers the whole `faircert.group` call (loading, learning, compiling, bounding).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

from practitioner import DATASETS, classifiers, pipeline

import faircert
from faircert.population.learn import learn_population
from faircert.population.spec import PopulationSpec

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
warnings.filterwarnings("ignore")


def main() -> None:
    df, _, _ = DATASETS["adult"]()
    X, y = df.drop(columns="y"), df["y"]
    rows = []
    t0 = time.perf_counter()
    pop = learn_population(df, list(X.columns), ["race", "sex"], PopulationSpec("bayesnet"), label="y")
    rows.append(
        {
            "run": "learn the network (raw Adult, 14 columns)",
            "wall_s": round(time.perf_counter() - t0, 2),
            "detail": f"{len(pop.edges)} edges, {len(pop.info['edges_dropped'])} dropped for width",
        }
    )
    models = classifiers()
    for name, population, limits in (
        ("LogisticRegression", "bayesnet", (10, 60)),
        ("RandomForest 100x10", "independent", (10, 30)),
    ):
        model = pipeline(X, models[name]()).fit(X, y)
        for limit in limits:
            t0 = time.perf_counter()
            r = faircert.group(
                model,
                df,
                protected=["race", "sex"],
                label="y",
                population=population,
                metrics=["di", "sp", "eo"],
                time_limit=limit,
            )
            wall = round(time.perf_counter() - t0, 2)
            di = r.metrics["di"]
            rows.append(
                {
                    "run": f"{name}, {population}, limit {limit} s",
                    "wall_s": wall,
                    "limit_s": limit,
                    "within_rule": wall <= 1.1 * limit + 2,
                    "di": [di.low, di.high],
                    "widest_rate": max(g.high - g.low for g in r.groups),
                    "engine": r.engine_description,
                    "detail": f"DI [{di.low:.4f}, {di.high:.4f}], widest rate "
                    f"{max(g.high - g.low for g in r.groups):.4f}",
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "group_budgets.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# group on raw Adult: learning time and time limits",
        "",
        "Written by `benchmarks/group_budgets.py` on 2 cores. Target: wall <= limit x 1.1 + 2 s.",
        "",
        "| run | wall s | within the rule | result |",
        "|---|---|---|---|",
    ]
    for r in rows:
        rule = "" if "within_rule" not in r else ("PASS" if r["within_rule"] else "FAIL")
        lines.append(f"| {r['run']} | {r['wall_s']} | {rule} | {r['detail']} |")
    (OUT / "group_budgets.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
