"""Memory of the epsilon-0 tree refinement on the Adult benchmark model: what it stores at its memory
limit (open boxes and unfair boxes, their bytes), how long it takes to get there, and the gap left.

Same model as benchmarks/trees.py (XGBoost 50 trees, depth 3, seed 0), fairness of sex, race and
age (decades) at r_eps 0, kappa 0.5, each run in its own process (for its peak RSS). The stored
figures are read after each step of the refinement, from the arrays it holds. Writes
benchmarks/results/trees_memory.{md,json}; `--label` names the run (several runs, e.g. of two
versions of the code, are kept side by side in the json, by label).

    python benchmarks/trees_memory.py [--limit 600] [--attrs sex,race,age] [--label after]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def probe(attr: str, limit: float) -> dict:
    """One quantification to its end; the stored figures after its last step."""
    import resource

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from trees import train

    from faircert import memory
    from faircert.engines.boxes import shards
    from faircert.engines.trees.quantify import quantify
    from faircert.properties import individual_fairness

    last: dict = {}
    step = shards.Shard.step

    def watched(shard, *args, **kwargs):
        """The shard's step, then what it stores (one process: the only shard)."""
        out = step(shard, *args, **kwargs)
        last.update(
            open_boxes=shard.frontier.count,
            open_bytes=shard.frontier.nbytes,
            unfair_bytes=shard.region.nbytes,
            unfair_boxes=shard.region.boxes,
        )
        return out

    shards.Shard.step = watched
    ir, dom, _ = train("adult")
    prop = individual_fairness(dom, attr, epsilon_rate=0.0, kappa=0.5)
    q = quantify(ir, prop, time_limit=limit)
    lo, hi = q.bounds
    limit_bytes = memory.limit()
    return {
        "attr": attr,
        "limit_s": limit,
        "time_s": q.elapsed,
        "memory_limited": q.stats["memory_limited"],
        "converged": bool(q.complete and hi - lo <= 1e-12),
        "gap": hi - lo,
        "measure_lower": lo,
        "measure_upper": hi,
        "settled_boxes": q.stats["boxes"],
        "slices": q.stats["slices"],
        "max_stored_bytes": limit_bytes,
        "stored_boxes": last.get("open_boxes", 0) + last.get("unfair_boxes", 0),
        "stored_bytes": last.get("open_bytes", 0) + last.get("unfair_bytes", 0),
        **last,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }


def write(label: str, rows: list[dict], limit: float, measured: str | None = None) -> None:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "trees_memory.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    runs[label] = {
        "measured": measured or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "limit_s": limit,
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "rows": rows,
    }
    path.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    out = [
        "# Memory of the epsilon-0 tree refinement (Adult, r_eps 0, kappa 0.5)",
        "",
        "XGBoost 50 trees depth 3 (benchmarks/trees.py), one process per run, time limit per run as "
        "listed. 'stored' = open boxes plus stored unfair boxes at the last check of the memory limit, "
        "with the bytes of their arrays; 'B/open', 'B/unfair' = bytes per open box and per stored unfair "
        "box; the limit is in boxes (5,000,000) or bytes as the run's code had it. Where the limit was in "
        "boxes, an unfair box was stored once per protected value it is unfair in (with its twin box), "
        "and 'unfair boxes' counts those copies. Gap = upper - lower bound of the measure.",
        "",
    ]
    for name, run in runs.items():
        out += [
            f"## {name} ({run['measured']}, {run['machine']}, {run['cores']} cores, limit {run['limit_s']:g} s)",
            "",
            "| attr. | slices | limit | stopped | time s | gap | lower | upper | open boxes | unfair boxes | "
            "stored | stored MB | B/open | B/unfair | peak RSS GB |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in run["rows"]:
            stop = "converged" if r["converged"] else ("memory limit" if r["memory_limited"] else "time limit")
            lim = (
                f"{r['max_stored_bytes'] / 1e6:,.0f} MB"
                if r.get("max_stored_bytes")
                else f"{r['max_stored_boxes']:,} boxes"
            )
            per = lambda b, n: f"{b / n:.1f}" if n else "-"
            out.append(
                f"| {r['attr']} | {r['slices']} | {lim} | {stop} | {r['time_s']:.1f} | {r['gap']:.4f} | "
                f"{r['measure_lower']:.4f} | {r['measure_upper']:.4f} | {r.get('open_boxes', 0):,} | "
                f"{r.get('unfair_boxes', 0):,} | {r['stored_boxes']:,} | {r['stored_bytes'] / 1e6:,.0f} | "
                f"{per(r.get('open_bytes', 0), r.get('open_boxes', 0))} | "
                f"{per(r.get('unfair_bytes', 0), r.get('unfair_boxes', 0))} | {r['peak_rss_gb']:.2f} |"
            )
        out.append("")
    (RESULTS / "trees_memory.md").write_text("\n".join(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=float, default=600.0)
    ap.add_argument("--attrs", default="sex,race,age")
    ap.add_argument("--label", default="current")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    ap.add_argument("--render", action="store_true", help="only rewrite the markdown from the json")
    args = ap.parse_args()
    if args.render:
        runs = json.loads((RESULTS / "trees_memory.json").read_text())["runs"]
        label = next(iter(runs))
        write(label, runs[label]["rows"], runs[label]["limit_s"], runs[label]["measured"])
        return
    if args.probe:
        print(json.dumps(probe(args.probe, args.limit)))
        return
    rows = []
    for attr in args.attrs.split(","):
        done = subprocess.run(
            [sys.executable, __file__, "--probe", attr, "--limit", str(args.limit)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
        write(args.label, rows, args.limit)


if __name__ == "__main__":
    main()
