"""`faircert export-vnnlib`: a network's fairness query as an ONNX twin network and a VNN-LIB property."""

from __future__ import annotations

import argparse
import sys

from . import common


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-vnnlib",
        help="write a network's fairness query for VNN-COMP verifiers (ONNX + VNN-LIB)",
        description="Write OUT/twin.onnx (the twin network: inputs x, protected values, epsilon offsets, the "
        "twin's protected values; outputs both logits) and OUT/property.vnnlib (a pair on opposite "
        "sides of 0, one input box per pair of protected combinations). A verifier's unsat proves "
        "fairness over the domain (integer features relaxed to reals); a sat witness must be "
        "re-checked. Exit code 0 when written, 3 bad input.",
    )
    p.add_argument("model", help="ReLU network file (.nnet, .h5/.keras, .onnx)")
    p.add_argument("--domain", help="domain file (YAML/JSON) or a CSV to infer it from; the region of the query")
    common.add_tolerances(p)
    p.add_argument("--robustness", action="store_true", help="epsilon-robustness instead of fairness")
    p.add_argument(
        "-o", "--out", required=True, metavar="DIR", help="folder to write twin.onnx and property.vnnlib into"
    )
    common.add_model_loading(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import export_vnnlib

    onnx_path, prop_path = export_vnnlib(
        args.model, args.domain, out_dir=args.out, robustness=args.robustness, **common.individual_keywords(args)
    )
    print(f"wrote {onnx_path} and {prop_path}", file=sys.stderr)
    return 0
