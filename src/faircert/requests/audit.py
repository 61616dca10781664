"""`audit`'s request: the rows to audit, read as the domain's codes, and the model they are
decided on (its IR, or the classifier itself as a black box where no IR holds it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..checkpoint import fingerprint
from ..data import encode_table, read_table
from ..engines.registry import find_engine
from ..errors import PropertyError, UnsupportedModelError
from ..options import AuditOptions, Budget
from ..properties import RowAudit, individual_fairness
from .inputs import Individual, estimator_object, model_and_property, population_data, positional_names, resolve_domain


@dataclass(frozen=True)
class AuditRequest:
    """Everything the per-row engine reads, checked."""

    ir: Any
    question: RowAudit
    options: AuditOptions
    #: the model's name in reports: its file, or its class
    model_name: str
    population: str = "rows"


def prepare_audit(
    model: Any, rows: Any, domain: Any, asked: Individual, loading: dict[str, Any], options: AuditOptions
) -> AuditRequest:
    """Read the rows and the model; the domain, when not given, is inferred from the rows."""
    frame = read_table(rows, compact=True)  # a large file's text kept as codes
    domain = frame if domain is None else domain
    try:
        read = model_and_property(model, domain, asked, loading)
        ir, prop = read.ir, read.prop
    except UnsupportedModelError as exc:
        if loading.get("preprocessor") is not None:
            raise
        # a classifier no IR holds is audited as a black box: by its own predictions
        ir, prop = black_box(estimator_object(model, bool(loading.get("trust_pickle")), exc), domain, asked)
        ir.reason = str(exc)  # said in the result: what made the model a black box
    # rows outside the domain are audited (the domain clips the epsilon-moves only), and a row the
    # model cannot evaluate (a category the domain does not name, a missing value) is unknown alone
    codes = encode_table(frame, prop.domain, unreadable=True, compact=True)
    model_id = fingerprint(ir) if (options.checkpoint or options.resume) else ""
    name = getattr(ir, "source", "") or type(model).__name__
    return AuditRequest(ir, RowAudit(prop, codes, model_id), options, name)


#: the per-row engine that bounds on a device (`AuditOptions.device`)
DEVICE_ENGINE = "rows-network"


def audit_engine(request: AuditRequest) -> Any:
    """The per-row engine of the request's model; a device asked for a model whose rows are not
    decided by network bounds is an error."""
    engine = find_engine(request.ir, request.question)
    if request.options.device is not None and engine.name != DEVICE_ENGINE:
        raise PropertyError(f"--device bounds a network's rows ({DEVICE_ENGINE}); these rows go to {engine.name}")
    return engine


def rows_of_verify(rows: Any, population: str | None, data: Any, domain: Any, keywords: dict[str, Any]) -> Any:
    """The rows `verify(rows=...)` or `verify(population="empirical")` audits (the per-row audit
    under its old name, which says so once); `verify`'s options become the audit's."""
    import warnings

    warnings.warn(
        "verify(rows=...) and verify(population='empirical') are now faircert.audit(model, rows, ...)",
        FutureWarning,
        stacklevel=4,
    )
    if rows is not None and population not in (None, "uniform"):
        raise PropertyError("give rows or a population, not both (population 'empirical' audits the data's rows)")
    if isinstance(keywords.get("options"), Budget):
        keywords["options"] = AuditOptions.of(keywords["options"])
    return population_data(data, domain, "empirical") if rows is None else rows


def read_rows(rows: Any) -> Any:
    """The rows as a DataFrame of raw values (a CSV path, an array or a DataFrame)."""
    return read_table(rows)


def black_box(estimator: Any, domain: Any, asked: Individual) -> tuple[Any, Any]:
    from ..models.blackbox import BlackBoxModel

    dom = resolve_domain(domain, None)
    names = positional_names(asked.protected, dom)
    ir, dom = BlackBoxModel.of(estimator, dom, keep=set(names) | set(dom.protected_names))
    return ir, individual_fairness(dom, names, epsilon=asked.epsilon, epsilon_rate=asked.epsilon_rate)
