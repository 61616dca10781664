"""Argument helpers shared by subcommands."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import FaircertError
from ..files import STDOUT, check_writable, print_stdout, write_text
from ..interrupt import requested as stop_requested
from ..interrupt import stop_on_signals
from ..options import Budget
from ..results import GroupResult, Result


def name_values(items: list[str] | None) -> dict[str, float]:
    """Parse ["age=2", "hours=1.5,edu=1"] into {"age": 2.0, ...}."""
    out: dict[str, float] = {}
    for item in items or []:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip():
                raise FaircertError(f"expected NAME=VALUE, got {part!r}")
            try:
                out[name.strip()] = float(value)
            except ValueError:
                raise FaircertError(f"{name.strip()}: expected a number, got {value!r}") from None
    return out


def add_model_loading(p: Any) -> None:
    """--trust-pickle and --preprocessor, for every command that reads a model."""
    p.add_argument("--trust-pickle", action="store_true", help="allow loading pickled models (runs code from the file)")
    p.add_argument(
        "--preprocessor",
        metavar="FILE",
        help="the fitted scikit-learn preprocessing (a pickled ColumnTransformer or Pipeline of "
        "transformers; needs --trust-pickle) that encoded the raw columns a network or tree "
        "ensemble was trained on: the model is then checked on raw columns, categories by name",
    )


def add_defaulted(p: Any, flag: str, default: float | None, help: str, metavar: str | None = None) -> None:
    """A number option whose help ends with its default (the options class's, written once there)."""
    shown = "none" if default is None else f"{default:g}"
    p.add_argument(flag, type=float, default=default, metavar=metavar, help=f"{help} (default {shown})")


def add_parallel_arguments(p: Any, work: str) -> None:
    """--workers and --ray: where `work` runs."""
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help=f"processes for {work} (default: every usable core, started once a run outlasts a "
        "second; 1: this process only)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help=f"run {work} on a Ray cluster: 'auto' (default: the running cluster or RAY_ADDRESS), "
        "'local' (start one on this machine) or the cluster's address; needs faircert[ray]",
    )


def add_checkpoint_arguments(p: Any, job: str) -> None:
    """--checkpoint, --checkpoint-every and --resume: a killed `job` continues where it stood."""
    p.add_argument(
        "--checkpoint",
        metavar="FILE",
        help=f"write {job}'s state to FILE every --checkpoint-every seconds and at the end "
        "(atomically), so a killed run can be resumed",
    )
    add_defaulted(p, "--checkpoint-every", Budget.checkpoint_every, "seconds between checkpoints", "S")
    p.add_argument(
        "--resume",
        metavar="FILE",
        help="continue the run a checkpoint holds (same model, data and question; refused otherwise); "
        "it keeps writing to FILE unless --checkpoint names another",
    )


def add_memory_argument(p: Any) -> None:
    """--memory-limit: the state a run may keep."""
    p.add_argument(
        "--memory-limit",
        metavar="BYTES",
        help="bytes of state the run may keep, per process (e.g. 800M, 2G, 1.5GiB; default 1/16 of this "
        "machine's memory); reaching it ends the run with its sound partial result (exit 2, "
        "stopped: memory limit)",
    )


def job_keywords(args: Any) -> dict[str, Any]:
    """The options' checkpoint and memory keywords from the command line (those the command has)."""
    names = ("checkpoint", "checkpoint_every", "resume", "memory_limit")
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def emit_json(text: str, destination: str | None) -> None:
    """Write JSON to a file, to stdout for '-', or nowhere when no destination was asked for."""
    if destination == STDOUT:
        print_stdout(text + "\n")
    elif destination:
        write_text(destination, text + "\n")


@contextmanager
def run_guard(outputs: Iterable[str | Path | None], quiet: bool = False) -> Iterator[None]:
    """Around a command's run: every output path checked writable first, so a long run never ends
    unable to save its verdict; SIGINT and SIGTERM ask the engines to stop, and the command then
    writes the sound partial result as usual."""
    check_writable(outputs)
    with stop_on_signals(quiet):
        yield


def mark_interrupted(result: Any) -> None:
    """Say in the result (JSON `stats.stopped`) when a signal ended the run."""
    if not stop_requested():
        return
    if isinstance(result, GroupResult):  # says it in its stats, where its `stopped` reads it
        result.stats["stopped"] = "interrupted"
        return
    if hasattr(result, "stopped"):
        result.stopped = "interrupted"
    if isinstance(result, Result):  # where verify results said it before `stopped`
        result.stats["stopped"] = "interrupted"
