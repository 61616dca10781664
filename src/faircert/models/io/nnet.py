"""Reader and writer for the NNet text format (Julian et al.).

The header's input minimums and maximums become the network's default domain. The means and
ranges are *not* applied: the fairness benchmark networks store per-feature statistics there but
were trained on, and take, raw feature codes (their Keras twins agree with the raw reading on every
input, and disagree on up to 94% of inputs once the statistics are applied). A file with
non-trivial statistics is flagged in the network's metadata (`normalisation_ignored`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...errors import ModelFormatError
from ...limits import (
    MAX_LAYER_WIDTH,
    MAX_LAYERS,
    MAX_TENSOR_VALUES,
    check_at_most,
    quoted,
    read_text,
)
from ..network import ReluNetwork


def _numbers(line: str, path: Path, lineno: int) -> list[float]:
    try:
        values = [float(tok) for tok in line.replace(",", " ").split()]
    except ValueError:
        raise ModelFormatError(
            f"{path}:{lineno}: expected comma-separated numbers, got {quoted(line.strip())}"
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise ModelFormatError(f"{path}:{lineno}: a value is not a finite number (nan or inf)")
    return values


def _count(value: float, what: str, path: Path, lineno: int, limit: int) -> int:
    """A size from the header: a whole number >= 1 and within the resource limit."""
    if value != math.floor(value) or value < 1:
        raise ModelFormatError(f"{path}:{lineno}: {what} must be a whole number >= 1, got {value:g}")
    check_at_most(what, int(value), limit, f"{path}:{lineno}")
    return int(value)


def load_nnet(path: str | Path) -> ReluNetwork:
    path = Path(path)
    lines = read_text(path, ModelFormatError, "NNet").splitlines()
    rows = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("//")]
    it = iter(rows)

    def take(expected: int | tuple[int, ...], what: str) -> list[float]:
        try:
            lineno, line = next(it)
        except StopIteration:
            raise ModelFormatError(f"{path}: the file ends early, before {what}; not a complete NNet file") from None
        values = _numbers(line, path, lineno)
        allowed = expected if isinstance(expected, tuple) else (expected,)
        if len(values) not in allowed:
            raise ModelFormatError(
                f"{path}:{lineno}: {what} has {len(values)} values, expected {' or '.join(map(str, allowed))}"
            )
        return values

    lineno = rows[0][0] if rows else 1
    head = take((3, 4), "the first line (numLayers, numInputs, numOutputs, maxLayerSize)")
    n_layers = _count(head[0], "the number of layers", path, lineno, MAX_LAYERS)
    n_inputs = _count(head[1], "the number of inputs", path, lineno, MAX_LAYER_WIDTH)
    n_outputs = _count(head[2], "the number of outputs", path, lineno, MAX_LAYER_WIDTH)
    lineno = rows[1][0] if len(rows) > 1 else lineno
    sizes = [
        _count(s, "a layer size", path, lineno, MAX_LAYER_WIDTH)
        for s in take(n_layers + 1, f"the layer sizes ({n_layers} layers + the input)")
    ]
    if sizes[0] != n_inputs or sizes[-1] != n_outputs:
        raise ModelFormatError(
            f"{path}:{lineno}: layer sizes {sizes} do not start with {n_inputs} inputs and end with {n_outputs} outputs"
        )
    check_at_most("the number of weights", sum(a * b for a, b in zip(sizes, sizes[1:])), MAX_TENSOR_VALUES, str(path))
    # Every value has a line of its own size: check the count before allocating anything.
    body = 5 + sum(sizes[1:]) * 2
    if len(rows) - 2 != body:
        raise ModelFormatError(
            f"{path}: {len(rows) - 2} lines after the layer sizes, but the header describes "
            f"{body} (flag, minimums, maximums, means, ranges, one line per neuron's weights and "
            "one per bias); the file is truncated or has extra lines"
        )
    take((0, 1), "the symmetric flag")
    mins = take(n_inputs, "the input minimums")
    maxs = take(n_inputs, "the input maximums")
    means = take((n_inputs, n_inputs + 1), "the input means")
    ranges = take((n_inputs, n_inputs + 1), "the input ranges")
    weights, biases = [], []
    for k in range(n_layers):
        n_out, n_in = sizes[k + 1], sizes[k]
        weights.append(np.array([take(n_in, f"layer {k} row {r}") for r in range(n_out)], dtype=np.float64))
        biases.append(np.array([take(1, f"layer {k} bias {r}")[0] for r in range(n_out)], dtype=np.float64))
    if sizes[-1] == 2:
        from ..network import logit_from_two_outputs

        weights[-1], biases[-1] = logit_from_two_outputs(weights[-1], biases[-1])
        semantics = "argmax2"
    elif sizes[-1] == 1:
        semantics = "logit"
    else:
        raise ModelFormatError(f"{path}: {sizes[-1]} outputs; faircert supports one logit or two classes")
    lower = np.array(mins)
    upper = np.array(maxs)
    if np.any(lower > upper):
        raise ModelFormatError(f"{path}: an input minimum exceeds its maximum")
    trivial = np.allclose(means[:n_inputs], 0) and np.allclose(ranges[:n_inputs], 1)
    return ReluNetwork(
        weights,
        biases,
        input_lower=lower,
        input_upper=upper,
        source=str(path),
        output_semantics=semantics,
        metadata={"format": "nnet", "normalisation_ignored": not trivial},
    )


def save_nnet(network: ReluNetwork, path: str | Path) -> None:
    """Write a network (with its declared input ranges, or zeros/ones) as NNet text."""
    network.require_piecewise_linear("the NNet format")
    sizes = network.layer_sizes
    lower = network.input_lower if network.input_lower is not None else np.zeros(network.n_inputs)
    upper = network.input_upper if network.input_upper is not None else np.ones(network.n_inputs)
    fmt = lambda vals: ",".join(repr(float(v)) for v in vals) + ","
    out = [
        "// written by faircert",
        f"{len(network.weights)},{sizes[0]},{sizes[-1]},{max(sizes)},",
        ",".join(map(str, sizes)) + ",",
        "0,",
        fmt(lower),
        fmt(upper),
        fmt(np.zeros(sizes[0] + 1)),
        fmt(np.ones(sizes[0] + 1)),
    ]
    for w, b in zip(network.weights, network.biases):
        out += [fmt(row) for row in w]
        out += [fmt([v]) for v in b]
    Path(path).write_text("\n".join(out) + "\n")
