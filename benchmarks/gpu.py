"""The network bounds on torch beside numpy: boxes per second, and the same shares at equal boxes.

Run `python benchmarks/gpu.py` (torch on the CPU) or `python benchmarks/gpu.py --device cuda` (on a
machine with a CUDA GPU; add `--timed` for the runs at FairQuant's times); writes
`benchmarks/results/gpu.md` and `.json`, keeping the other device's saved figures.

* Refinements: each model verified under a box budget (`--max-boxes`, the same boxes whatever runs
  the bounds) with numpy in one process, numpy on 2 worker processes (the CPU default) and torch
  on the device in one process. Boxes/s = boxes bounded per second of refinement. The shares
  under a box budget must be equal: the bounds agree to about 1e-12.
* Kernels: one bounding call (`bound_twins`, full CROWN as the refinement picks it) on random boxes
  of the domain, at several batch sizes: boxes bounded per second, numpy on one BLAS thread, torch
  on one thread and on torch's default thread count (CPU), or torch on the GPU.
* `--timed` (GPU): each model refined on the device for FairQuant's time (at least 10 s), its
  undecided share beside FairQuant's.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairquant import FAIRQUANT, MODELS, load_case  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "gpu"
MODELS_RUN = ["AC-3", "AC-5", "BM-4", "GC-2"]
HEADER_MODELS = [m for m in FAIRQUANT if not m.startswith("compas")]
TIMED_S = sum(max(10.0, FAIRQUANT[m][3]) for m in HEADER_MODELS)
KERNEL_MODEL = "AC-5"
CPU_BATCHES = (512, 4096)
CUDA_BATCHES = (1_000, 10_000, 100_000)


def refine(name: str, max_boxes: int | None, device: str | None, workers: int, time_limit: float | None) -> dict:
    from faircert.engines.boxes.workers import Parallelism
    from faircert.engines.network.refine import verify_network
    from faircert.properties import individual_fairness

    net, dom, p = load_case(name, "header")
    prop = individual_fairness(dom, [p])
    t = time.perf_counter()
    res = verify_network(
        net, prop, time_limit=time_limit, max_boxes=max_boxes, seed=0, parallel=Parallelism.of(workers, None, device)
    )
    return dict(
        model=name,
        device=device or "numpy",
        workers=workers,
        wall_s=time.perf_counter() - t,
        boxes=res.stats["boxes_bounded"],
        boxes_per_s=res.stats["boxes_per_s"],
        bound_s=res.stats["t_bound"],
        refine_s=res.stats["elapsed_refine_s"],
        certified=res.certified,
        falsified=res.falsified,
        undecided=res.undecided,
        load_avg=os.getloadavg()[0],
    )


def kernel(device: str | None, threads: int | None, batches: tuple[int, ...]) -> list[dict]:
    """Boxes per second of one bounding call on KERNEL_MODEL's random boxes, per batch size."""
    from threadpoolctl import threadpool_limits

    from faircert.engines.network.problem import Problem
    from faircert.engines.network.refine import TIGHT_MAX_DEPTH, TIGHT_MAX_RATIO
    from faircert.engines.network.symbolic import crown_cost_ratio
    from faircert.properties import individual_fairness

    net, dom, p = load_case(KERNEL_MODEL, "header")
    pb = Problem.build(net, individual_fairness(dom, [p]), device)
    tight = crown_cost_ratio(pb.bounder, pb.d) <= TIGHT_MAX_RATIO and len(pb.bounder.widths) <= TIGHT_MAX_DEPTH
    if device is not None:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(threads or before)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for b in batches:
            lo = np.floor(pb.lo + rng.random((b, pb.d)) * (pb.hi - pb.lo + 1))
            lo = np.minimum(lo, pb.hi)
            hi = np.minimum(lo + np.floor((pb.hi - pb.lo) / 16), pb.hi)
            pb.bound(lo, hi, tight)  # warm-up (and the device's copy of the network)
            calls, t = 0, time.perf_counter()
            while calls < 2 or time.perf_counter() - t < 2.0:
                pb.bound(lo, hi, tight)
                calls += 1
            _sync(device)
            rows.append(dict(batch=b, boxes_per_s=b * calls / (time.perf_counter() - t)))
    if device is None:
        label = "numpy, 1 BLAS thread"
    else:
        label = f"torch {device}" + (f", {torch.get_num_threads()} thread(s)" if device == "cpu" else "")
        label += " (torch's default)" if device == "cpu" and threads is None else ""
        torch.set_num_threads(before)
    return [dict(r, backend=label) for r in rows]


def fresh(function, *args):
    """function(*args) in a fresh (spawned) process: its own memory, and no torch thread pool or
    CUDA context inherited by a fork."""
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as ex:
        return ex.submit(function, *args).result()


def _sync(device: str | None) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def write(saved: dict) -> None:
    lines = [
        "# Network bounds on torch beside numpy",
        "",
        "Written by `benchmarks/gpu.py`. Boxes/s = boxes bounded per second of refinement (each box bounds "
        "all twins at once). Under a box budget the boxes are the same whatever computes the bounds, so the "
        "shares must be equal (column `same`). The torch path computes in float64.",
        "",
    ]
    for device in ("cpu", "cuda"):
        got = saved.get(device)
        if got is None:
            lines += [
                f"## torch on {device}",
                "",
                "**The GPU figures (an H100 or H200) are still to be taken.** On a machine with a CUDA GPU run "
                "`python benchmarks/gpu.py --device cuda`; `python benchmarks/gpu.py --device cuda --timed "
                "--models AC-5` adds the undecided share at FairQuant's time (all "
                f"{len(HEADER_MODELS)} header-domain models: {TIMED_S / 60:.0f} minutes of refinement, "
                "to be run in parts with `--models`).",
                "",
            ]
            continue
        env = got["env"]
        lines += [
            f"## torch on {device}",
            "",
            f"Measured {got['measured']} on {env['machine']} ({env['cpus']} CPU cores; "
            f"{env['device_name']}), torch {env['torch']}, max 1-minute load average {env['load']:.1f}"
            + (
                ": the 2 cores were shared with other jobs, so every rate is a loaded machine's."
                if env["cpus"] <= 2
                else "."
            ),
            "",
            f"### Refinements under --max-boxes {got['max_boxes']}",
            "",
            "| model | boxes | numpy 1 proc boxes/s | numpy 2 workers boxes/s | torch "
            f"{device} boxes/s | torch / numpy 1 proc | torch: bounding share of its time | und % numpy "
            "| und % torch | same |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in got["refinements"]:
            n1, n2, t = r["numpy"], r["numpy_2_workers"], r["torch"]
            same = all(n1[k] == t[k] == n2[k] for k in ("certified", "falsified", "undecided"))
            lines.append(
                f"| {r['model']} | {t['boxes']} | {n1['boxes_per_s']:.0f} | {n2['boxes_per_s']:.0f} | "
                f"{t['boxes_per_s']:.0f} | {t['boxes_per_s'] / n1['boxes_per_s']:.2f}x | "
                f"{100 * t['bound_s'] / t['refine_s']:.0f}% | {pct(n1['undecided'])} | "
                f"{pct(t['undecided'])} | {'yes' if same else 'NO'} |"
            )
        lines += [
            "",
            f"### One bounding call on {KERNEL_MODEL}'s random boxes (boxes/s)",
            "",
            "| backend | " + " | ".join(f"batch {b}" for b in got["batches"]) + " |",
            "|---|" + "---|" * len(got["batches"]),
        ]
        by: dict[str, dict[int, float]] = {}
        for k in got["kernels"]:
            by.setdefault(k["backend"], {})[k["batch"]] = k["boxes_per_s"]
        for backend, rates in by.items():
            lines.append(f"| {backend} | " + " | ".join(f"{rates[b]:.0f}" for b in got["batches"]) + " |")
        lines += [
            "",
            "The bounding share is the part of the device run spent in the bounding calls (moving the boxes "
            "there and the bounds back included); the rest (splitting, cuts, probes' bookkeeping, credits, "
            "the frontier) runs on the host with numpy, in the same time on any device. Were the bounding free, "
            "these refinements would run about 1 / (1 - share) times as fast (the host time measured here): "
            + ", ".join(
                f"{r['model']} {r['torch']['refine_s'] / (r['torch']['refine_s'] - r['torch']['bound_s']):.1f}x"
                for r in got["refinements"]
            )
            + ".",
        ]
        if got.get("timed"):
            lines += [
                "",
                f"### Undecided at FairQuant's times (torch on {device})",
                "",
                "| model | time s | boxes/s | und % | FairQuant und % |",
                "|---|---|---|---|---|",
            ]
            for r in got["timed"]:
                lines.append(
                    f"| {r['model']} | {r['wall_s']:.1f} | {r['boxes_per_s']:.0f} | {pct(r['undecided'])} "
                    f"| {FAIRQUANT[r['model']][2]:.2f} |"
                )
        lines.append("")
    OUT.with_suffix(".md").write_text("\n".join(lines))
    OUT.with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")


def environment(device: str) -> dict:
    import torch

    name = torch.cuda.get_device_name(0) if device == "cuda" else "no GPU used"
    return dict(machine=platform.machine(), cpus=os.cpu_count(), torch=torch.__version__, device_name=name, load=0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--models", help=f"comma-separated (default: {','.join(MODELS_RUN)}; timed: all header models)")
    ap.add_argument("--max-boxes", type=int, default=20_000)
    ap.add_argument("--timed", action="store_true", help="also refine each header model for FairQuant's time")
    ap.add_argument("--report-only", action="store_true", help="rewrite the markdown from the saved JSON")
    args = ap.parse_args(argv)
    path = OUT.with_suffix(".json")
    saved = json.loads(path.read_text()) if path.exists() else {}
    if args.report_only:
        write(saved)
        return 0
    if not MODELS.is_dir():
        print(f"shared benchmark models not found at {MODELS}", file=sys.stderr)
        return 3
    from faircert.engines.network.arrays import Backend

    Backend(args.device)  # a clear error at once where the device cannot be used
    env = environment(args.device)
    got: dict = dict(measured=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), env=env)
    got["max_boxes"] = args.max_boxes
    got["refinements"] = []
    for name in args.models.split(",") if args.models else MODELS_RUN:
        r = {"model": name}
        for key, device, workers in (("numpy", None, 1), ("numpy_2_workers", None, 2), ("torch", args.device, 1)):
            r[key] = fresh(refine, name, args.max_boxes, device, workers, None)
            env["load"] = max(env["load"], r[key]["load_avg"])
            print(name, key, {k: r[key][k] for k in ("boxes", "boxes_per_s", "undecided")}, flush=True)
        got["refinements"].append(r)
    batches = CUDA_BATCHES if args.device == "cuda" else CPU_BATCHES
    got["batches"] = list(batches)
    got["kernels"] = fresh(kernel, None, None, batches)
    if args.device == "cuda":
        got["kernels"] += fresh(kernel, "cuda", None, batches)
    else:
        got["kernels"] += fresh(kernel, "cpu", 1, batches) + fresh(kernel, "cpu", None, batches)
    print(got["kernels"], flush=True)
    if args.timed:
        got["timed"] = []
        for name in args.models.split(",") if args.models else HEADER_MODELS:
            r = fresh(refine, name, None, args.device, 1, max(10.0, FAIRQUANT[name][3]))
            got["timed"].append(r)
            print(name, r, flush=True)
    saved[args.device] = got
    write(saved)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
