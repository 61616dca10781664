"""Learning a DiscretePopulation from data: independent marginals or a Bayesian network.

The network's structure is learned by hill climbing (K2, BIC or BDeu score, bounded in-degree;
`structure.py`) with the protected attributes forced to be roots; the label may be a node so that
equalized odds can condition on it. Tables are maximum-likelihood estimates; a parent configuration never seen
in the data gets the child's marginal (stated in `info`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data import read_table
from ..errors import DataError
from .discrete import DiscretePopulation, Variable
from .discretize import Column, discretise
from .spec import MAX_WIDTH, PopulationSpec
from .structure import hill_climb

#: The default: each column's own distribution.
INDEPENDENT = PopulationSpec()

SCORES = {"k2": "k2", "bic": "bic", "bdeu": "bdeu"}


def learn_population(
    data: Any,
    columns: Sequence[str],
    protected: Sequence[str],
    spec: PopulationSpec = INDEPENDENT,
    *,
    label: str | None = None,
    label_in_network: bool = True,
    structure_bins: int = 10,
) -> DiscretePopulation:
    """A population over `columns` (protected ones included) learned from the rows of `data`, as
    `spec` says (its kind and how continuous columns are binned).

    The network's structure is searched on a coarser view of binned columns (consecutive bins merged
    down to `structure_bins`), so that many fine bins do not make every edge too costly for the
    score; the tables are then fitted on the fine bins. With `max_width`, the weakest edges (least
    conditional log-likelihood) are dropped until eliminating the network, protected attributes
    fixed, never holds more than `max_width` configurations at once, so that every model can be
    answered tightly; the dropped edges and the likelihood they carried are stated in `info`.
    """
    kind = spec.kind
    if kind not in ("independent", "bayesnet"):
        raise DataError(f"population must be 'independent', 'bayesnet' or a population model, got {kind!r}")
    frame = read_table(data)
    have = [str(c) for c in frame.columns]
    columns = list(dict.fromkeys(list(protected) + list(columns)))
    wanted = columns + ([label] if label and label not in columns else [])
    for name in wanted:
        if name not in have:
            raise DataError(f"unknown column {name!r}; the data has: {', '.join(have)}")
    frame = frame[[frame.columns[have.index(n)] for n in wanted]]
    frame.columns = wanted
    n_rows = len(frame)
    frame = frame.dropna()
    if frame.empty:
        raise DataError("no data rows without missing values in the columns used")
    started = time.perf_counter()
    max_bins, method, bin_value = spec.max_bins, spec.binning, spec.bin_value
    cols = discretise(
        frame, wanted, protected=protected, max_bins=max_bins, method=method, bin_value=bin_value, bins=spec.bins
    )
    if label:
        lab = cols[wanted.index(label)]
        if lab.edges is not None or len(lab.states) != 2:
            raise DataError(f"label {label!r} must take exactly two values, it takes {len(lab.states)}")
    info: dict[str, Any] = {
        "rows": len(frame),
        "rows_dropped_missing": int(n_rows - len(frame)),
        "binning": {"method": method, "max_bins": max_bins, "bin_value": bin_value},
        "bins": {c.name: {"edges": list(c.edges), "values": list(c.states)} for c in cols if c.edges is not None},
    }
    feature_cols = [c for c in cols if c.name != label]
    if kind == "independent":
        pop = _independent(feature_cols, protected, info)
        if label:
            lab = cols[wanted.index(label)]
            for i, state_label in enumerate(lab.labels):
                rows = lab.codes == i
                if not rows.any():
                    raise DataError(f"no rows with {label} = {state_label}")
                sub = [Column(c.name, c.states, c.labels, c.codes[rows], c.edges, c.within) for c in feature_cols]
                pop.by_label[state_label] = _independent(sub, protected, {"rows": int(rows.sum())})
            pop.info["label"] = label
    else:
        use = cols if (label and label_in_network) else feature_cols
        pop = _bayesnet(
            use,
            protected,
            label if (label and label_in_network) else None,
            spec.score,
            spec.max_indegree,
            info,
            structure_bins,
            spec.max_width,
        )
        if label and not label_in_network:
            pop.info["label"] = label
    pop.info["learning_s"] = time.perf_counter() - started
    return pop


def _counts(codes: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    flat = np.ravel_multi_index(tuple(codes.T), shape) if codes.ndim == 2 else codes
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.float64)


def _table(child: Column, parents: list[Column]) -> tuple[np.ndarray, int]:
    """MLE table P[child | parents]; unseen parent configurations get the child's marginal."""
    shape = tuple(len(p.states) for p in parents) + (len(child.states),)
    codes = np.stack([p.codes for p in parents] + [child.codes], axis=1)
    counts = _counts(codes, shape)
    totals = counts.sum(axis=-1, keepdims=True)
    marginal = np.bincount(child.codes, minlength=len(child.states)) / len(child.codes)
    unseen = int(np.sum(totals == 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        table = np.where(totals > 0, counts / np.where(totals > 0, totals, 1), marginal)
    return table, unseen


def _variable(col: Column, parents: list[Column]) -> tuple[Variable, int]:
    table, unseen = _table(col, parents)
    return Variable(
        col.name, col.states, col.labels, tuple(p.name for p in parents), table, col.edges, col.within
    ), unseen


def _independent(cols: list[Column], protected: Sequence[str], info: dict[str, Any]) -> DiscretePopulation:
    variables = {c.name: _variable(c, [])[0] for c in cols}
    return DiscretePopulation(variables, tuple(protected), None, "independent", {}, dict(info))


def _bayesnet(
    cols: list[Column],
    protected: Sequence[str],
    label: str | None,
    score: str,
    max_indegree: int,
    info: dict[str, Any],
    structure_bins: int = 10,
    max_width: int | None = MAX_WIDTH,
) -> DiscretePopulation:
    if score not in SCORES:
        raise DataError(f"network score must be one of {', '.join(SCORES)}, got {score!r}")
    if not isinstance(max_indegree, (int, np.integer)) or max_indegree < 0:
        raise DataError(f"max in-degree must be an integer >= 0, got {max_indegree!r}")
    if not isinstance(structure_bins, (int, np.integer)) or structure_bins < 2:
        raise DataError(f"structure bins must be an integer >= 2, got {structure_bins!r}")
    coarse = [
        Column(
            c.name,
            c.states[:structure_bins],
            c.labels[:structure_bins],
            c.codes * structure_bins // len(c.states),
            c.edges,
        )
        if c.edges is not None and len(c.states) > structure_bins
        else c
        for c in cols
    ]
    edges = learn_structure(coarse, protected, score, int(max_indegree))
    dropped: list[dict[str, Any]] = []
    if max_width is not None:
        if not isinstance(max_width, (int, np.integer)) or max_width < 1:
            raise DataError(f"network width must be a positive integer, got {max_width!r}")
        edges, dropped = tractable(edges, cols, protected, int(max_width))
    by_name = {c.name: c for c in cols}
    variables, unseen = {}, 0
    for c in cols:
        parents = [by_name[p] for p, child in edges if child == c.name]
        variables[c.name], k = _variable(c, parents)
        unseen += k
    info = dict(
        info,
        score=score,
        max_indegree=int(max_indegree),
        structure_bins=int(structure_bins),
        edges=[list(e) for e in edges],
        unseen_parent_configurations=unseen,
    )
    if max_width is not None:
        info.update(max_width=int(max_width), edges_dropped=dropped)
    return DiscretePopulation(variables, tuple(protected), label, "bayesnet", {}, info)


def tractable(
    edges: list[tuple[str, str]], cols: list[Column], protected: Sequence[str], max_width: int
) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """The edges less the weakest ones (by the conditional log-likelihood each carries in the data)
    among the variables of the widest elimination step, until no step is wider than `max_width`."""
    from .elimination import network_width

    by_name = {c.name: c for c in cols}
    cards = {c.name: len(c.states) for c in cols}
    edges = list(edges)
    dropped: list[dict[str, Any]] = []
    while True:
        parents = {n: tuple(p for p, c in edges if c == n) for n in cards}
        width, widest = network_width(parents, cards, list(protected))
        if width <= max_width:
            return sorted(edges), dropped
        inside = set(widest)
        candidates = [e for e in edges if e[0] not in protected and (e[0] in inside or e[1] in inside)]
        if not candidates:
            return sorted(edges), dropped
        gains = {e: _edge_loglik(by_name[e[1]], [by_name[p] for p in parents[e[1]]], e[0]) for e in candidates}
        weakest = min(candidates, key=lambda e: (gains[e], e))
        edges.remove(weakest)
        dropped.append({"edge": list(weakest), "loglik": round(float(gains[weakest]), 3), "width_before": int(width)})


def _edge_loglik(child: Column, parents: list[Column], parent: str) -> float:
    """How much less likely the data is (nats) when `child` loses `parent` from its parents."""
    return _loglik(child, parents) - _loglik(child, [p for p in parents if p.name != parent])


def _loglik(child: Column, parents: list[Column]) -> float:
    shape = tuple(len(p.states) for p in parents) + (len(child.states),)
    counts = _counts(np.stack([p.codes for p in parents] + [child.codes], axis=1), shape).reshape(-1, shape[-1])
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(counts / np.where(totals > 0, totals, 1)), 0.0)
    return float(terms.sum())


def learn_structure(
    cols: list[Column], protected: Sequence[str], score: str, max_indegree: int
) -> list[tuple[str, str]]:
    """Hill-climbing structure search (`structure.hill_climb`); no edge may enter a protected attribute."""
    if len(cols) < 2 or max_indegree == 0:
        return []
    codes = np.stack([c.codes for c in cols], axis=1).astype(np.int64)
    names = [c.name for c in cols]
    forbidden = {i for i, n in enumerate(names) if n in protected}
    edges = hill_climb(codes, [len(c.states) for c in cols], forbidden, SCORES[score], max_indegree)
    return sorted((names[a], names[b]) for a, b in edges)
