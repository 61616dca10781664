"""FairSquare's 39 benchmark problems (13 programs x 3 population models, epsilon = 0.15).

Run `python benchmarks/fairsquare.py [--time-limit 60] [--sampling-limit 5] [--only PATTERN]`;
writes `benchmarks/results/fairsquare.md` and `.json`: for each problem our sound verdict, final
ratio bounds and time, our sampling verdict (error probability 1e-6), samples and time, beside
FairSquare's Fig. 8 (result, #, Vol and QE seconds, 900 s + 900 s budgets, i7 4 GHz) and the
Monte-Carlo ratio of the notes (400k samples; the reference each verdict is checked against).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import faircert

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT.parent / "shared" / "benchmarks" / "programs" / "fairsquare"
OUT = ROOT / "benchmarks" / "results" / "fairsquare"

NAMES = {
    "DT_V2_D2_N4": "DT4",
    "DT_V2_D3_N14": "DT14",
    "DT_V2_D2_N16": "DT16",
    "DT_A": "DT16^a",
    "DT_V3_D2_N44": "DT44",
    "SVM_V3": "SVM3",
    "SVM_V4": "SVM4",
    "SVM_A": "SVM4^a",
    "SVM_V5": "SVM5",
    "SVM_V6": "SVM6",
    "NN_V2_H1": "NN2,1",
    "NN_V2_H2": "NN2,2",
    "NN_V3_H2": "NN3,2",
}
MODELS = {"ind": "Ind", "BN": "BN1", "BNc": "BN2"}

# FairSquare, Fig. 8 (published): result, #, Vol s, QE s per (program, model); "TO" = timeout.
FIG8 = {
    "DT4": {"Ind": ("fair", 10, 1.3, 0.5), "BN1": ("unfair", 12, 2.2, 0.9), "BN2": ("unfair", 18, 6.6, 2.2)},
    "DT14": {"Ind": ("fair", 20, 4.2, 1.4), "BN1": ("fair", 38, 52.3, 11.4), "BN2": ("fair", 73, 130.9, 33.6)},
    "DT16": {"Ind": ("fair", 21, 7.7, 2.0), "BN1": ("unfair", 22, 15.3, 6.3), "BN2": ("unfair", 22, 38.2, 14.3)},
    "DT16^a": {"Ind": ("fair", 18, 5.1, 3.0), "BN1": ("fair", 34, 32.0, 8.2), "BN2": ("fair", 40, 91.0, 19.4)},
    "DT44": {"Ind": ("fair", 55, 63.5, 9.8), "BN1": ("unfair", 113, 178.9, 94.3), "BN2": ("unfair", 406, 484.0, 222.4)},
    "SVM3": {"Ind": ("fair", 10, 2.6, 0.6), "BN1": ("unfair", 10, 3.7, 1.7), "BN2": ("unfair", 10, 10.8, 6.2)},
    "SVM4": {"Ind": ("fair", 10, 2.7, 0.8), "BN1": ("unfair", 18, 13.3, 3.1), "BN2": ("unfair", 14, 33.7, 20.1)},
    "SVM4^a": {"Ind": ("fair", 10, 3.0, 0.8), "BN1": ("fair", 22, 15.7, 3.2), "BN2": ("fair", 14, 33.4, 63.2)},
    "SVM5": {"Ind": ("fair", 10, 8.5, 1.3), "BN1": ("unfair", 10, 12.2, 6.3), "BN2": ("TO_q", None, None, "TO")},
    "SVM6": {
        "Ind": ("[0.02, 35.3]", 634, "TO", 2.4),
        "BN1": ("[0.09, 3.03]", 434, "TO", 12.8),
        "BN2": ("TO_q", None, None, "TO"),
    },
    "NN2,1": {"Ind": ("fair", 78, 21.6, 0.8), "BN1": ("fair", 466, 456.1, 3.4), "BN2": ("fair", 154, 132.9, 7.2)},
    "NN2,2": {"Ind": ("fair", 62, 27.8, 2.0), "BN1": ("fair", 238, 236.5, 7.2), "BN2": ("fair", 174, 233.5, 18.2)},
    "NN3,2": {
        "Ind": ("[0.03, 674.7]", 442, "TO", 10.0),
        "BN1": ("[0.00, 5.24]", 34, "TO", 55.9),
        "BN2": ("TO_q", None, None, "TO"),
    },
}
# Monte-Carlo ratio P[H|F]/P[H|M] from the notes (400k samples, +- 0.004..0.010).
MONTE_CARLO = {
    "DT4": (1.005, 0.377, 0.384),
    "DT14": (0.985, 0.979, 0.995),
    "DT16": (0.996, 0.525, 0.528),
    "DT16^a": (1.432, 0.970, 0.972),
    "DT44": (1.006, 0.699, 0.702),
    "SVM3": (1.005, 0.661, 0.666),
    "SVM4": (0.997, 0.666, 0.662),
    "SVM4^a": (1.282, 1.028, 1.025),
    "SVM5": (1.003, 0.662, 0.666),
    "SVM6": (0.989, 0.663, 0.663),
    "NN2,1": (1.002, 0.995, 1.000),
    "NN2,2": (1.004, 1.002, 1.002),
    "NN3,2": (0.994, 0.882, 0.882),
}


def problems(only: str | None) -> list[tuple[str, str, Path]]:
    out = []
    for tag, name in NAMES.items():
        for key, model in MODELS.items():
            path = PROGRAMS / f"M_{key}_F_{tag}.fr"
            if only and only not in path.name and only != name:
                continue
            out.append((name, model, path))
    return out


def fmt(x: float) -> str:
    return "inf" if x == float("inf") else f"{x:.3f}"


def run(args: argparse.Namespace) -> dict:
    rows = []
    for name, model, path in problems(args.only):
        mc = MONTE_CARLO[name][list(MODELS.values()).index(model)]
        expected = "fair" if mc > 1 - args.epsilon else "unfair"
        sound = faircert.verify_program(path, epsilon=args.epsilon, time_limit=args.time_limit)
        row = {
            "program": name,
            "model": model,
            "file": path.name,
            "monte_carlo_ratio": mc,
            "expected": expected,
            "sound": {
                "verdict": sound.verdict,
                "ratio": [sound.ratio_low, sound.ratio_high],
                "elapsed_s": round(sound.elapsed_s, 3),
                "boxes_evaluated": sound.stats["box_evaluations"],
                "random_inputs": sound.stats["random_inputs"],
                "stopped": sound.stopped,
            },
        }
        if not args.skip_sampling:
            sampled = faircert.verify_program(
                path,
                epsilon=args.epsilon,
                time_limit=args.sampling_limit,
                method="sampling",
                delta=args.delta,
                seed=args.seed,
            )
            row["sampling"] = {
                "verdict": sampled.verdict,
                "ratio": [sampled.ratio_low, sampled.ratio_high],
                "samples": sampled.samples,
                "elapsed_s": round(sampled.elapsed_s, 3),
            }
        fs = FIG8[name][model]
        row["fairsquare"] = {"result": fs[0], "calls": fs[1], "vol_s": fs[2], "qe_s": fs[3]}
        rows.append(row)
        s = row["sound"]
        print(
            f"{name:7s} {model:4s} sound {s['verdict']:7s} [{fmt(s['ratio'][0])}, {fmt(s['ratio'][1])}] "
            f"{s['elapsed_s']:6.2f}s"
            + (
                f" | sampling {row['sampling']['verdict']:7s} {row['sampling']['elapsed_s']:5.2f}s"
                if "sampling" in row
                else ""
            )
            + f" | MC {mc:.3f} | FairSquare {fs[0]}",
            flush=True,
        )
    return {
        "epsilon": args.epsilon,
        "time_limit_s": args.time_limit,
        "sampling_limit_s": args.sampling_limit,
        "delta": args.delta,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "rows": rows,
    }


def summarise(data: dict) -> dict:
    rows = data["rows"]
    sound_decided = [r for r in rows if r["sound"]["verdict"] != "unknown"]
    out = {
        "problems": len(rows),
        "sound_decided": len(sound_decided),
        "sound_consistent": sum(r["sound"]["verdict"] == r["expected"] for r in sound_decided),
        "sound_fair": sum(r["sound"]["verdict"] == "fair" for r in rows),
        "sound_unfair": sum(r["sound"]["verdict"] == "unfair" for r in rows),
        "sound_max_s": max((r["sound"]["elapsed_s"] for r in rows), default=0.0),
        "sound_total_s": round(sum(r["sound"]["elapsed_s"] for r in rows), 2),
        "fairsquare_solved": sum(r["fairsquare"]["result"] in ("fair", "unfair") for r in rows),
    }
    sampled = [r for r in rows if "sampling" in r]
    if sampled:
        out.update(
            sampling_decided=sum(r["sampling"]["verdict"] != "unknown" for r in sampled),
            sampling_consistent=sum(r["sampling"]["verdict"] == r["expected"] for r in sampled),
            sampling_max_s=max(r["sampling"]["elapsed_s"] for r in sampled),
        )
    return out


def markdown(data: dict, summary: dict) -> str:
    sym = {"fair": "fair", "unfair": "unfair", "unknown": "unknown"}
    lines = [
        "# FairSquare benchmarks: group fairness of 13 programs x 3 population models (epsilon = 0.15)",
        "",
        f"Measured by `python benchmarks/fairsquare.py` on {data['machine']} (shared with other jobs), "
        f"Python {data['python']}. Sound: probability bounds by CDF-space box refinement, time limit "
        f"{data['time_limit_s']:g} s per problem. Sampling: sequential test, P[wrong verdict] <= "
        f"{data['delta']:g}, time limit {data['sampling_limit_s']:g} s. FairSquare: Fig. 8 of the paper "
        "(900 s sampling + 900 s quantifier elimination, i7 4 GHz); `#` = its SMT calls, Vol/QE its seconds. "
        "MC: Monte-Carlo ratio P[H|F]/P[H|M] from the notes (400k samples, +-0.004..0.010); `ok` = our "
        "verdict agrees with MC > 0.85.",
        "",
        f"**Sound: {summary['sound_decided']}/{summary['problems']} decided "
        f"({summary['sound_fair']} fair, {summary['sound_unfair']} unfair), "
        f"{summary['sound_consistent']}/{summary['sound_decided']} consistent with Monte Carlo, slowest "
        f"{summary['sound_max_s']:.2f} s, all {summary['sound_total_s']:.1f} s.** "
        f"FairSquare: {summary['fairsquare_solved']}/39 solved.",
    ]
    if "sampling_decided" in summary:
        lines += [
            "",
            f"**Sampling: {summary['sampling_decided']}/{summary['problems']} decided, "
            f"{summary['sampling_consistent']} consistent with Monte Carlo, slowest "
            f"{summary['sampling_max_s']:.2f} s.**",
        ]
    lines += [
        "",
        "| program | model | MC ratio | sound verdict | ratio bounds | sound s | sampling verdict | samples "
        "| sampling s | FairSquare result | # | Vol s | QE s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        s = r["sound"]
        ok = " ok" if s["verdict"] == r["expected"] else (" **MISMATCH**" if s["verdict"] != "unknown" else "")
        sp = r.get("sampling")
        sp_cells = (
            (
                f"{sym[sp['verdict']]}{' ok' if sp['verdict'] == r['expected'] else ''} | {sp['samples']:,} | "
                f"{sp['elapsed_s']:.2f}"
            )
            if sp
            else "- | - | -"
        )
        fs = r["fairsquare"]
        lines.append(
            f"| {r['program']} | {r['model']} | {r['monte_carlo_ratio']:.3f} | {sym[s['verdict']]}{ok} | "
            f"[{fmt(s['ratio'][0])}, {fmt(s['ratio'][1])}] | {s['elapsed_s']:.2f} | {sp_cells} | {fs['result']} | "
            f"{fs['calls'] if fs['calls'] is not None else '-'} | {fs['vol_s'] if fs['vol_s'] is not None else '-'} | "
            f"{fs['qe_s']} |"
        )
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--sampling-limit", type=float, default=5.0)
    p.add_argument("--epsilon", type=float, default=0.15)
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", help="run only files/programs matching this (results are then not written)")
    p.add_argument("--skip-sampling", action="store_true")
    args = p.parse_args()
    if not PROGRAMS.is_dir():
        print(f"benchmark programs not found at {PROGRAMS}", file=sys.stderr)
        return 1
    start = time.perf_counter()
    data = run(args)
    summary = summarise(data)
    data["summary"] = summary
    print(json.dumps(summary), f"({time.perf_counter() - start:.0f} s)")
    if args.only:
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    OUT.with_suffix(".md").write_text(markdown(data, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
