"""faircert: prove, quantify and explain the fairness of trained ML models."""

from ._version import __version__
from .api import compare, export_vnnlib, group, load_model, sample_counterexamples, verify, verify_program
from .domain import Domain, Feature
from .errors import DataError, DomainError, FaircertError, ModelFormatError, PropertyError
from .models.network import ReluNetwork
from .results import Counterexample, GroupResult, ProgramResult, Result, StatisticalEstimate

__all__ = [
    "__version__",
    "compare",
    "Counterexample",
    "DataError",
    "Domain",
    "DomainError",
    "FaircertError",
    "Feature",
    "GroupResult",
    "ModelFormatError",
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
    "verify_program",
]
