"""The few top-level functions a Python user calls: each prepares its request (`faircert.requests`),
runs the engine the registry finds for it, and finishes the result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Unpack, cast

from .engines.registry import find_engine
from .errors import PropertyError
from .limits import time_budget
from .options import AuditOptions, GroupOptions, GroupQuestion, ProgramOptions, ProgramQuestion, VerifyOptions
from .properties import UnfairSamples
from .requests import keywords as kw
from .requests.audit import audit_engine, prepare_audit, read_rows, rows_of_verify
from .requests.group import (
    GroupAsked,
    check_group_population,
    finish_group,
    group_additions,
    population_of,
    prepare_group,
    run_group,
)
from .requests.inputs import individual, load_model, model_and_property, protected_of, resolve_domain, sensitive
from .requests.verify import check_population, finish_verify, prepare_verify, run_verify
from .results import Comparison, GroupResult, ProgramResult, Result
from .results.explain import ExplainResult
from .results.rows import RowsResult

# load_model and resolve_domain come from the input stage
__all__ = ["audit", "compare", "explain", "export_vnnlib", "group", "load_model", "resolve_domain"]
__all__ += ["sample_counterexamples", "verify", "verify_program"]

Protected = str | Iterable[str | int] | None
Epsilon = Mapping[str, float] | float | None


def verify(
    model: Any,
    domain: Any = None,
    protected: Protected = None,
    *,
    epsilon: Epsilon = None,
    epsilon_rate: float | None = None,
    kappa: float | None = None,
    robustness: bool = False,
    population: str | None = None,
    data: Any = None,
    **keywords: Unpack[kw.VerifyKeywords],
) -> Result:
    """Quantify individual fairness (or robustness) of `model` on `domain`: sound shares proven fair
    (`certified`), proven unfair (`falsified`) and `undecided`, re-checked counterexamples and a labelled
    statistical estimate. `population` chooses the measure of the shares: "uniform" (the default: grid counts
    and volume), "independent" (each feature drawn from `data`'s rows, features independent: the shares become
    probabilities P[x has an unfair twin], exact for linear models and tree ensembles at epsilon 0, sound bounds
    for networks) or "bayesnet" (a Bayesian network learned from `data`; epsilon 0; sound bounds of a stated
    width, with an estimate from draws where they stay apart). `data` defaults to `domain` when that is a
    DataFrame or a CSV file. Keywords (`VerifyKeywords`): `time_limit`, `seed`, `target_undecided`,
    `confidence`, `max_counterexamples`; `workers` processes (or Ray at `ray_address`) share the box work, and
    `max_boxes` budgets it; `checkpoint=FILE` saves a refinement or complete decision every `checkpoint_every`
    seconds and at the end, `resume=FILE` continues it; `memory_limit` ("2G") bounds the state kept (`stopped ==
    "memory limit"`). `complete=True` decides the question (a proof or a re-checked pair); `partition_size=MS`
    is Fairify's partitioned verification. `options` (a `VerifyOptions`) may hold these instead, not both.
    `sensitive_features` aliases `protected`; `preprocessor` is the scikit-learn preprocessing a network or tree
    ensemble was trained behind (see `load_model`); `trust_pickle` allows pickles; `progress` hears of the run.
    The per-row audit of a dataset is `audit`; `rows=` (or population "empirical") still runs it."""
    given: dict[str, Any] = dict(keywords)
    rows = given.pop("rows", None)
    if rows is not None or population == "empirical":
        rows = rows_of_verify(rows, population, data, domain, given)
        result = audit(model, rows, domain, protected, epsilon=epsilon, epsilon_rate=epsilon_rate, **given)
        result.population = population or "rows"
        return cast(Any, result)  # the deprecated alias answers as the audit does
    asked = individual(protected, given, epsilon, epsilon_rate, kappa, robustness)
    loading, progress = kw.take_loading(given), given.pop("progress", None)
    options = kw.take_options("verify", VerifyOptions, given, kw.VerifyKeywords)
    with time_budget(options.time_limit):  # reading the model (in a child process) counts against it
        request = prepare_verify(model, domain, asked, check_population(population), data, loading, options)
        return finish_verify(run_verify(request, progress), request)


def audit(
    model: Any,
    rows: Any,
    domain: Any = None,
    protected: Protected = None,
    *,
    epsilon: Epsilon = None,
    epsilon_rate: float | None = None,
    **keywords: Unpack[kw.AuditKeywords],
) -> RowsResult:
    """Audit every row of `rows` (a DataFrame, a CSV path or an array of raw rows): is there a twin
    (another protected value, each epsilon-feature within its tolerance, every other feature equal)
    that the model decides differently?

    Returns a `RowsResult`: per-row verdicts (each `fair` a proof, each `unfair` with a twin
    re-checked on the model), exact counts overall and by protected group, and the flip test
    (epsilon 0) beside the epsilon answer. The domain, when not given, is inferred from the rows. A
    classifier no IR holds is audited as a black box, by its own predictions. Keywords
    (`AuditKeywords`): the run's (`checkpoint` keeps the rows decided), the per-row budgets
    `max_cells`, `max_twins`, `milp_seconds`, those reading the model, or `options` (`AuditOptions`).
    """
    given: dict[str, Any] = dict(keywords)
    asked = individual(protected, given, epsilon, epsilon_rate)
    loading, progress = kw.take_loading(given), given.pop("progress", None)
    options = kw.take_options("audit", AuditOptions, given, kw.AuditKeywords)
    with time_budget(options.time_limit):
        request = prepare_audit(model, rows, domain, asked, loading, options)
        result = audit_engine(request).run(request.ir, request.question, options, progress)
    result.model = request.model_name
    result.population = request.population
    return result


def explain(
    model: Any,
    data: Any,
    protected: Protected = None,
    *,
    epsilon: Epsilon = None,
    epsilon_rate: float | None = None,
    max_rules: int = 5,
    **keywords: Unpack[kw.ExplainKeywords],
) -> ExplainResult:
    """Where the unfair decisions are: at most `max_rules` rules (ranges, category sets) found on half of `data`'s
    rows, audited as `audit` does, each at least `min_lift` (3) times the global unfair rate there and measured on
    the other half (exact counts, `confidence` interval, lift, corrected p-value, what changes the decision); the
    largest regions without an unfair row. `population="uniform"|"independent"|"bayesnet"` (learned as `max_bins`,
    `score`, ..., `save_population` say): `samples` drawn points instead, with sound proven-unfair shares."""
    from .requests.explain import explain_measured, explain_population, rules_of_audit

    given: dict[str, Any] = dict(keywords)
    frame = read_rows(data)
    if explain_population(given) != "empirical":
        return explain_measured(model, frame, individual(protected, given, epsilon, epsilon_rate), max_rules, given)
    found: dict[str, Any] = {k: given.pop(k) for k in ("min_lift", "confidence") if k in given}
    audited = audit(
        model, frame, given.pop("domain", None), protected, epsilon=epsilon, epsilon_rate=epsilon_rate, **given
    )
    return rules_of_audit(audited, frame, max_rules, found, given)


def export_vnnlib(
    model: Any,
    domain: Any = None,
    protected: Protected = None,
    out_dir: str | Path = "vnnlib",
    *,
    epsilon: Epsilon = None,
    epsilon_rate: float | None = None,
    robustness: bool = False,
    **keywords: Unpack[kw.InputKeywords],
) -> tuple[Path, Path]:
    """Write a ReLU network's fairness (or robustness) query over `domain` as `out_dir/twin.onnx`
    (the twin network) and `out_dir/property.vnnlib` for VNN-COMP verifiers; returns both paths."""
    from .engines.network.problem import Problem
    from .engines.network.vnnlib import export
    from .models.network import ReluNetwork

    given: dict[str, Any] = dict(keywords)
    asked = individual(protected, given, epsilon, epsilon_rate, None, robustness)
    read = model_and_property(model, domain, asked, kw.take_loading(given))
    if not isinstance(read.ir, ReluNetwork):
        raise PropertyError(f"VNN-LIB export needs a ReLU network; the model is a {type(read.ir).__name__}")
    return export(Problem.build(read.ir, read.prop), out_dir)


def sample_counterexamples(
    model: Any,
    domain: Any = None,
    protected: Protected = None,
    n: int = 1000,
    *,
    epsilon: Epsilon = None,
    epsilon_rate: float | None = None,
    kappa: float | None = None,
    robustness: bool = False,
    **keywords: Unpack[kw.VerifyKeywords],
) -> Any:
    """Testing mode for tree ensembles: `n` inputs drawn uniformly from the exact unfair region, each
    with a twin the model labels differently (both re-checked on the model).

    Returns a DataFrame: the input's features (categories by name), the twin's (suffix `_prime`),
    and the model's probability of the positive label for both (`output`, `output_prime`);
    `frame.attrs["summary"]` holds the measure's bounds, the region's sizes, whether the draws are
    uniform over the exact region (`region_exact`) and the timings. `time_limit` is 600 s here.
    """
    given: dict[str, Any] = dict(keywords) if "options" in keywords else {"time_limit": 600.0, **keywords}
    asked = individual(protected, given, epsilon, epsilon_rate, kappa, robustness)
    read = model_and_property(model, domain, asked, kw.take_loading(given))
    options = kw.take_options("sample_counterexamples", VerifyOptions, given, kw.VerifyKeywords)
    question = UnfairSamples(read.prop, n)
    frame = find_engine(read.ir, question).run(read.ir, question, options, None)
    for f in read.prop.domain.features:  # coded categories by name, as the data had them
        if f.categories is not None:
            for column in (f.name, f"{f.name}_prime"):
                if column in frame:
                    frame[column] = [f.categories[int(v)] for v in frame[column]]
    return frame


def group(
    model: Any,
    data: Any = None,
    protected: str | Iterable[str] | None = None,
    label: str | None = None,
    population: Any = None,
    metrics: str | Iterable[str] = GroupQuestion.metrics,
    mediators: str | Iterable[str] | None = GroupQuestion.mediators,
    *,
    threshold: float = GroupQuestion.threshold,
    **keywords: Unpack[kw.GroupKeywords],
) -> GroupResult:
    """Group fairness of `model` under a population: P[yhat = 1 | group] for every compound group of
    the `protected` attributes, DI (min/max over groups, checked >= `threshold`), SP, EO, PCF.

    `population`: "empirical" (the data's rows, as fairlearn counts them: the default with `data`),
    "independent" or "bayesnet" (learned from `data` as a `PopulationSpec` says, or its knobs as
    keywords: `bins`, `max_bins`, `binning`, `bin_value`, `score`, `max_indegree`, `max_width`;
    `save_population=FILE` keeps it), a saved population (.json), a `DiscretePopulation`, or a
    program population (.fr), which the sound probability-bounds engine takes. Linear models under
    discrete populations are exact; others get sound bounds, and an estimate beside wide ones.
    `sensitive_features` aliases `protected` (a Series or DataFrame joins the data). What the answer
    adds (`GroupAdditions`): `gap_thresholds` checks gap metrics (SP, EO, ...) by name;
    `influence=True` adds fairness influence functions of every feature (or give subsets);
    `bin_bounds=True` adds bounds valid for any distribution inside the bins (linear models).
    `audit_table=True` adds the bias-audit tables of the data's rows (`exclude_small=True`: cells
    under 2% leave the impact ratios).
    `method="sampling"` decides DI/SP by a sequential test wrong with probability <= `delta`. The
    run keywords are `verify`'s (workers split the sound bounds), or `options` (`GroupOptions`).
    """
    given: dict[str, Any] = dict(keywords)
    names, data = sensitive(protected_of(protected, given.pop("sensitive_features", None)), data)
    save_population = given.pop("save_population", None)
    population = population_of(check_group_population(population, data), given)
    asked = GroupAsked(names, label, metrics, mediators, threshold, **group_additions(given))
    loading, progress = kw.take_loading(given), given.pop("progress", None)
    options = kw.take_options("group", GroupOptions, given, kw.GroupKeywords)
    with time_budget(options.time_limit):
        request = prepare_group(model, data, asked, population, loading, options, save_population)
    return finish_group(run_group(request, progress), request)


def compare(
    models: Mapping[str, Any] | Iterable[Any],
    data: Any = None,
    protected: str | Iterable[str] | None = None,
    **group_options: Any,
) -> Comparison:
    """Group fairness of several models under the same data, groups and thresholds, side by side.

    `models` maps names to models (paths, framework objects or IRs), or lists them (named by their
    paths or positions); `group_options` are `group`'s keywords. `to_frame()` gives one row per model.
    """
    items = (
        list(models.items())
        if isinstance(models, Mapping)
        else [(str(m) if isinstance(m, (str, Path)) else f"model {i + 1}", m) for i, m in enumerate(models)]
    )
    if len(items) < 1:
        raise PropertyError("compare needs at least one model")
    results = [group(m, data, protected, **group_options) for _, m in items]
    return Comparison.of([n for n, _ in items], results)


def verify_program(
    program: Any,
    epsilon: float = ProgramQuestion.epsilon,
    *,
    kind: str = ProgramQuestion.kind,
    query: str | None = None,
    above: float | None = None,
    **keywords: Unpack[kw.ProgramKeywords],
) -> ProgramResult:
    """Group fairness of an annotated decision program (FairSquare's `.fr` language).

    `program` is a path, program text or a parsed Program. Checks P[target | sensitive, qualified] /
    P[target | not sensitive, qualified] > 1 - epsilon (`kind="ratio"`), both ways ("parity"), or
    |P[target | sensitive] - P[target | not sensitive]| < epsilon ("difference"). With `query` (an
    expression over the program's final variables, e.g. "x1 + x2 >= 0"), bounds P[query] instead:
    proven above / below `above` when given, else to within `tolerance` (sound only).
    `method="sound"` refines sound bounds until decided (and until the ratio's bounds are
    `ratio_width` tight, where given); `method="sampling"` runs a sequential test (`bound`
    "binomial" or "hoeffding") wrong with probability <= `delta`. Run keywords as for `verify`.
    """
    from .checkpoint import CHECKPOINTED
    from .checkpoint import refuse as refuse_checkpoint
    from .models.program import load_program

    given: dict[str, Any] = dict(keywords)
    progress = given.pop("progress", None)
    options = kw.take_options("verify_program", ProgramOptions, given, kw.ProgramKeywords)
    question = ProgramQuestion(epsilon=epsilon, kind=kind, query=query, above=above)
    parsed = load_program(program)
    engine = find_engine(parsed, question, options.method)
    if engine.name not in CHECKPOINTED:
        refuse_checkpoint(options, engine.name)
    return engine.run(parsed, question, options, progress)
