"""Checks of an untrusted ONNX model before numpy or the reference runtime touch its data.

- external data is loaded by faircert, and only from regular files beside the model (no absolute
  paths, no `..`, no symbolic links), whatever the installed onnx version checks itself;
- every tensor's dims are non-negative, within the limits, and match the data it stores;
- a node of constants is evaluated only when its output size is known and within the limits.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from ....errors import ModelFormatError
from ....limits import MAX_GRAPH_NODES, MAX_TENSOR_VALUES, check_at_most, quoted

#: Element types packed two to a byte (and two to an int32_data entry).
PACKED = {getattr(TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, n)}
COMPLEX = {TensorProto.COMPLEX64, TensorProto.COMPLEX128}


def load_checked(path: Path) -> onnx.ModelProto:
    """The model at `path` with its external data (if any) read from beside it, all tensors checked."""
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises several unrelated types on garbage
        raise ModelFormatError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {str(exc)[:200]})") from None
    check_model(proto, str(path), path.parent)
    return proto


def check_model(proto: onnx.ModelProto, source: str, folder: Path | None) -> None:
    """Check every tensor of the model; read external data from `folder` (None: refuse it)."""
    check_at_most("the number of graph nodes", len(proto.graph.node), MAX_GRAPH_NODES, source)
    for tensor, where in _tensors(proto.graph, source):
        if tensor.data_location == TensorProto.EXTERNAL:
            if folder is None:
                raise ModelFormatError(f"{where}: refers to external data, which an in-memory model cannot use")
            _read_external(tensor, folder, where)
        check_tensor(tensor, where)


def _tensors(graph: onnx.GraphProto, source: str, depth: int = 0):
    """(tensor, where) for initializers and node attributes, subgraphs included."""
    if depth > 20:
        raise ModelFormatError(f"{source}: subgraphs nested too deeply")
    for t in graph.initializer:
        yield t, f"{source}: initializer {quoted(t.name)}"
    for s in graph.sparse_initializer:
        yield s.values, f"{source}: sparse initializer {quoted(s.values.name)}"
        yield s.indices, f"{source}: sparse initializer {quoted(s.values.name)} (indices)"
    for node in graph.node:
        for a in node.attribute:
            where = f"{source}: node {quoted(node.name or node.op_type)} attribute {quoted(a.name)}"
            if a.HasField("t"):
                yield a.t, where
            yield from ((t, where) for t in a.tensors)
            if a.HasField("sparse_tensor"):
                yield a.sparse_tensor.values, where
                yield a.sparse_tensor.indices, where
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _tensors(g, source, depth + 1)


def element_count(dims: Any, where: str) -> int:
    """The number of elements of a tensor with these dims, checked non-negative and within limits."""
    if any(d < 0 for d in dims):
        raise ModelFormatError(f"{where}: negative dimension in {list(dims)[:8]}")
    count = math.prod(int(d) for d in dims)
    check_at_most("the number of values in one tensor", count, MAX_TENSOR_VALUES, where)
    return count


def check_tensor(t: TensorProto, where: str) -> None:
    """Dims within limits and equal to the amount of data stored (numpy would fail or misread otherwise)."""
    n = element_count(t.dims, where)
    if t.HasField("segment"):
        raise ModelFormatError(f"{where}: segmented tensors are not supported")
    try:
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        field = helper.tensor_dtype_to_field(t.data_type)
    except (KeyError, ValueError, TypeError):
        raise ModelFormatError(f"{where}: unknown element type {t.data_type}") from None
    if t.data_type == TensorProto.STRING:
        stored, expected = len(t.string_data), n
    elif t.raw_data:
        stored = len(t.raw_data)
        expected = (n + 1) // 2 if t.data_type in PACKED else n * dtype.itemsize
    else:
        stored = len(getattr(t, field))
        expected = (n + 1) // 2 if t.data_type in PACKED else 2 * n if t.data_type in COMPLEX else n
    if stored != expected:
        raise ModelFormatError(
            f"{where}: dims {list(t.dims)[:8]} need {expected} stored values/bytes, the file has {stored}"
        )


def _read_external(t: TensorProto, folder: Path, where: str) -> None:
    """Replace the tensor's external reference by the bytes it names, read from a regular file beside
    the model file."""
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    parts = Path(location).parts
    if not location or Path(location).is_absolute() or ".." in parts or len(parts) != 1:
        raise ModelFormatError(
            f"{where}: external data {quoted(location)} is not a file name beside the model "
            "(paths, '..' and absolute locations are refused)"
        )
    target = folder / location
    if target.is_symlink() or not target.is_file():
        raise ModelFormatError(
            f"{where}: external data {quoted(location)} is not a regular file beside the model "
            "(symbolic links are refused)"
        )
    real_folder, real_target = os.path.realpath(folder), os.path.realpath(target)
    if os.path.dirname(real_target) != real_folder:
        raise ModelFormatError(f"{where}: external data {quoted(location)} resolves outside the model's folder")
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise ModelFormatError(f"{where}: external data offset/length are not whole numbers") from None
    size = target.stat().st_size
    length = size - offset if length is None else length
    if offset < 0 or length < 0 or offset + length > size:
        raise ModelFormatError(
            f"{where}: external data range [{offset}, {offset + length}) lies outside {quoted(location)} ({size} bytes)"
        )
    check_at_most("the bytes of one tensor", length, MAX_TENSOR_VALUES * 8, where)
    with open(real_target, "rb") as handle:
        handle.seek(offset)
        t.raw_data = handle.read(length)
    del t.external_data[:]
    t.data_location = TensorProto.DEFAULT


#: Constant-foldable ops whose output is no larger than their largest input (or a broadcast of the inputs).
SIZE_PRESERVING = {
    "Identity",
    "Cast",
    "CastLike",
    "Neg",
    "Abs",
    "Sqrt",
    "Reciprocal",
    "Exp",
    "Log",
    "Relu",
    "Sigmoid",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Not",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "Reshape",
    "Shape",
    "Size",
    "Slice",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Where",
    "Clip",
    "Mod",
    "Gather",
    "Dropout",
    "Concat",
}


def check_constant_node(node: onnx.NodeProto, inputs: list[np.ndarray], where: str) -> None:
    """Refuse to evaluate a node of constants whose output could exceed the tensor limit."""
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        raise ModelFormatError(
            f"{where}: constant expressions of operator {quoted(node.domain)}.{op} are not evaluated"
        )
    if op == "Constant":
        return  # its tensor attribute was checked with the model
    sizes = [int(np.size(x)) for x in inputs]
    bound: float  # an element count, or inf where it is unbounded
    if op == "Gather":
        bound = sizes[0] * max(sizes[1:] + [1])
    elif op in SIZE_PRESERVING:
        bound = max(_broadcast_size([np.shape(x) for x in inputs], where), sum(sizes))
    elif op == "ConstantOfShape":
        bound = _product(inputs[0] if inputs else np.zeros(0), where)
    elif op == "Expand":
        bound = _broadcast_size([np.shape(inputs[0]), tuple(_dims(inputs[1], where))], where)
    elif op == "Tile":
        bound = sizes[0] * _product(inputs[1], where)
    elif op == "Range":
        start, limit, delta = (float(np.ravel(x)[0]) for x in inputs[:3])
        bound = (
            math.inf
            if delta == 0 or not all(map(math.isfinite, (start, limit, delta)))
            else max(0, math.ceil((limit - start) / delta))
        )
    elif op in ("MatMul", "Gemm"):
        bound = math.prod(sizes[:2])
    else:
        raise ModelFormatError(f"{where}: constant expressions of operator {op} are not evaluated")
    if bound > MAX_TENSOR_VALUES:
        raise ModelFormatError(
            f"{where}: this constant expression would make more than {MAX_TENSOR_VALUES:,} values (see faircert.limits)"
        )


def _dims(shape: np.ndarray, where: str) -> list[int]:
    values = np.ravel(shape)
    if values.dtype.kind not in "iu" or np.any(values < 0):
        raise ModelFormatError(f"{where}: a shape must hold non-negative integers")
    return [int(v) for v in values]


def _product(shape: np.ndarray, where: str) -> int:
    return math.prod(_dims(shape, where))


def _broadcast_size(shapes: list[tuple], where: str) -> int:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        sizes = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
        out.append(max(sizes) if sizes else 1)
    return math.prod(out)


def needed_model(proto: onnx.ModelProto, needed: set[int]) -> onnx.ModelProto:
    """A copy of the model with only the nodes the output depends on: the reference runtime runs
    every node it is given, and an unused node could be arbitrarily expensive."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    del out.graph.node[:]
    out.graph.node.extend(node for k, node in enumerate(proto.graph.node) if k in needed)
    return out
