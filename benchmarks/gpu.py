"""The network bounds on torch beside numpy: boxes per second, and the same shares at equal boxes.

Run `python benchmarks/gpu.py` (torch on the CPU) or `python benchmarks/gpu.py --device cuda` (on a
machine with a CUDA GPU; add `--timed` for the runs at FairQuant's times); writes
`benchmarks/results/gpu.md` and `.json`, keeping the other device's saved figures.

* Refinements: each model verified under a box budget (`--max-boxes`, the same boxes whatever runs
  the bounds) with numpy in one process, numpy on 2 worker processes (the CPU default), torch on
  the device in one process, and torch on the device in 2 worker processes (spawned; on a GPU they
  share it). Boxes/s = boxes bounded per second of refinement. The shares
  under a box budget must be equal: the bounds agree to about 1e-12.
* Kernels: one bounding call (`bound_twins`, full CROWN as the refinement picks it) on random boxes
  of the domain, at several batch sizes: boxes bounded per second, numpy on one BLAS thread, torch
  on one thread and on torch's default thread count (CPU), or torch on the GPU.
* `--timed` (GPU): each model refined on the device for FairQuant's time (at least 10 s), its
  undecided share beside FairQuant's; `--long AC-5:240` refines a model for a longer time, and
  `--long AC-5:240:8` does so on 8 worker processes that share the device.
* `--audit`: the per-row audit of an MLP 128x128x128 (random weights, the Adult header domain)
  with a wide ball (every non-protected feature of at least 10 values moves by a tenth of its
  range: about 800,000 twins a row, beyond enumeration): rows per second with numpy and on the
  device, and whether their verdicts are equal.

* `--wide-steps 2G`: each model refined under a box budget (`--wide-max-boxes`) with steps sized
  as on a CUDA device with 2 GB for a call, numpy and torch, and with torch at steps of 16 boxes:
  what such a run leaves to the host, per box and per step, and so how fast one process could go
  were the device free (the host loop's figure, from the numpy run, beside the device loop's).

`--models all` takes every header-domain model (AC-1..AC-12, BM-1..BM-8, GC-1..GC-5), and
`--no-two-workers` leaves out the 2-worker runs. Each run's figures are merged, model by
model, into the saved ones, so a long list may be measured in parts. `--jobs N` runs N refinements
at once, each in its own process (on a GPU sharing it, each with 1/N of its memory): a run is bound
by its host's work (the wide-steps table) and its steps, so one GPU serves several. On a GPU machine with 16
cores, everything in three calls of under 10 minutes, most needed first (`gpu_session.sh 1`, `2`
and `3` run them, with the CUDA tests and the wide steps):

    python benchmarks/gpu.py --device cuda --no-refine --timed --cap 240 --long AC-5:240 --jobs 8
    python benchmarks/gpu.py --device cuda --no-refine --long AC-5:240:8 --audit --jobs 2
    python benchmarks/gpu.py --device cuda --models all --no-two-workers --jobs 8

(the first: every model at FairQuant's time, at most 240 s, and AC-5 for 240 s, longest first: 8
lanes of at most 240 s; the second: AC-5 for 240 s on 8 worker processes sharing the GPU, and the
audit; the third: box-budget refinements and the kernels. A capped run stops before FairQuant's
time: its undecided share is what less time left.) `--out PATH`
writes elsewhere than `benchmarks/results/gpu` (a trial run).

On a lent machine that gets the checkout alone and returns only the files under `$OUT`: link the
models into the checkout (`ln -s ../shared/benchmarks/models .bench`, with `/.bench` in
`.git/info/exclude`), carry `.bench/adult`, `.bench/bank` and `.bench/german`, and run there

    cp benchmarks/results/gpu.json "$OUT/" && FAIRCERT_BENCHMARK_MODELS=.bench PYTHONPATH=src \
        PYTHONUNBUFFERED=1 python3 benchmarks/gpu.py --device cuda ... --out "$OUT/gpu"

(each part is merged into `$OUT/gpu.json` as it ends, so a call cut short still returns what it
measured); the CUDA tests: `PYTHONPATH=src python3 -m pytest -q tests/test_backend.py
tests/test_backend_runs.py`.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairquant import FAIRQUANT, MODELS, load_case  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "gpu"
MODELS_RUN = ["AC-3", "AC-5", "BM-4", "GC-2"]
HEADER_MODELS = [m for m in FAIRQUANT if not m.startswith("compas")]
KERNEL_MODEL = "AC-5"
CPU_BATCHES = (512, 4096)
CUDA_BATCHES = (1_000, 10_000, 100_000)


#: what a step of the host's loop (numpy) computes that the device computes on a device: the
#: bounding calls and what is computed from the bounds (`module`, owner, name; owner None for a
#: module's function as `settle` calls it). The rest of that step (the host's queue of open boxes,
#: masses, halving, bookkeeping) is what the loop kept on the host before the boxes stayed on the
#: device (`resident`).
DEVICE_CALLS = (
    ("network.problem", "Problem", "bound"),  # in `window_bounds`, and growing boxes around counterexamples
    ("network.problem", "Problem", "window_bounds"),
    ("network.settle", "BoxSettler", "_decided"),
    ("network.settle", "BoxSettler", "_split_features"),
    ("network.settle", None, "cut_boxes"),
    ("network.settle", "BoxSettler", "_credit"),
    ("network.settle", None, "box_keys"),
    ("network.settle", None, "probe_keys"),
    ("network.settle", None, "draw_points"),
    ("network.problem", "Problem", "logits"),
)
#: what a step on a device still computes on the host: enumerating small boxes on the model,
#: growing unfair boxes around counterexamples (their bounds computed on the device: `DEVICE_WORK`
#: within them is not counted), classifying the probes (their logits computed on the device,
#: brought to the host), bringing the measures there and adding them up exactly, and keeping the
#: evidence (on a GPU, what the host waits there for the device counts as the host's)
HOST_CALLS = (
    ("network.settle", "BoxSettler", "_exact"),
    ("network.settle", None, "grow"),
    ("network.settle", None, "carve"),
    ("network.settle", None, "twin_split"),
    ("network.settle", "_Work", "step"),
    ("network.settle", "Findings", "add"),
    ("boxes.sums", "ExactSum", "add"),
)
DEVICE_WORK = (("network.problem", "Problem", "bound"), ("network.problem", "Problem", "logits"))
#: boxes bounded per step (and the box budget) of the runs that measure what a step costs the host
#: beside its boxes
TINY_STEP = 16
TINY_MAX_BOXES = 4000


def _timing(calls: tuple, inner: tuple = ()) -> dict:
    """Wrap `calls` with a clock (in this process): the seconds spent in them (a call within
    another counted once), less those spent in `inner` calls within them, and the steps
    (`BoxSettler.settle` calls), until `Refinement.refine` returns (the final estimate's logits
    are not the refinement's)."""
    import functools
    import importlib

    from faircert.engines.network import refine as refine_module
    from faircert.engines.network import settle

    spent = {"s": 0.0, "open": True, "depth": 0, "steps": 0}

    def timed(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            t = time.perf_counter()
            spent["depth"] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                spent["depth"] -= 1
                if spent["open"] and not spent["depth"]:
                    spent["s"] += time.perf_counter() - t

        return call

    def not_timed(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            t, within = time.perf_counter(), spent["depth"] > 0
            spent["depth"] -= within  # an outer call within this one is not counted twice
            try:
                return fn(*args, **kwargs)
            finally:
                spent["depth"] += within
                if spent["open"] and within:
                    spent["s"] -= time.perf_counter() - t

        return call

    for wrap, listed in ((timed, calls), (not_timed, inner)):
        for module, owner, attr in listed:
            mod = importlib.import_module(f"faircert.engines.{module}")
            holder = getattr(mod, owner) if owner else mod
            setattr(holder, attr, wrap(getattr(holder, attr)))
    whole, settle_step = refine_module.Refinement.refine, settle.BoxSettler.settle

    def refine_then_close(self, *args, **kwargs):
        try:
            return whole(self, *args, **kwargs)
        finally:
            spent["open"] = False

    def counted(self, *args, **kwargs):
        spent["steps"] += spent["open"]
        return settle_step(self, *args, **kwargs)

    refine_module.Refinement.refine = refine_then_close
    settle.BoxSettler.settle = counted
    return spent


def _recording_steps(step_memory: int | None, step_boxes: int | None = None) -> dict:
    """Record the step size a refinement picks (in this process); with `step_memory`, steps sized
    as on a CUDA device (one bounding call a step, as many boxes as fit half of `step_memory` at
    the call's peak) on any backend; with `step_boxes`, steps of that many boxes."""
    from faircert.engines.network import refine as refine_module

    chosen: dict = {}
    picked = refine_module.step_sizes

    def sizes(pb, tight, limit, device):
        if step_boxes is not None:
            chunk = step = step_boxes
        elif step_memory is None:
            chunk, step = picked(pb, tight, limit, device)
        else:
            chunk = step = refine_module.device_step(pb, tight, step_memory)
        chosen.update(chunk=chunk, step=step)
        return chunk, step

    refine_module.step_sizes = sizes
    return chosen


def refine(
    name: str,
    max_boxes: int | None,
    device: str | None,
    workers: int,
    time_limit: float | None,
    step_memory: int | None = None,
    memory_limit: int | None = None,
    step_boxes: int | None = None,
) -> dict:
    """One refinement of a header model (in a fresh process: `run_many`); `step_memory`: with steps
    sized as on a CUDA device with that much memory for a call; `memory_limit`: the run's (its
    share of a GPU shared by several runs); `step_boxes`: with steps of that many boxes. Times the
    calls of one process: on numpy those a device computes (`device_s`), on a device those left to
    the host (`host_s`)."""
    from faircert.engines.boxes.workers import Parallelism
    from faircert.engines.network.refine import verify_network
    from faircert.properties import individual_fairness

    net, dom, p = load_case(name, "header")
    prop = individual_fairness(dom, [p])
    chosen = _recording_steps(step_memory, step_boxes)
    if workers > 1:
        spent: dict = {"s": None, "steps": None}
    else:
        spent = _timing(HOST_CALLS, DEVICE_WORK) if device else _timing(DEVICE_CALLS)
    t = time.perf_counter()
    res = verify_network(
        net,
        prop,
        time_limit=time_limit,
        max_boxes=max_boxes,
        seed=0,
        parallel=Parallelism.of(workers, None, device),
        memory_limit=memory_limit,
    )
    return dict(
        device_s=None if device else spent["s"],
        host_s=spent["s"] if device else None,
        steps=spent["steps"],
        model=name,
        device=device or "numpy",
        workers=workers,
        wall_s=time.perf_counter() - t,
        boxes=res.stats["boxes_bounded"],
        boxes_per_s=res.stats["boxes_per_s"],
        bound_s=res.stats["t_bound"],
        step_boxes=chosen.get("step"),
        refine_s=res.stats["elapsed_refine_s"],
        certified=res.certified,
        falsified=res.falsified,
        undecided=res.undecided,
        load_avg=os.getloadavg()[0],
    )


AUDIT_ROWS = 2000
AUDIT_WIDTHS = (128, 128, 128)
AUDIT_BALL = 0.1  # of each non-protected feature's range
AUDIT_LIMIT_S = 120.0
AUDIT_BIAS = 3.0
AUDIT_MILP_S = 1.0


def audit_case(n_rows: int = AUDIT_ROWS):
    """The MLP 128x128x128 (He-scaled random weights over inputs scaled to their ranges, the
    protected input's weights shrunk, hidden biases that keep most units active, an output bias
    that splits the labels), the Adult header domain, its rows, and the ball's epsilon (a tenth of
    the range of every feature of at least 10 values)."""
    from faircert.models.network import ReluNetwork

    _, dom, p = load_case("AC-1", "header")
    rng = np.random.default_rng(0)
    sizes = (len(dom),) + AUDIT_WIDTHS + (1,)
    span = np.maximum(dom.upper - dom.lower, 1.0)
    ws = [rng.normal(size=(b, a)) * np.sqrt(2.0 / a) for a, b in zip(sizes[:-1], sizes[1:])]
    ws[0] = ws[0] / span  # inputs of every range weigh alike
    ws[0][:, p] *= 0.05
    bs = [np.full(b, AUDIT_BIAS) for b in sizes[1:]]  # most units active: a smooth, mostly fair model
    centre = (dom.lower + dom.upper) / 2
    h = centre
    for w, b in zip(ws[:-1], bs[:-1]):
        h = np.maximum(w @ h + b, 0.0)
    bs[-1] = -(ws[-1] @ h)  # the domain's centre on the boundary: both labels occur
    net = ReluNetwork(ws, bs)
    rows = np.floor(dom.lower + rng.random((n_rows, len(dom))) * (dom.upper - dom.lower + 1))
    rows = np.minimum(rows, dom.upper)
    eps = {dom.names[j]: float(np.floor(AUDIT_BALL * span[j])) for j in range(len(dom)) if j != p and span[j] >= 10}
    return net, dom, p, rows, eps


def audit(device: str | None, n_rows: int = AUDIT_ROWS) -> dict:
    """Rows per second of the per-row audit of `audit_case` (its verdicts, for the comparison)."""
    from faircert.engines.registry import find_engine
    from faircert.options import AuditOptions
    from faircert.properties import RowAudit, individual_fairness

    net, dom, p, rows, eps = audit_case(n_rows)
    question = RowAudit(individual_fairness(dom, [p], epsilon=eps), rows)
    options = AuditOptions(workers=1, device=device, time_limit=AUDIT_LIMIT_S, milp_seconds=AUDIT_MILP_S)
    t = time.perf_counter()
    res = find_engine(net, question).run(net, question, options, None)
    wall = time.perf_counter() - t
    methods: dict[str, int] = {}
    for m in res.methods:
        methods[m] = methods.get(m, 0) + 1
    decided = sum(v != "unknown" for v in res.verdicts)
    return dict(
        device=device or "numpy",
        rows=len(rows),
        decided=decided,
        wall_s=wall,
        rows_per_s=len(rows) / wall,
        decided_per_s=decided / wall,
        counts=res.counts(),
        methods=methods,
        verdicts=list(res.verdicts),
        by_row=list(res.methods),
        load_avg=os.getloadavg()[0],
    )


def worker_start(device: str, name: str = KERNEL_MODEL, workers: int = 2, tries: int = 3) -> float:
    """Seconds until `workers` spawned workers hold a refinement's shard on the device (each imports
    torch and faircert, and makes its own device context): the least of `tries`."""
    from faircert.engines.boxes.workers import Workers
    from faircert.engines.network.refine import Refinement
    from faircert.properties import individual_fairness

    net, dom, p = load_case(name, "header")
    run = Refinement(net, individual_fairness(dom, [p]), 0, None, None, device)
    best = math.inf
    for _ in range(tries):
        t = time.perf_counter()
        with Workers(run.shard.fresh(), workers, spawn=True) as pool:
            pool.each("progress", [(0.0,)] * workers)
            best = min(best, time.perf_counter() - t)
    return best


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
    return next(run_many([(function, *args)], 1))[1]


def run_many(calls: list[tuple], jobs: int) -> Iterator[tuple[int, Any]]:
    """Each call (function, *args) in its own fresh process (`fresh`), up to `jobs` at once:
    (its index, its result) as each ends."""
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context, max_tasks_per_child=1) as ex:
        futures = {ex.submit(*call): i for i, call in enumerate(calls)}
        for future in cf.as_completed(futures):
            yield futures[future], future.result()


def _sync(device: str | None) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def write(saved: dict, out: Path = OUT) -> None:
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
                "**The GPU figures (an H100 or H200) are still to be taken.** On a machine with a CUDA GPU and 16 "
                "cores run `python benchmarks/gpu.py --device cuda --no-refine --timed --cap 240 --long AC-5:240 "
                f"--jobs 8` (all {len(HEADER_MODELS)} at FairQuant's times, at most 240 s each, and AC-5 for 240 s, "
                "8 at a time), `python benchmarks/gpu.py --device cuda --no-refine --long AC-5:240:8 --audit "
                "--jobs 2` (AC-5 on 8 worker processes sharing the GPU; the per-row audit of an MLP 128x128x128) "
                "and `python benchmarks/gpu.py --device cuda --models all --no-two-workers --jobs 8` (every "
                "header-domain model under a box budget, the kernels); `--models` runs a part, merged into the "
                "saved figures (`gpu_session.sh` runs them on a lent machine).",
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
                f": the {env['cpus']} cores were shared with other jobs, so every rate is a loaded machine's."
                if env["load"] > env["cpus"] + 0.5
                else "."
            )
            + (
                f" Up to {env['jobs']} refinements ran at once, each in its own process"
                + (f", sharing the GPU with 1/{env['jobs']} of its memory each." if device == "cuda" else ".")
                if env.get("jobs", 1) > 1
                else ""
            ),
            "",
        ]
        refinements = got.get("refinements", [])
        if refinements:
            lines += _refinements(device, refinements)
            if got.get("worker_start_s"):
                lines += [
                    "",
                    "Torch's 2 workers are spawned, not forked: each imports torch and faircert and makes its own "
                    f"device context, {got['worker_start_s']:.1f} s before they hold their shards ({KERNEL_MODEL}, "
                    "the least of 3 starts). That start counts in their boxes/s: these runs last seconds, and the "
                    "timed runs below give their rate once started.",
                ]
        if got.get("kernels"):
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
        if got.get("wide_steps"):
            lines += _wide_steps(device, got["wide_steps"])
        timed = got.get("timed", []) + got.get("long", [])
        if timed:
            lines += [
                "",
                f"### Undecided after a time limit (torch on {device})",
                "",
                "| model | processes | time limit s | wall s | boxes/s | und % | FairQuant und % (its time s) |",
                "|---|---|---|---|---|---|---|",
            ]
            for r in timed:
                fq = FAIRQUANT[r["model"]]
                lines.append(
                    f"| {r['model']} | {_processes(r['workers'])} | {r['time_limit']:.0f} | {r['wall_s']:.1f} | "
                    f"{r['boxes_per_s']:.0f} | "
                    f"{pct(r['undecided'])} | {fq[2]:.2f} ({fq[3]:g}) |"
                )
        if got.get("audit"):
            a = got["audit"]
            rows = [a["numpy"], a["torch"]]
            lines += [
                "",
                f"### Per-row audit of an MLP {'x'.join(map(str, AUDIT_WIDTHS))} with a wide ball",
                "",
                f"{rows[0]['rows']} rows of the Adult header domain, every non-protected feature of at least "
                f"10 values moving by {AUDIT_BALL:g} of its range, {AUDIT_LIMIT_S:g} s time limit, "
                f"{AUDIT_MILP_S:g} s per MILP; verdicts and methods equal (rows a MILP or the time limit "
                f"decided aside: they depend on the clock): {'yes' if a['same'] else 'NO'}. Rows/s counts "
                "every stage (labels, flip test, bounds, search, MILP) in one process.",
                "",
                "| backend | rows/s | decided rows/s | fair | unfair | unknown | by method |",
                "|---|---|---|---|---|---|---|",
            ]
            for r in rows:
                c = r["counts"]
                by_method = ", ".join(f"{k} {v}" for k, v in sorted(r["methods"].items()))
                lines.append(
                    f"| {r['device']} | {r['rows_per_s']:.1f} | {r['decided_per_s']:.1f} | {c.get('fair', 0)} | "
                    f"{c.get('unfair', 0)} | {c.get('unknown', 0)} | {by_method} |"
                )
        lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines))
    out.with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")


def _refinements(device: str, refinements: list[dict]) -> list[str]:
    budgets = sorted({r.get("max_boxes", 0) for r in refinements})
    lines = [
        f"### Refinements under --max-boxes {', '.join(map(str, budgets))}",
        "",
        "| model | max boxes | boxes | numpy 1 proc boxes/s | numpy 2 workers boxes/s | torch "
        f"{device} boxes/s | torch {device} 2 workers boxes/s | torch / numpy 1 proc | torch: bounding share "
        "of its time | und % numpy | und % torch | same |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ("certified", "falsified", "undecided")
    for r in refinements:
        n1, t = r["numpy"], r["torch"]
        others = [r[c] for c in ("numpy_2_workers", "torch_2_workers") if c in r]
        same = all(n1[k] == o[k] for k in keys for o in [t] + others)
        lines.append(
            f"| {r['model']} | {r.get('max_boxes', '')} | {t['boxes']} | {n1['boxes_per_s']:.0f} | "
            f"{_rate(r.get('numpy_2_workers'))} | {t['boxes_per_s']:.0f} | {_rate(r.get('torch_2_workers'))} | "
            f"{t['boxes_per_s'] / n1['boxes_per_s']:.2f}x | "
            f"{100 * t['bound_s'] / t['refine_s']:.0f}% | {pct(n1['undecided'])} | "
            f"{pct(t['undecided'])} | {'yes' if same else 'NO'} |"
        )
    return lines


def _rate(run: dict | None) -> str:
    return "-" if run is None else f"{run['boxes_per_s']:.0f}"


def _processes(workers: int) -> str:
    return "1" if workers <= 1 else f"{workers} workers + driver"


def _wide_steps(device: str, runs: list[dict]) -> list[str]:
    memory = runs[0]["step_memory"] / 1e9
    lines = [
        "",
        f"### Steps sized as on a CUDA device ({memory:g} GB for a call), torch on {device}",
        "",
        "One bounding call a step, as on a GPU, of as many boxes as fit half that memory at the call's peak. "
        "What such a run leaves to the host bounds how fast it can go however fast the device: were the device "
        "free, a process could bound at most 1 / (host seconds per box) boxes per second (the ceiling).",
        "",
        "* **Host loop** (before the open boxes stayed on the device; measured on the numpy run): the host "
        "held the open boxes and computed everything but the bounds, the verdicts, split features, cuts, "
        "credits and probes (`DEVICE_CALLS`). Host µs per box = the rest of the run over its boxes.",
        f"* **Device loop** (`resident`): the open boxes stay on the device, and a step leaves to the host only "
        "the exact enumerations, the growth around counterexamples, the probes' classification, the measures' "
        "exact sums and the evidence (`HOST_CALLS`: host µs per box, from the torch run at these steps), and "
        f"its own Python and the dispatch of its device operations: host ms per step, measured at steps of "
        f"{TINY_STEP} boxes (where torch on the CPU computes next to nothing: an upper bound). Ceiling = "
        "1 / (host per step / boxes per step + host per box), at full steps (as a run under a time limit "
        "takes them) and at this run's mean step (under a box budget a level often ends with a part step).",
        "",
        "| model | boxes a step | mean step | max boxes | boxes | numpy boxes/s | torch boxes/s | und % | same "
        "| host loop: host µs per box | host loop: ceiling boxes/s "
        "| device loop: host ms per step | device loop: host µs per box "
        "| device loop: ceiling boxes/s, full steps | device loop: ceiling boxes/s, this run's steps |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ("certified", "falsified", "undecided")
    for r in runs:
        n, t, tiny = r["numpy"], r["torch"], r.get("torch_tiny_steps")
        host_loop = 1e6 * max(n["refine_s"] - n["device_s"], 1e-9) / n["boxes"]
        mean = f"{t['boxes'] / t['steps']:.0f}" if t.get("steps") else "-"
        row = (
            f"| {r['model']} | {t['step_boxes']} | {mean} | {r['max_boxes']} | {t['boxes']} | {n['boxes_per_s']:.0f} | "
            f"{t['boxes_per_s']:.0f} | {pct(t['undecided'])} | {'yes' if all(n[k] == t[k] for k in keys) else 'NO'} | "
            f"{host_loop:.1f} | {1e6 / host_loop:.0f} | "
        )
        if tiny is None or t.get("host_s") is None:
            lines.append(row + "- | - | - | - |")
            continue
        per_step = max(tiny["refine_s"] - tiny["host_s"], 1e-9) / tiny["steps"]
        per_box = t["host_s"] / t["boxes"]
        full, mean_step = (1.0 / (per_step / boxes + per_box) for boxes in (t["step_boxes"], t["boxes"] / t["steps"]))
        lines.append(row + f"{1e3 * per_step:.1f} | {1e6 * per_box:.2f} | {full:.0f} | {mean_step:.0f} |")
    return lines


def environment(device: str) -> dict:
    import torch

    name = torch.cuda.get_device_name(0) if device == "cuda" else "no GPU used"
    return dict(machine=platform.machine(), cpus=os.cpu_count(), torch=torch.__version__, device_name=name, load=0.0)


def _same_rows(a: dict, b: dict) -> bool:
    """Whether two audits gave each row the same verdict and method, rows a MILP or the time limit
    decided in either left aside (those depend on the clock); the lists then dropped."""
    clocked = ("milp", "time limit")
    rows = zip(a.pop("verdicts"), b.pop("verdicts"), a.pop("by_row"), b.pop("by_row"))
    return all((va, ma) == (vb, mb) for va, vb, ma, mb in rows if not ma.startswith(clocked) | mb.startswith(clocked))


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _merged(old: list[dict], new: list[dict]) -> list[dict]:
    """`old`'s rows with `new`'s in place of those of the same model and processes (new ones appended)."""

    def key(r: dict) -> tuple[str, int]:
        return r["model"], r.get("workers", 1)

    by = {key(r): r for r in old}
    by.update({key(r): r for r in new})
    return list(by.values())


def _positive(kind: type) -> Any:
    """An argparse type: a number of `kind` above 0."""

    def read(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
        return value

    return read


def _memory(text: str) -> int:
    from faircert.errors import FaircertError
    from faircert.memory import parse_bytes

    try:
        return parse_bytes(text)
    except FaircertError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _model_seconds(text: str) -> tuple[str, float, int]:
    model, _, rest = text.partition(":")
    if model not in FAIRQUANT:
        raise argparse.ArgumentTypeError(f"unknown model {model!r} (as AC-5:240 or AC-5:240:8)")
    seconds, _, workers = rest.partition(":")
    return model, _positive(float)(seconds), _positive(int)(workers or "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument(
        "--models", help=f"comma-separated, or all (default: {','.join(MODELS_RUN)}; timed: all header models)"
    )
    ap.add_argument("--max-boxes", type=_positive(int), default=20_000)
    ap.add_argument(
        "--two-workers", action=argparse.BooleanOptionalAction, default=True, help="numpy and torch on 2 workers too"
    )
    ap.add_argument("--no-refine", action="store_true", help="no box-budget refinements (nor kernels)")
    ap.add_argument("--timed", action="store_true", help="also refine each header model for FairQuant's time")
    ap.add_argument(
        "--cap",
        type=_positive(float),
        default=float("inf"),
        help="at most this many seconds for a --timed run (its time shown)",
    )
    ap.add_argument(
        "--long",
        action="append",
        default=[],
        type=_model_seconds,
        metavar="MODEL:SECONDS[:WORKERS]",
        help="refine MODEL that long (on WORKERS processes that share the device)",
    )
    ap.add_argument(
        "--wide-steps",
        type=_memory,
        metavar="MEMORY",
        help="also refine with steps sized as on a CUDA device with MEMORY (such as 2G) for a call, numpy and torch",
    )
    ap.add_argument(
        "--wide-max-boxes", type=_positive(int), default=200_000, help="box budget of those runs (%(default)s)"
    )
    ap.add_argument("--audit", action="store_true", help="the per-row audit of an MLP 128x128x128, numpy and device")
    ap.add_argument(
        "--audit-rows", type=_positive(int), default=AUDIT_ROWS, help="rows the audit decides (default %(default)s)"
    )
    ap.add_argument(
        "--jobs",
        type=_positive(int),
        default=1,
        help="refinements (and the two audits) run at once, each in its own process; on a GPU they share it, "
        "each with 1/JOBS of its memory (default %(default)s)",
    )
    ap.add_argument("--out", type=Path, default=OUT, help="where to write (.md and .json; default %(default)s)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the markdown from the saved JSON")
    args = ap.parse_args(argv)
    models = HEADER_MODELS if args.models == "all" else args.models.split(",") if args.models else None
    unknown = [m for m in models or [] if m not in FAIRQUANT]
    if unknown:
        ap.error(f"--models: unknown {', '.join(unknown)} (the header models are {', '.join(HEADER_MODELS)})")
    path = args.out.with_suffix(".json")
    saved = json.loads(path.read_text()) if path.exists() else {}
    if args.report_only:
        write(saved, args.out)
        return 0
    if not MODELS.is_dir():
        print(f"shared benchmark models not found at {MODELS}", file=sys.stderr)
        return 3
    from faircert.engines.network.arrays import Backend

    Backend(args.device)  # a clear error at once where the device cannot be used
    env = environment(args.device)
    got: dict = saved.get(args.device, {})
    if got.get("env", {}).get("device_name") == env["device_name"]:  # parts measured on this machine: kept
        env["load"] = got["env"]["load"]
    else:
        got = {}
    start = got["measured"].split(" to ")[0] if got.get("measured") else _now()
    got.update(env=env)
    got.pop("max_boxes", None)  # each row says its own

    def keep() -> None:  # what was measured so far is saved at once: a long run may be cut off
        got["measured"] = f"{start} to {_now()}"
        saved[args.device] = got
        write(saved, args.out)

    # several runs at once share a GPU's memory: each gets its share as its memory limit
    share = Backend(args.device).capacity() // args.jobs if args.jobs > 1 and args.device == "cuda" else None
    env["jobs"] = args.jobs

    def note_load(r: dict) -> None:
        env["load"] = max(env["load"], r["load_avg"])

    if not args.no_refine:
        configs = [("numpy", None, 1)] + ([("numpy_2_workers", None, 2)] if args.two_workers else [])
        configs += [("torch", args.device, 1)] + ([("torch_2_workers", args.device, 2)] if args.two_workers else [])
        names = models or MODELS_RUN
        rows = {name: {"model": name, "max_boxes": args.max_boxes} for name in names}
        calls = [
            (refine, n, args.max_boxes, device, workers, None, None, share if device else None)
            for n in names
            for _, device, workers in configs
        ]
        for i, r in run_many(calls, args.jobs):
            name, key = names[i // len(configs)], configs[i % len(configs)][0]
            rows[name][key] = r
            note_load(r)
            print(name, key, {k: r[k] for k in ("boxes", "boxes_per_s", "undecided")}, flush=True)
            if len(rows[name]) == 2 + len(configs):
                got["refinements"] = _merged(got.get("refinements", []), [rows[name]])
                keep()
        batches = CUDA_BATCHES if args.device == "cuda" else CPU_BATCHES
        got["batches"] = list(batches)
        got["worker_start_s"] = fresh(worker_start, args.device)
        got["kernels"] = fresh(kernel, None, None, batches)  # alone: a kernel's rate is the machine's
        if args.device == "cuda":
            got["kernels"] += fresh(kernel, "cuda", None, batches)
        else:
            got["kernels"] += fresh(kernel, "cpu", 1, batches) + fresh(kernel, "cpu", None, batches)
        print(got["kernels"], flush=True)
        keep()
    if args.wide_steps:
        memory = args.wide_steps
        names = models or MODELS_RUN
        wide = {name: {"model": name, "max_boxes": args.wide_max_boxes, "step_memory": memory} for name in names}
        runs = (("numpy", None, args.wide_max_boxes, None), ("torch", args.device, args.wide_max_boxes, None))
        runs += (("torch_tiny_steps", args.device, TINY_MAX_BOXES, TINY_STEP),)
        calls = [(refine, n, boxes, d, 1, None, memory, None, step) for n in names for _, d, boxes, step in runs]
        for i, r in run_many(calls, args.jobs):
            name, key = names[i // len(runs)], runs[i % len(runs)][0]
            wide[name][key] = r
            note_load(r)
            print(name, "wide steps", key, {k: r[k] for k in ("step_boxes", "boxes_per_s", "steps")}, flush=True)
            if len(wide[name]) == 3 + len(runs):
                got["wide_steps"] = _merged(got.get("wide_steps", []), [wide[name]])
                keep()
    timed = [("timed", m, min(max(10.0, FAIRQUANT[m][3]), args.cap), 1) for m in (models or HEADER_MODELS)]
    timed = timed if args.timed else []
    runs = timed + [("long", m, t, w) for m, t, w in args.long]
    longest_first = sorted(range(len(runs)), key=lambda i: -runs[i][2])  # the run's end is the longest's
    calls = [(refine, runs[i][1], None, args.device, runs[i][3], runs[i][2], None, share) for i in longest_first]
    for i, r in run_many(calls, args.jobs):
        key, name, seconds, _ = runs[longest_first[i]]
        r = dict(r, time_limit=seconds)
        note_load(r)
        got[key] = _merged(got.get(key, []), [r])
        print(name, seconds, {k: r[k] for k in ("boxes", "boxes_per_s", "undecided")}, flush=True)
        keep()
    if args.audit:
        a: dict = {}
        for i, r in run_many([(audit, None, args.audit_rows), (audit, args.device, args.audit_rows)], args.jobs):
            a["torch" if i else "numpy"] = r
            note_load(r)
            print("audit", r["device"], r["rows_per_s"], r["counts"], r["methods"], flush=True)
        a["same"] = _same_rows(a["numpy"], a["torch"])
        got["audit"] = a
        keep()
    keep()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
