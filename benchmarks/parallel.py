"""Box work on several processes and on Ray: speedup, overhead, and where a driver would saturate.

The tree refinement at epsilon 0 on the Adult benchmark model (XGBoost 50 trees, depth 3, from
benchmarks/trees.py; fairness for sex and age), limited by work (`max_boxes`) so that every run
examines the same boxes and gives the same shares, which the script checks. For each: wall time of
the refinement with 1 and 2 local workers and with 2 Ray actors on a local cluster (cluster start
not counted); boxes examined per second; and, from the driver's side of the 2-worker run, the time
per round spent outside the workers (merging, the frontier), which bounds the worker count one
driver can feed (stated as a projection).

    python benchmarks/parallel.py [--max-boxes N] [--repeats 3]

Writes benchmarks/results/parallel.{md,json}.
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
from trees import train  # noqa: E402

from faircert.engines.boxes.workers import Parallelism, Workers  # noqa: E402
from faircert.engines.trees import joint  # noqa: E402
from faircert.engines.trees.quantify import quantify  # noqa: E402
from faircert.properties import individual_fairness  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


class _TimedWorkers(Workers):
    """Workers that record how long each round's map took (the rest of a round is the driver's)."""

    rounds: list[float] = []

    def map(self, method, chunks):
        t0 = time.perf_counter()
        out = super().map(method, chunks)
        _TimedWorkers.rounds.append(time.perf_counter() - t0)
        return out


def run(ir, prop, parallel: Parallelism, max_boxes: int) -> dict:
    t0 = time.perf_counter()
    q = quantify(ir, prop, None, parallel=parallel, max_boxes=max_boxes)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "bounds": list(q.bounds), "unfair": q.unfair, "boxes": q.stats.get("boxes"),
            "complete": q.complete}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-boxes", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    ir, dom, _ = train("adult")
    rows = []
    for attr in ("sex", "age"):
        prop = individual_fairness(dom, attr, kappa=0.5)
        setups = {"1 process": Parallelism(1), "2 processes": Parallelism(2)}
        if not args.no_ray:
            import ray

            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            setups["2 Ray actors (local cluster)"] = Parallelism(2, "auto")
        runs: dict[str, list[dict]] = {k: [] for k in setups}
        for _ in range(args.repeats):
            for name, parallel in setups.items():
                runs[name].append(run(ir, prop, parallel, args.max_boxes))
        if not args.no_ray:
            ray.shutdown()
        reference = runs["1 process"][0]
        same = all((r["bounds"], r["unfair"]) == (reference["bounds"], reference["unfair"])
                   for rs in runs.values() for r in rs)
        # the driver's share of a 2-worker round: round wall time minus the workers' map time
        _TimedWorkers.rounds = []
        original = joint.Parallelism.open
        joint_open = (lambda self, job: _TimedWorkers(job, self.workers))
        joint.Parallelism.open = joint_open
        try:
            t0 = time.perf_counter()
            quantify(ir, prop, None, parallel=Parallelism(2), max_boxes=args.max_boxes)
            wall = time.perf_counter() - t0
        finally:
            joint.Parallelism.open = original
        n_rounds = len(_TimedWorkers.rounds)
        driver_s = (wall - sum(_TimedWorkers.rounds)) / max(n_rounds, 1)
        map_s = statistics.median(_TimedWorkers.rounds) if n_rounds else 0.0
        one = statistics.median(r["wall_s"] for r in runs["1 process"])
        row = {"attr": attr, "max_boxes": args.max_boxes, "same_shares": same, "bounds": reference["bounds"],
               "rounds": n_rounds, "driver_s_per_round": driver_s, "map_s_per_round": map_s,
               "chunks_per_round": joint.ROUND_CHUNKS}
        for name, rs in runs.items():
            med = statistics.median(r["wall_s"] for r in rs)
            row[name] = {"median_s": med, "runs_s": [r["wall_s"] for r in rs], "speedup": one / med,
                         "boxes_per_s": args.max_boxes / med}
        # one driver feeds workers while its own share of a round is smaller than a chunk's work
        per_chunk_work = 2 * map_s / joint.ROUND_CHUNKS if map_s else 0.0
        row["projected_max_workers"] = per_chunk_work / driver_s * joint.ROUND_CHUNKS if driver_s > 0 else None
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "bounds"}, default=str), flush=True)
    meta = {"python": platform.python_version(), "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
            "load_before": os.getloadavg()[0]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "parallel.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    (RESULTS / "parallel.md").write_text(markdown(meta, rows))


def markdown(meta: dict, rows: list[dict]) -> str:
    setups = [k for k in rows[0] if isinstance(rows[0][k], dict) and "median_s" in rows[0][k]]
    lines = ["# Box work on several processes and on Ray", "",
             f"Tree refinement at epsilon 0, Adult XGBoost 50x3, kappa 0.5, {rows[0]['max_boxes']:,} boxes examined "
             f"per run (a budget by work), median of the runs, on this {meta['cpus']}-core machine, {meta['date']}. "
             "Ray: a local cluster of 2 CPUs, started before timing. Target: 2 processes >= 1.8x one; Ray within "
             "15% of the local pool.", "",
             "| attr. | setup | median s | boxes/s | speedup over 1 process | same shares as 1 process |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        for name in setups:
            s = r[name]
            lines.append(f"| {r['attr']} | {name} | {s['median_s']:.2f} | {s['boxes_per_s']:,.0f} | "
                         f"{s['speedup']:.2f}x | {'yes' if r['same_shares'] else 'NO'} |")
    lines += ["", "Driver throughput (2 processes): time per round outside the workers, and a projection of "
              "how many workers one driver could keep busy at this chunk size (the driver's share of a round "
              "against one chunk's work; a projection, not a measurement):", "",
              "| attr. | rounds | driver ms/round | workers' map ms/round | projected workers per driver |",
              "|---|---|---|---|---|"]
    for r in rows:
        proj = f"{r['projected_max_workers']:.0f}" if r["projected_max_workers"] else "-"
        lines.append(f"| {r['attr']} | {r['rounds']:,} | {1000 * r['driver_s_per_round']:.1f} | "
                     f"{1000 * r['map_s_per_round']:.1f} | {proj} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
