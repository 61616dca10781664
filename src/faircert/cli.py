"""The `faircert` command.

Exit codes (every verdict-producing command): 0 fair, 1 unfair, 2 undecided/timeout/interrupted,
3 bad input (including usage errors), 4 internal error. SIGINT or SIGTERM during a run stops the
engines; the command writes the sound partial result and exits with its verdict's code.
Each subcommand lives in `faircert.commands.<name>` and exposes `register(subparsers)`, which adds
its parser and sets `handler(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from .errors import DeviceMemoryError, FaircertError
from .limits import start_command_clock

EXIT_UNDECIDED = 2
EXIT_BAD_INPUT = 3
EXIT_INTERNAL = 4
MAX_MESSAGE = 2000  # characters of an error message printed

COMMANDS = ("verify", "audit", "explain", "domain", "demo", "group", "compare", "program", "sample", "export_vnnlib")


class UsageError(FaircertError):
    """A command line that does not parse."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but usage errors exit 3 (argparse's own 2 would read as "undecided"), and the
    help leaves out the hidden aliases of a family flag (`commands.flags`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from .commands.flags import HelpFormatter

        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise UsageError(message)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # `--flag=--` gives the flag the text "--": argparse would drop it as the end of the options
        # and hand the flag an empty list, unchecked by its type
        if arg_strings == ["--"] and action.nargs in (None, argparse.OPTIONAL) and action.option_strings:
            return self._get_value(action, "--")
        return super()._get_values(action, arg_strings)


def build_parser() -> ArgumentParser:
    from . import __version__

    parser = ArgumentParser(
        prog="faircert",
        description="Prove, quantify and explain the fairness of trained ML models.",
        epilog="exit codes: 0 fair, 1 unfair, 2 undecided, 3 bad input, 4 internal error",
    )
    parser.add_argument("--version", action="version", version=f"faircert {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        return int(args.handler(args))
    except SystemExit as exc:  # --help and --version exit 0 through argparse
        return int(exc.code or 0)
    except FaircertError as exc:
        message = str(exc)
        if len(message) > MAX_MESSAGE:  # names and values from hostile files must not flood the terminal
            message = message[:MAX_MESSAGE] + f"... ({len(message) - MAX_MESSAGE:,} more characters)"
        print(f"faircert: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # e.g. `faircert verify ... --json - | head`: the reader left, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MemoryError as exc:  # no verdict within the memory this process may use: the budget ran out
        advice = "allow the process more memory, or give a smaller domain or a shorter time limit"
        print(
            f"faircert: error: out of memory before a verdict; {exc if isinstance(exc, DeviceMemoryError) else advice}",
            file=sys.stderr,
        )
        return EXIT_UNDECIDED
    except KeyboardInterrupt:  # a second signal while a run was stopping, or one outside a run
        print("faircert: aborted: no result written", file=sys.stderr)
        return EXIT_UNDECIDED
    except Exception as exc:  # a bug: never let Python's exit 1 read as "unfair"
        import traceback

        traceback.print_exc()
        print(f"faircert: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


def _abort(signum: int, frame: object) -> None:
    """SIGINT or SIGTERM outside a run (while the libraries load, say): end at once, quietly."""
    print("faircert: aborted: no result written", file=sys.stderr)
    raise SystemExit(EXIT_UNDECIDED)


def run() -> None:
    """The console entry point: signals are handled from its first line (a run then installs its own)."""
    import signal

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _abort)
    start_command_clock()
    sys.exit(main())


if __name__ == "__main__":
    run()
