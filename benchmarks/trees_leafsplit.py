"""Node cuts against leaf-tuple splits in the epsilon-0 tree refinement, on the scaling models.

The joint refinement (`faircert.engines.trees.joint`) cuts an open box at one node of the widest
tree of its widest open slice ("node", two pieces), or along every leaf of that tree, once per group
of protected values the tree tells apart ("leaves", `leafsplit`). Both settle the pieces the same
way. On the scaling models of benchmarks/trees.py (XGBoost depth 3, seed 0, first protected
attribute of each dataset: age), epsilon 0, kappa 0.5, each strategy runs once with the same time
limit; recorded are the boxes examined (bounded), the boxes cut, the boxes settled, the seconds,
and, where the bounds have not met, the gap and whether the box memory limit stopped the run.
Writes benchmarks/results/trees_leafsplit.{md,json}.

    python benchmarks/trees_leafsplit.py [--limit S] [--models adult:20,bank:20,...] [--splits node,leaves]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees import NAMES, train
from trees_data import DATASETS

from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.memory import default_limit
from faircert.properties import individual_fairness

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = [("german", 10), ("adult", 20), ("bank", 20), ("adult", 25), ("german", 20), ("adult", 30), ("adult", 35)]


def run(ir, dom, attr: str, split: str, limit: float) -> dict:
    prop = individual_fairness(dom, attr, epsilon_rate=0.0, kappa=0.5)
    t0 = time.perf_counter()
    q = quantify(ir, prop, time_limit=limit, options=TreeOptions(split=split))
    wall = time.perf_counter() - t0
    lo, hi = q.bounds
    s = q.stats
    return {
        "split": split,
        "converged": bool(q.complete and hi - lo <= 1e-12),
        "gap": hi - lo,
        "measure_lower": lo,
        "measure_upper": hi,
        "time_s": q.elapsed,
        "wall_s": wall,
        "examined": s["examined"],
        "settled_boxes": s["boxes"],
        "cut": s["examined"] - s["boxes"],
        "unfair_pieces": s["pieces"],
        "open_boxes": sum(len(p[0]) for p in q.open_parts),
        "memory_limited": s["memory_limited"],
    }


def markdown(out: dict) -> str:
    lines = [
        "# Epsilon-0 tree refinement: node cuts against leaf-tuple splits",
        "",
        f"Measured on this machine ({out['machine']}, 2 shared cores, one process) by "
        "`benchmarks/trees_leafsplit.py`: the scaling models of `benchmarks/trees.py` (XGBoost depth 3, "
        f"seed 0, integer encodings, data ranges as domains), fairness for age, epsilon 0, kappa 0.5, time "
        f"limit {out['limit_s']:g} s per run, memory limit {out['max_stored_bytes'] / 1e9:.1f} GB of stored open "
        "and unfair boxes.",
        "",
        "'node': an open box is cut at the first cutting node of the widest tree of its widest open slice "
        "(two pieces). 'leaves': the box is split along every leaf of that same tree, once per group of "
        "protected values the tree tells apart, keeping the non-empty pieces. 'examined': boxes bounded; "
        "'cut': examined boxes left open and split; 'pieces/cut': boxes produced per cut; 'settled': boxes "
        "settled; 'unfair pieces': the unfair boxes kept (they count towards the memory limit); "
        "'stopped by': why an unconverged run ended.",
        "",
        "| model | trees | split | converged | gap | time (s) | examined | cut | pieces/cut | settled | "
        "unfair pieces | open at end | stopped by |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out["runs"]:
        produced = r["examined"] - 1 + r["open_boxes"]  # every box but the domain came from a cut
        per_cut = produced / r["cut"] if r["cut"] else 0.0
        stop = "-" if r["converged"] else ("memory limit" if r["memory_limited"] else "time limit")
        lines.append(
            f"| {NAMES[r['dataset']]} | {r['trees']} | {r['split']} | {'yes' if r['converged'] else 'no'} | "
            f"{r['gap']:.2g} | {r['time_s']:.2f} | {r['examined']:,} | {r['cut']:,} | {per_cut:.2f} | "
            f"{r['settled_boxes']:,} | {r['unfair_pieces']:,} | {r['open_boxes']:,} | {stop} |"
        )
    lines += [
        "",
        *summary(out["runs"]),
        "",
        "**Reading.** The converged measures are the same (and both equal brute force in the tests). Leaf "
        "splits cut fewer boxes but produce more pieces per cut (about 2.4 of a depth-3 tree's up to 8 per "
        "protected group: most boxes reach only a few leaves of the tree chosen), and the extra pieces are "
        "often ones the bounds would have settled without the deeper cuts, so about as many boxes are "
        "examined in total, with more settled boxes and unfair pieces kept, and they take longer: German 20 "
        "converges in 91.8 s with node cuts against 101.9 s, Adult 35 in 52.6 s against 64.6 s, and Adult 40 "
        'ends the 120 s 0.0040 apart against 0.0048. The node cut stays the default; `split="leaves"` is the '
        "option. Choosing the tree by its "
        "width summed over all slices instead of in the widest open slice was tried once (with leaf splits) "
        "and examined more boxes on Adult 20 (58,545 against 50,794) and Bank 20 (281,572 against 232,929), "
        "about as many on German 10 (25,695 against 26,281). The twin search of the literature's enumerators (a "
        "spatial index "
        "over the leaf tuples of other protected values) has no counterpart here: at epsilon 0 a box's twins "
        "are the same box under the other protected values, bounded together with it.",
    ]
    return "\n".join(lines) + "\n"


def summary(runs: list[dict]) -> list[str]:
    """Both strategies side by side, per model."""
    by = {}
    for r in runs:
        by.setdefault((r["dataset"], r["trees"]), {})[r["split"]] = r
    pairs = [(k, v["node"], v["leaves"]) for k, v in by.items() if "node" in v and "leaves" in v]
    if not pairs:
        return []
    out = [
        "| model | trees | examined leaves/node | time leaves/node | measure equal | gap node | gap leaves |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, trees), n, lv in pairs:
        same = (
            n["measure_lower"] == lv["measure_lower"] and n["measure_upper"] == lv["measure_upper"]
            if n["converged"] and lv["converged"]
            else "-"
        )
        same = {True: "yes", False: "NO"}.get(same, same)
        out.append(
            f"| {NAMES[name]} | {trees} | {lv['examined'] / n['examined']:.2f} | "
            f"{lv['time_s'] / n['time_s']:.2f} | {same} | {n['gap']:.2g} | {lv['gap']:.2g} |"
        )
    both = [(n, lv) for _, n, lv in pairs if n["converged"] and lv["converged"]]
    if both:
        ex = sum(lv["examined"] for _, lv in both) / sum(n["examined"] for n, _ in both)
        ts = sum(lv["time_s"] for _, lv in both) / sum(n["time_s"] for n, _ in both)
        out += [
            "",
            f"Where both converged ({len(both)} models), the leaf splits examined {ex:.2f} times the "
            f"boxes of the node cuts in {ts:.2f} times their total time.",
        ]
    return ["Leaf splits against node cuts (ratios; 'measure equal': the converged measures are the same):", "", *out]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=120.0)
    ap.add_argument("--models", default=",".join(f"{n}:{t}" for n, t in MODELS))
    ap.add_argument("--splits", default="node,leaves")
    ap.add_argument("--markdown-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    if args.markdown_only:
        out = json.loads((RESULTS / "trees_leafsplit.json").read_text())
        (RESULTS / "trees_leafsplit.md").write_text(markdown(out))
        return
    out = {"machine": platform.machine(), "limit_s": args.limit, "max_stored_bytes": default_limit(), "runs": []}
    for spec in args.models.split(","):
        name, trees = spec.split(":")
        ir, dom, _ = train(name, int(trees))
        attr = DATASETS[name][1][0]
        for split in args.splits.split(","):
            r = run(ir, dom, attr, split, args.limit)
            r.update(dataset=name, trees=int(trees), attr=attr)
            out["runs"].append(r)
            print(
                name,
                trees,
                split,
                {k: r[k] for k in ("converged", "gap", "time_s", "examined", "cut", "memory_limited")},
                flush=True,
            )
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / "trees_leafsplit.json").write_text(json.dumps(out, indent=2, default=float) + "\n")
            (RESULTS / "trees_leafsplit.md").write_text(markdown(out))


if __name__ == "__main__":
    main()
