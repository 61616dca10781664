"""`explain`'s request: over the data's rows, the rules of their audit; under a domain population,
the property and the population prepared as `verify` prepares them, then the rules found on points
drawn from the population and each rule's boxes verified (`subgroups.measured`)."""

from __future__ import annotations

from typing import Any

from ..errors import PropertyError
from ..limits import time_budget
from ..options import LENT, AuditOptions, VerifyOptions
from ..results.explain import ExplainResult
from . import keywords as kw
from .inputs import Individual
from .keywords import PopulationKeywords
from .verify import prepare_verify


def rules_of_audit(
    audited: Any, frame: Any, max_rules: int, found: dict[str, Any], given: dict[str, Any]
) -> ExplainResult:
    """`explain` over the data's rows: the rules of the audit's verdicts (`subgroups.frame`), the
    rows split in two by the run's seed."""
    from ..subgroups import explain_rows

    seed = given["options"].seed if given.get("options") is not None else given.get("seed", 0)
    return explain_rows(audited, frame, max_rules=max_rules, seed=seed, **found)


def explain_population(given: dict[str, Any]) -> str:
    """`explain`'s population (`given["population"]`): the data's rows ("empirical", the default) or
    a domain population; `samples` belongs to a domain population only."""
    from ..subgroups.measured import DOMAIN_POPULATIONS

    population = given.get("population")
    knobs = sorted(k for k in given if k in PopulationKeywords.__optional_keys__)
    if knobs and population != "bayesnet":
        raise PropertyError(
            f"{', '.join(knobs)}: how a population is learned, for population 'bayesnet' only "
            f"(the population is {population or 'empirical'!r})"
        )
    if population is None or population in ("empirical", "rows"):
        given.pop("population", None)
        given.pop("samples", None)  # the rows are all audited: nothing is drawn
        return "empirical"
    if population not in DOMAIN_POPULATIONS:
        raise PropertyError(
            f"unknown population {population!r} for explain; choose empirical, {', '.join(DOMAIN_POPULATIONS)}"
        )
    return str(population)


def explain_measured(model: Any, frame: Any, asked: Individual, max_rules: int, given: dict[str, Any]) -> ExplainResult:
    """`explain` under a domain population (`given["population"]`): the domain (given, or inferred
    from the data) verified box by box under it, and points drawn from it decided exactly."""
    from ..population.spec import PopulationSpec
    from ..subgroups.measured import SAMPLES, Settings
    from ..subgroups.measured import explain_measured as measured

    population = given.pop("population")
    knobs = {k: given.pop(k) for k in list(given) if k in PopulationKeywords.__optional_keys__}
    save = knobs.pop("save_population", None)
    learning = PopulationSpec("bayesnet", **knobs) if population == "bayesnet" else None
    search = Settings(
        max_rules,
        given.pop("min_lift", 3.0),
        given.pop("confidence", 0.95),
        given.pop("samples", SAMPLES),
    )
    domain, loading = given.pop("domain", None), kw.take_loading(given)
    run = kw.take_options("explain", AuditOptions, given, kw.AuditKeywords)
    options = VerifyOptions.of(run, LENT)
    with time_budget(options.time_limit):
        request = prepare_verify(
            model, frame if domain is None else domain, asked, population, frame, loading, options, learning, save
        )
        result = measured(request, search, request.options)
    result.model = getattr(request.ir, "source", "") or type(model).__name__
    return result
