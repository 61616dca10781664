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
  first layers differ by a constant, and each ReLU maps a difference d to one between 0 and d).

Networks that read no encoded column (the FairQuant and Fairify benchmarks) have no tables: their
bounds are the encoding-layer ones, and their tables are `fairquant.md` and `fairify.md`; with
`--fairquant AC-5,...` those models are measured here too, with and without the relational bound.
A run of some datasets or variants keeps the stored rows of the others.
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

from faircert import api
from faircert.engines.network import symbolic
from faircert.engines.network.refine import verify_network
from faircert.properties import individual_fairness

OUT = HERE / "results"
#: bound -> (input tables, categories ordered, relational)
VARIANTS = {"encoding layer": (False, False, False), "lookups": (True, False, False),
            "lookups + order": (True, True, False), "lookups + order + relational": (True, True, True)}
#: FairQuant's models have no tables: their bound with and without the relational one
FAIRQUANT_VARIANTS = {"encoding layer": False, "encoding layer + relational": True}
warnings.filterwarnings("ignore")


def _row(name: str, protected: str, variant: str, time_limit: float, ir, prop, relational: bool) -> dict:
    symbolic.RELATIONAL = relational
    t0 = time.perf_counter()
    try:
        r = verify_network(ir, prop, time_limit=time_limit)
    finally:
        symbolic.RELATIONAL = False
    wall = time.perf_counter() - t0
    row = {"dataset": name, "protected": protected, "bound": variant, "time_limit": time_limit,
           "certified": r.certified, "falsified": r.falsified, "undecided": r.undecided, "wall_s": wall,
           "boxes": int(r.stats.get("boxes_bounded", 0)), "decided_per_s": (r.certified + r.falsified) / wall}
    print(json.dumps(row), flush=True)
    return row


def measure(name: str, time_limit: float, variants: list[str]) -> list[dict]:
    model, X, protected = practitioner.fitted(name, "MLP(64,64)")
    rows = []
    for variant in variants:
        lookups, order, relational = VARIANTS[variant]
        ir, prop, _ = api._model_and_property(model, X, protected, None, None, None, False, False, None, order)
        if not lookups:
            ir.input_tables = None
        rows.append(_row(name, protected, variant, time_limit, ir, prop, relational))
    return rows


def measure_fairquant(name: str, time_limit: float) -> list[dict]:
    import fairquant

    net, dom, p = fairquant.load_case(name, "header")
    prop = individual_fairness(dom, [p])
    return [_row(name, dom.names[p], variant, time_limit, net, prop, relational)
            for variant, relational in FAIRQUANT_VARIANTS.items()]


def markdown(rows: list[dict]) -> str:
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), "",
             "| dataset (protected) | bound | certified | falsified | undecided | boxes bounded | wall / limit (s) "
             "| decided share per s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} ({r['protected']}) | {r['bound']} | {r['certified']:.4%} | "
                     f"{r['falsified']:.4%} | {r['undecided']:.4%} | {r['boxes']:,} | "
                     f"{r['wall_s']:.1f} / {r['time_limit']:.0f} | {r['decided_per_s']:.3%} |")
    lines += ["", "Shares are sound (certified and falsified are proven; undecided is the gap). One core, "
              "one process per row, fixed seeds."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="adult,german,bank,compas")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--fairquant", default="", help="FairQuant models to measure too (AC-5,AC-7,...)")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    rows = [row for name in args.datasets.split(",") if name for row in measure(name, args.time_limit, variants)]
    rows += [row for name in args.fairquant.split(",") if name for row in measure_fairquant(name, args.time_limit)]
    path = OUT / "bounds.json"
    new = {(r["dataset"], r["bound"]) for r in rows}
    kept = [r for r in json.loads(path.read_text()) if (r["dataset"], r["bound"]) not in new] if path.exists() else []
    order = list(VARIANTS) + list(FAIRQUANT_VARIANTS)
    datasets = list(dict.fromkeys([r["dataset"] for r in kept + rows]))
    rows = sorted(kept + rows, key=lambda r: (datasets.index(r["dataset"]), order.index(r["bound"])))
    path.write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "bounds.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
