"""Group fairness on practitioners' data: the practitioner pipelines on raw Adult under each population.

Run `python benchmarks/group_practitioner.py [--models ...] [--populations ...] [--time-limit 60]`;
the table goes to `benchmarks/results/group_practitioner.md` and `.json`, the trees' rates counted
alone (`--sound-time-limit`) to `group_practitioner_sound.json` (rows of models and populations
not run this time are kept from the last run, with the date each was measured).

Every model of `practitioner.py` (scikit-learn Pipelines over Adult's raw columns, trained with
fixed seeds) is checked with `faircert.group(..., protected=["race", "sex"], label="y",
metrics=["di", "sp", "eo"])` under the data's rows (`empirical`, exact), independent marginals and
a learned Bayesian network, each with the time limit (population learning included). For each run:
the widest group-rate interval, the DI, SP and EO intervals with their widths, the engine, wall
time against the limit, the statistical answer the result carries where its bounds are wider than
0.05 (DI, SP and EO intervals that hold together at the stated confidence, their widths, the draws
and draws per second), and DI of the model on 1,000,000 rows drawn from the same population
(learned populations only; a point estimate, noisy where a group is tiny). For tree ensembles under
independent marginals, each group's sound rate (the tree-population count, or for ensembles past
its leaf cap and for networks the box refinement on the label) beside its sampled interval.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from practitioner import DATASETS, classifiers, pipeline

import faircert

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
warnings.filterwarnings("ignore")
POPULATIONS = ("empirical", "independent", "bayesnet")
#: The engines whose sound rates under independent marginals are listed group by group (and counted
#: alone with `--sound-time-limit`).
SOUND_RATES = ("tree-population-group", "tree-regions-group", "network-regions-group")


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
    row["measured"] = datetime.now(UTC).strftime("%Y-%m-%d")
    if result.estimate is not None:  # what the result itself shows beside wide bounds
        row.update(statistical(result))
    if result.engine in SOUND_RATES:
        row["sound_rates"] = {g.name: [g.low, g.high] for g in result.groups}
    if population != "empirical":
        cols = [c for c in df.columns if c != "y"]
        pop = learn_population(df, cols, ["race", "sex"], PopulationSpec(population), label="y")
        row["di_sampled"] = sampled_di(model, pop, ["race", "sex"])
        row["edges_dropped"] = len(pop.info.get("edges_dropped", []))
    return row


def sound_only(name: str, model, df, time_limit: float) -> dict:
    """A model's sound group rates under independent marginals (race x sex, DI and SP: ten rates)
    with the whole time limit given to the sound engine, no sampling beside it."""
    from faircert.options import GroupOptions
    from faircert.requests.group import GroupAsked, prepare_group

    t0 = time.perf_counter()
    asked = GroupAsked(["race", "sex"], "y", ("di", "sp"))
    request = prepare_group(model, df, asked, "independent", {}, GroupOptions(time_limit=time_limit))
    result = request.engine.run(request.ir, request.question, request.options, None)
    return {
        "model": name,
        "engine": result.engine,
        "time_limit_s": time_limit,
        "wall_s": round(time.perf_counter() - t0, 2),
        "rates": {g.name: [g.low, g.high] for g in result.groups},
        "di": [result.metrics["di"].low, result.metrics["di"].high],
        "sp": [result.metrics["sp"].low, result.metrics["sp"].high],
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def statistical(result) -> dict:
    """The result's statistical answer: each metric's interval and width, its confidence, the draws."""
    est = result.estimate
    out = {
        "estimate_delta": est.stats.get("delta"),
        "estimate_samples": est.stats.get("samples"),
        "estimate_draws_per_s": est.stats.get("draws_per_s"),
        "estimate_s": est.elapsed_s,
        "estimate_stopped": est.stats.get("stopped"),
        "estimate_rates": {g.name: [g.low, g.high] for g in est.groups},
    }
    for m, interval in est.metrics.items():
        out[f"{m}_estimate"] = [interval.low, interval.high]
        out[f"{m}_estimate_width"] = interval.high - interval.low
    return out


def _interval(pair, digits: int = 4) -> str:
    return f"[{pair[0]:.{digits}f}, {pair[1]:.{digits}f}]" if pair else ""


def statistical_table(rows: list[dict]) -> str:
    out = [
        "| model | population | DI (99%, together) | SP | EO | widths DI / SP / EO | samples | draws/s | sampling s "
        "| wall s (limit) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "estimate_samples" not in r:  # rows measured before the statistical columns
            continue
        widths = " / ".join(f"{r[f'{m}_estimate_width']:.4f}" for m in ("di", "sp", "eo"))
        out.append(
            f"| {r['model']} | {r['population']} | {_interval(r['di_estimate'])} | {_interval(r['sp_estimate'])} | "
            f"{_interval(r['eo_estimate'])} | {widths} | {r['estimate_samples']:,} | "
            f"{r['estimate_draws_per_s']:,.0f} | {r['estimate_s']:.1f} | {r['wall_s']} ({r['time_limit_s']:g}) |"
        )
    return "\n".join(out)


def sound_tree_table(rows: list[dict], longer: list[dict]) -> str:
    limits = sorted({r["time_limit_s"] for r in longer})
    out = [
        "| model | group | sound rate in the group run | "
        + "".join(f"sound rate, count alone ({t:g} s) | " for t in limits)
        + "sampled rate (99%, together) |",
        "|---|---|---|" + "---|" * len(limits) + "---|",
    ]
    for r in rows:
        for name, bounds in (r.get("sound_rates") or {}).items():
            sampled = (r.get("estimate_rates") or {}).get(name)
            alone = [
                next(
                    (
                        _interval(x["rates"].get(name))
                        for x in longer
                        if x["model"] == r["model"] and x["time_limit_s"] == t
                    ),
                    "",
                )
                for t in limits
            ]
            out.append(
                f"| {r['model']} | {name} | {_interval(bounds)} | "
                + "".join(f"{a} | " for a in alone)
                + f"{_interval(sampled)} |"
            )
    for x in longer:
        di, sp = _interval(x["di"]), _interval(x["sp"])
        out.append(f"\n{x['model']}, count alone ({x['time_limit_s']:g} s, {x['wall_s']} s wall): DI {di}, SP {sp}.")
    return "\n".join(out)


def merged(rows: list[dict]) -> list[dict]:
    """This run's rows, and the last run's rows of the models and populations not run this time."""
    path = OUT / "group_practitioner.json"
    done = {(r["model"], r["population"]) for r in rows}
    kept = (
        [r for r in json.loads(path.read_text()) if (r["model"], r["population"]) not in done] if path.exists() else []
    )
    order = {name: i for i, name in enumerate(classifiers())}
    return sorted(kept + rows, key=lambda r: (order.get(r["model"], 99), POPULATIONS.index(r["population"])))


def table(rows: list[dict]) -> str:
    out = [
        "| model | population | engine | widest rate | DI | DI width | SP width | EO width | DI estimate (result) "
        "| DI on 10^6 draws | wall s (limit) | measured |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            out.append(
                f"| {r['model']} | {r['population']} | error: {r['error'][:60]} | | | | | | | | {r['wall_s']} | "
                f"{r.get('measured', '')} |"
            )
            continue
        di = f"[{r['di'][0]:.4f}, {r['di'][1]:.4f}]"
        sampled = f"{r['di_sampled']:.4f}" if r.get("di_sampled") is not None else ""
        estimate = _interval(r.get("di_estimate"))
        out.append(
            f"| {r['model']} | {r['population']} | {r['engine']} | {r['max_rate_width']:.4f} | {di} | "
            f"{r['di_width']:.4f} | {r['sp_width']:.4f} | {r['eo_width']:.4f} | {estimate} | {sampled} | "
            f"{r['wall_s']} ({r['time_limit_s']:g}) | {r.get('measured', 'before 2026-11-28')} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated starts of model names, e.g. XGBoost,MLP (default: every one)")
    ap.add_argument("--populations", default=",".join(POPULATIONS))
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument(
        "--sound-time-limit", type=float, default=0.0, help="also count the trees' rates alone with this limit"
    )
    args = ap.parse_args()
    df, _, _ = DATASETS["adult"]()
    X, y = df.drop(columns="y"), df["y"]
    chosen = args.models.split(",") if args.models else None
    rows, longer = [], []
    for name, make in classifiers().items():
        if chosen and not any(name.startswith(c) for c in chosen):
            continue
        model = pipeline(X, make()).fit(X, y)
        for population in args.populations.split(","):
            rows.append(run(name, model, df, population, args.time_limit))
            print(json.dumps(rows[-1]), flush=True)
        counted = any(r["model"] == name and "sound_rates" in r for r in rows)
        if args.sound_time_limit and counted:
            longer.append(sound_only(name, model, df, args.sound_time_limit))
            print(json.dumps(longer[-1]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    rows = merged(rows)
    (OUT / "group_practitioner.json").write_text(json.dumps(rows, indent=1) + "\n")
    sound = OUT / "group_practitioner_sound.json"
    counted = {(x["model"], x["time_limit_s"]) for x in longer}  # earlier rows of other limits are kept
    longer += [
        x
        for x in (json.loads(sound.read_text()) if sound.exists() else [])
        if (x["model"], x["time_limit_s"]) not in counted
    ]
    sound.write_text(json.dumps(longer, indent=1) + "\n")
    header = (
        "# Group fairness of the practitioner pipelines (raw Adult, race x sex, DI/SP/EO)\n\n"
        "Written by `benchmarks/group_practitioner.py` on 2 cores shared with other work (timings "
        "under load). Widths are of the sound intervals. `DI estimate (result)` is the sampled "
        "interval the result shows beside bounds wider than 0.05; `DI on 10^6 draws` is the model's "
        "DI on a million rows drawn from the same learned population (a point estimate, not a bound, "
        "noisy where a group is tiny). Wall time includes loading, population learning and compiling "
        "the model for the population.\n\n"
    )
    sampled = (
        "\n## Statistical answers\n\n"
        "Each group's rate, and each rate given the label (for EO), is sampled from the cell's own "
        "conditional population (under `bayesnet` by exact conditional draws: variable elimination "
        "over the protected attributes' ancestors, then forward), draws going to the cells that widen "
        "the metrics. Every rate is a Clopper-Pearson interval with a union bound over every rate and "
        "every look, so all rates, and the DI, SP and EO intervals computed from them, hold together "
        "with the stated confidence (99%). Sampling runs in the time the sound engine leaves (70% of "
        "the limit once the bounds are wide). Under independent marginals the protected attributes "
        "share no edge with the other variables, so a tree ensemble's cells of one population share "
        "one stream of draws, each draw labelled under every cell's protected values in one descent "
        "of each tree; `samples` and `draws/s` count draws of cells (a shared draw once per cell), "
        "as before.\n\n"
    )
    trees = (
        "\n## Sound group rates under independent marginals\n\n"
        "Tree ensembles within 8,000 leaves: the tree-population count with each cell fixed (engine "
        "`tree-population-group`), each of the 30 rates (10 groups, and 10 given each label value) in "
        "an equal share of the 30% of the time limit the sound engine gets. Larger ensembles and "
        "networks: box refinement on the label (engines `tree-regions-group`, `network-regions-group`: "
        "the mass of boxes of values proven positive, and 1 - the mass proven negative, the heaviest "
        "undecided boxes split first), all 30 rates in the same 30%. Beside each, the sampled interval "
        "of the same rate; `count alone` gives the sound engine the whole limit (DI and SP: 10 rates).\n\n"
    )
    (OUT / "group_practitioner.md").write_text(
        header
        + table(rows)
        + "\n"
        + sampled
        + statistical_table(rows)
        + "\n"
        + trees
        + sound_tree_table(rows, longer)
        + "\n"
    )


if __name__ == "__main__":
    main()
