"""A self-contained example: synthetic lending data with a planted bias, and a small ReLU network.

Everything is generated here, deterministically from a seed, with numpy alone: no downloads and no
deep-learning framework. The network is trained on standardised inputs and the standardisation is
folded into its first layer, so the saved model takes raw feature values like the domain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .domain import Domain, Feature
from .models.network import ReluNetwork

DEMO_DOMAIN = Domain(
    (
        Feature("age", "integer", 18, 75),
        Feature("income", "integer", 10, 200),  # thousands per year
        Feature("debt_ratio", "integer", 0, 60),  # percent of income
        Feature("years_employed", "integer", 0, 40),
        Feature("sex", "binary", 0, 1, protected=True),
    )
)


@dataclass
class DemoData:
    X: np.ndarray
    y: np.ndarray
    domain: Domain

    def frame(self):
        import pandas as pd

        frame = pd.DataFrame(self.X.astype(np.int64), columns=self.domain.names)
        frame["approved"] = self.y
        return frame


def lending_data(n: int = 4000, seed: int = 0) -> DemoData:
    """Loan decisions that depend on income, debt and employment, and (the planted bias) on sex."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 76, n)
    years = np.minimum(rng.integers(0, 41, n), age - 18)
    income = np.clip(rng.gamma(4.0, 14.0, n) + 1.2 * years, 10, 200).round()
    debt = rng.integers(0, 61, n)
    sex = rng.integers(0, 2, n)
    score = 0.045 * (income - 60) - 0.09 * (debt - 30) + 0.05 * years + 0.9 * sex - 0.3
    y = (score + rng.logistic(0, 0.6, n) > 0).astype(np.int64)
    X = np.column_stack([age, income, debt, years, sex]).astype(np.float64)
    return DemoData(X, y, DEMO_DOMAIN)


def train_relu_network(
    X: np.ndarray, y: np.ndarray, hidden: tuple[int, ...] = (12, 8), epochs: int = 600, lr: float = 0.02, seed: int = 0
) -> ReluNetwork:
    """Full-batch Adam on the logistic loss; returns the network in raw input units."""
    rng = np.random.default_rng(seed)
    mean, std = X.mean(axis=0), X.std(axis=0) + 1e-12
    Z = (X - mean) / std
    sizes = [X.shape[1], *hidden, 1]
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(0, np.sqrt(2.0 / a), (b, a)), np.zeros(b)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    target = y.astype(np.float64)
    for step in range(1, epochs + 1):
        acts = [Z]
        for k in range(0, len(params), 2):
            h = acts[-1] @ params[k].T + params[k + 1]
            acts.append(h if k == len(params) - 2 else np.maximum(h, 0))
        prob = 1.0 / (1.0 + np.exp(-acts[-1][:, 0]))
        delta = ((prob - target) / len(target))[:, None]
        grads = [np.zeros_like(p) for p in params]
        for k in range(len(params) - 2, -1, -2):
            grads[k] = delta.T @ acts[k // 2]
            grads[k + 1] = delta.sum(axis=0)
            if k:
                delta = (delta @ params[k]) * (acts[k // 2] > 0)
        for i, g in enumerate(grads):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            params[i] -= lr * (m[i] / (1 - 0.9**step)) / (np.sqrt(v[i] / (1 - 0.999**step)) + 1e-8)
    weights, biases = params[0::2], params[1::2]
    # Fold the standardisation into the first layer: W (x - mean) / std + b.
    w0 = weights[0] / std
    biases[0] = biases[0] - w0 @ mean
    weights[0] = w0
    return ReluNetwork(weights, biases, source="faircert demo network", output_semantics="logit")


def accuracy(network: ReluNetwork, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(network.predict(X) == y))
