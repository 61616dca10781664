"""Can the complete check raise the certified share of `verify` on networks? Measured on the boxes
the quantifier leaves undecided.

For each FairQuant network: refine for `--refine` seconds (the quantifier of `faircert verify`),
then give the undecided boxes in which no counterexample has been found to the complete decision
procedure (`--complete`'s branch and bound with the MILP back end), `--seconds` per selection:
the heaviest such boxes, and as many drawn uniformly among them. A box proven fair would count whole
in `certified`. Beside it: what the quantifier itself gains by refining for the same seconds.
Writes benchmarks/results/complete_on_undecided.{md,json}.

    python benchmarks/complete_on_undecided.py [--models AC-3,AC-5,GC-1,BM-4] [--refine 30] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairquant import load_case  # noqa: E402

from faircert.engines.network.complete import FAIR, UNFAIR, decide_regions  # noqa: E402
from faircert.engines.network.refine import Refinement  # noqa: E402
from faircert.properties import individual_fairness  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def candidates(run: Refinement) -> np.ndarray:
    """Open boxes with no counterexample found in them: full priority (not marked hopeless) and no
    mass credited unfair."""
    lo, hi, bounded, _, prio, _, unfair = run.open_boxes()
    mass = run.pb.mass(lo, hi)
    return np.flatnonzero(bounded & (prio >= mass * 0.999) & (unfair == 0))


def decide(run: Refinement, idx: np.ndarray, seconds: float) -> dict:
    lo, hi, _, _, _, fair, _ = run.open_boxes()
    pb = run.pb
    t = time.perf_counter()
    out = decide_regions(pb, lo[idx].copy(), hi[idx].copy(), time_limit=seconds, seed=0)
    v = out.verdict
    gain = float((pb.mass(lo[idx], hi[idx]) - fair[idx])[v == FAIR].sum()) / pb.domain_size
    return dict(
        boxes=len(idx),
        fair=int((v == FAIR).sum()),
        unfair=int((v == UNFAIR).sum()),
        unknown=int((v == 0).sum()),
        certified_gain=gain,
        seconds=time.perf_counter() - t,
    )


def measure(name: str, refine_s: float, seconds: float, k: int) -> dict:
    net, dom, p = load_case(name, "header")
    run = Refinement(net, individual_fairness(dom, [p]), 0, None)
    run.refine(refine_s, 0.0)
    cert0, _, und0 = run.shares()
    cand = candidates(run)
    lo, hi = run.open_boxes()[:2]
    mass = run.pb.mass(lo, hi)
    heaviest = cand[np.argsort(-mass[cand])][:k]
    drawn = np.random.default_rng(0).choice(cand, min(k, len(cand)), replace=False)
    row = dict(
        model=name,
        refine_s=refine_s,
        certified=cert0,
        undecided=und0,
        pool=len(mass),
        candidates=len(cand),
        candidate_mass=float(mass[cand].sum()) / run.pb.domain_size,
        heaviest=decide(run, heaviest, seconds),
        drawn=decide(run, drawn, seconds),
    )
    t = time.perf_counter()
    more = Refinement(net, individual_fairness(dom, [p]), 0, None)
    more.refine(refine_s + seconds, 0.0)  # the same refinement, `seconds` longer
    row["refine_more"] = dict(seconds=time.perf_counter() - t, certified_gain=more.shares()[0] - cert0)
    return row


def write(rows: list[dict], args) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "complete_on_undecided.json").write_text(
        json.dumps(
            dict(
                refine_s=args.refine,
                seconds=args.seconds,
                boxes=args.boxes,
                machine=platform.machine(),
                cores=os.cpu_count(),
                rows=rows,
            ),
            indent=1,
        )
        + "\n"
    )
    out = [
        "# The complete check on the boxes `verify` leaves undecided (networks)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} "
        f"({os.cpu_count()} cores). Each model: the quantifier refines for {args.refine:g} s; then the "
        f"complete procedure gets {args.seconds:g} s for the {args.boxes} heaviest undecided boxes with no "
        f"counterexample found in them, and {args.seconds:g} s for {args.boxes} drawn uniformly among "
        "them; a box proven fair would count whole in `certified`. Last column: the quantifier's own "
        "certified gain when it refines on for the same time. Shares in % of the domain.",
        "",
        "| model | certified % | undecided % | boxes without a known pair (mass %) | heaviest: fair / unfair / "
        "unknown | gain % | drawn: fair / unfair / unknown | gain % | refining on: gain % (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h, d, m = r["heaviest"], r["drawn"], r["refine_more"]
        out.append(
            f"| {r['model']} | {100 * r['certified']:.2f} | {100 * r['undecided']:.2f} | {r['candidates']} "
            f"({100 * r['candidate_mass']:.2f}) | {h['fair']} / {h['unfair']} / {h['unknown']} | "
            f"{100 * h['certified_gain']:.4f} | {d['fair']} / {d['unfair']} / {d['unknown']} | "
            f"{100 * d['certified_gain']:.4f} | {100 * m['certified_gain']:.3f} ({m['seconds']:.0f}) |"
        )
    (RESULTS / "complete_on_undecided.md").write_text("\n".join(out) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="AC-3,AC-5,GC-1,BM-4")
    ap.add_argument("--refine", type=float, default=30.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--boxes", type=int, default=300)
    args = ap.parse_args()
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, args.refine, args.seconds, args.boxes))
        print(json.dumps(rows[-1]), flush=True)
    write(rows, args)


if __name__ == "__main__":
    main()
