"""What stays undecided in a network's box refinement: boxes the decision boundary crosses, or loose bounds.

Run `python benchmarks/undecided.py [--datasets adult,german] [--time-limit 20] [--boxes 300]`; writes
`benchmarks/results/undecided.md` and `.json`.

The practitioner MLP of each dataset (`benchmarks/practitioner.py`: same data, split and seeds) is
refined over its uniform domain for `--time-limit` seconds on one core (lookup bounds, categories
ordered by effect: what `verify` runs). Then `--boxes` undecided boxes are drawn with probability
proportional to their mass, and 2,000 grid points of each are evaluated on the network. Reported:
the share of drawn boxes holding points of both signs (no bound can certify those whole), and, per
twin, how far the bounds lie below the sampled minimum and above the sampled maximum, beside the
sampled range itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import practitioner

from faircert.engines.network.refine import Refinement
from faircert.engines.network.symbolic import bound_twins
from faircert.requests.inputs import Individual, model_and_property

OUT = HERE / "results"
POINTS = 2000
warnings.filterwarnings("ignore")


def measure(name: str, time_limit: float, n_boxes: int) -> dict:
    model, X, protected = practitioner.fitted(name, "MLP(64,64)")
    rng = np.random.default_rng(0)
    read = model_and_property(model, X, Individual(protected), {}, reorder=True)
    ir, prop = read.ir, read.prop
    run = Refinement(ir, prop, 0, None)
    run.refine(time_limit, 0.0)
    lo, hi, mass = run.undecided_boxes()
    pb = run.pb
    pick = rng.choice(lo.shape[0], size=min(n_boxes, lo.shape[0]), p=mass / mass.sum(), replace=False)
    bd = bound_twins(pb.bounder, lo[pick], hi[pick])
    mixed, below, above, spread = 0, [], [], []
    for row, b in enumerate(pick):
        x = np.minimum(np.floor(lo[b] + rng.random((POINTS, pb.d)) * (hi[b] - lo[b] + 1)), hi[b])
        z = pb.twin.logits(x)
        mixed += bool((z > 0).any() and (z <= 0).any())
        below.append(float((z.min(axis=0) - bd.lower[row]).mean()))
        above.append(float((bd.upper[row] - z.max(axis=0)).mean()))
        spread.append(float((z.max(axis=0) - z.min(axis=0)).mean()))
    return {
        "dataset": name,
        "protected": protected,
        "time_limit": time_limit,
        "certified": float(run.totals.sums["settled"] - run.totals.sums["unfair"]) / pb.domain_size,
        "undecided": run.shares()[2],
        "pool": int(lo.shape[0]),
        "boxes_drawn": int(pick.size),
        "both_signs": mixed / pick.size,
        "bound_below_min": float(np.mean(below)),
        "bound_above_max": float(np.mean(above)),
        "sampled_range": float(np.mean(spread)),
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        __doc__.split("\n\n")[0],
        "",
        "| dataset (protected) | refined (s) | certified (whole boxes) | undecided | undecided boxes | drawn | "
        "holding both "
        "signs | bound below sampled min | bound above sampled max | sampled range |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} ({r['protected']}) | {r['time_limit']:.0f} | {r['certified']:.2%} | "
            f"{r['undecided']:.2%} | {r['pool']:,} | {r['boxes_drawn']} | {r['both_signs']:.0%} | "
            f"{r['bound_below_min']:.2f} | {r['bound_above_max']:.2f} | {r['sampled_range']:.2f} |"
        )
    lines += [
        "",
        "Logit units, averaged over the drawn boxes and the twins. A box holding both signs stays "
        "undecided under any bound: it must be split. The others are undecided because their bounds are "
        "looser than the logit's range.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="adult,german")
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--boxes", type=int, default=300)
    args = parser.parse_args()
    rows = [measure(name, args.time_limit, args.boxes) for name in args.datasets.split(",")]
    print(json.dumps(rows, indent=1))
    (OUT / "undecided.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "undecided.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
