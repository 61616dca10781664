"""ReluNetwork: the IR of feed-forward networks with one decision logit.

Every importer reduces its model to affine layers with ReLU (or a smooth unit, see `activations`)
between them and one output logit
whose sign is the label (positive iff logit > 0). A final sigmoid is thresholded at its input; a
two-class softmax/argmax becomes the logit z1 - z0, which is exact (class 1 iff z1 > z0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from ..errors import ModelFormatError, UnsupportedModelError
from .activations import Activation

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class NetworkVisitor(Protocol[T_co]):
    """An engine's code for ReLU networks, reached through `ReluNetwork.accept`."""

    def network(self, model: ReluNetwork) -> T_co: ...


@dataclass(frozen=True)
class InputTables:
    """The network's first two layers as one lookup per discrete column, exact on the domain's grid.

    A pipeline's one-hot and ordinal encodings are step functions of a raw column; the network
    computes them with a layer of ReLUs whose interval bounds are loose. On the grid, the
    pre-activation of the estimator's first layer is exactly
    `linear @ x + bias + sum_j tables[j][x[columns[j]] - starts[j]]`, where each table row is one
    grid value's contribution; bounding engines use this form and min/max over a box's rows.
    """

    linear: np.ndarray  # (n1, n_inputs): columns used as numbers
    bias: np.ndarray  # (n1,)
    columns: tuple[int, ...]  # input index of each table
    starts: tuple[float, ...]  # grid value of each table's row 0 (the grid steps by 1)
    tables: tuple[np.ndarray, ...]  # each (grid size, n1)

    def rows(self, k: int, values: np.ndarray) -> np.ndarray:
        """Row index of each grid value of table k (clipped to the table)."""
        index = np.rint(np.asarray(values, dtype=np.float64) - self.starts[k]).astype(np.int64)
        return np.clip(index, 0, self.tables[k].shape[0] - 1)

    def first_layer(self, X: np.ndarray) -> np.ndarray:
        """Pre-activations (n, n1) of grid points X (n, n_inputs)."""
        h = X @ self.linear.T + self.bias
        for k, (j, table) in enumerate(zip(self.columns, self.tables)):
            h += table[self.rows(k, X[:, j])]
        return h


@dataclass
class ReluNetwork:
    """Affine layers `x -> W x + b` (W of shape out x in) with an activation after every layer but
    the last: ReLU, or the smooth unit `activations` names for that layer."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]
    #: Input ranges the model file itself declares (NNet headers); a default domain.
    input_lower: np.ndarray | None = None
    input_upper: np.ndarray | None = None
    input_names: list[str] | None = None
    #: Where the network came from (a path or a framework name), for reports.
    source: str = ""
    #: How the file's output was turned into one logit ("logit", "sigmoid", "softmax2", ...).
    output_semantics: str = "logit"
    metadata: dict = field(default_factory=dict)
    #: The first two layers as per-column lookups (pipelines with step encodings); see InputTables.
    input_tables: InputTables | None = None
    #: One entry per hidden layer, None for ReLU; empty when every hidden layer is ReLU.
    activations: tuple[Activation | None, ...] = ()

    def __post_init__(self) -> None:
        self.weights = [np.asarray(w, dtype=np.float64) for w in self.weights]
        self.biases = [np.asarray(b, dtype=np.float64).reshape(-1) for b in self.biases]
        if not self.weights or len(self.weights) != len(self.biases):
            raise ModelFormatError("a network needs at least one layer and one bias per layer")
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            if w.ndim != 2 or w.shape[0] != b.shape[0]:
                raise ModelFormatError(f"layer {k}: weight shape {w.shape} does not match bias shape {b.shape}")
            if k and w.shape[1] != self.weights[k - 1].shape[0]:
                raise ModelFormatError(
                    f"layer {k} takes {w.shape[1]} inputs but layer {k - 1} has {self.weights[k - 1].shape[0]} outputs"
                )
            if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
                raise ModelFormatError(f"layer {k} has non-finite weights")
        if self.weights[-1].shape[0] != 1:
            raise ModelFormatError(
                f"the network ends in {self.weights[-1].shape[0]} outputs; faircert needs one logit or a two-class "
                "output"
            )
        self.activations = tuple(self.activations)
        if all(a is None for a in self.activations):
            self.activations = ()
        elif len(self.activations) != len(self.weights) - 1:
            raise ModelFormatError(f"{len(self.activations)} activations for {len(self.weights) - 1} hidden layers")
        if self.input_tables is not None and self.activation(0) is not None:
            raise ModelFormatError("input tables stand for a first layer of ReLUs")

    def activation(self, k: int) -> Activation | None:
        """Hidden layer k's smooth unit, None for ReLU."""
        return self.activations[k] if self.activations else None

    @property
    def piecewise_linear(self) -> bool:
        """Whether every hidden unit is a ReLU (so the MILP encodes the network exactly)."""
        return not self.activations

    def require_piecewise_linear(self, what: str) -> None:
        """Refuse `what` on a network with smooth units, which it cannot encode exactly."""
        if self.activations:
            units = ", ".join(sorted({str(a) for a in self.activations if a is not None}))
            raise UnsupportedModelError(
                f"{what} needs piecewise-linear activations (ReLU, leaky ReLU, ReLU6, hard tanh); this network "
                f"has {units}"
            )

    def activate(self, k: int, h: np.ndarray) -> np.ndarray:
        """Hidden layer k's activation applied to its pre-activations h (in place for ReLU)."""
        act = self.activation(k)
        return np.maximum(h, 0.0, out=h) if act is None else act(h)

    @property
    def n_inputs(self) -> int:
        return self.weights[0].shape[1]

    @property
    def layer_sizes(self) -> list[int]:
        return [self.n_inputs] + [w.shape[0] for w in self.weights]

    def named_inputs(self) -> list[str]:
        """The inputs' names in order: those the file gives, else x0, x1, ..."""
        return list(self.input_names) if self.input_names else [f"x{i}" for i in range(self.n_inputs)]

    def accept(self, visitor: NetworkVisitor[T]) -> T:
        """Return `visitor.network(self)`, so that an engine reaches its code for
        networks without a type test."""
        return visitor.network(self)

    def logit(self, X: np.ndarray) -> np.ndarray:
        """Decision logit for each row of X (shape n x inputs) -> shape (n,)."""
        h = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if h.shape[1] != self.n_inputs:
            raise ModelFormatError(f"the network takes {self.n_inputs} inputs, got rows of width {h.shape[1]}")
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w.T + b
            if k < last:
                h = self.activate(k, h)
        return h[:, 0]

    def logit_from_first(self, h: np.ndarray, start: int) -> np.ndarray:
        """The logit (n,) from the outputs h (n, width) of the activation after layer `start - 1`."""
        last = len(self.weights) - 1
        for k in range(start, last + 1):
            h = h @ self.weights[k].T + self.biases[k]
            if k < last:
                h = self.activate(k, h)
        return h[:, 0]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Labels (0/1) for each row of X."""
        return (self.logit(X) > 0).astype(np.int64)

    def sure_labels(self, X: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
        """(positive, unsure) per row of X: unsure where the logit lies within `tolerance` (relative
        to the largest) of 0, where the framework's own rounding could decide otherwise."""
        z = self.logit(X)
        unsure = np.abs(z) <= tolerance * (1.0 + np.abs(z).max(initial=0.0))
        return (z > 0) & ~unsure, unsure

    def __str__(self) -> str:
        units = "" if not self.activations else ", " + "/".join(sorted({str(a or "relu") for a in self.activations}))
        return f"ReluNetwork({'-'.join(map(str, self.layer_sizes))}{units}, from {self.source or 'memory'})"


def logit_from_two_outputs(weight: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold a final 2-output layer into one logit z1 - z0 (class 1 iff z1 > z0)."""
    weight = np.asarray(weight, dtype=np.float64)
    bias = np.asarray(bias, dtype=np.float64).reshape(-1)
    return (weight[1] - weight[0])[None, :], np.array([bias[1] - bias[0]])
