"""Interval evaluation of the project's model IRs over boxes, and the group events for `group_bounds`.

ReLU networks: interval arithmetic layer by layer (outward rounded by a rigorous dot-product error
bound). Tree ensembles: the reachable leaves of each tree give the score's range. Linear models:
the encoding and the weighted sum in sound interval arithmetic. Each yields, per box, whether the
label is surely positive / surely negative.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import PropertyError
from ...properties import split_names
from ..protocols import PerPopulation
from . import intervals as iv
from .events import BoxEvaluator, stack_events

if TYPE_CHECKING:
    from ...models.linear import LinearModel
    from ...models.network import ReluNetwork
    from ...models.trees import TreeEnsemble
    from ...population.continuous import ProductPopulation
    from ...population.program import ProgramPopulation
    from ..protocols import Classifier

_U = 2.0**-53


def _widen(lo: np.ndarray, hi: np.ndarray, mag: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    pad = (2 * n + 4) * _U * mag
    lo = np.nextafter(lo - pad, -np.inf)
    hi = np.nextafter(hi + pad, np.inf)
    return np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)


def _affine(W: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Sound interval of W x + b for x in [lo, hi] (rows of lo/hi are boxes)."""
    Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        # 0 * inf terms are 0: replace infinite ends where the weight is 0 by masking per column
        flo, fhi = np.nan_to_num(lo, neginf=0, posinf=0), np.nan_to_num(hi, neginf=0, posinf=0)
        out_lo = flo @ Wp.T + fhi @ Wn.T + b
        out_hi = fhi @ Wp.T + flo @ Wn.T + b
        mag = np.maximum(np.abs(flo), np.abs(fhi)) @ np.abs(W).T + np.abs(b)
        out_lo, out_hi = _widen(out_lo, out_hi, mag, W.shape[1])
        # infinite inputs: any nonzero weight on an infinite end makes that output end infinite
        neg_inf_lo = (np.isneginf(lo).astype(float) @ (Wp > 0).T + np.isposinf(hi).astype(float) @ (Wn < 0).T) > 0
        pos_inf_hi = (np.isposinf(hi).astype(float) @ (Wp > 0).T + np.isneginf(lo).astype(float) @ (Wn < 0).T) > 0
    return np.where(neg_inf_lo, -np.inf, out_lo), np.where(pos_inf_hi, np.inf, out_hi)


def network_label(net: Any, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(may be positive, may be negative, logit width) of a ReluNetwork (positive iff logit > 0).

    Interval arithmetic layer by layer, intersected on bounded boxes with the project's symbolic
    (ReluVal forward + CROWN backward) bounds, padded far beyond their float64 rounding error."""
    x_lo, x_hi = lo, hi
    last = len(net.weights) - 1
    mag = np.zeros(len(lo))
    for k, (W, b) in enumerate(zip(net.weights, net.biases)):
        lo, hi = _affine(W, b, lo, hi)
        with np.errstate(invalid="ignore"):
            mag = np.maximum(mag, np.max(np.maximum(np.abs(lo), np.abs(hi)), axis=1))
        if k < last:
            act = net.activation(k)
            lo, hi = (np.maximum(lo, 0.0), np.maximum(hi, 0.0)) if act is None else act.interval(lo, hi)
    lo, hi = lo[:, 0], hi[:, 0]
    finite = np.all(np.isfinite(x_lo) & np.isfinite(x_hi), axis=1) & np.isfinite(mag)
    if finite.any() and len(net.weights) > 1:
        try:
            from ..network.symbolic import TwinNet, bound_twins

            symbolic = True
        except ImportError:  # the symbolic engine is optional here
            symbolic = False
        if symbolic:
            twin = TwinNet.build(net, list(range(net.n_inputs)), [], np.zeros((1, 0)), lookups=True)
            tb = bound_twins(twin, x_lo[finite], x_hi[finite])
            n_ops = sum(W.shape[1] for W in net.weights) + 8
            pad = 1e-9 * n_ops * (1.0 + mag[finite])
            lo = lo.copy()
            hi = hi.copy()
            lo[finite] = np.maximum(lo[finite], tb.lower[:, 0] - pad)
            hi[finite] = np.minimum(hi[finite], tb.upper[:, 0] + pad)
    return hi > 0, lo <= 0, hi - lo


@dataclass
class _Forest:
    """Every tree's nodes in one numbering, inner nodes grouped by depth across trees, and the
    leaves in tree order: the reachable leaves of all trees follow one tree level at a time."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    roots: np.ndarray
    levels: list[np.ndarray]
    leaves: np.ndarray
    leaf_values: np.ndarray
    tree_starts: np.ndarray  # where each tree's leaves start in `leaves`
    total: float  # sum over trees of the largest |leaf value|

    @classmethod
    def of(cls, model: Any) -> _Forest:
        cached = getattr(model, "_interval_forest", None)
        if cached is not None:
            return cached
        offsets = np.cumsum([0] + [len(t.left) for t in model.trees])
        feature = np.concatenate([t.feature for t in model.trees])
        threshold = np.concatenate([t.threshold for t in model.trees])
        left = np.concatenate([np.where(t.left >= 0, t.left + o, -1) for t, o in zip(model.trees, offsets)])
        right = np.concatenate([np.where(t.right >= 0, t.right + o, -1) for t, o in zip(model.trees, offsets)])
        levels, frontier = [], offsets[:-1].copy()
        while len(frontier):
            inner = frontier[left[frontier] >= 0]
            if len(inner):
                levels.append(inner)
            frontier = np.concatenate([left[inner], right[inner]])
        leaves = np.flatnonzero(left < 0)  # in tree order: the numbering follows the trees
        starts = np.searchsorted(leaves, offsets[:-1])
        forest = cls(
            feature,
            threshold,
            left,
            right,
            offsets[:-1],
            levels,
            leaves,
            np.concatenate([t.value for t in model.trees])[leaves],
            starts,
            float(sum(np.max(np.abs(t.value)) for t in model.trees)),
        )
        model._interval_forest = forest  # the model is not changed after loading
        return forest


#: Boxes evaluated at once by `trees_label` (its reachability matrix is boxes x nodes).
TREE_CHUNK_CELLS = 4_000_000


def trees_label(model: Any, lo: np.ndarray, hi: np.ndarray, lo_open: np.ndarray, hi_open: np.ndarray):
    """(may be positive, may be negative, score width) of a TreeEnsemble from its reachable leaves:
    a node is reachable from a box if its parent is and the box meets the parent's test's side,
    computed for all boxes and trees at once, one depth at a time."""
    if model.input_float32:  # rounding to float32 is monotone; its image of [lo, hi] is [f32(lo), f32(hi)]
        with np.errstate(over="ignore"):
            lo, hi = lo.astype(np.float32).astype(np.float64), hi.astype(np.float32).astype(np.float64)
        lo_open = hi_open = np.zeros_like(lo, dtype=bool)
    forest = _Forest.of(model)
    le = model.split == "<="
    n = len(lo)
    smin, smax = np.zeros(n), np.zeros(n)
    step = max(1, TREE_CHUNK_CELLS // len(forest.feature))
    for a in range(0, n, step):
        b = min(n, a + step)
        reach = np.zeros((b - a, len(forest.feature)), dtype=bool)
        reach[:, forest.roots] = True
        for nodes in forest.levels:
            f, t = forest.feature[nodes], forest.threshold[nodes]
            lo_f, hi_f = lo[a:b, f], hi[a:b, f]
            # x < t (or x <= t) possible; x >= t (or x > t) possible
            go_left = (lo_f < t) | (le & (lo_f == t) & ~lo_open[a:b, f])
            go_right = (hi_f > t) | ((not le) & (hi_f == t) & ~hi_open[a:b, f])
            reach[:, forest.left[nodes]] = reach[:, nodes] & go_left
            reach[:, forest.right[nodes]] = reach[:, nodes] & go_right
        hit = reach[:, forest.leaves]
        smin[a:b] = np.minimum.reduceat(np.where(hit, forest.leaf_values, np.inf), forest.tree_starts, axis=1).sum(1)
        smax[a:b] = np.maximum.reduceat(np.where(hit, forest.leaf_values, -np.inf), forest.tree_starts, axis=1).sum(1)
    offset, _, tol = model.margin_view(None)
    pad = (len(model.trees) + 4) * 4 * _U * (forest.total * model.scale + abs(offset)) + tol
    lo_m = offset + model.scale * smin - pad
    hi_m = offset + model.scale * smax + pad
    return hi_m > 0, lo_m <= 0, hi_m - lo_m


def linear_label(model: Any, features: dict[str, iv.Iv]):
    """(may be positive, may be negative, score width) of a LinearModel from interval columns."""
    score = iv.const(model.intercept)
    start = 0
    for enc in model.encoding:
        x = features[enc.column]
        w = model.weights[start : start + enc.width]
        start += enc.width
        if enc.kind == "numeric":
            z = iv.add(
                iv.mul(iv.div(iv.sub(x, iv.const(enc.offset)), iv.const(enc.divisor)), iv.const(enc.factor)),
                iv.const(enc.shift),
            )
            score = iv.add(score, iv.mul(z, iv.const(w[0])))
        else:
            for c, wc in zip(enc.categories, w):
                try:
                    cv = float(c)
                except (TypeError, ValueError):
                    raise PropertyError(
                        f"column {enc.column!r} has category {c!r}; a numeric population needs numeric category codes"
                    ) from None
                hit = iv.to_number(iv.compare("==", x, iv.const(cv)))
                score = iv.add(score, iv.mul(hit, iv.const(wc)))
    pos = iv.compare(">" if model.strict else ">=", score, iv.const(0.0))
    return pos.may_true, pos.may_false, np.broadcast_to(score.hi - score.lo, np.shape(pos.may_true))


@dataclass
class ModelSetup:
    marginals: list
    evaluate: Callable
    groups: list[dict[str, Any]]
    population: str
    model: str
    protected: list[str]


def _model_name(model: Any) -> str:
    source = getattr(model, "source", "")
    return f"{type(model).__name__}({source})" if source else type(model).__name__


def _feature_names(model: Any) -> list[str]:
    """The model's inputs by name, in order; a model these engines cannot label is refused here."""
    if not hasattr(model, "accept"):
        raise PropertyError(
            f"probability bounds do not support models of type {type(model).__name__}; "
            "give a ReluNetwork, TreeEnsemble or LinearModel"
        )
    return model.named_inputs()


class _IntervalLabel:
    """(may be positive, may be negative, width) of a model's label on `n` boxes given by the
    interval of each input (`values`, by name; `names` in the model's input order): a linear model
    reads the named columns through its encoding, a network or trees the box of its inputs."""

    def __init__(self, names: list[str], values: dict[str, iv.Iv], n: int) -> None:
        self.names, self.values, self.n = names, values, n

    def _ends(self, end: str) -> np.ndarray:
        return np.stack([np.broadcast_to(getattr(self.values[name], end), (self.n,)) for name in self.names], axis=1)

    def linear(self, model: LinearModel):
        return linear_label(model, self.values)

    def network(self, model: ReluNetwork):
        return network_label(model, self._ends("lo"), self._ends("hi"))

    def trees(self, model: TreeEnsemble):
        return trees_label(model, self._ends("lo"), self._ends("hi"), self._ends("lo_open"), self._ends("hi_open"))


def _label(model: Classifier, names: list[str], values: dict[str, iv.Iv], n: int):
    return model.accept(_IntervalLabel(names, values, n))


def _inside(x: iv.Iv, cell: Any) -> iv.Bv:
    """Whether the interval `x` lies in a protected group's cell (`population.continuous.Cell`)."""
    if cell.closed and cell.lo == cell.hi:
        return iv.compare("==", x, iv.const(cell.lo))
    upper = iv.compare("<=" if cell.closed else "<", x, iv.const(cell.hi))
    return iv.and_(iv.compare(">=", x, iv.const(cell.lo)), upper)


def model_events(model: Any, population: Any, protected: str | Sequence[str] | None) -> ModelSetup:
    """Marginals, box evaluator (events: per group, positive and negative) and group names."""
    from ...population.program import ProgramPopulation

    population = ProgramPopulation.given_as(population)
    names = _feature_names(model)
    prot = split_names(protected)
    setups = PerPopulation(model, names, prot, product=_product_setup, program=_program_setup, discrete=_discrete_setup)
    return population.accept(setups)


def _product_setup(model: Classifier, population: ProductPopulation, names: list[str], prot: list[str]) -> ModelSetup:
    """Any model under independent marginals: each box of the CDF space gives each feature an
    interval, and the protected features' cells the groups."""
    missing = [n for n in names if n not in population.names]
    if missing and len(population.names) == len(names) and all(n.startswith("x") for n in names):
        names = list(population.names)  # an unnamed model reads the population's features in order
    elif missing:
        raise PropertyError(
            f"the population has no marginal for model feature(s) {missing}; it has: {', '.join(population.names)}"
        )
    cells = population.groups(prot)
    marginals = population.marginals

    def events(draws, n):
        values = dict(zip(population.names, draws))
        for v in values.values():
            v.dep = None
        pos_t, pos_f, width = _label(model, names, values, n)
        positive = iv.Bv(pos_t, pos_f, None, width)
        events = []
        for cell in cells:
            tests = [_inside(values[p], c) for p, c in cell.items()]
            g = tests[0]
            for t in tests[1:]:
                g = iv.and_(g, t)
            events += [iv.and_(g, positive), iv.and_(g, iv.not_(positive))]
        return stack_events(events, n)

    groups = [{p: c.name for p, c in cell.items()} for cell in cells]
    return ModelSetup(marginals, BoxEvaluator(marginals, events), groups, str(population), _model_name(model), prot)


def _program_setup(model: Classifier, population: ProgramPopulation, names: list[str], prot: list[str]) -> ModelSetup:
    """Any model under a population program, run on interval draws: the groups are the protected
    condition (or the program's `sensitiveAttribute`) and its negation."""
    from ...models.program import parse_expression
    from .interp import INTERVAL, Interpreter

    population.check_features(names)
    prog = population.program
    if prot:
        expr_text = prot[0] if len(prot) == 1 else " and ".join(f"({p})" for p in prot)
        cond = parse_expression(expr_text, "<protected>")
        if not any(ch in expr_text for ch in "<>=!"):
            raise PropertyError(
                f"with a population program, give the protected group as a condition on its "
                f"variables (e.g. 'sex < 1'), not {expr_text!r}"
            )
        label = expr_text
    else:
        prog.require("sensitiveAttribute")
        cond, label = None, "sensitiveAttribute"
    marginals = population.marginals
    run = Interpreter(INTERVAL)

    given = population.given

    def events(draws, n):
        queries = ([cond] if cond is not None else []) + ([given] if given is not None else [])
        notes, results, env = run.run(prog, draws, queries)
        g = results[0] if cond is not None else notes["sensitiveAttribute"]
        pos_t, pos_f, width = _label(model, names, env, n)
        positive = iv.Bv(pos_t, pos_f, None, width)
        ng = iv.not_(g)
        if given is not None:  # the groups within the label condition
            g, ng = iv.and_(g, results[-1]), iv.and_(ng, results[-1])
        return stack_events(
            [
                iv.and_(g, positive),
                iv.and_(g, iv.not_(positive)),
                iv.and_(ng, positive),
                iv.and_(ng, iv.not_(positive)),
            ],
            n,
        )

    return ModelSetup(
        marginals,
        BoxEvaluator(marginals, events),
        [{label: True}, {label: False}],
        str(population),
        _model_name(model),
        prot or [label],
    )


class _CodeInput:
    """One variable of a discrete Bayesian network as a CDF coordinate: breaks at every table row's
    cumulative probabilities, so boxes split exactly between states."""

    def __init__(self, cum: np.ndarray) -> None:
        inner = cum[:, 1:-1].ravel()
        self.breaks = np.unique(inner[(inner > 0) & (inner < 1)])


def _range_extremes(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) with lo[a, b] / hi[a, b] the least / greatest of vals[a..b] (NaN where b < a): one
    running extreme per start, not one per range (a variable may have thousands of states)."""
    n = len(vals)
    lo, hi = np.full((n, n), np.nan), np.full((n, n), np.nan)
    for a in range(n):
        lo[a, a:] = np.minimum.accumulate(vals[a:])
        hi[a, a:] = np.maximum.accumulate(vals[a:])
    return lo, hi


class DiscreteBoxes:
    """Boxes of a discrete population's CDF space (one coordinate per variable, in elimination
    order): each box's range of states of every variable, given the ranges of its parents', and
    the interval of each model input it implies."""

    def __init__(self, pop: Any, names: list[str]) -> None:
        self.order = pop.order()
        self.index = {n: j for j, n in enumerate(self.order)}
        missing = [n for n in names if n not in pop.variables]
        if missing:
            raise PropertyError(
                f"the population has no variable for model input(s) {missing}; it has: {', '.join(self.order)}"
            )
        self.names = names
        self.tables: list[tuple[np.ndarray, np.ndarray, list[int]]] = []
        self.values: list[tuple[np.ndarray, np.ndarray] | None] = []  # None: not a model input
        self.masks: list[int] = []
        for n in self.order:
            v = pop.variables[n]
            rows = v.cpt.reshape(-1, v.card)
            cum = np.concatenate([np.zeros((len(rows), 1)), np.cumsum(rows, axis=1)], axis=1)
            cum = cum / cum[:, -1:]
            cum[:, -1] = 1.0
            configs = np.array(list(np.ndindex(*v.cpt.shape[:-1])) or [()], dtype=np.int64).reshape(len(rows), -1)
            self.tables.append((cum, configs, [self.index[p] for p in v.parents]))
            if n in names:
                try:
                    vals = np.array([float(x) for x in v.states])
                except (TypeError, ValueError):
                    raise PropertyError(
                        f"model input {n!r} has non-numeric states {v.states[:4]}; a model reads numbers"
                    ) from None
                self.values.append(_range_extremes(vals))
            else:
                self.values.append(None)
            bit = 1 << self.index[n] if len(self.order) <= 64 else 0
            self.masks.append(
                bit
                | (0 if not v.parents else int(np.bitwise_or.reduce([self.masks[self.index[p]] for p in v.parents])))
            )
        self.inputs = [_CodeInput(t[0]) for t in self.tables]
        self.track = len(self.order) <= 64

    def mask(self, names: Sequence[str]) -> np.uint64 | None:
        """The dependency bits of these variables (their own and their ancestors'), None untracked."""
        bits = int(np.bitwise_or.reduce([self.masks[self.index[n]] for n in names])) if names else 0
        return np.uint64(bits) if self.track else None

    def codes(self, lo: np.ndarray, hi: np.ndarray) -> tuple[list, list]:
        """Per variable, the least and greatest state index each box can give it."""
        klo: list[np.ndarray] = []
        khi: list[np.ndarray] = []
        for cum, configs, parents in self.tables:
            ul, uh = lo[:, len(klo)], hi[:, len(klo)]
            cl = np.full(len(ul), np.iinfo(np.int64).max)
            ch = np.full(len(ul), -1)
            for r in range(len(cum)):
                ok = np.ones(len(ul), dtype=bool)
                for c, pj in enumerate(parents):
                    ok &= (klo[pj] <= configs[r, c]) & (configs[r, c] <= khi[pj])
                if not ok.any():
                    continue
                card = cum.shape[1] - 1
                a = np.clip(np.searchsorted(cum[r], ul, side="right") - 1, 0, card - 1)
                b = np.clip(np.searchsorted(cum[r], uh, side="left") - 1, 0, card - 1)
                cl = np.where(ok, np.minimum(cl, a), cl)
                ch = np.where(ok, np.maximum(ch, b), ch)
            klo.append(cl)
            khi.append(ch)
        return klo, khi

    def features(self, klo: list, khi: list) -> dict[str, iv.Iv]:
        """The interval of each model input over each box."""
        out = {}
        for name in self.names:
            j = self.index[name]
            extremes = self.values[j]
            assert extremes is not None  # kept for every model input
            lo_t, hi_t = extremes
            z = np.zeros(len(klo[j]), dtype=bool)
            out[name] = iv.Iv(lo_t[klo[j], khi[j]], hi_t[klo[j], khi[j]], z, z, None)
        return out


def _protected_names(pop: Any, prot: list[str]) -> list[str]:
    prot = prot or list(pop.protected)
    if not prot:
        raise PropertyError("name the protected attribute(s) (protected=...)")
    for p in prot:
        if p not in pop.variables:
            raise PropertyError(f"unknown protected attribute {p!r}; the population has: {', '.join(pop.order())}")
    return prot


def _discrete_setup(model: Any, pop: Any, names: list[str], prot: list[str]) -> ModelSetup:
    """Any model under a discrete population (independent or Bayesian network) by box refinement:
    a box's coordinate for each variable, given the ranges of its parents' states, gives the range of
    its possible states; a box is decided once the model's label and the groups are."""
    boxes = DiscreteBoxes(pop, names)
    prot = _protected_names(pop, prot)
    groups = (
        pop.groups()
        if tuple(prot) == tuple(pop.protected)
        else [dict(zip(prot, combo)) for combo in itertools.product(*[range(pop.variables[p].card) for p in prot])]
    )
    label_mask = boxes.mask(names)

    def evaluate(lo: np.ndarray, hi: np.ndarray):
        n = len(lo)
        klo, khi = boxes.codes(lo, hi)
        pos_t, pos_f, width = _label(model, names, boxes.features(klo, khi), n)
        positive = iv.Bv(pos_t, pos_f, label_mask, width)
        events = []
        for g in groups:
            sure = np.ones(n, dtype=bool)
            maybe = np.ones(n, dtype=bool)
            for p, state in g.items():
                j = boxes.index[p]
                sure &= (klo[j] == state) & (khi[j] == state)
                maybe &= (klo[j] <= state) & (state <= khi[j])
            member = iv.Bv(maybe, ~sure, boxes.mask(list(g)), 1.0)
            events += [iv.and_(member, positive), iv.and_(member, iv.not_(positive))]
        return stack_events(events, n)

    named = [pop.group_name(g) for g in groups]
    return ModelSetup(
        boxes.inputs,
        evaluate,
        named,
        pop.describe(),
        _model_name(model),
        prot,
    )


def twin_setup(model: Any, pop: Any, prot: list[str]) -> ModelSetup:
    """The one event "x has an unfair twin" under a discrete population: the model's labels on x
    with each combination of protected states are not all equal (whatever x's own protected state,
    some other combination then decides otherwise). Decided on a box once every twin's label is,
    or once two twins' labels surely differ."""
    boxes, unfair, prot = twin_event(model, pop, prot)

    def evaluate(lo: np.ndarray, hi: np.ndarray):
        return stack_events([unfair(lo, hi)], len(lo))

    return ModelSetup(
        boxes.inputs, evaluate, [], pop.describe(), _model_name(model), prot
    )  # (protected: those the model reads)


def twin_event(model: Any, pop: Any, prot: list[str]) -> tuple[DiscreteBoxes, Callable, list[str]]:
    """(the boxes of `pop`'s CDF space, the event "x has an unfair twin" on boxes (lo, hi) as an
    `iv.Bv`, the protected attributes the model reads): see `twin_setup`."""
    names = _feature_names(model)
    prot = _protected_names(pop, prot)
    boxes = DiscreteBoxes(pop, names)
    prot = [p for p in prot if p in names]  # an attribute the model does not read changes no decision
    free = [n for n in names if n not in prot]
    combos = list(itertools.product(*[pop.variables[p].states for p in prot]))
    mask = boxes.mask(free)

    def unfair(lo: np.ndarray, hi: np.ndarray) -> iv.Bv:
        n = len(lo)
        if not prot:
            return iv.Bv(np.zeros(n, dtype=bool), np.ones(n, dtype=bool), None, 0.0)
        values = boxes.features(*boxes.codes(lo, hi))
        # every twin of every box in one call: twin k of box i is row k * n + i
        k = len(combos)
        z = np.zeros(k * n, dtype=bool)
        twins = {
            name: iv.Iv(np.tile(np.broadcast_to(v.lo, (n,)), k), np.tile(np.broadcast_to(v.hi, (n,)), k), z, z, None)
            for name, v in values.items()
        }
        for j, p in enumerate(prot):
            state = np.repeat(np.array([float(c[j]) for c in combos]), n)
            twins[p] = iv.Iv(state, state, z, z, None)
        may_positive, may_negative, w = _label(model, names, twins, k * n)
        sure_positive = ~np.broadcast_to(may_negative, (k * n,)).reshape(k, n)
        sure_negative = ~np.broadcast_to(may_positive, (k * n,)).reshape(k, n)
        some_positive, all_positive = sure_positive.any(axis=0), sure_positive.all(axis=0)
        some_negative, all_negative = sure_negative.any(axis=0), sure_negative.all(axis=0)
        width = np.broadcast_to(w, (k * n,)).reshape(k, n).max(axis=0)
        return iv.Bv(~(all_positive | all_negative), ~(some_positive & some_negative), mask, width)

    return boxes, unfair, prot
