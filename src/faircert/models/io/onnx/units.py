"""Activation units that exporters spell as small elementwise graphs, recognised by what they compute.

PyTorch exports GELU below opset 20 as x * 0.5 * (1 + Erf(x / sqrt 2)) and SiLU as x * Sigmoid(x):
the chain forks at x and joins again. Such a region (elementwise operators only, every other operand
a scalar constant) is run by the ONNX reference runtime on a grid of values and taken for the unit
whose values it matches; the whole network is then checked against the runtime as usual.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ...activations import Activation

#: Operators a fused unit may be made of (all elementwise).
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Erf", "Tanh", "Sigmoid", "Exp", "Neg", "Pow", "Sqrt", "Reciprocal"}
#: The units a region is compared with.
CANDIDATES = (Activation("gelu"), Activation("silu"))
_PROBES = np.concatenate([np.linspace(-12.0, 12.0, 4801), [-40.0, -25.0, 25.0, 40.0]])


def region(nodes: list[onnx.NodeProto], start: int, needed: set[int], base: str, consts: dict) -> list[int]:
    """Indices of the nodes from `start` on that fork at tensor `base` and join again, or [] where
    they are not such a region. A tensor stays live while some needed node has still to read it;
    the region ends at the first node after which its own output is the only live tensor."""
    readers: dict[str, int] = {}
    for k in needed:
        for name in nodes[k].input:
            readers[name] = readers.get(name, 0) + 1
    if readers.get(base, 0) < 2:
        return []
    live = {base: readers[base]}
    taken: list[int] = []
    for k in range(start, len(nodes)):
        if k not in needed:
            continue
        node = nodes[k]
        dynamic = [i for i in node.input if i and i not in consts]
        if not dynamic:  # a constant, already evaluated
            continue
        if not set(dynamic) <= set(live) or node.op_type not in ELEMENTWISE:
            return []
        if node.domain not in ("", "ai.onnx") or any(np.size(consts[i]) != 1 for i in node.input if i in consts):
            return []
        taken.append(k)
        for name in dynamic:
            live[name] -= list(node.input).count(name)
        live = {name: n for name, n in live.items() if n > 0}
        live[node.output[0]] = readers.get(node.output[0], 0)
        if len(live) == 1 and len(taken) > 1:
            return taken
    return []


def recognise(
    nodes: list[onnx.NodeProto], taken: list[int], base: str, consts: dict, dtype
) -> tuple[Activation, float, float] | None:
    """(unit, a, c) with the region computing a unit(x) + c from `base` (an exporter may leave a
    factor to the nodes after the join, as PyTorch does GELU's 0.5), or None where it matches none."""
    out = nodes[taken[-1]].output[0]
    used = {i for k in taken for i in nodes[k].input if i in consts}
    kind = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [nodes[k] for k in taken],
        "unit",
        [helper.make_tensor_value_info(base, kind, [None])],
        [helper.make_tensor_value_info(out, kind, [None])],
        [numpy_helper.from_array(np.asarray(consts[name]), name) for name in sorted(used)],
    )
    try:
        values = ReferenceEvaluator(helper.make_model(graph)).run(None, {base: _PROBES.astype(dtype)})[0]
    except Exception:
        return None
    values = np.asarray(values, dtype=np.float64)
    if values.shape != _PROBES.shape or not np.all(np.isfinite(values)):
        return None
    rel = 1e-5 if np.dtype(dtype) == np.float32 else 1e-11
    for unit in CANDIDATES:
        u = unit(_PROBES)
        (a, c), *_ = np.linalg.lstsq(np.stack([u, np.ones_like(u)], axis=1), values, rcond=None)
        a, c = _round(a), _round(c)
        if a != 0 and np.all(np.abs(values - (a * u + c)) <= rel * (1.0 + np.abs(values))):
            return unit, a, c
    return None


def _round(v: float) -> float:
    """A fitted factor as the exporter wrote it (2.0, not 2.0000000001): rounded to 7 digits."""
    return float(f"{v:.7g}")
