"""Group fairness of a LinearModel under a DiscretePopulation: groups, DI/SP/EO/PCF, influences."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...errors import DataError, PropertyError
from ...memory import STOPPED as MEMORY_STOPPED
from ...metrics import needing
from ...models.linear import ColumnEncoding, LinearModel
from ...options import GroupOptions
from ...population.discrete import BIN_SUFFIX, DiscretePopulation
from ...progress import ProgressEvent
from ...results import GroupProbability, GroupResult, di_interval, gap_interval
from . import grid
from .grid import GridEngine
from .influence import INFLUENCE_WIDTH, influences, requested_subsets
from .subset_sum import Engine

#: Rows the exact subset-sum tables may reach before the histogram engine answers instead.
EXACT_ROWS = 200_000


def group_probabilities(
    model: LinearModel,
    pop: DiscretePopulation,
    evidence: dict[str, int] | None = None,
    stats: RateStats | None = None,
    condition: str = "",
    spread_bins: bool = False,
    deadline: float | None = None,
    cells: int | None = None,
    try_exact: bool = True,
) -> list[GroupProbability]:
    """P[yhat = 1 | group, evidence] for every compound protected group: exact while the subset-sum
    tables stay small, else sound bounds of a width below 1e-3 or so from the histogram engine
    (`grid`); with `spread_bins`, for any distribution inside the bins (subset-sum, bucketed past
    `deadline` so the answer comes quickly, still sound)."""
    values_in_bins = [v.card for v in pop.variables.values() if v.parents and v.parents[0].endswith(BIN_SUFFIX)]
    engine: Any
    if not spread_bins and (not try_exact or math.prod(values_in_bins) > EXACT_ROWS):
        engine = GridEngine(model, pop, cells, deadline)  # so many data values in bins: their sums rarely meet
    else:
        engine = Engine(
            model,
            pop,
            max_rows=EXACT_ROWS if not spread_bins else 2_000_000,
            spread_bins=spread_bins,
            deadline=deadline,
        )
    out = []
    for group in pop.groups():
        lo, hi, size = engine.probability({**group, **(evidence or {})})
        if isinstance(engine, Engine) and engine.stats.bucketed and not spread_bins:
            engine = GridEngine(model, pop, cells, deadline)  # the exact tables outgrew their cap
            lo, hi, size = engine.probability({**group, **(evidence or {})})
        name = pop.group_name(group)
        if size <= 0:
            shown = ", ".join(f"{k}={v}" for k, v in name.items())
            raise DataError(
                f"group {shown}{' with ' + condition if condition else ''} has probability 0 under the "
                "population (no data for it); drop that value or merge it with another"
            )
        out.append(GroupProbability(name, lo, hi, size))
    if stats is not None:
        stats.absorb(engine)
    return out


@dataclass
class RateStats:
    """What computing the group rates took: the worst case over the engine runs (largest tables and
    bounds; exact only if every run was). The result's stats hold it under these names."""

    max_rows: int = 0
    components: int = 0
    rounding_bound: float = 0.0
    bucketed: bool = False
    over_budget: bool = False
    exact_arithmetic: bool = True
    grid: bool = False  # some rates came from score grids (`grid`): then the coarsest step and band
    grid_step: float = 0.0
    grid_width: float = 0.0
    grid_passes: int = 0
    memory_limited: bool = False

    def absorb(self, engine: Engine | GridEngine) -> None:
        if isinstance(engine, GridEngine):
            g = engine.stats
            self.max_rows = max(self.max_rows, g.max_cells)
            self.components = max(self.components, 1)
            self.rounding_bound = max(self.rounding_bound, engine.tol)
            self.over_budget |= g.over_budget
            self.exact_arithmetic = False
            self.grid = True
            self.grid_step = max(self.grid_step, g.grid_step)
            self.grid_width = max(self.grid_width, g.grid_width)
            return
        t = engine.stats
        self.max_rows = max(self.max_rows, t.max_rows)
        self.components = max(self.components, t.components)
        self.rounding_bound = max(self.rounding_bound, t.rounding_bound)
        self.bucketed |= t.bucketed
        self.over_budget |= t.over_budget
        self.exact_arithmetic &= t.exact_arithmetic

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.grid:  # grid figures only where a grid answered
            for key in ("grid", "grid_step", "grid_width", "grid_passes"):
                del out[key]
        if not self.memory_limited:
            del out["memory_limited"]
        return out


def state_distribution(pop: DiscretePopulation, name: str, evidence: dict[str, int]) -> np.ndarray:
    """P[name = s | evidence] for every state s, with the exact engine (indicator models)."""
    var = pop.variables[name]
    out = np.zeros(var.card)
    for s in range(var.card):
        probe = LinearModel(np.array([1.0]), -0.5, (ColumnEncoding(name, "onehot", (var.states[s],)),))
        out[s] = Engine(probe, pop).probability(evidence)[0]
    total = out.sum()
    if total <= 0:
        raise DataError(f"{name!r} has no distribution given {evidence}")
    return out / total


def label_conditions(pop: DiscretePopulation) -> list[tuple[str, DiscretePopulation, dict[str, int]]]:
    """(condition name, population, evidence) for Y = each label value."""
    if pop.label and pop.label in pop.variables:
        var = pop.variables[pop.label]
        return [(f"Y={lab}", pop, {pop.label: i}) for i, lab in enumerate(var.labels)]
    if pop.by_label:
        return [(f"Y={lab}", sub, {}) for lab, sub in pop.by_label.items()]
    raise PropertyError(
        "the metrics given the label (eo, eop, eopr) need the true label: pass label=<column> (CLI: --label)"
    )


def analyse(
    model: LinearModel, question: Any, deadline: float | None = None, memory_limit: int | None = None
) -> GroupResult:
    """Everything `faircert group` reports for a linear model under the question's discrete population.

    The question's `bin_bounds` adds, in `stats["within_bin_bounds"]`, sound bounds on every group's
    probability and on DI/SP for ANY distribution inside the bins (same bin probabilities), e.g. the
    continuous one.
    """
    start = time.perf_counter()
    pop: DiscretePopulation = question.population
    metrics = tuple(dict.fromkeys(m.lower() for m in question.metrics))
    mediators, frame, influence = question.mediators, question.data, question.influence
    groups, conditional, rates = _refined_rates(model, pop, bool(needing(metrics, "label")), deadline, memory_limit)
    approximations = _binning_notes(pop)
    if "pcf" in metrics:
        if not mediators:
            raise PropertyError("path-specific causal fairness needs mediators (mediators=[...] / --mediators)")
        top = max(groups, key=lambda g: g.value)
        top_states = {p: pop.variables[p].labels.index(str(v)) for p, v in top.group.items()}
        redistributed = pop
        for m in mediators:
            if m not in pop.variables or m in pop.protected or m == pop.label:
                raise PropertyError(
                    f"mediator {m!r} must be a non-protected feature of the population; "
                    f"it has: {', '.join(v for v in pop.variables if v not in pop.protected)}"
                )
            held = pop.bin_of(m)  # a binned mediator moves by its bins; its values inside a bin follow
            redistributed = redistributed.with_marginal(held, _given_group(pop, held, top_states, frame))
        conditional["pcf"] = group_probabilities(model, redistributed, stats=rates, deadline=deadline)
        approximations.append(
            f"PCF: mediators {list(mediators)} redistributed as in the most favoured group "
            f"({top.name}), each independently with its distribution given that group"
        )
    result_influence = []
    widest = max(g.high - g.low for g in groups)
    if influence and widest > INFLUENCE_WIDTH:
        approximations.append(
            f"influence not computed: a group rate is only known to within {widest:.3g}, too wide "
            f"to rank features (needs {INFLUENCE_WIDTH:g})"
        )
    elif influence:
        result_influence = influences(
            pop,
            groups,
            lambda p: group_probabilities(model, p, stats=rates, deadline=deadline),
            requested_subsets(influence, pop, model.columns),
        )
    stats = rates.to_dict()
    if question.bin_bounds:
        spread = group_probabilities(model, pop, spread_bins=True, deadline=deadline)
        di, sp = di_interval(spread), gap_interval("sp", spread)
        stats["within_bin_bounds"] = {
            "groups": {g.name: [g.low, g.high] for g in spread},
            "di": [di.low, di.high],
            "sp": [sp.low, sp.high],
        }
    if rates.over_budget:
        approximations.append(
            "the time limit was reached: the rest was computed coarser (bucketed sums or a 64 "
            "times coarser score grid) to finish; probabilities are sound bounds"
        )
    elif rates.bucketed:
        approximations.append("sum distributions were bucketed to bound memory: probabilities are sound bounds")
    engine_s = time.perf_counter() - start
    stats.update(
        engine_s=engine_s,
        learning_s=question.learning_s,
        population=pop.info,
        stopped="budget"
        if rates.over_budget
        else "row limit"
        if rates.bucketed
        else MEMORY_STOPPED
        if rates.memory_limited
        else "converged",
    )
    if rates.grid:
        approximations.append(
            f"the exact tables outgrew their cap: rates are bounded on a score grid of step "
            f"{rates.grid_step:.3g} (each bound within the mass of a score band "
            f"{rates.grid_width:.3g} wide at the threshold)"
        )
    result = GroupResult.build(
        groups,
        engine="subset-sum",
        population=pop.describe(),
        threshold=question.threshold,
        gap_thresholds=dict(question.gap_thresholds),
        metrics=metrics,
        conditional=conditional,
        approximations=approximations,
        elapsed_s=engine_s + question.learning_s,
        model=question.model_name,
        protected=list(pop.protected),
        label=pop.label or pop.info.get("label"),
        stats=stats,
    )
    result.method = "score histograms, sound bounds" if rates.grid else "exact tables"
    result.influence = result_influence
    return result


def _refined_rates(
    model: LinearModel,
    pop: DiscretePopulation,
    with_label: bool,
    deadline: float | None,
    memory_limit: int | None = None,
) -> tuple[list[GroupProbability], dict[str, list[GroupProbability]], RateStats]:
    """Group rates (and given each label value): exact, or on score grids refined while time and
    the memory limit allow."""

    def compute(cells: int, first: bool):
        stats = RateStats()
        # after a first pass on grids the exact tables are known to outgrow their cap: grids only
        groups = group_probabilities(model, pop, stats=stats, deadline=deadline, cells=cells, try_exact=first)
        conditional = {
            cond: group_probabilities(
                model, sub, ev, stats, condition=cond, deadline=deadline, cells=cells, try_exact=first
            )
            for cond, sub, ev in (label_conditions(pop) if with_label else [])
        }
        return groups, conditional, stats

    def width(out) -> float | None:
        groups, conditional, stats = out
        return max(g.high - g.low for gs in [groups, *conditional.values()] for g in gs) if stats.grid else None

    (groups, conditional, stats), passes, limited = grid.refined(compute, width, deadline, memory_limit)
    stats.grid_passes = passes
    stats.memory_limited = limited
    return groups, conditional, stats


def _given_group(pop: DiscretePopulation, name: str, group: dict[str, int], frame: Any) -> np.ndarray:
    """P[name | group]: from the network, or from the data for an independent population."""
    if pop.kind == "bayesnet" or frame is None:
        return state_distribution(pop, name, group)
    have = [str(c) for c in frame.columns]
    rows = np.ones(len(frame), dtype=bool)
    for p, s in group.items():
        rows &= pop.variables[p].codes(frame[frame.columns[have.index(p)]].to_numpy()) == s
    column = name.removesuffix(BIN_SUFFIX)
    codes = pop.variables[name].codes(frame[frame.columns[have.index(column)]].to_numpy()[rows])
    codes = codes[codes >= 0]
    if len(codes) == 0:
        raise DataError(f"no data rows in the most favoured group to redistribute mediator {name!r}")
    return np.bincount(codes, minlength=pop.variables[name].card) / len(codes)


def _binning_notes(pop: DiscretePopulation) -> list[str]:
    notes = []
    dropped = pop.info.get("edges_dropped") or []
    if dropped:
        shown = ", ".join(f"{d['edge'][0]}->{d['edge'][1]}" for d in dropped)
        lost = sum(d["loglik"] for d in dropped)
        notes.append(
            f"network: {len(dropped)} weakest edge(s) dropped ({lost:.0f} nats of the data's log-likelihood) "
            f"to keep elimination within {pop.info.get('max_width')} configurations: {shown}"
        )
    binning = pop.info.get("binning", {})
    for v in pop.variables.values():
        if v.edges is None:
            continue
        how = f"{binning.get('method', '')} ".lstrip()
        name = v.name.removesuffix(BIN_SUFFIX)
        if name != v.name or v.within is not None:
            if name != v.name:
                n_values = pop.variables[name].card
            else:
                assert v.within is not None  # by the test above
                n_values = len({x for vals, _ in v.within for x in vals})
            notes.append(
                f"{name}: {v.card} {how}bins for the network, inside each the data's own values with their "
                f"frequencies ({n_values} values in all)"
            )
            continue
        values = ", ".join(f"{float(s):.4g}" for s in v.states)
        taking = {
            "mean": "the mean of its data",
            "midpoint": "its midpoint",
            "data": "the mean of its data (the column has too many distinct values to keep them)",
        }.get(binning.get("bin_value"), "its value")
        notes.append(f"{v.name}: {v.card} {how}bins, each bin taking {taking}: {values}")
    return notes


def bind_columns(model: LinearModel, pop: DiscretePopulation) -> LinearModel:
    missing = [c for c in model.columns if c not in pop.variables]
    if missing:
        raise DataError(
            f"the population has no variable for model column(s) {missing}; it has: {', '.join(pop.variables)}"
        )
    return model


def answer(model: LinearModel, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: exact group fairness of a linear model under a discrete population."""
    deadline = None if options.time_limit is None else time.monotonic() + options.time_limit
    result = analyse(bind_columns(model, question.population), question, deadline, options.memory_limit)
    if progress is not None:
        progress(ProgressEvent(elapsed_s=result.elapsed_s))
    return result
