"""What every result shares: the verdict words, exit codes, and the versioned JSON envelope.

Every result's JSON carries `schema_version` (bumped when a key changes meaning or disappears;
keys are added, never renamed) and `faircert_version` beside the result's own keys.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .._version import __version__

#: Version of the JSON schemas of all results (README, "JSON result schema"). 1.1: the per-row
#: audit's twins name their categories (they were codes), and statistical answers share one block.
SCHEMA_VERSION = "1.1"

VERDICTS = ("fair", "unfair", "unknown")
#: Where each result's HTML report comes from (`render.html` finds the renderer by the result's type).
#: Named, not imported: presentation sits above results, and results never import it.
REPORTS = "faircert.report.render"
#: VNN-COMP words for faircert verdicts: a counterexample is `sat`, a proof is `unsat`.
VNNCOMP_WORDS = {"fair": "unsat", "unfair": "sat", "unknown": "unknown"}
EXIT_CODES = {"fair": 0, "unfair": 1, "unknown": 2}
#: Where the proofs leave more than this share undecided (or a rate's sound bounds are wider),
#: reports lead with the statistical answer, labelled as such; the sound figures follow.
HEADLINE_UNDECIDED = 0.1


def statistical_block(
    value: float, low: float, high: float, confidence: float, samples: int, method: str
) -> dict[str, Any]:
    """A statistical answer in every result's JSON, in one shape: the value, the interval's ends,
    the confidence that the interval holds the truth (never a guarantee), the samples and how they
    were drawn."""
    return {"value": value, "low": low, "high": high, "confidence": confidence, "samples": samples, "method": method}


def interval_exit_code(low: float, high: float, limit: float, higher_is_fair: bool) -> int:
    """The exit code of an interval checked against a limit: 0 (fair) when all of it lies on the
    fair side, 1 (unfair) when all of it lies beyond, 2 when it straddles the limit."""
    fair, unfair = (low >= limit, high < limit) if higher_is_fair else (high <= limit, low > limit)
    return EXIT_CODES["fair" if fair else "unfair" if unfair else "unknown"]


class Verdict:
    """What every result type shares: a checked verdict, its exit code, its VNN-COMP word, JSON."""

    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def vnncomp(self) -> str:
        return VNNCOMP_WORDS[self.verdict]

    def _repr_html_(self) -> str:
        """The HTML report, inline in Jupyter."""
        return report_html(self)

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON data (each result type says what it holds)."""
        raise NotImplementedError

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(versioned(self.to_dict()), indent=indent, default=jsonable)


def report_html(result: Any) -> str:
    """`result`'s HTML report as a notebook cell's fragment."""
    import importlib

    html: str = importlib.import_module(REPORTS).html(result, standalone=False)
    return html


def versioned(payload: dict[str, Any]) -> dict[str, Any]:
    """A result's JSON object with the schema and faircert versions first."""
    return {"schema_version": SCHEMA_VERSION, "faircert_version": __version__, **payload}


def jsonable(value: Any) -> Any:
    """The JSON encoder's `default` for numpy values: results, checkpoints and saved populations."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


#: Values within this distance of a threshold are undecided: floating point never decides a verdict.
DECISION_TOLERANCE = 1e-9
