"""The shared importer back end: random op chains agree with direct evaluation."""

import numpy as np
import pytest

from faircert.errors import ModelFormatError
from faircert.models.io.affine_chain import Op, affine, build_network, diagonal


def evaluate(ops, X):
    """Run the chain literally (the oracle)."""
    h = X.copy()
    for op in ops:
        if op.kind == "affine":
            h = h @ op.weight.T + op.bias
        elif op.kind == "scale":
            h = h * op.weight + op.bias
        elif op.kind == "relu":
            h = np.maximum(h, 0)
        elif op.kind == "sigmoid":
            h = 1 / (1 + np.exp(-h))
        elif op.kind == "softmax":
            e = np.exp(h - h.max(axis=1, keepdims=True))
            h = e / e.sum(axis=1, keepdims=True)
    return h


def random_chain(rng, n_in):
    ops, width = [], n_in
    for k in range(rng.integers(1, 7)):
        kind = rng.choice(["affine", "affine", "relu", "scale"])
        if kind == "affine":
            out = int(rng.integers(1, 6))
            ops.append(affine(rng.normal(size=(out, width)), rng.normal(size=out), f"op{k}"))
            width = out
        elif kind == "scale":
            ops.append(diagonal(rng.normal(size=width), rng.normal(size=width), f"op{k}"))
        else:
            ops.append(Op("relu", f"op{k}"))
    out = int(rng.choice([1, 2]))
    ops.append(affine(rng.normal(size=(out, width)), rng.normal(size=out), "last"))
    if rng.random() < 0.5:
        ops.append(Op("sigmoid" if out == 1 else "softmax", "final"))
    elif out == 1 and rng.random() < 0.5:
        ops.append(Op("relu", "final relu"))
    return ops


@pytest.mark.parametrize("seed", range(40))
def test_random_chains_match_direct_evaluation(seed):
    rng = np.random.default_rng(seed)
    n_in = int(rng.integers(1, 5))
    ops = random_chain(rng, n_in)
    net = build_network(ops, n_in, "test")
    X = rng.normal(size=(200, n_in)) * 3
    y = evaluate(ops, X)
    labels = y[:, 1] > y[:, 0] if y.shape[1] == 2 else y[:, 0] > (0.5 if ops[-1].kind == "sigmoid" else 0)
    assert np.array_equal(net.predict(X), labels.astype(int))
    kinds = [op.kind for op in ops]
    hidden_relus = sum(1 for k, kind in enumerate(kinds[:-1]) if kind == "relu" and (k == 0 or kinds[k - 1] != "relu"))
    assert len(net.weights) <= hidden_relus + 1  # affine maps without a ReLU between them are merged
    if ops[-1].kind not in ("relu", "sigmoid", "softmax") and y.shape[1] == 1:
        assert np.allclose(net.logit(X), y[:, 0])


def test_chain_errors_name_the_place():
    a = affine(np.ones((3, 2)), None, "layer A")
    with pytest.raises(ModelFormatError, match="layer B takes 4 inputs but receives 3"):
        build_network([a, affine(np.ones((1, 4)), None, "layer B")], 2, "m")
    with pytest.raises(ModelFormatError, match="no affine layer"):
        build_network([Op("relu", "r")], 2, "m")
    with pytest.raises(ModelFormatError, match="ends in 3 outputs"):
        build_network([a], 2, "m")
    with pytest.raises(ModelFormatError, match="s: a ReLU right before the softmax"):
        build_network([affine(np.ones((2, 2)), None, "A"), Op("relu", "r"), Op("softmax", "s")], 2, "m")
    with pytest.raises(ModelFormatError, match="sigmoid over 3 outputs"):
        build_network([a, Op("sigmoid", "s")], 2, "m")
