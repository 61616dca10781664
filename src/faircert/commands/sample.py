"""`faircert sample-counterexamples`: draw individual discriminatory instances from a tree ensemble.

The engine first computes the counterexample region (disjoint boxes), then draws N inputs uniformly
from it, builds a twin for each and re-checks every pair on the model before writing it. If the
time limit ends the computation early, the undecided boxes are drawn from too and a draw is kept
only when it is unfair on the model (another protected value gets the other label, or with
epsilon > 0 an exact search of its neighbourhood finds one, the twin written with it), so the
draws stay uniform over the exact region.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..report.render import emit_json
from . import common


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample-counterexamples",
        help="sample re-checked counterexamples uniformly from a tree ensemble's unfair region",
        description="Compute the exact region of inputs with a counterexample (tree ensembles: XGBoost JSON/UBJ, "
        "LightGBM text, ONNX tree ensembles) and write N inputs drawn uniformly from it, each with "
        "a twin that the model labels differently (both re-checked), as CSV. Exit code: 1 if any "
        "was written, 0 if the region is proven empty, 2 if undecided, 3 bad input.",
    )
    p.add_argument(
        "model",
        help="tree-ensemble model file (.json/.ubj XGBoost, .txt LightGBM, .onnx, pickled "
        "scikit-learn trees .pkl/.joblib with --trust-pickle)",
    )
    p.add_argument("--domain", help="domain file (YAML/JSON) or a CSV to infer it from")
    common.add_tolerances(p)
    p.add_argument("--kappa", type=float, metavar="K", help="only inputs whose own confidence exceeds K, in [0.5, 1)")
    p.add_argument("--robustness", action="store_true", help="global epsilon-robustness instead of fairness")
    p.add_argument(
        "-n", "--count", type=int, default=1000, metavar="N", help="number of counterexamples, >= 1 (default 1000)"
    )
    p.add_argument("--out", required=True, metavar="OUT.csv", help="CSV file to write ('-' for stdout)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the draws (default 0)")
    p.add_argument("--time-limit", type=float, default=600.0, metavar="S", help="seconds for the region (default 600)")
    common.add_parallel_arguments(p, "the region's box refinement")
    common.add_budget(p, "")
    p.add_argument("--json", metavar="OUT", help="write a JSON summary here ('-' for stdout)")
    common.add_model_loading(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import sample_counterexamples
    from ..options import VerifyOptions

    with common.run_guard(args, args.out):
        frame = sample_counterexamples(
            args.model,
            args.domain,
            n=args.count,
            kappa=args.kappa,
            robustness=args.robustness,
            options=common.options_of(VerifyOptions, args),
            **common.individual_keywords(args),
        )
    summary = frame.attrs.pop("summary")
    _write_csv(args.out, frame)
    emit_json(json.dumps(summary, indent=2), args.json)
    print(
        f"wrote {summary['written']:,} re-checked counterexamples ({summary['distinct']:,} distinct inputs) to "
        f"{args.out}; measure in [{summary['measure_lower']:.6f}, {summary['measure_upper']:.6f}]",
        file=sys.stderr,
    )
    if summary["written"]:
        return 1
    return 0 if summary["region_complete"] and summary["unfair_size"] == 0 else 2


def _write_csv(path: str, frame) -> None:
    from ..files import STDOUT, print_stdout, write_atomic
    from ..report.csv import safe_frame

    frame = safe_frame(frame)
    if path == STDOUT:
        print_stdout(frame.to_csv(index=False))
    else:
        write_atomic(path, lambda handle: frame.to_csv(handle, index=False), newline="")
