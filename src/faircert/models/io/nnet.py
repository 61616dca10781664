"""Reader and writer for the NNet text format (Julian et al.).

The header's input minimums and maximums become the network's default domain. The means and
ranges are *not* applied: the fairness benchmark networks store per-feature statistics there but
were trained on, and take, raw feature codes (their Keras twins agree with the raw reading on every
input, and disagree on up to 94% of inputs once the statistics are applied). A file with
non-trivial statistics is flagged in the network's metadata (`normalisation_ignored`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import ModelFormatError
from ..network import ReluNetwork


def _numbers(line: str, path: Path, lineno: int) -> list[float]:
    try:
        return [float(tok) for tok in line.replace(",", " ").split()]
    except ValueError:
        raise ModelFormatError(f"{path}:{lineno}: expected comma-separated numbers, got {line.strip()[:60]!r}") from None


def load_nnet(path: str | Path) -> ReluNetwork:
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFormatError(f"cannot read NNet file {path}: {exc}") from None
    rows = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("//")]
    it = iter(rows)

    def take() -> tuple[int, list[float]]:
        try:
            lineno, line = next(it)
        except StopIteration:
            raise ModelFormatError(f"{path}: the file ends early; not a complete NNet file") from None
        return lineno, _numbers(line, path, lineno)

    _, head = take()
    if len(head) < 3:
        raise ModelFormatError(f"{path}: the first line must give numLayers, numInputs, numOutputs")
    n_layers, n_inputs = int(head[0]), int(head[1])
    _, sizes = take()
    sizes = [int(s) for s in sizes[: n_layers + 1]]
    if len(sizes) != n_layers + 1 or sizes[0] != n_inputs:
        raise ModelFormatError(f"{path}: layer sizes {sizes} do not match {n_layers} layers and {n_inputs} inputs")
    take()  # the unused symmetric flag
    _, mins = take()
    _, maxs = take()
    _, means = take()
    _, ranges = take()
    if len(mins) < n_inputs or len(maxs) < n_inputs:
        raise ModelFormatError(f"{path}: input minimums/maximums need {n_inputs} values")
    weights, biases = [], []
    for k in range(n_layers):
        n_out, n_in = sizes[k + 1], sizes[k]
        w = np.empty((n_out, n_in))
        for r in range(n_out):
            lineno, vals = take()
            if len(vals) < n_in:
                raise ModelFormatError(f"{path}:{lineno}: layer {k} row {r} has {len(vals)} weights, expected {n_in}")
            w[r] = vals[:n_in]
        b = np.empty(n_out)
        for r in range(n_out):
            lineno, vals = take()
            if not vals:
                raise ModelFormatError(f"{path}:{lineno}: missing bias")
            b[r] = vals[0]
        weights.append(w)
        biases.append(b)
    if sizes[-1] == 2:
        from ..network import logit_from_two_outputs

        weights[-1], biases[-1] = logit_from_two_outputs(weights[-1], biases[-1])
        semantics = "argmax2"
    elif sizes[-1] == 1:
        semantics = "logit"
    else:
        raise ModelFormatError(f"{path}: {sizes[-1]} outputs; faircert supports one logit or two classes")
    lower = np.array(mins[:n_inputs])
    upper = np.array(maxs[:n_inputs])
    if np.any(lower > upper):
        raise ModelFormatError(f"{path}: an input minimum exceeds its maximum")
    trivial = np.allclose(means[:n_inputs], 0) and np.allclose(ranges[:n_inputs], 1)
    return ReluNetwork(
        weights, biases, input_lower=lower, input_upper=upper, source=str(path), output_semantics=semantics,
        metadata={"format": "nnet", "normalisation_ignored": not trivial},
    )


def save_nnet(network: ReluNetwork, path: str | Path) -> None:
    """Write a network (with its declared input ranges, or zeros/ones) as NNet text."""
    sizes = network.layer_sizes
    lower = network.input_lower if network.input_lower is not None else np.zeros(network.n_inputs)
    upper = network.input_upper if network.input_upper is not None else np.ones(network.n_inputs)
    fmt = lambda vals: ",".join(repr(float(v)) for v in vals) + ","
    out = ["// written by faircert", f"{len(network.weights)},{sizes[0]},{sizes[-1]},{max(sizes)},",
           ",".join(map(str, sizes)) + ",", "0,", fmt(lower), fmt(upper),
           fmt(np.zeros(sizes[0] + 1)), fmt(np.ones(sizes[0] + 1))]
    for w, b in zip(network.weights, network.biases):
        out += [fmt(row) for row in w]
        out += [fmt([v]) for v in b]
    Path(path).write_text("\n".join(out) + "\n")
