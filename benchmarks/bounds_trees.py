"""Tree-ensemble box bounds: merged tree pairs against the plain per-tree ranges, on the practitioner models.

Run `python benchmarks/bounds_trees.py [--datasets adult,compas] [--model "XGBoost 100x6"]
[--time-limit 60]`; writes `benchmarks/results/bounds_trees.md` and `.json`.

Each dataset's scikit-learn Pipeline from `benchmarks/practitioner.py` (same data, split and seeds),
bound to the uniform domain inferred from the data, protected attribute as there, one core:

- random boxes: the domain halved along random features 10, 20, 30 and 40 times (1,000 boxes per
  depth, each side of a cut at random). A box is decided when the margin bounds decide the label
  of every protected slice (what settles a box of the epsilon-0 refinement). Columns: the share
  the plain bounds decide, the share the merged pairs decide (`engines/trees/pairs.py`), the share
  whose every slice keeps one label at 256 sampled points (the most any bound could decide: the
  others straddle the decision boundary and must be split), the median width of the margin bounds
  (plain, pairs) beside the median sampled range, and each bound's time per box;
- `verify` over the uniform domain with the time limit, pairs off and on (`pairs.MERGE_PAIRS`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import practitioner

import faircert
from faircert.engines.trees import pairs
from faircert.engines.trees.boxes import domain_box, normalise, uniform_points
from faircert.engines.trees.joint import SliceBounds
from faircert.requests.inputs import Individual, model_and_property

OUT = HERE / "results"
DEPTHS = (10, 20, 30, 40)
warnings.filterwarnings("ignore")


def _boxes(rng, dlo, dhi, depth: int, n: int):
    lo, hi = np.tile(dlo, (n, 1)), np.tile(dhi, (n, 1))
    r = np.arange(n)
    for _ in range(depth):
        j = rng.integers(0, len(dlo), n)
        a, b = lo[r, j], hi[r, j]
        mid = np.floor((a + b) / 2)
        can, left = b - a >= 2, rng.random(n) < 0.5
        hi[r[can & left], j[can & left]] = mid[can & left]
        lo[r[can & ~left], j[can & ~left]] = mid[can & ~left]
    return lo, hi


def _decided(sb, nt, lo, hi, tol: float = 1e-9):
    """(every slice's label decided, the widths of the margin bounds of slice 0), and seconds."""
    t = time.perf_counter()
    decided, width = np.ones(len(lo), dtype=bool), None
    for vmin, vmax in sb.bounds(lo, hi):
        low, high = nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)
        decided &= (low > tol) | (high < -tol)
        width = high - low if width is None else width
    return decided, width, time.perf_counter() - t


def random_boxes(name: str, model_name: str, n: int = 1000, samples: int = 256, seed: int = 0) -> list[dict]:
    model, X, protected = practitioner.fitted(name, model_name)
    read = model_and_property(model, X, Individual(protected), {})
    ir, prop = read.ir, read.prop
    nt, prot = normalise(ir, prop.domain), list(prop.protected)
    slices = np.array(np.meshgrid(*[np.arange(prop.domain.lower[p], prop.domain.upper[p] + 1) for p in prot]))
    slo = np.tile(prop.domain.lower, (slices[0].size, 1))
    slo[:, prot] = slices.reshape(len(prot), -1).T
    sb = SliceBounds(nt, prot, slo)
    rng = np.random.default_rng(seed)
    rows = []
    for depth in DEPTHS:
        lo, hi = _boxes(rng, *domain_box(prop.domain), depth, n)
        pairs.MERGE_PAIRS = False
        plain, plain_width, t_plain = _decided(sb, nt, lo, hi)
        pairs.MERGE_PAIRS = True
        try:
            merged, merged_width, t_merged = _decided(sb, nt, lo, hi)
        finally:
            pairs.MERGE_PAIRS = False
        one_label, sampled = np.ones(n, dtype=bool), np.zeros(n)
        for v, s in enumerate(slo):
            x = uniform_points(rng, np.repeat(lo, samples, 0), np.repeat(hi, samples, 0), nt.discrete)
            x[:, prot] = s[prot]
            margin = (nt.offset + ir.scale * ir.leaf_values(x).sum(axis=1)).reshape(n, samples)
            one_label &= np.all(margin > 0, axis=1) | np.all(margin <= 0, axis=1)
            if v == 0:
                sampled = margin.max(axis=1) - margin.min(axis=1)
        row = {
            "dataset": name,
            "model": model_name,
            "halvings": depth,
            "boxes": n,
            "plain_decides": float(plain.mean()),
            "pairs_decide": float(merged.mean()),
            "one_label": float(one_label.mean()),
            "plain_width": float(np.median(plain_width)),
            "pairs_width": float(np.median(merged_width)),
            "sampled_width": float(np.median(sampled)),
            "plain_ms": 1e3 * t_plain / n,
            "pairs_ms": 1e3 * t_merged / n,
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def verify_rows(name: str, model_name: str, time_limit: float) -> list[dict]:
    model, X, protected = practitioner.fitted(name, model_name)
    rows = []
    for on in (False, True):
        pairs.MERGE_PAIRS = on
        try:
            t0 = time.perf_counter()
            r = faircert.verify(model, X, protected=protected, time_limit=time_limit, workers=1)
        finally:
            pairs.MERGE_PAIRS = False
        row = {
            "dataset": name,
            "model": model_name,
            "pairs": on,
            "time_limit": time_limit,
            "wall_s": time.perf_counter() - t0,
            "certified": r.certified,
            "falsified": r.falsified,
            "undecided": r.undecided,
            "boxes_examined": int(r.stats.get("examined", 0)),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def markdown(data: dict) -> str:
    lines = [
        "# " + __doc__.splitlines()[0],
        "",
        " ".join(__doc__.split("\n\n")[2].split()),
        "",
        "## Random boxes",
        "",
        "| dataset (model) | halvings | plain decides | pairs decide | one label at every sample | "
        "median width: plain / pairs / sampled | ms per box: plain / pairs |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["boxes"]:
        lines.append(
            f"| {r['dataset']} ({r['model']}) | {r['halvings']} | {r['plain_decides']:.1%} | "
            f"{r['pairs_decide']:.1%} | {r['one_label']:.1%} | {r['plain_width']:.2f} / {r['pairs_width']:.2f} / "
            f"{r['sampled_width']:.2f} | {r['plain_ms']:.3f} / {r['pairs_ms']:.3f} |"
        )
    lines += [
        "",
        "## `verify` over the uniform domain",
        "",
        "| dataset (model) | merged pairs | certified | falsified | undecided | boxes examined | wall / limit (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["verify"]:
        lines.append(
            f"| {r['dataset']} ({r['model']}) | {'on' if r['pairs'] else 'off'} | {r['certified']:.4%} | "
            f"{r['falsified']:.4%} | {r['undecided']:.4%} | {r['boxes_examined']:,} | "
            f"{r['wall_s']:.1f} / {r['time_limit']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="adult,compas")
    parser.add_argument("--model", default="XGBoost 100x6")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    names = [n for n in args.datasets.split(",") if n]
    data = {
        "boxes": [row for name in names for row in random_boxes(name, args.model)],
        "verify": [row for name in names for row in verify_rows(name, args.model, args.time_limit)],
    }
    (OUT / "bounds_trees.json").write_text(json.dumps(data, indent=1) + "\n")
    (OUT / "bounds_trees.md").write_text(markdown(data))


if __name__ == "__main__":
    main()
