"""Fairify's Table II protocol with faircert's complete, partitioned verification, beside Fairify.

Run `python benchmarks/fairify.py [--models BM-1,GC-5] [--time-limit 120] [--query r1]`; writes
`benchmarks/results/fairify.md` and `.json` (Table II), or with `--query r1|r2|t1|t2` (Table IV's
relaxed and targeted queries) `benchmarks/results/fairify_queries.md` and `.json`.

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
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "benchmarks" / "models"
OUT = ROOT / "benchmarks" / "results" / "fairify"
OUT_QUERIES = ROOT / "benchmarks" / "results" / "fairify_queries"

ADULT = [
    ("age", 10, 100),
    ("workclass", 0, 6),
    ("education", 0, 15),
    ("education_num", 1, 16),
    ("marital_status", 0, 6),
    ("occupation", 0, 13),
    ("relationship", 0, 5),
    ("race", 0, 4),
    ("sex", 0, 1),
    ("capital_gain", 0, 19),
    ("capital_loss", 0, 19),
    ("hours_per_week", 1, 100),
    ("native_country", 0, 40),
]
BANK = [
    ("age", 0, 1),
    ("job", 0, 10),
    ("marital", 0, 2),
    ("education", 0, 6),
    ("default", 0, 1),
    ("housing", 0, 1),
    ("loan", 0, 1),
    ("contact", 0, 1),
    ("month", 0, 11),
    ("day_of_week", 0, 6),
    ("duration", 0, 5000),
    ("emp_var_rate", -3, 1),
    ("campaign", 1, 50),
    ("pdays", 0, 999),
    ("previous", 0, 7),
    ("poutcome", 0, 2),
]
GERMAN = [
    ("status", 0, 2),
    ("month", 0, 80),
    ("credit_history", 0, 2),
    ("purpose", 0, 9),
    ("credit_amount", 0, 20000),
    ("savings", 0, 2),
    ("employment", 0, 2),
    ("investment_as_income_percentage", 1, 4),
    ("other_debtors", 0, 2),
    ("residence_since", 1, 4),
    ("property", 0, 2),
    ("age", 0, 1),
    ("installment_plans", 0, 2),
    ("housing", 0, 2),
    ("number_of_credits", 1, 4),
    ("skill_level", 0, 3),
    ("people_liable_for", 1, 2),
    ("telephone", 0, 1),
    ("foreign_worker", 0, 1),
    ("sex", 0, 1),
]
#: family -> (folder, domain, protected feature, partition size, total partitions)
SETUP = {
    "BM": ("bank", BANK, "age", 100, 510),
    "GC": ("german", GERMAN, "sex", 100, 201),
    "AC": ("adult", ADULT, "race", 10, 16000),
}

#: Fairify's Table II (paper): verdict, #P attempted, coverage %, sat, unsat, unknown, mean s per partition.
FAIRIFY = {
    "BM-1": ("SAT", 75, 13.14, 9, 58, 8, 25.40),
    "BM-2": ("SAT", 141, 26.08, 30, 103, 8, 13.84),
    "BM-3": ("SAT", 139, 26.47, 27, 108, 4, 13.49),
    "BM-4": ("SAT", 37, 6.08, 1, 30, 6, 49.98),
    "BM-5": ("SAT", 510, 99.61, 114, 394, 2, 2.96),
    "BM-6": ("SAT", 510, 100.00, 156, 354, 0, 1.36),
    "BM-7": ("SAT", 124, 23.33, 62, 57, 5, 14.89),
    "BM-8": ("UNK", 23, 3.14, 0, 16, 7, 79.08),
    "GC-1": ("SAT", 31, 13.43, 27, 0, 4, 58.18),
    "GC-2": ("SAT", 11, 1.99, 4, 0, 7, 174.18),
    "GC-3": ("SAT", 201, 100.00, 195, 6, 0, 1.63),
    "GC-4": ("SAT", 201, 100.00, 2, 199, 0, 0.97),
    "GC-5": ("UNK", 12, 1.49, 0, 3, 9, 151.53),
    "AC-1": ("SAT", 29, 0.14, 8, 15, 6, 64.43),
    "AC-2": ("SAT", 15, 0.04, 4, 3, 8, 128.45),
    "AC-3": ("SAT", 23, 0.11, 16, 1, 6, 85.40),
    "AC-4": ("UNK", 8, 0.00, 0, 0, 8, 241.70),
    "AC-5": ("SAT", 10, 0.02, 3, 0, 7, 180.41),
    "AC-6": ("SAT", 19, 0.07, 6, 5, 8, 100.37),
    "AC-7": ("UNK", 14, 0.04, 0, 7, 7, 132.28),
    "AC-8": ("SAT", 101, 0.63, 82, 19, 0, 17.84),
    "AC-9": ("SAT", 741, 4.63, 399, 342, 0, 2.44),
    "AC-10": ("SAT", 20, 0.09, 6, 8, 6, 95.07),
    "AC-11": ("UNK", 9, 0.00, 0, 0, 9, 200.66),
    "AC-12": ("UNK", 16, 0.04, 0, 7, 9, 114.19),
}
#: Fairify's Table IV (paper, transposed back to one block per query): verdict, #P, sat, unsat, unk.
FAIRIFY_QUERIES = {
    "r1": {
        "BM-1": ("SAT", 333, 40, 279, 14),
        "BM-2": ("SAT", 566, 65, 493, 8),
        "BM-3": ("SAT", 1600, 233, 1358, 9),
        "BM-4": ("SAT", 132, 10, 111, 11),
        "BM-5": ("SAT", 4915, 731, 4180, 4),
        "BM-6": ("SAT", 8671, 1484, 7187, 0),
        "BM-7": ("SAT", 590, 168, 411, 11),
        "BM-8": ("SAT", 112, 11, 87, 14),
        "GC-1": ("SAT", 111, 107, 0, 4),
        "GC-2": ("SAT", 32, 24, 2, 6),
        "GC-3": ("SAT", 2697, 2026, 671, 0),
        "GC-4": ("SAT", 9695, 185, 9510, 0),
        "GC-5": ("UNK", 9, 0, 0, 9),
        "AC-1": ("SAT", 216, 9, 193, 14),
        "AC-2": ("SAT", 75, 8, 55, 12),
        "AC-3": ("SAT", 129, 34, 86, 9),
        "AC-4": ("SAT", 41, 5, 22, 14),
        "AC-5": ("SAT", 37, 3, 18, 16),
        "AC-6": ("SAT", 177, 28, 133, 16),
        "AC-7": ("UNK", 66, 0, 53, 13),
        "AC-8": ("SAT", 639, 218, 418, 3),
        "AC-9": ("SAT", 3991, 483, 3508, 0),
        "AC-10": ("SAT", 216, 19, 192, 5),
        "AC-11": ("UNK", 31, 0, 13, 18),
        "AC-12": ("UNK", 123, 0, 107, 16),
    },
    "r2": {
        "BM-1": ("SAT", 968, 65, 890, 13),
        "BM-2": ("SAT", 1514, 110, 1396, 8),
        "BM-3": ("SAT", 2768, 208, 2550, 10),
        "BM-4": ("SAT", 157, 10, 143, 4),
        "BM-5": ("SAT", 7601, 583, 7014, 4),
        "BM-6": ("SAT", 13779, 1200, 12579, 0),
        "BM-7": ("SAT", 1340, 187, 1151, 2),
        "BM-8": ("SAT", 188, 6, 167, 15),
        "GC-1": ("SAT", 116, 106, 1, 9),
        "GC-2": ("SAT", 30, 16, 2, 12),
        "GC-3": ("SAT", 3175, 2343, 832, 0),
        "GC-4": ("SAT", 8361, 79, 8282, 0),
        "GC-5": ("UNK", 20, 0, 2, 18),
        "AC-1": ("SAT", 210, 47, 157, 6),
        "AC-2": ("SAT", 74, 20, 45, 9),
        "AC-3": ("SAT", 124, 84, 35, 5),
        "AC-4": ("SAT", 30, 13, 5, 12),
        "AC-5": ("SAT", 27, 11, 3, 13),
        "AC-6": ("SAT", 117, 47, 56, 14),
        "AC-7": ("UNK", 44, 0, 31, 13),
        "AC-8": ("SAT", 402, 182, 220, 0),
        "AC-9": ("SAT", 4811, 1294, 3517, 0),
        "AC-10": ("SAT", 164, 34, 128, 2),
        "AC-11": ("UNK", 18, 0, 0, 18),
        "AC-12": ("SAT", 53, 1, 36, 16),
    },
    "t1": {
        "BM-1": ("SAT", 261, 34, 216, 11),
        "BM-2": ("SAT", 546, 61, 479, 6),
        "BM-3": ("SAT", 1541, 208, 1322, 11),
        "BM-4": ("SAT", 92, 9, 72, 11),
        "BM-5": ("SAT", 5937, 881, 5050, 6),
        "BM-6": ("SAT", 12233, 1939, 10294, 0),
        "BM-7": ("SAT", 544, 157, 374, 13),
        "BM-8": ("SAT", 90, 8, 67, 15),
        "GC-1": ("SAT", 162, 153, 0, 9),
        "GC-2": ("SAT", 32, 17, 2, 13),
        "GC-3": ("SAT", 3810, 2786, 1023, 1),
        "GC-4": ("SAT", 11067, 96, 10971, 0),
        "GC-5": ("UNK", 18, 0, 0, 18),
        "AC-1": ("SAT", 223, 55, 160, 8),
        "AC-2": ("SAT", 67, 16, 37, 14),
        "AC-3": ("SAT", 115, 75, 32, 8),
        "AC-4": ("SAT", 25, 7, 3, 15),
        "AC-5": ("SAT", 23, 8, 1, 14),
        "AC-6": ("SAT", 111, 52, 47, 12),
        "AC-7": ("UNK", 38, 0, 26, 12),
        "AC-8": ("SAT", 448, 179, 266, 3),
        "AC-9": ("SAT", 6800, 1624, 5176, 0),
        "AC-10": ("SAT", 108, 23, 81, 4),
        "AC-11": ("UNK", 18, 0, 0, 18),
        "AC-12": ("UNK", 68, 0, 50, 18),
    },
    "t2": {
        "BM-1": ("SAT", 432, 57, 361, 14),
        "BM-2": ("SAT", 683, 76, 602, 5),
        "BM-3": ("SAT", 1987, 270, 1705, 12),
        "BM-4": ("SAT", 108, 10, 87, 11),
        "BM-5": ("SAT", 6474, 904, 5569, 1),
        "BM-6": ("SAT", 13855, 2224, 11631, 0),
        "BM-7": ("SAT", 986, 285, 693, 8),
        "BM-8": ("SAT", 89, 11, 64, 14),
        "GC-1": ("SAT", 187, 175, 4, 8),
        "GC-2": ("SAT", 46, 28, 7, 11),
        "GC-3": ("SAT", 5957, 3534, 2422, 1),
        "GC-4": ("SAT", 13426, 63, 13363, 0),
        "GC-5": ("UNK", 18, 0, 0, 18),
        "AC-1": ("SAT", 281, 61, 214, 6),
        "AC-2": ("SAT", 85, 18, 58, 9),
        "AC-3": ("SAT", 119, 79, 33, 7),
        "AC-4": ("SAT", 35, 14, 8, 13),
        "AC-5": ("SAT", 33, 16, 4, 13),
        "AC-6": ("SAT", 119, 51, 57, 11),
        "AC-7": ("UNK", 43, 0, 26, 17),
        "AC-8": ("SAT", 677, 309, 368, 0),
        "AC-9": ("SAT", 6781, 1765, 5016, 0),
        "AC-10": ("SAT", 164, 36, 125, 3),
        "AC-11": ("UNK", 18, 0, 0, 18),
        "AC-12": ("SAT", 59, 1, 41, 17),
    },
}
#: The queries, per family: epsilon, features added to the protected ones (Fairify's "any value":
#: the twin takes another combination), domain restrictions (targeted).
QUERIES = {
    "r1": {"BM": ({"duration": 5}, [], {}), "GC": ({"credit_amount": 100}, [], {}), "AC": ({}, ["marital_status"], {})},
    "r2": {"BM": ({}, ["job"], {}), "GC": ({}, ["foreign_worker"], {}), "AC": ({"age": 5}, [], {})},
    "t1": {
        "BM": ({}, [], {"loan": (1, 1), "job": (2, 2)}),
        "GC": ({}, [], {"number_of_credits": (2, 2)}),
        "AC": ({}, [], {"age": (30, 35)}),
    },
    "t2": {
        "BM": ({}, [], {"poutcome": (2, 2)}),
        "GC": ({}, [], {"foreign_worker": (0, 0), "purpose": (7, 7)}),
        "AC": ({}, [], {"education": (9, 10)}),
    },
}
QUERY_WORDS = {
    "r1": "relaxed 1: BM |duration| <= 5, GC |credit_amount| <= 100, AC marital status any",
    "r2": "relaxed 2: BM job any, GC foreign worker any, AC |age| <= 5",
    "t1": "targeted 1: BM loan & entrepreneur, GC 2 credits, AC 30 <= age <= 35",
    "t2": "targeted 2: BM previous marketing success, GC foreign worker & education purpose, AC bachelor or doctorate",
}
ORDER = [f"BM-{i}" for i in range(1, 9)] + [f"GC-{i}" for i in range(1, 6)] + [f"AC-{i}" for i in range(1, 13)]
PROTOCOL_S = 120.0


def family(name: str) -> str:
    return name.split("-")[0]


def load_case(name: str, query: str = "table2"):
    """(network, property, partition size) of one model under Table II's protocol or a Table IV query."""
    from faircert.domain import Domain, Feature
    from faircert.models.io.nnet import load_nnet
    from faircert.properties import individual_fairness

    folder, ranges, protected, ms, _ = SETUP[family(name)]
    eps, extra, region = QUERIES[query][family(name)] if query != "table2" else ({}, [], {})
    net = load_nnet(MODELS / folder / f"{name}.nnet")
    dom = Domain(tuple(Feature(n, "integer", *region.get(n, (lo, hi))) for n, lo, hi in ranges))
    return net, individual_fairness(dom, [protected] + extra, epsilon=eps or None), ms


def run_one(name: str, time_limit: float, seed: int, query: str = "table2") -> dict:
    """Decide every partition of one model (in a worker process) and return its figures."""
    from faircert.engines.network.decide import decide_network

    net, prop, ms = load_case(name, query)
    t = time.perf_counter()
    res = decide_network(net, prop, time_limit=time_limit, partition_size=ms, seed=seed, max_counterexamples=5)
    wall = time.perf_counter() - t
    d = res.decision
    if query == "table2":
        total = SETUP[family(name)][4]
        assert d["regions"] == total, (name, d["regions"], total)
    rows = res.partitions
    first_pair = next((r["seconds"] for r in rows if r["verdict"] == "unfair"), None)
    return dict(
        model=name,
        query=query,
        protected="+".join([SETUP[family(name)][2]] + (QUERIES[query][family(name)][1] if query != "table2" else [])),
        partition_size=ms,
        time_limit_s=time_limit,
        time_s=wall,
        verdict=res.verdict,
        partitions=d["regions"],
        unfair=d["unfair"],
        fair=d["fair"],
        unknown=d["unknown"],
        coverage=d["coverage"],
        partitions_per_s=(d["fair"] + d["unfair"]) / max(wall, 1e-9),
        milp_calls=res.stats["milp_calls"],
        milp_fair=res.stats["milp_fair"],
        milp_pairs=res.stats["milp_pairs"],
        milp_s=res.stats["milp_s"],
        boxes_bounded=res.stats["boxes_bounded"],
        pairs_rejected=res.stats["pairs_rejected"],
        evidence={
            k: sum(1 for r in rows if (r["evidence"] or "open") == k) for k in {r["evidence"] or "open" for r in rows}
        },
        first_pair_partition_s=first_pair,
        counterexample=res.counterexamples[0].to_dict() if res.counterexamples else None,
    )


def evaluate(rows: list[dict]) -> list[tuple[str, bool, str]]:
    checks = []
    behind = [r["model"] for r in rows if r["fair"] + r["unfair"] < FAIRIFY[r["model"]][3] + FAIRIFY[r["model"]][4]]
    checks.append(
        (
            "decided partitions >= Fairify's on every model run",
            not behind,
            f"{len(rows) - len(behind)}/{len(rows)} models" + (f"; behind: {', '.join(behind)}" if behind else ""),
        )
    )
    bg = [r for r in rows if family(r["model"]) in ("BM", "GC")]
    short = [r["model"] for r in bg if r["coverage"] < 1.0]
    checks.append(
        (
            "coverage 100% on Bank and German",
            bool(bg) and not short,
            f"{len(bg) - len(short)}/{len(bg)} models run" + (f"; below: {', '.join(short)}" if short else ""),
        )
    )
    ac = [r for r in rows if family(r["model"]) == "AC"]
    low = [f"{r['model']} ({100 * r['coverage']:.1f}%)" for r in ac if r["coverage"] < 0.5]
    checks.append(
        (
            ">= 50% coverage on every Adult model",
            bool(ac) and not low,
            f"{len(ac) - len(low)}/{len(ac)} models run" + (f"; below: {', '.join(low)}" if low else ""),
        )
    )
    limits = sorted({r["time_limit_s"] for r in rows})
    if limits != [PROTOCOL_S]:
        checks.append(("run at the protocol's 120 s per model", False, f"limits used: {limits}"))
    missing = [m for m in ORDER if m not in {r["model"] for r in rows}]
    if missing:
        checks.append(("all 25 models run", False, f"not run: {', '.join(missing)}"))
    return checks


def report(rows: list[dict], meta: dict) -> None:
    rows = sorted(rows, key=lambda r: ORDER.index(r["model"]))
    lines = [
        "# Fairify's Table II: partitioned verification, faircert beside Fairify",
        "",
        f"Measured {meta['measured']} at revision {meta.get('revision', '?')} on {meta['machine']} "
        f"({meta['cpus']} cores shared with other work), Python {meta['python']}, seed {meta['seed']}. "
        f"Command: `{meta['command']}`.",
        "",
        "Protocol: the 25 networks and integer domains of `../shared/benchmarks`, protected Bank age / German "
        "sex / Adult race (5 values, all pairs in one encoding), partition size 100 / 100 / 10 (510 / 201 / "
        "16,000 partitions). faircert decides every partition with bounds, sampling, splitting and a MILP "
        "(HiGHS); every `unfair` partition holds a pair re-checked on the network, every `fair` one a proof. "
        "Fairify: its published Table II (30 min per model; #P = partitions it attempted).",
        "",
        "| model | PA | faircert s | verdict | unfair | fair | unknown | coverage % | partitions/s | MILP calls"
        " | Fairify verdict | Fairify #P | sat | unsat | unk | Fairify cov % | decided >= Fairify |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = FAIRIFY[r["model"]]
        ok = r["fair"] + r["unfair"] >= f[3] + f[4]
        lines.append(
            f"| {r['model']} | {r['protected']} | {r['time_s']:.1f} (limit {r['time_limit_s']:g}) | "
            f"{r['verdict']} | {r['unfair']} | {r['fair']} | {r['unknown']} | {100 * r['coverage']:.2f} | "
            f"{r['partitions_per_s']:.1f} | {r['milp_calls']} | {f[0]} | {f[1]} | {f[3]} | {f[4]} | {f[5]} | "
            f"{f[2]:.2f} | {'PASS' if ok else 'FAIL'} |"
        )
    lines += ["", "## Targets", ""]
    for what, ok, detail in evaluate(rows):
        lines.append(f"- **{'PASS' if ok else 'FAIL'}** {what}: {detail}")
    total_dec = sum(r["fair"] + r["unfair"] for r in rows)
    total_t = sum(r["time_s"] for r in rows)
    lines += [
        "",
        "## Rate and what remains",
        "",
        f"- Decided {total_dec:,} partitions in {total_t:.0f} s over the {len(rows)} models run: "
        f"{total_dec / max(total_t, 1e-9):.1f} partitions/s overall.",
        f"- Proofs (fair partitions): {sum(r['fair'] for r in rows):,}; of them by the MILP: "
        f"{sum(r['milp_fair'] for r in rows):,} boxes proven; re-checked pairs: "
        f"{sum(r['unfair'] for r in rows):,} partitions; candidate pairs rejected by the re-check: "
        f"{sum(r['pairs_rejected'] for r in rows)}.",
    ]
    full = [r for r in rows if FAIRIFY[r["model"]][2] == 100.0 and r["unknown"] == 0]
    if full:
        same = [r["model"] for r in full if (r["unfair"], r["fair"]) == FAIRIFY[r["model"]][3:5]]
        lines.append(
            f"- Where Fairify decided every partition ({', '.join(r['model'] for r in full)}), faircert's "
            f"unfair/fair counts equal its sat/unsat counts on {len(same)} of {len(full)} "
            f"({', '.join(same) or 'none'}): an independent check of both tools' verdicts."
        )
    for r in rows:
        if r["unknown"]:
            lines.append(
                f"- {r['model']}: {r['unknown']:,} partitions open after {r['time_s']:.0f} s "
                f"({r['partitions_per_s']:.1f} decided/s on average; the open ones are those neither the "
                f"bounds, the pair search nor {r['milp_calls']} MILP calls settled, so they cost more than "
                f"the average)."
            )
    lines += ["", "Evidence per model (how each partition was settled):", ""]
    for r in rows:
        lines.append(f"- {r['model']}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["evidence"].items())))
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")


def report_queries(rows: list[dict], meta: dict) -> None:
    """Table IV: relaxed and targeted queries, one block per query, beside Fairify's."""
    lines = [
        "# Fairify's Table IV: relaxed and targeted queries, faircert beside Fairify",
        "",
        f"Measured {meta['measured']} at revision {meta.get('revision', '?')} on {meta['machine']} "
        f"({meta['cpus']} cores shared with other work), Python {meta['python']}, seed {meta['seed']}. "
        f"Command: `{meta['command']}`.",
        "",
        "Same networks, domains and protected attributes as Table II. faircert uses Table II's partition "
        "sizes (100 / 100 / 10; Fairify used 10 / 10 / 6 here, which would make over a million Bank "
        "partitions), so partition counts differ and are not compared: compare verdicts and coverage. Relaxed twins "
        'stay in the domain and take another protected value; Fairify\'s "any value" of a categorical '
        "feature is asked by adding it to the protected ones (the twin takes another combination). "
        "Targeted queries restrict the domain. Fairify: 1 h per model, #P = partitions it attempted. One run "
        "per query (`--query r1` ... `t2`); the time limit per model is in each row.",
        "",
    ]
    ours = sum(r["verdict"] != "unknown" for r in rows)
    theirs = sum(FAIRIFY_QUERIES[r["query"]][r["model"]][0] != "UNK" for r in rows)
    lines += [
        f"Summary: faircert decides {ours} of the {len(rows)} model-query cells run (a re-checked pair or a "
        f"proof) within the time limit in each row; Fairify decided {theirs} of them in 1 h each.",
        "",
    ]
    for q in ("r1", "r2", "t1", "t2"):
        block = sorted((r for r in rows if r["query"] == q), key=lambda r: ORDER.index(r["model"]))
        if not block:
            continue
        lines += [
            f"## {QUERY_WORDS[q]}",
            "",
            "| model | faircert s | verdict | partitions | unfair | fair | unknown | coverage % | Fairify verdict "
            "| #P | sat | unsat | unk | verdict vs Fairify |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in block:
            f = FAIRIFY_QUERIES[q][r["model"]]
            words = {"unfair": "SAT", "fair": "UNSAT", "unknown": "UNK"}
            ours = words[r["verdict"]]
            ok = (
                "same"
                if ours == f[0]
                else f"decided ({f[0]} in Fairify)"
                if f[0] == "UNK"
                else f"{ours} here, {f[0]} in Fairify"
            )
            lines.append(
                f"| {r['model']} | {r['time_s']:.1f} (limit {r['time_limit_s']:g}) | {r['verdict']} | "
                f"{r['partitions']} | {r['unfair']} | {r['fair']} | {r['unknown']} | "
                f"{100 * r['coverage']:.2f} | {f[0]} | {f[1]} | {f[2]} | {f[3]} | {f[4]} | {ok} |"
            )
        lines.append("")
    OUT_QUERIES.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated subset, e.g. BM-1,GC-5 (default: all 25)")
    ap.add_argument("--time-limit", type=float, default=PROTOCOL_S, help="seconds per model (default 120)")
    ap.add_argument(
        "--query",
        default="table2",
        choices=["table2", *QUERIES],
        help="table2 (default) or a Table IV query: r1, r2 (relaxed), t1, t2 (targeted)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-only", action="store_true", help="rewrite the markdown from the saved JSON")
    ap.add_argument("--keep", action="store_true", help="add to the saved JSON instead of starting afresh")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # worker mode: run one model, print its JSON
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.time_limit, args.seed, args.query)))
        return 0
    if not MODELS.is_dir():
        print(f"benchmark models not found at {MODELS}; skipping", file=sys.stderr)
        return 0
    table2 = args.query == "table2"
    out, write = (OUT, report) if table2 else (OUT_QUERIES, report_queries)
    saved = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else None
    if args.report_only:
        write(saved["rows"], saved["meta"])
        return 0
    names = [m.strip() for m in args.models.split(",")] if args.models else ORDER
    same = (lambda r: r["model"] in names) if table2 else (lambda r: r["query"] == args.query and r["model"] in names)
    rows = [r for r in saved["rows"] if not same(r)] if (saved and (args.keep or not table2)) else []
    rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    meta = dict(
        measured=time.strftime("%Y-%m-%d"),
        revision=rev,
        machine=platform.machine(),
        cpus=len(os.sched_getaffinity(0)),
        python=platform.python_version(),
        seed=args.seed,
        command="python benchmarks/fairify.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    )
    for name in names:
        res = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                name,
                "--time-limit",
                str(args.time_limit),
                "--seed",
                str(args.seed),
                "--query",
                args.query,
            ],
            capture_output=True,
            text=True,
        )
        if res.returncode:
            print(f"{name}: failed\n{res.stderr}", file=sys.stderr)
            continue
        row = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{args.query} {name}: {row['verdict']} unfair {row['unfair']} fair {row['fair']} unknown "
            f"{row['unknown']} ({100 * row['coverage']:.1f}%) in {row['time_s']:.1f} s",
            flush=True,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
        write(rows, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
