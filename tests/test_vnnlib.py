"""VNN-LIB export: the ONNX twin network computes both copies, and its query agrees with our verdict."""

import itertools
import re

import numpy as np
import pytest
from boxes_oracle import random_network

import faircert
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.engines.network.complete import FAIR, decide_regions
from faircert.engines.network.problem import Problem
from faircert.properties import individual_fairness

onnx = pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator  # noqa: E402

FEATURES = (
    Feature("a", "integer", 0, 4),
    Feature("p", "integer", 0, 2),
    Feature("b", "integer", -2, 2),
    Feature("c", "binary"),
)


def _boxes(text: str, m: int) -> list[np.ndarray]:
    """The input boxes of the property's disjunction, as (m, 2) arrays."""
    out = []
    for conj in re.findall(r"\(and ((?:\((?:>=|<=) X_\d+ [-\d.e]+\) ?)+)\)", text):
        box = np.zeros((m, 2))
        for op, i, v in re.findall(r"\((>=|<=) X_(\d+) ([-\d.e]+)\)", conj):
            box[int(i), 0 if op == ">=" else 1] = float(v)
        out.append(box)
    return out


@pytest.mark.parametrize("seed,eps", [(0, None), (1, {"b": 1}), (2, None), (3, {"a": 1, "b": 2})])
def test_export_agrees_with_the_model_and_the_verdict(tmp_path, seed, eps):
    net = random_network(np.random.default_rng(seed), 4, [6, 5], scale=0.7)
    net.weights[0][:, 1] *= 0.1
    dom = Domain(FEATURES)
    faircert.export_vnnlib(net, dom, "p", tmp_path, epsilon=eps)
    prop = individual_fairness(dom, ["p"], epsilon=eps)
    pb = Problem.build(net, prop)
    run = ReferenceEvaluator(str(tmp_path / "twin.onnx"))
    text = (tmp_path / "property.vnnlib").read_text()
    m = 2 * pb.d + 2
    boxes = _boxes(text, m)
    assert len(boxes) == 3 * 2  # every ordered pair of different values of p
    # the exported query over the integer grid of its boxes, evaluated on the ONNX file
    found = False
    for box in boxes:
        pts = np.array(list(itertools.product(*(np.arange(lo, hi + 1) for lo, hi in box))), float)
        y = run.run(None, {"X": pts})[0] if pts.shape[0] else np.zeros((0, 2))
        # the twin's outputs are the model's on (x, p) and (clip(x + delta), p')
        x = np.zeros((pts.shape[0], 4))
        xp = np.zeros_like(x)
        x[:, pb.free], x[:, 1] = pts[:, :3], pts[:, 3]
        xp[:, pb.free] = np.clip(pts[:, :3] + pts[:, 4:7], pb.lo, pb.hi)
        xp[:, 1] = pts[:, 7]
        np.testing.assert_allclose(y[:, 0], net.logit(x), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(y[:, 1], net.logit(xp), rtol=1e-9, atol=1e-9)
        found |= bool(np.any((y[:, 0] > 0) != (y[:, 1] > 0)))
    verdict = decide_regions(pb, pb.lo[None], pb.hi[None]).verdict[0]
    assert found == (verdict != FAIR)


def test_cli_export_and_errors(tmp_path, capsys):
    from faircert.models.io.nnet import save_nnet

    save_nnet(random_network(np.random.default_rng(0), 4, [5]), tmp_path / "m.nnet")
    Domain(FEATURES).save(tmp_path / "d.yaml")
    assert (
        main(
            [
                "export-vnnlib",
                str(tmp_path / "m.nnet"),
                "--domain",
                str(tmp_path / "d.yaml"),
                "--protected",
                "p",
                "--epsilon",
                "b=1",
                "-o",
                str(tmp_path / "q"),
            ]
        )
        == 0
    )
    assert (tmp_path / "q" / "twin.onnx").exists()
    assert "(declare-const Y_1 Real)" in (tmp_path / "q" / "property.vnnlib").read_text()
    assert (
        main(
            [
                "export-vnnlib",
                str(tmp_path / "m.nnet"),
                "--domain",
                str(tmp_path / "d.yaml"),
                "--protected",
                "nope",
                "-o",
                str(tmp_path / "r"),
            ]
        )
        == 3
    )
