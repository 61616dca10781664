"""Small time limits on tree ensembles with epsilon > 0: how far past its limit `verify` ends.

Run `python benchmarks/trees_time_limit.py [--name trees_time_limit]`; writes
`benchmarks/results/<name>.md` and `.json` (`trees_time_limit_before` holds the same runs of the
engine before its draws and estimate kept the limit).

The Adult 150-tree XGBoost ensemble (`trees.py`), sex protected, epsilon on age (and hours per
week), one worker, limits of 1, 2 and 5 s: such runs end at their limit with the bounds far apart,
so the counterexamples are drawn from the undecided part (a neighbourhood search each) and a
statistical estimate is added, both within the limit. Reported: the engine's own elapsed time
and the call's wall time (the kernels compiled before, in a first run left out), the time of the
bounds and of the estimate, the counterexamples found, and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import faircert

OUT = HERE / "results"
CASES = [({"age": 2}, 1.0), ({"age": 2}, 2.0), ({"age": 2, "hours-per-week": 5}, 1.0), ({"age": 5}, 2.0)]
CASES += [({"age": 2, "hours-per-week": 5}, 5.0)]


def main() -> None:
    from trees import train

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="trees_time_limit", help="the result files' name")
    name = parser.parse_args().name

    ir, dom, _ = train("adult", 150)
    faircert.verify(ir, dom, protected="sex", epsilon={"age": 2}, time_limit=1, workers=1)  # kernels, first calls
    rows = []
    for epsilon, limit in CASES:
        load = os.getloadavg()[0]
        t = time.perf_counter()
        r = faircert.verify(ir, dom, protected="sex", epsilon=epsilon, time_limit=limit, workers=1)
        wall = time.perf_counter() - t
        rows.append(
            dict(
                epsilon=epsilon,
                time_limit_s=limit,
                elapsed_s=r.elapsed_s,
                wall_s=wall,
                quantify_s=r.stats["quantify_s"],
                estimate_s=r.stats["estimate_s"],
                stopped=r.stopped,
                undecided=r.undecided,
                counterexamples=len(r.counterexamples),
                load=load,
            )
        )
        print(json.dumps(rows[-1]), flush=True)
    (OUT / f"{name}.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    lines = [
        __doc__.split("\n\n")[0],
        "",
        "| epsilon | time limit (s) | elapsed, engine (s) | wall (s) | bounds / estimate (s) | stopped "
        "| counterexamples | load (1 min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eps = ", ".join(f"{k} {v:g}" for k, v in r["epsilon"].items())
        lines.append(
            f"| {eps} | {r['time_limit_s']:g} | {r['elapsed_s']:.2f} | {r['wall_s']:.2f} | "
            f"{r['quantify_s']:.2f} / {r['estimate_s']:.2f} | {r['stopped']} | {r['counterexamples']} | "
            f"{r['load']:.1f} |"
        )
    lines += ["", "One worker; 2 cores shared with other jobs (the load is the 1-minute load average)."]
    (OUT / f"{name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
