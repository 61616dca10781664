"""What the canonical order of the open boxes costs (`engines/trees/open.py`, `canonical_order`):
draws from the undecided part of a tree ensemble number its boxes by their bounds, so that a run
resumed from a checkpoint draws the counterexamples of the uninterrupted run.

Run `python benchmarks/trees_open_order.py [--limits 20,60]`; writes
`benchmarks/results/trees_open_order.md` and `.json`.

The Adult 150-tree XGBoost ensemble (`trees.py`), sex protected, epsilon 0 and epsilon 2 on age, one
worker: each run stops at its time limit with hundreds of thousands of open boxes. Reported: the
open boxes and their parts, the seconds of the order alone, of indexing the open boxes with it
(`OpenBoxes`, built once for the counterexamples and once for the estimate) and without it, and of
a step of 16,384 draws with and without it (the draws gather the boxes part by part), the least of
three tries each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from faircert.engines.trees import open as opened  # noqa: E402
from faircert.engines.trees.quantify import quantify  # noqa: E402
from faircert.engines.trees.run import TreeOptions  # noqa: E402
from faircert.properties import individual_fairness  # noqa: E402

OUT = HERE / "results"


def least(f, tries: int = 3) -> float:
    best = np.inf
    for _ in range(tries):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def measure(q) -> dict:
    """Seconds of the canonical order, of `OpenBoxes` and of one step of draws, with and without it."""
    boxes = opened.OpenBoxes(q)
    n_sl = len(q.slices)
    slices = [np.ones((len(lo), n_sl), dtype=bool) if o is None else o for lo, _, o in boxes.parts]
    every = all(o is None for _, _, o in boxes.parts)
    order_s = least(lambda: opened.canonical_order(boxes.parts, None if every else np.concatenate(slices)))
    index_s = least(lambda: opened.OpenBoxes(q))
    draw_s = least(lambda: boxes.draw(np.random.default_rng(0), opened.EVAL_CHUNK))
    keep = opened.canonical_order
    opened.canonical_order = lambda parts, _: np.arange(sum(len(p[0]) for p in parts))  # the parts' order
    try:
        plain = opened.OpenBoxes(q)
        index_plain_s = least(lambda: opened.OpenBoxes(q))
        draw_plain_s = least(lambda: plain.draw(np.random.default_rng(0), opened.EVAL_CHUNK))
    finally:
        opened.canonical_order = keep
    return dict(
        order_s=order_s,
        index_s=index_s,
        index_plain_s=index_plain_s,
        draw_s=draw_s,
        draw_plain_s=draw_plain_s,
    )


def main() -> None:
    from trees import train

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", default="20,60", help="time limits of the runs (s), comma-separated")
    limits = [float(v) for v in parser.parse_args().limits.split(",")]

    ir, dom, _ = train("adult", 150)
    rows = []
    for epsilon in ({}, {"age": 2}):
        for limit in limits:
            prop = individual_fairness(dom, "sex", epsilon=epsilon)
            load = os.getloadavg()[0]
            q = quantify(ir, prop, limit, options=TreeOptions())
            row = dict(
                epsilon=epsilon,
                time_limit_s=limit,
                quantify_s=q.elapsed,
                open_boxes=sum(len(p[0]) for p in q.open_parts or []),
                parts=len(q.open_parts or []),
                load=load,
                **measure(q),
            )
            rows.append(row)
            print(row, flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "trees_open_order.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        __doc__.splitlines()[0],
        "",
        "| epsilon | run (s) | open boxes | parts | order (s) | index with / without (s) | 16,384 draws with / "
        "without (s) | order / run | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eps = ", ".join(f"{k} {v}" for k, v in r["epsilon"].items()) or "0"
        lines.append(
            f"| {eps} | {r['quantify_s']:.1f} | {r['open_boxes']:,} | {r['parts']} | {r['order_s']:.3f} | "
            f"{r['index_s']:.3f} / {r['index_plain_s']:.3f} | {r['draw_s']:.4f} / {r['draw_plain_s']:.4f} | "
            f"{r['order_s'] / r['quantify_s']:.2%} | {r['load']:.1f} |"
        )
    lines += ["", "One worker; 2 cores shared with other jobs (the load is the 1-minute load average)."]
    (OUT / "trees_open_order.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
