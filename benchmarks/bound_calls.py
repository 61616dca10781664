"""Bounding a step's boxes in one call or in calls of `refine.ROWS_PER_CALL` form elements.

Run `python benchmarks/bound_calls.py [--models AC-4,BM-2] [--seconds 8]`; writes
`benchmarks/results/bound_calls.md` and `.json`.

Each FairQuant network (header domain) is refined for the same time twice at once, one run per
core: with its step's boxes bounded in one call (`ROWS_PER_CALL` = `ROWS_PER_STEP`) and in calls of
`ROWS_PER_CALL` elements; then again with the cores swapped. The table gives the medians: bounding
speed (boxes bounded per second of bounding), refinement speed (boxes per second of the whole
refinement) and the certified share. The refinement bounds in calls only on networks with a layer
of `refine.WIDE` neurons or more: this table is where that threshold comes from.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fairquant  # noqa: E402  (the models, domains and protected attributes)

OUT = Path(__file__).resolve().parent / "results"


def run(name: str, whole_step: bool, seconds: float, core: int | None) -> dict:
    """One time-limited run (in a fresh process, pinned to `core`)."""
    from faircert.engines.network import refine
    from faircert.properties import individual_fairness

    if core is not None:
        os.sched_setaffinity(0, {core})
    if whole_step:
        refine.ROWS_PER_CALL = refine.ROWS_PER_STEP
    else:  # in calls whatever the widths, to measure both sides of the threshold
        refine.WIDE = 0
    net, dom, p = fairquant.load_case(name, "header")
    res = refine.verify_network(net, individual_fairness(dom, [p]), time_limit=seconds, seed=0)
    st = res.stats
    return dict(
        bound_speed=st["boxes_bounded"] / max(st["t_bound"], 1e-9),
        refine_speed=st["boxes_per_s"],
        certified=res.certified,
    )


def pair(name: str, seconds: float, swap: bool) -> tuple[dict, dict]:
    """The two runs of a model at once, one per core (in turn when there is one core)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return run(name, True, seconds, None), run(name, False, seconds, None)
    a, b = (cores[1], cores[0]) if swap else (cores[0], cores[1])
    with cf.ProcessPoolExecutor(max_workers=2, max_tasks_per_child=1) as ex:
        whole, calls = ex.submit(run, name, True, seconds, a), ex.submit(run, name, False, seconds, b)
        return whole.result(), calls.result()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="comma-separated subset, e.g. AC-4,BM-2")
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    if not fairquant.MODELS.is_dir():
        print(f"shared benchmark models not found at {fairquant.MODELS}", file=sys.stderr)
        return 3
    from faircert.engines.network import refine
    from faircert.engines.network.problem import Problem
    from faircert.properties import individual_fairness

    rows = []
    for name in args.models.split(",") if args.models else list(fairquant.FAIRQUANT):
        net, dom, p = fairquant.load_case(name, "header")
        pb = Problem.build(net, individual_fairness(dom, [p]))
        per_box = pb.n_twins * (pb.d + 1) * max(pb.bounder.widths)
        runs = [pair(name, args.seconds, swap) for swap in (False, True)]
        if not all(r[k]["bound_speed"] for r in runs for k in (0, 1)):
            print(f"{name:9s} decided without bounding a box (its domain is enumerated): left out", flush=True)
            continue
        row = dict(
            model=name,
            widest=max(pb.bounder.widths),
            step_boxes=int(np.clip(refine.ROWS_PER_STEP // per_box, 16, 1024)),
            call_boxes=int(np.clip(refine.ROWS_PER_CALL // per_box, 16, 1024)),
        )
        for k, kind in enumerate(("whole", "calls")):
            for m in ("bound_speed", "refine_speed", "certified"):
                row[f"{kind}_{m}"] = float(np.median([r[k][m] for r in runs]))
        rows.append(row)
        print(
            f"{name:9s} width {row['widest']:4d} bounding x{row['calls_bound_speed'] / row['whole_bound_speed']:.2f} "
            f"refinement x{row['calls_refine_speed'] / row['whole_refine_speed']:.2f}",
            flush=True,
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bound_calls.json").write_text(json.dumps(dict(seconds=args.seconds, rows=rows), indent=1) + "\n")
    (OUT / "bound_calls.md").write_text(markdown(rows, args.seconds))
    return 0


def markdown(rows: list[dict], seconds: float) -> str:
    from faircert.engines.network import refine

    out = [
        "# Bounding in one call per step, or in calls of fewer boxes",
        "",
        f"Each FairQuant network (header domain) refined for {seconds:g} s twice at once, one run per core: its "
        f"step's boxes bounded in one call, and in calls of {refine.ROWS_PER_CALL:,} form elements (twins x "
        "(inputs + 1) x widest layer per box); then with the cores swapped; medians of the two. Bounding: boxes "
        "bounded per second of bounding; refinement: boxes bounded per second of the whole refinement. "
        f"Python {platform.python_version()}, {os.cpu_count()} cores. The refinement uses calls on networks whose "
        f"widest layer has at least {refine.WIDE} neurons (marked *), in one call per step on the others. "
        "Networks whose domain is enumerated whole (COMPAS) bound no box and are left out.",
        "",
        "| model | widest layer | boxes per step / per call | bounding speed: one call / calls (x) "
        "| refinement speed: one call / calls (x) | certified %: one call / calls |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = " *" if r["widest"] >= refine.WIDE else ""
        out.append(
            f"| {r['model']}{mark} | {r['widest']} | {r['step_boxes']} / {min(r['call_boxes'], r['step_boxes'])} "
            f"| {r['whole_bound_speed']:.0f} / {r['calls_bound_speed']:.0f} "
            f"({r['calls_bound_speed'] / r['whole_bound_speed']:.2f}) "
            f"| {r['whole_refine_speed']:.0f} / {r['calls_refine_speed']:.0f} "
            f"({r['calls_refine_speed'] / r['whole_refine_speed']:.2f}) "
            f"| {100 * r['whole_certified']:.2f} / {100 * r['calls_certified']:.2f} |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
