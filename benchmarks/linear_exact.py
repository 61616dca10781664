"""The exact linear engine on raw Adult, and the wide-input readers.

Run `python benchmarks/linear_exact.py`; writes `benchmarks/results/linear_exact.md` and `.json`.

* A LogisticRegression pipeline (one-hot + scaling) on raw Adult, protected sex: the unfair share
  over the uniform domain (6.9e20 points) at several histogram budgets (the gap against time),
  with epsilon {age 2, hours 5}, and under the data's independent marginals.
* Reading a 100,000-feature YAML domain (about 5 MB) and inferring a domain from a 100,000-column CSV.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import practitioner  # noqa: E402  (the same data and pipeline as the practitioner benchmark)

import faircert  # noqa: E402
from faircert.data import infer_domain  # noqa: E402
from faircert.domain import Domain  # noqa: E402
from faircert.engines.linear import count  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "linear_exact"


def adult_runs() -> list[dict]:
    from sklearn.linear_model import LogisticRegression

    df, protected, _ = practitioner.adult()
    X, y = df.drop(columns="y"), df["y"]
    model = practitioner.pipeline(X, LogisticRegression(max_iter=1000)).fit(X, y)
    rows = []
    for budget in (0.3, 1.0, 3.0, 10.0):
        count.HISTOGRAM_SECONDS = budget
        t0 = time.perf_counter()
        r = faircert.verify(model, X, protected=protected, workers=1)
        rows.append(
            {
                "query": f"epsilon 0, histogram budget {budget:g} s",
                "certified": r.certified,
                "falsified": r.falsified,
                "undecided": r.undecided,
                "exact": r.exact,
                "buckets": r.stats.get("buckets"),
                "engine_s": r.elapsed_s,
                "wall_s": time.perf_counter() - t0,
            }
        )
    count.HISTOGRAM_SECONDS = 1.0
    for name, kwargs in (
        ("epsilon {age 2, hours 5}", {"epsilon": {"age": 2, "hours-per-week": 5}}),
        ("independent marginals", {"population": "independent", "data": X}),
    ):
        t0 = time.perf_counter()
        r = faircert.verify(model, X, protected=protected, workers=1, **kwargs)
        rows.append(
            {
                "query": name,
                "certified": r.certified,
                "falsified": r.falsified,
                "undecided": r.undecided,
                "exact": r.exact,
                "buckets": r.stats.get("buckets"),
                "engine_s": r.elapsed_s,
                "wall_s": time.perf_counter() - t0,
            }
        )
    return rows


def reader_runs(n: int = 100_000) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory() as folder:
        yaml_path = Path(folder) / "wide.yaml"
        yaml_path.write_text(
            "features:\n" + "".join(f"  - {{name: f{i}, kind: integer, min: 0, max: {i % 50 + 1}}}\n" for i in range(n))
        )
        t0 = time.perf_counter()
        dom = Domain.load(yaml_path)
        out.append(
            {
                "input": f"YAML domain, {n:,} features, {yaml_path.stat().st_size / 1e6:.1f} MB",
                "seconds": time.perf_counter() - t0,
                "features": len(dom),
            }
        )
        csv_path = Path(folder) / "wide.csv"
        rng = np.random.default_rng(0)
        with open(csv_path, "w") as handle:
            handle.write(",".join(f"c{i}" for i in range(n)) + "\n")
            for _ in range(3):
                handle.write(",".join(map(str, rng.integers(0, 9, n))) + "\n")
        t0 = time.perf_counter()
        dom = infer_domain(csv_path)
        out.append(
            {
                "input": f"CSV, {n:,} columns x 3 rows (domain infer)",
                "seconds": time.perf_counter() - t0,
                "features": len(dom),
            }
        )
    return out


def main() -> None:
    adult, readers = adult_runs(), reader_runs()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps({"adult_lr": adult, "readers": readers}, indent=1) + "\n")
    lines = [
        "# Exact linear engine on raw Adult, and wide inputs",
        "",
        "LogisticRegression pipeline (one-hot + scaling) on raw Adult, protected sex, uniform domain of "
        "6.9e20 points unless said; one process; `undecided` is the gap of the sound bounds.",
        "",
        "| query | certified | unfair | undecided | exact | buckets | engine s | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in adult:
        lines.append(
            f"| {r['query']} | {100 * r['certified']:.4f}% | {100 * r['falsified']:.4f}% | "
            f"{r['undecided']:.2e} | {r['exact']} | {r['buckets'] or '-'} | {r['engine_s']:.2f} | "
            f"{r['wall_s']:.2f} |"
        )
    lines += ["", "| input | seconds | features |", "|---|---|---|"]
    lines += [f"| {r['input']} | {r['seconds']:.1f} | {r['features']:,} |" for r in readers]
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
