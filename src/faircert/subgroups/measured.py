"""`explain` under a domain population (uniform over the domain, the data's independent marginals,
or a Bayesian network learned from the data): where the unfair inputs are, among all inputs the
population can draw, not only the data's rows.

- The unfair set is found by points drawn from the population (as the black-box answer draws them),
  each decided exactly by the per-row audit; the rules are searched on half of them and measured on
  the other half, as over data rows. Their rates are statistical: estimates with intervals.
- Each rule's `share` is its exact mass under the population (a product measure: the product of
  each feature's share of the rule's range).
- Each rule's `proven_unfair_share` is sound: the rule's region cut into boxes (a category set into
  its runs of consecutive codes), each box verified as its own domain, and the proven-unfair share
  of each box times the box's mass added up. The twins of a box stay inside it, so what is proven
  unfair there is unfair in the whole domain; boxes left out (more than MAX_BOXES, or not reached
  within the time limit) only lower it.
- A fair rule whose boxes are all proven fair is `proven`; otherwise `empirical`.
- Under a Bayesian network (epsilon 0), the points are drawn from the network, and each rule's region
  R is bounded by box refinement of the network's CDF space (`engines.probability.twins.region_bounds`):
  sound bounds on P[x in R] (`share` is their midpoint, exact once they meet) and on
  P[x in R and x has an unfair twin], whose lower end is `proven_unfair_share` (columns of names
  coded as `models.binding` codes them). Where the model is one the interval evaluators cannot read,
  the rules keep their statistical rates only and the result says so (`stats.sound_bounds`).

Rules range over the features that are not protected: the box engines measure shares over them (the
protected values are those a twin takes), so a region of the other features is what a box can say.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..errors import PropertyError
from ..memory import STOPPED as MEMORY_STOPPED
from ..properties import RowAudit
from ..results.explain import Condition, ExplainResult
from .frame import explain_frame

#: The populations `explain` answers over the domain (besides the data's rows).
DOMAIN_POPULATIONS = ("uniform", "independent", "bayesnet")
#: Points drawn from the population by default.
SAMPLES = 4000
#: Boxes verified per rule at most (the largest by mass): the rest only lower the proven share.
MAX_BOXES = 16
#: Shares of the time limit: the points' audit, then the rules' boxes (the whole domain first).
AUDIT_SHARE = 0.4
#: The least time a box is given: with less left (beyond the setup a box is seen to take), it is skipped.
MIN_BOX_S = 0.05


@dataclass(frozen=True)
class Settings:
    """How the rules are searched and measured (as `explain_frame` takes them)."""

    max_rules: int = 5
    min_lift: float = 3.0
    confidence: float = 0.95
    samples: int = SAMPLES


def explain_measured(request: Any, search: Settings, options: Any) -> ExplainResult:
    """Rules under the population of a prepared `verify` request (`requests.verify.VerifyRequest`):
    drawn points decided exactly, rules found and measured on them, each rule's mass and proven
    unfair mass from its boxes."""
    from ..engines.registry import find_engine
    from ..engines.sampling.blackbox import draw
    from ..options import AuditOptions

    if not isinstance(search.samples, int | np.integer) or isinstance(search.samples, bool) or search.samples < 20:
        raise PropertyError(f"samples must be an integer of at least 20, got {search.samples!r}")
    start = time.perf_counter()
    prop = request.prop
    limit = options.time_limit
    learned = getattr(request, "learned", None)
    if learned is not None:  # a Bayesian network: its states in the domain's codes, drawn ancestrally
        from ..engines.probability.twins import drawn_codes, state_codes

        codes = state_codes(learned.population, prop.domain)
        points = drawn_codes(learned.population, codes, np.random.default_rng(options.seed), search.samples)
    else:
        points = draw(prop, np.random.default_rng(options.seed), search.samples)
    audit_options = AuditOptions(
        time_limit=None if limit is None else AUDIT_SHARE * limit, seed=options.seed, memory_limit=options.memory_limit
    )
    question = RowAudit(replace(prop, population=None), points)
    rows = find_engine(request.ir, question).run(request.ir, question, audit_options, None)
    verdicts = np.asarray(rows.verdicts)
    frame = _raw(prop.domain, points)
    free = [prop.domain.features[j].name for j in prop.free]
    explained = explain_frame(
        frame[free],
        verdicts == "unfair",
        verdicts != "unknown",
        max_rules=search.max_rules,
        min_lift=search.min_lift,
        confidence=search.confidence,
        seed=options.seed,
    )
    boxes = _Boxes(request, options, limit, start)
    boxes.stopped = MEMORY_STOPPED if rows.stopped == MEMORY_STOPPED else ""
    whole = boxes.verify(prop.domain, always=True)
    if whole.counterexamples:  # re-checked on the model: the domain holds unfair inputs, whatever the points say
        explained.verdict = "unfair"
    regions: _Boxes | _Network = boxes if learned is None else _Network(request, options, limit, start, codes)
    for rule in explained.rules:
        rule.share, rule.proven_unfair_share, _ = regions.region(rule.conditions)
    for rule in explained.fair_rules:
        rule.share, rule.proven_unfair_share, proven_fair = regions.region(rule.conditions)
        rule.evidence = "proven" if proven_fair else "empirical"
    explained.population, explained.engine = request.population, rows.engine
    explained.protected = list(prop.protected_names)
    explained.elapsed_s = time.perf_counter() - start
    explained.stats |= {
        "samples": search.samples,
        "proven_unfair": whole.falsified,
        "certified": whole.certified,
        "undecided": whole.undecided,
        "engine": whole.engine,
        "counterexamples": len(whole.counterexamples),
        "counterexamples_in_rules": _twins_inside(prop.domain, whole.counterexamples, explained.rules),
        "boxes_verified": boxes.count,
        "boxes_skipped": boxes.skipped,  # the time or memory limit spent: they count for nothing proven
        "shares": "share: the rule's exact mass under the population; proven_unfair_share: a sound lower "
        "bound on the mass of its inputs with an unfair twin (its boxes verified within the time limit, each "
        "proven-unfair share times the box's mass); rates: the drawn points, decided exactly, on the held-out half",
    }
    if isinstance(regions, _Network):
        explained.stats |= regions.stats(len(explained.rules))
    if boxes.stopped:
        explained.stats["stopped"] = boxes.stopped
    return explained


def _twins_inside(domain: Domain, counterexamples: list[Any], rules: list[Any]) -> list[int]:
    """How many of the whole domain's re-checked counterexamples (their first input) each rule holds."""
    if not counterexamples:
        return [0] * len(rules)
    frame = _raw(domain, np.array([c.x for c in counterexamples], dtype=np.float64))
    return [int(rule.mask(frame).sum()) for rule in rules]


def _raw(domain: Domain, codes: np.ndarray) -> pd.DataFrame:
    """The drawn points in raw values: categories by name."""
    columns = {}
    for j, f in enumerate(domain.features):
        column = codes[:, j]
        if f.categories is not None:
            columns[f.name] = np.asarray(f.categories, dtype=object)[column.astype(np.int64)]
        else:
            columns[f.name] = column.astype(np.int64) if f.is_discrete else column
    return pd.DataFrame(columns)


class _Pace:
    """The time limit as boxes spend it: the clock is read before each box starts, and a box is
    given part of the time left less the most any box has run past the time it was given (its
    setup, outside its engine's own clock); it starts only where that, and the shortest time any box
    took (an engine's least work), still end by the limit."""

    def __init__(self, limit: float | None, start: float) -> None:
        self.limit, self.start = limit, start
        #: the most a box has run past the time it was given, and the shortest a box took, in seconds
        self.overhead, self.shortest = 0.0, 0.0

    def left(self) -> float | None:
        return None if self.limit is None else self.limit - (time.perf_counter() - self.start)

    def grant(self, always: bool = False) -> tuple[bool, float | None]:
        """(whether a box may start now, the seconds it is given: None without a limit). A box run
        `always` starts whatever the time left, with at least `MIN_BOX_S`."""
        left = self.left()
        if left is None:
            return True, None
        if always:
            return True, max(left / 4, MIN_BOX_S)
        room = left - self.overhead
        if room < MIN_BOX_S or left < self.shortest:
            return False, 0.0
        return True, min(max(left / 4, MIN_BOX_S), room)  # later boxes keep time of their own

    def ran(self, given: float | None, began: float) -> None:
        """A box given `given` seconds, begun at `began` (`time.perf_counter`), has ended."""
        if given is not None:
            took = time.perf_counter() - began
            self.overhead = max(self.overhead, took - given)
            self.shortest = took if self.shortest == 0 else min(self.shortest, took)


class _Boxes:
    """The boxes of rules' regions, each verified as its own domain under the population."""

    def __init__(self, request: Any, options: Any, limit: float | None, start: float) -> None:
        self.request, self.options = request, options
        self.pace = _Pace(limit, start)
        self.count = self.skipped = 0
        #: the memory limit, once a run reached it: the boxes after it are not verified
        self.stopped = ""
        self.free = list(request.prop.free)

    def verify(self, domain: Domain, always: bool = False) -> Any:
        """The request's question over `domain` (a box of the full one), within the time left; None
        once the time limit is spent or a run reached the memory limit (unless `always`): a box not
        verified proves nothing."""
        from ..requests.verify import run_verify

        began = time.perf_counter()
        start, share = self.pace.grant(always)
        if not always and (self.stopped or not start):
            self.skipped += 1
            return None
        options = replace(self.options, time_limit=share)
        self.count += 1
        prop = replace(self.request.prop, domain=domain)
        if prop.population is not None:  # the data's marginals, restricted to the box
            prop = replace(prop, population=_restricted(prop.population, domain))
        result = run_verify(replace(self.request, prop=prop, options=options), None)
        self.pace.ran(share, began)
        if result.stopped == MEMORY_STOPPED:
            self.stopped = MEMORY_STOPPED
        return result

    def region(self, conditions: list[Condition]) -> tuple[float, float, bool]:
        """(mass, proven-unfair mass, all proven fair) of the region the conditions describe."""
        domain = self.request.prop.domain
        runs = [_runs(f, [c for c in conditions if c.feature == f.name]) for f in domain.features]
        boxes = [tuple(b) for b in product(*runs)]
        masses = [self.mass(b) for b in boxes]
        total = float(sum(masses))
        kept = sorted(range(len(boxes)), key=lambda i: -masses[i])[:MAX_BOXES]
        proven, fair = 0.0, 0 < len(kept) == len(boxes)  # an empty region proves nothing
        for i in kept:
            if masses[i] <= 0:
                continue
            answer = self.verify(_box(domain, boxes[i]))
            if answer is None:
                fair = False
                continue
            proven += answer.falsified * masses[i]
            fair = fair and answer.certified >= 1.0
        return total, proven, fair

    def mass(self, box: tuple[tuple[float, float], ...]) -> float:
        """The population's mass of a box (over the features that are not protected)."""
        domain, population = self.request.prop.domain, self.request.prop.population
        out = 1.0
        for j in self.free:
            lo, hi = box[j]
            f = domain.features[j]
            if population is not None:  # the data's marginals: the share of rows in the range
                values, counts = population.values[j], population.counts[j]
                out *= float(counts[(values >= lo) & (values <= hi)].sum() / counts.sum())
            elif f.size > 0:
                size = hi - lo + 1 if f.is_discrete else hi - lo
                out *= max(size, 0) / f.size
        return out


class _Network:
    """Rules' regions under a Bayesian network learned from the data: sound bounds on each region's
    mass and on the mass of its inputs with an unfair twin, by box refinement of the network's CDF
    space within the time left."""

    def __init__(self, request: Any, options: Any, limit: float | None, start: float, codes: dict) -> None:
        from ..errors import DomainError
        from ..models.binding import bind_linear_to_population, bind_to_population

        learned = request.learned
        self.request, self.options, self.codes = request, options, codes
        self.pace = _Pace(limit, start)
        #: why no sound bound is given (empty: they are)
        self.unsound = ""
        if learned.linear is not None:  # a linear model bound to the data's columns, as the network is
            try:
                self.model, self.population = bind_linear_to_population(learned.linear, learned.population)
            except DomainError as exc:
                self.model, self.population, self.unsound = None, learned.population, str(exc)
        else:
            self.model, self.population = bind_to_population(request.loaded, learned.population)
        self.bounds: list[dict[str, Any]] = []
        self.open = self.skipped = 0

    def region(self, conditions: list[Condition]) -> tuple[float, float | None, bool]:
        """(mass, proven-unfair mass or None where no sound bound is given, all proven fair)."""
        from ..engines.probability.refine import RefineOptions
        from ..engines.probability.twins import region_bounds

        domain = self.request.prop.domain
        allowed = {}
        for f in domain.features:
            conds = [c for c in conditions if c.feature == f.name]
            if conds:
                runs = _runs(f, conds)
                states = self.codes[f.name]
                allowed[f.name] = np.array([any(lo <= x <= hi for lo, hi in runs) for x in states], dtype=bool)
        began = time.perf_counter()
        start, share = self.pace.grant()
        if not start:  # past the time limit: the region's mass alone (its least time), nothing proven
            self.skipped += 1
            share = MIN_BOX_S
        budget = RefineOptions(time_limit=share, memory_limit=self.options.memory_limit)
        model = None if self.unsound or not start else self.model
        protected = list(self.request.prop.protected_names)
        try:
            mass, unfair, open_boxes = region_bounds(model, self.population, protected, allowed, budget)
        except PropertyError as exc:  # a model the interval evaluators cannot read: statistical rates only
            self.unsound = str(exc)
            mass, unfair, open_boxes = region_bounds(None, self.population, protected, allowed, budget)
        if start:
            self.pace.ran(share, began)
        self.open += open_boxes
        self.bounds.append({"share": list(mass), "unfair_share": None if unfair is None else list(unfair)})
        midpoint = (mass[0] + mass[1]) / 2
        if unfair is None:  # past the time limit nothing is proven; without sound bounds nothing is stated
            return midpoint, None if self.unsound else 0.0, False
        return midpoint, unfair[0], unfair[1] == 0 and mass[1] > 0

    def stats(self, unfair_rules: int) -> dict[str, Any]:
        """What the result says of the rules' bounds."""
        out: dict[str, Any] = {
            "rule_bounds": self.bounds[:unfair_rules],
            "fair_rule_bounds": self.bounds[unfair_rules:],
            "boxes_open": self.open,
            "rules_past_time_limit": self.skipped,  # their unfair mass unbounded: no proof
            "shares": "share: the midpoint of sound bounds on the rule's mass under the learned network "
            "(rule_bounds: both ends, exact once they meet); proven_unfair_share: a sound lower bound on the "
            "mass of the rule's inputs with an unfair twin (rule_bounds.unfair_share: its sound interval), by box "
            "refinement of the network within the time limit; rates: the drawn points, decided exactly, on the "
            "held-out half",
        }
        if self.unsound:
            out["sound_bounds"] = (
                f"none for this model ({self.unsound}): the rules' unfair shares are the statistical rates only"
            )
        return out


def _runs(f: Any, conditions: list[Condition]) -> list[tuple[float, float]]:
    """The feature's ranges (in domain codes) the conditions allow: one range, or for a category set
    its runs of consecutive codes."""
    lo, hi = float(f.min), float(f.max)
    for c in conditions:
        if c.values is not None:
            assert f.categories is not None  # a category set is a condition on a categorical feature
            codes = sorted(i for i, name in enumerate(f.categories) if name in c.values and lo <= i <= hi)
            return _consecutive(codes)
        if c.low is not None:
            lo = max(lo, math.ceil(c.low) if f.is_discrete else c.low)
        if c.high is not None:
            hi = min(hi, math.floor(c.high) if f.is_discrete else c.high)
    return [(lo, hi)] if lo <= hi else []


def _consecutive(codes: list[int]) -> list[tuple[float, float]]:
    runs: list[tuple[float, float]] = []
    for c in codes:
        if runs and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


def _restricted(marginals: Any, domain: Domain) -> Any:
    """Each feature's observed values (and their counts) that lie in the domain's range: the product
    measure restricted to the box, which the engines normalise by its mass."""
    from ..population.marginals import Marginals

    values, counts = [], []
    for v, c, f in zip(marginals.values, marginals.counts, domain.features):
        inside = (v >= f.min) & (v <= f.max)
        values.append(v[inside])
        counts.append(c[inside])
    return Marginals(tuple(values), tuple(counts), marginals.rows)


def _box(domain: Domain, box: tuple[tuple[float, float], ...]) -> Domain:
    return replace(domain, features=tuple(replace(f, min=lo, max=hi) for f, (lo, hi) in zip(domain.features, box)))
