"""Argument helpers shared by subcommands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import FaircertError
from ..files import check_writable
from ..interrupt import requested as stop_requested
from ..interrupt import stop_on_signals
from ..options import Budget
from ..results import GroupResult, Result
from .flags import BUDGET_KEYS, Workers, add_key_values, budget_keywords


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


def add_tolerances(p: Any) -> None:
    """--protected, --epsilon and --epsilon-rate: who is protected and how far twins may move."""
    p.add_argument(
        "--protected", help="protected feature name(s), comma-separated (default: those marked in the domain)"
    )
    p.add_argument(
        "--epsilon",
        action="append",
        metavar="NAME=VAL",
        help="tolerance of a non-protected feature (repeatable, or comma-separated)",
    )
    p.add_argument(
        "--epsilon-rate",
        type=float,
        metavar="R",
        help="tolerance of every non-protected, non-categorical feature as a share R of its range "
        "(rounded down for integer features; categorical codes keep 0)",
    )


def individual_keywords(args: Any) -> dict[str, Any]:
    """Who is protected, how far twins move, and how the model is read, as the API's keywords."""
    return {
        "protected": args.protected,
        "epsilon": name_values(args.epsilon) or None,
        "epsilon_rate": args.epsilon_rate,
        "trust_pickle": args.trust_pickle,
        "preprocessor": args.preprocessor,
    }


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
    """--workers: where `work` runs (a number of processes, or a Ray cluster)."""
    p.add_argument(
        "--workers",
        action=Workers,
        metavar="N|ray[=ADDRESS]",
        help=f"processes for {work} (default: every usable core, started once a run outlasts a "
        "second; 1: this process only); or 'ray' to run it on a Ray cluster: ray (the running cluster or "
        "RAY_ADDRESS), ray=local (start one on this machine) or ray=ADDRESS; needs faircert[ray]",
    )
    p.set_defaults(workers=None, ray=None)


def add_checkpoint_arguments(p: Any, job: str) -> None:
    """--checkpoint FILE | every=S | resume=FILE: a killed `job` continues where it stood."""
    add_key_values(
        p,
        "--checkpoint",
        "FILE|KEY=VALUE",
        f"FILE: write {job}'s state to FILE every {Budget.checkpoint_every:g} seconds (every=S) and at the end "
        "(atomically), so a killed run can be resumed; resume=FILE: continue the run a checkpoint holds "
        "(same model, data and question; refused otherwise), writing to FILE unless a FILE is given too",
        keys={"file": str, "every": float, "resume": str},
        bare="file",
        aliases={"--checkpoint-every": "every", "--resume": "resume"},
    )


def add_run_arguments(
    p: Any, options: type[Budget], work: str, budget: tuple[str, str] = ("", ""), checkpoint: str | None = None
) -> None:
    """The run's flags: --time-limit, --seed, --workers (where `work` runs), --budget (memory, and
    the command's own budgets: `budget` is their keys and their help) and, for a `checkpoint`ed
    job, --checkpoint."""
    add_defaulted(p, "--time-limit", options.time_limit, "seconds", "S")
    p.add_argument("--seed", type=int, default=options.seed, help="seed of the random draws")
    add_parallel_arguments(p, work)
    keys, help = budget
    add_budget(p, help, *keys.split())
    if checkpoint:
        add_checkpoint_arguments(p, checkpoint)


def add_budget(p: Any, help: str, *keys: str) -> None:
    """--budget KEY=VALUE: the memory limit, and `keys` (the command's own work budgets)."""
    names = ("memory", *keys)
    add_key_values(
        p,
        "--budget",
        "KEY=VALUE",
        "where the run stops short of its time limit (repeatable): memory=BYTES: bytes of state the run may "
        "keep, per process (e.g. 800M, 2G, 1.5GiB; default 1/16 of this machine's memory); reaching it ends "
        "the run at once with its sound partial result (stopped: memory limit; exit 2, undecided, unless it "
        "had already proven or refuted the answer)" + help,
        keys={k: BUDGET_KEYS[k][2] for k in names},
        aliases={BUDGET_KEYS[k][0]: k for k in names},
    )


def add_outputs(p: Any, csv: dict[str, str]) -> None:
    """--json, --html, --csv (the tables `csv` names, by kind: the first is the default; each
    kind's former flag `--KIND-csv` stays a hidden alias) and --quiet."""
    p.add_argument("--json", metavar="OUT", help="write the JSON result here ('-' for stdout)")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report")
    if csv:
        kinds = list(csv)
        add_key_values(
            p,
            "--csv",
            "[KIND=]OUT.csv",
            "write a table as CSV (repeatable): "
            + "; ".join(f"{k}: {h}" for k, h in csv.items())
            + f" (default kind {kinds[0]})",
            keys=dict.fromkeys(kinds, str),
            bare=kinds[0],
            aliases={flag: kind for flag, kind in CSV_ALIASES.items() if kind in csv},
        )
    p.add_argument("--quiet", action="store_true", help="no progress bar or tables")


#: Former flags of the CSV tables (each command reads the ones of its kinds).
CSV_ALIASES = {"--counterexamples": "counterexamples", "--partitions-csv": "partitions", "--rows-csv": "rows"}


def finish(result: Any, args: Any, **page: Any) -> None:
    """The result written as the command line asks, saying when a signal ended the run; `page`:
    what the HTML page's renderer takes beyond the result (a link to a companion page)."""
    from ..report.render import Outputs, render

    mark_interrupted(result)
    render(result, Outputs(args.json, args.html, getattr(args, "csv", None) or {}, not args.quiet, page))


def options_of(cls: type[Budget], args: Any, *own: str) -> Any:
    """The command's options from the run flags every command shares (time limit, seed, workers,
    checkpoint, budget: those the command has) and the command's `own` flags, by name."""
    shared = {"time_limit": args.time_limit, "seed": args.seed}
    if hasattr(args, "workers"):
        shared |= {"workers": args.workers, "ray_address": args.ray}
    checkpoint = getattr(args, "checkpoint", None) or {}
    names = {"file": "checkpoint", "every": "checkpoint_every", "resume": "resume"}
    shared |= {names[k]: v for k, v in checkpoint.items()}
    return cls(**shared, **budget_keywords(args), **picked(args, *own))


def picked(args: Any, *names: str) -> dict[str, Any]:
    """The flags `names` as keywords of the same names."""
    return {name: getattr(args, name) for name in names}


def add_method(p: Any, options: Any, sound: str) -> None:
    """--method sound|sampling and --delta, the sampling test's error probability."""
    p.add_argument(
        "--method",
        choices=("sound", "sampling"),
        default=options.method,
        help=f"sound: {sound} (default); sampling: a sequential statistical test wrong with probability --delta",
    )
    add_defaulted(p, "--delta", options.delta, "sampling: probability that the verdict is wrong")


@contextmanager
def run_guard(args: Any, *more: str | Path | None) -> Iterator[None]:
    """Around a command's run: every output path (those of `args`, and `more`) checked writable
    first, so a long run never ends unable to save its verdict; SIGINT and SIGTERM ask the engines
    to stop, and the command then writes the sound partial result as usual."""
    checkpoint = (getattr(args, "checkpoint", None) or {}).get("file")
    named = [getattr(args, "json", None), getattr(args, "html", None), checkpoint]
    check_writable([*named, *(getattr(args, "csv", None) or {}).values(), *more])
    with stop_on_signals(getattr(args, "quiet", False)):
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
