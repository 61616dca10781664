"""The `faircert demo` pipeline, timed: data generation, training, verification, and the shares."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import faircert
from faircert.demo import accuracy, lending_data, train_relu_network

OUT = Path(__file__).resolve().parent / "results" / "demo"


def main() -> int:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    data = lending_data(seed=0)
    net = train_relu_network(data.X, data.y, seed=0)
    t_train = time.perf_counter() - t0
    result = faircert.verify(net, domain=data.domain, protected="sex", time_limit=15.0, seed=0)
    total = time.perf_counter() - t0
    row = {
        "train_s": t_train,
        "verify_s": result.elapsed_s,
        "total_s": total,
        "accuracy": accuracy(net, data.X, data.y),
        "certified": result.certified,
        "falsified": result.falsified,
        "undecided": result.undecided,
        "domain_size": result.domain_size,
        "counterexamples": len(result.counterexamples),
        "load_avg": load,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": platform.machine(),
    }
    OUT.with_suffix(".json").write_text(json.dumps(row, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(
        "\n".join(
            [
                "# `faircert demo` pipeline, timed",
                "",
                f"Measured {row['measured']} on {row['machine']} (1-minute load average {load:.1f}); seed 0, 15 s "
                "budget. "
                "Target: the whole demo in under 30 s.",
                "",
                "| train s | verify s | total s | accuracy | certified % | falsified % | undecided % | grid points "
                "| cex |",
                "|---|---|---|---|---|---|---|---|---|",
                f"| {t_train:.2f} | {result.elapsed_s:.2f} | {total:.2f} | {100 * row['accuracy']:.1f} | "
                f"{100 * result.certified:.4f} | {100 * result.falsified:.4f} | {100 * result.undecided:.4f} | "
                f"{result.domain_size:,.0f} | {len(result.counterexamples)} |",
                "",
            ]
        )
    )
    print(OUT.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
