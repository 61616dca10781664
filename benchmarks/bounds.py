"""Which network bound decides most per second, on the practitioner MLPs (raw columns, one-hot inputs).

Run `python benchmarks/bounds.py [--datasets adult,german,bank,compas] [--time-limit 30]`; writes
`benchmarks/results/bounds.md` and `.json`.

Each dataset's `Pipeline(OneHotEncoder + StandardScaler, MLPClassifier(64, 64))` from
`benchmarks/practitioner.py` (same data, split and seeds) is verified over the uniform domain
inferred from the data, protected attribute as there, one core, under three bounds:

- `encoding layer`: the network as compiled, the one-hot encoding a layer of ReLUs of the codes;
- `lookups`: the encoded columns read through per-column tables (exact per column);
- `lookups + order`: the same, with each column's categories ordered by their effect on the logit,
  so that a box's range of codes holds categories of like effect (what `verify` runs).

Networks that read no encoded column (the FairQuant and Fairify benchmarks) have no tables: their
bounds are the encoding-layer ones, and their tables are `fairquant.md` and `fairify.md`.
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
from faircert.engines.network.refine import verify_network

OUT = HERE / "results"
VARIANTS = {"encoding layer": (False, False), "lookups": (True, False), "lookups + order": (True, True)}
warnings.filterwarnings("ignore")


def measure(name: str, time_limit: float) -> list[dict]:
    model, X, protected = practitioner.fitted(name, "MLP(64,64)")
    rows = []
    for variant, (lookups, order) in VARIANTS.items():
        ir, prop, _ = api._model_and_property(model, X, protected, None, None, None, False, False, None, order)
        if not lookups:
            ir.input_tables = None
        t0 = time.perf_counter()
        r = verify_network(ir, prop, time_limit=time_limit)
        wall = time.perf_counter() - t0
        row = {"dataset": name, "protected": protected, "bound": variant, "time_limit": time_limit,
               "certified": r.certified, "falsified": r.falsified, "undecided": r.undecided, "wall_s": wall,
               "boxes": int(r.stats.get("boxes_bounded", 0)),
               "decided_per_s": (r.certified + r.falsified) / wall}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


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
    args = parser.parse_args()
    rows = [row for name in args.datasets.split(",") for row in measure(name, args.time_limit)]
    (OUT / "bounds.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "bounds.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
