"""Box work on several processes and on Ray: speedup, overhead, and where a driver would saturate.

Trees: the tree refinement at epsilon 0 on the Adult benchmark model (XGBoost 50 trees, depth 3,
from benchmarks/trees.py; fairness for sex and age). Networks: the box refinement of the FairQuant
networks AC-4, AC-5 and BM-4 (header domains and protected attributes of benchmarks/fairquant.py).
Every run is limited by work (`max_boxes`) so that it examines the same boxes and gives the same
shares, which the script checks. For each: wall time of the refinement with 1 and 2 local workers
and with 2 Ray actors on a local cluster (cluster start not counted); boxes examined per second;
and, from the driver's side of the 2-worker run, the time per slice spent outside the workers
(summing the shards' progress), which bounds the worker count one driver can feed (stated as a
projection). For networks also the one-process run without a box budget (the default path),
stopped near the same number of boxes: its boxes per second and undecided share.

Partitions: Fairify's partitioned verification (benchmarks/fairify.py's Table II setup) of the
models whose coverage it misses at 120 s, with a fixed time budget: partitions decided with 1 and 2
workers (time-limited, so not the same work; the verdicts of partitions decided by both must agree).
Programs: the sound bounds of the slowest FairSquare programs (benchmarks/fairsquare.py), run to
their verdict with 1 and 2 workers (the same bounds, checked).

    python benchmarks/parallel.py [--only trees|networks|partitions|programs] [--max-boxes N] [--net-max-boxes N]
                                  [--repeats 3]

Writes benchmarks/results/parallel.{md,json}; with --only, the other part's rows are kept from the
existing JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairquant import load_case  # noqa: E402
from trees import train  # noqa: E402

from faircert import interrupt  # noqa: E402
from faircert.engines.boxes import frontier, shards  # noqa: E402
from faircert.engines.boxes.workers import Parallelism, Workers  # noqa: E402
from faircert.engines.network import refine  # noqa: E402
from faircert.engines.trees.quantify import quantify  # noqa: E402
from faircert.engines.trees.run import TreeOptions  # noqa: E402
from faircert.properties import individual_fairness  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: the FairQuant networks whose throughput FairQuant reports (benchmarks/fairquant.py)
NETWORKS = ("AC-4", "AC-5", "BM-4")
PARTS = ("trees", "tree-scale", "networks", "partitions", "programs")


class _TimedWorkers(Workers):
    """Workers that record how long each slice took on the workers (a `step` of the shards; the rest
    of the run is the driver's)."""

    rounds: list[float] = []

    def map(self, method, chunks):
        t0 = time.perf_counter()
        out = super().map(method, chunks)
        _TimedWorkers.rounds.append(time.perf_counter() - t0)
        return out

    def each(self, method, args):
        t0 = time.perf_counter()
        out = super().each(method, args)
        if method == "step":
            _TimedWorkers.rounds.append(time.perf_counter() - t0)
        return out


def run(ir, prop, parallel: Parallelism, max_boxes: int) -> dict:
    t0 = time.perf_counter()
    q = quantify(ir, prop, None, options=TreeOptions(parallel=parallel, max_boxes=max_boxes))
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "bounds": list(q.bounds),
        "unfair": q.unfair,
        "boxes": q.stats.get("boxes"),
        "examined": q.stats["examined"],
        "complete": q.complete,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=PARTS, help="run one part; keep the others' rows")
    ap.add_argument("--partition-models", default="AC-7,BM-8")
    ap.add_argument("--partition-s", type=float, default=60.0, help="seconds per partitioned run")
    ap.add_argument("--programs", default="M_BNc_F_SVM_V6.fr,M_BNc_F_NN_V3_H2.fr")
    ap.add_argument("--max-boxes", type=int, default=1_000_000, help="tree boxes per run")
    ap.add_argument("--net-max-boxes", type=int, default=100_000, help="network boxes per run")
    ap.add_argument("--networks", default=",".join(NETWORKS), help="comma-separated FairQuant networks")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--timed-s", type=float, default=20.0, help="seconds of the time-limited tree runs")
    ap.add_argument("--scale-s", type=float, default=120.0, help="seconds per tree-scale run")
    ap.add_argument(
        "--scale-memory-mb",
        type=float,
        default=100.0,
        help="the smaller memory limit (per worker) of the tree-scale runs",
    )
    args = ap.parse_args()
    old = json.loads((RESULTS / "parallel.json").read_text()) if (RESULTS / "parallel.json").exists() else {}
    meta = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
        "load_before": os.getloadavg()[0],
    }
    out = {"meta": meta}
    for part, key, make in (
        ("trees", "rows", tree_rows),
        ("tree-scale", "scale_rows", scale_rows),
        ("networks", "network_rows", network_rows),
        ("partitions", "partition_rows", partition_rows),
        ("programs", "program_rows", program_rows),
    ):
        keep = args.only is not None and args.only != part
        out[key] = old.get(key, []) if keep else make(args)
        if key != "rows":
            out[f"{part}_meta"] = old.get(f"{part}_meta", old.get("meta", meta)) if keep else meta
    if args.only is not None and args.only != "trees":
        out["meta"] = old.get("meta", meta)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "parallel.json").write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / "parallel.md").write_text(
        "# Box work on several processes and on Ray\n\n"
        + markdown(out["meta"], out["rows"])
        + scale_markdown(out["tree-scale_meta"], out["scale_rows"])
        + network_markdown(out["networks_meta"], out["network_rows"])
        + partition_markdown(out["partitions_meta"], out["partition_rows"])
        + program_markdown(out["programs_meta"], out["program_rows"])
    )


def _ray_setup(setups: dict, args) -> None:
    if not args.no_ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        setups["2 Ray actors (local cluster)"] = Parallelism(2, "auto")


def _ray_shutdown(args) -> None:
    if not args.no_ray:
        import ray

        ray.shutdown()


def _timed_two_processes(call) -> tuple[int, float, float]:
    """Rounds, the driver's seconds per round outside the workers, and the median map seconds of a
    2-process run of `call(parallel)` (its refinement only, where it returns the time that took)."""
    _TimedWorkers.rounds = []
    original = Parallelism.open
    Parallelism.open = lambda self, job: _TimedWorkers(job, self.workers)
    try:
        t0 = time.perf_counter()
        out = call(Parallelism(2))
        wall = out["refine_s"] if isinstance(out, dict) else time.perf_counter() - t0  # networks: no estimate
    finally:
        Parallelism.open = original
    n_rounds = len(_TimedWorkers.rounds)
    driver_s = (wall - sum(_TimedWorkers.rounds)) / max(n_rounds, 1)
    return n_rounds, driver_s, statistics.median(_TimedWorkers.rounds) if n_rounds else 0.0


def tree_rows(args) -> list[dict]:
    ir, dom, _ = train("adult")
    rows = []
    for attr in ("sex", "age"):
        prop = individual_fairness(dom, attr, kappa=0.5)
        setups = {"1 process": Parallelism(1), "2 processes": Parallelism(2)}
        _ray_setup(setups, args)
        runs: dict[str, list[dict]] = {k: [] for k in setups}
        for _ in range(args.repeats):
            for name, parallel in setups.items():
                runs[name].append(run(ir, prop, parallel, args.max_boxes))
        # time-limited (the default way to run; no levels): boxes examined per second, one run each
        timed = {}
        for name, parallel in setups.items():
            q = quantify(ir, prop, args.timed_s, options=TreeOptions(parallel=parallel))
            timed[name] = q.stats["examined"] / q.elapsed
        _ray_shutdown(args)
        reference = runs["1 process"][0]
        same = all(
            (r["bounds"], r["unfair"]) == (reference["bounds"], reference["unfair"]) for rs in runs.values() for r in rs
        )
        # the driver's share of a 2-worker round: round wall time minus the workers' map time
        n_rounds, driver_s, map_s = _timed_two_processes(
            lambda parallel: quantify(ir, prop, None, options=TreeOptions(parallel=parallel, max_boxes=args.max_boxes))
        )
        one = statistics.median(r["wall_s"] for r in runs["1 process"])
        row = {
            "attr": attr,
            "max_boxes": args.max_boxes,
            "examined": reference["examined"],
            "same_shares": same,
            "bounds": reference["bounds"],
            "rounds": n_rounds,
            "driver_s_per_round": driver_s,
            "map_s_per_round": map_s,
            "slice_s": shards.SLICE_S,
        }
        for name, rs in runs.items():
            med = statistics.median(r["wall_s"] for r in rs)
            row[name] = {
                "median_s": med,
                "runs_s": [r["wall_s"] for r in rs],
                "speedup": one / med,
                "boxes_per_s": reference["examined"] / med,
                "timed_boxes_per_s": timed[name],
                "timed_speedup": timed[name] / timed["1 process"],
            }
        row["timed_s"] = args.timed_s
        # every step costs the driver about the same per worker (a call and its progress merged):
        # it keeps workers busy while their count times that cost stays below a step's work
        row["projected_max_workers"] = (map_s / (driver_s / 2)) if driver_s > 0 and map_s else None
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "bounds"}, default=str), flush=True)
    return rows


def markdown(meta: dict, rows: list[dict]) -> str:
    if not rows:
        return ""
    setups = [k for k in rows[0] if isinstance(rows[0][k], dict) and "median_s" in rows[0][k]]
    lines = [
        "## Tree ensembles",
        "",
        f"Tree refinement at epsilon 0, Adult XGBoost 50x3, kappa 0.5, a budget of {rows[0]['max_boxes']:,} "
        "boxes per run (the run ends with the level of box sizes that reaches it: "
        f"{rows[0].get('examined', 0):,} and {rows[-1].get('examined', 0):,} boxes examined), median of the runs, "
        "on this "
        f"{meta['cpus']}-core machine, {meta['date']}. Each worker keeps its share of the open boxes (shards); "
        "the driver only tells it how far to go. Ray: a local cluster of 2 CPUs, started before timing. Target: "
        "2 processes >= 1.8x one; Ray within 15% of the local pool.",
        "",
        "| attr. | setup | median s | boxes/s | speedup over 1 process | same shares as 1 process |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        for name in setups:
            s = r[name]
            lines.append(
                f"| {r['attr']} | {name} | {s['median_s']:.2f} | {s['boxes_per_s']:,.0f} | "
                f"{s['speedup']:.2f}x | {'yes' if r['same_shares'] else 'NO'} |"
            )
    if "timed_s" in rows[0]:
        lines += [
            "",
            f"Time-limited runs ({rows[0]['timed_s']:.0f} s, one each; the default way to run: no levels, "
            "each worker refines its share largest first at its own pace):",
            "",
            "| attr. | setup | boxes examined/s | over 1 process |",
            "|---|---|---|---|",
        ]
        for r in rows:
            for name in setups:
                s = r[name]
                lines.append(f"| {r['attr']} | {name} | {s['timed_boxes_per_s']:,.0f} | {s['timed_speedup']:.2f}x |")
    lines += [
        "",
        f"Driver throughput (2 processes): steps of at most {rows[0].get('slice_s')} s of work per worker, the "
        "driver's time per step outside the workers (merging their totals; the run's first boxes, refined "
        "here before they are dealt out, and the open boxes gathered at the end count too), and a projection "
        "of how many workers one driver could keep busy (a step's work against the driver's cost per worker "
        "and step; a projection, not a measurement):",
        "",
        "| attr. | steps | driver ms/step | workers' ms/step | projected workers per driver |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        proj = f"{r['projected_max_workers']:.0f}" if r["projected_max_workers"] else "-"
        lines.append(
            f"| {r['attr']} | {r['rounds']:,} | {1000 * r['driver_s_per_round']:.1f} | "
            f"{1000 * r['map_s_per_round']:.1f} | {proj} |"
        )
    return "\n".join(lines) + "\n"


def net_run(net, prop, parallel: Parallelism, max_boxes: int) -> dict:
    res = refine.verify_network(
        net, prop, time_limit=None, max_counterexamples=0, parallel=parallel, max_boxes=max_boxes
    )
    st = res.stats
    return {
        "refine_s": st["elapsed_refine_s"],
        "shares": [res.certified, res.falsified, res.undecided],
        "boxes": st["boxes_examined"],
    }


def serial_loop(net, prop, max_boxes: int) -> dict:
    """The one-process loop without a box budget (the default path), stopped by a stop request once
    its progress report counts `max_boxes` boxes (reports come every 0.25 s: a little beyond)."""

    def stop_near_budget(p: dict) -> None:
        if p["boxes"] >= max_boxes:
            interrupt.request()

    try:
        res = refine.verify_network(net, prop, time_limit=None, max_counterexamples=0, progress=stop_near_budget)
    finally:
        interrupt.clear()
    st = res.stats
    return {
        "refine_s": st["elapsed_refine_s"],
        "shares": [res.certified, res.falsified, res.undecided],
        "boxes": st["boxes_bounded"] + st["boxes_exact"],
    }


def network_rows(args) -> list[dict]:
    rows = []
    for name in args.networks.split(","):
        net, dom, p = load_case(name, "header")
        prop = individual_fairness(dom, [p])
        setups = {"1 process": Parallelism(1), "2 processes": Parallelism(2)}
        _ray_setup(setups, args)
        runs: dict[str, list[dict]] = {k: [] for k in setups}
        loop = []
        for _ in range(args.repeats):
            for setup, parallel in setups.items():
                runs[setup].append(net_run(net, prop, parallel, args.net_max_boxes))
            loop.append(serial_loop(net, prop, args.net_max_boxes))
        _ray_shutdown(args)
        reference = runs["1 process"][0]
        same = all(
            (r["shares"], r["boxes"]) == (reference["shares"], reference["boxes"]) for rs in runs.values() for r in rs
        )
        n_rounds, driver_s, map_s = _timed_two_processes(
            lambda parallel: net_run(net, prop, parallel, args.net_max_boxes)
        )
        one = statistics.median(r["refine_s"] for r in runs["1 process"])
        row = {
            "model": name,
            "max_boxes": args.net_max_boxes,
            "boxes": reference["boxes"],
            "same_shares": same,
            "shares": reference["shares"],
            "rounds": n_rounds,
            "driver_s_per_round": driver_s,
            "map_s_per_round": map_s,
        }
        for setup, rs in runs.items():
            med = statistics.median(r["refine_s"] for r in rs)
            row[setup] = {
                "median_s": med,
                "runs_s": [r["refine_s"] for r in rs],
                "speedup": one / med,
                "boxes_per_s": reference["boxes"] / med,
            }
        med = statistics.median(r["refine_s"] for r in loop)
        rate = statistics.median(r["boxes"] / r["refine_s"] for r in loop)
        row["serial loop"] = {
            "median_s": med,
            "boxes": [r["boxes"] for r in loop],
            "boxes_per_s": rate,
            "undecided": [r["shares"][2] for r in loop],
        }
        row["projected_max_workers"] = (2 * map_s / driver_s) if driver_s > 0 and map_s else None
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)
    return rows


def scale_rows(args) -> list[dict]:
    """Adult 35 and 40 trees (fairness for age, epsilon 0, kappa 0.5) with 1 and 2 workers, each
    keeping its share of the open boxes under its own memory limit: at the full limit and at a
    small one, where one process stops at its memory and two hold twice as much."""
    rows = []
    full = frontier.MAX_STORED_BYTES
    for trees in (35, 40):
        ir, dom, _ = train("adult", trees)
        prop = individual_fairness(dom, "age", kappa=0.5)
        for limit in (full, int(args.scale_memory_mb * 1e6)):
            frontier.MAX_STORED_BYTES = limit  # read at run time, inherited by forked workers
            try:
                for workers in (1, 2):
                    t0 = time.perf_counter()
                    q = quantify(ir, prop, args.scale_s, options=TreeOptions(parallel=Parallelism(workers)))
                    wall = time.perf_counter() - t0
                    lo, hi = q.bounds
                    row = {
                        "trees": trees,
                        "limit_bytes": limit,
                        "workers": workers,
                        "limit_s": args.scale_s,
                        "wall_s": wall,
                        "converged": bool(q.complete and hi - lo <= 1e-12),
                        "gap": hi - lo,
                        "bounds": [lo, hi],
                        "examined": q.stats["examined"],
                        "memory_limited": q.stats["memory_limited"],
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            finally:
                frontier.MAX_STORED_BYTES = full
    return rows


def scale_markdown(meta: dict, rows: list[dict]) -> str:
    if not rows:
        return ""
    lines = [
        "",
        "## Tree ensembles past one process's memory",
        "",
        f"Adult XGBoost 35 and 40 trees (depth 3), fairness for age, epsilon 0, kappa 0.5, "
        f"{rows[0]['limit_s']:.0f} s per run, on this "
        f"{meta['cpus']}-core machine, {meta['date']}. Each worker keeps its share of the open and unfair boxes "
        "under its own memory limit (stored bytes, per worker), so two workers hold twice what one process may.",
        "",
        "| trees | memory limit per worker | workers | converged | gap | boxes examined | s | stopped by |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        stop = "-" if r["converged"] else ("memory limit" if r["memory_limited"] else "time limit")
        lines.append(
            f"| {r['trees']} | {r['limit_bytes'] / 1e6:,.0f} MB | {r['workers']} | "
            f"{'yes' if r['converged'] else 'no'} | {r['gap']:.2g} | {r['examined']:,} | {r['wall_s']:.1f} | "
            f"{stop} |"
        )
    return "\n".join(lines) + "\n"


def network_markdown(meta: dict, rows: list[dict]) -> str:
    if not rows:
        return ""
    setups = [k for k in rows[0] if isinstance(rows[0][k], dict) and "speedup" in rows[0][k]]
    lines = [
        "",
        "## ReLU networks",
        "",
        f"Box refinement of the FairQuant networks (header domains), {rows[0]['max_boxes']:,} boxes per run "
        f"(a budget by work: the run stops at the end of the level that reaches it), median refinement time "
        f"of the runs, on this {meta['cpus']}-core machine, {meta['date']}. Ray as for trees. The serial loop "
        "is the one-process path without a box budget (no levels, growth limited by time), stopped near the "
        "same number of boxes.",
        "",
        "| model | setup | median s | boxes/s | speedup over 1 process | same shares as 1 process | undecided |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for name in setups:
            s = r[name]
            lines.append(
                f"| {r['model']} | {name} | {s['median_s']:.2f} | {s['boxes_per_s']:,.0f} | "
                f"{s['speedup']:.2f}x | {'yes' if r['same_shares'] else 'NO'} | {100 * r['shares'][2]:.2f}% |"
            )
        s = r["serial loop"]
        und = statistics.median(s["undecided"])
        lines.append(
            f"| {r['model']} | 1 process, serial loop ({statistics.median(s['boxes']):,.0f} boxes) | "
            f"{s['median_s']:.2f} | {s['boxes_per_s']:,.0f} | - | - | {100 * und:.2f}% |"
        )
    lines += [
        "",
        "Driver throughput (2 processes), as for trees:",
        "",
        "| model | steps | driver ms/step | workers' ms/step | projected workers per driver |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        proj = f"{r['projected_max_workers']:.0f}" if r["projected_max_workers"] else "-"
        lines.append(
            f"| {r['model']} | {r['rounds']:,} | {1000 * r['driver_s_per_round']:.1f} | "
            f"{1000 * r['map_s_per_round']:.1f} | {proj} |"
        )
    return "\n".join(lines) + "\n"


def partition_rows(args) -> list[dict]:
    from fairify import load_case as load_table2_case

    from faircert.engines.network.decide import decide_network

    rows = []
    for name in args.partition_models.split(","):
        net, prop, ms = load_table2_case(name)
        row = {"model": name, "partition_size": ms, "seconds": args.partition_s}
        verdicts = {}
        for setup, parallel in (("1 process", Parallelism(1)), ("2 processes", Parallelism(2))):
            t0 = time.perf_counter()
            res = decide_network(net, prop, time_limit=args.partition_s, partition_size=ms, parallel=parallel)
            d = res.decision
            row[setup] = {
                "wall_s": time.perf_counter() - t0,
                "decided": d["fair"] + d["unfair"],
                "fair": d["fair"],
                "unfair": d["unfair"],
                "unknown": d["unknown"],
                "coverage": d["coverage"],
            }
            verdicts[setup] = [p["verdict"] for p in res.partitions]
        both = [(a, b) for a, b in zip(*verdicts.values()) if "unknown" not in (a, b)]
        row["agree"] = all(a == b for a, b in both)
        row["gain"] = row["2 processes"]["decided"] / max(row["1 process"]["decided"], 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def partition_markdown(meta: dict, rows: list[dict]) -> str:
    if not rows:
        return ""
    lines = [
        "",
        "## Partitioned network verification",
        "",
        f"Fairify's Table II partitions (benchmarks/fairify.py), the time limit of each run as listed, on this "
        f"{meta['cpus']}-core machine, {meta['date']}. Time-limited: decided partitions with 1 and 2 local "
        "worker processes; 'agree' checks the verdicts of partitions both decided.",
        "",
        "| model | partitions | limit s | 1 process: decided (coverage), s | 2 processes: decided (coverage), s | "
        "2 over 1 | agree |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        one, two = r["1 process"], r["2 processes"]
        total = one["decided"] + one["unknown"]
        lines.append(
            f"| {r['model']} | {total:,} | {r['seconds']:g} | {one['decided']:,} ({100 * one['coverage']:.2f}%), "
            f"{one['wall_s']:.1f} | {two['decided']:,} ({100 * two['coverage']:.2f}%), {two['wall_s']:.1f} | "
            f"{r['gain']:.2f}x | "
            f"{'yes' if r['agree'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def _trial_share(call) -> float:
    """The share of a one-process run spent evaluating trial splits (the part workers take over)."""
    from faircert.engines.probability.refine import Refiner

    spent = [0.0]
    original = Refiner._evaluate_trials

    def timed(self, calls):
        t0 = time.perf_counter()
        out = original(self, calls)
        spent[0] += time.perf_counter() - t0
        return out

    Refiner._evaluate_trials = timed
    try:
        t0 = time.perf_counter()
        call()
        return spent[0] / (time.perf_counter() - t0)
    finally:
        Refiner._evaluate_trials = original


def program_rows(args) -> list[dict]:
    from fairsquare import PROGRAMS

    from faircert.engines.probability.bounds import program_fairness

    rows = []
    for file in args.programs.split(","):
        runs: dict[str, list] = {"1 process": [], "2 processes": []}
        for _ in range(args.repeats):
            for setup, parallel in (("1 process", Parallelism(1)), ("2 processes", Parallelism(2))):
                t0 = time.perf_counter()
                res = program_fairness(PROGRAMS / file, epsilon=0.15, time_limit=None, parallel=parallel)
                runs[setup].append(
                    (
                        time.perf_counter() - t0,
                        (res.ratio_low, res.ratio_high, res.verdict, res.stats["box_evaluations"]),
                    )
                )
        one = statistics.median(t for t, _ in runs["1 process"])
        two = statistics.median(t for t, _ in runs["2 processes"])
        same = len({r for rs in runs.values() for _, r in rs}) == 1
        share = _trial_share(lambda: program_fairness(PROGRAMS / file, epsilon=0.15, time_limit=None))
        rows.append(
            {
                "program": file,
                "verdict": runs["1 process"][0][1][2],
                "one_s": one,
                "two_s": two,
                "speedup": one / two,
                "same_bounds": same,
                "evaluations": runs["1 process"][0][1][3],
                "trial_share": share,
                "amdahl_2": 1.0 / ((1.0 - share) + share / 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def program_markdown(meta: dict, rows: list[dict]) -> str:
    if not rows:
        return ""
    lines = [
        "",
        "## Program bounds",
        "",
        f"Sound bounds of the slowest FairSquare programs (epsilon 0.15) to their verdict, median of the runs, "
        f"on this {meta['cpus']}-core machine, {meta['date']}; each step's trial splits are evaluated on the "
        "workers. 'Trial share': the share of a one-process run spent evaluating trial splits, the part the "
        "workers take over; the rest (choosing the boxes, keeping the split's halves, retiring decided boxes) "
        "stays in the driver, which bounds the speedup of 2 workers at 1 / ((1 - share) + share / 2).",
        "",
        "| program | verdict | box evaluations | 1 process s | 2 processes s | speedup | same bounds | "
        "trial share | bound for 2 workers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        bound = f"{r['trial_share']:.2f} | {r['amdahl_2']:.2f}x" if "trial_share" in r else "- | -"
        lines.append(
            f"| {r['program']} | {r['verdict']} | {r['evaluations']:,} | {r['one_s']:.2f} | "
            f"{r['two_s']:.2f} | {r['speedup']:.2f}x | {'yes' if r['same_bounds'] else 'NO'} | {bound} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
