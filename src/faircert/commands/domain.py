"""`faircert domain infer`: write a domain file from data."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("domain", help="create and inspect domain files",
                       description="Create and inspect domain files (YAML or JSON).")
    inner = p.add_subparsers(dest="domain_command", metavar="ACTION", parser_class=type(p))
    infer = inner.add_parser("infer", help="infer a domain from a CSV file",
                             description="Infer a domain from data: bounds from the data; strings become "
                                         "categorical codes (sorted labels), {0,1} binary, whole numbers integer, "
                                         "the rest real. Edit the file afterwards if the data's range is not the "
                                         "range you want to verify.")
    infer.add_argument("data", help="CSV file")
    infer.add_argument("--protected", default="", help="protected column(s), comma-separated")
    infer.add_argument("--label", help="label column to leave out")
    infer.add_argument("-o", "--output", help="domain file to write (.yaml or .json); default: print YAML")
    infer.set_defaults(handler=run_infer)
    p.set_defaults(handler=lambda args: (p.print_help(sys.stderr), 3)[1])


def run_infer(args: argparse.Namespace) -> int:
    import yaml

    from ..data import infer_domain

    protected = [n.strip() for n in args.protected.split(",") if n.strip()]
    domain = infer_domain(args.data, protected=protected, label=args.label)
    if args.output:
        domain.save(args.output)
        print(f"wrote {args.output}: {len(domain)} features, protected: {', '.join(domain.protected_names) or 'none'}",
              file=sys.stderr)
    else:
        print(yaml.safe_dump(domain.to_dict(), sort_keys=False, default_flow_style=None), end="")
    return 0
