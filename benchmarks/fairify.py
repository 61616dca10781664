"""Fairify's Table II protocol with faircert's complete, partitioned verification, beside Fairify.

Run `python benchmarks/fairify.py [--models BM-1,GC-5] [--time-limit 120]`; writes
`benchmarks/results/fairify.md` and `.json` (`--out` changes the prefix).

* The 25 networks of `../shared/benchmarks/models` (.nnet), the integer domains of its README.
* Protected attribute as in Fairify's Table II: Bank age (0, binarised), German sex (19), Adult race
  (7, five values: every ordered pair of races in one encoding). Partition size MS 100 / 100 / 10
  (510 / 201 / 16,000 partitions).
* Budget: `--time-limit` seconds per model (the issue's protocol: 120 s, 1/15 of Fairify's 30
  minutes). Fairify's columns are its published Table II rows (papers/notes/fairify.md, §4.1).
* Targets: decided partitions (sat + unsat) >= Fairify's on every model; coverage 100% on Bank and
  German, >= 50% on every Adult model, at 120 s per model.
* Each model runs in a fresh process, one after the other; results are saved after each model, so
  an interrupted run keeps what it measured (`--report-only` rewrites the markdown).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "benchmarks" / "models"
OUT = ROOT / "benchmarks" / "results" / "fairify"

ADULT = [("age", 10, 100), ("workclass", 0, 6), ("education", 0, 15), ("education_num", 1, 16),
         ("marital_status", 0, 6), ("occupation", 0, 13), ("relationship", 0, 5), ("race", 0, 4), ("sex", 0, 1),
         ("capital_gain", 0, 19), ("capital_loss", 0, 19), ("hours_per_week", 1, 100), ("native_country", 0, 40)]
BANK = [("age", 0, 1), ("job", 0, 10), ("marital", 0, 2), ("education", 0, 6), ("default", 0, 1),
        ("housing", 0, 1), ("loan", 0, 1), ("contact", 0, 1), ("month", 0, 11), ("day_of_week", 0, 6),
        ("duration", 0, 5000), ("emp_var_rate", -3, 1), ("campaign", 1, 50), ("pdays", 0, 999), ("previous", 0, 7),
        ("poutcome", 0, 2)]
GERMAN = [("status", 0, 2), ("month", 0, 80), ("credit_history", 0, 2), ("purpose", 0, 9),
          ("credit_amount", 0, 20000), ("savings", 0, 2), ("employment", 0, 2),
          ("investment_as_income_percentage", 1, 4), ("other_debtors", 0, 2), ("residence_since", 1, 4),
          ("property", 0, 2), ("age", 0, 1), ("installment_plans", 0, 2), ("housing", 0, 2),
          ("number_of_credits", 1, 4), ("skill_level", 0, 3), ("people_liable_for", 1, 2), ("telephone", 0, 1),
          ("foreign_worker", 0, 1), ("sex", 0, 1)]
#: family -> (folder, domain, protected feature, partition size, total partitions)
SETUP = {"BM": ("bank", BANK, "age", 100, 510), "GC": ("german", GERMAN, "sex", 100, 201),
         "AC": ("adult", ADULT, "race", 10, 16000)}

#: Fairify's Table II (paper): verdict, #P attempted, coverage %, sat, unsat, unknown, mean s per partition.
FAIRIFY = {
    "BM-1": ("SAT", 75, 13.14, 9, 58, 8, 25.40), "BM-2": ("SAT", 141, 26.08, 30, 103, 8, 13.84),
    "BM-3": ("SAT", 139, 26.47, 27, 108, 4, 13.49), "BM-4": ("SAT", 37, 6.08, 1, 30, 6, 49.98),
    "BM-5": ("SAT", 510, 99.61, 114, 394, 2, 2.96), "BM-6": ("SAT", 510, 100.00, 156, 354, 0, 1.36),
    "BM-7": ("SAT", 124, 23.33, 62, 57, 5, 14.89), "BM-8": ("UNK", 23, 3.14, 0, 16, 7, 79.08),
    "GC-1": ("SAT", 31, 13.43, 27, 0, 4, 58.18), "GC-2": ("SAT", 11, 1.99, 4, 0, 7, 174.18),
    "GC-3": ("SAT", 201, 100.00, 195, 6, 0, 1.63), "GC-4": ("SAT", 201, 100.00, 2, 199, 0, 0.97),
    "GC-5": ("UNK", 12, 1.49, 0, 3, 9, 151.53),
    "AC-1": ("SAT", 29, 0.14, 8, 15, 6, 64.43), "AC-2": ("SAT", 15, 0.04, 4, 3, 8, 128.45),
    "AC-3": ("SAT", 23, 0.11, 16, 1, 6, 85.40), "AC-4": ("UNK", 8, 0.00, 0, 0, 8, 241.70),
    "AC-5": ("SAT", 10, 0.02, 3, 0, 7, 180.41), "AC-6": ("SAT", 19, 0.07, 6, 5, 8, 100.37),
    "AC-7": ("UNK", 14, 0.04, 0, 7, 7, 132.28), "AC-8": ("SAT", 101, 0.63, 82, 19, 0, 17.84),
    "AC-9": ("SAT", 741, 4.63, 399, 342, 0, 2.44), "AC-10": ("SAT", 20, 0.09, 6, 8, 6, 95.07),
    "AC-11": ("UNK", 9, 0.00, 0, 0, 9, 200.66), "AC-12": ("UNK", 16, 0.04, 0, 7, 9, 114.19),
}
ORDER = [f"BM-{i}" for i in range(1, 9)] + [f"GC-{i}" for i in range(1, 6)] + [f"AC-{i}" for i in range(1, 13)]
PROTOCOL_S = 120.0


def family(name: str) -> str:
    return name.split("-")[0]


def run_one(name: str, time_limit: float, seed: int) -> dict:
    """Decide every partition of one model (in a worker process) and return its figures."""
    from faircert.domain import Domain, Feature
    from faircert.engines.network.decide import decide_network
    from faircert.models.io.nnet import load_nnet
    from faircert.properties import individual_fairness

    folder, ranges, protected, ms, total = SETUP[family(name)]
    net = load_nnet(MODELS / folder / f"{name}.nnet")
    dom = Domain(tuple(Feature(n, "integer", lo, hi) for n, lo, hi in ranges))
    prop = individual_fairness(dom, [protected])
    t = time.perf_counter()
    res = decide_network(net, prop, time_limit=time_limit, partition_size=ms, seed=seed, max_counterexamples=5)
    wall = time.perf_counter() - t
    d = res.decision
    assert d["regions"] == total, (name, d["regions"], total)
    rows = res.partitions
    first_pair = next((r["seconds"] for r in rows if r["verdict"] == "unfair"), None)
    return dict(model=name, protected=protected, partition_size=ms, time_limit_s=time_limit, time_s=wall,
                verdict=res.verdict, partitions=total, unfair=d["unfair"], fair=d["fair"], unknown=d["unknown"],
                coverage=d["coverage"], partitions_per_s=(d["fair"] + d["unfair"]) / max(wall, 1e-9),
                milp_calls=res.stats["milp_calls"], milp_fair=res.stats["milp_fair"],
                milp_pairs=res.stats["milp_pairs"], milp_s=res.stats["milp_s"],
                boxes_bounded=res.stats["boxes_bounded"], pairs_rejected=res.stats["pairs_rejected"],
                evidence={k: sum(1 for r in rows if (r["evidence"] or "open") == k)
                          for k in {r["evidence"] or "open" for r in rows}},
                first_pair_partition_s=first_pair,
                counterexample=res.counterexamples[0].to_dict() if res.counterexamples else None)


def evaluate(rows: list[dict]) -> list[tuple[str, bool, str]]:
    checks = []
    behind = [r["model"] for r in rows if r["fair"] + r["unfair"] < FAIRIFY[r["model"]][3] + FAIRIFY[r["model"]][4]]
    checks.append(("decided partitions >= Fairify's on every model run", not behind,
                   f"{len(rows) - len(behind)}/{len(rows)} models" + (f"; behind: {', '.join(behind)}" if behind else "")))
    bg = [r for r in rows if family(r["model"]) in ("BM", "GC")]
    short = [r["model"] for r in bg if r["coverage"] < 1.0]
    checks.append(("coverage 100% on Bank and German", bool(bg) and not short,
                   f"{len(bg) - len(short)}/{len(bg)} models run" + (f"; below: {', '.join(short)}" if short else "")))
    ac = [r for r in rows if family(r["model"]) == "AC"]
    low = [f"{r['model']} ({100 * r['coverage']:.1f}%)" for r in ac if r["coverage"] < 0.5]
    checks.append((">= 50% coverage on every Adult model", bool(ac) and not low,
                   f"{len(ac) - len(low)}/{len(ac)} models run" + (f"; below: {', '.join(low)}" if low else "")))
    limits = sorted({r["time_limit_s"] for r in rows})
    if limits != [PROTOCOL_S]:
        checks.append(("run at the protocol's 120 s per model", False, f"limits used: {limits}"))
    missing = [m for m in ORDER if m not in {r["model"] for r in rows}]
    if missing:
        checks.append(("all 25 models run", False, f"not run: {', '.join(missing)}"))
    return checks


def report(rows: list[dict], meta: dict) -> None:
    rows = sorted(rows, key=lambda r: ORDER.index(r["model"]))
    lines = ["# Fairify's Table II: partitioned verification, faircert beside Fairify", "",
             f"Measured {meta['measured']} on {meta['machine']} ({meta['cpus']} cores shared with other work), "
             f"Python {meta['python']}, seed {meta['seed']}. Command: `{meta['command']}`.", "",
             "Protocol: the 25 networks and integer domains of `../shared/benchmarks`, protected Bank age / German "
             "sex / Adult race (5 values, all pairs in one encoding), partition size 100 / 100 / 10 (510 / 201 / "
             "16,000 partitions). faircert decides every partition with bounds, sampling, splitting and a MILP "
             "(HiGHS); every `unfair` partition holds a pair re-checked on the network, every `fair` one a proof. "
             "Fairify: its published Table II (30 min per model; #P = partitions it attempted).", "",
             "| model | PA | faircert s | verdict | unfair | fair | unknown | coverage % | partitions/s | MILP calls"
             " | Fairify verdict | Fairify #P | sat | unsat | unk | Fairify cov % | decided >= Fairify |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = FAIRIFY[r["model"]]
        ok = r["fair"] + r["unfair"] >= f[3] + f[4]
        lines.append(f"| {r['model']} | {r['protected']} | {r['time_s']:.1f} (limit {r['time_limit_s']:g}) | "
                     f"{r['verdict']} | {r['unfair']} | {r['fair']} | {r['unknown']} | {100 * r['coverage']:.2f} | "
                     f"{r['partitions_per_s']:.1f} | {r['milp_calls']} | {f[0]} | {f[1]} | {f[3]} | {f[4]} | {f[5]} | "
                     f"{f[2]:.2f} | {'PASS' if ok else 'FAIL'} |")
    lines += ["", "## Targets", ""]
    for what, ok, detail in evaluate(rows):
        lines.append(f"- **{'PASS' if ok else 'FAIL'}** {what}: {detail}")
    total_dec = sum(r["fair"] + r["unfair"] for r in rows)
    total_t = sum(r["time_s"] for r in rows)
    lines += ["", "## Rate and what remains", "",
              f"- Decided {total_dec:,} partitions in {total_t:.0f} s over the {len(rows)} models run: "
              f"{total_dec / max(total_t, 1e-9):.1f} partitions/s overall.",
              f"- Proofs (fair partitions): {sum(r['fair'] for r in rows):,}; of them by the MILP: "
              f"{sum(r['milp_fair'] for r in rows):,} boxes proven; re-checked pairs: "
              f"{sum(r['unfair'] for r in rows):,} partitions; candidate pairs rejected by the re-check: "
              f"{sum(r['pairs_rejected'] for r in rows)}."]
    for r in rows:
        if r["unknown"]:
            rate = (r["fair"] + r["unfair"]) / max(r["time_s"], 1e-9)
            lines.append(f"- {r['model']}: {r['unknown']:,} partitions open after {r['time_s']:.0f} s; at the "
                         f"run's average rate ({rate:.1f}/s) they would take about {r['unknown'] / max(rate, 1e-9):.0f}"
                         f" s more (the last ones are the hardest, so this is a lower estimate).")
    lines += ["", "Evidence per model (how each partition was settled):", ""]
    for r in rows:
        lines.append(f"- {r['model']}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["evidence"].items())))
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated subset, e.g. BM-1,GC-5 (default: all 25)")
    ap.add_argument("--time-limit", type=float, default=PROTOCOL_S, help="seconds per model (default 120)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-only", action="store_true", help="rewrite the markdown from the saved JSON")
    ap.add_argument("--keep", action="store_true", help="add to the saved JSON instead of starting afresh")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # worker mode: run one model, print its JSON
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.time_limit, args.seed)))
        return 0
    if not MODELS.is_dir():
        print(f"benchmark models not found at {MODELS}; skipping", file=sys.stderr)
        return 0
    saved = json.loads(OUT.with_suffix(".json").read_text()) if OUT.with_suffix(".json").exists() else None
    if args.report_only:
        report(saved["rows"], saved["meta"])
        return 0
    names = [m.strip() for m in args.models.split(",")] if args.models else ORDER
    rows = [r for r in saved["rows"] if r["model"] not in names] if (saved and args.keep) else []
    meta = dict(measured=time.strftime("%Y-%m-%d"), machine=platform.machine(), cpus=len(__import__("os").sched_getaffinity(0)),
                python=platform.python_version(), seed=args.seed,
                command="python benchmarks/fairify.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    for name in names:
        out = subprocess.run([sys.executable, __file__, "--one", name, "--time-limit", str(args.time_limit),
                              "--seed", str(args.seed)], capture_output=True, text=True)
        if out.returncode:
            print(f"{name}: failed\n{out.stderr}", file=sys.stderr)
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{name}: {row['verdict']} unfair {row['unfair']} fair {row['fair']} unknown {row['unknown']} "
              f"({100 * row['coverage']:.1f}%) in {row['time_s']:.1f} s", flush=True)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
        report(rows, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
