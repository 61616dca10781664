"""Exact epsilon-kappa fairness/robustness of XGBoost GBDTs: the tree-ensemble paper's RQ1-RQ3 grid.

Trains XGBoost (50 trees, depth 3, seed 0) on integer encodings of Adult, Bank, COMPAS and German
(benchmarks/trees_data.py; domains = data ranges), runs RQ1 (r_eps in {0, 0.1}, kappa 0.5; fairness
per protected attribute and robustness) and RQ2 (r_eps 0.1, kappa 0.7) with a time limit, the
testing mode (1,000,000 re-checked samples from the exact unfair region, r_eps 0, kappa 0.5; and
100,000 with r_eps 0.1), and
scaling runs (more trees, deeper trees and a random forest on COMPAS; 10 to 40 trees on Adult, Bank
and German), the speed of tree evaluation by table, by
traversal and compiled, the peak memory of one long run, and the Adult model on real-valued features (region
path alone vs with the refinement, and one long region-path run). Writes benchmarks/results/trees.{md,json}
with the paper's BoxQTE figures alongside.

    python benchmarks/trees.py [--limit S] [--samples N] [--datasets adult,bank,compas,german]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees_data import DATA, DATASETS

from faircert.domain import Domain
from faircert.engines.trees.boxes import domain_box, normalise
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.engines.trees.sampling import region_is_exact, sample_unfair
from faircert.engines.trees.verify import verify_trees
from faircert.memory import default_limit
from faircert.models.io import load_model
from faircert.properties import individual_fairness

RESULTS = Path(__file__).resolve().parent / "results"
NAMES = {"adult": "Adult", "bank": "Bank", "compas": "COMPAS", "german": "Credit (German)"}
ATTR = {"sex": "gender"}
# BoxQTE (paper Tables 2-4): time in s (17 workers, 600 s limit; all converged), measure at r_eps 0.
PAPER_RQ1 = {
    ("adult", "age", 0): 26.4,
    ("adult", "race", 0): 0.1,
    ("adult", "sex", 0): 0.1,
    ("bank", "age", 0): 101.9,
    ("compas", "race", 0): 34.0,
    ("compas", "sex", 0): 33.5,
    ("german", "age", 0): 27.0,
    ("german", "sex", 0): 31.2,
    ("adult", "age", 0.1): 121.9,
    ("adult", "race", 0.1): 89.7,
    ("adult", "sex", 0.1): 89.7,
    ("bank", "age", 0.1): 187.6,
    ("compas", "race", 0.1): 74.8,
    ("compas", "sex", 0.1): 43.4,
    ("german", "age", 0.1): 87.0,
    ("german", "sex", 0.1): 113.6,
    ("adult", None, 0.1): 89.4,
    ("bank", None, 0.1): 137.3,
    ("compas", None, 0.1): 39.8,
    ("german", None, 0.1): 82.8,
}
PAPER_RQ2 = {
    ("adult", "age"): 56.7,
    ("adult", "race"): 45.9,
    ("adult", "sex"): 44.1,
    ("bank", "age"): 54.3,
    ("compas", "race"): 28.7,
    ("compas", "sex"): 26.9,
    ("german", "age"): 18.0,
    ("german", "sex"): 18.7,
    ("adult", None): 45.6,
    ("bank", None): 53.6,
    ("compas", None): 26.2,
    ("german", None): 18.4,
}
PAPER_RQ3 = {
    ("adult", "age"): (0.9964, 1000000, 3.5),
    ("adult", "race"): (1.0, 0, 0.0),
    ("adult", "sex"): (1.0, 0, 0.0),
    ("bank", "age"): (0.9183, 1000000, 4.3),
    ("compas", "race"): (0.9715, 31658, 1.8),
    ("compas", "sex"): (0.9854, 8118, 1.5),
    ("german", "age"): (0.9996, 999987, 4.7),
    ("german", "sex"): (0.9781, 999997, 4.9),
}


def train(name: str, n_trees: int = 50, depth: int = 3, forest: bool = False):
    X, y, dom = DATASETS[name][0]()
    if forest:
        from sklearn.ensemble import RandomForestClassifier

        clf = RandomForestClassifier(n_trees, max_depth=depth, random_state=0, n_jobs=1).fit(X, y)
    else:
        import xgboost as xgb

        clf = xgb.XGBClassifier(n_estimators=n_trees, max_depth=depth, random_state=0, n_jobs=1).fit(X, y)
    return load_model(clf), dom, float(np.mean(clf.predict(X) == y))


def run(ir, dom, attr, rate, kappa, limit, method="auto"):
    prop = individual_fairness(dom, attr, epsilon_rate=rate, kappa=kappa, robustness=attr is None)
    t0 = time.perf_counter()
    res = verify_trees(ir, prop, time_limit=limit, max_counterexamples=10, options=TreeOptions(method=method))
    wall = time.perf_counter() - t0
    est = res.statistical
    estimate = (
        None
        if est is None
        else {
            "measure": 1 - est.unfair,
            "ci": [1 - est.ci_high, 1 - est.ci_low],
            "samples": est.samples,
            "time_s": res.stats["estimate_s"],
        }
    )
    return {
        "converged": bool(res.stats["converged"]),
        "gap": res.measure_upper - res.measure_lower,
        "time_s": res.stats["quantify_s"],
        "wall_s": wall,
        "estimate": estimate,
        "measure_lower": res.measure_lower,
        "measure_upper": res.measure_upper,
        "confident_size": res.confident_size,
        "unfair_size": res.unfair_size,
        "boxes": res.stats["boxes"],
        "counterexamples": len(res.counterexamples),
        "rejected": res.stats["rejected_counterexamples"],
        "memory_limited": bool(res.stats["memory_limited"]),
    }


def testing(ir, dom, attr, limit, samples, rate=0.0, repeat=3):
    """Testing mode after one quantification; the sampling time is the median of `repeat` runs (the
    same seed, so the same samples: timings on this machine vary by a third between runs)."""
    prop = individual_fairness(dom, attr, epsilon_rate=rate, kappa=0.5, robustness=attr is None)
    q = quantify(ir, prop, time_limit=limit)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        x, _, rejected = sample_unfair(ir, q, samples, seed=0)
        runs.append(time.perf_counter() - t0)
    samp = float(np.median(runs))
    distinct = len(np.unique(x, axis=0)) if len(x) else 0
    lo, hi = q.bounds
    out = {
        "measure_lower": lo,
        "measure_upper": hi,
        "complete": q.complete,
        "exact_region": region_is_exact(q),
        "quant_s": q.elapsed,
        "sample_s": samp,
        "sample_s_runs": runs,
        "samples": len(x),
        "distinct_idis": int(distinct),
        "rejected": rejected,
        "unfair_size": q.unfair,
    }
    if rate == 0 and not q.complete:
        out["open"] = open_mixing(ir, dom, attr, q)
    return out


def open_mixing(ir, dom, attr, q, boxes: int = 1000, points: int = 256) -> dict:
    """How many boxes an epsilon-0 run left open, their median grid size, and the share of sampled open
    boxes whose random points include both a fair and an unfair input: those no bound, however tight,
    settles whole; only further cuts do."""
    lo, hi, _ = q.open_boxes()
    p = dom.names.index(attr)
    rng = np.random.default_rng(0)
    pick = rng.choice(len(lo), min(boxes, len(lo)), replace=False)
    X = np.floor(lo[pick, None] + rng.random((len(pick), points, len(dom.names))) * (hi - lo)[pick, None])
    labels = []
    for v in range(int(dom.features[p].min), int(dom.features[p].max) + 1):
        X[:, :, p] = v
        labels.append(ir.predict(X.reshape(-1, len(dom.names))).reshape(len(pick), points))
    labels = np.array(labels)
    unfair = labels.min(axis=0) != labels.max(axis=0)
    mixed = unfair.any(axis=1) & ~unfair.all(axis=1)
    free = np.arange(len(dom.names)) != p
    return {
        "open_boxes": len(lo),
        "sampled": len(pick),
        "points_per_box": points,
        "median_grid_points": float(np.median(np.prod((hi - lo)[pick][:, free], axis=1))),
        "mixed_share": float(mixed.mean()),
    }


def split_cells(ir, dom) -> float:
    """Cells of the partition of the domain by every split threshold of the ensemble (the model is
    constant on each)."""
    nt = normalise(ir, dom)
    dlo, dhi = domain_box(dom)
    inner = nt.node_left >= 0
    cells = 1.0
    for i in range(len(dlo)):
        b = np.unique(nt.node_bound[inner & (nt.node_feat == i)])
        cells *= 1 + int(np.sum((b > dlo[i]) & (b < dhi[i])))
    return cells


def evaluation(ir, dom, rows: int = 131_072, repeat: int = 8) -> dict:
    """Leaf values of random grid inputs per second, by table and by traversal (the same numbers), and
    scores by numpy (table) and by the compiled kernel (the same numbers)."""
    import copy

    from faircert import compiled

    rng = np.random.default_rng(0)
    X = rng.integers([f.min for f in dom.features], [f.max + 1 for f in dom.features], (rows, ir.n_features))
    X = ir._inputs(X.astype(float))
    walk = copy.deepcopy(ir)
    walk._tables_cache = ()  # no table: traversal
    out = {"rows": rows * repeat, "trees": len(ir.trees), "compiled": compiled.available()}
    timed = {
        "table": lambda: ir.leaf_values(X),
        "traversal": lambda: walk.leaf_values(X),
        "numpy_scores": lambda: ir.score_of_leaves(ir.leaf_values(X)),
    }
    if compiled.available():
        from faircert.models import trees_compiled

        timed["compiled_scores"] = lambda: trees_compiled.scores(ir, X)
    for key, f in timed.items():
        f()
        t0 = time.perf_counter()
        for _ in range(repeat):
            value = f()
        out[f"{key}_s"] = time.perf_counter() - t0
        out[key] = value
    assert np.array_equal(out.pop("table"), out.pop("traversal"))
    numpy_scores = out.pop("numpy_scores")
    if compiled.available():
        assert np.array_equal(out.pop("compiled_scores"), numpy_scores)
    return out


def real_domain(dom):
    """The same domain with its integer features real-valued (sizes become volumes)."""
    return Domain(tuple(dataclasses.replace(f, kind="real") if f.kind == "integer" else f for f in dom.features))


def memory_probe(name: str, attr: str, limit: float, real: bool = False) -> None:
    """One long run (epsilon 0 on the grid; on real features epsilon rate 0.1 by the region path);
    prints its outcome and peak memory (run in a child process)."""
    import resource

    ir, dom, _ = train(name)
    if real:
        prop = individual_fairness(real_domain(dom), attr, epsilon_rate=0.1, kappa=0.5)
        q = quantify(ir, prop, time_limit=limit, options=TreeOptions(method="regions"))
    else:
        q = quantify(ir, individual_fairness(dom, attr, epsilon_rate=0.0, kappa=0.5), time_limit=limit)
    lo, hi = q.bounds
    print(
        json.dumps(
            {
                "dataset": name,
                "attr": attr,
                "limit_s": limit,
                "elapsed_s": q.elapsed,
                "memory_limited": q.stats["memory_limited"],
                "measure_lower": lo,
                "measure_upper": hi,
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            }
        )
    )


def long_run(name: str, attr: str, limit: float, real: bool = False) -> dict:
    import subprocess

    done = subprocess.run(
        [sys.executable, __file__, "--memory-probe", f"{name},{attr},{limit},{int(real)}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def fmt_attr(a):
    return "-" if a is None else ATTR.get(a, a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=30.0, help="time limit per configuration (s)")
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--samples-eps", type=int, default=100_000, help="testing-mode samples with r_eps 0.1")
    ap.add_argument("--datasets", default="adult,bank,compas,german")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--scale-limit", type=float, default=30.0, help="time limit of the scaling runs (s)")
    ap.add_argument("--long-limit", type=float, default=120.0, help="time limit of the long (memory) run (s)")
    ap.add_argument("--memory-probe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"shared benchmark data not found at {DATA}")
    if args.memory_probe:
        name, attr, limit, real = args.memory_probe.split(",")
        memory_probe(name, attr, float(limit), real == "1")
        return
    names = [n for n in args.datasets.split(",") if n]
    from faircert import compiled

    out = {
        "machine": platform.processor() or platform.machine(),
        "compiled": compiled.available(),
        "limit_s": args.limit,
        "scale_limit_s": args.scale_limit,
        "models": {},
        "rq1": [],
        "rq2": [],
        "rq3": [],
        "rq3_eps": [],
        "scaling": [],
    }
    if "adult" in names:
        ir, dom, _ = train("adult")
        out["evaluation"] = evaluation(ir, dom)
        print("EVAL", out["evaluation"], flush=True)
        out["long_run"] = long_run("adult", "sex", args.long_limit)
        print("LONG", out["long_run"], flush=True)
        out["real"] = []
        for attr in ("sex", None):
            for method in ("regions", "auto"):
                r = run(ir, real_domain(dom), attr, 0.1, 0.5, args.limit, method)
                r.update(dataset="adult", attr=attr, method=method)
                out["real"].append(r)
                print("REAL", attr, method, {k: r[k] for k in ("converged", "gap", "measure_lower")}, flush=True)
        out["long_run_real"] = long_run("adult", "sex", args.long_limit, real=True)
        print("LONG REAL", out["long_run_real"], flush=True)
    for name in names:
        ir, dom, acc = train(name)
        out["models"][name] = {
            "trees": len(ir.trees),
            "features": ir.n_features,
            "train_accuracy": acc,
            "grid_size": float(dom.measure()),
            "split_cells": split_cells(ir, dom),
        }
        attrs = DATASETS[name][1]
        for rate in (0.0, 0.1):
            for attr in attrs + ([None] if rate > 0 else []):
                r = run(ir, dom, attr, rate, 0.5, args.limit)
                r.update(dataset=name, attr=attr, rate=rate, kappa=0.5, paper_time_s=PAPER_RQ1.get((name, attr, rate)))
                out["rq1"].append(r)
                print(
                    "RQ1",
                    name,
                    attr,
                    rate,
                    {k: r[k] for k in ("converged", "gap", "time_s", "measure_lower")},
                    flush=True,
                )
        for attr in attrs + [None]:
            r = run(ir, dom, attr, 0.1, 0.7, args.limit)
            r.update(dataset=name, attr=attr, rate=0.1, kappa=0.7, paper_time_s=PAPER_RQ2.get((name, attr)))
            out["rq2"].append(r)
            print("RQ2", name, attr, {k: r[k] for k in ("converged", "gap", "time_s", "measure_lower")}, flush=True)
        for attr in attrs:
            r = testing(ir, dom, attr, args.limit, args.samples)
            paper = PAPER_RQ3.get((name, attr))
            r.update(
                dataset=name,
                attr=attr,
                paper_measure=paper[0] if paper else None,
                paper_idis=paper[1] if paper else None,
                paper_sample_s=paper[2] if paper else None,
            )
            out["rq3"].append(r)
            print("RQ3", name, attr, r, flush=True)
        for attr in (attrs[0], None):
            r = testing(ir, dom, attr, args.limit, args.samples_eps, rate=0.1)
            r.update(dataset=name, attr=attr)
            out["rq3_eps"].append(r)
            print("RQ3 eps", name, attr, r, flush=True)
    if not args.no_scaling:
        plan = [
            ("compas", "XGBoost 50x3", {}),
            ("compas", "XGBoost 100x3", {"n_trees": 100}),
            ("compas", "XGBoost 200x3", {"n_trees": 200}),
            ("compas", "XGBoost 50x4", {"depth": 4}),
            ("compas", "XGBoost 50x5", {"depth": 5}),
            ("compas", "XGBoost 50x6", {"depth": 6}),
            ("compas", "RandomForest 50x6", {"depth": 6, "forest": True}),
            ("adult", "XGBoost 10x3", {"n_trees": 10}),
            ("adult", "XGBoost 20x3", {"n_trees": 20}),
            ("adult", "XGBoost 25x3", {"n_trees": 25}),
            ("adult", "XGBoost 30x3", {"n_trees": 30}),
            ("adult", "XGBoost 35x3", {"n_trees": 35}),
            ("adult", "XGBoost 40x3", {"n_trees": 40}),
            ("bank", "XGBoost 10x3", {"n_trees": 10}),
            ("bank", "XGBoost 20x3", {"n_trees": 20}),
            ("german", "XGBoost 10x3", {"n_trees": 10}),
            ("german", "XGBoost 20x3", {"n_trees": 20}),
        ]
        for name, label, kw in plan:
            if name not in names:
                continue
            ir, dom, _ = train(name, **kw)
            for attr, rate in ((DATASETS[name][1][0], 0.0), (None, 0.1)):
                r = run(ir, dom, attr, rate, 0.5, args.scale_limit)
                r.update(model=label, dataset=name, attr=attr, rate=rate, kappa=0.5)
                out["scaling"].append(r)
                print("SCALE", label, name, attr, {k: r[k] for k in ("converged", "gap", "time_s")}, flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "trees.json").write_text(json.dumps(out, indent=2, default=float) + "\n")
    (RESULTS / "trees.md").write_text(markdown(out))
    print((RESULTS / "trees.md").read_text())


def _row(r, paper_time):
    ok = "yes" if r["converged"] else "no"
    paper = "-" if paper_time is None else ("<0.1" if paper_time <= 0.1 else f"{paper_time:.1f}")
    return (
        f"| {NAMES[r['dataset']]} | {fmt_attr(r['attr'])} | {ok} | {r['gap']:.2g} | {r['time_s']:.2f} | "
        f"[{r['measure_lower']:.4f}, {r['measure_upper']:.4f}] | {_estimate(r)} | {r['boxes']:,} | yes (0.00) | "
        f"{paper} |"
    )


def _estimate(r):
    e = r.get("estimate")
    if e is None:
        return "-"
    return f"{e['measure']:.4f} [{e['ci'][0]:.4f}, {e['ci'][1]:.4f}], {e['samples']:,} in {e['time_s']:.1f} s"


def _testing_row(r) -> str:
    meas = f"{r['measure_lower']:.4f}" if r["complete"] else f"[{r['measure_lower']:.4f}, {r['measure_upper']:.4f}]"
    return (
        f"| {NAMES[r['dataset']]} | {fmt_attr(r['attr'])} | {meas} | {'yes' if r['exact_region'] else 'partial'} | "
        f"{r['quant_s']:.2f} | {r['sample_s']:.2f} [{min(r['sample_s_runs']):.2f}, {max(r['sample_s_runs']):.2f}] | "
        f"{r['samples']:,} | {r['distinct_idis']:,} | {r['rejected']} |"
    )


def markdown(out) -> str:
    lim = out["limit_s"]
    lines = [
        "# Tree ensembles: exact epsilon-kappa fairness and robustness (BoxQTE grid)",
        "",
        f"Measured on this machine ({out['machine']}, 2 shared cores, one process), time limit {lim:g} s per "
        "configuration (the bounds get its first nine tenths, the statistical estimate the rest; testing mode "
        "quantifies for the whole limit, then samples). XGBoost 50 trees depth 3, seed 0, trained on integer "
        "encodings of the data "
        "(`benchmarks/trees_data.py`); domains are the data ranges (integer grids). Our models are not the "
        "paper's (it publishes none), so measures differ; the paper's BoxQTE column is its own run "
        "(17 parallel workers, 600 s limit; it converged everywhere). 'converged' means lower = upper bound "
        "(exact); 'boxes' = boxes of the measured features (the non-protected ones for fairness) on which "
        "every protected value's verdict is settled; 'time' is the time to the bounds. Where the bounds have "
        "not met, 'estimate' is the statistical estimate of the measure with its 99% interval: settled boxes "
        "exact, uniform samples of the open boxes classified exactly on the model (not a guarantee). Inputs "
        "sampled for estimates and testing mode are evaluated by "
        + (
            "the compiled kernels (numba, the `fast` extra)." if out.get("compiled") else "numpy (numba not installed)."
        ),
        "",
        "'cells': the partition of the domain by every split threshold of the model (it is constant on each).",
        "",
        "| model | features | grid points | cells | train acc. |",
        "|---|---|---|---|---|",
    ]
    for name, m in out["models"].items():
        lines.append(
            f"| {NAMES[name]} | {m['features']} | {m['grid_size']:.3g} | {m['split_cells']:.3g} | "
            f"{m['train_accuracy']:.3f} |"
        )
    head = [
        "| dataset | attr. | converged | gap | time (s) | measure [lower, upper] | estimate [99% CI], samples | boxes "
        "| paper conv. (gap) | paper time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for title, rows, _key in [
        ("RQ1: kappa 0.5, r_eps 0 (fairness)", [r for r in out["rq1"] if r["rate"] == 0], "rq1"),
        (
            "RQ1: kappa 0.5, r_eps 0.1 (fairness; attr. '-' = robustness)",
            [r for r in out["rq1"] if r["rate"] > 0],
            "rq1",
        ),
        ("RQ2: kappa 0.7, r_eps 0.1 (fairness; attr. '-' = robustness)", out["rq2"], "rq2"),
    ]:
        lines += ["", f"## {title}", ""] + head
        lines += [_row(r, r["paper_time_s"]) for r in rows]
        conv = sum(r["converged"] for r in rows)
        fast = sum(r["converged"] and r["time_s"] <= 10 for r in rows)
        lines.append(
            f"\n{conv}/{len(rows)} converged within {lim:g} s"
            + (f", {fast}/{len(rows)} within 10 s." if lim != 10 else ".")
        )
    lines += [
        "",
        "## RQ3: testing mode (r_eps 0, kappa 0.5): 1,000,000 samples from the exact unfair region",
        "",
        "'exact region' yes: the samples are uniform over the whole unfair region. Where the bounds have not "
        "met, inputs drawn from the undecided boxes are kept only if another protected value gets the other "
        "label on the model; 'partial' would mean the proven part only.",
        "",
        "| dataset | attr. | measure | exact region? | quant. (s) | sampling + re-check (s), median of 3 [range] | "
        "re-checked IDIs | distinct | "
        "rejected | paper measure | paper #IDIs | paper sampling (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out["rq3"]:
        lines.append(_testing_row(r) + f" {r['paper_measure']} | {r['paper_idis']:,} | {r['paper_sample_s']} |")
    opened = [r for r in out["rq3"] if r.get("open")]
    if opened:
        lines += [
            "",
            "## Why the epsilon-0 bounds stop short",
            "",
            "The open boxes the RQ3 runs above left at their time limit. For a sample of them, random grid "
            "points of each box are classified on the model under every protected value; 'mixed' boxes hold "
            "both a fair and an unfair input, so no bound, however tight, settles them whole: only further "
            "cuts do.",
            "",
            "| dataset | attr. | open boxes | median grid points per open box | mixed (sampled boxes) |",
            "|---|---|---|---|---|",
        ]
        for r in opened:
            o = r["open"]
            lines.append(
                f"| {NAMES[r['dataset']]} | {fmt_attr(r['attr'])} | {o['open_boxes']:,} | "
                f"{o['median_grid_points']:.3g} | {o['mixed_share']:.0%} ({o['sampled']:,} boxes, "
                f"{o['points_per_box']} points each) |"
            )
    if out.get("rq3_eps"):
        lines += [
            "",
            "## Testing mode with tolerance (r_eps 0.1, kappa 0.5; attr. '-' = robustness)",
            "",
            "Samples from the exact unfair region also where the bounds have not met: an input drawn from an "
            "undecided box is kept only if an exact search of its epsilon-neighbourhood finds the other label "
            "(the twin it finds is written with it). No paper figure: its testing mode has no tolerance.",
            "",
            "| dataset | attr. | measure | exact region? | quant. (s) | sampling + re-check (s), median of 3 "
            "[range] | re-checked samples "
            "| distinct | rejected |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [_testing_row(r) for r in out["rq3_eps"]]
    if "evaluation" in out:
        e, g = out["evaluation"], out["long_run"]
        lines += [
            "",
            "## Tree evaluation and memory (Adult model)",
            "",
            f"Leaf values of {e['rows']:,} random grid inputs x {e['trees']} trees, in batches of "
            f"{e['rows'] // 8:,} rows: by table {e['table_s']:.2f} s, by traversal {e['traversal_s']:.2f} s "
            "(the same leaves). Scores (leaves summed as XGBoost sums them): by numpy "
            f"{e['numpy_scores_s']:.2f} s, "
            + (
                f"compiled {e['compiled_scores_s']:.2f} s (the same scores; numba, both cores)."
                if e["compiled"]
                else "compiled: numba not installed."
            ),
            "",
            f"A long epsilon-0 run (gender, kappa 0.5, limit {g['limit_s']:g} s): stopped at "
            f"{g['elapsed_s']:.1f} s, memory limit reached: {'yes' if g['memory_limited'] else 'no'}, "
            f"peak memory {g['peak_rss_gb']:.2f} GB, measure in [{g['measure_lower']:.4f}, "
            f"{g['measure_upper']:.4f}].",
        ]
    if out.get("real"):
        g = out["long_run_real"]
        lines += [
            "",
            f"## Real-valued features (Adult model, its integer features made real: sizes are volumes; "
            f"r_eps 0.1, kappa 0.5, limit {lim:g} s)",
            "",
            "'regions': the region path alone; 'auto': the region path for a third of the limit, then the refinement.",
            "",
            "| property | method | converged | gap | measure [lower, upper] | estimate [99% CI], samples | boxes |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in out["real"]:
            prop = f"fairness ({fmt_attr(r['attr'])})" if r["attr"] else "robustness"
            lines.append(
                f"| {prop} | {r['method']} | {'yes' if r['converged'] else 'no'} | {r['gap']:.2g} | "
                f"[{r['measure_lower']:.4f}, {r['measure_upper']:.4f}] | {_estimate(r)} | {r['boxes']:,} |"
            )
        lines += [
            "",
            f"A long region-path run (gender, limit {g['limit_s']:g} s): stopped at {g['elapsed_s']:.1f} s, "
            f"memory limit reached: {'yes' if g['memory_limited'] else 'no'}, peak memory "
            f"{g['peak_rss_gb']:.2f} GB, measure in [{g['measure_lower']:.4f}, {g['measure_upper']:.4f}].",
        ]
    if out["scaling"]:
        lines += [
            "",
            f"## Scaling (kappa 0.5; fairness r_eps 0 and robustness r_eps 0.1; limit {out['scale_limit_s']:g} s)",
            "",
            "COMPAS: more trees, deeper trees, a random forest. Adult, Bank, German: how the work to converge "
            "grows with the number of trees on their 13 to 20 features ('boxes': settled boxes; 'memory cap': "
            f"stopped early at the {default_limit() / 1e9:.1f} GB of open and unfair boxes a refinement may "
            "hold).",
            "",
            "| model | dataset | property | converged | gap | time (s) | stopped by | boxes |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in out["scaling"]:
            prop = f"fairness ({fmt_attr(r['attr'])})" if r["attr"] else "robustness"
            stop = "-" if r["converged"] else "memory cap" if r["memory_limited"] else "time limit"
            lines.append(
                f"| {r['model']} | {NAMES[r['dataset']]} | {prop} | {'yes' if r['converged'] else 'no'} | "
                f"{r['gap']:.2g} | {r['time_s']:.2f} | {stop} | {r['boxes']:,} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
