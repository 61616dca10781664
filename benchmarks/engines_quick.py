"""One quick workload per engine, timed on this checkout and on a baseline revision.

For changes that should not move performance (a restructuring, a new seam), this checks that no
engine slowed down beyond noise. Both revisions are checked out in temporary git worktrees (so the
working tree may change while it runs). Each workload is one `faircert` command on files prepared once
(benchmark networks and programs, XGBoost models and a logistic regression trained on the
benchmark data), so the same command runs on both revisions, each with its own `src/` first on
PYTHONPATH. Runs alternate between the
two revisions (A B A B ...) so load on the machine affects both alike; the table gives the median
wall time of each and their ratio.

    python benchmarks/engines_quick.py --baseline REV [--head REV] [--repeats 3]

Writes benchmarks/results/engines_quick.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from trees_data import DATASETS  # noqa: E402

SHARED = ROOT.parent / "shared" / "benchmarks"
RESULTS = HERE / "results"
ADULT_NAMES = [
    "age",
    "workclass",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]


def prepare(work: Path) -> list[tuple[str, str, list[str]]]:
    """Files for the workloads, and the workloads: (engine, what, faircert arguments)."""
    import xgboost as xgb
    from sklearn.linear_model import LogisticRegression

    from faircert.domain import Domain, Feature
    from faircert.models.io.nnet import load_nnet

    net = load_nnet(SHARED / "models" / "adult" / "AC-1.nnet")
    Domain(
        tuple(
            Feature(n, "binary" if n == "sex" else "integer", int(lo), int(hi), protected=n == "sex")
            for n, lo, hi in zip(ADULT_NAMES, net.input_lower, net.input_upper)
        )
    ).save(work / "adult-nnet.yaml")
    runs = []
    for name in ("AC-1", "AC-3"):
        runs.append(
            (
                "network-boxes",
                f"{name}, sex, until undecided <= 10% or 20 s",
                [
                    "verify",
                    str(SHARED / "models" / "adult" / f"{name}.nnet"),
                    "--domain",
                    str(work / "adult-nnet.yaml"),
                    "--protected",
                    "sex",
                    "--target-undecided",
                    "0.1",
                    "--time-limit",
                    "20",
                ],
            )
        )
    for data, n_trees, attr in (("adult", 25, "age"), ("compas", 50, "race")):
        X, y, dom = DATASETS[data][0]()
        clf = xgb.XGBClassifier(n_estimators=n_trees, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
        booster = clf.get_booster()
        booster.feature_names = dom.names  # the population and the domain name the model's inputs
        booster.save_model(str(work / f"{data}-{n_trees}.json"))
        dom.save(work / f"{data}.yaml")
        runs.append(
            (
                "tree-boxes",
                f"{data} XGBoost {n_trees}x3, {attr}, exact",
                [
                    "verify",
                    str(work / f"{data}-{n_trees}.json"),
                    "--domain",
                    str(work / f"{data}.yaml"),
                    "--protected",
                    attr,
                    "--time-limit",
                    "60",
                ],
            )
        )
    runs.append(
        (
            "tree-sampling",
            "compas XGBoost 50x3, race, 200,000 samples",
            [
                "sample-counterexamples",
                str(work / "compas-50.json"),
                "--domain",
                str(work / "compas.yaml"),
                "--protected",
                "race",
                "-n",
                "200000",
                "--out",
                str(work / "samples.csv"),
            ],
        )
    )
    X, y, dom = DATASETS["adult"][0]()
    import pandas as pd

    frame = pd.DataFrame(X, columns=dom.names).astype(int)
    frame["y"] = y
    frame.to_csv(work / "adult.csv", index=False)
    with open(work / "adult-logreg.pkl", "wb") as fh:
        pickle.dump(LogisticRegression(max_iter=2000).fit(frame[dom.names], y), fh)
    runs.append(
        (
            "subset-sum",
            "adult logistic regression, sex, independent population",
            [
                "group",
                str(work / "adult-logreg.pkl"),
                "--trust-pickle",
                "--data",
                str(work / "adult.csv"),
                "--protected",
                "sex",
                "--label",
                "y",
                "--metric",
                "di,sp,eo",
            ],
        )
    )
    runs.append(
        (
            "probability-bounds",
            "adult XGBoost 25x3, sex, independent population, 20 s",
            [
                "group",
                str(work / "adult-25.json"),
                "--data",
                str(work / "adult.csv"),
                "--protected",
                "sex",
                "--time-limit",
                "20",
            ],
        )
    )
    runs.append(
        (
            "sequential-test",
            "adult XGBoost 25x3, sex, delta 1e-6",
            [
                "group",
                str(work / "adult-25.json"),
                "--data",
                str(work / "adult.csv"),
                "--protected",
                "sex",
                "--method",
                "sampling",
                "--time-limit",
                "20",
            ],
        )
    )
    programs = SHARED / "programs" / "fairsquare"
    for program in ("M_BN_F_DT_V3_D2_N44.fr", "M_BN_F_NN_V3_H2.fr"):
        runs.append(("program-bounds", program, ["program", str(programs / program), "--time-limit", "60"]))
    runs.append(
        (
            "program-sequential-test",
            "M_BN_F_NN_V3_H2.fr",
            ["program", str(programs / "M_BN_F_NN_V3_H2.fr"), "--method", "sampling"],
        )
    )
    return runs


def run_once(src: Path, args: list[str], out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "faircert", *args, "--json", str(out), "--quiet"]
    if args[0] == "sample-counterexamples":  # its JSON is a summary, and it has no --quiet
        cmd.remove("--quiet")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    result = json.loads(out.read_text())
    keep = (
        "verdict",
        "certified",
        "falsified",
        "undecided",
        "written",
        "measure_lower",
        "measure_upper",
        "ratio",
        "metrics",
    )
    return {"wall_s": wall, **{k: result[k] for k in keep if k in result}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True, help="git revision to compare against")
    ap.add_argument("--head", default="HEAD", help="git revision to measure (default HEAD)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    base_rev = subprocess.run(
        ["git", "rev-parse", "--short", args.baseline], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    head_rev = subprocess.run(
        ["git", "rev-parse", "--short", args.head], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "files"
        work.mkdir()
        trees = {"head": Path(tmp) / "head", "baseline": Path(tmp) / "baseline"}
        for label, rev in (("head", head_rev), ("baseline", base_rev)):
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(trees[label]), rev],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        trees = {label: path / "src" for label, path in trees.items()}
        try:
            runs = prepare(work)
            rows = []
            for engine, what, cmd in runs:
                times: dict[str, list[dict]] = {"head": [], "baseline": []}
                for _ in range(args.repeats):
                    for label, src in trees.items():
                        times[label].append(run_once(src, cmd, work / "out.json"))
                row = {"engine": engine, "workload": what}
                for label in trees:
                    row[label] = {
                        "median_s": statistics.median(r["wall_s"] for r in times[label]),
                        "runs_s": [r["wall_s"] for r in times[label]],
                        "last": times[label][-1],
                    }
                row["ratio"] = row["head"]["median_s"] / row["baseline"]["median_s"]
                rows.append(row)
                print(
                    f"{engine:24s} {what[:50]:50s} head {row['head']['median_s']:6.2f} s  "
                    f"baseline {row['baseline']['median_s']:6.2f} s  ratio {row['ratio']:.2f}",
                    flush=True,
                )
        finally:
            for src in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(src.parent)], cwd=ROOT, capture_output=True)
    meta = {
        "head": head_rev,
        "baseline": base_rev,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "engines_quick.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    (RESULTS / "engines_quick.md").write_text(markdown(meta, rows))


def _answer(last: dict) -> str:
    if "certified" in last:
        return f"{last['verdict']} {100 * last['certified']:.2f}% / {100 * last['undecided']:.2f}% und."
    if "written" in last:
        return f"{last['written']:,} written, measure [{last['measure_lower']:.4f}, {last['measure_upper']:.4f}]"
    if "ratio" in last:
        return f"{last['verdict']} ratio [{float(last['ratio']['low']):.3f}, {float(last['ratio']['high']):.3f}]"
    if "metrics" in last:
        di = last["metrics"]["di"]
        return f"{last['verdict']} DI [{di['low']:.3f}, {di['high']:.3f}]"
    return str(last.get("verdict", ""))


def markdown(meta: dict, rows: list[dict]) -> str:
    lines = [
        f"# One quick workload per engine: {meta['head']} against {meta['baseline']}",
        "",
        f"Median wall time of {meta['repeats']} runs each, alternating between the two revisions, of one "
        "`faircert` command (process start and model loading included; model files prepared once) on this "
        f"{meta['cpus']}-core machine, "
        f"{meta['date']}. `ratio` = this checkout / baseline: above 1 is slower. Runs of one revision "
        "vary by up to a third on this machine when other work shares it.",
        "",
        "| engine | workload | baseline s | this checkout s | ratio | answer (this checkout) | answer (baseline) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['engine']} | {r['workload']} | {r['baseline']['median_s']:.2f} | "
            f"{r['head']['median_s']:.2f} | {r['ratio']:.2f} | {_answer(r['head']['last'])} | "
            f"{_answer(r['baseline']['last'])} |"
        )
    ratios = [r["ratio"] for r in rows]
    lines += ["", f"Geometric mean of the ratios: {float(np.exp(np.mean(np.log(ratios)))):.2f}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
