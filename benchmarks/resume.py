"""Checkpoints: their cost, size and the time to resume, on the network box refinement.

Run `python benchmarks/resume.py [--boxes 300000] [--every 30]`; writes
`benchmarks/results/resume.md` and `.json`.

FairQuant's AC-5 (the `.nnet` header domain, protected feature as in `fairquant.py`) is refined to
a budget of `--boxes` boxes on one core, once without a checkpoint and once writing one every
`--every` seconds and at the end, between two runs without (their mean is the base: the first run
of a process is measurably slower). Reported: the wall times and the overhead, the checkpoints
written and the time each took, the final checkpoint's size, and the time to resume from it (read,
check the digest and identity, restore the partition). The resumed run is then finished to a
larger budget and compared with an uninterrupted run to that budget: same shares, boxes and
counterexamples.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fairquant

from faircert.checkpoint import Checkpoint
from faircert.engines.network import resume
from faircert.engines.network.refine import Refinement, verify_network
from faircert.options import VerifyOptions
from faircert.properties import individual_fairness

OUT = HERE / "results"
TARGET_OVERHEAD = 0.05


class Timed(Checkpoint):
    """A checkpoint that records how long each save takes."""

    saves: ClassVar[list[float]] = []

    def save(self, state):
        t = time.perf_counter()
        super().save(state)
        Timed.saves.append(time.perf_counter() - t)


def _run(net, prop, boxes: int, checkpoint=None, resume_: bool = False):
    t = time.perf_counter()
    res = verify_network(net, prop, time_limit=3600, max_boxes=boxes, checkpoint=checkpoint, resume=resume_)
    return res, time.perf_counter() - t


def _key(res) -> tuple:
    return (res.certified, res.falsified, res.undecided, res.stats["boxes_bounded"],
            [(c.x, c.x_prime) for c in res.counterexamples])


def measure(name: str, boxes: int, every: float) -> dict:
    net, dom, p = fairquant.load_case(name, "header")
    prop = individual_fairness(dom, [p])
    options = VerifyOptions(checkpoint="x", seed=0)
    identity = resume.checkpoint_for(net, prop, options).identity
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.ckpt"
        _run(net, prop, min(boxes, 5000))  # warm-up: imports and first calls out of the timings
        plain, t_first = _run(net, prop, boxes)
        Timed.saves = []
        saved, t_saved = _run(net, prop, boxes, Timed(path, "network-boxes", identity, every))
        _, t_again = _run(net, prop, boxes)  # plain runs before and after: the order's effect averages out
        t_plain = (t_first + t_again) / 2
        size = path.stat().st_size
        t = time.perf_counter()
        state = Checkpoint(path, "network-boxes", identity).load()
        resume.restore(Refinement(net, prop, 0, None), state)
        t_resume = time.perf_counter() - t
        whole, _ = _run(net, prop, 2 * boxes)
        continued, _ = _run(net, prop, 2 * boxes, Checkpoint(path, "network-boxes", identity), resume_=True)
    return {"model": name, "boxes": boxes, "every_s": every, "wall_plain_s": t_plain, "wall_plain_runs_s": [t_first, t_again],
            "wall_checkpointed_s": t_saved,
            "overhead": (t_saved - t_plain) / t_plain, "checkpoints": len(Timed.saves),
            "save_s": Timed.saves, "size_bytes": size, "pool": saved.stats["pool"], "resume_s": t_resume,
            "same_as_plain": _key(plain) == _key(saved), "resumed_equals_uninterrupted": _key(whole) == _key(continued),
            "undecided": saved.undecided}


def markdown(row: dict) -> str:
    saving = sum(row["save_s"]) / row["wall_checkpointed_s"]
    status = "PASS" if saving <= TARGET_OVERHEAD else "FAIL"
    saves = ", ".join(f"{s:.2f}" for s in row["save_s"])
    lines = [__doc__.split("\n\n")[0], "",
             "| model | boxes | pool at the end | wall, no checkpoint (s) | wall, checkpoint every "
             f"{row['every_s']:.0f} s (s) | wall difference | checkpoints (s each) | time saving (target <= 5%) "
             "| size | resume (s) |",
             "|---|---|---|---|---|---|---|---|---|---|",
             f"| {row['model']} | {row['boxes']:,} | {row['pool']:,} | {row['wall_plain_s']:.1f} "
             f"({', '.join(f'{t:.1f}' for t in row['wall_plain_runs_s'])}) | {row['wall_checkpointed_s']:.1f} | "
             f"{row['overhead']:+.1%} | {row['checkpoints']} ({saves}) | {saving:.1%} {status} | "
             f"{row['size_bytes'] / 2**20:.1f} MiB | {row['resume_s']:.2f} |", "",
             f"Checkpointed run gives the plain run's answer: {row['same_as_plain']}. Resumed from the end "
             f"checkpoint and finished to {2 * row['boxes']:,} boxes, it gives the uninterrupted run's shares, boxes "
             f"and counterexamples: {row['resumed_equals_uninterrupted']}.", "",
             "Not checkpointed yet (they start afresh, and refuse `--checkpoint`): Fairify's partitions, the "
             "complete checks, the tree refinements, program and group bounds. The per-row audit checkpoints "
             "its decided rows (`tests/test_checkpoint.py`).", "",
             "One core; wall times include the final estimate. The wall difference compares separate runs, whose "
             "times vary by more than the checkpoints cost (the two plain runs differ by several seconds), so the "
             "target is checked on the time spent writing checkpoints, as a share of the checkpointed run."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="AC-5")
    parser.add_argument("--boxes", type=int, default=300_000)
    parser.add_argument("--every", type=float, default=30.0)
    parser.add_argument("--table-only", action="store_true", help="rewrite the table from resume.json")
    args = parser.parse_args()
    if args.table_only:
        (OUT / "resume.md").write_text(markdown(json.loads((OUT / "resume.json").read_text())))
        return
    row = measure(args.model, args.boxes, args.every)
    print(json.dumps(row))
    (OUT / "resume.json").write_text(json.dumps(row, indent=1) + "\n")
    (OUT / "resume.md").write_text(markdown(row))


if __name__ == "__main__":
    main()
