"""faircert: prove, quantify and explain the fairness of trained ML models."""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

# The public names load on first use: `import faircert` (and the command, which must handle
# signals from its first line) stays fast, and numpy and the engines come with the first call.
_PUBLIC = {
    "compare": "api",
    "audit": "api",
    "explain": "api",
    "export_vnnlib": "api",
    "group": "api",
    "load_model": "api",
    "sample_counterexamples": "api",
    "verify": "api",
    "verify_program": "api",
    "PopulationSpec": "population.spec",
    "AuditOptions": "options",
    "GroupOptions": "options",
    "ProgramOptions": "options",
    "VerifyOptions": "options",
    "ExplainResult": "results.explain",
    "Domain": "domain",
    "Feature": "domain",
    "DataError": "errors",
    "DomainError": "errors",
    "FaircertError": "errors",
    "ModelFormatError": "errors",
    "PropertyError": "errors",
    "ReluNetwork": "models.network",
    "Counterexample": "results",
    "GroupResult": "results",
    "ProgramResult": "results",
    "Result": "results",
    "StatisticalEstimate": "results",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    try:  # a submodule (faircert.errors, faircert.interrupt, ...)
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError:
        raise AttributeError(f"module 'faircert' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = [
    "__version__",
    "audit",
    "AuditOptions",
    "compare",
    "Counterexample",
    "explain",
    "DataError",
    "Domain",
    "DomainError",
    "ExplainResult",
    "FaircertError",
    "Feature",
    "GroupOptions",
    "GroupResult",
    "ModelFormatError",
    "PopulationSpec",
    "ProgramOptions",
    "ProgramResult",
    "PropertyError",
    "ReluNetwork",
    "Result",
    "StatisticalEstimate",
    "export_vnnlib",
    "group",
    "load_model",
    "sample_counterexamples",
    "verify",
    "VerifyOptions",
    "verify_program",
]
