"""The tree refinement with the tree-ensemble paper's own budget (600 s per configuration) on this
machine: which configurations of the RQ1/RQ2 grid reach gap 0, and why the others stop.

Same models and grid as benchmarks/trees.py (XGBoost 50 trees, depth 3, seed 0; RQ1 kappa 0.5 at
r_eps 0 and 0.1, RQ2 kappa 0.7 at r_eps 0.1; fairness per protected attribute and robustness).
COMPAS converges in well under a second in every configuration and is left out by default.
A run ends converged, at the time limit, or at the refinement's memory limit
(the default `--memory-limit` of stored boxes). Writes
benchmarks/results/trees_budget.{md,json}, one row per configuration as it finishes.

    python benchmarks/trees_budget.py [--limit 600] [--datasets adult,bank,german] [--rates 0,0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees import run, train  # noqa: E402
from trees_data import DATASETS  # noqa: E402

from faircert.memory import default_limit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def grid(name: str) -> list[tuple[str, str | None, float, float]]:
    attrs = DATASETS[name][1]
    rows = [("RQ1", a, 0.0, 0.5) for a in attrs] + [("RQ1", a, 0.1, 0.5) for a in attrs + [None]]
    return rows + [("RQ2", a, 0.1, 0.7) for a in attrs + [None]]


def write(rows: list[dict], args) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "trees_budget.json").write_text(
        json.dumps(
            dict(
                limit_s=args.limit,
                max_stored_bytes=default_limit(),
                machine=platform.machine(),
                cores=os.cpu_count(),
                rows=rows,
            ),
            indent=1,
        )
        + "\n"
    )
    done = sum(r["converged"] for r in rows)
    out = [
        "# Tree refinement with a 600 s budget",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} "
        f"({os.cpu_count()} cores, shared with other jobs), time limit {args.limit:g} s per configuration, "
        f"memory limit {default_limit() / 1e9:.1f} GB of stored boxes. Gap = upper - lower bound on the fairness "
        "measure; "
        "stopped = why the run ended.",
        "",
        f"**Converged: {done} of {len(rows)}** configurations measured (the target is 8 of the 24 unconverged "
        "at 10 s, Adult at r_eps 0 on all three attributes among them).",
        "",
        "| grid | dataset | attribute | r_eps | kappa | converged | gap | lower | upper | stopped | time s | boxes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        stop = "converged" if r["converged"] else ("memory limit" if r["memory_limited"] else "time limit")
        out.append(
            f"| {r['grid']} | {r['dataset']} | {r['attr'] or 'robustness'} | {r['rate']:g} | {r['kappa']:g} | "
            f"{'yes' if r['converged'] else 'no'} | {_gap(r['gap'])} | {r['measure_lower']:.4f} | "
            f"{r['measure_upper']:.4f} | {stop} | {r['time_s']:.1f} | {r['boxes']:,} |"
        )
    (RESULTS / "trees_budget.md").write_text("\n".join(out) + "\n")


def _gap(gap: float) -> str:
    return f"{gap:.4f}" if gap == 0 or gap >= 1e-3 else f"{gap:.1e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=float, default=600.0)
    ap.add_argument("--datasets", default="adult,bank,german")
    ap.add_argument("--rates", default="0,0.1", help="r_eps values of the grid to run")
    ap.add_argument("--report-only", action="store_true", help="rewrite the markdown from the saved JSON")
    args = ap.parse_args()
    if args.report_only:
        saved = json.loads((RESULTS / "trees_budget.json").read_text())
        args.limit = saved["limit_s"]
        write(saved["rows"], args)
        return
    rows = []
    for name in args.datasets.split(","):
        ir, dom, _ = train(name)
        rates = [float(r) for r in args.rates.split(",")]
        for grid_name, attr, rate, kappa in grid(name):
            if rate not in rates:
                continue
            r = run(ir, dom, attr, rate, kappa, args.limit)
            r.update(grid=grid_name, dataset=name, attr=attr, rate=rate, kappa=kappa)
            r.pop("estimate", None)
            rows.append(r)
            print(json.dumps(r), flush=True)
            write(rows, args)


if __name__ == "__main__":
    main()
