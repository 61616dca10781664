"""Checkpoints: their cost, size and the time to resume, on the long jobs that keep them.

Run `python benchmarks/resume.py [--cases ac5,ac7,trees,program,trees_kill,audit1m,audit1m_busy] [--every 30]`;
writes `benchmarks/results/resume.md` and `.json` (the cases not re-run keep their last figures).

Every case runs on one core, once without a checkpoint and once writing one every `--every`
seconds and at the end. The target (at most 5%) is checked on the time spent writing checkpoints
as a share of the checkpointed run: separate runs' wall times vary by more than the checkpoints
cost. Reported besides: the size of the final checkpoint and the time to resume from it (read,
check the digest and identity, restore the state), and whether a run resumed from it goes on as
the question requires.

- **ac5**: FairQuant's AC-5 (the `.nnet` header domain) refined to `--boxes` boxes, between two
  plain runs (their mean is the base: the first run of a process is measurably slower). The run
  resumed from the end checkpoint and finished to twice the budget must equal the uninterrupted run
  to that budget (shares, boxes, counterexamples).
- **ac7**: Fairify's AC-7, all 16,000 partitions (size 10, race), 120 s. A resumed run given 30 s
  more must keep every partition the checkpoint decided, with the same verdict.
- **trees**: the Adult 40-tree XGBoost ensemble (`trees.py`), epsilon 0 on age, kappa 0.5, 120 s.
  A resumed run given 30 s more must keep bounds at least as tight as the checkpoint's.
- **program**: FairSquare's NN3,2 under BN2 with `--ratio-width 1e-4`, 60 s. A resumed run given
  10 s more must keep bounds at least as tight as the checkpoint's.
- **trees_kill**: the Adult 150-tree ensemble, epsilon 0 on age, kappa 0.5, under a budget of
  100,000 boxes: runs SIGKILLed at random moments after their first checkpoint, each resumed to the
  budget, must give the uninterrupted run's shares, bounds, boxes and counterexamples (the same
  points in the same order).
- **audit1m**, **audit1m_busy**: `faircert audit` of 10^6 Adult-like rows by a Pipeline (logistic regression) with
  `--time-limit 10`, JSON and rows CSV written: the command's wall time and peak memory (busy: two
  CPU-bound processes spinning beside it on the 2 cores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fairify
import fairquant

import faircert
from faircert.checkpoint import Checkpoint, Parts
from faircert.engines.boxes.workers import SERIAL
from faircert.engines.network import resume
from faircert.engines.network.complete import BranchAndBound, recheck
from faircert.engines.network.decide import decide_network
from faircert.engines.network.partitions import partition_grid
from faircert.engines.network.problem import Problem
from faircert.engines.network.refine import Refinement, verify_network
from faircert.engines.network.regions_resume import checkpoint_for as regions_checkpoint
from faircert.engines.network.regions_resume import restore_frontier, restore_regions
from faircert.options import VerifyOptions
from faircert.properties import individual_fairness

OUT = HERE / "results"
TARGET_OVERHEAD = 0.05
PROGRAM = HERE.parents[1] / "shared" / "benchmarks" / "programs" / "fairsquare" / "M_BNc_F_NN_V3_H2.fr"


def _timed(call):
    t = time.perf_counter()
    out = call()
    return out, time.perf_counter() - t


def _row(
    case: str,
    model: str,
    budget: str,
    t_plain: float,
    t_saved: float,
    saved_stats: dict,
    size: int,
    t_resume: float,
    resumed_ok: bool,
    **extra,
) -> dict:
    return dict(
        case=case,
        model=model,
        budget=budget,
        wall_plain_s=t_plain,
        wall_checkpointed_s=t_saved,
        checkpoints=saved_stats["checkpoints"],
        save_s=saved_stats["checkpoint_s"],
        size_bytes=size,
        resume_s=t_resume,
        resumed_ok=resumed_ok,
        **extra,
    )


def _key(res) -> tuple:
    return (
        res.certified,
        res.falsified,
        res.undecided,
        res.stats["boxes_bounded"],
        [(c.x, c.x_prime) for c in res.counterexamples],
    )


def ac5(every: float, boxes: int) -> dict:
    net, dom, p = fairquant.load_case("AC-5", "header")
    prop = individual_fairness(dom, [p])
    identity = resume.checkpoint_for(net, prop, VerifyOptions(checkpoint="x", seed=0)).identity

    def run(n, checkpoint=None, resume_=False):
        return _timed(
            lambda: verify_network(net, prop, time_limit=3600, max_boxes=n, checkpoint=checkpoint, resume=resume_)
        )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.ckpt"
        run(min(boxes, 5000))  # warm-up: imports and first calls out of the timings
        plain, t_first = run(boxes)
        saved, t_saved = run(boxes, Checkpoint(path, "network-boxes", identity, every))
        size = path.stat().st_size
        _, t_again = run(boxes)  # plain runs before and after: the order's effect averages out
        t = time.perf_counter()
        state = Checkpoint(path, "network-boxes", identity).load()
        fresh = Refinement(net, prop, 0, None)
        for shard in state["shards"]:  # what a resumed run does before it goes on
            fresh.shard.restore(shard, fresh.pb.lo, fresh.pb.hi)
        t_resume = time.perf_counter() - t
        whole, _ = run(2 * boxes)
        continued, _ = run(2 * boxes, Checkpoint(path, "network-boxes", identity), resume_=True)
        return _row(
            "ac5",
            "AC-5",
            f"{boxes:,} boxes",
            (t_first + t_again) / 2,
            t_saved,
            saved.stats,
            size,
            t_resume,
            _key(whole) == _key(continued),
            same_as_plain=_key(plain) == _key(saved),
            wall_plain_runs_s=[t_first, t_again],
            open_boxes=saved.stats["open_boxes"],
        )


def ac7(every: float, limit: float = 120.0, more: float = 30.0) -> dict:
    net, prop, ms = fairify.load_case("AC-7")
    options = VerifyOptions(checkpoint="x", seed=0, partition_size=ms)

    def run(seconds, checkpoint=None, resume_=False):
        return _timed(
            lambda: decide_network(
                net, prop, time_limit=seconds, partition_size=ms, parallel=SERIAL, checkpoint=checkpoint, resume=resume_
            )
        )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.ckpt"
        identity = regions_checkpoint(net, prop, options).identity
        plain, t_plain = run(limit)
        saved, t_saved = run(limit, Checkpoint(path, "network-complete", identity, every))
        size = path.stat().st_size
        t = time.perf_counter()
        state = Checkpoint(path, "network-complete", identity).load()
        pb = Problem.build(net, prop)
        lo, hi = partition_grid(pb, ms)
        bb = BranchAndBound(pb, lo, hi)
        restore_regions(pb, bb, state, recheck)
        restore_frontier(bb, state)
        t_resume = time.perf_counter() - t
        continued, _ = run(more, Checkpoint(tmp + "/next.ckpt", "network-complete", identity, every, path), True)
    before = [row["verdict"] for row in saved.partitions]
    after = [row["verdict"] for row in continued.partitions]
    kept = all(now == then for then, now in zip(before, after) if then != "unknown")
    return _row(
        "ac7",
        "AC-7 partitions",
        f"{limit:g} s",
        t_plain,
        t_saved,
        saved.stats,
        size,
        t_resume,
        kept,
        coverage=saved.decision["coverage"],
        coverage_plain=plain.decision["coverage"],
        coverage_resumed=continued.decision["coverage"],
        resumed_for_s=more,
    )


def trees(every: float, limit: float = 120.0, more: float = 30.0) -> dict:
    from trees import train

    from faircert.engines.trees.quantify import quantify
    from faircert.engines.trees.resume import identity
    from faircert.engines.trees.run import TreeOptions

    ir, dom, _ = train("adult", 40)
    prop = individual_fairness(dom, "age", epsilon_rate=0.0, kappa=0.5)

    def run(seconds, checkpoint=None, resume_=False):
        return _timed(
            lambda: quantify(
                ir, prop, seconds, options=TreeOptions(method="refinement", checkpoint=checkpoint, resume=resume_)
            )
        )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.ckpt"
        ident = identity(ir, prop, 0)
        plain, t_plain = run(limit)
        saved, t_saved = run(limit, Checkpoint(path, "tree-boxes", ident, every))
        size = path.stat().st_size
        t = time.perf_counter()
        Checkpoint(path, "tree-boxes", ident).load()
        t_resume = time.perf_counter() - t  # read and check; the boxes are restored as the run starts
        continued, _ = run(more, Checkpoint(Path(tmp) / "next.ckpt", "tree-boxes", ident, every, path), True)
    ok = continued.bounds[0] >= saved.bounds[0] and continued.bounds[1] <= saved.bounds[1]
    return _row(
        "trees",
        "Adult 40 trees (age, kappa 0.5)",
        f"{limit:g} s",
        t_plain,
        t_saved,
        saved.stats,
        size,
        t_resume,
        ok,
        bounds=list(saved.bounds),
        bounds_plain=list(plain.bounds),
        bounds_resumed=list(continued.bounds),
        examined=saved.stats["examined"],
        resumed_for_s=more,
    )


def program(every: float, limit: float = 60.0, more: float = 10.0) -> dict:
    from faircert.engines.probability.bounds import program_evaluator
    from faircert.engines.probability.fairness import fairness_events
    from faircert.engines.probability.interp import INTERVAL
    from faircert.engines.probability.refine import Refiner
    from faircert.models.program import load_program

    def run(seconds, **options):
        return _timed(
            lambda: faircert.verify_program(
                PROGRAM, ratio_width=1e-4, time_limit=seconds, workers=1, checkpoint_every=every, **options
            )
        )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.ckpt"
        plain, t_plain = run(limit)
        saved, t_saved = run(limit, checkpoint=path)
        size = path.stat().st_size
        identity = json.loads(path.read_text())["identity"]
        t = time.perf_counter()
        parts = Parts(Checkpoint(path, "program-bounds", identity), resume=True)
        marginals, evaluate = program_evaluator(
            load_program(PROGRAM), lambda notes, _: fairness_events(INTERVAL, notes)
        )
        Refiner(marginals, evaluate, 6).restore(parts.next().load())
        t_resume = time.perf_counter() - t
        continued, _ = run(more, resume=path, checkpoint=Path(tmp) / "next.ckpt")
    ok = continued.ratio_low >= saved.ratio_low and continued.ratio_high <= saved.ratio_high
    return _row(
        "program",
        "FairSquare NN3,2 (BN2)",
        f"{limit:g} s",
        t_plain,
        t_saved,
        saved.stats,
        size,
        t_resume,
        ok,
        ratio=[saved.ratio_low, saved.ratio_high],
        ratio_plain=[plain.ratio_low, plain.ratio_high],
        ratio_resumed=[continued.ratio_low, continued.ratio_high],
        resumed_for_s=more,
    )


def trees_killed(every: float, boxes: int = 100_000, kills: int = 4) -> dict:
    """The Adult 150-tree XGBoost ensemble (`trees.py`), epsilon 0 on age, kappa 0.5, under a box
    budget: runs SIGKILLed at random moments after their first checkpoint (written every half
    second), each resumed to the budget, against the uninterrupted run."""
    import multiprocessing
    import os
    import signal

    import numpy as np
    from trees import train

    ir, dom, _ = train("adult", 150)

    def run(**options):
        return faircert.verify(
            ir, dom, protected="age", kappa=0.5, max_boxes=boxes, time_limit=3600, workers=1, **options
        )

    def answer(r) -> list:
        keys = ("boxes", "examined", "unfair_boxes")
        shares = [r.certified, r.falsified, r.undecided, r.measure_lower, r.measure_upper]
        # the counterexamples by their number and a digest of their points in order
        points = np.array([c.x + c.x_prime for c in r.counterexamples], dtype=np.float64)
        digest = hashlib.sha256(points.tobytes()).hexdigest()[:16]
        return shares + [r.stats[k] for k in keys] + [len(r.counterexamples), digest]

    run()  # warm-up: kernels and first calls out of the timings
    whole, t_whole = _timed(run)
    moments = np.random.default_rng(6).uniform(0.0, t_whole, kills)
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, after in enumerate(moments.tolist()):
            path = Path(tmp) / f"run{k}.ckpt"
            child = multiprocessing.get_context("fork").Process(
                target=run, kwargs={"checkpoint": path, "checkpoint_every": 0.5}
            )
            child.start()
            while not path.exists() and child.is_alive():
                time.sleep(0.005)
            time.sleep(after)
            cut = child.is_alive()
            os.kill(child.pid, signal.SIGKILL)
            child.join()
            resumed, t_resumed = _timed(lambda: run(resume=path))
            same = answer(resumed) == answer(whole)
            outcomes.append(dict(after_s=after, cut=cut, same=same, wall_resumed_s=t_resumed))
    return dict(
        case="trees_kill",
        model="Adult 150 trees (age, kappa 0.5)",
        budget=f"{boxes:,} boxes",
        wall_plain_s=t_whole,
        answer=answer(whole),
        kills=outcomes,
        identical=all(o["same"] for o in outcomes),
    )


def audit_1m(every: float, rows: int = 1_000_000, limit: float = 10.0, busy: int = 0) -> dict:
    """The per-row audit of `rows` Adult-like rows (the Adult rows drawn with replacement) by a
    Pipeline (one-hot and scaled columns, logistic regression), from the command line with
    `--time-limit`: the wall time of the whole command and its peak memory; with `busy` processes
    spinning on the CPU beside it (a busy machine)."""
    import os
    import resource
    import subprocess

    import joblib
    import numpy as np
    import pandas as pd
    from practitioner import adult
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame, _, _ = adult()
    X, y = frame.drop(columns="y"), frame["y"]
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    numbers = [c for c in X.columns if c not in text]
    prep = ColumnTransformer(
        [("text", OneHotEncoder(handle_unknown="ignore"), text), ("num", StandardScaler(), numbers)]
    )
    pipe = Pipeline([("prep", prep), ("clf", LogisticRegression(max_iter=500))]).fit(X, y)
    with tempfile.TemporaryDirectory() as tmp:
        model, data, out = Path(tmp) / "model.pkl", Path(tmp) / "rows.csv", Path(tmp) / "out.json"
        joblib.dump(pipe, model)
        X.iloc[np.random.default_rng(0).integers(0, len(X), rows)].to_csv(data, index=False)
        size = data.stat().st_size
        command = [sys.executable, "-m", "faircert", "audit", str(model), str(data), "--trust-pickle"]
        command += ["--protected", "sex", "--epsilon", "age=2,hours-per-week=5", "--time-limit", f"{limit:g}"]
        command += ["--workers", "1", "--quiet", "--json", str(out), "--rows-csv", str(Path(tmp) / "rows_out.csv")]
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        time.sleep(5 if busy else 0)  # the load average catches up a little
        load = os.getloadavg()
        t = time.perf_counter()
        try:
            code = subprocess.run(
                command, check=False, env=os.environ | {"PYTHONPATH": str(HERE.parent / "src")}
            ).returncode
        finally:
            wall = time.perf_counter() - t
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # the largest child: this one
        answer = json.loads(out.read_text())
        written = (Path(tmp) / "rows_out.csv").stat().st_size
    return dict(
        case="audit1m_busy" if busy else "audit1m",
        model="Adult-like Pipeline (logistic regression), per-row audit"
        + (f", {busy} CPU-bound processes beside it" if busy else ""),
        budget=f"{limit:g} s",
        rows=rows,
        input_bytes=size,
        rows_csv_bytes=written,
        exit_code=code,
        wall_s=wall,
        peak_rss_bytes=peak,
        timings=answer["timings"],
        counts=answer["counts"],
        stopped=answer["stopped"],
        unknown_reasons=answer["unknown_reasons"],
        listing=answer["listing"],
        load_before=list(load),
        load_after=list(os.getloadavg()),
    )


CASES = {
    "ac5": ac5,
    "ac7": ac7,
    "trees": trees,
    "program": program,
    "trees_kill": trees_killed,
    "audit1m": audit_1m,
    "audit1m_busy": lambda every: audit_1m(every, busy=2),
}
#: The cases of the checkpoint table (the others have tables of their own).
CHECKPOINTED = ("ac5", "ac7", "trees", "program")


def _outcome(row: dict) -> str:
    if row["case"] == "ac5":
        return (
            f"finished to {2 * int(row['budget'].split()[0].replace(',', '')):,} boxes: the uninterrupted "
            f"run's shares, boxes and counterexamples: {row['resumed_ok']}"
        )
    if row["case"] == "ac7":
        return (
            f"coverage {row['coverage']:.1%} (plain run {row['coverage_plain']:.1%}); {row['resumed_for_s']:g} s "
            f"more: {row['coverage_resumed']:.1%}, every decided partition kept: {row['resumed_ok']}"
        )
    if row["case"] == "trees":
        (lo, hi), (plo, phi), (rlo, rhi) = row["bounds"], row["bounds_plain"], row["bounds_resumed"]
        return (
            f"measure [{lo:.4f}, {hi:.4f}] after {row['examined']:,} boxes (plain run [{plo:.4f}, {phi:.4f}]); "
            f"{row['resumed_for_s']:g} s more: [{rlo:.4f}, {rhi:.4f}], bounds as tight: {row['resumed_ok']}"
        )
    lo, hi = row["ratio"]
    return (
        f"ratio [{lo:.5f}, {hi:.5f}]; {row['resumed_for_s']:g} s more: [{row['ratio_resumed'][0]:.5f}, "
        f"{row['ratio_resumed'][1]:.5f}], bounds as tight: {row['resumed_ok']}"
    )


def markdown(rows: list[dict], every: float) -> str:
    lines = [
        __doc__.split("\n\n")[0],
        "",
        f"| job | budget | wall, no checkpoint (s) | wall, checkpoint every {every:g} s (s) | checkpoints "
        "| time saving (target <= 5%) | size | resume (s) | resumed run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in [r for r in rows if r["case"] in CHECKPOINTED]:
        share = row["save_s"] / row["wall_checkpointed_s"]
        status = "PASS" if share <= TARGET_OVERHEAD else "FAIL"
        lines.append(
            f"| {row['model']} | {row['budget']} | {row['wall_plain_s']:.1f} | "
            f"{row['wall_checkpointed_s']:.1f} | {row['checkpoints']} ({row['save_s']:.2f} s) | "
            f"{share:.2%} {status} | {row['size_bytes'] / 2**20:.2f} MiB | {row['resume_s']:.2f} | "
            f"{_outcome(row)} |"
        )
    lines += [
        "",
        "One core per run; wall times include each engine's final estimate. The per-row audit's "
        "checkpoints (its decided rows) are tested in `tests/test_checkpoint.py`; SIGKILL-and-resume tests "
        "of every engine are in `tests/test_checkpoint_*.py`.",
    ]
    lines += _kill_table([r for r in rows if r["case"] == "trees_kill"])
    lines += _audit_table([r for r in rows if r["case"].startswith("audit1m")])
    return "\n".join(lines) + "\n"


def _kill_table(rows: list[dict]) -> list[str]:
    """Kill and resume under a box budget: the resumed runs against the uninterrupted one."""
    if not rows:
        return []
    lines = [
        "",
        "Kill and resume under a box budget (`--max-boxes`): each run SIGKILLed at a random moment after "
        "its first checkpoint (one every 0.5 s), then resumed to the budget, against the uninterrupted run "
        "(shares, measure bounds, boxes, boxes examined, unfair boxes, counterexamples: the same points in "
        "the same order).",
        "",
        "| job | budget | wall, uninterrupted (s) | certified / undecided | kills (part way) | wall, resumed (s) "
        "| identical |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kills = r["kills"]
        walls = ", ".join(f"{k['wall_resumed_s']:.1f}" for k in kills)
        lines.append(
            f"| {r['model']} | {r['budget']} | {r['wall_plain_s']:.1f} | {r['answer'][0]:.6f} / "
            f"{r['answer'][2]:.6f} | {len(kills)} ({sum(k['cut'] for k in kills)}) | {walls} | "
            f"{sum(k['same'] for k in kills)} of {len(kills)}: {r['identical']} |"
        )
    return lines


def _audit_table(rows: list[dict]) -> list[str]:
    """The large per-row audit: the whole command's wall time and peak memory against its limit."""
    if not rows:
        return []
    lines = [
        "",
        "A large per-row audit from the command line (`faircert audit MODEL DATA.csv --time-limit S --json F "
        "--rows-csv F`, one process, on 2 cores shared with other jobs: the load is the 1-minute load "
        "average): the time limit covers reading the rows and the model, the audit and writing the results "
        "(target: wall time at most the limit + 3 s, peak memory under 400 MB).",
        "",
        "| job | rows (input) | time limit | wall (s) | peak memory | read / audit / write (s) | rows decided "
        "| stopped | load (1 min, before / after) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, c = r["timings"], r["counts"]
        decided = (c["fair"] + c["unfair"]) / max(r["rows"], 1)
        lines.append(
            f"| {r['model']} | {r['rows']:,} ({r['input_bytes'] / 2**20:.0f} MiB) | {r['budget']} | "
            f"{r['wall_s']:.1f} | {r['peak_rss_bytes'] / 2**20:.0f} MiB ({r['peak_rss_bytes'] / 1e6:.0f} MB) | "
            f"{t['read_s']:.1f} / {t['audit_s']:.1f} / {t['write_s']:.1f} | {decided:.1%} "
            f"({c['unfair']:,} unfair) | {r['stopped']} | {r['load_before'][0]:.1f} / {r['load_after'][0]:.1f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--boxes", type=int, default=300_000, help="the AC-5 case's box budget")
    parser.add_argument("--every", type=float, default=30.0)
    parser.add_argument("--table-only", action="store_true", help="rewrite the table from resume.json")
    args = parser.parse_args()
    saved = OUT / "resume.json"
    rows = {r["case"]: r for r in json.loads(saved.read_text()).get("rows", [])} if saved.exists() else {}
    if not args.table_only:
        for case in args.cases.split(","):
            rows[case] = CASES[case](args.every, args.boxes) if case in ("ac5",) else CASES[case](args.every)
            print(json.dumps(rows[case]), flush=True)
            ordered = [rows[c] for c in CASES if c in rows]
            saved.write_text(json.dumps({"every_s": args.every, "rows": ordered}, indent=1) + "\n")
    ordered = [rows[c] for c in CASES if c in rows]
    (OUT / "resume.md").write_text(markdown(ordered, args.every))


if __name__ == "__main__":
    main()
