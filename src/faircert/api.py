"""The few top-level functions a Python user calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .domain import Domain, Feature
from .errors import DomainError, PropertyError
from .properties import check_time_limit, individual_fairness
from .results import Result

Progress = Callable[[dict], None]


def load_model(model: Any, trust_pickle: bool = False) -> Any:
    """The IR of a model given as a path, a framework object or an IR."""
    from .models.io import load_model as _load

    return _load(model, trust_pickle=trust_pickle)


def resolve_domain(domain: Any, model_ir: Any) -> Domain:
    """A Domain from a path, a Domain, a DataFrame/array to infer it from, or the model's own ranges."""
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, (str, Path)):
        if Path(domain).suffix.lower() in (".csv", ".tsv"):
            return Domain.infer(domain)
        return Domain.load(domain)
    if domain is not None:
        return Domain.infer(domain)
    lower = getattr(model_ir, "input_lower", None)
    upper = getattr(model_ir, "input_upper", None)
    if lower is None or upper is None:
        raise DomainError("this model declares no input ranges; pass a domain (a file, a Domain or a DataFrame)")
    names = getattr(model_ir, "input_names", None) or [f"x{i}" for i in range(len(lower))]
    return Domain(tuple(Feature(n, "integer", lo, hi) for n, lo, hi in zip(names, lower, upper)))


def verify(model: Any, domain: Any = None, protected: str | Iterable[str | int] | None = None, *,
           sensitive_features: str | Iterable[str | int] | None = None,
           epsilon: Mapping[str, float] | float | None = None, epsilon_rate: float | None = None,
           kappa: float | None = None, robustness: bool = False, time_limit: float | None = 60.0,
           target_undecided: float = 0.0, confidence: float = 0.99, seed: int = 0,
           max_counterexamples: int = 100, trust_pickle: bool = False,
           progress: Progress | None = None) -> Result:
    """Quantify individual fairness (or robustness) of `model` on `domain`.

    Returns sound shares of the domain proven fair (`certified`) and proven unfair (`falsified`),
    the `undecided` rest, re-checked counterexamples and a labelled statistical estimate.
    `sensitive_features` is an alias of `protected`.
    """
    if protected is not None and sensitive_features is not None:
        raise PropertyError("give either protected or sensitive_features, not both")
    protected = protected if protected is not None else sensitive_features
    time_limit = check_time_limit(time_limit)
    if not 0.0 <= target_undecided <= 1.0:
        raise PropertyError(f"target undecided share must lie in [0, 1], got {target_undecided}")
    if not 0.0 < confidence < 1.0:
        raise PropertyError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    ir = load_model(model, trust_pickle=trust_pickle)
    dom = resolve_domain(domain, ir)
    prop = individual_fairness(dom, protected, epsilon=epsilon, epsilon_rate=epsilon_rate, kappa=kappa,
                               robustness=robustness)
    from .models.network import ReluNetwork

    if isinstance(ir, ReluNetwork):
        dom.check_width(ir.n_inputs)
        if kappa is not None or robustness:
            raise PropertyError("kappa and robustness are supported for tree ensembles, not for networks")
        from .engines.boxes import verify_network

        return verify_network(ir, prop, time_limit=time_limit, target_undecided=target_undecided,
                              confidence=confidence, seed=seed, max_counterexamples=max_counterexamples,
                              progress=progress)
    from .models.trees import TreeEnsemble

    if isinstance(ir, TreeEnsemble):
        dom.check_width(ir.n_features)
        from .engines.trees import verify_trees

        return verify_trees(ir, prop, time_limit=time_limit, seed=seed, max_counterexamples=max_counterexamples,
                            progress=progress)
    raise PropertyError(f"individual-fairness verification does not support models of type {type(ir).__name__}")
