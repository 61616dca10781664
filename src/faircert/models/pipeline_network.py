"""A pipeline ending in a network or a linear model, as one ReluNetwork over the domain's raw features.

Exact on every point of the domain:
- scalers are affine maps and fold into the estimator's first layer;
- a step function of a discrete column (one-hot indicator, ordinal rank, bin index of an integer
  column) agrees on the integer grid with its piecewise-linear interpolation, which is a sum of
  ReLUs of the column: g(x) = g(lo) + sum_k (s_k - s_{k-1}) relu(x - k), with s_k = g(k+1) - g(k);
  for a one-hot indicator 1[x == k] = relu(x-k+1) - 2 relu(x-k) + relu(x-k-1). Engines measure
  discrete features on their grid, so the interpolation between grid points is never counted.
Refused: a step function of a real-valued column (one-hot or bins of a real column), which no
finite ReLU network computes exactly.
"""

from __future__ import annotations

import numpy as np

from ..errors import DomainError
from .network import InputTables, ReluNetwork
from .pipeline import MAX_GRID, PipelineModel, raw_values


def _estimator_layers(est) -> tuple[list[np.ndarray], list[np.ndarray], str, dict, tuple]:
    from .linear import LinearModel

    if isinstance(est, LinearModel):
        return [est.weights[None, :]], [np.array([est.intercept])], "logit", {}, ()
    return list(est.weights), list(est.biases), est.output_semantics, dict(est.metadata), est.activations


def _knots(values: np.ndarray, lo: int) -> tuple[float, np.ndarray, np.ndarray]:
    """g on the grid lo, lo+1, ... as (g(lo), knots k, coefficients c): g(x) = g(lo) + sum c relu(x - k)."""
    slopes = np.diff(values)
    change = np.diff(np.concatenate([[0.0], slopes]))
    keep = change != 0
    return float(values[0]), (lo + np.arange(len(slopes)))[keep].astype(np.float64), change[keep]


def bind_network(model: PipelineModel, domain) -> ReluNetwork:
    weights, biases, semantics, metadata, acts = _estimator_layers(model.estimator)
    n_in, n_enc = len(domain), len(model.features)
    if weights[0].shape[1] != n_enc:
        raise DomainError(f"the estimator takes {weights[0].shape[1]} inputs but the preprocessing gives {n_enc}")
    col = {name: j for j, name in enumerate(domain.names)}
    # encoded z = A h + c where h are hidden ReLU units relu(x_j - k) (or, without any step function, z = D x + c)
    units: dict[tuple[int, float], int] = {}
    terms: list[list[tuple[tuple[int, float], float]]] = []
    const = np.zeros(n_enc)
    for i, f in enumerate(model.features):
        j = col[f.column]
        feature = domain.features[j]
        if f.encoder.kind == "identity":  # x = relu(x - lo) + lo on the domain
            a, b = f.affine()
            terms.append([((j, float(feature.min)), a)])
            const[i] = a * feature.min + b
            continue
        if not feature.is_discrete:
            raise DomainError(
                f"column {f.column!r} is real-valued in the domain, but the model's {f.encoder.origin} makes a step "
                "function of it, which a ReLU network cannot compute exactly; declare the column integer if it "
                "takes integer values, or verify a tree model"
            )
        if feature.size > MAX_GRID:
            raise DomainError(
                f"column {f.column!r} has {feature.size:g} values; a {f.encoder.origin} column may "
                f"have at most {MAX_GRID}"
            )
        grid = feature.values()
        g0, knots, coefs = _knots(f.value(raw_values(feature, grid)), int(feature.min))
        const[i] = g0
        terms.append([((j, k), c) for k, c in zip(knots, coefs)])
    identity_only = all(f.encoder.kind == "identity" for f in model.features)
    if identity_only:  # no hidden layer: z = D x + c', folded into the first layer
        D = np.zeros((n_enc, n_in))
        for i, t in enumerate(terms):
            for (j, lo), a in t:
                D[i, j] += a
                const[i] -= a * lo
        W0, b0 = weights[0] @ D, weights[0] @ const + biases[0]
        layers, bias = [W0] + weights[1:], [b0] + biases[1:]
    else:  # the encoding layer's units are ReLUs
        acts = (None,) + tuple(acts) if acts else ()
        for t in terms:
            for key, _ in t:
                units.setdefault(key, len(units))
        H = np.zeros((len(units), n_in))
        hb = np.zeros(len(units))
        for (j, k), u in units.items():
            H[u, j], hb[u] = 1.0, -k
        A = np.zeros((n_enc, len(units)))
        for i, t in enumerate(terms):
            for key, c in t:
                A[i, units[key]] += c
        layers = [H, weights[0] @ A] + weights[1:]
        bias = [hb, weights[0] @ const + biases[0]] + biases[1:]
    tables = None if identity_only else _input_tables(model, domain, weights[0], biases[0])
    return ReluNetwork(
        layers,
        bias,
        input_names=list(domain.names),
        source=model.source,
        output_semantics=semantics,
        metadata={**metadata, "pipeline": True, "raw_columns": list(domain.names)},
        input_tables=tables,
        activations=acts,
    )


#: Domain points over which each category's effect on the logit is averaged (fixed seed).
EFFECT_SAMPLE = 2000


def order_by_effect(network: ReluNetwork, domain, fixed=()):
    """The domain with each categorical column's categories sorted by their mean effect on the logit.

    Categories are nominal, so their codes' order is free; the box engines split a column's codes
    into ranges, and ranges of categories with like effects are bounded more tightly. Columns in
    `fixed` (the protected ones) and two-category columns keep their order. Returns the domain
    itself when nothing moves."""
    from dataclasses import replace

    tables = network.input_tables
    if tables is None:
        return domain
    rng = np.random.default_rng(0)
    points = np.stack(
        [
            rng.integers(int(f.min), int(f.max) + 1, EFFECT_SAMPLE)
            if f.is_discrete
            else rng.uniform(f.min, f.max, EFFECT_SAMPLE)
            for f in domain.features
        ],
        axis=1,
    )
    features = list(domain.features)
    for k, j in enumerate(tables.columns):
        f = features[j]
        if f.categories is None or f.name in fixed or len(f.categories) <= 2:
            continue
        h = points @ tables.linear.T + tables.bias
        for other, (i, table) in enumerate(zip(tables.columns, tables.tables)):
            if i != j:
                h += table[tables.rows(other, points[:, i])]
        effect = [network.logit_from_first(network.activate(1, h + row), start=2).mean() for row in tables.tables[k]]
        order = np.argsort(effect, kind="stable")
        if np.any(order != np.arange(order.size)):
            features[j] = replace(f, categories=tuple(f.categories[i] for i in order))
    return domain if features == list(domain.features) else replace(domain, features=tuple(features))


def _input_tables(model: PipelineModel, domain, w0: np.ndarray, b0: np.ndarray) -> InputTables:
    """The estimator's first layer as lookups of the columns with a step encoding, exact on the grid.

    Every encoded feature of such a column (its identity parts too) goes into the column's table,
    so a box's range of the column is bounded jointly; other columns stay linear."""
    col = {name: j for j, name in enumerate(domain.names)}
    stepped = sorted({col[f.column] for f in model.features if f.encoder.kind != "identity"})
    linear = np.zeros((w0.shape[0], len(domain)))
    bias = np.array(b0, dtype=np.float64)
    tables = {j: np.zeros((int(domain.features[j].size), w0.shape[0])) for j in stepped}
    for i, f in enumerate(model.features):
        j = col[f.column]
        if j in tables:
            feature = domain.features[j]
            tables[j] += np.outer(f.value(raw_values(feature, feature.values())), w0[:, i])
        else:
            a, b = f.affine()
            linear[:, j] += a * w0[:, i]
            bias += b * w0[:, i]
    for j in list(tables):  # an affine table (ordinal ranks) is better read as a number: its rows move together
        table, start = tables[j], float(domain.features[j].min)
        slope = table[1] - table[0] if table.shape[0] > 1 else np.zeros(table.shape[1])
        line = table[0] + np.arange(table.shape[0])[:, None] * slope
        if np.all(np.abs(table - line) <= 1e-12 * (1.0 + np.abs(table))):
            linear[:, j] += slope
            bias += table[0] - start * slope
            del tables[j]
    kept = sorted(tables)
    return InputTables(
        linear, bias, tuple(kept), tuple(float(domain.features[j].min) for j in kept), tuple(tables[j] for j in kept)
    )
