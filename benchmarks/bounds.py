"""Which network bound decides most per second, on the practitioner MLPs (raw columns, one-hot inputs).

Run `python benchmarks/bounds.py [--datasets adult,german,bank,compas] [--time-limit 30]`; writes
`benchmarks/results/bounds.md` and `.json`.

Each dataset's `Pipeline(OneHotEncoder + StandardScaler, MLPClassifier(64, 64))` from
`benchmarks/practitioner.py` (same data, split and seeds) is verified over the uniform domain
inferred from the data, protected attribute as there, one core, under three bounds:

- `encoding layer`: the network as compiled, the one-hot encoding a layer of ReLUs of the codes;
- `lookups`: the encoded columns read through per-column tables (exact per column);
- `lookups + order`: the same, with each column's categories ordered by their effect on the logit,
  so that a box's range of codes holds categories of like effect (what `verify` runs);
- `... + relational`: the same, each twin's bounds intersected with bounds on its logit's
  difference from the first twin's (`symbolic.RELATIONAL`, ReluDiff-style intervals: the twins'
  first layers differ by a constant, and each ReLU maps a difference d to one between 0 and d);
- `... + optimised slopes`: the same, the boxes the fixed slopes leave undecided bounded again with
  their lower relaxation slopes optimised (`symbolic.OPTIMISED_SLOPES`, alpha-CROWN on the final
  bound: 20 Adam steps on the slopes, hidden bounds held).

Networks that read no encoded column (the FairQuant and Fairify benchmarks) have no tables: their
bounds are the encoding-layer ones, and their tables are `fairquant.md` and `fairify.md`; with
`--fairquant AC-5,...` those models are measured here too, with and without the relational bound
and the optimised slopes (`--fairquant-variants` picks some).
A run of some datasets or variants keeps the stored rows of the others.

`--headroom AC-5,AC-7` measures what a tighter bound could decide at all: random boxes of the
domain (halved along random features 22, 30 and 34 times), and among those the fixed slopes leave
undecided, the share whose twins keep one sign at 256 sampled points (an upper limit for any
bound: the others straddle the decision boundary and must be split), and the shares the optimised
slopes and full CROWN tightening decide, with each bound's time per box.

`--splits BM-8,AC-7` measures neuron splitting in the complete check (`network/phases.py`): each
Fairify model's partitions (`benchmarks/fairify.py`) decided with and without it before the MILP
(`complete.NEURON_SPLITS`), with the boxes each proved and their seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import practitioner

from faircert.engines.network import symbolic
from faircert.engines.network.refine import verify_network
from faircert.properties import individual_fairness
from faircert.requests.inputs import Individual, model_and_property

OUT = HERE / "results"
#: bound -> (input tables, categories ordered, extra bound: "", "relational" or "slopes")
VARIANTS = {
    "encoding layer": (False, False, ""),
    "lookups": (True, False, ""),
    "lookups + order": (True, True, ""),
    "lookups + order + relational": (True, True, "relational"),
    "lookups + order + optimised slopes": (True, True, "slopes"),
}
#: FairQuant's models have no tables: their bound with and without each extra one
FAIRQUANT_VARIANTS = {
    "encoding layer": "",
    "encoding layer + relational": "relational",
    "encoding layer + optimised slopes": "slopes",
}
warnings.filterwarnings("ignore")


def _row(name: str, protected: str, variant: str, time_limit: float, ir, prop, extra: str) -> dict:
    symbolic.RELATIONAL, symbolic.OPTIMISED_SLOPES = extra == "relational", extra == "slopes"
    if extra == "slopes":  # one core, as every row
        import torch

        torch.set_num_threads(1)
    t0 = time.perf_counter()
    try:
        r = verify_network(ir, prop, time_limit=time_limit)
    finally:
        symbolic.RELATIONAL = symbolic.OPTIMISED_SLOPES = False
    wall = time.perf_counter() - t0
    row = {
        "dataset": name,
        "protected": protected,
        "bound": variant,
        "time_limit": time_limit,
        "certified": r.certified,
        "falsified": r.falsified,
        "undecided": r.undecided,
        "wall_s": wall,
        "boxes": int(r.stats.get("boxes_bounded", 0)),
        "decided_per_s": (r.certified + r.falsified) / wall,
    }
    print(json.dumps(row), flush=True)
    return row


def measure(name: str, time_limit: float, variants: list[str]) -> list[dict]:
    model, X, protected = practitioner.fitted(name, "MLP(64,64)")
    rows = []
    for variant in variants:
        lookups, order, extra = VARIANTS[variant]
        read = model_and_property(model, X, Individual(protected), {}, reorder=order)
        ir, prop = read.ir, read.prop
        if not lookups:
            ir.input_tables = None
        rows.append(_row(name, protected, variant, time_limit, ir, prop, extra))
    return rows


def measure_fairquant(name: str, time_limit: float, variants: list[str]) -> list[dict]:
    import fairquant

    net, dom, p = fairquant.load_case(name, "header")
    prop = individual_fairness(dom, [p])
    return [
        _row(name, dom.names[p], variant, time_limit, net, prop, FAIRQUANT_VARIANTS[variant]) for variant in variants
    ]


def headroom(name: str, depths=(22, 30, 34), boxes: int = 2000, seed: int = 0) -> list[dict]:
    """What a tighter bound could decide, on random boxes of a FairQuant model (see the docstring)."""
    import fairquant
    import numpy as np
    import torch

    from faircert.engines.network.problem import Problem
    from faircert.engines.network.sampling import random_points

    torch.set_num_threads(1)
    net, dom, p = fairquant.load_case(name, "header")
    pb = Problem.build(net, individual_fairness(dom, [p]))
    rng = np.random.default_rng(seed)
    out = []
    for depth in depths:
        lo, hi = np.tile(pb.lo, (boxes, 1)), np.tile(pb.hi, (boxes, 1))
        r = np.arange(boxes)
        for _ in range(depth):  # halve each box along a random feature, keeping a random half
            j = rng.integers(0, pb.d, boxes)
            a, b = lo[r, j], hi[r, j]
            mid = np.where(pb.discrete[j], np.floor((a + b) / 2), (a + b) / 2)
            left, ok = rng.random(boxes) < 0.5, b > a
            hi[r[left & ok], j[left & ok]] = mid[left & ok]
            right = ~left & ok
            lo[r[right], j[right]] = np.where(pb.discrete[j[right]], mid[right] + 1, mid[right])

        def decided(bd):
            return np.all(bd.lower > pb.tol, axis=1) | np.all(bd.upper < -pb.tol, axis=1)

        t = time.perf_counter()
        fixed = symbolic.bound_twins(pb.bounder, lo, hi)
        t_fixed = (time.perf_counter() - t) / boxes
        open_ = np.flatnonzero(~decided(fixed))
        olo, ohi = lo[open_], hi[open_]
        t = time.perf_counter()
        tight = symbolic.bound_twins(pb.bounder, olo, ohi, tight=True)
        t_tight = (time.perf_counter() - t) / len(open_)
        symbolic.OPTIMISED_SLOPES = True
        try:
            t = time.perf_counter()
            optimised = symbolic.bound_twins(pb.bounder, olo, ohi)
            t_slopes = (time.perf_counter() - t) / len(open_)
        finally:
            symbolic.OPTIMISED_SLOPES = False
        one_sign = 0
        for k in range(len(open_)):
            x = random_points(rng, np.tile(olo[k], (256, 1)), np.tile(ohi[k], (256, 1)), pb.discrete)
            z = pb.bounder.logits(x)
            one_sign += bool(np.all(z > 0) or np.all(z < 0))
        row = {
            "model": name,
            "depth": depth,
            "boxes": boxes,
            "fixed_decides": float(decided(fixed).mean()),
            "undecided": int(len(open_)),
            "one_sign": one_sign / len(open_),
            "slopes_decide": float(decided(optimised).mean()),
            "tight_decides": float(decided(tight).mean()),
            "fixed_ms": 1e3 * t_fixed,
            "slopes_ms": 1e3 * t_slopes,
            "tight_ms": 1e3 * t_tight,
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def splits(name: str, time_limit: float) -> list[dict]:
    """Fairify's partitions of one model decided without and with neuron splits before the MILP."""
    import fairify

    from faircert.engines.network import complete
    from faircert.engines.network.decide import decide_network

    net, prop, size = fairify.load_case(name)
    out = []
    for on in (False, True):
        complete.NEURON_SPLITS = on
        try:
            t0 = time.perf_counter()
            res = decide_network(net, prop, time_limit=time_limit, partition_size=size, seed=0)
        finally:
            complete.NEURON_SPLITS = False
        wall, d, st = time.perf_counter() - t0, res.decision, res.stats
        row = {
            "model": name,
            "splits": on,
            "time_limit": time_limit,
            "wall_s": wall,
            "regions": d["regions"],
            "decided": d["fair"] + d["unfair"],
            "fair": d["fair"],
            "milp_fair": st["milp_fair"],
            "milp_s": st["milp_s"] - st["phases_s"],
            "phases_fair": st["phases_fair"],
            "phases_s": st["phases_s"],
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def splits_markdown(rows: list[dict]) -> str:
    lines = [
        "",
        "## Neuron splitting in the complete check",
        "",
        "Fairify's partitions of each model (`fairify.md`'s protocol), decided without and with neuron "
        "splitting (up to 64 subdomains per box) before each box's MILP call; one core. Boxes proven: "
        "by the splits and by the MILP, with the seconds each took.",
        "",
        "| model | neuron splits | decided / regions | fair | proven by splits (s) | proven by the MILP (s) "
        "| wall / limit (s) | decided per s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {'on' if r['splits'] else 'off'} | {r['decided']:,} / {r['regions']:,} | "
            f"{r['fair']:,} | {r['phases_fair']} ({r['phases_s']:.1f}) | {r['milp_fair']} ({r['milp_s']:.1f}) | "
            f"{r['wall_s']:.1f} / {r['time_limit']:.0f} | {r['decided'] / r['wall_s']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def headroom_markdown(rows: list[dict]) -> str:
    lines = [
        "",
        "## What a tighter bound could decide",
        "",
        "Random boxes of each model's domain (2,000 per depth, halved along random features), bounded "
        "with the fixed slopes; of the boxes they leave undecided: the share whose twins keep one sign "
        "at 256 sampled points (the most any bound could decide), and the shares the optimised slopes "
        "and full CROWN tightening decide. Times are per box, one core.",
        "",
        "| model | halvings | decided by fixed slopes | undecided boxes | one sign at every sample | "
        "optimised slopes decide | CROWN tightening decides | ms per box: fixed / slopes / tightening |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['depth']} | {r['fixed_decides']:.1%} | {r['undecided']:,} | "
            f"{r['one_sign']:.1%} | {r['slopes_decide']:.1%} | {r['tight_decides']:.1%} | "
            f"{r['fixed_ms']:.3f} / {r['slopes_ms']:.3f} / {r['tight_ms']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict]) -> str:
    lines = [
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        "| dataset (protected) | bound | certified | falsified | undecided | boxes bounded | wall / limit (s) "
        "| decided share per s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} ({r['protected']}) | {r['bound']} | {r['certified']:.4%} | "
            f"{r['falsified']:.4%} | {r['undecided']:.4%} | {r['boxes']:,} | "
            f"{r['wall_s']:.1f} / {r['time_limit']:.0f} | {r['decided_per_s']:.3%} |"
        )
    lines += [
        "",
        "Shares are sound (certified and falsified are proven; undecided is the gap). One core, "
        "one process per row, fixed seeds.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="adult,german,bank,compas")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--fairquant", default="", help="FairQuant models to measure too (AC-5,AC-7,...)")
    parser.add_argument("--fairquant-variants", default=",".join(FAIRQUANT_VARIANTS))
    parser.add_argument(
        "--headroom",
        default="",
        help="FairQuant models whose random boxes measure what a tighter bound could decide (only this is run)",
    )
    parser.add_argument(
        "--splits", default="", help="Fairify models decided with and without neuron splits (only this is run)"
    )
    args = parser.parse_args()
    if args.splits:
        rows = [row for name in args.splits.split(",") for row in splits(name, args.time_limit)]
        (OUT / "bounds_splits.json").write_text(json.dumps(rows, indent=1) + "\n")
        _write_markdown()
        return
    if args.headroom:
        rows = [row for name in args.headroom.split(",") for row in headroom(name)]
        (OUT / "bounds_headroom.json").write_text(json.dumps(rows, indent=1) + "\n")
        _write_markdown()
        return
    variants = [v for v in args.variants.split(",") if v]
    fq_variants = [v for v in args.fairquant_variants.split(",") if v]
    rows = [row for name in args.datasets.split(",") if name for row in measure(name, args.time_limit, variants)]
    rows += [
        row
        for name in args.fairquant.split(",")
        if name
        for row in measure_fairquant(name, args.time_limit, fq_variants)
    ]
    path = OUT / "bounds.json"
    new = {(r["dataset"], r["bound"]) for r in rows}
    kept = [r for r in json.loads(path.read_text()) if (r["dataset"], r["bound"]) not in new] if path.exists() else []
    order = list(VARIANTS) + list(FAIRQUANT_VARIANTS)
    datasets = list(dict.fromkeys([r["dataset"] for r in kept + rows]))
    rows = sorted(kept + rows, key=lambda r: (datasets.index(r["dataset"]), order.index(r["bound"])))
    path.write_text(json.dumps(rows, indent=1) + "\n")
    _write_markdown()


def _write_markdown() -> None:
    text = markdown(json.loads((OUT / "bounds.json").read_text()))
    if (OUT / "bounds_headroom.json").exists():
        text += headroom_markdown(json.loads((OUT / "bounds_headroom.json").read_text()))
    if (OUT / "bounds_splits.json").exists():
        text += splits_markdown(json.loads((OUT / "bounds_splits.json").read_text()))
    (OUT / "bounds.md").write_text(text)


if __name__ == "__main__":
    main()
