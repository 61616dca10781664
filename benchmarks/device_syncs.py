"""What a network refinement's step on a device exchanges with the host, counted per step.

On a CUDA GPU the host queues kernels and runs ahead of them until it needs something from the
device: every value it reads (a mask's `any()` deciding a branch, an array brought to the host) waits
for all the kernels queued before it, and so does every copy from the host's pageable memory to the
device (a Python number or a numpy array made a tensor). The fewer of each a step makes, the further
the host runs ahead. These counts do not depend on the device, so they are taken with torch on the
CPU (counting the calls), on the header models at steps of 16 boxes (`gpu.TINY_STEP`):

* numbers copied: Python numbers made device tensors inside a step (`TorchOps._as`);
* arrays copied: numpy arrays moved to the device inside a step (`Backend.put`);
* reads: tensors read by the host inside a step (`bool`, `int`, `float`, `item`, `tolist`, `numpy`).

Run `python benchmarks/device_syncs.py [--label NAME]`; writes `benchmarks/results/device_syncs.md`
and `.json`, keeping the rows of other labels (a label names the code measured, so a change can be
measured beside the code before it: run this script with `PYTHONPATH` at the older checkout's `src`).
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "device_syncs"
READS = ("__bool__", "__int__", "__float__", "__index__", "item", "tolist", "numpy")


def count(name: str) -> dict:
    """One refinement of header model `name` on torch-CPU at 16-box steps, with its exchanges counted."""
    import torch

    from faircert.engines.network import arrays, settle

    seen: collections.Counter = collections.Counter()
    inside = [False]

    def counted(kind, fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if inside[0]:
                seen[kind] += 1
            return fn(*args, **kwargs)

        return call

    for method in READS:
        setattr(torch.Tensor, method, counted("reads", getattr(torch.Tensor, method)))
    as_tensor = arrays.TorchOps._as.__func__

    def number_copied(cls, x, like):
        if inside[0] and not isinstance(x, torch.Tensor):
            seen["numbers"] += 1
        return as_tensor(cls, x, like)

    arrays.TorchOps._as = classmethod(number_copied)
    put = arrays.Backend.put

    def array_copied(self, x):
        if inside[0] and isinstance(x, np.ndarray) and self.device is not None:
            seen["arrays"] += 1
        return put(self, x)

    arrays.Backend.put = array_copied
    step = settle.BoxSettler.settle

    def in_step(self, *boxes):
        seen["steps"] += 1
        inside[0] = True
        try:
            return step(self, *boxes)
        finally:
            inside[0] = False

    settle.BoxSettler.settle = in_step
    r = gpu.refine(name, gpu.TINY_MAX_BOXES, "cpu", 1, None, step_boxes=gpu.TINY_STEP)
    steps = seen["steps"]
    return dict(
        model=name,
        steps=steps,
        boxes=r["boxes"],
        undecided=r["undecided"],
        **{f"{k}_per_step": seen[k] / steps for k in ("numbers", "arrays", "reads")},
    )


def write(saved: dict) -> None:
    lines = [
        "# What a device step exchanges with the host",
        "",
        "Written by `benchmarks/device_syncs.py`: per step of a refinement on torch-CPU at steps of "
        f"{gpu.TINY_STEP} boxes ({gpu.TINY_MAX_BOXES} boxes' budget), the Python numbers and numpy arrays copied "
        "to the device, and the values the host read from it. On a CUDA GPU each one waits for every kernel "
        "queued before it. `undecided` equal across labels: the same run.",
        "",
        "| code | model | steps | undecided % | numbers copied / step | arrays copied / step | reads / step |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, run in saved.items():
        for r in run["rows"]:
            lines.append(
                f"| {label} | {r['model']} | {r['steps']} | {100 * r['undecided']:.2f} | "
                f"{r['numbers_per_step']:.1f} | {r['arrays_per_step']:.1f} | {r['reads_per_step']:.1f} |"
            )
    lines += ["", "Measured: " + "; ".join(f"{label} {run['measured']}" for label, run in saved.items()), ""]
    OUT.with_suffix(".md").write_text("\n".join(lines))
    OUT.with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="current", help="names the code measured (default %(default)s)")
    ap.add_argument("--models", default=",".join(gpu.MODELS_RUN), help="header models (default %(default)s)")
    args = ap.parse_args(argv)
    path = OUT.with_suffix(".json")
    saved = json.loads(path.read_text()) if path.exists() else {}
    rows = [gpu.fresh(count, name) for name in args.models.split(",")]
    saved[args.label] = {"measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}
    write(saved)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
