"""The common back end of the neural-network importers: a chain of operations -> ReluNetwork.

Each importer turns its format into a list of `Op`s (affine maps, ReLUs, piecewise-linear units,
smooth units, a final sigmoid or softmax), each labelled with where it came from. A sigmoid followed
by more of the chain is a hidden unit. A piecewise-linear unit (leaky ReLU, PReLU, ReLU6, hard tanh,
Clip) is rewritten exactly into ReLUs (`piecewise`), so every engine for ReLU networks takes it (the
MILP included); a smooth unit stays one (`activations`). `build_network` merges consecutive affine maps,
checks widths, folds the output into one logit, and names the offending layer when the chain
cannot be expressed exactly. `check_agreement` compares the result with the framework's own
outputs on sampled inputs, so an importer bug becomes an error instead of a wrong verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...errors import ModelFormatError
from ..activations import Activation
from ..network import ReluNetwork, logit_from_two_outputs
from .piecewise import Piecewise, as_relus, clip_unit, leaky_unit

SUPPORTED = (
    "affine layers (Dense/Linear/Gemm/MatMul+Add) with ReLU, leaky ReLU, tanh, sigmoid, GELU, SiLU or ELU "
    "between them, ending in one logit, a sigmoid, or a two-class softmax/argmax"
)


@dataclass
class Op:
    """One step of a feed-forward chain: kind is 'affine', 'scale', 'relu', 'piecewise', 'smooth',
    'sigmoid' (final, or hidden when more follows) or 'softmax'."""

    kind: str
    where: str
    weight: np.ndarray | None = None  # out x in; for 'scale': the elementwise factors
    bias: np.ndarray | None = None
    unit: Activation | None = None  # for 'smooth'
    piece: Piecewise | None = None  # for 'piecewise'


def leaky(slope, where: str) -> Op:
    """A leaky ReLU (PReLU: one slope per neuron; slope 0: a plain ReLU)."""
    slope = np.asarray(slope, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(slope)):
        raise ModelFormatError(f"{where}: leaky ReLU slope {slope}")
    return Op("relu", where) if np.all(slope == 0.0) else Op("piecewise", where, piece=leaky_unit(slope))


def clip(low: float | None, high: float | None, where: str, slope: float = 0.0) -> Op:
    """min(max(z, low), high), either end open (ReLU6, hard tanh, Clip; see `piecewise.clip_unit`)."""
    if (low, high, slope) == (0.0, None, 0.0):
        return Op("relu", where)
    try:
        return Op("piecewise", where, piece=clip_unit(low, high, slope))
    except ModelFormatError as exc:
        raise ModelFormatError(f"{where}: {exc}") from None


def smooth(unit: Activation, where: str) -> Op:
    return Op("smooth", where, unit=unit)


#: What follows a hidden layer: None for ReLU, a piecewise-linear unit, or a smooth unit.
_Unit = Piecewise | Activation | None
_ACTIVATIONS = ("relu", "piecewise", "smooth")


def affine(weight: np.ndarray, bias: np.ndarray | None, where: str) -> Op:
    weight = np.asarray(weight, dtype=np.float64)
    if weight.ndim != 2:
        raise ModelFormatError(f"{where}: expected a 2-D weight matrix, got shape {weight.shape}")
    bias = np.zeros(weight.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
    if bias.shape[0] != weight.shape[0]:
        raise ModelFormatError(f"{where}: bias of length {bias.shape[0]} for {weight.shape[0]} outputs")
    return Op("affine", where, weight, bias)


def diagonal(scale: np.ndarray, shift: np.ndarray, where: str) -> Op:
    """The elementwise map x -> scale * x + shift; scalars are broadcast once the width is known."""
    return Op("scale", where, np.asarray(scale, dtype=np.float64), np.asarray(shift, dtype=np.float64))


class _Layer(NamedTuple):
    """An affine map of the chain, as the network will hold it."""

    where: str
    weight: np.ndarray
    bias: np.ndarray

    @classmethod
    def of(cls, op: Op) -> _Layer:
        assert op.weight is not None and op.bias is not None  # `affine` gives both
        return cls(op.where, op.weight, op.bias)


def unsupported(what: str, where: str) -> ModelFormatError:
    return ModelFormatError(f"{where}: {what} is not supported; faircert reads {SUPPORTED}")


def build_network(ops: list[Op], n_inputs: int | None, source: str, **extra) -> ReluNetwork:
    """Merge the chain into a ReluNetwork with one output logit (see the module docstring)."""
    if not any(op.kind in ("affine", "scale") for op in ops):
        raise ModelFormatError(f"{source}: no affine layer found; faircert reads {SUPPORTED}")
    layers: list[_Layer] = []
    width = n_inputs
    pending: _Layer | None = None
    final: Op | None = None
    units: list[_Unit] = []  # the unit after each of `layers`
    for op in ops:
        if final is not None and final.kind == "sigmoid":  # more follows: a hidden unit
            width = _add_unit(layers, units, pending, smooth(Activation("sigmoid"), final.where), width)
            final = pending = None
        if final is not None:
            raise ModelFormatError(
                f"{op.where} follows the final {final.kind} ({final.where}); "
                f"the {final.kind} must be the last operation"
            )
        if op.kind == "scale":
            if width is None:
                raise ModelFormatError(f"{op.where}: elementwise scaling of an input of unknown width")
            scale, shift = _Layer.of(op)[1:]
            try:
                op = affine(
                    np.diag(np.broadcast_to(scale.ravel(), (width,))),
                    np.broadcast_to(shift.ravel(), (width,)),
                    op.where,
                )
            except ValueError:
                raise ModelFormatError(f"{op.where}: {scale.size} scale values for {width} features") from None
        if op.kind == "affine":
            layer = _Layer.of(op)
            if width is not None and layer.weight.shape[1] != width:
                raise ModelFormatError(f"{op.where} takes {layer.weight.shape[1]} inputs but receives {width}")
            if pending is None:
                pending = layer
            else:  # two affine maps in a row compose exactly
                w = layer.weight
                pending = _Layer(pending.where, w @ pending.weight, w @ pending.bias + layer.bias)
            width = layer.weight.shape[0]
        elif op.kind in _ACTIVATIONS:
            width = _add_unit(layers, units, pending, op, width)
            pending = None
        elif op.kind in ("sigmoid", "softmax"):
            final = op
        else:
            raise AssertionError(op.kind)
    ends_in_relu = pending is None
    if ends_in_relu and units[-1] is not None:
        raise unsupported(f"a {_name(units[-1])} right before the output", layers[-1].where)
    last = layers.pop() if pending is None else pending  # (the chain holds an affine map)
    if ends_in_relu:
        units.pop()
    n_out = last.weight.shape[0]
    if final is not None and final.kind == "softmax":
        if n_out != 2:
            raise ModelFormatError(
                f"{final.where}: softmax over {n_out} classes; faircert handles binary "
                "classifiers (one logit, one sigmoid output or a two-class softmax)"
            )
        if ends_in_relu:
            raise unsupported("a ReLU right before the softmax", final.where)
        semantics = "softmax2"
    elif final is not None:  # sigmoid(z) > 1/2 iff z > 0, also when z is itself a ReLU output
        if n_out != 1:
            raise ModelFormatError(f"{final.where}: sigmoid over {n_out} outputs; faircert needs a single output")
        semantics = "sigmoid"
    elif n_out == 1:
        semantics = "logit"
    elif n_out == 2 and not ends_in_relu:
        semantics = "argmax2"
    else:
        raise ModelFormatError(
            f"{source}: the network ends in {n_out} outputs; faircert handles binary "
            "classifiers (one logit, one sigmoid output or a two-class softmax)"
        )
    w, b = last.weight, last.bias
    if n_out == 2:
        w, b = logit_from_two_outputs(w, b)
    layers.append(_Layer(last.where, w, b))
    layers, smooth_units = _as_relus(layers, units)
    metadata = dict(extra.pop("metadata", {}))
    if ends_in_relu:
        metadata["final_relu"] = True  # relu(z) > 0 iff z > 0: dropped, labels unchanged
    return ReluNetwork(
        [layer.weight for layer in layers],
        [layer.bias for layer in layers],
        source=source,
        output_semantics=semantics,
        metadata=metadata,
        activations=smooth_units,
        **extra,
    )


def _name(unit: _Unit) -> str:
    return "ReLU" if unit is None else str(unit)


def _add_unit(
    layers: list[_Layer], units: list[_Unit], pending: _Layer | None, op: Op, width: int | None
) -> int | None:
    """End the pending affine map with the unit `op`; a unit right after another (or on the raw
    input) gets an identity layer first, except ReLU after ReLU, which is the identity."""
    unit: _Unit = None if op.kind == "relu" else op.piece if op.kind == "piecewise" else op.unit
    if pending is None:
        if layers and unit is None and units[-1] is None:
            return width
        if width is None:
            raise ModelFormatError(f"{op.where}: {_name(unit)} on an input of unknown width")
        pending = _Layer.of(affine(np.eye(width), None, op.where))
    layers.append(pending)
    units.append(unit)
    return pending.weight.shape[0]


def _as_relus(layers: list[_Layer], units: list[_Unit]) -> tuple[list[_Layer], tuple[Activation | None, ...]]:
    """Each piecewise-linear layer as a layer of ReLUs (`piecewise.as_relus`); the next reads them."""
    layers = list(layers)
    out: list[Activation | None] = []
    for k, unit in enumerate(units):
        if isinstance(unit, Piecewise):
            here, after = layers[k], layers[k + 1]
            try:
                w, b, w_next, b_next = as_relus(here.weight, here.bias, unit, after.weight, after.bias)
            except ModelFormatError as exc:
                raise ModelFormatError(f"{here.where}: {exc}") from None
            layers[k], layers[k + 1] = _Layer(here.where, w, b), _Layer(after.where, w_next, b_next)
            out.append(None)
        else:
            out.append(unit)
    return layers, tuple(out)


def sample_inputs(n_inputs: int, seed: int = 0) -> np.ndarray:
    """Inputs for the import check: a zero row plus normal rows at two scales."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(64, n_inputs)) * np.repeat([1.0, 10.0], 32)[:, None]
    X[0] = 0.0
    return X


def expected_outputs(network: ReluNetwork, X: np.ndarray) -> tuple[np.ndarray, slice | int]:
    """What the original model should output on X, and which output column(s) hold it."""
    z = network.logit(X)
    if network.metadata.get("final_relu"):
        z = np.maximum(z, 0.0)
    sem = network.output_semantics
    if sem == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z)), 0
    if sem == "softmax2":
        return 1.0 / (1.0 + np.exp(-z)), 1
    return z, 0


def check_import(
    network: ReluNetwork,
    check_inputs: np.ndarray | None,
    framework: str,
    run: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> None:
    """Check a network against the framework it was read from, on `check_inputs` (else
    `sample_inputs`): `run(X)` gives the rows the framework ran (X, or as it had to reshape them)
    and its outputs on them."""
    X = sample_inputs(network.n_inputs) if check_inputs is None else np.asarray(check_inputs, dtype=np.float64)
    check_agreement(network, *run(X), framework)


def check_agreement(network: ReluNetwork, X: np.ndarray, outputs: np.ndarray, framework: str) -> None:
    """Raise unless the framework's outputs on X match the network's (float32 tolerance)."""
    out = np.asarray(outputs, dtype=np.float64).reshape(len(X), -1)
    want_cols = 2 if network.output_semantics in ("softmax2", "argmax2") else 1
    if out.shape[1] != want_cols:
        raise ModelFormatError(
            f"{network.source or framework}: {framework} returns {out.shape[1]} outputs per input, expected {want_cols}"
        )
    expected, col = expected_outputs(network, X)
    got = out[:, 1] - out[:, 0] if network.output_semantics == "argmax2" else out[:, col]
    diff = np.abs(expected - got)
    bad = ~(diff <= 1e-4 + 1e-3 * np.abs(got))
    if np.any(bad):
        raise ModelFormatError(
            f"{network.source or framework}: the imported network disagrees with {framework} on {int(bad.sum())} of "
            f"{len(X)} sampled inputs (largest difference {float(np.nanmax(diff)):.3g}); the model uses something "
            "faircert does not translate faithfully"
        )
