"""The limit of exactness, measured: leaf-tuple cells of the epsilon-0 fairness problems of benchmarks/trees.py.

For each benchmark model (XGBoost 50 trees depth 3, seed 0, `trees.train`) and protected attribute
of the paper grid, counts the cells after 1, 2, ..., 50 trees (`benchmarks/cells.py`): the
grid of the non-protected features split until the leaf of every tree under every protected value is
constant on each piece. The count is the number of distinct leaf tuples on the grid (each tuple's set
is one box). A run stops after the first prefix above `--cap` cells or after `--time` seconds; 40 and
50 trees are then projected from a straight-line fit of log(count) over the last measured prefixes,
and bounded by the last measured count below (a refinement only splits) and by the cells of every
split threshold on the non-protected features above. The Adult, Bank and German models of the
scaling table (10 to 40 trees) are the first trees of the 50-tree ones (checked: XGBoost trains them
tree by tree), so their counts are prefixes of the same run; the engine's own epsilon-0 figures for
them come from benchmarks/results/trees.json.

Independent check: for the last prefix with at most `--check` cells, the leaves of each cell's lowest
corner and of one random grid point inside it, under every protected value, are found by traversing
the model; the corners' leaf tuples must all differ and each random point's must equal its corner's.

    python benchmarks/trees_cells.py [--datasets adult,bank,compas,german] [--attrs age,...] [--cap N] [--time S]

Results are merged into benchmarks/results/trees_cells.{json,md} (a run per dataset is fine).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cells import count_cells, leaf_tuple_ids, sample_deeper
from trees import ATTR, NAMES, train
from trees_data import DATA, DATASETS

from faircert.engines.boxes.frontier import MAX_STORED_BOXES
from faircert.engines.trees.boxes import normalise

RESULTS = Path(__file__).resolve().parent / "results"
SCALING = {"adult": (10, 20, 25, 30, 35, 40), "bank": (10, 20), "german": (10, 20)}
FIT = 8  # prefixes in the projection's fit


def arrangement(ir, dom, attr: str, trees: int) -> float:
    """Cells of the grid of the non-protected features cut at every split threshold of the first
    `trees` trees: an upper bound on the leaf-tuple cells."""
    nt = normalise(ir.sub_ensemble(np.arange(trees)), dom)
    p = dom.names.index(attr)
    inner = nt.node_left >= 0
    out = 1.0
    for i in range(len(dom.names)):
        if i != p:
            b = np.unique(nt.node_bound[inner & (nt.node_feat == i)])
            out *= 1 + int(np.sum((b > nt.dlo[i]) & (b < nt.dhi[i])))
    return out


def projection(counts: list[int], trees: int, upper: float) -> dict:
    """log(count) = a + b * t fitted (least squares) over the last FIT measured prefixes, evaluated at
    `trees` ('fit') and kept within the proven bounds [last measured count, upper] ('value')."""
    t = np.arange(1, len(counts) + 1)[-FIT:]
    b, a = np.polyfit(t, np.log(np.asarray(counts[-FIT:], dtype=float)), 1)
    fit = float(np.exp(a + b * trees))
    return {
        "value": min(max(fit, float(counts[-1])), upper),
        "fit": fit,
        "lower": float(counts[-1]),
        "upper": upper,
        "per_tree": float(np.exp(b)),
        "fit_trees": [int(t[0]), int(t[-1])],
    }


def check(ir, dom, attr: str, limit: int) -> dict:
    """The independent check of the module docstring, on the last prefix with at most `limit` cells."""
    res = count_cells(ir, dom, attr, cap=limit)
    lo, hi, trees = res.lo.astype(np.int64), res.hi.astype(np.int64), res.kept_trees
    rng = np.random.default_rng(0)
    inner = lo + np.floor(rng.random(lo.shape) * (hi - lo)).astype(np.int64)
    t0 = time.perf_counter()
    ids = leaf_tuple_ids(ir, dom, attr, np.concatenate([lo, inner]), trees)
    corner, random = ids[: len(lo)], ids[len(lo) :]
    return {
        "trees": trees,
        "cells": len(lo),
        "distinct_tuples": int(len(np.unique(corner))),
        "inner_points_agree": bool(np.array_equal(corner, random)),
        "seconds": time.perf_counter() - t0,
    }


def measure(name: str, attr: str, cap: int, limit: float, check_cells: int, sample_s: float) -> dict:
    ir, dom, _ = train(name)
    t0 = time.perf_counter()
    res = count_cells(ir, dom, attr, cap=cap, time_limit=limit)
    out = {
        "dataset": name,
        "attr": attr,
        "counts": res.counts,
        "seconds": res.seconds,
        "stopped": res.stopped,
        "wall_s": time.perf_counter() - t0,
        "cap": cap,
        "time_limit_s": limit,
        "grid_points": float(np.prod([f.max - f.min + 1 for i, f in enumerate(dom.features) if dom.names[i] != attr])),
        "arrangement": {str(t): arrangement(ir, dom, attr, t) for t in (10, 20, 25, 30, 35, 40, 50)},
    }
    if len(res.counts) < 50:
        out["projection"] = {
            str(t): projection(res.counts, t, out["arrangement"][str(t)])
            for t in (10, 20, 25, 30, 35, 40, 50)
            if t > len(res.counts)
        }
    if res.stopped:
        out["sampled"] = sample_deeper(ir, dom, attr, res, time_limit=sample_s)
    del res
    out["check"] = check(ir, dom, attr, check_cells)
    if name in SCALING:
        same = []
        for n in SCALING[name]:
            small, _, _ = train(name, n_trees=n)
            same.append(
                all(
                    np.array_equal(getattr(a, k), getattr(b, k))
                    for a, b in zip(small.trees, ir.trees)
                    for k in ("feature", "threshold", "left", "right", "value")
                )
            )
        out["scaling_models_are_prefixes"] = all(same)
    return out


def cells_at(r: dict, trees: int) -> tuple[float, bool]:
    """(count, measured?) after `trees` trees."""
    if trees <= len(r["counts"]):
        return float(r["counts"][trees - 1]), True
    return r["projection"][str(trees)]["value"], False


def sampled_at(r: dict, trees: int) -> str:
    """The sampled estimate after `trees` trees with its 99% interval (normal, 2.576 standard errors)."""
    s = r.get("sampled")
    if s is None or trees not in s["trees"]:
        return "-"
    k = s["trees"].index(trees)
    est, se = s["estimate"][k], s["stderr"][k]
    return (
        f"{fmt(est)} [{fmt(max(est - 2.576 * se, r['counts'][-1] if trees >= len(r['counts']) else 0))}, "
        f"{fmt(est + 2.576 * se)}]"
    )


def reachable(r: dict, trees: int, limit: int) -> str:
    """Whether the cells after `trees` trees fit under the box limit: measured, proven by a bound, or by
    the sampled estimate (or the projection where none was drawn)."""
    if trees <= len(r["counts"]):
        return "yes" if r["counts"][trees - 1] <= limit else "no"
    if r["counts"][-1] > limit:
        return "no (lower bound)"
    if r["arrangement"][str(trees)] <= limit:
        return "yes (upper bound)"
    s = r.get("sampled")
    est = s["estimate"][s["trees"].index(trees)] if s and trees in s["trees"] else r["projection"][str(trees)]["value"]
    return ("yes" if est <= limit else "no") + (" (sampled)" if s else " (projected)")


def fmt(x: float) -> str:
    return f"{x:,.0f}" if x < 1e7 else f"{x:.2e}"


def markdown(out: dict) -> str:
    engine = {(s["dataset"], s["model"]): s for s in out.get("engine_scaling", [])}
    lines = [
        "# The limit of exactness: leaf-tuple cells of the epsilon-0 fairness problems",
        "",
        f"Measured on this machine ({out['machine']}, 2 shared cores, one process) by `benchmarks/trees_cells.py`, "
        "on the models of `benchmarks/trees.py` (XGBoost 50 trees depth 3, seed 0, integer encodings, data "
        "ranges as domains).",
        "",
        "**What is counted.** For a protected attribute with values V, a grid point y of the other features "
        "reaches one leaf in each tree under each v in V; its *leaf tuple* after T trees lists those T x |V| "
        "leaves. The *cells* are the sets of grid points sharing a leaf tuple. Each cell is a box (an "
        "intersection of path boxes), so splitting the domain box tree by tree along every tree's paths, "
        "once per protected value the tree can tell apart, and dropping pieces that hold no grid point, "
        "gives exactly one box per leaf tuple: **the box count of this refinement equals the number of "
        "distinct leaf tuples** (it is not only an upper bound; the tests check it against brute force over "
        "every grid point, and the 'check' column below checks it on these models). It is what a refinement "
        "that splits until every box lies in one leaf of every tree under every protected value ends up "
        "holding. The engine (`faircert.engines.trees`) stops splitting a box as soon as its bounds settle "
        "it, so it can converge with far fewer boxes (see the scaling comparison).",
        "",
        f"**Caps.** A run stops after the first prefix above {out['cap']:,} cells (that prefix is still counted "
        f"exactly) or after {out['time_limit_s']:g} s. Past the last measured prefix, 40 and 50 trees are "
        f"**projections**: a least-squares line through log(count) over the last {FIT} measured prefixes "
        "('growth/tree' is its factor per tree), kept within proven bounds: the last measured count below "
        "(refining only splits cells) and, above, the cells of the grid cut at every split threshold of the "
        "non-protected features ('arrangement').",
        "",
        "**Sampled estimates.** Past the cap, cells of the last kept prefix are drawn uniformly (without "
        f"replacement, for {out.get('sample_s', 0):g} s per configuration) and each is followed exactly to tree 50; "
        "(kept cells) x (mean descendants of a drawn cell) estimates the count at each later prefix without bias. "
        "Shown with a 99% normal interval (2.576 standard errors, its lower end raised to the last measured "
        "count). A statistical estimate from measured descendants, not a bound; the table under it compares "
        "it with the exact count at the one prefix where both exist.",
        "",
        f"**Reachable?** 'yes' when the cells fit under the refinement's memory limit of "
        f"{out['max_stored_boxes']:,} boxes (`engines/boxes/frontier.py`): a refinement down to single "
        "leaves fits in principle; 'no' when they do not, so exactness needs the bounds to settle boxes "
        "early (or the limit raised).",
        "",
        "## 50 trees, every protected attribute of the paper grid",
        "",
        "| model | attr. | values | trees measured | cells at 50 trees | growth/tree (fit) | projection 40 trees | "
        "sampled 40 trees [99%] | sampled 50 trees [99%] | arrangement (50 trees) | first prefix over 5M | "
        "seconds | check | reachable? |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out["runs"]:
        c50, exact50 = cells_at(r, 50)
        proj = r.get("projection", {})
        growth = (
            f"{proj['50']['per_tree']:.3f} (trees {proj['50']['fit_trees'][0]}-{proj['50']['fit_trees'][1]})"
            if "50" in proj
            else "-"
        )
        c40, exact40 = cells_at(r, 40)
        over = next((i + 1 for i, c in enumerate(r["counts"]) if c > out["max_stored_boxes"]), None)
        ch = r["check"]
        chk = (
            f"{ch['trees']} trees: {ch['distinct_tuples']:,} tuples = {ch['cells']:,} cells"
            if ch["distinct_tuples"] == ch["cells"]
            else f"{ch['trees']} trees: MISMATCH"
        )
        if not ch["inner_points_agree"]:
            chk += ", inner points DISAGREE"
        cells = fmt(c50) if exact50 else f"projected {fmt(c50)} (measured >= {fmt(r['counts'][-1])})"
        lines.append(
            f"| {NAMES[r['dataset']]} | {ATTR.get(r['attr'], r['attr'])} | {r['values']} | "
            f"{len(r['counts'])} | {cells} | {growth} | {fmt(c40) + ('' if exact40 else ' (projected)')} | "
            f"{sampled_at(r, 40)} | {sampled_at(r, 50)} | "
            f"{fmt(r['arrangement']['50'])} | {over or '-'} | {r['wall_s']:.1f} | {chk} | "
            f"{reachable(r, 50, out['max_stored_boxes'])} |"
        )
    lines += [
        "",
        "'values': protected values (the refinement splits once per group of them a tree separates). "
        "'check': the independent check on the last prefix with at most "
        f"{out['check_cells']:,} cells: the leaf tuples of the cells' lowest corners, found by traversing the "
        "model, are all distinct, and a random grid point of each cell has its corner's tuple.",
        "",
    ]
    lines += [
        "Sampled estimate against the exact count, at the first prefix past the cap (counted exactly, not kept):",
        "",
        "| model | attr. | trees | exact | sampled [99%] | drawn cells | of | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out["runs"]:
        s = r.get("sampled")
        if s and r["stopped"] == "cap":
            t = len(r["counts"])
            k = s["trees"].index(t)
            est, se = s["estimate"][k], s["stderr"][k]
            lines.append(
                f"| {NAMES[r['dataset']]} | {ATTR.get(r['attr'], r['attr'])} | {t} | {fmt(r['counts'][-1])} | "
                f"{fmt(est)} [{fmt(est - 2.576 * se)}, {fmt(est + 2.576 * se)}] | {s['sampled']:,} | "
                f"{s['of']:,} | {s['seconds']:.0f} |"
            )
    lines += [
        "",
        "## Prefix counts",
        "",
        "Cells after t trees (measured).",
        "",
        "| model | attr. | " + " | ".join(str(t) for t in (5, 10, 15, 20, 25, 30, 35, 40, 45, 50)) + " |",
        "|---|---|" + "---|" * 10,
    ]
    for r in out["runs"]:
        cells = [
            fmt(r["counts"][t - 1]) if t <= len(r["counts"]) else "" for t in (5, 10, 15, 20, 25, 30, 35, 40, 45, 50)
        ]
        lines.append(f"| {NAMES[r['dataset']]} | {ATTR.get(r['attr'], r['attr'])} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Against the engine's scaling runs (epsilon 0, kappa 0.5, attribute age, 30 s)",
        "",
        "The scaling models with fewer trees are the first trees of the 50-tree models ("
        + ", ".join(
            f"{NAMES[r['dataset']]}: "
            f"{'checked, identical' if r.get('scaling_models_are_prefixes') else 'NOT identical'}"
            for r in out["runs"]
            if "scaling_models_are_prefixes" in r and r["attr"] == "age"
        )
        + "), so their cells are prefix counts. Engine columns from `benchmarks/results/trees.json` "
        "('boxes': settled boxes; 'memory cap': stopped at the box limit).",
        "",
        "| model | trees | cells | sampled [99%] | reachable? | engine converged | engine boxes | engine stopped by |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out["runs"]:
        if r["attr"] != "age" or r["dataset"] not in SCALING:
            continue
        for n in SCALING[r["dataset"]]:
            c, exact = cells_at(r, n)
            e = engine.get((r["dataset"], f"XGBoost {n}x3"))
            stop = (
                "-" if e is None else ("memory cap" if e["memory_limited"] else "-" if e["converged"] else "time limit")
            )
            lines.append(
                f"| {NAMES[r['dataset']]} | {n} | {fmt(c)}{'' if exact else ' (projected)'} | {sampled_at(r, n)} | "
                f"{reachable(r, n, out['max_stored_boxes'])} | "
                f"{'-' if e is None else 'yes' if e['converged'] else 'no'} | "
                f"{'-' if e is None else format(e['boxes'], ',')} | {stop} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="adult,bank,compas,german")
    ap.add_argument("--cap", type=int, default=20_000_000, help="stop after the first prefix above this many cells")
    ap.add_argument("--time", type=float, default=240.0, help="stop after this many seconds (at the end of a prefix)")
    ap.add_argument("--sample", type=float, default=90.0, help="seconds of the sampled estimate past the cap")
    ap.add_argument("--check", type=int, default=500_000, help="cells of the independent check (at most)")
    ap.add_argument("--attrs", help="only these protected attributes (default: the paper grid's)")
    ap.add_argument("--report", action="store_true", help="only write the markdown from the JSON")
    args = ap.parse_args()
    path = RESULTS / "trees_cells.json"
    if args.report:
        (RESULTS / "trees_cells.md").write_text(markdown(json.loads(path.read_text())))
        return
    if not DATA.is_dir():
        sys.exit(f"shared benchmark data not found at {DATA}")
    out = json.loads(path.read_text()) if path.exists() else {"runs": []}
    out.update(
        machine=platform.processor() or platform.machine(),
        cap=args.cap,
        time_limit_s=args.time,
        check_cells=args.check,
        sample_s=args.sample,
        max_stored_boxes=MAX_STORED_BOXES,
    )
    attrs = None if args.attrs is None else set(args.attrs.split(","))
    for name in [n for n in args.datasets.split(",") if n]:
        for attr in DATASETS[name][1]:
            if attrs is not None and attr not in attrs:
                continue
            r = measure(name, attr, args.cap, args.time, args.check, args.sample)
            dom = DATASETS[name][0]()[2]
            f = dom.features[dom.names.index(attr)]
            r["values"] = int(f.max - f.min + 1)
            out["runs"] = [x for x in out["runs"] if (x["dataset"], x["attr"]) != (name, attr)] + [r]
            print(
                name,
                attr,
                r["stopped"],
                r["counts"][-1],
                len(r["counts"]),
                f"{r['wall_s']:.1f}s",
                r["check"],
                flush=True,
            )
            save(out, path)  # after each configuration: a long run interrupted keeps what it measured
    print((RESULTS / "trees_cells.md").read_text())


def save(out: dict, path: Path) -> None:
    order = list(DATASETS)
    out["runs"].sort(key=lambda x: (order.index(x["dataset"]), DATASETS[x["dataset"]][1].index(x["attr"])))
    trees_json = RESULTS / "trees.json"
    if trees_json.exists():
        out["engine_scaling"] = [
            {k: s[k] for k in ("dataset", "model", "attr", "converged", "boxes", "memory_limited", "time_s")}
            for s in json.loads(trees_json.read_text())["scaling"]
            if s["rate"] == 0
        ]
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / "trees_cells.md").write_text(markdown(out))


if __name__ == "__main__":
    main()
