"""The complete tree check at scale: is there any counterexample in a 500-tree, depth-8 ensemble?

XGBoost with 500 trees of depth 8 (seed 0) on the integer encoding of Adult (benchmarks/trees.py's
data; the domain is the data's ranges), as in the existence checks of Varshney et al. (ICLR 2026)
on ensembles of that size. For each protected attribute: fairness at r_eps 0 and 0.1 (kappa 0.5),
robustness at r_eps 0.1, and a model trained blind to the attribute (its column held constant),
which is fair at r_eps 0 by construction, then asked at r_eps 0.1 too. Each question gets 60 s.
The last rows ask the blind models at r_eps 0 with the structural proof and the random draws turned
off: what the mixed-integer program alone does at this size (solved in a child process stopped at
the limit).
A verdict names its evidence: a pair found by random draws or by the program (both re-checked on
the model), a proof from the ensemble's structure (no tree reads the attribute, epsilon 0) or
from the program, or unknown at the time limit. Writes benchmarks/results/trees_existence.{md,json}.

    python benchmarks/trees_existence.py [--limit 60] [--trees 500] [--depth 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from trees import train  # noqa: E402
from trees_complete import program_only as asking_program_only  # noqa: E402
from trees_data import DATASETS  # noqa: E402

from faircert.engines.trees.complete import decide_trees  # noqa: E402
from faircert.models.io import load_model  # noqa: E402
from faircert.properties import individual_fairness  # noqa: E402

RESULTS = HERE / "results"


def blind(n_trees: int, depth: int, attr: str):
    import xgboost as xgb

    X, y, dom = DATASETS["adult"][0]()
    X = X.copy()
    X[:, dom.names.index(attr)] = dom.features[dom.names.index(attr)].min
    clf = xgb.XGBClassifier(n_estimators=n_trees, max_depth=depth, random_state=0, n_jobs=1).fit(X, y)
    return load_model(clf), dom


def how(d) -> str:
    if d.verdict == "unfair":
        return "pair from random draws" if d.stats.get("solves", 0) == 0 else "pair from the program"
    if d.verdict == "fair":
        return "structure" if "proof" in d.stats else "program"
    return d.reason


def run(ir, dom, model: str, attr: str | None, rate: float, limit: float, program_only: bool = False) -> dict:
    prop = individual_fairness(dom, attr, epsilon_rate=rate, kappa=0.5, robustness=attr is None)
    with asking_program_only(program_only):
        t0 = time.perf_counter()
        d = decide_trees(ir, prop, time_limit=limit)
        wall = time.perf_counter() - t0
    row = {
        "model": model + (" (program only)" if program_only else ""),
        "attr": attr,
        "rate": rate,
        "verdict": d.verdict,
        "wall_s": wall,
        "how": how(d),
        "pairs_drawn": d.stats.get("pairs_drawn", 0),
        "variables": d.stats.get("variables"),
        "x": d.x,
        "x_prime": d.x_prime,
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--depth", type=int, default=8)
    args = ap.parse_args()
    t0 = time.perf_counter()
    ir, dom, accuracy = train("adult", n_trees=args.trees, depth=args.depth)
    train_s = time.perf_counter() - t0
    name = f"XGBoost {args.trees}x{args.depth}"
    rows = []
    for attr in DATASETS["adult"][1]:
        for rate in (0.0, 0.1):
            rows.append(run(ir, dom, name, attr, rate, args.limit))
    rows.append(run(ir, dom, name, None, 0.1, args.limit))
    blinds = {attr: blind(args.trees, args.depth, attr) for attr in DATASETS["adult"][1]}
    for attr, (b, bdom) in blinds.items():
        for rate in (0.0, 0.1):
            rows.append(run(b, bdom, f"{name}, blind to {attr}", attr, rate, args.limit))
    for attr, (b, bdom) in blinds.items():
        rows.append(run(b, bdom, f"{name}, blind to {attr}", attr, 0.0, args.limit, program_only=True))
    meta = {
        "limit_s": args.limit,
        "trees": args.trees,
        "depth": args.depth,
        "leaves": int(sum(t.is_leaf.sum() for t in ir.trees)),
        "accuracy": accuracy,
        "train_s": train_s,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "trees_existence.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (RESULTS / "trees_existence.md").write_text(markdown(meta, rows))


def markdown(meta: dict, rows: list[dict]) -> str:
    decided = [r for r in rows if r["verdict"] != "unknown"]
    within = [r for r in decided if r["wall_s"] <= meta["limit_s"]]
    over = max(r["wall_s"] for r in rows)
    lines = [
        f"# Tree ensembles: the existence check on XGBoost {meta['trees']}x{meta['depth']} (Adult)",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"{meta['leaves']:,} leaves; training accuracy {meta['accuracy']:.3f}; limit {meta['limit_s']:g} s per "
        f"question; {meta['cpus']} cores, {meta['date']}.",
        "",
        f"**{len(decided)}/{len(rows)} questions decided, {len(within)} within {meta['limit_s']:g} s "
        f"(target: a verdict within 60 s where a counterexample exists or a proof is within reach); the "
        f"longest question took {over:.1f} s.**",
        "",
        "| model | attribute | r_eps | verdict | evidence | wall s | pairs drawn | program variables |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['attr'] or '- (robustness)'} | {r['rate']:g} | {r['verdict']} | "
            f"{r['how']} | {r['wall_s']:.2f} | {r['pairs_drawn']:,} | "
            f"{'-' if r['variables'] is None else format(r['variables'], ',')} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
