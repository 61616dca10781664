"""Flags that gather a family of related knobs: `--learn KEY=VALUE`, `--budget KEY=VALUE`, ...

Each family is one flag (repeatable) whose keys are checked and converted here, so a command shows
a short list of flags. The knobs' former flags stay as hidden aliases of the family's flag
(`--max-bins 5` reads as `--learn max-bins=5`): old command lines keep working, and the help
shows only the family's own name.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable, Sequence
from typing import Any

#: A key's conversion from text (raising ValueError with a readable message), or its choices.
Convert = Callable[[str], Any] | tuple[str, ...]


def _converted(key: str, value: str, convert: Convert) -> Any:
    if isinstance(convert, tuple):
        if value not in convert:
            raise ValueError(f"{key} takes one of {', '.join(convert)}, got {value!r}")
        return value
    kind = {int: "an integer", float: "a number"}.get(convert)  # type: ignore[call-overload]
    if kind is None:  # a conversion of its own says what went wrong
        return convert(value)
    try:
        return convert(value)
    except ValueError:
        raise ValueError(f"{key} takes {kind}, got {value!r}") from None


class KeyValues(argparse.Action):
    """`--flag KEY=VALUE` (repeatable) into a dict at `dest`. `keys` maps each key to its
    conversion; `repeated` keys collect a list of their values; `bare` is the key a value without
    `=` stands for (`--checkpoint FILE`); `switches` are keys given alone (`--learn bin-bounds`),
    `alone` the one the flag given without a value means (with nargs="?"), and set whenever the
    flag itself (not an alias) is given. `aliases` maps a former flag to its key."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        keys: dict[str, Convert],
        aliases: dict[str, str] | None = None,
        bare: str | None = None,
        switches: Sequence[str] = (),
        repeated: Sequence[str] = (),
        alone: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.keys, self.aliases, self.bare, self.alone = keys, dict(aliases or {}), bare, alone
        self.switches, self.repeated = tuple(switches), tuple(repeated)
        self.shown = len(option_strings)
        super().__init__([*option_strings, *self.aliases], dest, default=None, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        given = dict(getattr(namespace, self.dest, None) or {})  # a copy: the default is shared
        try:
            key, value = self._split(values, option_string)
            converted = True if key in self.switches else _converted(key, value, self.keys[key])
        except ValueError as exc:  # named by the flag as given, aliases included
            raise argparse.ArgumentError(None, f"argument {option_string}: {exc}") from None
        if key in self.repeated:
            converted = [*given.get(key, []), converted]
        given[key] = converted
        if self.alone is not None and option_string not in self.aliases:
            given[self.alone] = True
        setattr(namespace, self.dest, given)

    def _split(self, values: str | None, option_string: str | None) -> tuple[str, Any]:
        key = self.aliases.get(option_string or "") or (self.alone if values is None else None)
        if key is not None:  # a former flag, or the flag alone
            if (values is None) != (key in self.switches):
                raise ValueError(f"{key} takes no value" if values is not None else "expected a value")
            return key, values
        key, sep, value = str(values).partition("=")
        key = key.strip()
        if not sep and key in self.switches:
            return key, None
        if not sep and self.bare is not None:
            return self.bare, values
        if key not in self.keys or key in self.switches or not sep:
            allowed = ", ".join(k if k in self.switches else f"{k}=..." for k in self.keys if k != self.bare)
            raise ValueError(f"expected KEY=VALUE with KEY one of {allowed}; got {values!r}")
        return key, value


def add_key_values(p: Any, flag: str, metavar: str, help: str, **family: Any) -> None:
    """Add a `KeyValues` flag; its help lists the keys (and its former flags stay hidden)."""
    p.add_argument(flag, action=KeyValues, metavar=metavar, help=help, **family)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, less a family flag's hidden aliases."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        shown = getattr(action, "shown", None)
        if shown is not None and len(action.option_strings) > shown:
            action = copy.copy(action)
            action.option_strings = action.option_strings[:shown]
        return super()._format_action_invocation(action)


#: `--budget`: where a run stops short of its time limit. Each command takes the keys it has.
BUDGET_KEYS: dict[str, tuple[str, str, Convert]] = {
    # key: (former flag, options field, conversion); a memory size ("2G") is read by the options
    "memory": ("--memory-limit", "memory_limit", str),
    "boxes": ("--max-boxes", "max_boxes", int),
    "undecided": ("--target-undecided", "target_undecided", float),
    "counterexamples": ("--max-counterexamples", "max_counterexamples", int),
    "cells": ("--max-cells", "max_cells", int),
    "twins": ("--max-twins", "max_twins", int),
    "milp-seconds": ("--milp-seconds", "milp_seconds", float),
}


def budget_keywords(args: Any) -> dict[str, Any]:
    """The options' fields `--budget` gave (the options' own defaults stand for the rest)."""
    return {BUDGET_KEYS[k][1]: v for k, v in (getattr(args, "budget", None) or {}).items()}


class Workers(argparse.Action):
    """`--workers N`, `--workers ray` or `--workers ray=ADDRESS` (former `--ray [ADDRESS]`, hidden):
    where the work runs."""

    shown = 1

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__([*option_strings, "--ray"], dest, nargs="?", default=None, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        if option_string == "--ray":
            namespace.ray = values or "auto"
            return
        text = str(values or "")
        if text == "ray" or text.startswith("ray="):
            namespace.ray = text.partition("=")[2] or "auto"
            return
        try:
            namespace.workers = int(text)
        except ValueError:
            raise argparse.ArgumentError(
                None, f"argument --workers: expected N or ray[=ADDRESS], got {text!r}"
            ) from None
