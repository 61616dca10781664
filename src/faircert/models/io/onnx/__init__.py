"""ONNX feed-forward networks <-> ReluNetwork.

`load_onnx` reads a chain from the single graph input to the single output: Gemm, MatMul, Add/Sub/
Mul/Div by constants, BatchNormalization, Relu, LeakyRelu, PRelu, Clip, Tanh, Sigmoid, Elu, Gelu
(exact form; also as PyTorch spells it below opset 20, see `units`), SiLU (as x * Sigmoid(x)), a
final Sigmoid or Softmax, and shape-only ops
(Flatten, Reshape to constant shapes, Identity, Dropout). Nodes whose inputs are all constants are
evaluated by the ONNX reference runtime (no code from the file is ever run). The result is checked
against `onnx.reference.ReferenceEvaluator` on sampled inputs. Graphs of `ai.onnx.ml` tree
ensembles go to the tree importer. `save_onnx` writes a ReluNetwork as a Gemm/Relu chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ....errors import ModelFormatError
from ....limits import (
    MAX_FIXED_BATCH,
    MAX_LAYER_WIDTH,
    MAX_QUOTED,
    MAX_TENSOR_VALUES,
    check_at_most,
    check_file_size,
    quoted,
)
from ...activations import Activation, parse
from ...network import ReluNetwork
from ..affine_chain import Op, affine, build_network, check_import, clip, diagonal, leaky, smooth, unsupported
from . import units
from .checks import check_constant_node, check_model, load_checked, needed_model

TREE_OPS = {"TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble"}
SHAPE_OPS = {"Identity", "Dropout", "Flatten", "Reshape"}
FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
META = "faircert."


def load_onnx(model: str | Path | onnx.ModelProto, check_inputs: np.ndarray | None = None) -> Any:
    """Read an ONNX file or ModelProto; tree-ensemble graphs are delegated to the tree importer."""
    proto, source = _proto(model)
    if any(n.op_type in TREE_OPS and n.domain == "ai.onnx.ml" for n in proto.graph.node):
        from .trees import load_onnx_trees

        return load_onnx_trees(proto)
    chain = _Chain(proto.graph, source)
    network = chain.network()
    _restore_metadata(network, proto)
    integer = _input_dtype(proto).kind != "f"  # integer-typed inputs get integer samples
    needed = needed_model(proto, chain.needed)

    def run(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _reference_outputs(needed, np.round(X) if integer else X, source)

    check_import(network, check_inputs, "the ONNX reference runtime", run)
    return network


def _unit_node(unit: Activation | None, x: str, y: str, k: int) -> onnx.NodeProto:
    """The ONNX node of a hidden unit (SiLU has none: it would be a product of the data)."""
    if unit is None:
        return helper.make_node("Relu", [x], [y], name=f"relu_{k}")
    if unit.name == "silu":
        raise ModelFormatError("ONNX has no SiLU operator; a network with SiLU units cannot be saved as ONNX")
    op = {"tanh": "Tanh", "sigmoid": "Sigmoid", "gelu": "Gelu", "elu": "Elu"}[unit.name]
    attrs = {"alpha": unit.alpha} if unit.name == "elu" else {}
    return helper.make_node(op, [x], [y], name=f"{unit.name}_{k}", **attrs)


def save_onnx(network: ReluNetwork, path: str | Path, dtype: Any = np.float64) -> onnx.ModelProto:
    """Write the network as Gemm nodes with their units between them and one logit output; float64
    keeps it exact."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes, inits, x = [], [], "input"
    last = len(network.weights) - 1
    for k, (w, b) in enumerate(zip(network.weights, network.biases)):
        inits += [numpy_helper.from_array(w.astype(dtype), f"W{k}"), numpy_helper.from_array(b.astype(dtype), f"B{k}")]
        y = "logit" if k == last else f"h{k}"
        nodes.append(helper.make_node("Gemm", [x, f"W{k}", f"B{k}"], [y], name=f"dense_{k}", transB=1))
        if k < last:
            nodes.append(_unit_node(network.activation(k), y, f"r{k}", k))
            y = f"r{k}"
        x = y
    graph = helper.make_graph(
        nodes,
        "faircert_relu_network",
        [helper.make_tensor_value_info("input", elem, ["N", network.n_inputs])],
        [helper.make_tensor_value_info("logit", elem, ["N", 1])],
        inits,
    )
    opset = 20 if any(a is not None and a.name == "gelu" for a in network.activations) else 13
    proto = helper.make_model(graph, producer_name="faircert", opset_imports=[helper.make_opsetid("", opset)])
    meta = {"output_semantics": "logit (label 1 iff logit > 0)"}
    if network.input_lower is not None and network.input_upper is not None:
        meta["input_lower"] = json.dumps([float(v) for v in network.input_lower])
        meta["input_upper"] = json.dumps([float(v) for v in network.input_upper])
    if network.input_names:
        meta["input_names"] = json.dumps(list(network.input_names))
    helper.set_model_props(proto, {META + k: v for k, v in meta.items()})
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return proto


def _proto(model: Any) -> tuple[onnx.ModelProto, str]:
    if isinstance(model, onnx.ModelProto):
        check_model(model, "ONNX model", None)
        return model, "ONNX model"
    path = Path(model)
    check_file_size(path, ModelFormatError)
    proto = load_checked(path)
    if not proto.graph.node:
        raise ModelFormatError(f"{path}: the ONNX file holds no graph nodes")
    return proto, str(path)


class _Chain:
    """Walks the graph from its input to its output, collecting Ops."""

    def __init__(self, graph: onnx.GraphProto, source: str) -> None:
        self.source = source
        self.consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in self.consts]
        if len(inputs) != 1 or len(graph.output) != 1:
            raise ModelFormatError(
                f"{source}: the graph has {len(inputs)} inputs and {len(graph.output)} outputs; "
                "faircert needs exactly one of each"
            )
        self.graph, self.input, self.output = graph, inputs[0], graph.output[0].name
        dims = input_dims(self.input, source)
        if len(dims) == 1:
            raise unsupported("a graph input of rank 1 (no batch axis)", f"{source}: input {quoted(self.input.name)}")
        known = [d for d in dims[1:] if d is not None]
        # the per-sample shape, where every axis of it is fixed
        self.shape: tuple[int, ...] | None = tuple(known) if len(dims) > 1 and len(known) == len(dims) - 1 else None
        self.input_shape = self.shape

    def network(self) -> ReluNetwork:
        needed = self.needed = self._needed_nodes()
        nodes = list(self.graph.node)
        for index, node in enumerate(nodes):  # constants first: a fused unit's operands are known then
            if index in needed and (node.op_type == "Constant" or all(i in self.consts for i in node.input if i)):
                self.constant_value(node, self._where(node, index))
        current, ops, fused = self.input.name, [], set()
        for index, node in enumerate(nodes):
            if index not in needed or index in fused:
                continue
            where = self._where(node, index)
            dynamic = [i for i in node.input if i and i not in self.consts]
            if node.op_type == "Constant" or not dynamic:
                continue
            taken = units.region(nodes, index, needed, current, self.consts) if current in dynamic else []
            if taken:
                found = units.recognise(nodes, taken, current, self.consts, self._dtype())
                if found is None:
                    raise unsupported("an elementwise subgraph computing none of GELU, SiLU", where)
                unit, a, c = found
                ops += [smooth(unit, where)] + (
                    [] if (a, c) == (1.0, 0.0) else [diagonal(np.array(a), np.array(c), where)]
                )
                fused.update(taken)
                current = nodes[taken[-1]].output[0]
                continue
            if dynamic != [current]:
                raise unsupported(
                    "a branching graph (this node does not continue the single input-to-output chain)", where
                )
            ops += self._ops(node, where)
            current = node.output[0]
        if current != self.output:
            raise ModelFormatError(
                f"{self.source}: the graph output {quoted(self.output)} is not computed from the input"
            )
        n_inputs = int(np.prod(self.input_shape)) if self.input_shape else None
        return build_network(ops, n_inputs, self.source, metadata={"format": "onnx"})

    def _where(self, node: onnx.NodeProto, index: int) -> str:
        op_type = f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
        if node.name:
            return f"{self.source}: node {quoted(node.name)} ({op_type[:MAX_QUOTED]})"
        return f"{self.source}: node #{index} ({op_type[:MAX_QUOTED]})"

    def _dtype(self) -> np.dtype:
        return np.dtype(helper.tensor_dtype_to_np_dtype(self.input.type.tensor_type.elem_type))

    def _needed_nodes(self) -> set[int]:
        """Indices of the nodes the graph output depends on (unused branches are ignored)."""
        nodes = list(self.graph.node)
        producer = {out: k for k, node in enumerate(nodes) for out in node.output}
        needed, todo = set(), [self.output]
        while todo:
            k = producer.get(todo.pop())
            if k is not None and k not in needed:
                needed.add(k)
                todo += [i for i in nodes[k].input if i]
        return needed

    def constant_value(self, node: onnx.NodeProto, where: str) -> None:
        """Evaluate a node of constants with the reference runtime."""
        feeds = {i: self.consts[i] for i in node.input if i}
        check_constant_node(node, [feeds[i] for i in node.input if i], where)
        try:
            results = ReferenceEvaluator(node).run(None, feeds)
        except Exception as exc:
            raise ModelFormatError(f"{where}: cannot evaluate this constant expression ({exc})") from None
        self.consts.update(zip(node.output, results))

    def _const(self, node: onnx.NodeProto, k: int, where: str) -> np.ndarray:
        if len(node.input) <= k or node.input[k] not in self.consts:
            raise unsupported(f"input {k} that is not a constant", where)
        return np.asarray(self.consts[node.input[k]], dtype=np.float64)

    def _width(self, where: str) -> int:
        if self.shape is None:
            raise ModelFormatError(f"{where}: the input width is unknown here; give the graph input a fixed shape")
        return int(np.prod(self.shape))

    def _ops(self, node: onnx.NodeProto, where: str) -> list[Op]:
        op, attrs = node.op_type, {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if op == "Cast":
            if attrs.get("to") not in FLOAT_TYPES:
                to = attrs.get("to", 0)
                name = TensorProto.DataType.Name(to) if to in TensorProto.DataType.values() else f"type {quoted(to)}"
                raise unsupported(f"Cast to {name} (rounding)", where)
            return []
        if op in SHAPE_OPS:
            self._reshape(node, op, attrs, where)
            return []
        if node.domain not in ("", "ai.onnx") and not (node.domain == "ai.onnx.ml" and op == "Scaler"):
            raise unsupported(f"operator {node.domain[:MAX_QUOTED]}.{op[:MAX_QUOTED]}", where)
        if op in ("Relu", "Sigmoid", "Softmax"):
            shape = self.shape if self.shape is not None else (1,)
            if op == "Softmax" and (max(shape[:-1], default=1) > 1 or attrs.get("axis", -1) not in (-1, len(shape))):
                raise unsupported(
                    f"a softmax along axis {attrs.get('axis', -1)} of a tensor with per-sample shape "
                    f"{list(self.shape or ['?'])}",
                    where,
                )
            return [Op(op.lower(), where)]
        if op == "LeakyRelu":
            return [leaky(attrs.get("alpha", 0.01), where)]
        if op == "PRelu":
            return [leaky(self._broadcast(self._const(node, 1, where), where), where)]
        if op == "Clip":  # bounds as inputs 1 and 2 (opset 11+) or attributes (before), either optional
            ends = [
                self._const(node, k, where) if len(node.input) > k and node.input[k] else attrs.get(key)
                for k, key in ((1, "min"), (2, "max"))
            ]
            low, high = (None if e is None else float(np.ravel(e)[0]) for e in ends)
            return [clip(low, high, where)]
        if op in ("Tanh", "Elu"):
            return [smooth(parse(op, attrs.get("alpha", 1.0)), where)]
        if op == "Gelu":
            approximate = attrs.get("approximate", b"none")
            if (approximate.decode() if isinstance(approximate, bytes) else approximate) != "none":
                raise unsupported("Gelu with approximate='tanh' (the exact Gelu is)", where)
            return [smooth(parse("gelu"), where)]
        if op == "Scaler":  # ai.onnx.ml: (x - offset) * scale
            scale = self._broadcast(np.asarray(attrs.get("scale", [1.0]), dtype=np.float64), where)
            offset = self._broadcast(np.asarray(attrs.get("offset", [0.0]), dtype=np.float64), where)
            return [diagonal(scale, -offset * scale, where)]
        if op == "Gemm":
            if attrs.get("transA", 0):
                raise unsupported("Gemm with transA=1 on the data", where)
            w = self._const(node, 1, where)
            w = (w.T if attrs.get("transB", 0) else w) * attrs.get("alpha", 1.0)  # now in x out
            c = self._const(node, 2, where) * attrs.get("beta", 1.0) if len(node.input) > 2 and node.input[2] else 0.0
            return [self._matrix(w, c, where)]
        if op == "MatMul":
            if node.input[0] not in self.consts:
                return [self._matrix(self._const(node, 1, where), 0.0, where)]
            raise unsupported("MatMul with the data as its second operand", where)
        if op in ("Add", "Sub", "Mul", "Div"):
            first = node.input[0] not in self.consts
            c = self._broadcast(self._const(node, 1 if first else 0, where), where)
            n = len(c)
            if op == "Add":
                return [diagonal(np.ones(n), c, where)]
            if op == "Sub":
                return [diagonal(np.ones(n), -c, where) if first else diagonal(-np.ones(n), c, where)]
            if op == "Mul":
                return [diagonal(c, np.zeros(n), where)]
            if not first or np.any(c == 0):
                raise unsupported("division of a constant by the data, or by zero", where)
            return [diagonal(1.0 / c, np.zeros(n), where)]
        if op == "BatchNormalization":
            if self.shape is not None and len(self.shape) > 1:
                raise unsupported(f"batch normalisation of a {list(self.shape)}-shaped tensor", where)
            scale, shift, mean, var = (self._broadcast(self._const(node, k, where), where) for k in range(1, 5))
            s = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
            return [diagonal(s, shift - mean * s, where)]
        raise unsupported(f"operator {op[:MAX_QUOTED]}", where)

    def _matrix(self, w: np.ndarray, c: Any, where: str) -> Op:
        """x @ w + c for w of shape in x out, on a tensor whose leading per-sample axes are all 1."""
        if w.ndim != 2:
            raise unsupported(f"a {w.ndim}-D weight tensor", where)
        if self.shape is not None:
            if len(self.shape) > 1 and max(self.shape[:-1]) > 1:
                raise unsupported(f"a matrix product on a {list(self.shape)}-shaped tensor", where)
            if self.shape[-1] != w.shape[0]:
                raise ModelFormatError(f"{where} takes {w.shape[0]} inputs but receives {self.shape[-1]}")
        bias = np.asarray(c, dtype=np.float64).reshape(-1) if np.ndim(c) else np.asarray(c, dtype=np.float64)
        if bias.size not in (1, w.shape[1]):
            raise ModelFormatError(f"{where} adds a bias of {bias.size} values to {w.shape[1]} outputs")
        bias = np.broadcast_to(bias, (w.shape[1],))
        self.shape = (self.shape[:-1] if self.shape else ()) + (w.shape[1],)
        return affine(w.T, bias, where)

    def _broadcast(self, c: np.ndarray, where: str) -> np.ndarray:
        """A constant operand broadcast over one sample, flattened."""
        if self.shape is None:  # a flat input of unknown width: a vector constant fixes it
            if c.size == 1:
                self._width(where)
            self.shape, c = (c.size,), c.reshape(-1)
        shape = self.shape
        if c.ndim > len(shape):
            if c.ndim > len(shape) + 1 or c.shape[0] != 1:
                raise unsupported(
                    f"a constant of shape {list(c.shape)} on data of per-sample shape {list(shape)}", where
                )
            c = c.reshape(c.shape[1:])
        try:
            if np.broadcast_shapes(shape, c.shape) != tuple(shape):
                raise ValueError
        except ValueError:
            raise ModelFormatError(
                f"{where}: constant of shape {list(c.shape)} does not fit data of shape {list(shape)}"
            ) from None
        return np.broadcast_to(c, shape).reshape(-1).astype(np.float64)

    def _reshape(self, node: onnx.NodeProto, op: str, attrs: dict, where: str) -> None:
        """Shape-only ops: the data is a flat vector per sample, so only the per-sample shape changes."""
        if op in ("Identity", "Dropout"):
            return
        size = int(np.prod(self.shape)) if self.shape is not None else None
        if op == "Flatten":
            if attrs.get("axis", 1) != 1:
                raise unsupported(f"Flatten with axis={attrs.get('axis')} (only axis=1 keeps the batch axis)", where)
            self.shape = (size,) if size is not None else None
            return
        raw = self._const(node, 1, where).reshape(-1)
        if not np.all(np.abs(raw) <= MAX_TENSOR_VALUES):
            raise ModelFormatError(f"{where}: Reshape target {raw.tolist()[:8]} is out of range")
        target = [int(v) for v in raw]
        rest = target[1:]
        if not rest or target[0] not in (-1, 0, 1) or (target[0] == -1 and -1 in rest) or 0 in rest:
            raise unsupported(f"Reshape to {target} (only reshapes that keep the batch axis first)", where)
        if -1 in rest:
            if size is None:
                raise ModelFormatError(f"{where}: Reshape with -1 on data of unknown shape")
            known = int(np.prod([d for d in rest if d != -1]))
            rest = [size // known if d == -1 else d for d in rest]
        if size is not None and int(np.prod(rest)) != size:
            raise ModelFormatError(f"{where}: Reshape to {target} does not fit {size} values per sample")
        self.shape = tuple(rest)


def _reference_outputs(proto: onnx.ModelProto, X: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Run the original graph on (a batch-size multiple of) X with the ONNX reference runtime."""
    graph = proto.graph
    inits = {t.name for t in graph.initializer}
    inp = next(i for i in graph.input if i.name not in inits)
    dtype = _input_dtype(proto)
    dims = [-1 if d is None else d for d in input_dims(inp, source)]
    per_sample = [d if d > 0 else -1 for d in dims[1:]] or [X.shape[1]]
    if dims and dims[0] > MAX_FIXED_BATCH:
        raise ModelFormatError(
            f"{source}: the input declares a fixed batch size of {dims[0]:,}; faircert runs the "
            f"import check in batches of at most {MAX_FIXED_BATCH:,} (see faircert.limits); export "
            "the model with a dynamic batch axis"
        )
    try:
        session = ReferenceEvaluator(proto)
        if dims and dims[0] > 0:  # a fixed batch size: run the samples one batch at a time
            b = dims[0]
            X = np.resize(X, (max(b, len(X) // b * b), X.shape[1]))
            out = np.concatenate(
                [
                    np.asarray(
                        session.run(None, {inp.name: X[i : i + b].reshape([b] + per_sample).astype(dtype)})[0]
                    ).reshape(b, -1)
                    for i in range(0, len(X), b)
                ]
            )
        else:
            out = session.run(None, {inp.name: X.reshape([len(X)] + per_sample).astype(dtype)})[0]
    except Exception as exc:
        raise ModelFormatError(f"{source}: the ONNX reference runtime cannot run this model ({exc})") from None
    return X, np.asarray(out, dtype=np.float64).reshape(len(X), -1)


def _input_dtype(proto: onnx.ModelProto) -> np.dtype:
    inits = {t.name for t in proto.graph.initializer}
    elem = next(i for i in proto.graph.input if i.name not in inits).type.tensor_type.elem_type
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem)) if elem else np.dtype(np.float32)


def _restore_metadata(network: ReluNetwork, proto: onnx.ModelProto) -> None:
    """Input ranges and names that `save_onnx` recorded."""
    # protobuf hands back bytes for a string field that is not valid UTF-8: such entries are not ours
    props = {
        p.key[len(META) :]: p.value
        for p in proto.metadata_props
        if isinstance(p.key, str) and isinstance(p.value, str) and p.key.startswith(META)
    }
    try:
        if "input_lower" in props and "input_upper" in props:
            lower, upper = np.array(json.loads(props["input_lower"])), np.array(json.loads(props["input_upper"]))
            if lower.shape == upper.shape == (network.n_inputs,):
                network.input_lower, network.input_upper = lower, upper
        if "input_names" in props:
            names = json.loads(props["input_names"])
            if isinstance(names, list) and len(names) == network.n_inputs:
                network.input_names = [str(n) for n in names]
    except (ValueError, TypeError, RecursionError):
        pass  # metadata is advisory; the model itself is already checked


def input_dims(value_info: onnx.ValueInfoProto, source: str) -> list[int | None]:
    """The graph input's dims (None where symbolic), checked: no negative dims (-1 is not a valid ONNX
    dim), a positive per-sample shape within the width limit."""
    where = f"{source}: input {quoted(value_info.name)}"
    dims = [d.dim_value if d.HasField("dim_value") else None for d in value_info.type.tensor_type.shape.dim]
    if any(d is not None and d < 0 for d in dims):
        raise ModelFormatError(f"{where}: negative dimension in its shape {dims[:8]}")
    if any(d == 0 for d in dims[1:]):
        raise ModelFormatError(f"{where}: a dimension of size 0 in its shape {dims[:8]}")
    known = [d for d in dims[1:] if d is not None]
    check_at_most(
        "the per-sample input size", int(np.prod(known, dtype=object)) if known else 1, MAX_LAYER_WIDTH, where
    )
    return dims
