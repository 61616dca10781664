"""A region's fairness query as an ONNX twin network plus a VNN-LIB property, for VNN-COMP verifiers.

The twin network takes z = [x (free features), p (x's protected values), delta, p' (x''s protected
values)] and returns [f(x, p), f(x', p')] with x' = clip(x + delta) to the domain. Clipping and the
hand-over of inputs are ReLU layers (v = lo + relu(v - lo) on the domain; clip(v) = lo + relu(v -
lo) - relu(v - hi)), so the file is a plain Gemm/Relu chain. The property is a disjunction of input
boxes, one per allowed pair of protected combinations (every ordered pair of different ones; the
single one for robustness), with x in the region and delta within epsilon, and asks for outputs on
opposite sides of 0: (Y_0 >= 0 and Y_1 <= 0) or (Y_0 <= 0 and Y_1 >= 0).

VNN-LIB is real-valued and non-strict: a verifier's `unsat` proves the query over the real
relaxation of the integer features, which contains the integer grid, so it proves fairness; a
`sat` witness may be fractional or sit on 0 and must be re-checked on the model
(`faircert verify --complete` decides the integer question itself).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import FaircertError
from .problem import Problem


def twin_layers(pb: Problem) -> list[tuple[np.ndarray, np.ndarray]]:
    """(W, b) of every layer of the twin network (ReLU after all but the last)."""
    net = pb.network
    n = net.n_inputs
    d, k = pb.d, len(pb.protected)
    dom_lo = np.empty(n)
    dom_hi = np.empty(n)
    dom_lo[pb.free], dom_hi[pb.free] = pb.lo, pb.hi
    if k:
        dom_lo[pb.protected], dom_hi[pb.protected] = pb.combos.min(axis=0), pb.combos.max(axis=0)
    m = 2 * d + 2 * k
    # layer 0: shifted copies of x, p, p' (non-negative on the domain) and the two clip halves of x + delta
    rows = 2 * k + 3 * d
    W0 = np.zeros((rows, m))
    b0 = np.zeros(rows)
    xi, pi, di, qi = np.arange(d), d + np.arange(k), d + k + np.arange(d), 2 * d + k + np.arange(k)
    W0[np.arange(d), xi] = 1.0
    b0[:d] = -pb.lo
    W0[d + np.arange(k), pi] = 1.0
    b0[d : d + k] = -dom_lo[pb.protected]
    W0[d + k + np.arange(k), qi] = 1.0
    b0[d + k : d + 2 * k] = -dom_lo[pb.protected]
    low, high = d + 2 * k + np.arange(d), 2 * d + 2 * k + np.arange(d)
    W0[low, xi] = W0[low, di] = 1.0
    b0[low] = -pb.lo
    W0[high, xi] = W0[high, di] = 1.0
    b0[high] = -pb.hi
    # the model's inputs as linear functions of layer 0's outputs: A (copy) = lo + S @ relu-outputs
    S_a = np.zeros((n, rows))
    S_b = np.zeros((n, rows))
    S_a[pb.free, np.arange(d)] = 1.0
    S_b[pb.free, low] = 1.0
    S_b[pb.free, high] = -1.0
    if k:
        S_a[pb.protected, d + np.arange(k)] = 1.0
        S_b[pb.protected, d + k + np.arange(k)] = 1.0
    W1, b1 = net.weights[0], net.biases[0]
    first = (np.vstack([W1 @ S_a, W1 @ S_b]), np.concatenate([b1 + W1 @ dom_lo, b1 + W1 @ dom_lo]))
    layers = [(W0, b0), first]
    for w, b in zip(net.weights[1:], net.biases[1:]):
        z = np.zeros_like(w)
        layers.append((np.block([[w, z], [z, w]]), np.concatenate([b, b])))
    return layers


def save_twin_onnx(pb: Problem, path: str | Path) -> None:
    import onnx
    from onnx import helper, numpy_helper

    layers = twin_layers(pb)
    nodes, inits, x = [], [], "X"
    last = len(layers) - 1
    for i, (w, b) in enumerate(layers):
        inits += [
            numpy_helper.from_array(w.astype(np.float64), f"W{i}"),
            numpy_helper.from_array(b.astype(np.float64), f"B{i}"),
        ]
        y = "Y" if i == last else f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"B{i}"], [y], name=f"dense_{i}", transB=1))
        if i < last:
            nodes.append(helper.make_node("Relu", [y], [f"r{i}"], name=f"relu_{i}"))
            y = f"r{i}"
        x = y
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(np.float64))
    graph = helper.make_graph(
        nodes,
        "faircert_twin",
        [helper.make_tensor_value_info("X", elem, [1, layers[0][0].shape[1]])],
        [helper.make_tensor_value_info("Y", elem, [1, 2])],
        inits,
    )
    proto = helper.make_model(graph, producer_name="faircert", opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))


def vnnlib_text(pb: Problem, lo: np.ndarray | None = None, hi: np.ndarray | None = None) -> str:
    """The property over the region [lo, hi] of the free features (default: the whole domain)."""
    lo = pb.lo if lo is None else lo
    hi = pb.hi if hi is None else hi
    d, k = pb.d, len(pb.protected)
    m = 2 * d + 2 * k
    lines = [
        "; faircert: is there a pair (x, x') in the region, x' within epsilon of x and under another",
        "; protected combination, on opposite sides of 0? Inputs: x (free features), p, delta, p'.",
        *[f"(declare-const X_{i} Real)" for i in range(m)],
        "(declare-const Y_0 Real)",
        "(declare-const Y_1 Real)",
        "(assert (or",
    ]
    for a, b in zip(*np.nonzero(pb.pairs)):
        box = [(lo[i], hi[i]) for i in range(d)] + [(v, v) for v in pb.combos[a]]
        box += [(-e, e) for e in pb.eps] + [(v, v) for v in pb.combos[b]]
        terms = " ".join(f"(>= X_{i} {_num(l)}) (<= X_{i} {_num(u)})" for i, (l, u) in enumerate(box))
        lines.append(f"    (and {terms})")
    lines += ["))", "(assert (or (and (>= Y_0 0.0) (<= Y_1 0.0)) (and (<= Y_0 0.0) (>= Y_1 0.0))))"]
    return "\n".join(lines) + "\n"


def export(pb: Problem, out_dir: str | Path) -> tuple[Path, Path]:
    """Write `twin.onnx` and `property.vnnlib` into out_dir."""
    pb.network.require_piecewise_linear("the VNN-LIB export")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        onnx_path, prop_path = out / "twin.onnx", out / "property.vnnlib"
        save_twin_onnx(pb, onnx_path)
        prop_path.write_text(vnnlib_text(pb))
    except OSError as exc:
        raise FaircertError(f"cannot write into {out}: {exc}") from None
    return onnx_path, prop_path


def _num(v: float) -> str:
    return repr(float(v))
