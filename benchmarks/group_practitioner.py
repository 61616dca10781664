"""Group fairness on practitioners' data: the practitioner pipelines on raw Adult under each population.

Run `python benchmarks/group_practitioner.py [--models ...] [--time-limit 60]`; the table goes to
`benchmarks/results/group_practitioner.md` and `.json`.

Every model of `practitioner.py` (scikit-learn Pipelines over Adult's raw columns, trained with
fixed seeds) is checked with `faircert.group(..., protected=["race", "sex"], label="y",
metrics=["di", "sp", "eo"])` under the data's rows (`empirical`, exact), independent marginals and
a learned Bayesian network, each with the time limit (population learning included). For each run:
the widest group-rate interval, the DI, SP and EO intervals with their widths, the engine, wall
time against the limit, the statistical estimate the result carries where its bounds are wider than
0.05, and DI of the model on 1,000,000 rows drawn from the same population (learned populations
only; a point estimate, noisy where a group is tiny).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from practitioner import DATASETS, classifiers, pipeline

import faircert

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
warnings.filterwarnings("ignore")
POPULATIONS = ("empirical", "independent", "bayesnet")


def sampled_di(model, population, protected: list[str], n: int = 1_000_000, seed: int = 0) -> float | None:
    """DI of the model on `n` rows drawn from a learned DiscretePopulation (bins at their values)."""
    import pandas as pd

    if not hasattr(population, "variables"):
        return None
    pop = population.expanded()  # a bin's data values, as the engines see them
    codes = pop.sample_codes(np.random.default_rng(seed), n)
    frame = pd.DataFrame(
        {name: np.asarray(pop.variables[name].states, dtype=object)[codes[name]] for name in pop.variables}
    )
    yhat = model.predict(frame[[c for c in model.feature_names_in_]].infer_objects())
    rates = frame.assign(yhat=yhat).groupby(protected)["yhat"].mean()
    return float(rates.min() / rates.max()) if rates.max() > 0 else None


def run(name: str, model, df, population: str, time_limit: float) -> dict:
    from faircert.population import PopulationSpec, learn_population

    t0 = time.perf_counter()
    row: dict = {"model": name, "population": population, "time_limit_s": time_limit}
    try:
        result = faircert.group(
            model,
            df,
            protected=["race", "sex"],
            label="y",
            population=population,
            metrics=["di", "sp", "eo"],
            time_limit=time_limit,
        )
    except faircert.errors.FaircertError as exc:
        row.update(error=str(exc), wall_s=round(time.perf_counter() - t0, 2))
        return row
    row["wall_s"] = round(time.perf_counter() - t0, 2)
    row["engine"] = result.engine_description
    row["max_rate_width"] = max(g.high - g.low for g in result.groups)
    for m, interval in result.metrics.items():
        row[m] = [interval.low, interval.high]
        row[f"{m}_width"] = interval.high - interval.low
    row["stopped"] = result.stats.get("stopped")
    if result.estimate is not None:  # what the result itself shows beside wide bounds
        row["di_estimate"] = [result.estimate.metrics["di"].low, result.estimate.metrics["di"].high]
        row["estimate_delta"] = result.estimate.stats.get("delta")
    if population != "empirical":
        cols = [c for c in df.columns if c != "y"]
        pop = learn_population(df, cols, ["race", "sex"], PopulationSpec(population), label="y")
        row["di_sampled"] = sampled_di(model, pop, ["race", "sex"])
        row["edges_dropped"] = len(pop.info.get("edges_dropped", []))
    return row


def table(rows: list[dict]) -> str:
    out = [
        "| model | population | engine | widest rate | DI | DI width | SP width | EO width | DI estimate (result) "
        "| DI on 10^6 draws | wall s (limit) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | {r['population']} | error: {r['error'][:60]} | | | | | | | {r['wall_s']} |")
            continue
        di = f"[{r['di'][0]:.4f}, {r['di'][1]:.4f}]"
        sampled = f"{r['di_sampled']:.4f}" if r.get("di_sampled") is not None else ""
        estimate = f"[{r['di_estimate'][0]:.3f}, {r['di_estimate'][1]:.3f}]" if r.get("di_estimate") else ""
        out.append(
            f"| {r['model']} | {r['population']} | {r['engine']} | {r['max_rate_width']:.4f} | {di} | "
            f"{r['di_width']:.4f} | {r['sp_width']:.4f} | {r['eo_width']:.4f} | {estimate} | {sampled} | "
            f"{r['wall_s']} ({r['time_limit_s']:g}) |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated model names (default: every one)")
    ap.add_argument("--populations", default=",".join(POPULATIONS))
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    df, _, _ = DATASETS["adult"]()
    X, y = df.drop(columns="y"), df["y"]
    chosen = args.models.split(",") if args.models else None
    rows = []
    for name, make in classifiers().items():
        if chosen and name not in chosen:
            continue
        model = pipeline(X, make()).fit(X, y)
        for population in args.populations.split(","):
            rows.append(run(name, model, df, population, args.time_limit))
            print(json.dumps(rows[-1]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "group_practitioner.json").write_text(json.dumps(rows, indent=1) + "\n")
    header = (
        "# Group fairness of the practitioner pipelines (raw Adult, race x sex, DI/SP/EO)\n\n"
        "Written by `benchmarks/group_practitioner.py` on 2 cores. Widths are of the sound intervals. "
        "`DI estimate (result)` is the sampled interval the result shows beside bounds wider than 0.05 "
        "(wrong with probability at most its delta); `DI on 10^6 draws` is the model's DI on a million "
        "rows drawn from the same learned population (a point estimate, not a bound, noisy where a "
        "group is tiny). Wall time includes loading, population learning and compiling the model "
        "for the population.\n\n"
    )
    (OUT / "group_practitioner.md").write_text(header + table(rows) + "\n")


if __name__ == "__main__":
    main()
