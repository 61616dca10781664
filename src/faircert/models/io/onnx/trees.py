"""ONNX `ai.onnx.ml` TreeEnsembleClassifier graphs (binary) -> TreeEnsemble.

Inputs are float32 and thresholds float32. BRANCH_LEQ / BRANCH_GT map to the split rule "<=",
BRANCH_LT / BRANCH_GTE to "<" (GT and GTE swap the branches). With weights on one class column,
the summed score s is the positive class's: P = s (post_transform NONE) or sigmoid(s) (LOGISTIC).
With two columns and NONE, P[class 1] = s1 and the label is class 1 iff s1 > s0.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ....errors import ModelFormatError
from ....limits import MAX_FEATURES, MAX_TREE_NODES, check_at_most
from ...trees import Tree, TreeEnsemble
from ..tree_arrays import checked_tree

LEQ_RULES = {"BRANCH_LEQ": False, "BRANCH_GT": True}  # mode -> swap branches
LT_RULES = {"BRANCH_LT": False, "BRANCH_GTE": True}


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode("utf-8", "replace") for x in v]
        elif isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        out[a.name] = v
    return out


def load_onnx_trees(proto: Any) -> TreeEnsemble:
    a = _classifier_attributes(proto)
    labels = a.get("classlabels_int64s") or a.get("classlabels_strings") or []
    if len(labels) != 2:
        raise ModelFormatError(f"only binary classifiers are supported; this model has {len(labels)} classes")
    modes = list(a["nodes_modes"])
    split, swaps = _split_rule(modes)
    post = a.get("post_transform", "NONE")
    class_ids = np.asarray(a["class_ids"], dtype=np.int64)
    sign, offset, link = _scores(a, class_ids, post)
    weights = np.asarray(a["class_weights"], dtype=np.float32).astype(np.float64)
    leaf_value: dict[tuple[int, int], float] = defaultdict(float)
    for t, nd, w, s in zip(a["class_treeids"], a["class_nodeids"], weights, sign):
        leaf_value[(int(t), int(nd))] += float(w * s)
    by_tree: dict[int, list[int]] = defaultdict(list)
    for k, t in enumerate(a["nodes_treeids"]):
        by_tree[int(t)].append(k)
    trees = [_tree(t, by_tree[t], a, swaps, leaf_value) for t in sorted(by_tree)]
    # the widest input a split reads (leaves read none)
    n_features = max((int(tr.feature[tr.right >= 0].max()) + 1 for tr in trees if (tr.right >= 0).any()), default=0)
    width = _input_width(proto)
    return TreeEnsemble(
        trees,
        max(width or 0, n_features),
        split=split,
        input_float32=True,
        base_score=float(offset),
        scale=1.0,
        link=link,
        source="onnx",
        meta={"framework": "onnx", "post_transform": post},
    )


def _classifier_attributes(proto: Any) -> dict[str, Any]:
    """The attributes of the graph's one TreeEnsembleClassifier node, tensors as lists, lengths checked."""
    nodes = [
        n
        for n in proto.graph.node
        if n.domain == "ai.onnx.ml" and isinstance(n.op_type, str) and n.op_type.startswith("TreeEnsemble")
    ]
    if len(nodes) != 1 or nodes[0].op_type != "TreeEnsembleClassifier":
        kinds = ", ".join(n.op_type for n in nodes) or "none"
        raise ModelFormatError(
            f"expected one ai.onnx.ml TreeEnsembleClassifier node, found: {kinds} "
            "(regressors and multi-node graphs are not supported)"
        )
    a = _attrs(nodes[0])
    for name in ("nodes_values", "class_weights"):
        if name not in a and f"{name}_as_tensor" in a:
            from onnx import numpy_helper

            a[name] = numpy_helper.to_array(a[f"{name}_as_tensor"]).tolist()
    _check_lengths(a)
    return a


def _split_rule(modes: list[str]) -> tuple[str, dict[str, bool]]:
    """The ensemble's split rule ("<=" or "<") and, per branch mode, whether its branches swap."""
    inner = [m for m in modes if m != "LEAF"]
    if set(inner) - set(LEQ_RULES) - set(LT_RULES):
        raise ModelFormatError(f"unsupported split modes {sorted(set(inner) - set(LEQ_RULES) - set(LT_RULES))}")
    if inner and set(inner) <= set(LEQ_RULES):
        return "<=", LEQ_RULES
    if set(inner) <= set(LT_RULES):
        return "<", LT_RULES
    raise ModelFormatError("the ensemble mixes <= and < split modes, which is not supported")


def _scores(a: dict[str, Any], class_ids: np.ndarray, post: str) -> tuple[np.ndarray, float, str]:
    """How the leaves' class weights make the positive class's score: a sign per weight, the
    offset and the link."""
    columns = sorted(set(class_ids.tolist()))
    base = list(np.asarray(a.get("base_values", []), dtype=np.float32).astype(np.float64))
    if len(columns) == 1:
        offset = base[columns[0]] if len(base) > columns[0] else (base[0] if base else 0.0)
        links = {"LOGISTIC": "sigmoid", "NONE": "identity"}
        if post not in links:
            raise ModelFormatError(f"post_transform {post!r} is not supported for binary tree ensembles")
        return np.ones(len(class_ids)), offset, links[post]
    if columns == [0, 1] and post == "NONE":
        b0, b1 = (base + [0.0, 0.0])[:2]
        # score = 0.5 + (s1 - s0) / 2: the label is 1 iff s1 > s0
        return np.where(class_ids == 1, 0.5, -0.5), 0.5 + (b1 - b0) / 2, "identity"
    raise ModelFormatError(f"unsupported class weights (columns {columns}, post_transform {post!r})")


def _tree(
    t: int, rows: list[int], a: dict[str, Any], swaps: dict[str, bool], leaf_value: dict[tuple[int, int], float]
) -> Tree:
    """Tree `t` from its node rows (the root first), each node's branches and leaf value."""
    modes = a["nodes_modes"]
    ids = [int(a["nodes_nodeids"][k]) for k in rows]
    pos = {nid: i for i, nid in enumerate(ids)}
    if 0 not in pos or pos[0] != 0:
        rows = sorted(rows, key=lambda k: int(a["nodes_nodeids"][k]) != 0)
        ids = [int(a["nodes_nodeids"][k]) for k in rows]
        pos = {nid: i for i, nid in enumerate(ids)}
    n = len(rows)
    if len(set(ids)) != n:
        raise ModelFormatError(f"tree {t}: a node id appears twice")
    feat, thr = np.zeros(n, np.int64), np.zeros(n)
    left, right, value = np.full(n, -1), np.full(n, -1), np.zeros(n)
    for i, k in enumerate(rows):
        mode = modes[k]
        if mode == "LEAF":
            value[i] = leaf_value.get((t, ids[i]), 0.0)
            continue
        try:
            tn, fn = pos[int(a["nodes_truenodeids"][k])], pos[int(a["nodes_falsenodeids"][k])]
        except KeyError:
            raise ModelFormatError(f"tree {t}: a branch points to a missing node") from None
        left[i], right[i] = (fn, tn) if swaps[mode] else (tn, fn)
        feat[i] = int(a["nodes_featureids"][k])
        thr[i] = float(np.float32(a["nodes_values"][k]))
    return checked_tree(feat, thr, left, right, value, f"ONNX tree {t}")


def _input_width(proto: Any) -> int | None:
    try:
        dims = proto.graph.input[0].type.tensor_type.shape.dim
        width = int(dims[-1].dim_value)
    except (IndexError, AttributeError):
        return None
    if width < 0 or width > MAX_FEATURES:
        raise ModelFormatError(f"the input width {width} is negative or above the limit {MAX_FEATURES:,}")
    return width or None


NODE_KEYS = (
    "nodes_treeids",
    "nodes_nodeids",
    "nodes_modes",
    "nodes_featureids",
    "nodes_values",
    "nodes_truenodeids",
    "nodes_falsenodeids",
)
CLASS_KEYS = ("class_treeids", "class_nodeids", "class_ids", "class_weights")


def _check_lengths(a: dict[str, Any]) -> None:
    """The per-node and per-leaf-weight attribute lists must all be present and of one length each."""
    missing = [k for k in NODE_KEYS + CLASS_KEYS if k not in a]
    if missing:
        raise ModelFormatError(f"the TreeEnsembleClassifier node lacks {', '.join(missing)}")
    for keys in (NODE_KEYS, CLASS_KEYS):
        lengths = {len(a[k]) if isinstance(a[k], list) else -1 for k in keys}
        if len(lengths) != 1 or -1 in lengths:
            raise ModelFormatError(f"the TreeEnsembleClassifier attributes {', '.join(keys)} differ in length")
        check_at_most(f"the length of {keys[0]}", lengths.pop(), MAX_TREE_NODES)
